"""The ``solve()`` entry point."""
from __future__ import annotations

import math
import time
import traceback
from collections.abc import Mapping
from typing import Any

import numpy as np

from benchsel.formulations.base import Formulation
from benchsel.formulations.core.errors import InvalidInputError, NumericalError
from benchsel.formulations.core.options import Option, check_options
from benchsel.formulations.core.result import MethodOutput, Result, Termination, Tolerances, mip_gap
from benchsel.formulations.core.validation import check_run_settings, check_time_limit

from .claims import judge
from .methods import require

__all__ = ["DEFAULT_REL_GAP", "check_solve_args", "error_result", "finalize", "solve", "take_options"]

#: The relative gap results of methods without a ``mip_rel_gap`` option are judged at.
DEFAULT_REL_GAP = 1e-6


def check_solve_args(formulation: Any, method: Any, time_limit: Any, seed: Any) -> tuple[float | None, int | None]:
    """Pure checks of :func:`solve`'s arguments; returns (time_limit, seed)."""

    if not isinstance(formulation, Formulation):
        raise InvalidInputError(
            "formulation: expected a benchsel Formulation (e.g. benchsel.formulations.KMedoids), "
            f"got {type(formulation).__name__}"
        )
    if not isinstance(method, str):
        raise InvalidInputError(f"method: expected a method name (str), got {type(method).__name__}")
    if seed is None:
        return check_time_limit(time_limit), None
    seed, time_limit = check_run_settings(seed, time_limit)
    return time_limit, seed


def take_options(options: Mapping[str, Any], known: Mapping[str, Any], method: str) -> dict[str, Any]:
    """Fill defaults from ``known`` and refuse unknown option names (for methods that check their own values).

    Built-in methods declare :class:`~benchsel.formulations.core.options.Option` s instead.
    """
    checked, _ = check_options(options, [Option(k, v) for k, v in known.items()], method)
    return checked


def solve(formulation: Any, method: str, *, time_limit: float | None = None, seed: int | None = 0,
          capture_errors: bool = False, **options: Any) -> Result:
    """Solve ``formulation`` with ``method`` and check the answer.

    Parameters
    ----------
    formulation : benchsel.formulations.base.Formulation
        The problem, with its validated data.
    method : str
        A registered method name: exact backends (``"highs"``, ``"pyomo"``,
        ``"cpsat"``, ...) or heuristics (``"fasterpam"``, ``"random"``, ...);
        see :func:`benchsel.solvers.available_methods`.
    time_limit : float, optional
        Wall-clock seconds for the whole call (model building included). On
        time-out the best selection found is returned with termination
        ``"time_limit"`` and the bound reached so far.
    seed : int, optional
        Seed of every random choice (same seed, same result).
    capture_errors : bool
        False (default): an exception raised inside the method, or while its
        answer is checked, propagates with its traceback (a bug surfaces).
        True (the benchmark harness): it becomes a :class:`Result` with
        termination ``"error"``, no selection, ``extra["error"]``
        (``"Type: message"``) and ``extra["traceback"]``. Bad arguments of
        ``solve`` itself (formulation, method, time limit, seed, option names
        and values) raise in both cases.
    **options
        Method options (e.g. ``mip_rel_gap``, ``threads``, ``warm_start``,
        ``verbose``) and options of the formulation's linear statement
        (e.g. ``model="radius"`` for :class:`~benchsel.formulations.KMedoids`).

    Returns
    -------
    Result
        Selection, objective re-evaluated by the formulation, bound, gap,
        feasibility checked by the formulation, termination, timings, extras.

    Raises
    ------
    InvalidInputError
        A bad argument (named in the message).
    NumericalError
        The formulation evaluated a feasible answer to a non-finite objective
        (with ``capture_errors=True``: an ``"error"`` result instead).
    Exception
        Whatever the method raised (unless ``capture_errors=True``).
    """
    time_limit, seed = check_solve_args(formulation, method, time_limit, seed)
    if not isinstance(capture_errors, (bool, np.bool_)):
        raise InvalidInputError(f"capture_errors: expected True or False, got {capture_errors!r}")
    m = require(method, formulation)
    checked = m.check_options(formulation, dict(options))  # a caller's mistake raises, captured or not
    rel = checked.get("mip_rel_gap")
    t0 = time.perf_counter()
    try:
        out = _run(m, formulation, time_limit, seed, options)
        return finalize(formulation, m.name, seed, out, time.perf_counter() - t0,
                        mip_rel_gap=DEFAULT_REL_GAP if rel is None else float(rel))
    except Exception as e:
        if not capture_errors:
            raise
        return error_result(formulation, m.name, seed, e, time.perf_counter() - t0)


