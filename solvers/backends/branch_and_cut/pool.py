"""The cut pool (:class:`CutPool`: rows that left the LP) and the row-block helpers of separation."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.model import RowBlock


class CutPool:
    """Rows that left the LP (slack too long), kept as CSR for a cheap violation check.

    Parameters
    ----------
    n_cols : int
        Columns of the model (the rows are over the model's columns).
    capacity : int
        Most rows kept; the oldest are forgotten first.
    max_nnz : int, optional
        Most non-zeros kept.
    """

    def __init__(self, n_cols: int, capacity: int, max_nnz: int | None = None) -> None:
        import scipy.sparse as sp

        self._sp = sp
        self.n_cols = n_cols
        self.capacity = capacity
        self.max_nnz = max_nnz
        self.forgotten = 0
        self.A = sp.csr_array((0, n_cols))
        self.lb = np.zeros(0)
        self.ub = np.zeros(0)

    @property
    def size(self) -> int:
        return int(self.lb.size)

    def add(self, A: Any, lb: np.ndarray, ub: np.ndarray) -> None:
        """Add rows ``A`` (shape (m, n_cols)) with bounds ``lb``, ``ub`` (shape (m,))."""
        if A.shape[0] == 0:
            return
        self.A = self._sp.vstack([self.A, A], format="csr")
        self.lb = np.concatenate([self.lb, lb])
        self.ub = np.concatenate([self.ub, ub])
        extra = max(self.size - self.capacity, 0)
        if self.max_nnz is not None and self.A.nnz > self.max_nnz:  # the oldest rows until the rest fits
            over = self.A.nnz - self.max_nnz
            extra = max(extra, int(np.searchsorted(self.A.indptr[1:], over, side="left")) + 1)
        if extra > 0:  # forget the oldest
            self.A = self.A[extra:]
            self.lb, self.ub = self.lb[extra:], self.ub[extra:]
            self.forgotten += extra

    def take_violated(self, x: np.ndarray, tol: float) -> RowBlock | None:
        """Remove and return the pool rows ``x`` (shape (n_cols,)) violates (None if none)."""
        if self.size == 0:
            return None
        act = self.A @ x
        scale = np.maximum(1.0, np.abs(np.where(np.isfinite(self.lb), self.lb, self.ub)))
        bad = (act < self.lb - tol * scale) | (act > self.ub + tol * scale)
        if not bad.any():
            return None
        sub = self.A[bad].tocoo()
        out = RowBlock(rows=sub.row.astype(np.int64), cols=sub.col.astype(np.int64), vals=sub.data,
                       lb=self.lb[bad], ub=self.ub[bad])
        keep = ~bad
        self.A, self.lb, self.ub = self.A[keep], self.lb[keep], self.ub[keep]
        return out


def stack(blocks: list[RowBlock]) -> RowBlock:
    """The rows of ``blocks``, one after the other."""
    offs = np.cumsum([0] + [b.n_rows for b in blocks[:-1]])
    return RowBlock(
        rows=np.concatenate([b.rows + o for b, o in zip(blocks, offs)]),
        cols=np.concatenate([b.cols for b in blocks]),
        vals=np.concatenate([b.vals for b in blocks]),
        lb=np.concatenate([b.lb for b in blocks]),
        ub=np.concatenate([b.ub for b in blocks]),
    )


def violated_rows(block: RowBlock, x: np.ndarray, n: int, tol: float) -> RowBlock | None:
    """The rows of ``block`` that ``x`` (shape (n,)) violates."""
    A = block.csr(n)
    act = A @ x
    scale = np.maximum(1.0, np.abs(np.where(np.isfinite(block.lb), block.lb, block.ub)))
    bad = (act < block.lb - tol * scale) | (act > block.ub + tol * scale)
    if not bad.any():
        return None
    sub = A[bad].tocoo()
    return RowBlock(rows=sub.row.astype(np.int64), cols=sub.col.astype(np.int64), vals=sub.data,
                    lb=block.lb[bad], ub=block.ub[bad])


def dedupe(block: RowBlock, n: int) -> RowBlock:
    """Drop repeated rows (same entries and bounds), keeping the first."""
    A = block.csr(n)
    rng = np.random.default_rng(12345)
    h1 = A @ rng.uniform(1.0, 2.0, n)
    sig = np.round(np.stack([h1, np.where(np.isfinite(block.lb), block.lb, 0.0), A.indptr[1:] - A.indptr[:-1]]), 9)
    _, first = np.unique(sig.T, axis=0, return_index=True)
    if first.size == block.n_rows:
        return block
    keep = np.zeros(block.n_rows, dtype=bool)
    keep[first] = True
    sub = A[keep].tocoo()
    return RowBlock(rows=sub.row.astype(np.int64), cols=sub.col.astype(np.int64), vals=sub.data,
                    lb=block.lb[keep], ub=block.ub[keep])
