"""The branch-and-cut's shared search state, nodes, cut pool and row-block helpers."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.core.model import RowBlock
from benchsel.formulations.core.result import Termination


@dataclass(order=True)
class _Node:
    bound: float
    neg_depth: int
    seq: int
    lb: np.ndarray = field(compare=False)
    ub: np.ndarray = field(compare=False)
    branch: tuple[int, int, float, float] | None = field(default=None, compare=False)  # (col, dir, frac, parent obj)
    owner: int = field(default=0, compare=False)  # the search thread that created it (threading.get_ident())


@dataclass
class _NodeLP:
    status: str  # "optimal", "infeasible", "unbounded", "time", "error"
    x: np.ndarray | None = None
    obj: float | None = None
    rc: np.ndarray | None = None


class _Search:
    """The search state every thread shares; ``lock`` guards it, ``cond`` wakes threads waiting for nodes."""

    def __init__(self, glb: np.ndarray, gub: np.ndarray) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.heap: list[_Node] = []
        self.seq = 0
        self.UB = np.inf
        self.best_sel: np.ndarray | None = None
        self.glb, self.gub = glb, gub  # global bounds of the integer columns (root fixing)
        self.pc_sum = np.zeros((2, glb.size))  # pseudo-costs: objective gain per unit change, down / up
        self.pc_n = np.zeros((2, glb.size))
        self.pruned_min = np.inf
        self.root: _NodeLP | None = None
        self.root_bound: float | None = None
        self.busy: dict[int, float] = {}  # thread -> bound of the node it holds (counted in every bound)
        self.stop: Termination | None = None  # set: every thread leaves its loop
        self.halt = False  # the main thread ends the search (an exception): threads leave
        self.failure: BaseException | None = None  # raised in a helper thread
        self.searchers: list[Any] = []  # every thread's BranchAndCut (the main one first)


class _Shared:
    """An attribute of :class:`BranchAndCut` kept in its :class:`_Search` (one for every search thread)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else getattr(obj.sh, self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj.sh, self.name, value)


def _fresh_stats() -> dict[str, Any]:
    return {
        "cuts": 0, "pool_cuts": 0, "cuts_aged_out": 0, "lp_nnz_peak": 0, "lp_solves": 0, "nodes": 0,
        "root_fixed": 0,
        "node_fixed": 0, "heuristic_improvements": 0, "simplex_iterations": 0, "incumbents": 0,
        "root_seconds": None, "root_rounds": None, "root_end": None, "strong_lps": 0, "strong_iterations": 0,
        "strong_skipped": 0, "lp_retries": 0,
        "initial_rows_added": 0, "columns_removed": 0, "strong_fixed": 0, "strong_pruned": 0, "threads_retired": 0}


#: Counters summed over the search threads in the extras (the others are the main thread's).
_ADDITIVE = ("cuts", "pool_cuts", "cuts_aged_out", "lp_solves", "nodes", "node_fixed", "heuristic_improvements",
             "simplex_iterations", "incumbents", "strong_lps", "strong_iterations", "strong_skipped", "lp_retries",
             "root_fixed", "strong_fixed", "strong_pruned")


class _CutPool:
    """Rows that left the LP (slack too long), kept as CSR for a cheap violation check."""

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
        """Remove and return the pool rows ``x`` violates (None if none)."""
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


def _stack(blocks: list[RowBlock]) -> RowBlock:
    offs = np.cumsum([0] + [b.n_rows for b in blocks[:-1]])
    return RowBlock(
        rows=np.concatenate([b.rows + o for b, o in zip(blocks, offs)]),
        cols=np.concatenate([b.cols for b in blocks]),
        vals=np.concatenate([b.vals for b in blocks]),
        lb=np.concatenate([b.lb for b in blocks]),
        ub=np.concatenate([b.ub for b in blocks]),
    )


def _violated_rows(block: RowBlock, x: np.ndarray, n: int, tol: float) -> RowBlock | None:
    """The rows of ``block`` that ``x`` violates."""
    A = block.csr(n)
    act = A @ x
    scale = np.maximum(1.0, np.abs(np.where(np.isfinite(block.lb), block.lb, block.ub)))
    bad = (act < block.lb - tol * scale) | (act > block.ub + tol * scale)
    if not bad.any():
        return None
    sub = A[bad].tocoo()
    return RowBlock(rows=sub.row.astype(np.int64), cols=sub.col.astype(np.int64), vals=sub.data,
                    lb=block.lb[bad], ub=block.ub[bad])


def _dedupe(block: RowBlock, n: int) -> RowBlock:
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
