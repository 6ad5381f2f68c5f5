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

import heapq
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations.core.model import LazyRows, LinearModel
from benchsel.formulations.core.result import Termination

from . import branching, cuts, memory, threads
from .options import _NO_ITERATION_LIMIT, BnCOptions
from .state import _ADDITIVE, _CutPool, _fresh_stats, _Node, _NodeLP, _Search, _Shared


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
        self._rss_start = memory._rss_bytes()  # before the LP holds any lazy row (see _helper_bytes)

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






    # ---------------------------------------------------------------- fixing



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
        sel = self.lazy.round(x)
        if sel is None:
            return
        self._offer(sel)
        better = self.lazy.improve(np.asarray(sel), x, deadline=self._deadline())
        if better is not sel and self._offer(better):
            self.stats["heuristic_improvements"] += 1

    # ------------------------------------------------------------- branching






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
        lazy_stats = self.lazy.stats
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

    # steps implemented in the sibling modules (threads, cuts, branching), bound here as methods
    _n_threads = threads._n_threads
    _spawn = threads._spawn
    _helper_bytes = threads._helper_bytes
    _helper = threads._helper
    _helper_search = threads._helper_search
    _active = threads._active
    _watch_memory = threads._watch_memory
    _join = threads._join
    _separate = cuts._separate
    _initial_rows = cuts._initial_rows
    _add_rows = cuts._add_rows
    _age_cuts = cuts._age_cuts
    _full = cuts._full
    _compact = cuts._compact
    _fix_root = cuts._fix_root
    _fix = cuts._fix
    _rc_fix = cuts._rc_fix
    _learn = branching._learn
    _scores = branching._scores
    _branch = branching._branch
    _strong = branching._strong
    _strong_budget_left = branching._strong_budget_left
    _strong_iteration_cap = branching._strong_iteration_cap
