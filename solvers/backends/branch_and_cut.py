"""Branch-and-cut for models with lazy rows, HiGHS solving every node LP.

HiGHS has no lazy-constraint callback, so the search is driven here
(:class:`BranchAndCut`). Each step is one method:

* **node LP** (:meth:`BranchAndCut._node_lp`): the node's bounds, then LP
  (dual simplex, warm-started from the last basis) and separation rounds until
  no lazy row is violated (at the root), or the bound stalls (at other nodes);
* **separation** (:meth:`BranchAndCut._separate`): violated rows of the cut
  pool first, then ``model.lazy.separate`` at the LP point and, at the root, at
  an *in-out* point between the LP point and a core point (Ben-Ameur & Neto;
  Fischetti, Ljubić & Sinnl 2017), which converges in fewer rounds; rows slack
  for ``cut_age`` LP solves leave the LP for the pool (:meth:`BranchAndCut._age_cuts`);
* **fixing** (:meth:`BranchAndCut._fix`): reduced-cost fixing against the
  incumbent, global at the root (renewed whenever the incumbent improves) and
  local at the other nodes;
* **incumbent** (:meth:`BranchAndCut._heuristic`, :meth:`BranchAndCut._offer`):
  the warm start, integral node LPs, and ``model.lazy.round(x)`` improved by
  ``model.lazy.improve`` when the lazy rows offer them; every candidate is
  ranked by the true objective (``key``), never by the master's;
* **branching** (:meth:`BranchAndCut._branch`): pseudo-costs (objective gain
  per unit of fractionality, learnt from every child LP), falling back to the
  lazy rows' ``branch_scores(x)`` or to fractionality while a column has no
  history; open nodes are explored best bound first. Strong-branching LPs
  solved to the end bound the children: a child past the cutoff is not
  created, and a candidate with one such side is fixed to the other.

With ``threads`` above 1 (default: the cores this process may use, at most
4), once the root is solved and the search has run ``parallel_after`` seconds,
further threads take open nodes from the same queue, each with its own HiGHS
copy of the LP (HiGHS releases the GIL while it solves, where nearly all the
time goes), its own cut pool and its own basis; the incumbent, the global
fixings, the pseudo-costs and the queue are shared. Every bound reported then
counts the nodes a thread holds. Which of several optimal selections is found,
and the search at a time limit, then depend on timing: ``threads=1`` makes the
search reproducible.

Every bound reported is valid for the full model: an LP holding only some of
the lazy rows is a relaxation.
"""
from __future__ import annotations

import copy
import heapq
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.core.model import LazyRows, LinearModel, RowBlock
from benchsel.formulations.core.result import Termination

__all__ = ["BnCOptions", "BranchAndCut"]


@dataclass(frozen=True)
class BnCOptions:
    """Settings of :class:`BranchAndCut` (defaults tuned on k-medoids Benders masters).

    Attributes
    ----------
    root_rounds : int
        Most separation rounds at the root.
    node_rounds : int
        Most separation rounds at other nodes (the loop also stops when a round
        raises the bound by less than ``tail_off`` relative; integral LP points
        are always separated to the end).
    tail_off : float
    in_out : float
        Weight of the LP point in the in-out separation point at the root
        (``0``: off; ``1`` is plain separation).
    cut_age : int
        LP solves a cut may stay slack before it leaves the LP for the pool
        (``0``: cuts never leave).
    pool_size : int
        Most rows kept in the pool.
    pool_nnz : int
        Most non-zeros kept in the pool (about 12 bytes each); the oldest rows
        are forgotten first. Bounds the pool's memory on long runs.
    heuristic_every : int
        Node heuristic (rounding plus eager swaps) every this many nodes
        (``0``: only at the root).
    plunge : float
        After branching, a child is solved next (its LP starts from its
        parent's basis) while its bound is below the best open bound plus
        this share of the gap; otherwise the best open node is.
    strong, strong_depth : int
        Strong branching: the children's LPs of this many best-scoring
        candidates (``0``: off), at nodes down to ``strong_depth``.
    reliable : int
        With ``strong``: reliability branching — only candidates whose
        pseudo-costs rest on fewer than this many observations in either
        direction are strong-branched (which records their pseudo-costs),
        then the column is chosen by pseudo-costs (``0``: every node
        strong-branches its ``strong`` best candidates and picks by their gains).
    strong_share, strong_offset : float or None, int
        Budget of strong branching (SCIP's ``sbiterquot`` and ``sbiterofs``):
        its simplex iterations stay below ``strong_share`` times the
        iterations of every other LP solved so far plus ``strong_offset``, and
        each of its LPs stops after twice the average iterations of those LPs
        (the value reached then ranks the candidate); past the budget a node
        branches on pseudo-costs alone. ``strong_share=None``: no budget, every
        strong-branching LP solved to the end.
    max_nodes : int, optional
        Stop (termination ``"iteration_limit"``) after this many nodes.
    initial_share : float
        Share of the time left that the lazy rows' ``initial_rows`` (a warm
        start of the root cut loop) may use before the first LP (``0``: off).
    compact : float
        Integer columns that reduced-cost fixing holds at 0 for the whole
        search leave the LP (with their entries in every row, which makes each
        simplex iteration cheaper) once they number at least this share of
        the LP's columns (and at least 32); ``0``: they stay.
    threads : int, optional
        Search threads (``None``: the cores this process may use, at most 4, and only as many as fit over
        the peak memory so far within the lazy rows' ``memory_budget``; a number given here is used as is).
    parallel_after : float
        Seconds the search runs on one thread before the others start (they
        start after the root, when nodes are open); short searches stay on one.
    own_share : float
        With several threads, a thread takes the best open node it created
        itself (its LP is nearer to that node's) while that node's bound is
        within this share of the gap above the best open bound.
    log_every : float
        Seconds between progress lines with ``verbose``.
    """

    root_rounds: int = 500
    node_rounds: int = 25
    tail_off: float = 1e-5
    in_out: float = 0.0
    cut_age: int = 15
    pool_size: int = 200_000
    pool_nnz: int = 4_000_000
    heuristic_every: int = 10
    plunge: float = 0.5
    strong: int = 8
    strong_depth: int = 1000
    reliable: int = 4
    strong_share: float | None = 0.5
    strong_offset: int = 100_000
    branching: str = "pseudocost"
    max_nodes: int | None = None
    initial_share: float = 0.3
    compact: float = 0.05
    threads: int | None = None
    parallel_after: float = 1.0
    own_share: float = 1.0
    log_every: float = 5.0


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