def _run(m: Any, formulation: Any, time_limit: float | None, seed: int | None, options: Mapping[str, Any]
         ) -> MethodOutput:
    """Run method ``m``; an exact method solves the formulation's unit-scaled copy (:meth:`Formulation.unit_scale`),
    and its bound is brought back to the formulation's units (``extra["objective_scale"]``)."""
    if not m.exact:
        return m.run(formulation, time_limit=time_limit, seed=seed, **options)
    scaled, factor = formulation.unit_scale()
    out: MethodOutput = m.run(scaled, time_limit=time_limit, seed=seed, **options)
    if scaled is not formulation:
        out.bound = None if out.bound is None else out.bound * factor
        out.extra = {**out.extra, "objective_scale": factor}
    return out


def error_result(formulation: Any, method: str, seed: int | None, exc: BaseException, wall: float) -> Result:
    """The :class:`Result` of a run whose method raised ``exc`` (``capture_errors=True``)."""
    msg = f"{type(exc).__name__}: {exc}"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=12))
    out = MethodOutput(None, Termination.ERROR, extra={"error": msg, "traceback": tb})
    return finalize(formulation, method, seed, out, wall)


def finalize(formulation: Any, method: str, seed: int | None, out: MethodOutput, wall: float, *,
             mip_rel_gap: float = DEFAULT_REL_GAP) -> Result:
    """Re-evaluate and check a method's output; build the :class:`Result`.

    The method's claims are judged against the re-evaluated objective by
    :func:`benchsel.solvers.claims.judge`: ``"optimal"`` needs a feasible selection and a
    bound within the backend's tolerances, and a bound past the objective is clamped
    (float noise) or dropped.

    Raises :class:`~benchsel.formulations.core.errors.NumericalError` when a feasible
    selection evaluates to a non-finite objective: no result may be feasible
    with an infinite or NaN objective.
    """
    extra = dict(out.extra)
    given = None if out.selection is None else np.asarray(out.selection)
    if given is not None and given.size == 0 and not formulation.check(given).feasible:
        given = None  # an empty answer the formulation refuses is no selection
    if given is not None:
        sel = formulation.as_selection(given)
        with np.errstate(over="ignore", invalid="ignore"):
            objective = float(formulation.evaluate(sel))
        chk = formulation.check(sel)
        feasible = bool(chk.feasible)
        if feasible and not math.isfinite(objective):
            raise NumericalError(
                f"objective: {type(formulation).__name__} evaluates the feasible selection of {sel.size} items "
                f"returned by {method!r} to {objective}; its data overflow float64 (rescale them)"
            )
        if not feasible:
            extra["violations"] = "; ".join(chk.reasons[:5])
        extra.update(formulation.result_extras(sel))
    else:
        sel = np.zeros(0, dtype=np.int64)
        objective = math.nan
        feasible = False
        try:
            extra.update(formulation.result_extras(sel))
        except Exception:  # extras are informative only
            pass
    sel.setflags(write=False)
    bound = None if out.bound is None or not math.isfinite(out.bound) else float(out.bound)
    term, bound = _judged(formulation, out, objective, feasible, bound, extra, mip_rel_gap)
    gap = mip_gap(objective, bound) if feasible else None
    build = float(out.build_seconds)
    solve_s = float(out.solve_seconds) if out.solve_seconds else max(wall - build, 0.0)
    extra.setdefault("wall_seconds", wall)
    return Result(
        selection=sel,
        objective=objective,
        bound=bound,
        gap=gap,
        feasible=feasible,
        termination=term,
        method=method,
        seed=seed,
        build_seconds=build,
        solve_seconds=solve_s,
        formulation=type(formulation).__name__,
        extra=extra,
    )


def _judged(formulation: Any, out: MethodOutput, objective: float, feasible: bool, bound: float | None,
            extra: dict[str, Any], mip_rel_gap: float) -> tuple[Termination, float | None]:
    """The termination and bound the result keeps: :func:`~benchsel.solvers.claims.judge` in the formulation's
    units, with the backend's tolerances (a heuristic's: ``mip_rel_gap`` alone) at the scale of the unit-scaled
    copy the backend solved (``extra["objective_scale"]``, 1 when none)."""
    sign = -1.0 if formulation.sense == "max" else 1.0
    tol = out.tolerances if out.tolerances is not None else Tolerances(mip_rel_gap)
    value = sign * objective if feasible and math.isfinite(objective) else None
    verdict = judge(Termination(out.termination), value, None if bound is None else sign * bound, tol,
                    unit=float(extra.get("objective_scale", 1.0)))
    verdict.record(extra)
    return verdict.termination, None if verdict.bound is None else sign * verdict.bound
