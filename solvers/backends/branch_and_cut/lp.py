"""One search thread's LP relaxation in HiGHS (:class:`LPRelaxation`): its columns, its cut rows and their
ageing into the thread's cut pool, and the solves."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.model import LinearModel, RowBlock

from . import memory
from .options import _NO_ITERATION_LIMIT, BnCOptions
from .pool import CutPool
from .shared import Clock


class LPRelaxation:
    """The LP a search thread solves: HiGHS' copy of the model with integrality relaxed and the cut rows
    added so far; rows slack for ``cut_age`` solves leave for the thread's :class:`CutPool`.

    Parameters
    ----------
    h, hp
        A ``highspy.Highs`` object holding the model and the ``highspy`` module.
    model : LinearModel
    ints : ndarray of int
        The integer columns.
    opt : BnCOptions
    clock : Clock
    stats : dict
        The thread's counters (``lp_solves``, ``simplex_iterations``, ``cuts``, ...), updated here.
    """

    def __init__(self, h: Any, hp: Any, model: LinearModel, ints: np.ndarray, opt: BnCOptions, clock: Clock,
                 stats: dict[str, Any]) -> None:
        self.h, self.hp, self.model, self.ints, self.opt, self.clock, self.stats = h, hp, model, ints, opt, clock, stats
        self.n = model.n_cols
        self.n_static = model.n_rows
        # HiGHS holds the columns `cols` (model indices, increasing); `col_of` maps back (-1: left the LP,
        # held at 0 by root fixing, see compact)
        self.cols = np.arange(self.n)
        self.col_of = np.arange(self.n)
        self.cut_age = np.zeros(0, dtype=np.int32)  # per LP row beyond the static ones
        self.lp_nnz = 0  # non-zeros of those rows
        # the rows themselves live only in HiGHS (read back when they leave for the pool); their bounds:
        self.cut_lb = np.zeros(0)
        self.cut_ub = np.zeros(0)
        self.pool = CutPool(self.n, opt.pool_size, opt.pool_nnz)
        self.ipm_next = False  # solve the next LP by interior point (many rows, no basis)

    def copy(self, stats: dict[str, Any]) -> LPRelaxation:
        """A HiGHS copy of this LP as it stands (rows, columns, basis, options) with its cut bookkeeping, an
        empty pool and the counters ``stats``, for another search thread."""
        h2 = self.hp.Highs()
        h2.passOptions(self.h.getOptions())
        h2.passModel(self.h.getLp())
        basis = self.h.getBasis()
        if basis.valid:
            h2.setBasis(basis)
        other = LPRelaxation(h2, self.hp, self.model, self.ints, self.opt, self.clock, stats)
        other.cols, other.col_of = self.cols.copy(), self.col_of.copy()
        other.cut_age, other.cut_lb, other.cut_ub = self.cut_age.copy(), self.cut_lb.copy(), self.cut_ub.copy()
        other.lp_nnz = self.lp_nnz
        stats["lp_nnz_peak"] = self.lp_nnz
        return other

    def release(self) -> None:
        """Free HiGHS' copy, its factor and the pool (a retired thread's; its counters stay)."""
        self.h = None
        self.pool = CutPool(self.n, 0, 0)
        memory._release_freed_memory()

    @property
    def n_rows(self) -> int:
        return int(self.h.getNumRow())

    def set_bounds(self, lb: np.ndarray, ub: np.ndarray) -> None:
        """The integer columns' bounds (shape (n_ints,)) at a node; columns that left the LP are skipped."""
        live = self.col_of[self.ints] >= 0
        if live.any():
            self.h.changeColsBounds(int(live.sum()), self.col_of[self.ints[live]].astype(np.int32),
                                    lb[live].astype(np.float64), ub[live].astype(np.float64))

    def solve(self, iteration_limit: int | None = None, *, retry: bool = True) -> str:
        """Solve the LP as it stands: ``"optimal"``, ``"infeasible"``, ``"unbounded"``, ``"time"``, ``"error"``,
        or ``"iterations"`` when ``iteration_limit`` simplex iterations did not finish it.

        When HiGHS ends with no verdict (``kUnknown``, ``kSolveError``; seen once after a warm-started
        dual simplex on 23 000 cut rows), the LP is solved once more from scratch (interior point when it
        has many rows) before ``"error"`` is returned; ``stats["lp_retries"]`` counts these. A strong-
        branching LP (``iteration_limit`` given) is not retried: its candidate is only ranked lower.
        """
        rem = self.clock.left()
        if rem <= 0:
            return "time"
        h, S = self.h, self.hp.HighsModelStatus
        # HiGHS compares its time limit with its run time summed over every run() of this object
        h.setOptionValue("time_limit", float(h.getRunTime() + rem) if np.isfinite(rem) else np.inf)
        cold = self.ipm_next
        if cold:  # many rows and no basis: interior point (with crossover) is far faster than dual simplex
            h.setOptionValue("solver", "ipm")
            self.ipm_next = False
        if iteration_limit is not None:  # a per-run limit in HiGHS
            h.setOptionValue("simplex_iteration_limit", int(iteration_limit))
        h.run()
        if iteration_limit is not None:
            h.setOptionValue("simplex_iteration_limit", _NO_ITERATION_LIMIT)
        if cold:
            h.setOptionValue("solver", "simplex")
        self.stats["lp_solves"] += 1
        self.stats["simplex_iterations"] += int(h.getInfo().simplex_iteration_count)
        st = h.getModelStatus()
        if st == S.kOptimal:
            return "optimal"
        if st == S.kIterationLimit and iteration_limit is not None:
            return "iterations"
        if st == S.kInfeasible:
            return "infeasible"
        if st in (S.kUnbounded, S.kUnboundedOrInfeasible):
            return "unbounded"
        if st == S.kTimeLimit:
            return "time"
        if retry and iteration_limit is None:
            self.stats["lp_retries"] += 1
            h.clearSolver()  # drop the basis HiGHS failed from
            self.ipm_next = int(h.getNumRow()) >= 1000
            return self.solve(retry=False)
        return "error"

    def objective(self) -> float:
        return float(self.h.getInfo().objective_function_value)

    def add_rows(self, block: RowBlock) -> None:
        """Add cut rows (over the model's columns) to the LP."""
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

    def age(self, row_value: np.ndarray) -> None:
        """Age slack cuts (``row_value``: the LP's row activities); move those slack for more than ``cut_age``
        LP solves to the pool."""
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

    def full(self, values: Any) -> np.ndarray:
        """A vector over the LP's columns (HiGHS' solution or duals) as one over the model's columns, shape
        (n_cols,); columns that left the LP are 0."""
        v = np.asarray(values, dtype=float)
        if self.cols.size == self.n:
            return v
        out = np.zeros(self.n)
        out[self.cols] = v
        return out

    def compact(self, glb: np.ndarray, gub: np.ndarray) -> None:
        """Integer columns held at 0 by the global bounds ``glb``, ``gub`` (shape (n_ints,)) leave the LP, with
        their entries in every row, once they are ``compact`` of its columns; only non-basic ones, so the
        basis stays valid. The cuts still name them (the lazy rows and the pool work over the model's
        columns); :meth:`add_rows` drops them."""
        share = self.opt.compact
        if share <= 0 or not self.ints.size:
            return
        dead = self.ints[(glb == 0) & (gub == 0)]
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
