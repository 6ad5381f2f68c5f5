"""Per-item sorted candidate lists of k-medoids instances, the Lagrangian terms and the memory available."""
from __future__ import annotations

import os
import threading
import time

import numpy as np

from .distances import _row_block


def available_bytes() -> int:
    """Memory the system reports available (``MemAvailable``); a large number when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _row_extremes(Dc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row minima and maxima of a cost matrix as float64, blockwise."""
    n = Dc.shape[0]
    lo, hi = np.empty(n), np.empty(n)
    B = _row_block(Dc.shape[1])
    for a in range(0, n, B):
        lo[a:a + B] = Dc[a:a + B].min(axis=1)
        hi[a:a + B] = Dc[a:a + B].max(axis=1)
    return lo, hi


class _LagrangeTerms:
    """``rho_j = sum_i min(0, w_i D[i, j] - lam_i)`` and the subgradient counts, dense or along sorted lists."""

    def __init__(self, Dc: np.ndarray, w: np.ndarray, rows: SortedRows | None) -> None:
        self.Dc, self.w, self.rows = Dc, w, rows
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None

    def rho(self, lam: np.ndarray) -> np.ndarray:
        n, C = self.Dc.shape
        if self.rows is None:
            rho = np.zeros(C)
            B = _row_block(C)
            for a in range(0, n, B):
                blk = self.w[a:a + B, None] * self.Dc[a:a + B] - lam[a:a + B, None]
                np.minimum(blk, 0.0, out=blk)
                rho += blk.sum(axis=0)
            return rho
        r, c, v = self._prefix_pairs(lam)
        self._pairs = (r, c)
        return -np.bincount(c, weights=v, minlength=C)

    def _prefix_pairs(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs with ``w_i D[i, j] < lam_i`` (row, column, ``lam_i - w_i D[i, j]``), walking each sorted list."""
        assert self.rows is not None
        order, Dc, w = self.rows.order, self.Dc, self.w
        C = Dc.shape[1]
        thr = lam / w
        active = np.flatnonzero(thr > 0)
        d0, width = 0, 16
        rs, cs, vs = [], [], []
        while active.size and d0 < C:
            d1 = min(C, d0 + width)
            cols = order[active, d0:d1]
            dd = Dc[active[:, None], cols].astype(np.float64)
            inside = dd < thr[active, None]
            i, q = np.nonzero(inside)
            rr = active[i]
            rs.append(rr)
            cs.append(cols[i, q].astype(np.int64))
            vs.append(lam[rr] - w[rr] * dd[i, q])
            active = active[inside[:, -1]]
            d0, width = d1, 2 * width
        if not rs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(rs), np.concatenate(cs), np.concatenate(vs)

    def served(self, lam: np.ndarray, S: np.ndarray) -> np.ndarray:
        """Per item, how many of the columns ``S`` have ``w_i D[i, j] < lam_i``."""
        n, C = self.Dc.shape
        if self.rows is None or self._pairs is None:
            out = np.zeros(n)
            B = _row_block(max(S.size, 1))
            for a in range(0, n, B):
                out[a:a + B] = (self.w[a:a + B, None] * self.Dc[a:a + B][:, S] < lam[a:a + B, None]).sum(axis=1)
            return out
        r, c = self._pairs
        chosen = np.zeros(C, dtype=bool)
        chosen[S] = True
        return np.bincount(r, weights=chosen[c].astype(np.float64), minlength=n)


class SortedRows:
    """Per row of a cost matrix, its columns in increasing cost, sorted block by block on demand.

    Attributes
    ----------
    Dc : ndarray, shape (n, C)
        The cost matrix (a view of ``KMedoids.D`` when every item is served
        and every item is a candidate).
    order : ndarray of int32, shape (n, C)
        ``order[i]`` sorts ``Dc[i]`` (stable); valid for rows ``< done``.
    done : int
        Rows sorted so far.
    """

    def __init__(self, Dc: np.ndarray) -> None:
        self.Dc = Dc
        n, C = Dc.shape
        self.order = np.empty((n, C), dtype=np.int32 if C < 2**31 else np.int64)
        self.done = 0
        self._lock = threading.Lock()

    @property
    def complete(self) -> bool:
        return self.done >= self.Dc.shape[0]

    def extend(self, deadline: float | None = None) -> bool:
        """Sort further rows until all are sorted or ``time.perf_counter()`` passes ``deadline``.

        Returns True when every row is sorted.
        """
        n, C = self.Dc.shape
        B = _row_block(C)
        with self._lock:  # search threads may separate at once; `done` only grows, rows below it stay sorted
            while self.done < n:
                if deadline is not None and time.perf_counter() >= deadline:
                    return False
                a, b = self.done, min(n, self.done + B)
                self.order[a:b] = np.argsort(self.Dc[a:b], axis=1, kind="stable")
                self.done = b
        return True
