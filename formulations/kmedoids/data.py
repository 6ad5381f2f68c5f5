"""The validated data of a k-medoids instance (:class:`KMedoidsData`): dissimilarities, weights, candidates,
``k``, the served items, the cost matrix and its sorted candidate lists."""
from __future__ import annotations

import numpy as np

from .bounds import SortedRows
from .distances import _row_block


class KMedoidsData:
    """A k-medoids instance's checked data, read-only (see :class:`~benchsel.formulations.kmedoids.KMedoids`).

    Parameters
    ----------
    D : ndarray, shape (N, N)
        Checked dissimilarities (float64 or float32).
    w : ndarray, shape (N,)
        Checked non-negative item weights.
    cand : ndarray of int64, shape (C,)
        Checked candidates, sorted.
    k : int
    unit_weights, all_candidates : bool
        The weights were not given (or all 1); the candidates were not given (or all items).
    """

    def __init__(self, D: np.ndarray, w: np.ndarray, cand: np.ndarray, k: int, *, unit_weights: bool,
                 all_candidates: bool) -> None:
        self.D = np.ascontiguousarray(D)
        self.D.setflags(write=False)
        self.dtype = self.D.dtype.type
        self.w = w.copy()
        self.w.setflags(write=False)
        self.cand = cand
        self.cand.setflags(write=False)
        self.k = k
        self.unit_weights, self.all_candidates = unit_weights, all_candidates
        self.sorted: SortedRows | None = None  # the cost matrix's sorted candidate lists, once made

    @property
    def n_items(self) -> int:
        return int(self.D.shape[0])

    def cost(self, S: np.ndarray) -> float:
        """``sum_i w_i min_{j in S} D[i, j]`` for a checked non-empty selection ``S`` (summed in float64)."""
        return float(self.w @ self.D[:, S].min(axis=1).astype(np.float64))

    def served(self) -> np.ndarray:
        """Items with positive weight (the only ones the objective sees), shape (n_served,)."""
        return np.flatnonzero(self.w > 0)

    def cost_is_D(self) -> bool:
        """Every item is served and a candidate: the cost matrix is ``D`` itself (a view, no copy)."""
        return self.served().size == self.n_items and self.all_candidates

    def cost_matrix(self) -> np.ndarray:
        """``D`` restricted to served items x candidates, shape (n_served, C): a view when nothing is left out."""
        if self.cost_is_D():
            return self.D
        return self.D[np.ix_(self.served(), self.cand)]

    def sorted_rows(self) -> SortedRows:
        """The cost matrix's sorted candidate lists (made once, sorted as far as asked so far)."""
        if self.sorted is None:
            self.sorted = SortedRows(self.cost_matrix())
        return self.sorted

    def sorted_candidates(self, deadline: float | None = None) -> SortedRows:
        """The sorted candidate lists, sorted until ``deadline`` (``time.perf_counter()`` value; None: all)."""
        rows = self.sorted_rows()
        rows.extend(deadline)
        return rows

    def integral_costs(self) -> bool:
        """Integer distances and weights: every selection has an integer objective."""
        w = self.w[self.served()]
        if not np.all(w == np.round(w)):
            return False
        B = _row_block(self.n_items)
        return all(bool(np.all(self.D[a:a + B] == np.round(self.D[a:a + B]))) for a in range(0, self.n_items, B))
