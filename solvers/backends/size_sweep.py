"""``"size-sweep"`` and ``"auto"``: the positional problems proven by a sweep of exact CP-SAT feasibility problems.

Every positional problem becomes, for a fixed *target*, a pure feasibility
question on integer counts: is there a subset ``K`` with

    ``sum_j y_j = k``,  ``lo_T <= sum_{j in T} y_j <= hi_T`` for every row ``T``,

where ``y_j`` counts the metrics taken from class ``j`` (metrics with
identical membership in every row are interchangeable and merged into one
integer count ``0 <= y_j <= |class j|``). All bounds are exact integers taken
from the formulation, so an ``INFEASIBLE`` answer of CP-SAT is a proof.

* **Minimum-size proportionality** (:class:`~benchsel.formulations.PositionalProportionality`,
  ``size=None``): target = a size ``k``; ``[lo_T, hi_T]`` is the formulation's
  ``size_intervals(k)``. Feasibility is not monotone in ``k``, so every size
  below the incumbent must be refuted on its own: the optimum is the first
  feasible size and the bound is the smallest size not yet refuted. Schedule
  (rounds with a per-problem budget that doubles each round): a feasibility
  probe just below the incumbent (hinted with the incumbent minus its least
  useful metrics), then ascending refutations from the smallest open size; a
  size that stalls is left for the next round and the sweep goes on to the
  next ``lookahead`` sizes (interleaving), which may be feasible.
* **Fixed-size proportionality** (``size=k``, minimise the largest deviation):
  target = a threshold ``D`` on the integer deviation ``|c k - n C(K, T)|``;
  ``lo_T = ceil((c k - D) / n)``, ``hi_T = floor((c k + D) / n)``. Feasibility
  is monotone in ``D`` and the optimum is one of the finitely many values
  ``|c k - n s|``: a probe just below the incumbent alternates with
  bisection over those values, so the bound is exact too.
* **Representation** (:class:`~benchsel.formulations.PositionalRepresentation`):
  target = a size ``k``, rows ``sum_T y >= h``; monotone in ``k`` (a cover stays
  a cover when metrics are added), swept like the fixed-size case.

The upper end comes from a heuristic (``warm_start="auto"``: ``"sample"``,
``"prop-swap"`` or ``"greedy-multicover"``), optionally improved by a short
HiGHS run (``warm_start="highs"``, whose dual bound also refutes every target
below it). CP-SAT runs one worker with its LP relaxation and presolve off by
default: on these small, tightly constrained count models plain propagation
search refutes a size several times faster than the LP-based portfolio.

``"auto"`` is the default exact method of the positional formulations: it
runs the method that proved fastest per instance class (:func:`auto_choice`;
see ``docs/formulations/positional.md``).
"""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.core.clock import Clock
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.result import MethodOutput, Termination
from benchsel.formulations.core.validation import check_time_limit
from benchsel.solvers.backends.cpsat import cp_model_module
from benchsel.solvers.methods import get_method, register_method

__all__ = [
    "AUTO_REPRESENTATION_MAX_METRICS",
    "CountFeasibility",
    "MetricClasses",
    "auto_choice",
    "instance_class",
    "sweep_min_size",
    "sweep_monotone",
]

#: Statuses of one feasibility problem.
FEASIBLE, INFEASIBLE, UNKNOWN = "feasible", "infeasible", "unknown"

SWEEP_OPTIONS: tuple[Option, ...] = (
    Option("threads", 1, "int", low=1,
           doc="CP-SAT workers per feasibility problem (1: one sequential search, fastest on these models)"),
    Option("warm_start", "auto", "any",
           doc="upper end: 'auto' (the class's heuristic), 'highs' (heuristic, then a short HiGHS run), "
               "a feasible selection, or None (all metrics)"),
    Option("heuristic_share", 0.1, "float", low=0.0, high=1.0,
           doc="share of the time limit given to the warm start (heuristic and HiGHS run)"),
    Option("size_budget", 1.0, "float", low=0.0, low_open=True,
           doc="seconds of a feasibility problem's first attempt; doubled each round"),
    Option("lookahead", 2, "int", low=0, doc="sizes attempted past a stalled one in each round (minimum size)"),
    Option("linearization_level", 0, "int", low=0, high=2,
           doc="CP-SAT's LP relaxation (0: none, pure propagation search, fastest here)"),
    Option("presolve", False, "bool", doc="CP-SAT presolve (off: faster on these small models)"),
    Option("cpsat_parameters", None, "mapping", doc="raw CP-SAT parameters (name: value), applied last"),
    Option("verbose", False, "bool", doc="one progress line per feasibility problem on stderr"),
)


