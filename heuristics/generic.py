"""``"random"``: the baseline every formulation takes (its ``random_selection``)."""
from __future__ import annotations

from typing import Any

from benchsel.formulations.base import Formulation
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import Termination
from benchsel.formulations.core.validation import check_rng

from ._common import Clock, output


@register_method(
    "random",
    kind="heuristic",
    accepts=Formulation,  # every formulation draws random selections (Formulation.random_selection)
    description="random selection(s) drawn by the formulation; with n_samples > 1 the best feasible one",
    options=(Option("n_samples", 1, "int", low=1, doc="draws; the best feasible one is returned"),),
)
def run_random(f: Any, *, time_limit: float | None, seed: int | None, n_samples: int):
    n = n_samples
    rng = check_rng(seed)
    clock = Clock(time_limit)
    best, best_key = None, None
    drawn = 0
    for _ in range(n):
        if drawn and clock.expired():
            break
        sel = f.random_selection(rng)
        drawn += 1
        key = (not f.is_feasible(sel), f.evaluate(sel) * (1 if f.sense == "min" else -1))
        if best_key is None or key < best_key:
            best, best_key = sel, key
    stopped = Termination.TIME_LIMIT if drawn < n else Termination.CONVERGED
    return output(best, clock, stopped=stopped, n_samples=drawn)
