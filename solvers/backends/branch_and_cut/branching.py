"""Branching (:class:`Brancher`): pseudo-costs, reliability and strong branching, and the children."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations.core.model import LazyRows

from .lp import LPRelaxation
from .nodes import Node, NodeLP, NodeQueue
from .options import BnCOptions
from .shared import Incumbent, PseudoCosts


class Brancher:
    """One search thread's branching on its LP; the pseudo-costs, the queue and the incumbent are shared.

    Parameters
    ----------
    lp : LPRelaxation
        The thread's LP (strong branching solves its children's LPs on it).
    lazy : LazyRows
        Its ``branch_scores(x)``, if any, ranks columns without pseudo-cost history.
    pseudo : PseudoCosts
    queue : NodeQueue
        Numbers the children and records the bounds of those dropped.
    incumbent : Incumbent
        Its cutoff drops children.
    counts : callable
        ``counts(*keys) -> list of int``: counters summed over every search thread (one strong-branching
        budget for the whole search).
    opt : BnCOptions
    stats : dict
        The thread's counters (``strong_*``).
    """

    def __init__(self, lp: LPRelaxation, lazy: LazyRows, pseudo: PseudoCosts, queue: NodeQueue,
                 incumbent: Incumbent, counts: Callable[..., list[int]], opt: BnCOptions,
                 stats: dict[str, Any]) -> None:
        self.lp, self.lazy, self.pseudo, self.queue, self.incumbent = lp, lazy, pseudo, queue, incumbent
        self.counts, self.opt, self.stats = counts, opt, stats
        self.ints = lp.ints

    def scores(self, lp: NodeLP, cand: np.ndarray) -> np.ndarray:
        """Branching score of fractional integer columns ``cand`` (indices into ``ints``)."""
        assert lp.x is not None
        xi = lp.x[self.ints][cand]
        f_dn = xi - np.floor(xi)
        f_up = np.ceil(xi) - xi
        pc, known = self.pseudo.estimate(cand)
        score = np.maximum(pc[0] * f_dn, 1e-6) * np.maximum(pc[1] * f_up, 1e-6)
        hint = self.lazy.branch_scores(lp.x)
        if hint is not None:
            s = np.asarray(hint, dtype=float)[cand]
            fresh = ~(known[0] & known[1])
            if fresh.any():  # no history yet: the lazy rows' own score, on the pseudo-cost scale
                base = np.median(score[~fresh]) if (~fresh).any() else 1.0
                score = np.where(fresh, base * s / max(float(np.max(s)), 1e-12) + 1e-9 * s, score)
        return score

    def branch(self, lp: NodeLP, lb: np.ndarray, ub: np.ndarray, depth: int, frac: np.ndarray) -> list[Node]:
        """Two children on the best-scoring fractional column; the side the LP value leans to first.

        A child that strong branching has already shown to be infeasible or past the cutoff is not created;
        a strong-branched column with one such side is fixed to the other in both children (all valid: a
        strong-branching LP holds only some of the node's rows, so it is a relaxation of that child).
        """
        assert lp.x is not None and lp.obj is not None
        cand = np.flatnonzero(frac & (lb < ub))
        if cand.size == 0:  # fractional columns all fixed by reduced costs: the node is done
            self.queue.prune(lp.obj)
            return []
        if self.opt.branching == "fractional":
            xi = lp.x[self.ints][cand]
            score = np.minimum(xi - np.floor(xi), np.ceil(xi) - xi)
        else:
            score = self.scores(lp, cand)
        strong = self.opt.strong > 0 and depth <= self.opt.strong_depth
        if strong and not self.strong_budget_left():
            strong = False
            self.stats["strong_skipped"] += 1
        sb: dict[int, tuple[float, float]] = {}
        if strong and self.opt.reliable > 0 and self.opt.branching == "pseudocost":
            # reliability branching: strong-branch only the best candidates whose pseudo-costs rest on fewer
            # than `reliable` observations (it records theirs), then branch by the updated pseudo-costs
            top = cand[np.argsort(-score, kind="stable")[: 2 * self.opt.strong]]
            seen = np.minimum(self.pseudo.n[0, top], self.pseudo.n[1, top])
            weak = top[seen < self.opt.reliable][: self.opt.strong]
            if weak.size:
                sb = self.strong(lp, lb, ub, weak, score[np.searchsorted(cand, weak)])[1]
                score = self.scores(lp, cand)
            j = int(cand[np.argmax(score)])
        elif strong:
            j, sb = self.strong(lp, lb, ub, cand, score)
        else:
            j = int(cand[np.argmax(score)])
        return self._children(lp, lb, ub, depth, j, sb)

    def _children(self, lp: NodeLP, lb: np.ndarray, ub: np.ndarray, depth: int, j: int,
                  sb: dict[int, tuple[float, float]]) -> list[Node]:
        """The children on column ``j``, with the reductions the strong-branching bounds ``sb`` allow."""
        assert lp.x is not None and lp.obj is not None
        xi = lp.x[self.ints]
        cutoff = self.incumbent.cutoff()
        side = {0: lp.obj, 1: lp.obj}  # the chosen column's children's bounds
        fixed = 0
        if sb:
            lb, ub = lb.copy(), ub.copy()
        for jj, (b_dn, b_up) in sb.items():
            if min(b_dn, b_up) >= cutoff:  # no child of this node can hold anything better than the cutoff
                self.queue.prune(min(b_dn, b_up))
                self.stats["strong_pruned"] += 2
                return []
            if jj == j:
                side = {0: max(lp.obj, b_dn), 1: max(lp.obj, b_up)}
            elif b_dn >= cutoff:
                lb[jj] = np.ceil(xi[jj])
                self.queue.prune(b_dn)
                fixed += 1
            elif b_up >= cutoff:
                ub[jj] = np.floor(xi[jj])
                self.queue.prune(b_up)
                fixed += 1
        self.stats["strong_fixed"] += fixed
        v = xi[j]
        up_lb, dn_ub = lb.copy(), ub.copy()
        up_lb[j] = np.ceil(v)
        dn_ub[j] = np.floor(v)
        me = threading.get_ident()
        seq = self.queue.next_seq
        up = Node(side[1], -(depth + 1), seq(), up_lb, ub, (j, 1, float(np.ceil(v) - v), lp.obj), me)
        down = Node(side[0], -(depth + 1), seq(), lb, dn_ub, (j, 0, float(v - np.floor(v)), lp.obj), me)
        kept = []
        for c in ([up, down] if v - np.floor(v) >= 0.5 else [down, up]):
            if c.bound < cutoff:
                kept.append(c)
            else:  # strong branching put this child past the cutoff
                self.queue.prune(c.bound)
                self.stats["strong_pruned"] += 1
        return kept

    def strong(self, lp: NodeLP, lb: np.ndarray, ub: np.ndarray, cand: np.ndarray, score: np.ndarray
               ) -> tuple[int, dict[int, tuple[float, float]]]:
        """Strong branching on the best-scoring candidates: both children's LPs (current rows only).

        Returns the best candidate and, per candidate, its children's LP values (down, up) where both LPs
        were solved to the end (``inf``: infeasible); those are valid bounds of the children.
        """
        assert lp.x is not None and lp.obj is not None
        h = self.lp.h
        top = cand[np.argsort(-score, kind="stable")[: self.opt.strong]]
        basis = h.getBasis()
        best_j, best_s = int(top[0]), -np.inf
        xi = lp.x[self.ints]
        cap = self.strong_iteration_cap()
        solved: dict[int, tuple[float, float]] = {}
        for j in top:
            col = int(self.lp.col_of[self.ints[j]])  # a candidate is free at the node, so still in the LP
            gains, exact = [], []
            for d in (0, 1):
                lo, hi = (lb[j], np.floor(xi[j])) if d == 0 else (np.ceil(xi[j]), ub[j])
                h.changeColBounds(col, float(lo), float(hi))
                before = self.stats["simplex_iterations"]
                st = self.lp.solve(cap)
                self.stats["strong_iterations"] += self.stats["simplex_iterations"] - before
                # cut short, dual simplex has reached a value on the way up: it ranks the candidate
                obj = self.lp.objective() if st in ("optimal", "iterations") else (
                    np.inf if st == "infeasible" else lp.obj)
                gains.append(max(obj - lp.obj, 0.0))
                if st in ("optimal", "infeasible"):  # only a finished LP bounds the child
                    exact.append(obj)
                fr = (xi[j] - np.floor(xi[j])) if d == 0 else (np.ceil(xi[j]) - xi[j])
                if st in ("optimal", "iterations") and fr > 1e-9:  # a cut-short LP: an underestimate
                    self.pseudo.record(d, int(j), gains[-1], fr)
                h.changeColBounds(col, float(lb[j]), float(ub[j]))
                h.setBasis(basis)
            if len(exact) == 2:
                solved[int(j)] = (exact[0], exact[1])
            sc = max(gains[0], 1e-6) * max(gains[1], 1e-6)
            self.stats["strong_lps"] += 2
            if sc > best_s:
                best_j, best_s = int(j), sc
        return best_j, solved

    def strong_budget_left(self) -> bool:
        """Strong branching's iterations are below its budget (``strong_share`` of the other LPs' plus
        ``strong_offset``; always without a share)."""
        share = self.opt.strong_share
        if share is None:
            return True
        used, total = self.counts("strong_iterations", "simplex_iterations")
        return used < share * (total - used) + self.opt.strong_offset

    def strong_iteration_cap(self) -> int | None:
        """Most simplex iterations of one strong-branching LP: twice the other LPs' average (at least 10)."""
        if self.opt.strong_share is None:
            return None
        total, strong, lps, strong_lps = self.counts("simplex_iterations", "strong_iterations", "lp_solves",
                                                     "strong_lps")
        return max(10, int(2 * (total - strong) / max(lps - strong_lps, 1)))