def _say(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"[benchsel] size-sweep: {msg}", file=sys.stderr, flush=True)


# ============================================================ merged metrics
@dataclass(frozen=True, eq=False)
class MetricClasses:
    """Metrics with identical membership in every row, merged into integer counts.

    Attributes
    ----------
    label : ndarray of int64, shape (n,)
        Class of each metric.
    members : tuple of ndarray of int64
        Metrics of each class, ascending (``J`` classes).
    mult : ndarray of int64, shape (J,)
        Class sizes.
    rows : ndarray of bool, shape (R, J)
        Row membership of each class.
    """

    label: np.ndarray
    members: tuple[np.ndarray, ...]
    mult: np.ndarray
    rows: np.ndarray

    @classmethod
    def from_rows(cls, B: np.ndarray, split: np.ndarray | None = None) -> MetricClasses:
        """Classes of the columns of the row matrix ``B`` (bool, shape (R, n)); metrics marked in ``split``
        (bool, shape (n,), e.g. the forced ones) never share a class with unmarked ones."""
        B = np.asarray(B, dtype=bool)
        n = B.shape[1]
        S = B if split is None else np.vstack([B, np.asarray(split, dtype=bool)[None, :]])
        if S.shape[0] == 0:
            label = np.zeros(n, dtype=np.int64)
        else:
            packed = np.packbits(S.T, axis=1)
            _, first, inv = np.unique(packed, axis=0, return_index=True, return_inverse=True)
            order = np.argsort(first)  # classes numbered by their first metric
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            label = rank[inv.ravel()].astype(np.int64)
        J = int(label.max()) + 1 if n else 0
        sort = np.argsort(label, kind="stable")
        bounds = np.searchsorted(label[sort], np.arange(J + 1))
        members = tuple(sort[bounds[j]:bounds[j + 1]].astype(np.int64) for j in range(J))
        mult = np.diff(bounds).astype(np.int64)
        reps = np.array([m[0] for m in members], dtype=np.int64)
        return cls(label, members, mult, B[:, reps] if B.shape[0] else np.zeros((0, J), dtype=bool))

    @property
    def n_classes(self) -> int:
        return int(self.mult.size)

    def counts(self, selection: np.ndarray) -> np.ndarray:
        """``y``: metrics of ``selection`` per class, shape (J,)."""
        return np.bincount(self.label[np.asarray(selection, dtype=np.int64)], minlength=self.n_classes)

    def selection(self, y: np.ndarray) -> np.ndarray:
        """A selection with counts ``y`` (the first ``y_j`` metrics of each class), sorted."""
        parts = [m[: int(v)] for m, v in zip(self.members, y) if v > 0]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


# ======================================================= feasibility oracle
@dataclass
class Attempt:
    """One feasibility problem: its target, budget, answer and time."""

    target: int
    budget: float
    status: str
    seconds: float
    rows: int

    def text(self) -> str:
        return f"{self.target}:{self.status}:{self.seconds:.2f}"


