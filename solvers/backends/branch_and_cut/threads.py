"""The branch-and-cut's search threads (:class:`SearchThreads`): how many, whether a further one fits the
memory budget, starting, retiring and joining them, and the counters summed over them."""
from __future__ import annotations

import os
import threading
from typing import Any, Protocol

from . import memory
from .nodes import NodeQueue
from .options import BnCOptions
from .shared import Clock, GlobalFixing


class Member(Protocol):
    """What the threads need of a search thread's searcher (:class:`~.searcher.Searcher`)."""

    stats: dict[str, Any]
    retire: bool

    def lp_bytes(self) -> float: ...

    def copy_for_thread(self) -> Member: ...

    def search_in_thread(self) -> None: ...


class SearchThreads:
    """The search threads: the main one first (``members[0]``), then those :meth:`spawn` starts.

    Parameters
    ----------
    opt : BnCOptions
    memory_budget : float, optional
        The lazy rows' memory budget (bytes) the default number of threads stays within.
    queue : NodeQueue
    fixing : GlobalFixing
        Threads start once the root LP is solved.
    clock : Clock
    """

    def __init__(self, opt: BnCOptions, memory_budget: float | None, queue: NodeQueue, fixing: GlobalFixing,
                 clock: Clock) -> None:
        self.opt, self.budget, self.queue, self.fixing, self.clock = opt, memory_budget, queue, fixing, clock
        self.members: list[Member] = []
        self.threads: list[threading.Thread] = []
        self.checked = False  # the memory budget left no room for another thread
        self.retired = False  # the main thread has retired the others
        self.note: str | None = None
        self.estimate: float | None = None  # bytes one further thread was expected to take (spawn)

    def counts(self, *keys: str) -> list[int]:
        """Counters summed over every search thread: one node count, one strong-branching budget and one
        average for the whole search (a thread that has just started would otherwise cap its strong-branching
        LPs at 10 iterations, and record their gains as pseudo-costs)."""
        return [sum(b.stats[k] for b in self.members) for k in keys]

    def active(self) -> int:
        """Search threads still running their loop (the main one and the helpers not retired)."""
        return sum(1 for b in self.members if not b.retire)

    def count(self) -> int:
        """Search threads to run: ``threads``, else the cores this process may use, at most 4."""
        if self.opt.threads is not None:
            return max(1, int(self.opt.threads))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(4, cores))

    def spawn(self) -> None:
        """Start the other search threads once: after the root, ``parallel_after`` seconds in, nodes open."""
        if self.threads or self.checked or self.fixing.root is None:
            return
        if self.clock.elapsed() < self.opt.parallel_after or self.clock.left() < 1.0:
            return
        with self.queue.lock:
            if not self.queue.heap:
                return
        n = self.count() - 1
        if n <= 0:
            self.checked = True
            return
        budget = self.budget
        peak = memory._peak_rss_bytes()
        main = self.members[0]
        if self.opt.threads is None and budget is not None and peak is not None:
            # the default number of threads stays within the memory budget (each further one holds a copy of
            # the LP and a pool); threads given explicitly all start
            each = self.estimate = main.lp_bytes()
            fit = max(0, int((budget - peak) // each))
            if fit < n:
                self.note = (f"{1 + fit} of {1 + n} search threads: each further one needs about "
                             f"{each / 2**20:.0f} MB (a copy of the LP and a cut pool), and the peak "
                             f"memory so far, {peak / 2**20:.0f} MB, leaves room for {fit} within the "
                             f"lazy rows' memory budget of {budget / 2**20:.0f} MB")
                n = fit
        if n <= 0:
            self.checked = True
            return
        for _ in range(n):
            hb = main.copy_for_thread()
            t = threading.Thread(target=hb.search_in_thread, name="benchsel-branch-and-cut", daemon=True)
            with self.queue.lock:
                self.members.append(hb)
            self.threads.append(t)
            t.start()

    def watch_memory(self) -> None:
        """Retire the other search threads when the resident memory reaches ``memory.RETIRE_SHARE`` of the lazy
        rows' ``memory_budget``.

        The start check (:meth:`spawn`) counts the memory up to the moment a thread starts; a thread's LP,
        factor and pool grow with the search after it. A retired thread puts back the node it holds, leaves
        its loop and frees its LP side; the search goes on in this thread, over the same open nodes. Threads
        given explicitly (``threads=``) are left running, as at the start.
        """
        if not self.threads or self.retired or self.opt.threads is not None:
            return
        budget = self.budget
        now = memory._rss_bytes()
        if budget is None or now is None or now < memory.RETIRE_SHARE * budget:
            return
        helpers = self.members[1:]
        with self.queue.cond:
            for hb in helpers:
                hb.retire = True
            self.queue.cond.notify_all()
        self.retired = True
        self.members[0].stats["threads_retired"] = len(helpers)
        note = (f"{len(helpers)} further search thread{'s' if len(helpers) > 1 else ''} retired after "
                f"{self.clock.elapsed():.1f} s: the resident memory, {now / 2**20:.0f} MB, reached "
                f"{100 * memory.RETIRE_SHARE:.0f} % of the lazy rows' memory budget of {budget / 2**20:.0f} MB")
        self.note = note if self.note is None else f"{self.note}; {note}"

    def join(self) -> None:
        """Wait for the other threads: each leaves its loop when the search is over, stopped or halted,
        putting back the node it holds."""
        if not self.threads:
            return
        with self.queue.cond:
            self.queue.cond.notify_all()
        for t in self.threads:  # a thread still in an LP past the limit is left; its node's bound counts (busy)
            t.join(timeout=None if self.clock.time_limit is None else max(self.clock.left(), 0.0) + 1.0)

