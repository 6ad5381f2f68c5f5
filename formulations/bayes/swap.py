"""A batch of BayesAME's batch problem under single swaps (:class:`SwapState`: neighbour values by a
rank-2 Woodbury update of ``M^{-1}``, ``O(k^2)`` per neighbour) and the local search over them
(:func:`local_search`); used by the SMC search and its k-DPP MCMC start."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.clock import Clock
from .posterior import BatchData

__all__ = ["SwapState", "local_search"]


class SwapState:
    """A batch with ``M^{-1} = Sigma_U[A, A]^{-1}``; neighbour values by rank-2 Woodbury.

    Parameters
    ----------
    data : BatchData
    buckets : array_like of int, shape (k,)
        The batch as compact bucket ids (repeats allowed up to ``data.avail``).
    refresh_every : int
        Recompute ``M^{-1}`` exactly after this many Woodbury updates (drift control).

    Notes
    -----
    Swapping position ``m`` for bucket ``c`` changes row and column ``m`` of
    ``M``: ``M' = M + U V^T`` with ``U = [e_m, d - d_m e_m / 2]``,
    ``V = [d - d_m e_m / 2, e_m]`` and ``d = (new column) - (old column)``, so
    ``M'^{-1} = M^{-1} - M^{-1} U (I_2 + V^T M^{-1} U)^{-1} V^T M^{-1}`` and
    ``beta' = a'^T M'^{-1} a' / N^2`` cost ``O(k^2)`` (one product ``M^{-1} d``).
    """

    def __init__(self, data: BatchData, buckets: Any, refresh_every: int = 32) -> None:
        self.data = data
        self.b = np.array(buckets, dtype=np.int64)
        self.k = self.b.size
        self.refresh_every = refresh_every
        self._since = 0
        self.refresh()

    def refresh(self) -> None:
        """Exact ``M^{-1}``, ``x = M^{-1} a`` and the value."""
        d = self.data
        M = d.S[np.ix_(self.b, self.b)] + np.diag(d.noise[self.b])
        L = np.linalg.cholesky(M)
        Linv = np.linalg.inv(L)
        self.Minv = Linv.T @ Linv
        self.a = d.v[self.b].copy()
        self.x = self.Minv @ self.a
        self.value = float(self.a @ self.x) / d.N ** 2
        self._since = 0

    def counts(self) -> np.ndarray:
        return np.bincount(self.b, minlength=self.data.n_buckets)

    def candidates(self, m: int) -> np.ndarray:
        """Buckets that may replace position ``m`` (availability respected, not the same bucket)."""
        free = self.counts() < self.data.avail
        free[self.b[m]] = False
        return np.flatnonzero(free)

    def _parts(self, m: int, cands: np.ndarray):
        d = self.data
        b = self.b
        newcol = d.S[np.ix_(cands, b)]  # (P, k): S[c, b_j]
        newcol[:, m] = d.S[cands, cands] + d.noise[cands]
        oldcol = d.S[b, b[m]].copy()
        oldcol[m] += d.noise[b[m]]
        dd = newcol - oldcol[None, :]
        u2 = dd.copy()
        u2[:, m] -= 0.5 * dd[:, m]
        P1 = self.Minv[:, m]  # (k,)
        P2 = u2 @ self.Minv  # (P, k)   <- the O(k^2) step
        Q11 = u2 @ P1
        Q12 = np.einsum("ij,ij->i", u2, P2)
        Q21 = np.full(cands.size, self.Minv[m, m])
        Q22 = P2[:, m]
        return u2, P1, P2, Q11, Q12, Q21, Q22

    def swap_values(self, m: int, cands: np.ndarray) -> np.ndarray:
        """``beta`` after replacing position ``m`` by each bucket of ``cands``, shape (P,)."""
        cands = np.asarray(cands, dtype=np.int64)
        if cands.size == 0:
            return np.zeros(0)
        d = self.data
        u2, P1, _P2, Q11, Q12, Q21, Q22 = self._parts(m, cands)
        da = d.v[cands] - self.a[m]  # a' = a + da e_m
        xp = self.x[None, :] + da[:, None] * P1[None, :]  # x' = M^{-1} a'   (P, k)
        y1 = np.einsum("ij,ij->i", u2, xp)
        y2 = xp[:, m]
        # (I + Q)^{-1} y, Q = [[Q11, Q12], [Q21, Q22]]
        A11, A12, A21, A22 = 1.0 + Q11, Q12, Q21, 1.0 + Q22
        det = A11 * A22 - A12 * A21
        s1 = (A22 * y1 - A12 * y2) / det
        s2 = (-A21 * y1 + A11 * y2) / det
        # a'^T M^{-1} U = (U^T x')^T = [x'_m, u2 . x'] = [y2, y1]
        aa = np.einsum("ij,ij->i", xp, np.broadcast_to(self.a, xp.shape)) + da * xp[:, m]
        val = aa - (y2 * s1 + y1 * s2)
        return val / d.N ** 2

    def det_ratios(self, m: int, cands: np.ndarray) -> np.ndarray:
        """``det(M') / det(M)`` for each swap (matrix determinant lemma), shape (P,)."""
        cands = np.asarray(cands, dtype=np.int64)
        _, _, _, Q11, Q12, Q21, Q22 = self._parts(m, cands)
        return (1.0 + Q11) * (1.0 + Q22) - Q12 * Q21

    def apply(self, m: int, c: int) -> None:
        """Swap position ``m`` to bucket ``c``; ``M^{-1}`` by the rank-2 Woodbury step."""
        c = int(c)
        _u2, P1, P2, Q11, Q12, Q21, Q22 = self._parts(m, np.array([c]))
        IQ = np.array([[1.0 + Q11[0], Q12[0]], [Q21[0], 1.0 + Q22[0]]])
        Pm = np.column_stack([P1, P2[0]])  # M^{-1} U
        VtMinv = np.vstack([P2[0], P1])  # V^T M^{-1}
        self.Minv = self.Minv - Pm @ np.linalg.solve(IQ, VtMinv)
        self.Minv = 0.5 * (self.Minv + self.Minv.T)
        self.b[m] = c
        self._since += 1
        if self._since >= self.refresh_every:
            self.refresh()
            return
        self.a = self.data.v[self.b].copy()
        self.x = self.Minv @ self.a
        self.value = float(self.a @ self.x) / self.data.N ** 2


def local_search(state: SwapState, rng: np.random.Generator, *, max_swaps: int | None = None,
                 clock: Clock | None = None) -> tuple[int, bool]:
    """Single-swap local search: positions in random order, best improving bucket per position.

    Stops at a local optimum (a full pass without improvement), after
    ``max_swaps`` swaps or when the clock expires.

    Returns
    -------
    n_swaps : int
    local_optimum : bool
    """
    swaps = 0
    while True:
        improved = False
        for m in rng.permutation(state.k):
            if clock is not None and clock.expired():
                return swaps, False
            cands = state.candidates(int(m))
            if cands.size == 0:
                continue
            vals = state.swap_values(int(m), cands)
            j = int(np.argmax(vals))
            if vals[j] > state.value * (1.0 + 1e-10) + 1e-300:
                state.apply(int(m), int(cands[j]))
                swaps += 1
                improved = True
                if max_swaps is not None and swaps >= max_swaps:
                    return swaps, False
        if not improved:
            return swaps, True
