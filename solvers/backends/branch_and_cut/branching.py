"""Branching: pseudo-costs and strong branching (bound as methods of :class:`~.search.BranchAndCut`)."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from .state import _Node, _NodeLP

if TYPE_CHECKING:
    from .search import BranchAndCut


def _learn(self: BranchAndCut, node: _Node, obj: float) -> None:
    """Pseudo-cost update from a child's LP value."""
    if node.branch is None:
        return
    j, d, fr, parent = node.branch
    if fr > 1e-9 and np.isfinite(parent):
        with self.sh.lock:
            self.pc_sum[d, j] += max(obj - parent, 0.0) / fr
            self.pc_n[d, j] += 1


def _scores(self: BranchAndCut, lp: _NodeLP, cand: np.ndarray) -> np.ndarray:
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
    hint = self.lazy.branch_scores(lp.x)
    if hint is not None:
        s = np.asarray(hint, dtype=float)[cand]
        fresh = ~(known[0, cand] & known[1, cand])
        if fresh.any():  # no history yet: the lazy rows' own score, on the pseudo-cost scale
            base = np.median(score[~fresh]) if (~fresh).any() else 1.0
            score = np.where(fresh, base * s / max(float(np.max(s)), 1e-12) + 1e-9 * s, score)
    return score


def _branch(self: BranchAndCut, lp: _NodeLP, lb: np.ndarray, ub: np.ndarray, depth: int,
            frac: np.ndarray) -> list[_Node]:
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


def _strong(self: BranchAndCut, lp: _NodeLP, lb: np.ndarray, ub: np.ndarray, cand: np.ndarray, score: np.ndarray
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


def _strong_budget_left(self: BranchAndCut) -> bool:
    """Strong branching's iterations are below its budget (``strong_share`` of the other LPs' plus
    ``strong_offset``; always without a share)."""
    share = self.opt.strong_share
    if share is None:
        return True
    used, total = self._counts("strong_iterations", "simplex_iterations")
    return used < share * (total - used) + self.opt.strong_offset


def _strong_iteration_cap(self: BranchAndCut) -> int | None:
    """Most simplex iterations of one strong-branching LP: twice the other LPs' average (at least 10)."""
    if self.opt.strong_share is None:
        return None
    total, strong, lps, strong_lps = self._counts("simplex_iterations", "strong_iterations", "lp_solves",
                                                  "strong_lps")
    return max(10, int(2 * (total - strong) / max(lps - strong_lps, 1)))
