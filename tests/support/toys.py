"""A toy formulation, a toy method and a toy estimator, added the way a new one is added (docs/extending.md).

``tests/conftest.py`` imports this module, so every registry-driven suite meets them without a list being
edited: the conformance suite runs every method that accepts :class:`CheapestItems` (its own ``"toy-sort"``,
``"random"`` and the exact backends, which read its linear statement) against the brute-force optimum, and
the estimator contract tests run ``"toy-shifted-mean"``. ``tests/test_extending.py`` checks that they do.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from benchsel.formulations.base import Check, Formulation
from benchsel.formulations.core.clock import Clock
from benchsel.formulations.core.model import LinearModel, ModelBuilder
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import MethodOutput, Termination
from benchsel.formulations.core.validation import as_array, check_int
from benchsel.formulations.estimation.base import Estimator, register_estimator


class CheapestItems(Formulation):
    """Choose ``k`` of ``n`` items with the smallest total cost.

    Parameters
    ----------
    costs : array_like, shape (n,)
        Finite item costs.
    k : int
        Items to choose, ``1 <= k <= n``.
    """

    sense = "min"

    def __init__(self, costs: Any, k: int) -> None:
        self.costs = as_array(costs, "costs", ndim=1, shape_doc="(n,)")
        self.k = check_int(k, "k", low=1, high=self.costs.size)

    @property
    def n_items(self) -> int:
        return int(self.costs.size)

    def get_params(self) -> dict[str, Any]:
        return {"costs": self.costs, "k": self.k}

    def evaluate(self, selection: Any) -> float:
        return float(self.costs[self.as_selection(selection)].sum())

    def check(self, selection: Any) -> Check:
        sel = self.as_selection(selection)
        return Check.from_reasons([] if sel.size == self.k else [f"selects {sel.size} items, expected k={self.k}"])

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self.n_items, self.k, replace=False))

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(range(self.n_items), self.k):
            yield np.array(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> Sequence[Formulation]:
        rng = np.random.default_rng(seed)
        return [cls(rng.uniform(-1.0, 2.0, 7), 3), cls(rng.integers(0, 3, 6).astype(float), 2)]  # the second has ties

    def linear_model(self, *, allow_lazy: bool = False) -> LinearModel:
        b = ModelBuilder("cheapest_items")
        x = b.add_vars("x", self.n_items, lb=0, ub=1, integer=True, cost=self.costs)
        b.add_cardinality("card", x, float(self.k))
        return b.build(selection_block="x", selection_items=np.arange(self.n_items))


@register_method("toy-sort", kind="heuristic", accepts=CheapestItems, description="the k cheapest items, by sorting",
                 options=())
def run_toy_sort(f: CheapestItems, *, time_limit: float | None, seed: int | None) -> MethodOutput:
    clock = Clock(time_limit)
    sel = np.sort(np.argsort(f.costs, kind="stable")[: f.k])
    return MethodOutput(selection=sel, termination=Termination.CONVERGED, solve_seconds=clock.elapsed)


@register_estimator
class ShiftedMean(Estimator):
    """The target's mean on the selected items plus the sources' mean gap between full and selected means."""

    name = "toy-shifted-mean"
    description = "mean on the selection, shifted by the sources' mean gap to the full mean (a toy)"

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        self.shift_ = float(np.mean(Y.mean(axis=1) - Y[:, sel].mean(axis=1)))

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1) + self.shift_
