"""State the branch-and-cut's search threads share besides the node queue: the clock (:class:`Clock`), the
incumbent (:class:`Incumbent`), the global reduced-cost fixings (:class:`GlobalFixing`) and the pseudo-costs
(:class:`PseudoCosts`). Each takes the queue's lock where it changes."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from .nodes import NodeLP


class Clock:
    """The search's start and time limit (seconds; None: none)."""

    def __init__(self, time_limit: float | None) -> None:
        self.t0 = time.perf_counter()
        self.time_limit = time_limit

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return np.inf if self.time_limit is None else self.time_limit - self.elapsed()

    def deadline(self) -> float | None:
        return None if self.time_limit is None else self.t0 + self.time_limit


class Incumbent:
    """The best selection found, ranked by its true objective, and the cutoff it sets.

    Parameters
    ----------
    key : callable
        ``key(selection) -> true objective (model units) or None if infeasible``.
    lock : threading.RLock
    rel : float
        Relative gap within which a node holds nothing worth finding.
    integral : bool
        The objective takes integer values only (a node whose bound exceeds the incumbent minus 1 holds
        nothing better).
    """

    def __init__(self, key: Callable[[np.ndarray], float | None], lock: threading.RLock, rel: float,
                 integral: bool) -> None:
        self.key, self.lock, self.rel, self.integral = key, lock, rel, integral
        self.value = np.inf
        self.selection: np.ndarray | None = None
        self.count = 0  # selections taken

    def tol(self) -> float:
        """Prune margin: a node whose bound is within it of the incumbent holds nothing worth finding."""
        if not np.isfinite(self.value):
            return 0.0
        t = max(1e-9, self.rel * abs(self.value))
        # with an integral objective, a node whose bound exceeds UB - 1 holds nothing better than UB
        return max(t, 1.0 - 1e-6) if self.integral else t

    def cutoff(self) -> float:
        return self.value - self.tol()

    def offer(self, sel: np.ndarray | None) -> bool:
        """Take ``sel`` (item indices) when its true objective is better; True if it was taken."""
        if sel is None or np.asarray(sel).size == 0:
            return False
        k = self.key(np.asarray(sel))
        if k is None:
            return False
        with self.lock:
            if not k < self.value - 1e-12 * max(1.0, abs(k)):
                return False
            self.selection, self.value = np.sort(np.asarray(sel, dtype=np.int64)), k
            self.count += 1
        return True


def rc_fix(lb: np.ndarray, ub: np.ndarray, lp: NodeLP, ints: np.ndarray, cutoff: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """Reduced-cost fixing: an integer column at a bound whose reduced cost exceeds the gap from the LP value
    to ``cutoff`` stays at that bound. ``lb``, ``ub``: shape (len(ints),); returns tightened copies."""
    assert lp.x is not None and lp.rc is not None and lp.obj is not None
    room = cutoff - lp.obj
    xi, r = lp.x[ints], lp.rc[ints]
    lb2, ub2 = lb.copy(), ub.copy()
    if not np.isfinite(room):
        return lb2, ub2
    at_lb = (xi <= lb + 1e-9) & (r > room + 1e-9)
    at_ub = (xi >= ub - 1e-9) & (-r > room + 1e-9)
    ub2[at_lb] = lb[at_lb]
    lb2[at_ub] = ub[at_ub]
    return lb2, ub2


class GlobalFixing:
    """Global bounds of the integer columns: reduced-cost fixing from the root LP against the incumbent,
    renewed whenever the incumbent improves.

    Parameters
    ----------
    lb, ub : ndarray, shape (n_ints,)
        The integer columns' bounds in the model.
    ints : ndarray of int, shape (n_ints,)
        The integer columns.
    incumbent : Incumbent
    """

    def __init__(self, lb: np.ndarray, ub: np.ndarray, ints: np.ndarray, incumbent: Incumbent) -> None:
        self.lb, self.ub, self.ints, self.incumbent = lb, ub, ints, incumbent
        self.root: NodeLP | None = None  # the root's LP, once solved
        self.fixed = 0  # bounds tightened so far

    @property
    def root_bound(self) -> float | None:
        return None if self.root is None else self.root.obj

    def renew(self) -> None:
        """Fix against the incumbent's cutoff (nothing before the root LP or an incumbent)."""
        inc = self.incumbent
        with inc.lock:
            if self.root is None or self.root.rc is None or not np.isfinite(inc.value):
                return
            assert self.root.x is not None and self.root.obj is not None
            lb, ub = rc_fix(self.lb, self.ub, self.root, self.ints, inc.cutoff())
            self.fixed += int(np.sum(lb > self.lb) + np.sum(ub < self.ub))
            self.lb, self.ub = lb, ub


class PseudoCosts:
    """Objective gain per unit change of each integer column, down (row 0) and up (row 1), learnt from child
    LPs and strong branching; ``total`` and ``n`` have shape (2, n_ints)."""

    def __init__(self, n_ints: int, lock: threading.RLock) -> None:
        self.lock = lock
        self.total = np.zeros((2, n_ints))
        self.n = np.zeros((2, n_ints))

    def record(self, d: int, j: int, gain: float, frac: float) -> None:
        """One observation: moving column ``j`` by ``frac`` in direction ``d`` raised the LP by ``gain``."""
        with self.lock:
            self.total[d, j] += gain / frac
            self.n[d, j] += 1

    def learn(self, branch: tuple[int, int, float, float] | None, obj: float) -> None:
        """Update from a child's LP value ``obj``; ``branch`` is the child's (column, direction, fractionality,
        parent's LP value)."""
        if branch is None:
            return
        j, d, fr, parent = branch
        if fr > 1e-9 and np.isfinite(parent):
            self.record(d, j, max(obj - parent, 0.0), fr)

    def estimate(self, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per candidate column (shape (m,)), the pseudo-costs (shape (2, m); the average of the known ones
        where a column has none) and whether they are known (shape (2, m))."""
        known = self.n > 0
        avg = np.array([self.total[d][known[d]].sum() / max(known[d].sum(), 1) if known[d].any() else 1.0
                        for d in (0, 1)])
        pc = np.where(known[:, cand], self.total[:, cand] / np.maximum(self.n[:, cand], 1), avg[:, None])
        return pc, known[:, cand]
