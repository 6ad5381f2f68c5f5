"""The swap state of a k-medoids selection (FasterPAM-style eager swaps), used by the heuristics and by the
Benders cut generator's incumbent improvement."""
from __future__ import annotations

from typing import Any

import numpy as np


class SwapState:
    """Nearest and second-nearest medoid of every item, and the cost change of swaps.

    FasterPAM's bookkeeping (Schubert & Rousseeuw 2021), shared by the
    ``"fasterpam"`` heuristic and the branch-and-cut's node heuristic.

    Parameters
    ----------
    D : ndarray, shape (N, N)
    medoids : ndarray of int, shape (k,)
        Item indices of the current medoids (distinct).
    w : ndarray, shape (N,)
        Item weights.

    Attributes
    ----------
    med : ndarray of int64, shape (k,)
        Current medoids (in slot order; :meth:`apply` replaces a slot).
    nearest, second : ndarray of int64, shape (N,)
        Slot of each item's nearest and second-nearest medoid.
    d1, d2 : ndarray, shape (N,)
        The corresponding distances (``d2 = inf`` when ``k == 1``).
    """

    def __init__(self, D: np.ndarray, medoids: np.ndarray, w: np.ndarray) -> None:
        self.D, self.w = D, w
        self.med = np.asarray(medoids, dtype=np.int64).copy()
        self.k = self.med.size
        self.is_med = np.zeros(D.shape[0], dtype=bool)
        self.is_med[self.med] = True
        self.nearest, self.d1, self.second, self.d2 = self._nearest_two(np.arange(D.shape[0]))
        self._groups: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def cost(self) -> float:
        return float(self.w @ self.d1)

    def _nearest_two(self, sub: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        Dm = self.D[np.ix_(sub, self.med)].astype(np.float64)
        if self.k == 1:
            z = np.zeros(sub.size, np.int64)
            return z, Dm[:, 0].copy(), z, np.full(sub.size, np.inf)
        part = np.argpartition(Dm, 1, axis=1)[:, :2]
        a = np.take_along_axis(Dm, part, axis=1)
        sw = a[:, 1] < a[:, 0]
        return (np.where(sw, part[:, 1], part[:, 0]), np.where(sw, a[:, 1], a[:, 0]),
                np.where(sw, part[:, 0], part[:, 1]), np.where(sw, a[:, 0], a[:, 1]))

    def _clusters(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Removal loss per slot, items sorted by slot, non-empty slots and their start offsets (cached)."""
        if self._groups is None:
            w = self.w
            removal = np.bincount(self.nearest, weights=w * (self.d2 - self.d1), minlength=self.k)
            perm = np.argsort(self.nearest, kind="stable")
            counts = np.bincount(self.nearest, minlength=self.k)
            filled = np.flatnonzero(counts)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
            self._groups = (removal, perm, filled, starts)
        return self._groups

    def deltas(self, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best slot to give up and the cost change, for swapping in each candidate.

        Parameters
        ----------
        cands : ndarray of int, shape (b,)
            Item indices (non-medoids; medoids get ``+inf``).

        Returns
        -------
        slot : ndarray of int64, shape (b,)
        delta : ndarray, shape (b,)
            Cost after the swap minus the cost now (negative: improving).
        """
        w, d1, d2 = self.w, self.d1, self.d2
        Dc = self.D[:, cands].astype(np.float64)  # (N, b)
        b = cands.size
        if self.k == 1:
            slot = np.zeros(b, np.int64)
            val = w @ Dc - float(w @ d1)
        else:
            removal, perm, filled, starts = self._clusters()
            diff1 = Dc - d1[:, None]
            closer = diff1 < 0
            acc = (w[:, None] * np.where(closer, diff1, 0.0)).sum(axis=0)
            M1 = np.where(closer, (w * (d1 - d2))[:, None],
                          np.where(Dc < d2[:, None], w[:, None] * (Dc - d2[:, None]), 0.0))
            delta = np.repeat(removal[:, None], b, axis=1)
            delta[filled] += np.add.reduceat(M1[perm], starts, axis=0)
            slot = np.argmin(delta, axis=0)
            val = delta[slot, np.arange(b)] + acc
        return slot, np.where(self.is_med[cands], np.inf, val)

    def apply(self, slot: int, c: int) -> None:
        """Swap medoid slot ``slot`` for item ``c``, updating nearest and second nearest incrementally."""
        i = int(slot)
        self.is_med[self.med[i]] = False
        self.med[i] = int(c)
        self.is_med[int(c)] = True
        dc = self.D[:, int(c)].astype(np.float64)
        nearest, second, d1, d2 = self.nearest, self.second, self.d1, self.d2
        redo = (nearest == i) | (second == i)
        keep = ~redo
        closer_c = keep & (dc < d1)
        mid_c = keep & ~closer_c & (dc < d2)
        self.second = np.where(closer_c, nearest, np.where(mid_c, i, second))
        self.d2 = np.where(closer_c, d1, np.where(mid_c, dc, d2))
        self.nearest = np.where(closer_c, i, nearest)
        self.d1 = np.where(closer_c, dc, d1)
        sub = np.flatnonzero(redo)
        if sub.size:
            self.nearest[sub], self.d1[sub], self.second[sub], self.d2[sub] = self._nearest_two(sub)
        self._groups = None

    def eager_swaps(self, cands: np.ndarray, *, max_evals: int | None = None, block: int = 64,
                    tol: float | None = None, expired: Any = None) -> tuple[int, int, bool]:
        """FasterPAM's eager search over ``cands`` (in the given order, cyclically).

        Each improving swap is applied as soon as it is found; the search
        stops after a full cycle without improvement (converged), after
        ``max_evals`` candidate evaluations, or when ``expired()`` is true.
        Candidates are scored ``block`` at a time; the first improving one in
        visiting order is applied, so the swaps are those of the one-by-one
        algorithm.

        Returns
        -------
        swaps : int
        evaluated : int
            Candidate evaluations done (a pass is ``len(cands)``).
        converged : bool
        """
        if tol is None:
            tol = 1e-12 * max(1.0, self.cost)
        total = cands.size
        limit = np.inf if max_evals is None else max_evals
        ptr = since = swaps = evaluated = 0
        while since < total and evaluated < limit:
            if expired is not None and expired():
                break
            take = int(min(block, total - since))
            idx = (ptr + np.arange(take)) % total
            slot, val = self.deltas(cands[idx])
            hits = np.flatnonzero(val < -tol)
            if hits.size:
                t = int(hits[0])
                self.apply(int(slot[t]), int(cands[idx[t]]))
                swaps += 1
                ptr = (ptr + t + 1) % total
                evaluated += t + 1
                since = 0
            else:
                ptr = (ptr + take) % total
                evaluated += take
                since += take
        return swaps, evaluated, since >= total
