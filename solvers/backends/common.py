"""Plumbing shared by the exact backends: options, time budget, warm start, model build, incumbents.

Every exact backend's runner is a thin call of :func:`run_exact`, which

1. starts one wall-clock :class:`Budget` for the whole call (``time_limit``
   covers the warm start, the model build and the solve);
2. resolves the warm start (``warm_start="auto"``: the heuristic named by the
   formulation's ``numerical_properties.warm_start`` run on its share of the budget, else the
   formulation's :meth:`~benchsel.formulations.base.Formulation.initial_selection`)
   and checks it with the formulation;
3. builds the neutral :class:`~benchsel.formulations.core.model.LinearModel` within
   the budget (a build still running at the limit is abandoned: the call
   returns the warm start with termination ``"time_limit"``);
4. hands an :class:`ExactRun` to the backend's solve step, which returns a
   :class:`SolveStep`;
5. keeps the better of the solver's selection and the warm start, both judged
   by the formulation (never by the backend), and lets the one judge of claims
   (:func:`benchsel.solvers.claims.judge`) decide the termination and bound from
   the solver's raw status, bound and reported tolerances.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError, SolverNotInstalledError
from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.properties import NumericalProperties
from benchsel.formulations.core.result import MethodOutput, Termination, Tolerances
from benchsel.solvers.claims import judge
from benchsel.solvers.methods import get_method

__all__ = [
    "COMMON_OPTIONS",
    "Budget",
    "ExactRun",
    "SolveStep",
    "call_with_deadline",
    "formulation_bound",
    "highs_status_map",
    "highspy_module",
    "linear_acceptor",
    "pass_to_highs",
    "remaining",
    "run_exact",
    "true_key",
    "wall_grace",
    "widen_redundant_bounds",
]

#: Options every exact backend takes.
COMMON_OPTIONS: tuple[Option, ...] = (
    Option("mip_rel_gap", 1e-6, "float", low=0.0, high=1.0, high_open=True,
           doc="relative gap at which the solver may stop and call the incumbent optimal"),
    Option("mip_abs_gap", 0.0, "float", low=0.0,
           doc="absolute gap at which the solver may stop (units of the unit-scaled model the solver sees; "
               "0: the relative gap alone decides)"),
    Option("threads", None, "int", low=1, doc="solver threads (None: the backend's default)"),
    Option("verbose", False, "bool", doc="stream the solver's log (progress on long runs)"),
    Option("warm_start", "auto", "any",
           doc="a selection (item indices), 'auto' (the formulation's warm-start heuristic or "
               "initial_selection) or None"),
)

#: Backends that read a model with a quadratic objective: method name -> (label, "usable here?")
_QUADRATIC_BACKENDS: dict[str, tuple[str, Callable[[], bool]]] = {}


def module_available(name: str) -> bool:
    """Is the module ``name`` importable (without importing it)?"""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def quadratic_backends() -> list[str]:
    """The backends that take a quadratic objective and are usable on this machine (labels for messages)."""
    return [label for label, usable in _QUADRATIC_BACKENDS.values() if usable()]


def _takers() -> str:
    takers = quadratic_backends()
    return ", ".join(takers) if takers else "(none installed: pip install pyscipopt, or benchsel[scip])"


def linear_acceptor(backend: str):
    """Acceptor for backends that read a :class:`LinearModel` without a quadratic objective."""

    def accepts(f: Any) -> str | None:
        if not getattr(f, "is_linear", False):
            if getattr(f, "quadratic_statement", False):
                return (f"{type(f).__name__} is stated with a quadratic objective (a mixed-integer quadratic "
                        f"program) and {backend} reads mixed-integer linear models only; backends that take it: "
                        f"{_takers()}")
            reason = getattr(f, "not_linear_reason", None) or "it has no linear statement"
            return f"{reason} ({backend} reads mixed-integer linear models only)"
        return None

    return accepts


# --------------------------------------------------------------------------- HiGHS (several backends use it)
_BANNER_DONE = False


def highspy_module() -> Any:
    """``highspy``, imported on first use (with HiGHS' one-time stdout banner silenced)."""
    global _BANNER_DONE
    try:
        import highspy
    except ImportError as e:  # pragma: no cover - highspy is a base dependency
        raise SolverNotInstalledError(
            f"method 'highs' needs the package 'highspy', which is not installed ({e}); pip install highspy"
        ) from None
    if not _BANNER_DONE:  # HiGHS prints a banner on stdout once per process: keep stdout clean for tables
        _BANNER_DONE = True
        try:
            sys.stdout.flush()
            saved = os.dup(1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            try:
                highspy.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(devnull)
        except OSError:  # no file descriptors to juggle (embedded interpreters): let it print
            pass
    return highspy


def highs_status_map(hp: Any) -> dict[Any, Termination]:
    """HiGHS' model statuses as terminations."""
    S = hp.HighsModelStatus
    return {
        S.kOptimal: Termination.OPTIMAL,
        S.kTimeLimit: Termination.TIME_LIMIT,
        S.kIterationLimit: Termination.ITERATION_LIMIT,
        S.kSolutionLimit: Termination.SOLUTION_LIMIT,
        S.kObjectiveBound: Termination.OBJECTIVE_LIMIT,
        S.kObjectiveTarget: Termination.OBJECTIVE_LIMIT,
        S.kInfeasible: Termination.INFEASIBLE,
        S.kUnbounded: Termination.UNBOUNDED,
        S.kUnboundedOrInfeasible: Termination.INFEASIBLE_OR_UNBOUNDED,
        S.kInterrupt: Termination.INTERRUPTED,
        S.kHighsInterrupt: Termination.INTERRUPTED,
        S.kModelEmpty: Termination.OPTIMAL,
    }


def pass_to_highs(h: Any, hp: Any, model: LinearModel) -> None:
    """Load ``model`` into the ``highspy.Highs`` instance ``h`` (``hp``: the highspy module)."""
    refuse_quadratic(model, "HiGHS")  # HiGHS solves no mixed-integer QP
    lp = hp.HighsLp()
    lp.num_col_ = model.n_cols
    lp.num_row_ = model.n_rows
    lp.col_cost_ = model.c
    lp.col_lower_ = model.col_lb
    lp.col_upper_ = model.col_ub
    lp.row_lower_ = model.row_lb
    lp.row_upper_ = model.row_ub
    lp.offset_ = float(model.c0)
    A = model.A.tocsc()
    lp.a_matrix_.format_ = hp.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    h.passModel(lp)
    ints = np.flatnonzero(model.integrality).astype(np.int32)
    if ints.size:
        h.changeColsIntegrality(int(ints.size), ints, np.ones(ints.size, dtype=np.uint8))



# --------------------------------------------------------------------------- budget
class Budget:
    """Wall-clock budget of one exact call, started at construction (``time_limit=None``: unlimited)."""

    def __init__(self, time_limit: float | None) -> None:
        self.t0 = time.perf_counter()
        self.limit = None if time_limit is None else float(time_limit)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    @property
    def deadline(self) -> float | None:
        """``time.perf_counter()`` value at which the budget ends (None: unlimited)."""
        return None if self.limit is None else self.t0 + self.limit

    def left(self) -> float | None:
        """Seconds left (never negative), None when unlimited."""
        return None if self.limit is None else max(self.limit - self.elapsed, 0.0)

    def expired(self) -> bool:
        return self.limit is not None and self.elapsed >= self.limit

    def solver_limit(self, floor: float = 0.05) -> float | None:
        """Seconds to hand a solver now (at least ``floor``; None when unlimited)."""
        left = self.left()
        return None if left is None else max(left, floor)


def remaining(time_limit: float | None, spent: float, floor: float = 0.05) -> float | None:
    """Seconds left of ``time_limit`` after ``spent`` (at least ``floor``)."""
    if time_limit is None:
        return None
    return max(time_limit - spent, floor)


# --------------------------------------------------------------------------- objective helpers
def formulation_bound(model: LinearModel, bound: float | None) -> float | None:
    """Convert a bound on the (minimised) model objective to the formulation's units."""
    if bound is None or not np.isfinite(bound):
        return None
    return float(model.objective_sign * bound)


def _sign(f: Any) -> float:
    return -1.0 if getattr(f, "sense", "min") == "max" else 1.0


def true_key(f: Any, model: LinearModel | None = None):
    """``key(selection)``: the formulation's objective in model (minimisation) units, None if infeasible.

    ``model`` is accepted for compatibility; the sign follows the formulation's sense
    (a maximised objective is negated, as in every :class:`LinearModel`).
    """
    sign = float(model.objective_sign) if model is not None else _sign(f)

    def key(sel: np.ndarray) -> float | None:
        sel = np.asarray(sel)
        if not f.is_feasible(sel):  # the empty selection is judged by the formulation too
            return None
        return float(sign * f.evaluate(sel))

    return key


# --------------------------------------------------------------------------- warm start
def _warm_start(f: Any, given: Any, budget: Budget, seed: int | None) -> tuple[np.ndarray | None, str]:
    """The warm-start selection and where it came from.

    A selection given by the caller must be feasible (``f.check``; e.g. exactly ``k`` medoids): one that
    is not is refused by name with the check's reasons, never dropped silently.
    """
    if given is None:
        return None, "none"
    if not isinstance(given, str):
        sel = f.as_selection(given, "warm_start")
        chk = f.check(sel)
        if not chk.feasible:
            raise InvalidInputError(
                f"warm_start: expected a feasible selection for this {type(f).__name__}, got {sel.size} items "
                f"that are not: {'; '.join(chk.reasons[:2])}")
        return sel, "given"
    if given != "auto":
        raise InvalidInputError(f"warm_start: expected a selection, 'auto' or None, got {given!r}")
    policy = f.numerical_properties.warm_start
    name = policy.method
    if name:
        # a formulation may give its heuristic more of the budget (share, cap in seconds or None: no cap)
        share, cap = policy.share, policy.cap
        lim = cap
        if budget.limit is not None:
            lim = max(share * budget.limit if cap is None else min(share * budget.limit, cap), 0.01)
        out = get_method(name).run(f, time_limit=lim, seed=seed)
        sel = None if out.selection is None else np.asarray(out.selection)
        if sel is not None and sel.size and f.is_feasible(sel):
            if Termination(out.termination) == Termination.TIME_LIMIT:  # cut short: it may trail the cheap start
                init = f.initial_selection()
                if init is not None and f.is_feasible(init) and _sign(f) * (f.evaluate(init) - f.evaluate(sel)) < 0:
                    return f.as_selection(init), "initial_selection"
            return f.as_selection(sel), name
    sel = f.initial_selection()
    return (None if sel is None else f.as_selection(sel)), "initial_selection"


# --------------------------------------------------------------------------- deadlines
def call_with_deadline(fn: Callable[[], Any], wait: float | None, name: str = "benchsel-call") -> tuple[bool, Any]:
    """``(True, fn())``, or ``(False, None)`` when ``fn`` is still running after ``wait`` seconds.

    With ``wait=None`` ``fn`` runs in this thread. Otherwise it runs in a
    daemon thread and is *abandoned* when it overruns: it finishes in the
    background and its result is dropped (work that cannot be interrupted,
    such as a solver's presolve that does not check its time limit, or
    building a model far too large for the budget). Exceptions are re-raised
    in the caller's thread.
    """
    if wait is None:
        return True, fn()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    th = threading.Thread(target=work, name=name, daemon=True)
    th.start()
    th.join(max(wait, 0.0))
    if th.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box["value"]


def wall_grace(time_limit: float | None) -> float | None:
    """Seconds a backend may wait past the budget for a solver to return on its own (None: no limit).

    Chosen so that a whole call stays within ``1.4 * time_limit + 1.5`` s of wall clock.
    """
    return None if time_limit is None else 0.4 * float(time_limit) + 1.5


# --------------------------------------------------------------------------- model build
class _Unfinished:
    """Marker: the model build was still running when the budget ended."""


def _build(f: Any, model_opts: Mapping[str, Any], allow_lazy: bool, budget: Budget) -> LinearModel | _Unfinished:
    """``f.linear_model(...)`` within the budget (abandoned when it is still running at the limit)."""
    done, model = call_with_deadline(lambda: f.linear_model(allow_lazy=allow_lazy, **model_opts), budget.left(),
                                     "benchsel-model-build")
    return model if done else _Unfinished()
def quadratic_acceptor(backend: str, method: str, *, label: str | None = None,
                       usable: Callable[[], bool] = lambda: True, missing: str = "",
                       quadratic_usable: Callable[[], bool] | None = None, quadratic_missing: str = ""):
    """Acceptor for backends that read linear models and models with a quadratic objective.

    Parameters
    ----------
    backend : str
        Display name (for reasons).
    method : str
        Registered method name.
    label : str, optional
        How linear-only backends' refusals name this one (default ``method``).
    usable : callable
        ``usable() -> bool``: the backend's package is installed.
    missing : str
        Reason given when it is not (how to install it).
    quadratic_usable, quadratic_missing
        The same for quadratic models only (default: as ``usable``).
    """
    q_usable = quadratic_usable or usable
    _QUADRATIC_BACKENDS[method] = (label or method, lambda: usable() and q_usable())

    def accepts(f: Any) -> str | None:
        if not usable():
            return missing or f"{backend} is not installed"
        if getattr(f, "is_linear", False):
            return None
        if getattr(f, "quadratic_statement", False):
            if not q_usable():
                return quadratic_missing or f"{backend} has no solver for mixed-integer quadratic programs here"
            return None
        reason = getattr(f, "not_linear_reason", None) or "it has no linear or quadratic statement"
        return f"{reason} ({backend} reads mixed-integer linear and quadratic models only)"

    return accepts


def refuse_quadratic(model: LinearModel, backend: str) -> None:
    """Raise :class:`InvalidInputError` when ``model`` has a quadratic objective (linear-only backends)."""
    if model.Q is not None and model.Q.nnz:
        raise InvalidInputError(
            f"model: {model.name!r} has a quadratic objective (Q with {model.Q.nnz} non-zeros) and {backend} "
            f"reads mixed-integer linear models only; backends that take it: {_takers()}"
        )


def widen_redundant_bounds(model: LinearModel, properties: NumericalProperties) -> LinearModel:
    """The model the backends solve: with ``redundant_bounds``, each continuous column's upper bound (and a
    negative lower bound) widened by ``1e-5 + 1e-6 |bound|``, so that bounds computed in floating point as
    extreme values never cut off the extreme point (on CP-SAT's grid, or at a solver's rounding)."""
    if not properties.redundant_bounds:
        return model
    cont = ~model.integrality & ~model.implied_integer
    lb, ub = model.col_lb, model.col_ub
    lb = np.where(cont & (lb < 0), lb - 1e-5 - 1e-6 * np.abs(lb), lb)
    return replace(model, col_lb=lb, col_ub=np.where(cont, ub + 1e-5 + 1e-6 * np.abs(ub), ub))


# --------------------------------------------------------------------------- the run
@dataclass
class ExactRun:
    """What a backend's solve step receives from :func:`run_exact`.

    Attributes
    ----------
    f : Formulation
    model : LinearModel
    opts : dict
        The backend's checked options (``warm_start`` resolved to a selection or None).
    budget : Budget
        The call's budget; ``budget.solver_limit()`` is the time to hand the solver now.
    seed : int or None
    warm_start : ndarray of int64 or None
        The resolved warm start (possibly infeasible when the caller gave one).
    warm_start_value : float or None
        Its objective in model (minimisation) units when it is feasible, else None.
    key : callable
        ``key(selection) -> model-unit objective or None (infeasible)``, judged by the formulation.
    """

    f: Any
    model: LinearModel
    opts: dict[str, Any]
    budget: Budget
    seed: int | None
    warm_start: np.ndarray | None
    warm_start_value: float | None
    key: Callable[[np.ndarray], float | None]


@dataclass
class SolveStep:
    """What a backend's solve step returns.

    Attributes
    ----------
    selection : ndarray of int or None
    termination : Termination
    bound : float or None
        Bound on the model (minimisation) objective.
    extra : dict
    build_seconds : float
        Backend-side model building (e.g. Pyomo components), counted as build time.
    tolerances : Tolerances or None
        The tolerances the solver worked with (None: the call's ``mip_rel_gap`` / ``mip_abs_gap`` and no
        feasibility slack); ``objective_norm`` is filled from the model when left at its default.
    distrust : str or None
        Why the solver's report contradicts itself (see :func:`~benchsel.solvers.claims.judge`), or None.
    """

    selection: np.ndarray | None
    termination: Termination
    bound: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    build_seconds: float = 0.0
    tolerances: Tolerances | None = None
    distrust: str | None = None


def run_exact(f: Any, options: Mapping[str, Any], *, time_limit: float | None, seed: int | None,
              solve: Callable[[ExactRun], SolveStep], allow_lazy: bool = False,
              nnz_per_second: float | None = None) -> MethodOutput:
    """Run an exact backend's ``solve`` step with the shared budget, warm start and incumbent rules.

    Parameters
    ----------
    f : Formulation
    options : mapping
        The runner's options as the registry passed them (declared backend
        options plus the formulation's model options).
    time_limit : float or None
        Seconds for the whole call.
    seed : int or None
    solve : callable
        ``solve(run: ExactRun) -> SolveStep``.
    allow_lazy : bool
        The backend can generate rows on demand.
    nnz_per_second : float, optional
        The backend's model building rate, handed (with the seconds left) to
        formulations that size their statements (``f.numerical_properties.sized_models``): with
        ``model="auto"`` such a formulation refuses a statement that would not
        fit, and the call returns the warm start with the formulation's quick
        bound (``f.quick_bound``), termination ``"time_limit"``.

    Returns
    -------
    MethodOutput
        ``build_seconds`` = warm start + neutral build + backend build;
        ``extra`` records each part, the warm start's origin and value, and
        which selection was kept (``incumbent``: ``"solver"`` or ``"warm_start"``).
    """
    budget = Budget(time_limit)
    opts = dict(options)
    model_opts = f.check_model_options({k: opts.pop(k) for k in list(opts) if k in f.model_options})
    key = true_key(f)
    t0 = time.perf_counter()
    ws, ws_source = _warm_start(f, opts.get("warm_start"), budget, seed)
    ws_seconds = time.perf_counter() - t0
    ws_value = key(ws) if ws is not None else None
    if ws is not None:  # the model may order interchangeable items: hand over that form
        ws = f.canonical_selection(ws)
    opts["warm_start"] = ws
    extra: dict[str, Any] = {"warm_start_source": ws_source, "warm_start_seconds": ws_seconds,
                             "warm_start_objective": None if ws_value is None else _sign(f) * ws_value}
    if f.numerical_properties.sized_models:
        model_opts.update(time_limit=budget.left(), nnz_per_second=nnz_per_second)
    t1 = time.perf_counter()
    try:
        model = _build(f, model_opts, allow_lazy, budget) if not budget.expired() else _Unfinished()
    except InvalidInputError as e:
        if getattr(e, "requested", None) != "auto":
            raise
        return _model_skipped(f, str(e), ws if ws_value is not None else None, budget, ws_seconds,
                              time.perf_counter() - t1, extra)
    build_s = time.perf_counter() - t1
    extra["neutral_build_seconds"] = build_s
    if isinstance(model, LinearModel):
        model = widen_redundant_bounds(model, f.numerical_properties)
    if isinstance(model, _Unfinished):
        extra["model_build"] = "unfinished at the time limit"
        sel = ws if ws_value is not None else None
        extra["incumbent"] = "warm_start" if sel is not None else None
        return MethodOutput(sel, Termination.TIME_LIMIT, None, ws_seconds + build_s,
                            budget.elapsed - ws_seconds - build_s, extra)
    t2 = time.perf_counter()
    step = solve(ExactRun(f, model, opts, budget, seed, ws, ws_value, key))
    solve_s = time.perf_counter() - t2 - step.build_seconds
    extra.update(step.extra)
    extra.update(model.summary())
    tol = step.tolerances or Tolerances(float(opts.get("mip_rel_gap") or 0.0), float(opts.get("mip_abs_gap") or 0.0))
    if tol.objective_norm is None:
        tol = replace(tol, objective_norm=float(np.abs(model.c).sum()))
    sel, term, bound = _reconcile(f, step, ws, ws_value, key, tol, extra)
    return MethodOutput(sel, term, formulation_bound(model, bound), ws_seconds + build_s + step.build_seconds,
                        max(solve_s, 0.0), extra, tolerances=tol)


def _model_skipped(f: Any, reason: str, ws: np.ndarray | None, budget: Budget, ws_seconds: float,
                   build_s: float, extra: dict[str, Any]) -> MethodOutput:
    """The answer when ``model="auto"`` found no statement of ``f`` that fits the budget.

    The warm start is the incumbent, with the formulation's quick bound when it
    has one (``f.quick_bound(seconds, incumbent=...)``, given half the time
    left), and termination ``"time_limit"``: the solver was not run.
    """
    extra.update(model_skipped=reason, neutral_build_seconds=build_s,
                 incumbent="warm_start" if ws is not None else None)
    t0 = time.perf_counter()
    bound = None
    left = budget.left()
    bound = f.quick_bound(None if left is None else 0.5 * left, incumbent=ws)
    return MethodOutput(ws, Termination.TIME_LIMIT, bound, ws_seconds + build_s, time.perf_counter() - t0, extra)


def _reconcile(f: Any, step: SolveStep, ws: np.ndarray | None, ws_value: float | None,
               key: Callable[[np.ndarray], float | None], tolerances: Tolerances, extra: dict[str, Any]
               ) -> tuple[np.ndarray | None, Termination, float | None]:
    """The kept selection (the better of the solver's and the warm start, judged by the formulation), and the
    termination and bound (model units) :func:`~benchsel.solvers.claims.judge` lets it keep."""
    sel = None if step.selection is None else np.asarray(step.selection)
    value = key(sel) if sel is not None else None
    if sel is not None and value is None:
        extra["solver_selection"] = "fails the formulation's check"
    keep, kept_value, source = sel, value, "solver"
    if ws_value is not None and (kept_value is None or ws_value < kept_value):
        keep, kept_value, source = ws, ws_value, "warm_start"
    extra["incumbent"] = source if keep is not None else ("solver" if sel is not None else None)
    verdict = judge(step.termination, kept_value, step.bound, tolerances,
                    claimed=value if source == "warm_start" else None, distrust=step.distrust)
    verdict.record(extra)
    return (keep if keep is not None else sel), verdict.termination, verdict.bound
