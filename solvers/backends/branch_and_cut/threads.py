"""Further search threads of the branch-and-cut: whether one fits the memory budget, starting, retiring and
joining them (bound as methods of :class:`~.search.BranchAndCut`)."""
from __future__ import annotations

import copy
import os
import threading
import time
from typing import TYPE_CHECKING

from . import memory
from .state import _CutPool, _fresh_stats

if TYPE_CHECKING:
    from .search import BranchAndCut


def _n_threads(self: BranchAndCut) -> int:
    if self.opt.threads is not None:
        return max(1, int(self.opt.threads))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cores))


def _spawn(self: BranchAndCut) -> None:
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
    budget = self.lazy.memory_budget
    peak = memory._peak_rss_bytes()
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


def _helper_bytes(self: BranchAndCut) -> float:
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
    now = memory._rss_bytes()
    grown = 0.0 if now is None or self._rss_start is None else float(now - self._rss_start)
    return max(static, grown)


def _helper(self: BranchAndCut) -> BranchAndCut:
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


def _helper_search(self: BranchAndCut) -> None:
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
        memory._release_freed_memory()


def _active(self: BranchAndCut) -> int:
    """Search threads still running their loop (the main one and the helpers not retired)."""
    return sum(1 for b in self.sh.searchers if not b.retire)


def _watch_memory(self: BranchAndCut) -> None:
    """Retire the other search threads when the resident memory reaches ``memory.RETIRE_SHARE`` of the lazy
    rows' ``memory_budget``.

    The start check (:meth:`_spawn`) counts the memory up to the moment a thread starts; a thread's LP,
    factor and pool grow with the search after it. A retired thread puts back the node it holds, leaves
    its loop and frees its LP side; the search goes on in this thread, over the same open nodes. Threads
    given explicitly (``threads=``) are left running, as at the start.
    """
    if not self._threads or self._retired or self.opt.threads is not None:
        return
    budget = self.lazy.memory_budget
    now = memory._rss_bytes()
    if budget is None or now is None or now < memory.RETIRE_SHARE * budget:
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
            f"{100 * memory.RETIRE_SHARE:.0f} % of the lazy rows' memory budget of {budget / 2**20:.0f} MB")
    self.threads_note = note if self.threads_note is None else f"{self.threads_note}; {note}"


def _join(self: BranchAndCut) -> None:
    """Wait for the other threads: each leaves its loop when the search is over, stopped or halted,
    putting back the node it holds."""
    if not self._threads:
        return
    with self.sh.cond:
        self.sh.cond.notify_all()
    for t in self._threads:  # a thread still in an LP past the limit is left; its node's bound counts (busy)
        t.join(timeout=None if self.time_limit is None else max(self._left(), 0.0) + 1.0)
