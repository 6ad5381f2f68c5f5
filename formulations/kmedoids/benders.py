"""Benders cuts of the k-medoids master problem (lazy rows separated from sorted candidate lists)."""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchsel.formulations.core.model import LazyRowsBase, RowBlock

from .bounds import SortedRows
from .data import KMedoidsData
from .distances import _BLOCK, _row_block
from .lagrangian import lagrangian_bound
from .swap import SwapState


class BendersCuts(LazyRowsBase):
    """Lazy rows of the Benders master: ``theta_i + sum_j max(0, L - D[i, j]) y_j >= L``.

    For a (fractional) ``y``, the deepest cut of item ``i`` is at the distance
    ``L_i`` where the open mass of its nearest candidates first reaches 1
    (Duran-Mateluna, Ales & Elloumi: the Benders subproblem of the radius
    formulation solved in linear time); at an integral ``y`` it is the
    distance to the nearest medoid and the cut is tight. Items whose sorted
    candidate list exists walk it from the nearest candidate (a few dozen
    entries each); the others (while the lists are still being sorted within a
    time slice per call) sort only the candidates with positive ``y``.
    Nothing of size ``N x N`` is allocated per call.

    Also offers the branch-and-cut a rounding (``round``) and a local search
    (``improve``: eager swaps among the candidates the LP uses).
    """

    name = "benders"

    def __init__(self, d: KMedoidsData, rows: SortedRows, y_cols: np.ndarray, theta_cols: np.ndarray,
                 lo: np.ndarray, hi: np.ndarray, *, sort_slice: float = 0.25) -> None:
        self.data = d
        self.sorted = rows
        self.Dc = rows.Dc  # (n_served, C)
        self.items = d.cand  # item index of each y column
        self.k = d.k
        self.y_cols = y_cols
        self.theta_cols = theta_cols
        self.lo, self.hi = lo, hi
        self.sort_slice = sort_slice
        self.stats: dict[str, Any] = {"separations": 0, "separation_seconds": 0.0}
        self.initial_bound: float | None = None  # the Lagrangian bound behind initial_rows
        # the memory the k-medoids solve is designed to stay within (3 dense N x N float64 copies + 400 MB):
        # the branch-and-cut starts further search threads only inside it
        self.memory_budget = 3 * 8 * d.n_items ** 2 + 400 * 2 ** 20

    # ------------------------------------------------------------ separation
    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        """Deepest cut of every item it violates at ``x`` (shape (n_cols,)), or None."""
        t0 = time.perf_counter()
        if not self.sorted.complete:
            self.sorted.extend(t0 + self.sort_slice)
        y = np.clip(x[self.y_cols], 0.0, 1.0)
        L, act, pos = self.levels(y)
        viol = L - act - x[self.theta_cols]
        idx = np.flatnonzero(viol > tol * np.maximum(1.0, np.abs(L)))
        out = self.cuts(idx, L[idx], pos[idx]) if idx.size else None
        self.stats["separations"] += 1
        self.stats["separation_seconds"] += time.perf_counter() - t0
        return out

    def levels(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Deepest level of every item at ``y``.

        Returns
        -------
        L : ndarray, shape (n_served,)
            The level (a distance).
        act : ndarray, shape (n_served,)
            ``sum_j max(0, L - D[i, j]) y_j``.
        pos : ndarray of int64, shape (n_served,)
            Number of sorted candidates at or before the level (-1 for rows
            not sorted yet).
        """
        n = self.Dc.shape[0]
        L, act, pos = np.empty(n), np.empty(n), np.full(n, -1, dtype=np.int64)
        s = self.sorted.done
        B = max(256, _BLOCK // 256)  # rows per walk: bounded temporaries
        for a in range(0, s, B):
            b = min(s, a + B)
            L[a:b], act[a:b], pos[a:b] = self._walk(np.arange(a, b), y)
        if s < n:
            L[s:], act[s:] = self._support_levels(np.arange(s, n), y)
        return L, act, pos

    def _walk(self, R: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walk the sorted lists of rows ``R`` until the open mass reaches 1 (chunks of doubling width)."""
        C = self.Dc.shape[1]
        order, Dc = self.sorted.order, self.Dc
        m = R.size
        L, act, pos = np.empty(m), np.empty(m), np.empty(m, dtype=np.int64)
        cy, cyd = np.zeros(m), np.zeros(m)
        active = np.arange(m)
        d0, width, thr = 0, 16, 1.0 - 1e-9
        while active.size:
            d1 = min(C, d0 + width)
            rr = R[active]
            cols = order[rr, d0:d1]
            yy = y[cols]
            dd = Dc[rr[:, None], cols].astype(np.float64)
            cum = cy[active, None] + np.cumsum(yy, axis=1)
            cumd = cyd[active, None] + np.cumsum(yy * dd, axis=1)
            reach = cum >= thr
            hit = reach[:, -1] if d1 < C else np.ones(active.size, dtype=bool)
            if hit.any():
                h = np.flatnonzero(hit)
                p = np.where(reach[h].any(axis=1), np.argmax(reach[h], axis=1), -1)
                far = p < 0  # the mass never reaches 1 (rounding): the farthest candidate's level
                Lh = np.where(far, self.hi[rr[h]], dd[h, np.maximum(p, 0)])
                q = np.where(far, d1 - d0 - 1, p)
                act[active[h]] = Lh * cum[h, q] - cumd[h, q]
                L[active[h]] = Lh
                pos[active[h]] = np.where(far, C, d0 + q + 1)
            cy[active] = cum[:, -1]
            cyd[active] = cumd[:, -1]
            active = active[~hit]
            d0, width = d1, 2 * width
        return L, act, pos

    def _support_levels(self, R: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Levels of unsorted rows from the candidates with positive ``y`` only."""
        J = np.flatnonzero(y > 0)
        yJ = y[J]
        m = R.size
        if J.size == 0:
            return self.hi[R].copy(), np.zeros(m)
        L, act = np.empty(m), np.empty(m)
        B = _row_block(max(J.size, 1))
        thr = 1.0 - 1e-9
        for a in range(0, m, B):
            rr = R[a:a + B]
            DJ = self.Dc[np.ix_(rr, J)].astype(np.float64)
            o = np.argsort(DJ, axis=1, kind="stable")
            ds = np.take_along_axis(DJ, o, axis=1)
            ys = yJ[o]
            cum = np.cumsum(ys, axis=1)
            cumd = np.cumsum(ys * ds, axis=1)
            reach = cum >= thr
            ok = reach.any(axis=1)
            p = np.where(ok, np.argmax(reach, axis=1), J.size - 1)
            Lb = np.where(ok, ds[np.arange(rr.size), p], self.hi[rr])
            L[a:a + B] = Lb
            act[a:a + B] = Lb * cum[np.arange(rr.size), p] - cumd[np.arange(rr.size), p]
        return L, act

    def cuts(self, rows: np.ndarray, L: np.ndarray, pos: np.ndarray | None = None) -> RowBlock:
        """The cuts of items ``rows`` (indices into the served items) at levels ``L``.

        ``pos`` (from :meth:`levels`) bounds the sorted prefix holding every
        candidate closer than the level; rows without it are scanned.
        """
        if pos is None:
            pos = np.full(rows.size, -1, dtype=np.int64)
        m = rows.size
        srt = np.flatnonzero(pos >= 0)
        scan = np.flatnonzero(pos < 0)
        r_parts, c_parts, v_parts = [], [], []
        if srt.size:
            p = pos[srt]
            rr = np.repeat(srt, p)
            offs = np.repeat(np.cumsum(p) - p, p)
            qq = np.arange(rr.size) - offs
            cols = self.sorted.order[rows[rr], qq].astype(np.int64)
            vals = L[rr] - self.Dc[rows[rr], cols]
            keep = vals > 0
            r_parts.append(rr[keep])
            c_parts.append(cols[keep])
            v_parts.append(vals[keep])
        if scan.size:
            B = _row_block(self.Dc.shape[1])
            for a in range(0, scan.size, B):
                sub = scan[a:a + B]
                vals = L[sub, None] - self.Dc[rows[sub]]
                rr, cols = np.nonzero(vals > 0)
                r_parts.append(sub[rr])
                c_parts.append(cols)
                v_parts.append(vals[rr, cols].astype(np.float64))
        rr = np.concatenate(r_parts) if r_parts else np.zeros(0, np.int64)
        cc = np.concatenate(c_parts) if c_parts else np.zeros(0, np.int64)
        vv = np.concatenate(v_parts) if v_parts else np.zeros(0)
        return RowBlock(
            rows=np.concatenate([np.arange(m), rr]),
            cols=np.concatenate([self.theta_cols[rows], self.y_cols[cc]]),
            vals=np.concatenate([np.ones(m), vv]),
            lb=np.asarray(L, dtype=np.float64),
            ub=np.full(m, np.inf),
        )

    #: Smallest ``n_served * C`` for which :meth:`initial_rows` proposes cuts (below, the plain cut loop is quick).
    INITIAL_ROWS_MIN = 4_000_000

    def initial_rows(self, time_limit: float | None = None, incumbent: np.ndarray | None = None) -> RowBlock | None:
        """One cut per item at the level of near-optimal Lagrangian multipliers (``lam_i / w_i``).

        With these cuts the master LP is at least the Lagrangian bound reached
        (summing them with weights ``w_i`` gives ``L(lam)``), so the root cut
        loop starts near the LP bound instead of from ``theta = 0``; the
        multipliers come from :meth:`KMedoids.lagrangian_bound` within
        ``time_limit`` seconds, and its bound is kept as ``initial_bound``.
        """
        d = self.data
        if self.Dc.size < self.INITIAL_ROWS_MIN:
            return None
        inc = None if incumbent is None else np.asarray(incumbent, dtype=np.int64)
        self.initial_bound, lam = lagrangian_bound(d, time_limit, incumbent=inc, max_iter=1000)
        w = d.w[d.served()]
        L = np.clip(lam / w, self.lo, self.hi)
        self.stats["initial_rows"] = int(L.size)
        return self.cuts(np.arange(L.size), L)

    # ----------------------------------------------------- primal heuristics
    def round(self, x: np.ndarray) -> np.ndarray:
        """The ``k`` candidates with the largest LP value (ties: lowest index)."""
        y = x[self.y_cols]
        return np.sort(self.items[np.argsort(-y, kind="stable")[: self.k]])

    def improve(self, selection: np.ndarray, x: np.ndarray | None = None, *, passes: int = 2,
                deadline: float | None = None) -> np.ndarray:
        """A few eager-swap passes from ``selection`` over the candidates with positive LP value.

        Parameters
        ----------
        selection : ndarray of int, shape (k,)
            Item indices.
        x : ndarray, shape (n_cols,), optional
            The LP point; without it every candidate is tried.
        passes : int
        deadline : float, optional
            ``time.perf_counter()`` value after which no further swap is tried.
        """
        d = self.data
        pool = self.items if x is None else self.items[x[self.y_cols] > 1e-6]
        pool = np.setdiff1d(pool, selection)
        if pool.size == 0:
            return np.sort(np.asarray(selection, dtype=np.int64))
        st = SwapState(d.D, np.asarray(selection), d.w)
        expired = None if deadline is None else (lambda: time.perf_counter() >= deadline)
        st.eager_swaps(pool, max_evals=passes * pool.size, expired=expired)
        return np.sort(st.med)