class BranchAndCut:
    """Branch-and-cut over a :class:`LinearModel` with lazy rows; HiGHS solves the node LPs.

    Parameters
    ----------
    h, hp
        A ``highspy.Highs`` object holding the model (integrality as given; it
        is relaxed here) and the ``highspy`` module.
    model : LinearModel
        With ``model.lazy`` (see :class:`~benchsel.formulations.core.model.LazyRows`).
    key : callable
        ``key(selection) -> true objective (model units) or None if infeasible``.
    time_limit : float, optional
        Seconds for the whole search.
    mip_rel_gap : float, optional
        Stop when the incumbent is within this relative gap of the bound.
    verbose : bool
        Progress lines on stderr every ``options.log_every`` seconds.
    warm_start : ndarray of int, optional
        A first incumbent (item indices).
    options : BnCOptions, optional
    """

    UB = _Shared()
    best_sel = _Shared()
    glb = _Shared()
    gub = _Shared()
    pc_sum = _Shared()
    pc_n = _Shared()
    pruned_min = _Shared()
    root = _Shared()
    root_bound = _Shared()
    heap = _Shared()

    def __init__(self, h: Any, hp: Any, model: LinearModel, key: Callable[[np.ndarray], float | None], *,
                 time_limit: float | None = None, mip_rel_gap: float | None = 1e-6, verbose: bool = False,
                 warm_start: np.ndarray | None = None, options: BnCOptions | None = None) -> None:
        self.t0 = time.perf_counter()
        self.h, self.hp, self.model, self.key = h, hp, model, key
        if model.lazy is None:
            raise ValueError("model: BranchAndCut needs a model with lazy rows (model.lazy)")
        self.lazy: LazyRows = model.lazy
        self.time_limit = time_limit
        self.rel = 1e-9 if mip_rel_gap is None else max(float(mip_rel_gap), 1e-9)
        self.verbose = verbose
        self.opt = options or BnCOptions()
        self.warm_start = warm_start
        self.n = model.n_cols
        self.n_static = model.n_rows
        self.ints = np.flatnonzero(model.integrality).astype(np.int32)
        self.sh = _Search(model.col_lb[self.ints].copy(), model.col_ub[self.ints].copy())
        self.helper = False  # a search thread started by the main one (see _spawn); all: sh.searchers
        self._threads: list[threading.Thread] = []
        self._threads_checked = False  # the memory budget left no room for another thread
        self.retire = False  # a helper thread asked to leave its loop (see _watch_memory)
        self._retired = False  # the main thread has retired the others
        self.threads_note: str | None = None
        self.thread_estimate: float | None = None  # bytes one further thread was expected to take (_spawn)
        # HiGHS holds the columns `cols` (model indices, increasing); `col_of` maps back (-1: left the LP,
        # held at 0 by root fixing, see _compact)
        self.cols = np.arange(self.n)
        self.col_of = np.arange(self.n)
        self.cut_age = np.zeros(0, dtype=np.int32)  # per LP row beyond the static ones
        self.lp_nnz = 0  # non-zeros of those rows
        # the rows themselves live only in HiGHS (read back when they leave for the pool); their bounds:
        self.cut_lb = np.zeros(0)
        self.cut_ub = np.zeros(0)
        self.pool = _CutPool(self.n, self.opt.pool_size, self.opt.pool_nnz)
        self.core: np.ndarray | None = None  # in-out core point (integer columns)
        self.stats: dict[str, Any] = _fresh_stats()
        self.sh.searchers.append(self)
        self._last_log = self.t0
        self._ipm_next = False
        self.initial_bound: float | None = None
        self._rss_start = _rss_bytes()  # before the LP holds any lazy row (see _helper_bytes)

    # ------------------------------------------------------------------ time
    def _left(self) -> float:
        return np.inf if self.time_limit is None else self.time_limit - (time.perf_counter() - self.t0)

    def _deadline(self) -> float | None:
        return None if self.time_limit is None else self.t0 + self.time_limit

    def _tol(self) -> float:
        """Prune margin: a node whose bound is within it of the incumbent holds nothing worth finding."""
        if not np.isfinite(self.UB):
            return 0.0
        t = max(1e-9, self.rel * abs(self.UB))
        # with an integral objective, a node whose bound exceeds UB - 1 holds nothing better than UB
        return max(t, 1.0 - 1e-6) if self.model.integral_objective else t

    def _cutoff(self) -> float:
        return self.UB - self._tol()

    # ------------------------------------------------------------------- run
    def run(self) -> tuple[np.ndarray | None, Termination, float | None, dict[str, Any]]:
        """Search; returns (selection, termination, bound on the model objective, extras)."""
        h = self.h
        if self.ints.size:
            h.changeColsIntegrality(int(self.ints.size), self.ints, np.zeros(self.ints.size, dtype=np.uint8))
        self._offer(self.warm_start)
        self._push(_Node(-np.inf, 0, self._next_seq(), self.glb.copy(), self.gub.copy()))
        try:
            self._search()
        except BaseException:  # the other threads leave after their node
            with self.sh.cond:
                self.sh.halt = True
            raise
        finally:
            self._join()
        sh = self.sh
        if sh.failure is not None:
            raise sh.failure
        term = sh.stop
        if term == Termination.UNBOUNDED:
            return None, term, None, self._extra(term)
        if term is None:
            term = Termination.OPTIMAL if self.best_sel is not None else Termination.INFEASIBLE
        return self.best_sel, term, self._bound(term), self._extra(term)

    def _search(self) -> None:
        """One thread's loop: take a node, process it, hand back its children.

        Ends when no node is open and no thread holds one, or when a limit,
        an error or the main thread stops every thread.
        """
        sh, me = self.sh, threading.get_ident()
        nxt: _Node | None = None
        while True:
            with sh.cond:
                if sh.stop is None and self._left() <= 0:
                    sh.stop = Termination.TIME_LIMIT
                if (sh.stop is None and self.opt.max_nodes is not None
                        and self._counts("nodes")[0] >= self.opt.max_nodes):
                    sh.stop = Termination.ITERATION_LIMIT
                if sh.stop is not None or sh.halt or self.retire:
                    if nxt is not None:
                        heapq.heappush(sh.heap, nxt)
                    sh.busy.pop(me, None)
                    sh.cond.notify_all()
                    return
                node = self._select(nxt)
                nxt = None
                if node is None:  # nothing open: done, unless another thread holds a node
                    sh.busy.pop(me, None)
                    if not sh.busy:
                        sh.cond.notify_all()
                        return
                    sh.cond.wait(timeout=0.2)
                    continue
                if node.bound >= self._cutoff():
                    self._prune(node.bound)
                    sh.busy.pop(me, None)
                    continue
                sh.busy[me] = node.bound
            status, children = self._process(node)
            with sh.cond:
                if status in ("time", "error", "unbounded") and sh.stop is None:
                    sh.stop = {"time": Termination.TIME_LIMIT, "error": Termination.ERROR,
                               "unbounded": Termination.UNBOUNDED}[status]
                if children:  # plunge into the first child while it stays near the best bound
                    nxt = children[0]
                    sh.busy[me] = nxt.bound
                    for c in children[1:]:
                        heapq.heappush(sh.heap, c)
                else:
                    sh.busy.pop(me, None)
                sh.cond.notify_all()
            if not self.helper:
                self._spawn()
                self._watch_memory()
                self._log()

    def _select(self, nxt: _Node | None) -> _Node | None:
        """The next node (lock held): the plunging child while its bound is within ``plunge`` of the gap,
        else the best open one; None when none is open."""
        if nxt is not None:
            best = self.heap[0].bound if self.heap else nxt.bound
            if np.isfinite(self.UB) and nxt.bound > best + self.opt.plunge * (self.UB - best):
                heapq.heappush(self.heap, nxt)
                nxt = None
        if nxt is not None:
            return nxt
        heap = self.heap
        if not heap:
            return None
        me = threading.get_ident()
        if self._active() > 1:  # another thread's best node costs this LP more simplex iterations
            near = heap[0].bound + self.opt.own_share * (self.UB - heap[0].bound) if np.isfinite(self.UB) else None
            if heap[0].owner != me and near is not None:
                mine = [i for i, e in enumerate(heap) if e.owner == me and e.bound <= near]
                if mine:
                    i = min(mine, key=lambda i: heap[i])
                    node = heap[i]
                    heap[i] = heap[-1]
                    heap.pop()
                    heapq.heapify(heap)
                    return node
        return heapq.heappop(heap)

    # --------------------------------------------------------------- threads
    def _n_threads(self) -> int:
        if self.opt.threads is not None:
            return max(1, int(self.opt.threads))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(4, cores))

    def _spawn(self) -> None:
        """Start the other search threads once: after the root, ``parallel_after`` seconds in, nodes open."""
        if self._threads or self._threads_checked or self.sh.root is None:
            return
        if time.perf_counter() - self.t0 < self.opt.parallel_after or self._left() < 1.0:
            return
        with self.sh.lock:
            if not self.heap:
                return
        n = self._n_threads() - 1
        if n <= 0:
            self._threads_checked = True
            return
        budget = getattr(self.lazy, "memory_budget", None)
        peak = _peak_rss_bytes()
        if self.opt.threads is None and budget is not None and peak is not None:
            # the default number of threads stays within the memory budget (each further one holds a copy of
            # the LP and a pool); threads given explicitly all start
            each = self.thread_estimate = self._helper_bytes()
            fit = max(0, int((budget - peak) // each))
            if fit < n:
                self.threads_note = (f"{1 + fit} of {1 + n} search threads: each further one needs about "
                                     f"{each / 2**20:.0f} MB (a copy of the LP and a cut pool), and the peak "
                                     f"memory so far, {peak / 2**20:.0f} MB, leaves room for {fit} within the "
                                     f"lazy rows' memory budget of {budget / 2**20:.0f} MB")
                n = fit
        if n <= 0:
            self._threads_checked = True
            return
        for _ in range(n):
            hb = self._helper()
            t = threading.Thread(target=hb._helper_search, name="benchsel-branch-and-cut", daemon=True)
            with self.sh.lock:
                self.sh.searchers.append(hb)
            self._threads.append(t)
            t.start()

    def _helper_bytes(self) -> float:
        """Memory one further search thread is expected to take: what this thread's LP side has taken so
        far (the resident memory gained since the search began: HiGHS' LP, its factor and work arrays, the
        cut bookkeeping and pool), and at least a static estimate, HiGHS' copy of the LP at 50 bytes per
        non-zero, a full cut pool (12 bytes per non-zero) and 16 MB. The static estimate alone was too low
        on large LPs: it let a second thread start on glue_qnli k = 25, and the run passed the budget
        (docs: k-medoids, Memory). The growth also counts what every thread shares (the sorted candidate lists
        filled during the search): leaving that out let a second thread start on glue_qnli k = 25 that took
        the run past the budget, since the memory grows further after the check."""
        nnz = max(self.lp_nnz, int(self.stats["lp_nnz_peak"])) + (int(self.model.A.nnz) if self.n_static else 0)
        static = 50.0 * nnz + 12.0 * self.opt.pool_nnz + 16 * 2**20
        now = _rss_bytes()
        grown = 0.0 if now is None or self._rss_start is None else float(now - self._rss_start)
        return max(static, grown)

    def _helper(self) -> BranchAndCut:
        """A search thread's own LP side: a HiGHS copy of the LP as it stands (rows, columns, basis, options),
        its own cut bookkeeping and pool; the search state stays shared (``sh``)."""
        h2 = self.hp.Highs()
        h2.passOptions(self.h.getOptions())
        h2.passModel(self.h.getLp())
        basis = self.h.getBasis()
        if basis.valid:
            h2.setBasis(basis)
        hb = copy.copy(self)
        hb.h = h2
        hb.cols, hb.col_of = self.cols.copy(), self.col_of.copy()
        hb.cut_age, hb.cut_lb, hb.cut_ub = self.cut_age.copy(), self.cut_lb.copy(), self.cut_ub.copy()
        hb.pool = _CutPool(self.n, self.opt.pool_size, self.opt.pool_nnz)
        hb.core, hb._ipm_next = None, False
        hb.stats = _fresh_stats()
        hb.stats["lp_nnz_peak"] = self.lp_nnz
        hb.helper, hb._threads, hb.retire = True, [], False
        return hb

    def _helper_search(self) -> None:
        try:
            self._search()
        except BaseException as e:  # handed to the main thread, which raises it
            with self.sh.cond:
                self.sh.failure = e
                self.sh.halt = True
                self.sh.cond.notify_all()
        if self.retire:  # its LP copy, factor and pool are freed (its counters stay for the statistics)
            self.h = None
            self.pool = _CutPool(self.n, 0, 0)
            _release_freed_memory()

    def _active(self) -> int:
        """Search threads still running their loop (the main one and the helpers not retired)."""
        return sum(1 for b in self.sh.searchers if not b.retire)

    def _watch_memory(self) -> None:
        """Retire the other search threads when the resident memory reaches ``RETIRE_SHARE`` of the lazy
        rows' ``memory_budget``.

        The start check (:meth:`_spawn`) counts the memory up to the moment a thread starts; a thread's LP,
        factor and pool grow with the search after it. A retired thread puts back the node it holds, leaves
        its loop and frees its LP side; the search goes on in this thread, over the same open nodes. Threads
        given explicitly (``threads=``) are left running, as at the start.
        """
        if not self._threads or self._retired or self.opt.threads is not None:
            return
        budget = getattr(self.lazy, "memory_budget", None)
        now = _rss_bytes()
        if budget is None or now is None or now < RETIRE_SHARE * budget:
            return
        helpers = self.sh.searchers[1:]
        with self.sh.cond:
            for hb in helpers:
                hb.retire = True
            self.sh.cond.notify_all()
        self._retired = True
        self.stats["threads_retired"] = len(helpers)
        note = (f"{len(helpers)} further search thread{'s' if len(helpers) > 1 else ''} retired after "
                f"{time.perf_counter() - self.t0:.1f} s: the resident memory, {now / 2**20:.0f} MB, reached "
                f"{100 * RETIRE_SHARE:.0f} % of the lazy rows' memory budget of {budget / 2**20:.0f} MB")
        self.threads_note = note if self.threads_note is None else f"{self.threads_note}; {note}"

    def _join(self) -> None:
        """Wait for the other threads: each leaves its loop when the search is over, stopped or halted,
        putting back the node it holds."""
        if not self._threads:
            return
        with self.sh.cond:
            self.sh.cond.notify_all()
        for t in self._threads:  # a thread still in an LP past the limit is left; its node's bound counts (busy)
            t.join(timeout=None if self.time_limit is None else max(self._left(), 0.0) + 1.0)

    def _prune(self, bound: float) -> None:
        with self.sh.lock:
            self.pruned_min = min(self.pruned_min, bound)

    def _process(self, node: _Node) -> tuple[str, list[_Node]]:
        """Solve a node: LP with its cuts, heuristic, fixing, branching. Returns (status, children)."""
        lb = np.maximum(node.lb, self.glb)
        ub = np.minimum(node.ub, self.gub)
        if np.any(lb > ub):  # emptied by root fixing
            return "infeasible", []
        root = not self.helper and self.stats["nodes"] == 0
        if root:
            self._initial_rows()
        lp = self._node_lp(lb, ub, root=root)
        if lp.status in ("time", "error"):
            node.bound = node.bound if lp.obj is None else max(node.bound, lp.obj)
            self._push(node)
            return lp.status, []
        self.stats["nodes"] += 1
        if lp.status == "unbounded":
            return ("unbounded" if root else "infeasible"), []
        if lp.status == "infeasible":
            return "infeasible", []
        assert lp.x is not None and lp.obj is not None
        self._learn(node, lp.obj)
        if root:
            self.root, self.root_bound = lp, lp.obj
            self.stats["root_seconds"] = time.perf_counter() - self.t0
        every = self.opt.heuristic_every
        if root or (every and (self.stats["nodes"] - 1) % every == 0):
            self._heuristic(lp.x)
        if root:
            self._fix_root()
        if lp.obj >= self._cutoff():
            self._prune(lp.obj)
            return "pruned", []
        xi = lp.x[self.ints]
        frac = np.abs(xi - np.round(xi)) > 1e-6
        if not frac.any():  # separated to the end: an optimum of the node
            self._offer(self.model.selection_from_x(lp.x))
            if lp.obj >= self._cutoff():
                self._prune(lp.obj)
            return "solved", []
        lb_c, ub_c = self._fix(lb, ub, lp)
        return "branched", self._branch(lp, lb_c, ub_c, -node.neg_depth, frac)

    # --------------------------------------------------------------- node LP
    def _solve_lp(self, iteration_limit: int | None = None, *, retry: bool = True) -> str:
        """Solve the LP as it stands: ``"optimal"``, ``"infeasible"``, ``"unbounded"``, ``"time"``, ``"error"``,
        or ``"iterations"`` when ``iteration_limit`` simplex iterations did not finish it.

        When HiGHS ends with no verdict (``kUnknown``, ``kSolveError``; seen once after a warm-started
        dual simplex on 23 000 cut rows), the LP is solved once more from scratch (interior point when it
        has many rows) before ``"error"`` is returned; ``stats["lp_retries"]`` counts these. A strong-
        branching LP (``iteration_limit`` given) is not retried: its candidate is only ranked lower.
        """
        rem = self._left()
        if rem <= 0:
            return "time"
        h, S = self.h, self.hp.HighsModelStatus
        # HiGHS compares its time limit with its run time summed over every run() of this object
        h.setOptionValue("time_limit", float(h.getRunTime() + rem) if np.isfinite(rem) else np.inf)
        cold = self._ipm_next
        if cold:  # many rows and no basis: interior point (with crossover) is far faster than dual simplex
            h.setOptionValue("solver", "ipm")
            self._ipm_next = False
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
            self._ipm_next = int(h.getNumRow()) >= 1000
            return self._solve_lp(retry=False)
        return "error"

    def _node_lp(self, lb: np.ndarray, ub: np.ndarray, *, root: bool) -> _NodeLP:
        """LP of a node with its lazy rows; on a time-out the last LP value reached (a valid bound) or None."""
        h = self.h
        self._compact()
        live = self.col_of[self.ints] >= 0
        if live.any():
            h.changeColsBounds(int(live.sum()), self.col_of[self.ints[live]].astype(np.int32),
                               lb[live].astype(np.float64), ub[live].astype(np.float64))
        partial = None
        rounds = 0
        limit = self.opt.root_rounds if root else self.opt.node_rounds

        def ended(why: str) -> None:  # why the root's cut loop stopped (extra["root_end"])
            if root:
                self.stats["root_rounds"], self.stats["root_end"] = rounds, why

        def done(why: str) -> _NodeLP:  # the node's LP as it stands (duals read only here)
            ended(why)
            return _NodeLP("optimal", x, obj, self._full(sol.col_dual))

        while True:
            st = self._solve_lp()
            if st != "optimal":
                ended(st)
                return _NodeLP(st, obj=partial if st == "time" else None)
            sol = h.getSolution()
            x = self._full(sol.col_value)
            obj = float(h.getInfo().objective_function_value)
            gained = obj - partial if partial is not None else np.inf
            partial = obj
            self._age_cuts(np.asarray(sol.row_value, dtype=float))
            if obj >= self._cutoff():
                return done("cutoff")
            xi = x[self.ints]
            integral = not np.any(np.abs(xi - np.round(xi)) > 1e-6)
            stalled = not root and rounds >= 2 and gained < self.opt.tail_off * max(1.0, abs(obj))
            if not integral and rounds > 0 and (rounds >= limit or stalled):
                return done("round_limit" if rounds >= limit else "stalled")
            if root and rounds and self.opt.heuristic_every and rounds % 10 == 0:
                self._heuristic(x)
            cuts = self._separate(x, root=root)
            if cuts is None:
                return done("separated")
            self._add_rows(cuts)
            rounds += 1
            self._log(obj if root else None)

    # ------------------------------------------------------------ separation
    def _separate(self, x: np.ndarray, *, root: bool) -> RowBlock | None:
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

    def _initial_rows(self) -> None:
        """Rows the lazy object proposes before the first LP (``lazy.initial_rows``), within ``initial_share``
        of the time left."""
        init = getattr(self.lazy, "initial_rows", None)
        if init is None or self.opt.initial_share <= 0 or self.stats.get("initial_rows_added"):
            return
        left = self._left()
        budget = None if not np.isfinite(left) else self.opt.initial_share * left
        block = init(budget, self.best_sel)
        if block is not None and block.n_rows:
            self._add_rows(block)
            self.stats["initial_rows_added"] = block.n_rows
            self._ipm_next = block.n_rows >= 1000
        bound = getattr(self.lazy, "initial_bound", None)  # a valid bound even if the first LP does not finish
        if bound is not None and np.isfinite(bound):
            self.initial_bound = float(bound)

    def _add_rows(self, block: RowBlock) -> None:
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

    def _age_cuts(self, row_value: np.ndarray) -> None:
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
        _release_freed_memory()
        self.cut_lb, self.cut_ub, self.cut_age = lo[keep], up[keep], self.cut_age[keep]
        self.lp_nnz -= len(index)
        self.stats["cuts_aged_out"] += int(old.size)

    def _full(self, values: Any) -> np.ndarray:
        """A vector over the LP's columns (HiGHS' solution or duals) as one over the model's columns, shape
        (n_cols,); columns that left the LP are 0."""
        v = np.asarray(values, dtype=float)
        if self.cols.size == self.n:
            return v
        out = np.zeros(self.n)
        out[self.cols] = v
        return out

    def _compact(self) -> None:
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
        _release_freed_memory()

    # ---------------------------------------------------------------- fixing
    def _fix_root(self) -> None:
        """Global reduced-cost fixing from the root LP against the incumbent (renewed when it improves)."""
        with self.sh.lock:
            if self.root is None or self.root.rc is None or not np.isfinite(self.UB):
                return
            assert self.root.x is not None and self.root.obj is not None
            lb, ub = self._rc_fix(self.glb, self.gub, self.root)
            n0 = int(np.sum(lb > self.glb) + np.sum(ub < self.gub))
            self.glb, self.gub = lb, ub
            self.stats["root_fixed"] += n0

    def _fix(self, lb: np.ndarray, ub: np.ndarray, lp: _NodeLP) -> tuple[np.ndarray, np.ndarray]:
        """Reduced-cost fixing at a node: the children inherit the tightened bounds."""
        lb2, ub2 = self._rc_fix(lb, ub, lp)
        self.stats["node_fixed"] += int(np.sum(lb2 > lb) + np.sum(ub2 < ub))
        return lb2, ub2

    def _rc_fix(self, lb: np.ndarray, ub: np.ndarray, lp: _NodeLP) -> tuple[np.ndarray, np.ndarray]:
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

    # ------------------------------------------------------------- incumbent
    def _offer(self, sel: np.ndarray | None) -> bool:
        """Take ``sel`` as the incumbent when its true objective is better; renews root fixing."""
        if sel is None or np.asarray(sel).size == 0:
            return False
        k = self.key(np.asarray(sel))
        if k is None:
            return False
        with self.sh.lock:
            if not k < self.UB - 1e-12 * max(1.0, abs(k)):
                return False
            self.best_sel, self.UB = np.sort(np.asarray(sel, dtype=np.int64)), k
            self.stats["incumbents"] += 1
            self._fix_root()
        return True

    def _heuristic(self, x: np.ndarray) -> None:
        """Round the LP point (``lazy.round``) and improve it (``lazy.improve``); offer both."""
        rounder = getattr(self.lazy, "round", None)
        if rounder is None:
            return
        sel = rounder(x)
        if sel is None:
            return
        self._offer(sel)
        improve = getattr(self.lazy, "improve", None)
        if improve is not None:
            better = improve(np.asarray(sel), x, deadline=self._deadline())
            if self._offer(better):
                self.stats["heuristic_improvements"] += 1

    # ------------------------------------------------------------- branching
    def _learn(self, node: _Node, obj: float) -> None:
        """Pseudo-cost update from a child's LP value."""
        if node.branch is None:
            return
        j, d, fr, parent = node.branch
        if fr > 1e-9 and np.isfinite(parent):
            with self.sh.lock:
                self.pc_sum[d, j] += max(obj - parent, 0.0) / fr
                self.pc_n[d, j] += 1

    def _scores(self, lp: _NodeLP, cand: np.ndarray) -> np.ndarray:
        """Branching score of fractional integer columns ``cand`` (indices into ``ints``)."""
        assert lp.x is not None
        xi = lp.x[self.ints][cand]
        f_dn = xi - np.floor(xi)
        f_up = np.ceil(xi) - xi
        known = self.pc_n > 0
        avg = np.array([self.pc_sum[d][known[d]].sum() / max(known[d].sum(), 1) if known[d].any() else 1.0
                        for d in (0, 1)])
        pc = np.where(known[:, cand], self.pc_sum[:, cand] / np.maximum(self.pc_n[:, cand], 1), avg[:, None])
        score = np.maximum(pc[0] * f_dn, 1e-6) * np.maximum(pc[1] * f_up, 1e-6)
        hint = getattr(self.lazy, "branch_scores", None)
        if hint is not None:
            s = np.asarray(hint(lp.x), dtype=float)[cand]
            fresh = ~(known[0, cand] & known[1, cand])
            if fresh.any():  # no history yet: the lazy rows' own score, on the pseudo-cost scale
                base = np.median(score[~fresh]) if (~fresh).any() else 1.0
                score = np.where(fresh, base * s / max(float(np.max(s)), 1e-12) + 1e-9 * s, score)
        return score

    def _branch(self, lp: _NodeLP, lb: np.ndarray, ub: np.ndarray, depth: int, frac: np.ndarray) -> list[_Node]:
        """Two children on the best-scoring fractional column; the side the LP value leans to first.

        A child that strong branching has already shown to be infeasible or past the cutoff is not created;
        a strong-branched column with one such side is fixed to the other in both children (all valid: a
        strong-branching LP holds only some of the node's rows, so it is a relaxation of that child).
        """
        assert lp.x is not None and lp.obj is not None
        cand = np.flatnonzero(frac & (lb < ub))
        if cand.size == 0:  # fractional columns all fixed by reduced costs: the node is done
            self._prune(lp.obj)
            return []
        if self.opt.branching == "fractional":
            xi = lp.x[self.ints][cand]
            score = np.minimum(xi - np.floor(xi), np.ceil(xi) - xi)
        else:
            score = self._scores(lp, cand)
        strong = self.opt.strong > 0 and depth <= self.opt.strong_depth
        if strong and not self._strong_budget_left():
            strong = False
            self.stats["strong_skipped"] += 1
        sb: dict[int, tuple[float, float]] = {}
        if strong and self.opt.reliable > 0 and self.opt.branching == "pseudocost":
            # reliability branching: strong-branch only the best candidates whose pseudo-costs rest on fewer
            # than `reliable` observations (it records theirs), then branch by the updated pseudo-costs
            top = cand[np.argsort(-score, kind="stable")[: 2 * self.opt.strong]]
            weak = top[np.minimum(self.pc_n[0, top], self.pc_n[1, top]) < self.opt.reliable][: self.opt.strong]
            if weak.size:
                sb = self._strong(lp, lb, ub, weak, score[np.searchsorted(cand, weak)])[1]
                score = self._scores(lp, cand)
            j = int(cand[np.argmax(score)])
        elif strong:
            j, sb = self._strong(lp, lb, ub, cand, score)
        else:
            j = int(cand[np.argmax(score)])
        xi = lp.x[self.ints]
        cutoff = self._cutoff()
        side = {0: lp.obj, 1: lp.obj}  # the chosen column's children's bounds
        fixed = 0
        if sb:
            lb, ub = lb.copy(), ub.copy()
        for jj, (b_dn, b_up) in sb.items():
            if min(b_dn, b_up) >= cutoff:  # no child of this node can hold anything better than the cutoff
                self._prune(min(b_dn, b_up))
                self.stats["strong_pruned"] += 2
                return []
            if jj == j:
                side = {0: max(lp.obj, b_dn), 1: max(lp.obj, b_up)}
            elif b_dn >= cutoff:
                lb[jj] = np.ceil(xi[jj])
                self._prune(b_dn)
                fixed += 1
            elif b_up >= cutoff:
                ub[jj] = np.floor(xi[jj])
                self._prune(b_up)
                fixed += 1
        self.stats["strong_fixed"] += fixed
        v = xi[j]
        up_lb, dn_ub = lb.copy(), ub.copy()
        up_lb[j] = np.ceil(v)
        dn_ub[j] = np.floor(v)
        me = threading.get_ident()
        up = _Node(side[1], -(depth + 1), self._next_seq(), up_lb, ub, (j, 1, float(np.ceil(v) - v), lp.obj), me)
        down = _Node(side[0], -(depth + 1), self._next_seq(), lb, dn_ub, (j, 0, float(v - np.floor(v)), lp.obj), me)
        kept = []
        for c in ([up, down] if v - np.floor(v) >= 0.5 else [down, up]):
            if c.bound < cutoff:
                kept.append(c)
            else:  # strong branching put this child past the cutoff
                self._prune(c.bound)
                self.stats["strong_pruned"] += 1
        return kept

    def _strong(self, lp: _NodeLP, lb: np.ndarray, ub: np.ndarray, cand: np.ndarray, score: np.ndarray
                ) -> tuple[int, dict[int, tuple[float, float]]]:
        """Strong branching on the best-scoring candidates: both children's LPs (current rows only).

        Returns the best candidate and, per candidate, its children's LP values (down, up) where both LPs
        were solved to the end (``inf``: infeasible); those are valid bounds of the children.
        """
        assert lp.x is not None and lp.obj is not None
        h = self.h
        top = cand[np.argsort(-score, kind="stable")[: self.opt.strong]]
        basis = h.getBasis()
        best_j, best_s = int(top[0]), -np.inf
        xi = lp.x[self.ints]
        cap = self._strong_iteration_cap()
        solved: dict[int, tuple[float, float]] = {}
        for j in top:
            col = int(self.col_of[self.ints[j]])  # a candidate is free at the node, so still in the LP
            gains, exact = [], []
            for d in (0, 1):
                lo, hi = (lb[j], np.floor(xi[j])) if d == 0 else (np.ceil(xi[j]), ub[j])
                h.changeColBounds(col, float(lo), float(hi))
                before = self.stats["simplex_iterations"]
                st = self._solve_lp(cap)
                self.stats["strong_iterations"] += self.stats["simplex_iterations"] - before
                # cut short, dual simplex has reached a value on the way up: it ranks the candidate
                obj = float(h.getInfo().objective_function_value) if st in ("optimal", "iterations") else (
                    np.inf if st == "infeasible" else lp.obj)
                gains.append(max(obj - lp.obj, 0.0))
                if st in ("optimal", "infeasible"):  # only a finished LP bounds the child
                    exact.append(obj)
                fr = (xi[j] - np.floor(xi[j])) if d == 0 else (np.ceil(xi[j]) - xi[j])
                if st in ("optimal", "iterations") and fr > 1e-9:  # a cut-short LP: an underestimate
                    with self.sh.lock:
                        self.pc_sum[d, j] += gains[-1] / fr
                        self.pc_n[d, j] += 1
                h.changeColBounds(col, float(lb[j]), float(ub[j]))
                h.setBasis(basis)
            if len(exact) == 2:
                solved[int(j)] = (exact[0], exact[1])
            sc = max(gains[0], 1e-6) * max(gains[1], 1e-6)
            self.stats["strong_lps"] += 2
            if sc > best_s:
                best_j, best_s = int(j), sc
        return best_j, solved

    def _strong_budget_left(self) -> bool:
        """Strong branching's iterations are below its budget (``strong_share`` of the other LPs' plus
        ``strong_offset``; always without a share)."""
        share = self.opt.strong_share
        if share is None:
            return True
        used, total = self._counts("strong_iterations", "simplex_iterations")
        return used < share * (total - used) + self.opt.strong_offset

    def _strong_iteration_cap(self) -> int | None:
        """Most simplex iterations of one strong-branching LP: twice the other LPs' average (at least 10)."""
        if self.opt.strong_share is None:
            return None
        total, strong, lps, strong_lps = self._counts("simplex_iterations", "strong_iterations", "lp_solves",
                                                      "strong_lps")
        return max(10, int(2 * (total - strong) / max(lps - strong_lps, 1)))

    def _counts(self, *keys: str) -> list[int]:
        """Counters summed over every search thread: one node count, one strong-branching budget and one
        average for the whole search (a thread that has just started would otherwise cap its strong-branching
        LPs at 10 iterations, and record their gains as pseudo-costs)."""
        return [sum(b.stats[k] for b in self.sh.searchers) for k in keys]

    def _next_seq(self) -> int:
        with self.sh.lock:
            self.sh.seq += 1
            return self.sh.seq

    def _push(self, node: _Node) -> None:
        with self.sh.cond:
            heapq.heappush(self.heap, node)  # best bound first; deeper first among equal bounds
            self.sh.cond.notify_all()

    # --------------------------------------------------------------- results
    def _bound(self, term: Termination) -> float | None:
        if term in (Termination.INFEASIBLE, Termination.UNBOUNDED):
            return None
        with self.sh.lock:  # the open nodes and those a thread still holds
            open_min = min([e.bound for e in self.heap] + list(self.sh.busy.values()), default=np.inf)
            bound = min(open_min, self.pruned_min, self.UB)
        if self.model.integral_objective and np.isfinite(bound):
            bound = float(np.ceil(bound - 1e-6))
        if not np.isfinite(bound):
            bound = self.root_bound if self.root_bound is not None else -np.inf
        if self.initial_bound is not None:
            bound = min(max(bound, self.initial_bound), self.UB)
        return float(bound) if np.isfinite(bound) else None

    def _extra(self, term: Termination) -> dict[str, Any]:
        lazy_stats = getattr(self.lazy, "stats", {})
        st = dict(self.stats)
        st.update(zip(_ADDITIVE, self._counts(*_ADDITIVE)))
        helpers = self.sh.searchers[1:]
        return {
            "highs_status": "branch-and-cut: " + term.value,
            "bnc_nodes": st["nodes"],
            "bnc_open_nodes": len(self.heap),
            "search_threads": len(self.sh.searchers),
            "threads_retired": st["threads_retired"],
            **({"search_threads_note": self.threads_note} if self.threads_note else {}),
            **({"thread_estimate_mb": self.thread_estimate / 2**20} if self.thread_estimate is not None else {}),
            "helper_nodes": sum(hb.stats["nodes"] for hb in helpers),
            "lazy_cuts": st["cuts"],
            "pool_cuts": st["pool_cuts"],
            "cuts_aged_out": st["cuts_aged_out"],
            "lp_nnz_peak": max(b.stats["lp_nnz_peak"] for b in self.sh.searchers),
            "pool_rows": self.pool.size,
            "pool_nnz": int(self.pool.A.nnz),
            "pool_forgotten": self.pool.forgotten,
            "lp_rows": int(self.h.getNumRow()),
            "lp_solves": st["lp_solves"],
            "lp_retries": st["lp_retries"],
            "strong_lps": st["strong_lps"],
            "strong_iterations": st["strong_iterations"],
            "strong_skipped": st["strong_skipped"],
            "strong_fixed": st["strong_fixed"],
            "strong_pruned": st["strong_pruned"],
            "simplex_iterations": st["simplex_iterations"],
            "root_bound": self.root_bound,
            "root_seconds": st["root_seconds"],
            "root_rounds": st["root_rounds"],
            "root_end": st["root_end"],
            "root_fixed": st["root_fixed"],
            "node_fixed": st["node_fixed"],
            "incumbents": st["incumbents"],
            "heuristic_improvements": st["heuristic_improvements"],
            "initial_rows": st["initial_rows_added"],
            "columns_removed": st["columns_removed"],
            **{f"separation_{k}": v for k, v in lazy_stats.items() if np.isscalar(v)},
        }

    def _log(self, root_obj: float | None = None) -> None:
        if not self.verbose:
            return
        now = time.perf_counter()
        if now - self._last_log < self.opt.log_every:
            return
        self._last_log = now
        if root_obj is not None:
            bound = root_obj
            where = "root"
        else:
            with self.sh.lock:
                bound = min([e.bound for e in self.heap] + list(self.sh.busy.values()), default=self.UB)
                where = f"{self._counts('nodes')[0]} nodes, {len(self.heap)} open"
                if self._active() > 1:
                    where += f", {self._active()} threads"
        gap = (self.UB - bound) / max(abs(self.UB), 1e-9) if np.isfinite(self.UB) else np.inf
        print(f"[benchsel] highs branch-and-cut: {where}, bound {bound:.8g}, incumbent {self.UB:.8g}, "
              f"gap {100 * gap:.4f} %, {self.stats['cuts']} cuts ({int(self.h.getNumRow())} LP rows), "
              f"{now - self.t0:.1f} s", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ helpers
_NO_ITERATION_LIMIT = 2**31 - 1  # HiGHS' default simplex_iteration_limit
#: Share of the lazy rows' memory budget at which the main thread retires the other search threads.
RETIRE_SHARE = 0.95
_LIBC_TRIM: Any = None


def _peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far (None where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else 1024 * peak  # bytes on macOS, kB on Linux


def _rss_bytes() -> int | None:
    """This process's resident memory now (Linux ``/proc/self/statm``; None where it is missing)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _release_freed_memory() -> None:
    """Hand the heap's freed pages back to the OS (glibc ``malloc_trim``; a no-op where it is missing).

    Deleting LP rows frees HiGHS' old matrix copies, but glibc keeps the
    pages; over hours of row churn the peak RSS creeps up by the fragments.
    """
    global _LIBC_TRIM
    if _LIBC_TRIM is None:
        _LIBC_TRIM = False
        try:
            import ctypes
            import ctypes.util

            name = ctypes.util.find_library("c")
            trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
            if trim is not None:
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
                _LIBC_TRIM = trim
        except OSError:  # pragma: no cover - no C library to load
            pass
    if _LIBC_TRIM:
        _LIBC_TRIM(0)


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
