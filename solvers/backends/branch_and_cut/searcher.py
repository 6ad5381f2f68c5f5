"""One search thread of the branch-and-cut (:class:`Searcher`) and the progress lines (:class:`Progress`)."""
from __future__ import annotations

import heapq
import sys
import threading
import time
from typing import Any

import numpy as np

from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.result import Termination

from . import memory
from .branching import Brancher
from .cuts import Separator
from .lp import LPRelaxation
from .nodes import Node, NodeLP, NodeQueue
from .options import BnCOptions
from .shared import Clock, GlobalFixing, Incumbent, PseudoCosts, rc_fix
from .threads import SearchThreads


def fresh_stats() -> dict[str, Any]:
    """A search thread's counters, all at their start."""
    return {
        "cuts": 0, "pool_cuts": 0, "cuts_aged_out": 0, "lp_nnz_peak": 0, "lp_solves": 0, "nodes": 0,
        "node_fixed": 0, "heuristic_improvements": 0, "simplex_iterations": 0,
        "root_seconds": None, "root_rounds": None, "root_end": None, "strong_lps": 0, "strong_iterations": 0,
        "strong_skipped": 0, "lp_retries": 0,
        "initial_rows_added": 0, "columns_removed": 0, "strong_fixed": 0, "strong_pruned": 0, "threads_retired": 0}


