"""Heuristics for positional representation and proportionality.

* ``"greedy-color"`` — the paper's colouring algorithm for
  :class:`~benchsel.formulations.PositionalRepresentation`: per (group,) alternative,
  the metrics ordered by position (ties by metric index) are cut into blocks of
  ``g``; each full block is a colour; repeatedly pick the metric carrying the
  most uncovered colours (ties: lowest index). ``cleanup=True`` then drops picked
  metrics (last picked first) whose removal keeps the subset g-representative.
* ``"greedy-multicover"`` — plain greedy multicover on the presolved covering rows: pick the
  metric in the most unsatisfied rows (ties: lowest index); optional clean-up.
* ``"sample"`` — minimum-size :class:`~benchsel.formulations.PositionalProportionality`:
  draw ``min(n, ceil(ln(2m)/eps^2))`` metrics uniformly (the upper-bound
  construction), repair (add the metric that most reduces the total excess
  deviation) until eps-proportional, then local search: drop a metric while
  the subset stays proportional; when no single drop does, drop the least
  harmful one and run a swap descent on the excess; stop when that fails.
  ``n_restarts`` seeded samples, best kept.
* ``"prop-swap"`` — fixed-size proportionality: swap descent (one metric out, one in)
  on the largest deviation (ties broken by the summed deviation) from
  ``n_restarts`` random starts.

Forced metrics (the formulation's ``include``) start every greedy and
sample, are never dropped or swapped out; on a grouped proportionality
instance ``"sample"`` runs on every group's formulation and joins the answers
(the groups do not interact).

Deviations are integers ``|C(N,T) k - C(K,T) n|`` over the distinct top-r sets
``T`` of the formulation (``cut_rows``), so comparisons are exact.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import Termination
from benchsel.formulations.core.validation import check_rng
from benchsel.formulations.proportionality import PositionalProportionality
from benchsel.formulations.representation import PositionalRepresentation

from ._common import Clock, output, progress

__all__ = ["cleanup_cover", "greedy_colour", "greedy_multicover", "sample_search", "swap_descent"]


# ====================================================================== representation
def greedy_colour(colours: list[np.ndarray], n: int, start: np.ndarray | None = None) -> np.ndarray:
    """The colouring greedy: metrics in the order picked.

    Parameters
    ----------
    colours : list of ndarray of int, each shape (c_t, g)
        Colours (blocks of ``g`` metrics), as from ``PositionalRepresentation.colours()``.
    n : int
        Number of metrics.
    start : ndarray of int, shape (s,), optional
        Metrics picked first (forced); the colours they carry start covered.

    Returns
    -------
    ndarray of int64, shape (k,)
        Picked metrics, in pick order.
    """
    C = (np.concatenate([c for c in colours if c.size], axis=0) if any(c.size for c in colours)
         else np.zeros((0, 1), np.int64))
    n_col, g = C.shape
    count = np.bincount(C.ravel(), minlength=n).astype(np.int64)  # uncovered colours per metric
    flat = C.ravel()
    order = np.argsort(flat, kind="stable")
    starts = np.searchsorted(flat[order], np.arange(n + 1))
    colour_of = order // g  # colour ids of the occurrences, grouped by metric
    covered = np.zeros(n_col, dtype=bool)
    picked: list[int] = []
    left = n_col

    def take(i: int) -> None:
        nonlocal left
        cols = colour_of[starts[i]:starts[i + 1]]
        new = cols[~covered[cols]]
        covered[new] = True
        left -= new.size
        np.subtract.at(count, C[new].ravel(), 1)
        picked.append(i)

    for i in ([] if start is None else np.asarray(start, dtype=np.int64).tolist()):
        take(int(i))
    while left > 0:
        take(int(np.argmax(count)))  # first maximum = lowest index
    return np.asarray(picked, dtype=np.int64)


def greedy_multicover(B: np.ndarray, h: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """Plain greedy for ``sum_{i in T_r} x_i >= h_r``: pick the metric in the most unsatisfied rows.

    Parameters
    ----------
    B : ndarray of bool, shape (R, n)
    h : ndarray of int, shape (R,)
    start : ndarray of int, shape (s,), optional
        Metrics picked first (forced).

    Returns
    -------
    ndarray of int64, shape (k,)
        Picked metrics, in pick order.
    """
    d = h.astype(np.int64).copy()
    Bi = B.astype(np.int64)
    avail = np.ones(B.shape[1], dtype=bool)
    picked: list[int] = []
    for i in ([] if start is None else np.asarray(start, dtype=np.int64).tolist()):
        picked.append(int(i))
        avail[i] = False
        d -= Bi[:, i]
    while (d > 0).any():
        score = (d > 0).astype(np.int64) @ Bi
        score[~avail] = -1
        i = int(np.argmax(score))
        if score[i] <= 0:  # cannot happen for a satisfiable system (K = N is feasible)
            break
        picked.append(i)
        avail[i] = False
        d -= Bi[:, i]
    return np.asarray(picked, dtype=np.int64)


def cleanup_cover(picked: np.ndarray, B: np.ndarray, h: np.ndarray, keep_always: np.ndarray | None = None
                  ) -> np.ndarray:
    """Drop picked metrics (last picked first, never those of ``keep_always``) whose removal keeps every row
    satisfied.

    Returns
    -------
    ndarray of int64, shape (k',)
        Remaining metrics, sorted.
    """
    Bi = B.astype(np.int64)
    keep = list(int(i) for i in picked)
    cov = Bi[:, keep].sum(axis=1) if keep else np.zeros(B.shape[0], np.int64)
    fixed = set() if keep_always is None else set(np.asarray(keep_always).tolist())
    for i in reversed(list(picked)):
        if int(i) not in fixed and np.all(cov - Bi[:, i] >= h):
            cov = cov - Bi[:, i]
            keep.remove(int(i))
    return np.sort(np.asarray(keep, dtype=np.int64))


_CLEANUP = Option("cleanup", False, "bool", doc="drop redundant metrics after the greedy pass")
_VERBOSE = Option("verbose", False, "bool", doc="progress lines")


@register_method(
    "greedy-color",
    kind="heuristic",
    accepts=PositionalRepresentation,
    description="the paper's greedy colouring (blocks of g metrics per alternative), optional clean-up pass",
    options=(_CLEANUP, _VERBOSE),
)
def run_greedy_colour(f: PositionalRepresentation, *, time_limit: float | None, seed: int | None, cleanup: bool,
                      verbose: bool):
    clock = Clock(time_limit)
    picked = greedy_colour(f.colours(), f.n_metrics, start=f.include)
    sel = np.sort(picked)
    extra: dict[str, Any] = {"greedy_size": int(picked.size), "cleanup": cleanup}
    if cleanup:
        B, h, _ = f.cover_rows()
        sel = cleanup_cover(picked, B, h, f.include)
        extra["cleanup_removed"] = int(picked.size - sel.size)
    progress(verbose, f"greedy-color: {picked.size} metrics picked, {sel.size} kept")
    return output(sel, clock, **extra)


@register_method(
    "greedy-multicover",
    kind="heuristic",
    accepts=PositionalRepresentation,
    description="plain greedy multicover on the presolved covering rows, optional clean-up pass",
    options=(_CLEANUP, _VERBOSE),
)
def run_greedy(f: PositionalRepresentation, *, time_limit: float | None, seed: int | None, cleanup: bool,
               verbose: bool):
    clock = Clock(time_limit)
    B, h, _ = f.cover_rows()
    picked = greedy_multicover(B, h, start=f.include)
    sel = cleanup_cover(picked, B, h, f.include) if cleanup else np.sort(picked)
    progress(verbose, f"greedy-multicover: {picked.size} metrics picked, {sel.size} kept")
    return output(sel, clock, greedy_size=int(picked.size), cleanup=cleanup)


# ===================================================================== proportionality
class _DevState:
    """Integer deviation bookkeeping over the distinct cuts of a proportionality instance."""

    def __init__(self, f: PositionalProportionality) -> None:
        B, c = f.cut_rows()
        self.B = B.astype(np.int64)
        self.c = c.astype(np.int64)
        self.n = f.n_metrics
        self.pq = (f.eps_fraction.numerator, f.eps_fraction.denominator) if f.eps_fraction is not None else None

    def dev(self, CK: np.ndarray, k: np.ndarray | int) -> np.ndarray:
        """``|c k - C_K n|``; CK shape (R,) or (R, s), k scalar or (s,)."""
        c = self.c if CK.ndim == 1 else self.c[:, None]
        return np.abs(c * k - CK * self.n)

    def excess(self, CK: np.ndarray, k: np.ndarray | int) -> np.ndarray:
        """Summed ``max(0, q dev - p n k)`` (0 iff eps-proportional); shape () or (s,)."""
        p, q = self.pq  # type: ignore[misc]
        return np.maximum(q * self.dev(CK, k) - p * self.n * k, 0).sum(axis=0)

    def minimax(self, CK: np.ndarray, k: int) -> np.ndarray:
        """``max dev * BIG + sum dev`` (lexicographic: largest, then summed deviation)."""
        d = self.dev(CK, k)
        big = int(self.c.size) * self.n * max(k, 1) + 1
        if d.shape[0] == 0:
            return np.zeros(d.shape[1:], dtype=np.int64)
        return d.max(axis=0) * big + d.sum(axis=0)


def swap_descent(st: _DevState, inK: np.ndarray, cost: Callable[[np.ndarray, int], np.ndarray], *,
                 rng: np.random.Generator, clock: Clock, max_passes: int = 1000, target: int | None = None,
                 fixed: np.ndarray | None = None) -> tuple[np.ndarray, int, int, bool]:
    """Swap search at fixed size: for each metric out (seeded order), the best metric in; take it if it lowers ``cost``.

    Parameters
    ----------
    st : _DevState
    inK : ndarray of bool, shape (n,)
        Start (modified copy returned).
    cost : callable
        ``cost(CK (R, s), k) -> (s,)`` integer costs of candidate count vectors.
    target : int, optional
        Stop as soon as the cost is ``<= target``.
    fixed : ndarray of bool, shape (n,), optional
        Metrics never swapped out (forced).

    Returns
    -------
    inK : ndarray of bool, shape (n,)
    final_cost : int
    n_swaps : int
    timed_out : bool
    """
    inK = inK.copy()
    k = int(inK.sum())
    CK = st.B[:, inK].sum(axis=1)
    cur = int(cost(CK[:, None], k)[0])
    swaps = 0
    for _ in range(max_passes):
        improved = False
        for j in rng.permutation(np.flatnonzero(inK if fixed is None else inK & ~fixed)):
            if clock.expired():
                return inK, cur, swaps, True
            if target is not None and cur <= target:
                return inK, cur, swaps, False
            out = np.flatnonzero(~inK)
            if out.size == 0:
                return inK, cur, swaps, False
            base = CK - st.B[:, j]
            cand = cost(base[:, None] + st.B[:, out], k)
            b = int(np.argmin(cand))
            if cand[b] < cur:
                i = int(out[b])
                inK[j], inK[i] = False, True
                CK = base + st.B[:, i]
                cur = int(cand[b])
                swaps += 1
                improved = True
        if not improved:
            break
    return inK, cur, swaps, False


def sample_search(f: PositionalProportionality, rng: np.random.Generator, clock: Clock, *, max_passes: int = 50,
                  start: np.ndarray | None = None,
                  verbose: bool = False) -> tuple[np.ndarray | None, dict[str, Any], bool]:
    """One sampled start, repaired and shrunk (see the module docstring).

    Returns
    -------
    selection : ndarray of int64 or None
        The smallest eps-proportional subset reached (None if the clock ran out first).
    info : dict
    timed_out : bool
    """
    st = _DevState(f)
    n, m = f.n_metrics, f.n_alternatives
    eps = float(f.eps_fraction)  # type: ignore[arg-type]
    k0 = int(min(n, math.ceil(math.log(2 * m) / eps**2)))
    fixed = np.zeros(n, dtype=bool)
    fixed[f.include] = True
    inK = fixed.copy()
    if start is None:
        free = np.flatnonzero(~fixed)
        inK[rng.choice(free, size=min(max(k0 - int(fixed.sum()), 0), free.size), replace=False)] = True
    else:
        inK[start] = True
    CK = st.B[:, inK].sum(axis=1)
    k = int(inK.sum())
    info = {"sample_size": k0, "added": 0, "dropped": 0, "swaps": 0}
    # repair
    while int(st.excess(CK, k)) > 0:
        if clock.expired():
            return None, info, True
        out = np.flatnonzero(~inK)
        ex = st.excess(CK[:, None] + st.B[:, out], k + 1)
        i = int(out[int(np.argmin(ex))])
        inK[i] = True
        CK = CK + st.B[:, i]
        k += 1
        info["added"] += 1
    best = np.flatnonzero(inK)
    # shrink
    while k > 1:
        if clock.expired():
            return best, info, True
        ins = np.flatnonzero(inK & ~fixed)
        if ins.size == 0:
            break
        cand = CK[:, None] - st.B[:, ins]
        ex = st.excess(cand, k - 1)
        feas = np.flatnonzero(ex == 0)
        if feas.size:
            mm = st.minimax(cand[:, feas], k - 1)
            j = int(ins[feas[int(np.argmin(mm))]])
            inK[j] = False
            CK = CK - st.B[:, j]
            k -= 1
            info["dropped"] += 1
            best = np.flatnonzero(inK)
            continue
        j = int(ins[int(np.argmin(ex))])
        trial = inK.copy()
        trial[j] = False
        trial, cur, sw, timed = swap_descent(st, trial, st.excess, rng=rng, clock=clock, max_passes=max_passes,
                                             target=0, fixed=fixed)
        info["swaps"] += sw
        if cur == 0:
            inK = trial
            CK = st.B[:, inK].sum(axis=1)
            k -= 1
            info["dropped"] += 1
            best = np.flatnonzero(inK)
            progress(verbose, f"sample: swaps reached an eps-proportional subset of size {k}")
            continue
        if timed:
            return best, info, True
        break
    return best, info, False


def _accepts_min_size(f: Any) -> str | None:
    if not isinstance(f, PositionalProportionality):
        return "it works on PositionalProportionality only"
    if f.size is not None:
        return "it solves the minimum-size problem; this formulation has a fixed size (use 'prop-swap')"
    return None


def _accepts_fixed_size(f: Any) -> str | None:
    if not isinstance(f, PositionalProportionality):
        return "it works on PositionalProportionality only"
    if f.size is None:
        return "it solves the fixed-size problem; build the formulation with size=k (or use 'sample')"
    return None


def _sample_groups(f: PositionalProportionality, rng: np.random.Generator, clock: Clock, max_passes: int,
                   verbose: bool) -> tuple[np.ndarray | None, dict[str, Any], bool]:
    """One :func:`sample_search` per group (one group when ungrouped), joined; None if a group gave none."""
    parts: list[np.ndarray] = []
    info: dict[str, Any] = {}
    timed = False
    groups = f.group_formulations()
    for i, (G, sub) in enumerate(groups):
        sel, inf, timed = sample_search(sub, rng, clock, max_passes=max_passes, verbose=verbose)
        info = info or inf
        if sel is None:
            return None, info, True
        parts.append(G[sel])
        if timed and i + 1 < len(groups):  # time ran out before every group had a selection
            return None, info, True
    return np.sort(np.concatenate(parts)), info, timed


@register_method(
    "sample",
    kind="heuristic",
    accepts=_accepts_min_size,
    description="sample ceil(ln(2m)/eps^2) metrics (capped at n), repair, then drop/swap local search",
    options=(
        Option("n_restarts", 5, "int", low=1, doc="independent samples"),
        Option("max_passes", 50, "int", low=1, doc="drop/swap passes per sample"),
        _VERBOSE,
    ),
)
def run_sample(f: PositionalProportionality, *, time_limit: float | None, seed: int | None, n_restarts: int,
               max_passes: int, verbose: bool):
    restarts = n_restarts
    rng = check_rng(seed)
    clock = Clock(time_limit)
    best = np.arange(f.n_metrics)  # N itself is always eps-proportional
    stopped = Termination.CONVERGED
    runs = 0
    first_info: dict[str, Any] = {}
    for r in range(restarts):
        if r and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        sel, info, timed = _sample_groups(f, rng, clock, max_passes, verbose)
        runs += 1
        first_info = first_info or info
        if sel is not None and sel.size < best.size and f.is_feasible(sel):
            best = sel
        progress(verbose, f"sample restart {r + 1}/{restarts}: size {None if sel is None else sel.size}")
        if timed:
            stopped = Termination.TIME_LIMIT
            break
    return output(best, clock, stopped=stopped, restarts=runs, sample_size=first_info.get("sample_size"))


@register_method(
    "prop-swap",
    kind="heuristic",
    accepts=_accepts_fixed_size,
    description="swap descent on the largest deviation for fixed-size proportionality, random restarts",
    options=(
        Option("n_restarts", 3, "int", low=1, doc="restarts (the first from init when given)"),
        Option("max_passes", 100, "int", low=1, doc="swap passes per restart"),
        Option("init", None, "any", doc="a start of size k (metric positions); default random"),
        _VERBOSE,
    ),
)
def run_swap(f: PositionalProportionality, *, time_limit: float | None, seed: int | None, n_restarts: int,
             max_passes: int, init: Any, verbose: bool):
    restarts = n_restarts
    if init is not None:
        init = f.as_selection(init, "init")
        if init.size != f.size:
            raise InvalidInputError(f"init: expected {f.size} metrics (the fixed size), got {init.size}")
        missing = np.setdiff1d(f.include, init)
        if missing.size:
            raise InvalidInputError(f"init: expected a start holding every forced metric (include), got one "
                                    f"missing {missing.tolist()}")
    rng = check_rng(seed)
    clock = Clock(time_limit)
    st = _DevState(f)
    fixed = np.zeros(f.n_metrics, dtype=bool)
    fixed[f.include] = True
    best, best_cost = None, None
    stopped = Termination.CONVERGED
    total_swaps = 0
    runs = 0
    for r in range(restarts):
        if r and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        inK = np.zeros(f.n_metrics, dtype=bool)
        inK[init if (init is not None and r == 0) else f.random_selection(rng)] = True
        inK, cost, sw, timed = swap_descent(st, inK, st.minimax, rng=rng, clock=clock, max_passes=max_passes,
                                            fixed=fixed)
        runs += 1
        total_swaps += sw
        if best_cost is None or cost < best_cost:
            best, best_cost = np.flatnonzero(inK), cost
        progress(verbose, f"prop-swap restart {r + 1}/{restarts}: "
                          f"largest deviation {f.evaluate(np.flatnonzero(inK)):.6g}")
        if timed:
            stopped = Termination.TIME_LIMIT
            break
    return output(best, clock, stopped=stopped, swaps=total_swaps, restarts=runs)
