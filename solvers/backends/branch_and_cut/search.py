"""Branch-and-cut for models with lazy rows, HiGHS solving every node LP.

HiGHS has no lazy-constraint callback, so the search is driven here
(:class:`BranchAndCut`), which composes the parts, each an object with its own state:

* **node LP** (:meth:`.searcher.Searcher.node_lp` on the thread's :class:`.lp.LPRelaxation`): the
  node's bounds, then LP (dual simplex, warm-started from the last basis) and separation rounds until
  no lazy row is violated (at the root), or the bound stalls (at other nodes);
* **separation** (:class:`.cuts.Separator`): violated rows of the cut
  pool first, then ``model.lazy.separate`` at the LP point and, at the root, at
  an *in-out* point between the LP point and a core point (Ben-Ameur & Neto;
  Fischetti, Ljubić & Sinnl 2017), which converges in fewer rounds; rows slack
  for ``cut_age`` LP solves leave the LP for the pool (:meth:`.lp.LPRelaxation.age`, :class:`.pool.CutPool`);
* **fixing** (:class:`.shared.GlobalFixing`, :meth:`.searcher.Searcher.fix`): reduced-cost fixing against the
  incumbent, global at the root (renewed whenever the incumbent improves) and
  local at the other nodes;
* **incumbent** (:class:`.shared.Incumbent`, :meth:`.searcher.Searcher.heuristic`):
  the warm start, integral node LPs, and ``model.lazy.round(x)`` improved by
  ``model.lazy.improve`` when the lazy rows offer them; every candidate is
  ranked by the true objective (``key``), never by the master's;
* **branching** (:class:`.branching.Brancher`, :class:`.shared.PseudoCosts`): pseudo-costs (objective gain
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
fixings, the pseudo-costs and the queue are shared (:class:`.nodes.NodeQueue`,
:class:`.threads.SearchThreads`). Every bound reported then counts the nodes a thread holds. Which of
several optimal selections is found, and the search at a time limit, then depend on timing: ``threads=1`` makes the
search reproducible.

Every bound reported is valid for the full model: an LP holding only some of
the lazy rows is a relaxation.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.result import Termination

from .lp import LPRelaxation
from .nodes import Node, NodeQueue
from .options import BnCOptions
from .searcher import Progress, Searcher, fresh_stats
from .shared import Clock, GlobalFixing, Incumbent, PseudoCosts
from .threads import SearchThreads


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

    def __init__(self, h: Any, hp: Any, model: LinearModel, key: Callable[[np.ndarray], float | None], *,
                 time_limit: float | None = None, mip_rel_gap: float | None = 1e-6, verbose: bool = False,
                 warm_start: np.ndarray | None = None, options: BnCOptions | None = None) -> None:
        self.clock = Clock(time_limit)
        if model.lazy is None:
            raise ValueError("model: BranchAndCut needs a model with lazy rows (model.lazy)")
        self.h, self.model, self.lazy = h, model, model.lazy
        self.opt = opt = options or BnCOptions()
        self.warm_start = warm_start
        ints = np.flatnonzero(model.integrality).astype(np.int32)
        self.queue = NodeQueue()
        rel = 1e-9 if mip_rel_gap is None else max(float(mip_rel_gap), 1e-9)
        self.incumbent = Incumbent(key, self.queue.lock, rel, model.integral_objective)
        self.fixing = GlobalFixing(model.col_lb[ints].copy(), model.col_ub[ints].copy(), ints, self.incumbent)
        self.pseudo = PseudoCosts(ints.size, self.queue.lock)
        self.threads = SearchThreads(opt, self.lazy.memory_budget, self.queue, self.fixing,
                                     self.clock)
        stats = fresh_stats()
        lp = LPRelaxation(h, hp, model, ints, opt, self.clock, stats)
        progress = Progress(self.queue, self.incumbent, self.threads, self.clock, opt.log_every, lp, stats) \
            if verbose else None
        self.main = Searcher(model, lp, self.queue, self.incumbent, self.fixing, self.pseudo, self.threads,
                             self.clock, opt, stats, progress=progress)
        self.threads.members.append(self.main)

    def run(self) -> tuple[np.ndarray | None, Termination, float | None, dict[str, Any]]:
        """Search; returns (selection, termination, bound on the model objective, extras)."""
        ints = self.main.ints
        if ints.size:
            self.h.changeColsIntegrality(int(ints.size), ints, np.zeros(ints.size, dtype=np.uint8))
        self.main.offer(self.warm_start)
        self.queue.push(Node(-np.inf, 0, self.queue.next_seq(), self.fixing.lb.copy(), self.fixing.ub.copy()))
        try:
            self.main.search()
        except BaseException:  # the other threads leave after their node
            with self.queue.cond:
                self.queue.halt = True
            raise
        finally:
            self.threads.join()
        q = self.queue
        if q.failure is not None:
            raise q.failure
        term = q.stop
        if term == Termination.UNBOUNDED:
            return None, term, None, self._extra(term)
        best = self.incumbent.selection
        if term is None:
            term = Termination.OPTIMAL if best is not None else Termination.INFEASIBLE
        return best, term, self._bound(term), self._extra(term)

    def _bound(self, term: Termination) -> float | None:
        if term in (Termination.INFEASIBLE, Termination.UNBOUNDED):
            return None
        ub = self.incumbent.value
        with self.queue.lock:  # the open nodes and those a thread still holds
            bound = min(self.queue.open_min(), self.queue.pruned_min, ub)
        if self.model.integral_objective and np.isfinite(bound):
            bound = float(np.ceil(bound - 1e-6))
        root_bound = self.fixing.root_bound
        if not np.isfinite(bound):
            bound = root_bound if root_bound is not None else -np.inf
        initial = self.main.separator.initial_bound
        if initial is not None:
            bound = min(max(bound, initial), ub)
        return float(bound) if np.isfinite(bound) else None

    def _extra(self, term: Termination) -> dict[str, Any]:
        lazy_stats = self.lazy.stats
        st = dict(self.main.stats)
        members = self.threads.members
        st.update(zip(_ADDITIVE, self.threads.counts(*_ADDITIVE)))
        th, lp = self.threads, self.main.lp
        return {
            "highs_status": "branch-and-cut: " + term.value,
            "bnc_nodes": st["nodes"],
            "bnc_open_nodes": len(self.queue),
            "search_threads": len(members),
            "threads_retired": st["threads_retired"],
            **({"search_threads_note": th.note} if th.note else {}),
            **({"thread_estimate_mb": th.estimate / 2**20} if th.estimate is not None else {}),
            "helper_nodes": sum(hb.stats["nodes"] for hb in members[1:]),
            "lazy_cuts": st["cuts"],
            "pool_cuts": st["pool_cuts"],
            "cuts_aged_out": st["cuts_aged_out"],
            "lp_nnz_peak": max(b.stats["lp_nnz_peak"] for b in members),
            "pool_rows": lp.pool.size,
            "pool_nnz": int(lp.pool.A.nnz),
            "pool_forgotten": lp.pool.forgotten,
            "lp_rows": lp.n_rows,
            "lp_solves": st["lp_solves"],
            "lp_retries": st["lp_retries"],
            "strong_lps": st["strong_lps"],
            "strong_iterations": st["strong_iterations"],
            "strong_skipped": st["strong_skipped"],
            "strong_fixed": st["strong_fixed"],
            "strong_pruned": st["strong_pruned"],
            "simplex_iterations": st["simplex_iterations"],
            "root_bound": self.fixing.root_bound,
            "root_seconds": st["root_seconds"],
            "root_rounds": st["root_rounds"],
            "root_end": st["root_end"],
            "root_fixed": self.fixing.fixed,
            "node_fixed": st["node_fixed"],
            "incumbents": self.incumbent.count,
            "heuristic_improvements": st["heuristic_improvements"],
            "initial_rows": st["initial_rows_added"],
            "columns_removed": st["columns_removed"],
            **{f"separation_{k}": v for k, v in lazy_stats.items() if np.isscalar(v)},
        }


#: Counters summed over the search threads in the extras (the others are the main thread's).
_ADDITIVE = ("cuts", "pool_cuts", "cuts_aged_out", "lp_solves", "nodes", "node_fixed", "heuristic_improvements",
             "simplex_iterations", "strong_lps", "strong_iterations", "strong_skipped", "lp_retries",
             "strong_fixed", "strong_pruned")
