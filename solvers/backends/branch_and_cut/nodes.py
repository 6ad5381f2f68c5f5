"""The branch-and-cut's open nodes: :class:`Node`, a node's LP (:class:`NodeLP`) and the queue every search
thread shares (:class:`NodeQueue`)."""
from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field

import numpy as np

from benchsel.formulations.core.result import Termination


@dataclass(order=True)
class Node:
    """An open node: ordered by bound (best first), then depth (deeper first), then creation."""

    bound: float
    neg_depth: int
    seq: int
    lb: np.ndarray = field(compare=False)
    ub: np.ndarray = field(compare=False)
    branch: tuple[int, int, float, float] | None = field(default=None, compare=False)  # (col, dir, frac, parent obj)
    owner: int = field(default=0, compare=False)  # the search thread that created it (threading.get_ident())


@dataclass
class NodeLP:
    """A node's LP as the cut loop left it."""

    status: str  # "optimal", "infeasible", "unbounded", "time", "error"
    x: np.ndarray | None = None
    obj: float | None = None
    rc: np.ndarray | None = None


class NodeQueue:
    """The open nodes, best bound first, and the state of the search loop every thread shares.

    ``lock`` (re-entrant) guards every piece of shared search state (the queue, the incumbent, the global
    fixings, the pseudo-costs); ``cond`` wakes the threads waiting for nodes. ``busy`` maps a thread to
    the bound of the node it holds (counted in every bound); ``stop`` (a termination) sends every thread
    out of its loop; ``halt`` is set when the main thread ends the search on an exception; ``failure`` is
    an exception raised in another thread, for the main one to raise.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.heap: list[Node] = []
        self.seq = 0
        self.pruned_min = np.inf
        self.busy: dict[int, float] = {}
        self.stop: Termination | None = None
        self.halt = False
        self.failure: BaseException | None = None

    def __len__(self) -> int:
        return len(self.heap)

    def next_seq(self) -> int:
        with self.lock:
            self.seq += 1
            return self.seq

    def push(self, node: Node) -> None:
        with self.cond:
            heapq.heappush(self.heap, node)  # best bound first; deeper first among equal bounds
            self.cond.notify_all()

    def prune(self, bound: float) -> None:
        """Record the bound of a node left unexplored (it counts in the final bound)."""
        with self.lock:
            self.pruned_min = min(self.pruned_min, bound)

    def open_min(self, default: float = np.inf) -> float:
        """Least bound of the open nodes and of those a thread holds (lock held by the caller or not)."""
        with self.lock:
            return min([e.bound for e in self.heap] + list(self.busy.values()), default=default)

    def select(self, nxt: Node | None, upper: float, plunge: float, own_share: float, threads: int
               ) -> Node | None:
        """The next node (lock held): the plunging child ``nxt`` while its bound is within ``plunge`` of the
        gap to ``upper``, else the best open one, or with several ``threads`` the best one this thread
        created while within ``own_share`` of the gap above the best bound; None when none is open."""
        heap = self.heap
        if nxt is not None:
            best = heap[0].bound if heap else nxt.bound
            if np.isfinite(upper) and nxt.bound > best + plunge * (upper - best):
                heapq.heappush(heap, nxt)
                nxt = None
        if nxt is not None:
            return nxt
        if not heap:
            return None
        me = threading.get_ident()
        if threads > 1:  # another thread's best node costs this LP more simplex iterations
            near = heap[0].bound + own_share * (upper - heap[0].bound) if np.isfinite(upper) else None
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