class Searcher:
    """One search thread: its LP (:class:`~.lp.LPRelaxation`), separation (:class:`~.cuts.Separator`) and
    branching (:class:`~.branching.Brancher`) over the shared queue, incumbent, fixings and pseudo-costs.

    Parameters
    ----------
    model : LinearModel
        With ``model.lazy``.
    lp : LPRelaxation
        This thread's LP.
    queue, incumbent, fixing, pseudo, threads, clock
        The state every search thread shares.
    opt : BnCOptions
    stats : dict
        This thread's counters (shared with its LP, separator and brancher).
    helper : bool
        A thread :meth:`SearchThreads.spawn` started (False: the main one).
    progress : Progress, optional
        The main thread's progress lines.
    """

    def __init__(self, model: LinearModel, lp: LPRelaxation, queue: NodeQueue, incumbent: Incumbent,
                 fixing: GlobalFixing, pseudo: PseudoCosts, threads: SearchThreads, clock: Clock, opt: BnCOptions,
                 stats: dict[str, Any], *, helper: bool = False, progress: Progress | None = None) -> None:
        assert model.lazy is not None
        self.model, self.lazy = model, model.lazy
        self.lp, self.queue, self.incumbent, self.fixing, self.pseudo = lp, queue, incumbent, fixing, pseudo
        self.threads, self.clock, self.opt, self.stats = threads, clock, opt, stats
        self.helper, self.progress = helper, progress
        self.ints = lp.ints
        self.separator = Separator(self.lazy, lp, opt, stats)
        self.brancher = Brancher(lp, self.lazy, pseudo, queue, incumbent, threads.counts, opt, stats)
        self.retire = False  # asked to leave its loop (SearchThreads.watch_memory)
        self.rss_start = memory._rss_bytes() if not helper else None  # before the LP holds any lazy row

    # ------------------------------------------------------------ threads
    def copy_for_thread(self) -> Searcher:
        """A further search thread: a HiGHS copy of this thread's LP as it stands, its own pool, separation
        and counters; the search state stays shared."""
        stats = fresh_stats()
        return Searcher(self.model, self.lp.copy(stats), self.queue, self.incumbent, self.fixing, self.pseudo,
                        self.threads, self.clock, self.opt, stats, helper=True)

    def search_in_thread(self) -> None:
        """A further thread's run: :meth:`search`, an exception handed to the main thread, which raises it."""
        try:
            self.search()
        except BaseException as e:
            with self.queue.cond:
                self.queue.failure = e
                self.queue.halt = True
                self.queue.cond.notify_all()
        if self.retire:  # its LP copy, factor and pool are freed (its counters stay for the statistics)
            self.lp.release()

    def lp_bytes(self) -> float:
        """Memory one further search thread is expected to take: what this thread's LP side has taken so
        far (the resident memory gained since the search began: HiGHS' LP, its factor and work arrays, the
        cut bookkeeping and pool), and at least a static estimate, HiGHS' copy of the LP at 50 bytes per
        non-zero, a full cut pool (12 bytes per non-zero) and 16 MB. The static estimate alone was too low
        on large LPs: it let a second thread start on glue_qnli k = 25, and the run passed the budget
        (docs: k-medoids, Memory). The growth also counts what every thread shares (the sorted candidate
        lists filled during the search): leaving that out let a second thread start on glue_qnli k = 25
        that took the run past the budget, since the memory grows further after the check."""
        lp = self.lp
        nnz = max(lp.lp_nnz, int(self.stats["lp_nnz_peak"])) + (int(self.model.A.nnz) if lp.n_static else 0)
        static = 50.0 * nnz + 12.0 * self.opt.pool_nnz + 16 * 2**20
        now = memory._rss_bytes()
        grown = 0.0 if now is None or self.rss_start is None else float(now - self.rss_start)
        return max(static, grown)

    # ------------------------------------------------------------- search
    def search(self) -> None:
        """This thread's loop: take a node, process it, hand back its children.

        Ends when no node is open and no thread holds one, or when a limit, an error or the main thread
        stops every thread.
        """
        q, me = self.queue, threading.get_ident()
        nxt: Node | None = None
        while True:
            with q.cond:
                if q.stop is None and self.clock.left() <= 0:
                    q.stop = Termination.TIME_LIMIT
                if (q.stop is None and self.opt.max_nodes is not None
                        and self.threads.counts("nodes")[0] >= self.opt.max_nodes):
                    q.stop = Termination.ITERATION_LIMIT
                if q.stop is not None or q.halt or self.retire:
                    if nxt is not None:
                        heapq.heappush(q.heap, nxt)
                    q.busy.pop(me, None)
                    q.cond.notify_all()
                    return
                node = q.select(nxt, self.incumbent.value, self.opt.plunge, self.opt.own_share,
                                self.threads.active())
                nxt = None
                if node is None:  # nothing open: done, unless another thread holds a node
                    q.busy.pop(me, None)
                    if not q.busy:
                        q.cond.notify_all()
                        return
                    q.cond.wait(timeout=0.2)
                    continue
                if node.bound >= self.incumbent.cutoff():
                    q.prune(node.bound)
                    q.busy.pop(me, None)
                    continue
                q.busy[me] = node.bound
            status, children = self.process(node)
            with q.cond:
                if status in ("time", "error", "unbounded") and q.stop is None:
                    q.stop = {"time": Termination.TIME_LIMIT, "error": Termination.ERROR,
                              "unbounded": Termination.UNBOUNDED}[status]
                if children:  # plunge into the first child while it stays near the best bound
                    nxt = children[0]
                    q.busy[me] = nxt.bound
                    for c in children[1:]:
                        heapq.heappush(q.heap, c)
                else:
                    q.busy.pop(me, None)
                q.cond.notify_all()
            if not self.helper:
                self.threads.spawn()
                self.threads.watch_memory()
                if self.progress is not None:
                    self.progress.line()

    def process(self, node: Node) -> tuple[str, list[Node]]:
        """Solve a node: LP with its cuts, heuristic, fixing, branching. Returns (status, children)."""
        lb = np.maximum(node.lb, self.fixing.lb)
        ub = np.minimum(node.ub, self.fixing.ub)
        if np.any(lb > ub):  # emptied by root fixing
            return "infeasible", []
        root = not self.helper and self.stats["nodes"] == 0
        if root:
            self.separator.initial_rows(self.clock.left(), self.incumbent.selection)
        lp = self.node_lp(lb, ub, root=root)
        if lp.status in ("time", "error"):
            node.bound = node.bound if lp.obj is None else max(node.bound, lp.obj)
            self.queue.push(node)
            return lp.status, []
        self.stats["nodes"] += 1
        if lp.status == "unbounded":
            return ("unbounded" if root else "infeasible"), []
        if lp.status == "infeasible":
            return "infeasible", []
        assert lp.x is not None and lp.obj is not None
        self.pseudo.learn(node.branch, lp.obj)
        if root:
            self.fixing.root = lp
            self.stats["root_seconds"] = self.clock.elapsed()
        every = self.opt.heuristic_every
        if root or (every and (self.stats["nodes"] - 1) % every == 0):
            self.heuristic(lp.x)
        if root:
            self.fixing.renew()
        if lp.obj >= self.incumbent.cutoff():
            self.queue.prune(lp.obj)
            return "pruned", []
        xi = lp.x[self.ints]
        frac = np.abs(xi - np.round(xi)) > 1e-6
        if not frac.any():  # separated to the end: an optimum of the node
            self.offer(self.model.selection_from_x(lp.x))
            if lp.obj >= self.incumbent.cutoff():
                self.queue.prune(lp.obj)
            return "solved", []
        lb_c, ub_c = self.fix(lb, ub, lp)
        return "branched", self.brancher.branch(lp, lb_c, ub_c, -node.neg_depth, frac)

    def node_lp(self, lb: np.ndarray, ub: np.ndarray, *, root: bool) -> NodeLP:
        """LP of a node (integer columns' bounds ``lb``, ``ub``, shape (n_ints,)) with its lazy rows; on a
        time-out the last LP value reached (a valid bound) or None."""
        lp = self.lp
        lp.compact(self.fixing.lb, self.fixing.ub)
        lp.set_bounds(lb, ub)
        partial = None
        rounds = 0
        limit = self.opt.root_rounds if root else self.opt.node_rounds

        def ended(why: str) -> None:  # why the root's cut loop stopped (extra["root_end"])
            if root:
                self.stats["root_rounds"], self.stats["root_end"] = rounds, why

        def done(why: str) -> NodeLP:  # the node's LP as it stands (duals read only here)
            ended(why)
            return NodeLP("optimal", x, obj, lp.full(sol.col_dual))

        while True:
            st = lp.solve()
            if st != "optimal":
                ended(st)
                return NodeLP(st, obj=partial if st == "time" else None)
            sol = lp.h.getSolution()
            x = lp.full(sol.col_value)
            obj = lp.objective()
            gained = obj - partial if partial is not None else np.inf
            partial = obj
            lp.age(np.asarray(sol.row_value, dtype=float))
            if obj >= self.incumbent.cutoff():
                return done("cutoff")
            xi = x[self.ints]
            integral = not np.any(np.abs(xi - np.round(xi)) > 1e-6)
            stalled = not root and rounds >= 2 and gained < self.opt.tail_off * max(1.0, abs(obj))
            if not integral and rounds > 0 and (rounds >= limit or stalled):
                return done("round_limit" if rounds >= limit else "stalled")
            if root and rounds and self.opt.heuristic_every and rounds % 10 == 0:
                self.heuristic(x)
            cuts = self.separator.separate(x, root=root)
            if cuts is None:
                return done("separated")
            lp.add_rows(cuts)
            rounds += 1
            if self.progress is not None:
                self.progress.line(obj if root else None)

    def fix(self, lb: np.ndarray, ub: np.ndarray, lp: NodeLP) -> tuple[np.ndarray, np.ndarray]:
        """Reduced-cost fixing at a node: the children inherit the tightened bounds."""
        lb2, ub2 = rc_fix(lb, ub, lp, self.ints, self.incumbent.cutoff())
        self.stats["node_fixed"] += int(np.sum(lb2 > lb) + np.sum(ub2 < ub))
        return lb2, ub2

    # ------------------------------------------------------------ incumbent
    def offer(self, sel: np.ndarray | None) -> bool:
        """Offer ``sel`` to the incumbent; when taken, the global fixing is renewed."""
        if not self.incumbent.offer(sel):
            return False
        self.fixing.renew()
        return True

    def heuristic(self, x: np.ndarray) -> None:
        """Round the LP point (``lazy.round``) and improve it (``lazy.improve``); offer both."""
        sel = self.lazy.round(x)
        if sel is None:
            return
        self.offer(sel)
        better = self.lazy.improve(np.asarray(sel), x, deadline=self.clock.deadline())
        if better is not sel and self.offer(better):
            self.stats["heuristic_improvements"] += 1