@dataclass
class CountFeasibility:
    """CP-SAT feasibility of ``sum y = k``, ``lo <= R y <= hi``, ``lower <= y <= mult`` (exact integers).

    Parameters
    ----------
    classes : MetricClasses
    threads, linearization_level, presolve, cpsat_parameters, seed
        CP-SAT settings.
    lower : ndarray of int64, shape (J,), optional
        Least count per class (default 0; a class of forced metrics has ``lower = mult``).
    attempts : list of Attempt
        The solves made so far.
    """

    classes: MetricClasses
    lower: np.ndarray | None = None
    threads: int = 1
    linearization_level: int = 0
    presolve: bool = False
    cpsat_parameters: dict[str, Any] | None = None
    seed: int | None = 0
    attempts: list[Attempt] = field(default_factory=list)

    def __post_init__(self) -> None:
        R = self.classes.rows
        low = np.zeros(self.classes.n_classes, np.int64) if self.lower is None else np.asarray(self.lower, np.int64)
        self._low = low
        self._cap = (R.astype(np.int64) @ self.classes.mult) if R.shape[0] else np.zeros(0, np.int64)
        self._floor = (R.astype(np.int64) @ low) if R.shape[0] else np.zeros(0, np.int64)
        self._idx = [np.flatnonzero(r).tolist() for r in R]
        self._n = int(self.classes.mult.sum())
        self._nlow = int(low.sum())

    def implied(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds on every row implied by ``sum y = k`` and ``lower <= y <= mult`` alone, shape (R,) each."""
        return (np.maximum(self._floor, k - (self._n - self._cap)),
                np.minimum(self._cap, k - (self._nlow - self._floor)))

    def solve(self, k: int, lo: np.ndarray, hi: np.ndarray, budget: float | None,
              hint: np.ndarray | None = None, target: int | None = None) -> tuple[str, np.ndarray | None]:
        """Answer one feasibility problem; returns ``(status, y)`` (``y`` for a feasible one) and logs it
        under ``target`` (default ``k``)."""
        tag = int(k if target is None else target)
        t0 = time.perf_counter()
        ilo, ihi = self.implied(k)
        lo = np.maximum(np.asarray(lo, dtype=np.int64), ilo)
        hi = np.minimum(np.asarray(hi, dtype=np.int64), ihi)
        if not self._nlow <= k <= self._n or (lo > hi).any():  # an empty interval: no solver needed
            self.attempts.append(Attempt(tag, budget or 0.0, INFEASIBLE, time.perf_counter() - t0, 0))
            return INFEASIBLE, None
        keep = np.flatnonzero((lo > ilo) | (hi < ihi))
        if budget is not None and budget <= 0:
            self.attempts.append(Attempt(tag, 0.0, UNKNOWN, 0.0, int(keep.size)))
            return UNKNOWN, None
        cp_model = cp_model_module("size-sweep")
        cm = cp_model.CpModel()
        proto = cm.proto
        J = self.classes.n_classes
        for lw, u in zip(self._low.tolist(), self.classes.mult.tolist()):
            proto.variables.add().domain.extend([int(lw), int(u)])
        card = proto.constraints.add().linear
        card.vars.extend(range(J))
        card.coeffs.extend([1] * J)
        card.domain.extend([int(k), int(k)])
        lo_l, hi_l = lo.tolist(), hi.tolist()
        for r in keep.tolist():
            ct = proto.constraints.add().linear
            idx = self._idx[r]
            ct.vars.extend(idx)
            ct.coeffs.extend([1] * len(idx))
            ct.domain.extend([lo_l[r], hi_l[r]])
        if hint is not None:
            proto.solution_hint.vars.extend(range(J))
            proto.solution_hint.values.extend(int(v) for v in hint)
        solver = cp_model.CpSolver()
        prm = solver.parameters
        if budget is not None:
            prm.max_time_in_seconds = max(float(budget), 1e-3)
        prm.num_workers = int(self.threads)
        prm.random_seed = int(self.seed or 0) % 2147483647
        prm.linearization_level = int(self.linearization_level)
        prm.cp_model_presolve = bool(self.presolve)
        for name, v in (self.cpsat_parameters or {}).items():
            if not hasattr(prm, name):
                raise InvalidInputError(f"cpsat_parameters: CP-SAT has no parameter {name!r}")
            setattr(prm, name, v)
        status = solver.solve(cm)
        if status == cp_model.MODEL_INVALID:  # pragma: no cover - the model is built from checked integers
            raise RuntimeError(f"CP-SAT rejected the feasibility model: {cm.validate()}")
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            st, y = FEASIBLE, np.asarray(list(solver.response_proto.solution), dtype=np.int64)[:J]
        elif status == cp_model.INFEASIBLE:
            st, y = INFEASIBLE, None
        else:
            st, y = UNKNOWN, None
        self.attempts.append(Attempt(tag, budget or math.inf, st, time.perf_counter() - t0, int(keep.size)))
        return st, y


# ================================================================= clock
class _Clock(Clock):
    """The heuristics' wall-clock budget, plus the budget of one feasibility problem."""

    def expired(self) -> bool:
        return self.limit is not None and self.elapsed >= self.limit - 0.01

    def budget(self, b: float | None) -> float | None:
        """``b`` seconds, or what is left of the limit when that is less."""
        if self.limit is None:
            return b
        left = self.limit - self.elapsed
        return left if b is None else min(b, left)


# ========================================================== minimum size
def sweep_min_size(feasible_at: Callable[[int, float | None, np.ndarray | None], tuple[str, np.ndarray | None]],
                   sizes: np.ndarray, incumbent: int, clock: _Clock, *, size_budget: float, lookahead: int,
                   hint_for: Callable[[int, np.ndarray | None], np.ndarray | None], verbose: bool = False
                   ) -> tuple[int, np.ndarray | None, list[int], list[int]]:
    """Refute or find every size below the incumbent (feasibility need not be monotone).

    Parameters
    ----------
    feasible_at : callable
        ``(k, budget, hint) -> (status, y)``.
    sizes : ndarray of int, shape (s,)
        Sizes still to decide (ascending; every other size below the incumbent is known infeasible).
    incumbent : int
        Size of the best feasible selection known.
    hint_for : callable
        ``(k, y) -> hint``: counts near a solution of size ``k`` (``y``: counts of the sweep's best
        solution so far, None before it finds one), for the probe below the incumbent.

    Returns
    -------
    incumbent : int
    y : ndarray or None
        Counts of a feasible selection of size ``incumbent`` found by the sweep (None: the given one).
    open_sizes : list of int
        Sizes below ``incumbent`` neither refuted nor found feasible (empty: proven optimal).
    refuted : list of int
    """
    open_ = [int(k) for k in sizes if k < incumbent]
    refuted: list[int] = []
    tried: dict[int, float] = {}
    best_y: np.ndarray | None = None
    b = float(size_budget)

    def run(k: int, hint: np.ndarray | None) -> str:
        nonlocal incumbent, open_, best_y
        bud = clock.budget(b)
        st, y = feasible_at(k, bud, hint)
        tried[k] = b if bud is None or bud >= b else -1.0  # a clipped attempt does not count as tried at b
        if st == FEASIBLE:
            incumbent, best_y = k, y
            open_ = [s for s in open_ if s < k]
        elif st == INFEASIBLE:
            open_.remove(k)
            refuted.append(k)
        lowest = open_[0] if open_ else incumbent
        _say(verbose, f"size {k} {st} ({b:g} s budget); incumbent {incumbent}, bound {lowest}, "
                      f"{clock.elapsed:.2f} s")
        return st

    while open_ and not clock.expired():
        top = open_[-1]
        if tried.get(top, 0.0) < b:  # the probe just below the incumbent
            if run(top, hint_for(top, best_y)) == FEASIBLE:
                continue
        stalls, found = 0, False
        for k in list(open_):
            if clock.expired() or k not in open_:
                break
            if tried.get(k, 0.0) >= b:
                continue
            st = run(k, None)
            if st == FEASIBLE:
                found = True
                break
            if st == UNKNOWN:
                stalls += 1
                if stalls > lookahead:
                    break
        if not found and open_ and all(tried.get(k, 0.0) >= b for k in open_[: lookahead + 1]):
            b *= 2.0
    return incumbent, best_y, open_, refuted


# ============================================================ monotone case
def sweep_monotone(feasible_at: Callable[[int, float | None], tuple[str, int | None, np.ndarray | None]],
                   n_values: int, lo: int, hi: int, clock: _Clock, *, size_budget: float, verbose: bool = False,
                   label: Callable[[int], str] = str) -> tuple[int, int, np.ndarray | None]:
    """Close ``[lo, hi]`` over candidate values where feasibility is monotone (feasible at ``v`` => at ``v' > v``).

    Parameters
    ----------
    feasible_at : callable
        ``(index, budget) -> (status, index of the found solution's value, y)``.
    n_values : int
        Number of candidate values (indices ``0 .. n_values - 1``, ascending).
    lo : int
        Every index below ``lo`` is known infeasible.
    hi : int
        Index of the incumbent's value (feasible).

    Returns
    -------
    lo, hi : int
        ``lo == hi``: proven optimal; else the smallest index not refuted and the incumbent's.
    y : ndarray or None
        Counts of the best solution found by the sweep (None: the given incumbent).
    """
    tried: dict[int, float] = {}
    b = float(size_budget)
    best_y: np.ndarray | None = None
    below = True  # alternate: the probe just below the incumbent, then a bisection point
    while lo < hi and not clock.expired():
        idx = None
        if below and tried.get(hi - 1, 0.0) < b:
            idx = hi - 1
        else:
            a, z = lo, hi - 1
            while a < z:
                mid = (a + z) // 2
                if tried.get(mid, 0.0) < b:
                    idx = mid
                    break
                z = mid  # stalled there: a lower value is easier to refute
            if idx is None and tried.get(hi - 1, 0.0) < b:
                idx = hi - 1
        below = not below
        if idx is None:
            b *= 2.0
            continue
        bud = clock.budget(b)
        st, at, y = feasible_at(idx, bud)
        tried[idx] = b if bud is None or bud >= b else -1.0
        if st == FEASIBLE:
            hi, best_y = int(at), y  # type: ignore[arg-type]
            below = True
        elif st == INFEASIBLE:
            lo = idx + 1
        _say(verbose, f"target {label(idx)} {st} ({b:g} s budget); incumbent {label(hi)}, "
                      f"bound {label(min(lo, hi))}, {clock.elapsed:.2f} s")
    return lo, hi, best_y


# ================================================================= helpers
def _run(f: Any, method: str, **kw: Any) -> np.ndarray | None:
    """The selection of a registered heuristic's run on ``f``, None when it is not feasible."""
    out = get_method(method).run(f, **kw)
    if out.selection is None:
        return None
    sel = f.as_selection(out.selection)
    return sel if f.is_feasible(sel) else None


def instance_class(f: Any) -> str | None:
    """``"min-size"``, ``"fixed-size"`` or ``"representation"`` from the formulation's counting rows
    (``numerical_properties.counting``; None: not a counting problem the sweep reads)."""
    counting = f.numerical_properties.counting
    if counting == "proportional":
        return "min-size" if f.size is None else "fixed-size"
    if counting == "cover":
        return "representation"
    return None


def _accepts(f: Any) -> str | None:
    if instance_class(f) is None:
        return ("it works on PositionalProportionality (minimum size, or fixed size) and PositionalRepresentation "
                "only")
    return None


def _excess(B: np.ndarray, c: np.ndarray, n: int, p: int, q: int, CK: np.ndarray, k: int) -> np.ndarray:
    """Summed ``max(0, q |c k - C_K n| - p n k)`` over the rows; CK shape (R, s) -> (s,)."""
    return np.maximum(q * np.abs(c[:, None] * k - CK * n) - p * n * k, 0).sum(axis=0)


def _shrink(f: Any, sel: np.ndarray, k: int) -> np.ndarray:
    """Drop metrics of ``sel`` (one at a time, the one whose removal leaves the least excess) down to ``k``."""
    B, c = f.cut_rows()
    p, q = f.eps_fraction.numerator, f.eps_fraction.denominator
    Bi = B.astype(np.int64)
    forced = set(f.include.tolist())
    K = [int(i) for i in sel if int(i) in forced]  # forced metrics stay
    free = [int(i) for i in sel if int(i) not in forced]
    CK = Bi[:, K + free].sum(axis=1) if B.shape[0] else np.zeros(0, np.int64)
    while free and len(K) + len(free) > max(k, 1):
        if not B.shape[0]:
            free.pop()
            continue
        cand = CK[:, None] - Bi[:, free]
        j = int(np.argmin(_excess(B, c, f.n_metrics, p, q, cand, len(K) + len(free) - 1)))
        CK = cand[:, j]
        free.pop(j)
    return np.sort(np.asarray(K + free, dtype=np.int64))


def _warm_start(f: Any, cls: str, ws: Any, clock: _Clock, share: float, seed: int | None,
                verbose: bool) -> tuple[np.ndarray, str, float | None]:
    """The upper end: (selection, source, bound from HiGHS or None)."""

    n = f.n_metrics
    budget = None if clock.limit is None else share * clock.limit
    if ws is None:
        if cls == "fixed-size":
            return np.arange(int(f.size)), "first metrics", None
        return np.arange(n), "all metrics", None
    if not isinstance(ws, str):
        sel = f.as_selection(ws, "warm_start")
        if not f.is_feasible(sel):
            why = "; ".join(f.check(sel).reasons[:2])
            raise InvalidInputError(f"warm_start: expected a feasible selection (the sweep's upper end), got one "
                                    f"that is not: {why}")
        return sel, "given", None
    if ws not in ("auto", "highs"):
        raise InvalidInputError(f"warm_start: expected 'auto', 'highs', a selection or None, got {ws!r}")
    tl = None if budget is None else max(budget * (0.5 if ws == "highs" else 1.0), 0.01)
    if cls == "min-size":
        best, source = _run(f, "sample", time_limit=tl, seed=seed), "sample"
    elif cls == "fixed-size":
        best, source = _run(f, "prop-swap", time_limit=tl, seed=seed), "prop-swap"
    else:
        runs = [(name, _run(f, name, time_limit=None, seed=seed, cleanup=True))
                for name in ("greedy-multicover", "greedy-color")]
        name, best = min(((n, sel) for n, sel in runs if sel is not None), key=lambda r: f.evaluate(r[1]),
                         default=(None, None))
        source = f"{name} + clean-up"
    if best is None:  # the heuristics always return a feasible selection; N is the fallback
        best, source = (np.arange(n), "all metrics") if cls != "fixed-size" else (np.arange(int(f.size)), "first")
    _say(verbose, f"warm start {source}: objective {f.evaluate(best):g} ({clock.elapsed:.2f} s)")
    bound = None
    if ws == "highs" and not clock.expired():
        left = clock.left
        tl2 = None if budget is None or left is None else max(min(budget - clock.elapsed, left), 0.01)
        h = get_method("highs").run(f, time_limit=tl2, seed=seed, warm_start=best)
        sel = None if h.selection is None else f.as_selection(h.selection)
        if sel is not None and f.is_feasible(sel) and f.evaluate(sel) < f.evaluate(best):  # all minimise
            best, source = sel, f"{source} + highs"
        bound = h.bound
        _say(verbose, f"highs: objective {f.evaluate(best):g}, bound {bound} ({clock.elapsed:.2f} s)")
    return best, source, bound


# ================================================================ the method
@register_method(
    "size-sweep",
    kind="exact",
    accepts=_accepts,
    description="positional problems proven by a sweep of exact CP-SAT feasibility problems (one per size or "
                "deviation threshold), duplicate metrics merged, heuristic upper end",
    options=SWEEP_OPTIONS,
)
def run_size_sweep(f: Any, *, time_limit: float | None, seed: int | None, threads: int, warm_start: Any,
                   heuristic_share: float, size_budget: float, lookahead: int, linearization_level: int,
                   presolve: bool, cpsat_parameters: dict[str, Any] | None, verbose: bool) -> MethodOutput:
    time_limit = check_time_limit(time_limit)
    why = _accepts(f)
    if why is not None:
        raise InvalidInputError(f"formulation: method 'size-sweep' does not accept a {type(f).__name__}: {why}")
    cls = instance_class(f)
    assert cls is not None
    if cls == "min-size" and f.groups is not None:
        return _run_groups(f, time_limit=time_limit, seed=seed, threads=threads, warm_start=warm_start,
                           heuristic_share=heuristic_share, size_budget=size_budget, lookahead=lookahead,
                           linearization_level=linearization_level, presolve=presolve,
                           cpsat_parameters=cpsat_parameters, verbose=verbose)
    clock = _Clock(time_limit)
    if cls == "representation":
        B, _h, _ = f.cover_rows()
    else:
        B, _c = f.cut_rows()
    forced = np.zeros(f.n_metrics, dtype=bool)
    forced[f.include] = True
    classes = MetricClasses.from_rows(B, split=forced)
    lower = classes.counts(f.include)  # forced classes hold forced metrics only: all of them are taken
    oracle = CountFeasibility(classes, lower=lower, threads=threads, linearization_level=linearization_level,
                              presolve=presolve, cpsat_parameters=cpsat_parameters, seed=seed)
    inc_sel, source, hbound = _warm_start(f, cls, warm_start, clock, heuristic_share, seed, verbose)
    prep = clock.elapsed
    extra: dict[str, Any] = {"instance_class": cls, "warm_start_source": source, "n_metric_classes": classes.n_classes,
                             "n_rows": int(B.shape[0]), "warm_start_objective": float(f.evaluate(inc_sel)),
                             "threads": threads}
    if cls == "min-size":
        sel, term, bound = _run_min_size(f, oracle, classes, inc_sel, hbound, clock, size_budget, lookahead,
                                         verbose, extra)
    elif cls == "fixed-size":
        sel, term, bound = _run_fixed_size(f, oracle, classes, inc_sel, hbound, clock, size_budget, verbose, extra)
    else:
        sel, term, bound = _run_representation(f, oracle, classes, inc_sel, hbound, clock, size_budget, verbose,
                                               extra)
    att = oracle.attempts
    extra.update({
        "n_feasibility_problems": len(att),
        "cpsat_seconds": float(sum(a.seconds for a in att)),
        "slowest_problem_seconds": float(max((a.seconds for a in att), default=0.0)),
        "attempts": " ".join(a.text() for a in att),
    })
    return MethodOutput(sel, term, bound, prep, clock.elapsed - prep, extra)


def _run_groups(f: Any, *, time_limit: float | None, **kw: Any) -> MethodOutput:
    """Grouped minimum-size proportionality: the groups do not interact, so every group's formulation is swept
    on its own (each with an equal share of the time left) and the answers joined; optimal when every group's
    is, the bound the sum of the groups' bounds."""
    clock = _Clock(time_limit)
    parts = f.group_formulations()
    ws = kw.pop("warm_start")
    local = None if ws is None or isinstance(ws, str) else f.split_selection(ws)
    sels, bound, term, attempts, prep = [], 0.0, Termination.OPTIMAL, [], 0.0
    for t, (G, sub) in enumerate(parts):
        left = clock.left
        tl = None if left is None else max(left / (len(parts) - t), 0.01)
        sub_ws = ws if local is None else local[t]
        out = run_size_sweep(sub, time_limit=tl, warm_start=sub_ws, **kw)
        sels.append(G[out.selection])
        bound += float(out.bound)
        prep += out.build_seconds
        attempts.append(f"group{t}[{out.extra.get('attempts', '')}]")
        if out.termination != Termination.OPTIMAL:
            term = Termination.TIME_LIMIT
    extra = {"instance_class": "min-size", "n_groups": len(parts), "attempts": " ".join(attempts)}
    return MethodOutput(np.sort(np.concatenate(sels)), term, bound, prep, clock.elapsed - prep, extra)


def _run_min_size(f: Any, oracle: CountFeasibility, classes: MetricClasses, inc_sel: np.ndarray,
                  hbound: float | None, clock: _Clock, size_budget: float, lookahead: int, verbose: bool,
                  extra: dict[str, Any]) -> tuple[np.ndarray, Termination, float]:
    sizes = f.admissible_sizes()
    if hbound is not None and math.isfinite(hbound):
        sizes = sizes[sizes >= math.ceil(hbound - 1e-6)]  # HiGHS' dual bound refutes every smaller size

    def feasible_at(k: int, budget: float | None, hint: np.ndarray | None) -> tuple[str, np.ndarray | None]:
        lo, hi = f.size_intervals(k)
        return oracle.solve(k, lo, hi, budget, hint)

    def hint_for(k: int, y: np.ndarray | None) -> np.ndarray:
        return classes.counts(_shrink(f, inc_sel if y is None else classes.selection(y), k))

    inc, y, open_, refuted = sweep_min_size(feasible_at, sizes, int(inc_sel.size), clock, size_budget=size_budget,
                                            lookahead=lookahead, hint_for=hint_for, verbose=verbose)
    sel = classes.selection(y) if y is not None else inc_sel
    extra["sizes_refuted"] = " ".join(map(str, sorted(refuted)))
    extra["sizes_open"] = " ".join(map(str, open_))
    extra["smallest_admissible_size"] = int(f.admissible_sizes()[0])
    bound = float(open_[0]) if open_ else float(inc)
    return sel, Termination.OPTIMAL if not open_ else Termination.TIME_LIMIT, bound


def _deviation_values(f: Any) -> tuple[np.ndarray, int]:
    """Candidate values of the largest integer deviation ``max_T |c k - n C(K, T)|``, ascending, and its
    lower bound ``max_T min_s |c k - n s|``."""
    c = f.cut_rows()[1]
    n, k = f.n_metrics, int(f.size)
    if c.size == 0:
        return np.zeros(1, dtype=np.int64), 0
    smin, smax = np.maximum(0, c - n + k), np.minimum(k, c)
    s = smin[:, None] + np.arange(k + 1)[None, :]
    ok = s <= smax[:, None]
    dev = np.abs(c[:, None] * k - n * s)
    d0 = int(np.where(ok, dev, np.iinfo(np.int64).max).min(axis=1).max())
    vals = np.unique(dev[ok])
    return vals[vals >= d0], d0


def _run_fixed_size(f: Any, oracle: CountFeasibility, classes: MetricClasses, inc_sel: np.ndarray,
                    hbound: float | None, clock: _Clock, size_budget: float, verbose: bool,
                    extra: dict[str, Any]) -> tuple[np.ndarray, Termination, float]:
    c = f.cut_rows()[1]
    n, k = f.n_metrics, int(f.size)
    scale = n * k
    V, d0 = _deviation_values(f)
    Bc = classes.rows.astype(np.int64)

    def dev_of(y: np.ndarray) -> int:
        return int(np.abs(c * k - n * (Bc @ y)).max()) if c.size else 0

    inc_val = dev_of(classes.counts(inc_sel))
    hi = int(np.searchsorted(V, inc_val))
    lo = 0
    if hbound is not None and math.isfinite(hbound):
        lo = min(int(np.searchsorted(V, hbound * scale - 1e-6)), hi)

    def feasible_at(i: int, budget: float | None) -> tuple[str, int | None, np.ndarray | None]:
        D = int(V[i])
        lo_r = -((D - c * k) // n)  # ceil((c k - D) / n)
        hi_r = (c * k + D) // n
        st, y = oracle.solve(k, lo_r, hi_r, budget, best[0], target=D)
        if y is not None:
            best[0] = y
        return st, (None if y is None else int(np.searchsorted(V, dev_of(y)))), y

    best = [classes.counts(inc_sel)]  # hint: the incumbent's counts

    lo, hi, y = sweep_monotone(feasible_at, V.size, lo, hi, clock, size_budget=size_budget, verbose=verbose,
                               label=lambda i: f"{int(V[min(i, V.size - 1)])}/{scale}")
    sel = classes.selection(y) if y is not None else inc_sel
    extra.update({"deviation_candidates": int(V.size), "deviation_lower_bound": d0 / scale,
                  "deviation_scale": scale})
    return sel, Termination.OPTIMAL if lo >= hi else Termination.TIME_LIMIT, float(V[min(lo, hi)]) / scale


def _run_representation(f: Any, oracle: CountFeasibility, classes: MetricClasses, inc_sel: np.ndarray,
                        hbound: float | None, clock: _Clock, size_budget: float, verbose: bool,
                        extra: dict[str, Any]) -> tuple[np.ndarray, Termination, float]:
    h = f.cover_rows()[1]
    k0 = max(int(f.lower_bound()), 1 if h.size else 0)
    if hbound is not None and math.isfinite(hbound):
        k0 = max(k0, math.ceil(hbound - 1e-6))
    inc = int(inc_sel.size)
    k0 = min(k0, inc)
    big = np.full(h.size, np.iinfo(np.int32).max, dtype=np.int64)

    def feasible_at(i: int, budget: float | None) -> tuple[str, int | None, np.ndarray | None]:
        st, y = oracle.solve(k0 + i, h, big, budget)
        return st, (None if y is None else int(y.sum()) - k0), y

    lo, hi, y = sweep_monotone(feasible_at, inc - k0 + 1, 0, inc - k0, clock, size_budget=size_budget,
                               verbose=verbose, label=lambda i: str(k0 + i))
    sel = classes.selection(y) if y is not None else inc_sel
    return sel, Termination.OPTIMAL if lo >= hi else Termination.TIME_LIMIT, float(k0 + min(lo, hi))


# ==================================================================== auto
#: Representation instances with at most this many metrics go to ``"size-sweep"``, larger ones to ``"highs"``.
AUTO_REPRESENTATION_MAX_METRICS = 40


def auto_choice(f: Any) -> str:
    """The exact method ``"auto"`` runs on ``f``: the fastest to proof for its instance class.

    Measured with ``python -m benchsel.benchmarks.studies.positional --compare`` (see
    ``docs/formulations/positional.md``): on minimum-size and fixed-size proportionality the LP bound
    is useless (spreading ``x = k/n`` satisfies every row once ``k eps >= 1``) and ``"size-sweep"``
    proves every real table, HiGHS and CP-SAT's portfolio do not; on representation
    ``"size-sweep"`` is faster on the real tables (at most 30 metrics) but HiGHS' set-cover LP
    bound wins from 60 metrics on (synthetic Mallows profiles), hence the cut at
    :data:`AUTO_REPRESENTATION_MAX_METRICS`.
    """
    cls = instance_class(f)
    if cls is None:
        raise InvalidInputError(f"formulation: method 'auto' does not accept a {type(f).__name__}: {_accepts(f)}")
    if cls == "representation" and f.n_metrics > AUTO_REPRESENTATION_MAX_METRICS:
        return "highs"
    return "size-sweep"


AUTO_OPTIONS: tuple[Option, ...] = (
    Option("threads", None, "int", low=1, doc="solver threads (None: the chosen method's default)"),
    Option("verbose", False, "bool", doc="progress of the chosen method"),
    Option("warm_start", "auto", "any", doc="a selection, 'auto' or None, passed to the chosen method"),
)


@register_method(
    "auto",
    kind="exact",
    accepts=_accepts,
    description="the default exact method of the positional formulations: size-sweep, or highs on representation "
                f"instances with more than {AUTO_REPRESENTATION_MAX_METRICS} metrics (the fastest to proof per class)",
    options=AUTO_OPTIONS,
)
def run_auto(f: Any, *, time_limit: float | None, seed: int | None, threads: int | None, verbose: bool,
             warm_start: Any) -> MethodOutput:
    name = auto_choice(f)
    kw: dict[str, Any] = {"verbose": verbose, "warm_start": warm_start}
    if threads is not None:
        kw["threads"] = threads
    out = get_method(name).run(f, time_limit=time_limit, seed=seed, **kw)
    out.extra["auto_method"] = name
    return out
