"""A conformance checker any method (built in or third-party) can be run through.

On tiny instances with brute-force optima (:func:`check_method`):

* an exact method must return ``termination == "optimal"``, a feasible
  selection whose re-evaluated objective equals the brute-force optimum, and a
  bound on the right side of it;
* a heuristic must return a feasible selection no better than the optimum.

Formulation classes expose tiny instances through ``conformance_instances(seed)``.

On an instance too hard for the time limit (:func:`check_time_limit`), an
exact method must stop with ``"time_limit"`` (or a proof), return a feasible
incumbent whenever the formulation knows one (``initial_selection`` or a
``numerical_properties.warm_start``), report only a valid bound, and keep to a generous
wall-clock bound.

>>> from benchsel.solvers.conformance import check_method
>>> problems = check_method(f, "highs")      # [] when the method conforms
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .api import solve
from .methods import available_methods, get_method

__all__ = ["brute_force", "check_formulation", "check_method", "check_time_limit"]


def brute_force(f: Any, limit: int = 200_000) -> tuple[float, np.ndarray | None]:
    """Best feasible objective over ``f.enumerate_selections()`` (in ``f.sense``).

    Returns
    -------
    (optimum, selection) — ``(nan, None)`` when no enumerated selection is feasible.
    """
    best, best_sel = math.nan, None
    for n, sel in enumerate(f.enumerate_selections()):
        if n >= limit:
            raise ValueError(f"limit: more than {limit} selections to enumerate; use a smaller instance")
        if not f.is_feasible(sel):
            continue
        v = f.evaluate(sel)
        if best_sel is None or f.better(v, best):
            best, best_sel = v, sel
    return best, best_sel


def _tol(x: float) -> float:
    return 1e-6 * max(1.0, abs(x))


def check_method(f: Any, method: str, *, optimum: float | None = None, time_limit: float = 60.0, seed: int = 0,
                 **options: Any) -> list[str]:
    """Problems found when ``method`` solves ``f`` (empty list: conforms).

    Exact methods reach the brute-force optimum; heuristics return a feasible selection no better than it;
    baselines (comparison methods) may return an infeasible selection, reported as the formulation judges
    it (feasibility and objective re-evaluated), and when feasible no better than the optimum.
    """
    if optimum is None:
        optimum, _ = brute_force(f)
    m = get_method(method)
    res = solve(f, method, time_limit=time_limit, seed=seed, **options)
    probs: list[str] = []
    tag = f"{method} on {f!r}"
    if math.isnan(optimum):  # infeasible instance
        if res.feasible:
            probs.append(f"{tag}: returned a feasible selection for an infeasible instance")
        if m.exact and res.termination not in ("infeasible", "infeasible_or_unbounded"):
            probs.append(f"{tag}: termination {res.termination.value!r}, expected 'infeasible'")
        return probs
    if m.kind == "baseline":  # a comparison method: its selection is reported as the formulation judges it
        judged = bool(f.is_feasible(res.selection))
        if res.feasible != judged:
            probs.append(f"{tag}: feasible={res.feasible} but the formulation says {judged}")
        if abs(res.objective - f.evaluate(res.selection)) > _tol(res.objective):
            probs.append(f"{tag}: objective {res.objective!r} is not the formulation's value of its selection")
        if not res.feasible:
            return probs
    elif not res.feasible:
        probs.append(f"{tag}: selection infeasible ({res.extra.get('violations', '')}); "
                     f"termination {res.termination.value}")
        return probs
    sign = 1.0 if f.sense == "min" else -1.0
    if sign * (res.objective - optimum) < -_tol(optimum):
        probs.append(f"{tag}: objective {res.objective!r} better than the brute-force optimum {optimum!r}")
    if m.exact:
        if res.termination != "optimal":
            probs.append(f"{tag}: termination {res.termination.value!r}, expected 'optimal'")
        if abs(res.objective - optimum) > _tol(optimum) + 1e-6 * abs(optimum):
            probs.append(f"{tag}: objective {res.objective!r} != brute-force optimum {optimum!r}")
        if res.bound is not None and sign * (res.bound - optimum) > _tol(optimum) + 1e-5 * abs(optimum):
            probs.append(f"{tag}: bound {res.bound!r} is past the optimum {optimum!r}")
    if res.selection.dtype != np.int64 or np.any(np.diff(res.selection) <= 0):
        probs.append(f"{tag}: selection is not a sorted int64 array of distinct items")
    return probs


def check_formulation(f: Any, methods: Iterable[str] | None = None, **kw: Any) -> dict[str, list[str]]:
    """Run :func:`check_method` for every method that accepts ``f`` (or those given)."""
    opt, _ = brute_force(f)
    return {m: check_method(f, m, optimum=opt, **kw) for m in (methods or available_methods(f))}


def check_time_limit(f: Any, method: str, time_limit: float = 1.0, *, seed: int = 0, wall_factor: float = 3.0,
                     wall_extra: float = 10.0, **options: Any) -> list[str]:
    """Problems found when ``method`` runs on ``f`` with ``time_limit`` (empty list: conforms).

    Checked: the wall clock (build included) stays below
    ``wall_factor * time_limit + wall_extra`` (generous: it only catches hangs);
    the termination is ``"time_limit"`` unless the method proved its answer
    (``"optimal"`` / ``"infeasible"``); a feasible selection comes back whenever
    the formulation knows one; a bound, when reported, is on the right side of
    the objective.
    """
    res = solve(f, method, time_limit=time_limit, seed=seed, **options)
    tag = f"{method} on {f!r} with time_limit={time_limit:g}"
    probs: list[str] = []
    wall = float(res.extra.get("wall_seconds", res.seconds))
    if wall > wall_factor * time_limit + wall_extra:
        probs.append(f"{tag}: {wall:.1f} s of wall clock, over {wall_factor:g} x the limit + {wall_extra:g} s")
    proven = res.termination in ("optimal", "infeasible", "infeasible_or_unbounded")
    if not proven and res.termination != "time_limit":
        probs.append(f"{tag}: termination {res.termination.value!r}, expected 'time_limit' (or a proof)")
    knows = f.numerical_properties.warm_start.method is not None or f.initial_selection() is not None
    if knows and res.termination not in ("infeasible", "infeasible_or_unbounded") and not res.feasible:
        probs.append(f"{tag}: no feasible incumbent although the formulation knows one "
                     f"({res.extra.get('violations', 'no selection')})")
    if res.bound is not None and res.feasible:
        sign = 1.0 if f.sense == "min" else -1.0
        if sign * (res.bound - res.objective) > 1e-6 * max(1.0, abs(res.objective)):
            probs.append(f"{tag}: bound {res.bound!r} past the objective {res.objective!r}")
    return probs
