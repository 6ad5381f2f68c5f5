"""Twin candidates and twin served items of a k-medoids instance (:class:`Twins`): interchangeable columns
and rows of the cost matrix, found once, and the reduced instance the statements solve."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .data import KMedoidsData
from .distances import _row_block


class Twins:
    """Representatives of twin candidates and twin served items of ``data`` (computed once).

    Candidates ``j`` and ``j'`` are twins when ``D[i, j] == D[i, j']`` for every served item ``i`` (exactly,
    as stored); served items are twins when they are as far from every candidate. Groups are found by a
    random projection and each checked entry by entry.
    """

    def __init__(self, data: KMedoidsData) -> None:
        self.data = data
        self._reps: tuple[np.ndarray, np.ndarray] | None = None

    def representatives(self) -> tuple[np.ndarray, np.ndarray]:
        """(candidate representatives, shape (C,); served-item representatives, shape (n_served,)), item
        indices (callers copy)."""
        if self._reps is None:
            self._reps = self._find()
        return self._reps

    def _find(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        I, cand, C = d.served(), d.cand, d.cand.size
        whole = d.cost_is_D()
        rng = np.random.default_rng(0)
        r_rows, r_cols = rng.uniform(1.0, 2.0, I.size), rng.uniform(1.0, 2.0, C)
        h_cols, h_rows = np.zeros(C), np.zeros(I.size)
        B = _row_block(C)
        for a in range(0, I.size, B):  # blocks of served rows: no copy of the cost matrix
            blk = np.asarray(d.D[a:a + B] if whole else d.D[np.ix_(I[a:a + B], cand)], dtype=np.float64)
            h_cols += r_rows[a:a + B] @ blk
            h_rows[a:a + B] = blk @ r_cols
        col_rep = twin_heads(h_cols, lambda m: d.D[I, cand[m]])
        row_rep = twin_heads(h_rows, lambda m: d.D[I[m], cand])
        return cand[col_rep], I[row_rep]

    def merged(self, copy_max: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The reduced instance's (weights, shape (N,); candidates, shape (C',)): one candidate per twin group
        and one served item per group of twin rows (its weight the group's sum; the others weight 0), the
        same objective for every selection. None when nothing merges or it does not pay: fewer distinct
        candidates than ``k``, or a cost-matrix copy above ``copy_max`` bytes."""
        d = self.data
        cand_rep, crep = self.representatives()
        keep = np.unique(cand_rep)
        n_clients = np.unique(crep).size
        copy_bytes = n_clients * keep.size * d.D.itemsize
        merges = keep.size < d.cand.size or n_clients < crep.size
        if not merges or keep.size < d.k or (d.cost_is_D() and copy_bytes > copy_max):
            return None
        w = np.zeros(d.n_items)
        np.add.at(w, crep, d.w[d.served()])
        return w, keep

    def canonical(self, sel: np.ndarray) -> np.ndarray:
        """``sel`` (sorted candidates, shape (k,)) with each medoid replaced by its representative; a medoid
        whose twin is also selected gives way to the lowest-index representative not selected."""
        cand = self.data.cand
        pos = np.searchsorted(cand, sel)
        reps = self.representatives()[0]
        mapped = np.unique(reps[pos])
        if mapped.size < sel.size:
            spare = np.setdiff1d(np.unique(reps), mapped)[: sel.size - mapped.size]
            mapped = np.sort(np.concatenate([mapped, spare]))
        return mapped.astype(np.int64)


def twin_heads(h: np.ndarray, vec: Callable[[int], np.ndarray]) -> np.ndarray:
    """Representative (lowest index) of each index whose vector ``vec(m)`` equals another's exactly.

    ``h`` (shape (n,)) is a random projection of each vector: equal vectors have
    (nearly) equal projections, so only runs of near-equal ``h`` are compared entry by
    entry; a hash collision stays apart. Returns indices, shape (n,).
    """
    order = np.argsort(h, kind="stable")
    hs = h[order]
    near = np.abs(np.diff(hs)) <= 1e-9 * np.maximum(1.0, np.abs(hs[1:]))
    rep = np.arange(h.size)
    for run in np.split(order, np.flatnonzero(~near) + 1):  # runs of near-equal projections
        if run.size > 1:
            members = np.sort(run)
            head = vec(int(members[0]))
            for m in members[1:]:
                if np.array_equal(vec(int(m)), head):
                    rep[m] = members[0]
    return rep