class Progress:
    """Progress lines on stderr every ``log_every`` seconds (``verbose``), with the main thread's cuts and
    LP rows (``lp``, ``stats``)."""

    def __init__(self, queue: NodeQueue, incumbent: Incumbent, threads: SearchThreads, clock: Clock,
                 log_every: float, lp: LPRelaxation, stats: dict[str, Any]) -> None:
        self.queue, self.incumbent, self.threads, self.clock = queue, incumbent, threads, clock
        self.log_every, self.lp, self.stats = log_every, lp, stats  # the main thread's LP and counters
        self.last = clock.t0

    def line(self, root_obj: float | None = None) -> None:
        """One line, if ``log_every`` seconds have passed (``root_obj``: the root's LP value, while it is
        being solved)."""
        now = time.perf_counter()
        if now - self.last < self.log_every:
            return
        self.last = now
        ub = self.incumbent.value
        if root_obj is not None:
            bound = root_obj
            where = "root"
        else:
            with self.queue.lock:
                bound = self.queue.open_min(default=ub)
                where = f"{self.threads.counts('nodes')[0]} nodes, {len(self.queue)} open"
                if self.threads.active() > 1:
                    where += f", {self.threads.active()} threads"
        gap = (ub - bound) / max(abs(ub), 1e-9) if np.isfinite(ub) else np.inf
        print(f"[benchsel] highs branch-and-cut: {where}, bound {bound:.8g}, incumbent {ub:.8g}, "
              f"gap {100 * gap:.4f} %, {self.stats['cuts']} cuts ({self.lp.n_rows} LP rows), "
              f"{now - self.clock.t0:.1f} s", file=sys.stderr, flush=True)
