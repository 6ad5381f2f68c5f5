"""Separation, the LP's cut rows, their ageing into the pool, and fixing (bound as methods of
:class:`~.search.BranchAndCut`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from benchsel.formulations.core.model import RowBlock

from . import memory
from .state import _dedupe, _NodeLP, _stack, _violated_rows

if TYPE_CHECKING:
    from .search import BranchAndCut


def _separate(self: BranchAndCut, x: np.ndarray, *, root: bool) -> RowBlock | None:
    """Violated rows at ``x``: from the pool, else from the lazy rows (plain and, at the root, in-out)."""
    tol = 1e-6
    pooled = self.pool.take_violated(x, tol)
    if pooled is not None:
        self.stats["pool_cuts"] += pooled.n_rows
        return pooled
    blocks = []
    a = self.opt.in_out
    if root and 0 < a < 1:
        if self.core is None:
            self.core = x[self.ints].copy()
        xs = x.copy()
        xs[self.ints] = a * x[self.ints] + (1 - a) * self.core
        self.core = 0.5 * self.core + 0.5 * x[self.ints]
        sep = self.lazy.separate(xs, tol)
        if sep is not None:
            sep = _violated_rows(sep, x, self.n, tol)
            if sep is not None:
                blocks.append(sep)
    plain = self.lazy.separate(x, tol)
    if plain is not None:
        blocks.append(plain)
    if not blocks:
        return None
    return blocks[0] if len(blocks) == 1 else _dedupe(_stack(blocks), self.n)


def _initial_rows(self: BranchAndCut) -> None:
    """Rows the lazy object proposes before the first LP (``lazy.initial_rows``), within ``initial_share``
    of the time left."""
    if self.opt.initial_share <= 0 or self.stats.get("initial_rows_added"):
        return
    left = self._left()
    budget = None if not np.isfinite(left) else self.opt.initial_share * left
    block = self.lazy.initial_rows(budget, self.best_sel)
    if block is not None and block.n_rows:
        self._add_rows(block)
        self.stats["initial_rows_added"] = block.n_rows
        self._ipm_next = block.n_rows >= 1000
    bound = self.lazy.initial_bound  # a valid bound even if the first LP does not finish
    if bound is not None and np.isfinite(bound):
        self.initial_bound = float(bound)


def _add_rows(self: BranchAndCut, block: RowBlock) -> None:
    A = block.csr(self.n)
    if self.cols.size < self.n:  # the entries of columns that left the LP (held at 0) are dropped
        A = A[:, self.cols]
    self.h.addRows(int(A.shape[0]), block.lb.astype(np.float64), block.ub.astype(np.float64), int(A.nnz),
                   A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data.astype(np.float64))
    self.cut_age = np.concatenate([self.cut_age, np.zeros(A.shape[0], dtype=np.int32)])
    self.lp_nnz += int(A.nnz)
    self.stats["lp_nnz_peak"] = max(self.stats["lp_nnz_peak"], self.lp_nnz)
    self.cut_lb = np.concatenate([self.cut_lb, block.lb.astype(np.float64)])
    self.cut_ub = np.concatenate([self.cut_ub, block.ub.astype(np.float64)])
    self.stats["cuts"] += int(A.shape[0])


def _age_cuts(self: BranchAndCut, row_value: np.ndarray) -> None:
    """Age slack cuts; move those slack for more than ``cut_age`` LP solves to the pool."""
    if self.opt.cut_age <= 0 or self.cut_age.size == 0:
        return
    lo, up = self.cut_lb, self.cut_ub
    act = row_value[self.n_static:]
    with np.errstate(invalid="ignore"):  # infinite sides
        slack = ((act > lo + 1e-7 * np.maximum(1.0, np.abs(lo))) | ~np.isfinite(lo)) & (
            (act < up - 1e-7 * np.maximum(1.0, np.abs(up))) | ~np.isfinite(up))
    self.cut_age = np.where(slack, self.cut_age + 1, 0).astype(np.int32)
    old = np.flatnonzero(self.cut_age > self.opt.cut_age)
    if old.size < max(64, self.cut_age.size // 20):  # delete in batches: each deletion rebuilds the LP
        return
    import scipy.sparse as sp

    keep = np.ones(self.cut_age.size, dtype=bool)
    keep[old] = False
    rows = (old + self.n_static).astype(np.int32)
    # the leaving rows are read back from HiGHS: no copy of the LP's rows is kept here
    _, start, index, value = self.h.getRowsEntries(int(rows.size), rows)
    indptr = np.append(np.asarray(start, dtype=np.int64), len(index))
    cols = self.cols[np.asarray(index, dtype=np.int64)]  # HiGHS' columns -> the model's
    A_old = sp.csr_array((np.asarray(value, dtype=np.float64), cols, indptr), shape=(rows.size, self.n))
    self.pool.add(A_old, lo[old], up[old])
    self.h.deleteRows(int(rows.size), rows)
    memory._release_freed_memory()
    self.cut_lb, self.cut_ub, self.cut_age = lo[keep], up[keep], self.cut_age[keep]
    self.lp_nnz -= len(index)
    self.stats["cuts_aged_out"] += int(old.size)


def _full(self: BranchAndCut, values: Any) -> np.ndarray:
    """A vector over the LP's columns (HiGHS' solution or duals) as one over the model's columns, shape
    (n_cols,); columns that left the LP are 0."""
    v = np.asarray(values, dtype=float)
    if self.cols.size == self.n:
        return v
    out = np.zeros(self.n)
    out[self.cols] = v
    return out


def _compact(self: BranchAndCut) -> None:
    """Integer columns held at 0 by root fixing leave the LP, with their entries in every row, once they
    are ``compact`` of its columns; only non-basic ones, so the basis stays valid. The cuts still
    name them (the lazy rows and the pool work over the model's columns); `_add_rows` drops them."""
    share = self.opt.compact
    if share <= 0 or not self.ints.size:
        return
    dead = self.ints[(self.glb == 0) & (self.gub == 0)]
    hc = self.col_of[dead]
    hc = hc[hc >= 0]
    enough = max(32, share * self.cols.size)
    if hc.size < enough:
        return
    basis = self.h.getBasis()
    if basis.valid:
        basic = int(self.hp.HighsBasisStatus.kBasic)
        status = np.fromiter((int(s) for s in basis.col_status), dtype=np.int64, count=self.cols.size)
        hc = hc[status[hc] != basic]
        if hc.size < enough:
            return
    hc = np.sort(hc).astype(np.int32)
    self.h.deleteCols(int(hc.size), hc)
    keep = np.ones(self.cols.size, dtype=bool)
    keep[hc] = False
    self.cols = self.cols[keep]
    self.col_of = np.full(self.n, -1, dtype=np.int64)
    self.col_of[self.cols] = np.arange(self.cols.size)
    static = self.model.A[:, self.cols].nnz if self.n_static else 0
    self.lp_nnz = int(self.h.getNumNz()) - int(static)
    self.stats["columns_removed"] += int(hc.size)
    memory._release_freed_memory()


def _fix_root(self: BranchAndCut) -> None:
    """Global reduced-cost fixing from the root LP against the incumbent (renewed when it improves)."""
    with self.sh.lock:
        if self.root is None or self.root.rc is None or not np.isfinite(self.UB):
            return
        assert self.root.x is not None and self.root.obj is not None
        lb, ub = self._rc_fix(self.glb, self.gub, self.root)
        n0 = int(np.sum(lb > self.glb) + np.sum(ub < self.gub))
        self.glb, self.gub = lb, ub
        self.stats["root_fixed"] += n0


def _fix(self: BranchAndCut, lb: np.ndarray, ub: np.ndarray, lp: _NodeLP) -> tuple[np.ndarray, np.ndarray]:
    """Reduced-cost fixing at a node: the children inherit the tightened bounds."""
    lb2, ub2 = self._rc_fix(lb, ub, lp)
    self.stats["node_fixed"] += int(np.sum(lb2 > lb) + np.sum(ub2 < ub))
    return lb2, ub2


def _rc_fix(self: BranchAndCut, lb: np.ndarray, ub: np.ndarray, lp: _NodeLP) -> tuple[np.ndarray, np.ndarray]:
    """A column at a bound whose reduced cost exceeds the gap to the cutoff stays at that bound."""
    assert lp.x is not None and lp.rc is not None and lp.obj is not None
    room = self._cutoff() - lp.obj
    xi, r = lp.x[self.ints], lp.rc[self.ints]
    lb2, ub2 = lb.copy(), ub.copy()
    if not np.isfinite(room):
        return lb2, ub2
    at_lb = (xi <= lb + 1e-9) & (r > room + 1e-9)
    at_ub = (xi >= ub - 1e-9) & (-r > room + 1e-9)
    ub2[at_lb] = lb[at_lb]
    lb2[at_ub] = ub[at_ub]
    return lb2, ub2
