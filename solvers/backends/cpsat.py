"""``"cpsat"``: OR-Tools CP-SAT on an integer-scaled copy of the model, with every claim re-checked.

CP-SAT takes integer variables and integer coefficients only. The copy is
built so that it is a **relaxation** of the original model, and every answer
is then checked against the original (the formulation's own ``check`` and
``evaluate`` in floating point, or, for a bare :class:`LinearModel`, an LP
with the integer columns fixed):

* integer and implied-integer columns stay as they are; a truly continuous
  column ``v`` becomes the integer ``V ~ v / resolution`` (``continuous_resolution``,
  default ``1e-8``), with its bounds rounded *outwards*; it needs finite bounds;
* each row is multiplied by a scale ``rho``: the least common denominator of
  its coefficients and bounds when they are rationals with denominators up to
  ``max_denominator`` (exact), otherwise a power of ten that puts the largest
  coefficient near ``10**digits`` (lowered when the row's activity would not
  fit in 64 bits), and its coefficients are rounded;
* a row that is scaled exactly and has no continuous column keeps its exact
  integer bounds (``ceil`` of a lower, ``floor`` of an upper bound): the copy
  of that row is *equivalent* to it;
* any other row is **widened** by the largest change that coefficient
  rounding and the grid of its continuous columns can make to its activity
  (``sum |round(rho a) - rho a| * max|V| + rho * sum_cont |a| * resolution / 2``),
  and its bounds are rounded outwards. Every feasible point of the original
  model, with its continuous columns rounded to the nearest grid point, is
  then feasible in the copy: **no feasible selection is cut off**;
* the objective is scaled the same way; its largest rounding effect
  (``obj_rounding``) is subtracted from CP-SAT's bound, so the bound stays
  valid for the original.

Because the copy is a relaxation, CP-SAT may return an assignment that the
original rejects or that it values differently. The backend therefore
checks every solution CP-SAT reports, keeps the best one the original
accepts (the warm start included), and

* when CP-SAT proves its copy optimal but the point fails the original, adds a
  no-good cut excluding that selection and solves again (the copy stays a
  relaxation of every selection not yet refuted);
* when the best checked objective ``z`` is not within the gap tolerance of
  the widened bound, solves a *certificate* copy: the no-goods, a no-good on
  the incumbent, and ``objective <= z - tol + obj_rounding``. If that copy is
  infeasible, no selection beats ``z`` by more than ``tol`` and the answer is
  ``"optimal"`` (bound ``z - tol``); a better selection it finds becomes the
  incumbent and the check repeats;
* otherwise (limits, or ``max_nogoods`` refutations) CP-SAT's own status is
  reported with the widened bound and :func:`benchsel.solvers.claims.judge`
  decides: ``"optimal"`` only when the checked incumbent is within the
  tolerance of that bound, else ``"feasible"`` / ``"time_limit"``;
* ``"infeasible"`` is reported only when the relaxed copy is infeasible, which
  proves the original infeasible.

``threads`` sets CP-SAT's ``num_workers``; it defaults to the cores this
process may run on (``os.sched_getaffinity``). The warm start is CP-SAT's
solution hint and the incumbent until CP-SAT finds a better checked one.
The scaling (exact, rounded and widened rows, scales, the objective's
rounding), the no-goods and the certificate solves go to ``Result.extra``.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchsel.formulations.core.errors import InvalidInputError, SolverNotInstalledError
from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import MethodOutput, Termination, Tolerances
from benchsel.solvers.backends.common import (
    COMMON_OPTIONS,
    ExactRun,
    SolveStep,
    highspy_module,
    linear_acceptor,
    pass_to_highs,
    refuse_quadratic,
    run_exact,
)
from benchsel.solvers.claims import judge, slack, within

__all__ = ["ScaledModel", "cp_model_module", "default_workers", "scale_model", "solve_model_cpsat"]

CPSAT_OPTIONS = (
    *COMMON_OPTIONS,
    Option("digits", 15, "int", low=1, high=15,
           doc="largest number of digits of a rounded row's largest coefficient (lowered to fit 64 bits)"),
    Option("continuous_resolution", 1e-8, "float", low=0.0, low_open=True,
           doc="grid step of continuous columns in the integer copy"),
    Option("max_denominator", 10**6, "int", low=1, doc="largest denominator of an exactly scaled rational row"),
    Option("max_nogoods", 100, "int", low=0,
           doc="selections refuted by the original model before the backend stops re-solving"),
    Option("cpsat_parameters", None, "mapping", doc="raw CP-SAT parameters (name: value)"),
)
_LIMIT = 2**62
#: relative slack added to widened row bounds (float error of the original data and checks)
_REL_SLACK = 1e-9


def default_workers() -> int:
    """The number of cores this process may run on (CP-SAT's default ``num_workers`` here)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


#: Scaling and filling CP-SAT's model cost about this much per row or column and per non-zero (constants
#: calibrated once on a large k-medoids radius model; the prediction is rough and only guards time limits).
SECONDS_PER_ROW_OR_COL, SECONDS_PER_NONZERO = 7e-6, 1e-6


#: Model building rate (non-zeros per second), handed to formulations that size their statements (size guards).
CPSAT_NNZ_PER_SECOND = 1.0e6


def predicted_build_seconds(model: LinearModel) -> float:
    """Rough seconds to scale ``model`` and fill CP-SAT's model with it (from the calibrated constants)."""
    return SECONDS_PER_ROW_OR_COL * (model.n_cols + model.n_rows) + SECONDS_PER_NONZERO * model.nnz


def cp_model_module(method: str = "cpsat") -> Any:
    """OR-Tools' ``cp_model`` module (imported on first use); ``method`` names the caller in the error."""
    try:
        from ortools.sat.python import cp_model
    except ImportError as e:  # pragma: no cover - ortools is a base dependency
        raise SolverNotInstalledError(
            f"method {method!r} needs the package 'ortools', which is not installed ({e}); pip install ortools"
        ) from None
    return cp_model


# --------------------------------------------------------------------------- scaling
@dataclass(frozen=True, eq=False)
class ScaledModel:
    """Integer copy of a :class:`LinearModel` (a relaxation of it; see the module docstring).

    Attributes
    ----------
    A : scipy.sparse.csr_array of int64, shape (m, n)
    row_lb, row_ub : ndarray of float, shape (m,)
        Integer-valued bounds of the copy's rows (``-inf`` / ``inf`` for a free side).
    col_lb, col_ub : ndarray of int64, shape (n,)
    c : ndarray of int64, shape (n,)
    c0 : float
    col_scale : ndarray, shape (n,)
        ``V = col_scale * v`` (1 for integer and implied-integer columns).
    row_scale : ndarray, shape (m,)
    obj_scale : float
    exact_rows : int
        Rows whose copy is equivalent to them (integer coefficients, no continuous column).
    rounded_rows : int
        Rows with a coefficient changed by rounding (no exact rational scale).
    relaxed_rows : int
        Rows widened by ``row_slack > 0`` (rounded coefficients or continuous columns).
    row_slack : ndarray, shape (m,)
        Widening of each row in scaled units (0: the copy of the row is equivalent to it).
    max_coef_error : float
        Largest ``|round(rho a) / rho - a|`` over the rows, in model units per grid step.
    obj_rounding : float
        Largest change of the objective caused by rounding its coefficients and
        the continuous grid; subtracted from CP-SAT's bound.
    exact_objective : bool
        The objective was scaled exactly and has no continuous column.
    """

    A: sp.csr_array
    row_lb: np.ndarray
    row_ub: np.ndarray
    col_lb: np.ndarray
    col_ub: np.ndarray
    c: np.ndarray
    c0: float
    col_scale: np.ndarray
    row_scale: np.ndarray
    obj_scale: float
    exact_rows: int
    rounded_rows: int
    relaxed_rows: int
    row_slack: np.ndarray
    max_coef_error: float
    obj_rounding: float
    exact_objective: bool

    @property
    def exact_copy(self) -> bool:
        """Every row's copy is equivalent to the row (no row was widened)."""
        return self.relaxed_rows == 0


def _denominators(values: np.ndarray, max_den: int) -> np.ndarray:
    """Smallest denominator of each value as an exact rational (0 when none <= max_den)."""
    u, inv = np.unique(values, return_inverse=True)
    den = np.zeros(u.size, dtype=np.int64)
    isint = np.abs(u - np.round(u)) <= 1e-12 * np.maximum(1.0, np.abs(u))
    den[isint] = 1
    rest = np.flatnonzero(~isint)
    if rest.size <= 50_000:
        for i in rest:
            fr = Fraction(float(u[i])).limit_denominator(max_den)
            if abs(float(fr) - u[i]) <= 1e-12 * max(1.0, abs(u[i])):
                den[i] = fr.denominator
    return den[inv.ravel()]


def _bounded_lcm(den: np.ndarray, limit: int) -> int | None:
    """The least common multiple of the positive integers ``den``, or None once it exceeds ``limit``."""
    q = 1
    for d in np.unique(den[den > 1]).tolist():
        q = q * int(d) // math.gcd(q, int(d))
        if q > limit:
            return None
    return q


def _row_scales(A: sp.csr_array, A1: sp.csr_array, cont: np.ndarray, resolution: float, span: np.ndarray, digits: int,
                max_den: int) -> tuple[np.ndarray, np.ndarray]:
    """Scale per row (``rho``, applied to the grid-space row ``A1``) and whether it is exact.

    ``A`` holds the original coefficients, ``A1`` the same rows in grid space
    (continuous columns multiplied by ``resolution``), ``span[j]`` the largest
    ``|V_j|``. A row whose original coefficients are rationals with
    denominators up to ``max_den`` gets ``rho = lcm(denominators)`` (times
    ``1 / resolution`` when it has continuous columns and the resolution is a
    power of ten), so every copy coefficient is an integer; otherwise ``rho``
    is the largest power of ten that gives the largest coefficient at most
    ``digits`` digits and keeps the row's activity within 64 bits.
    """
    m = A.shape[0]
    counts = np.diff(A.indptr)
    row_of = np.repeat(np.arange(m), counts)
    den = _denominators(A.data, max_den) if A.nnz else np.zeros(0, np.int64)
    bad = np.zeros(m, dtype=bool)
    has_cont = np.zeros(m, dtype=bool)
    amax = np.zeros(m)
    act = np.zeros(m)  # largest |activity| of the grid-space row
    if A.nnz:
        np.logical_or.at(bad, row_of, den == 0)
        np.logical_or.at(has_cont, row_of, cont[A.indices])
        np.maximum.at(amax, row_of, np.abs(A1.data))
        np.add.at(act, row_of, np.abs(A1.data) * span[A1.indices])
    cap = _LIMIT / 4.0
    k = -math.log10(resolution)
    grid = 10.0 ** round(k) if abs(k - round(k)) < 1e-12 and round(k) >= 0 else None
    rho = np.ones(m, dtype=float)
    exact = ~bad
    dmax = np.ones(m, dtype=np.int64)
    if A.nnz:
        np.maximum.at(dmax, row_of, np.maximum(den, 1))
    q_row = np.ones(m, dtype=float)
    for r in np.flatnonzero(~bad & (dmax > 1)):  # rows with fractional coefficients: their lcm
        a, b = A.indptr[r], A.indptr[r + 1]
        q = _bounded_lcm(den[a:b], 10**15)
        if q is None:  # no common denominator small enough: the row is scaled by digits (and widened)
            bad[r] = True
            exact[r] = False
        else:
            q_row[r] = float(q)
    simple = ~bad & ~has_cont & (q_row * amax <= 10.0**15) & (q_row * act < cap)
    rho[simple] = q_row[simple]
    for r in np.flatnonzero(~bad & ~simple):
        q = q_row[r]
        if has_cont[r]:
            if grid is None:
                exact[r] = False
                continue
            q *= grid
        if q * amax[r] <= 10.0**15 and q * act[r] < cap:
            rho[r] = q
        else:
            exact[r] = False
    for r in np.flatnonzero(~exact):
        if amax[r] <= 0:
            continue
        exp = digits - math.ceil(math.log10(amax[r]))
        if act[r] > 0:
            exp = min(exp, math.floor(math.log10(cap / act[r])))
        rho[r] = 10.0**exp
    return rho, exact


def scale_model(model: LinearModel, *, digits: int = 15, continuous_resolution: float = 1e-8,
                max_denominator: int = 10**6) -> ScaledModel:
    """Integer-scale ``model`` for CP-SAT as a relaxation (see the module docstring)."""
    refuse_quadratic(model, "CP-SAT")  # CP-SAT takes linear integer models only
    cont = ~model.integrality & ~model.implied_integer
    sigma = np.where(cont, 1.0 / continuous_resolution, 1.0)
    lo = model.col_lb * sigma
    hi = model.col_ub * sigma
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        j = int(np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)))[0])
        raise InvalidInputError(
            f"model: CP-SAT needs finite bounds on every variable; column {model.column_label(j)} has bounds "
            f"[{model.col_lb[j]}, {model.col_ub[j]}]"
        )
    # integer columns: their integral range; continuous ones: outwards (a rounded feasible value stays inside)
    col_lb = np.where(cont, np.floor(lo), np.ceil(lo - 1e-9))
    col_ub = np.where(cont, np.ceil(hi), np.floor(hi + 1e-9))
    if np.any(np.abs(col_lb) >= _LIMIT) or np.any(np.abs(col_ub) >= _LIMIT):
        raise InvalidInputError("continuous_resolution: a column's grid range overflows 64 bits; raise the resolution")
    col_lb, col_ub = col_lb.astype(np.int64), col_ub.astype(np.int64)
    span = np.maximum(np.abs(col_lb), np.abs(col_ub)).astype(float)
    A0 = model.A.tocsr()
    A0.sort_indices()
    A1 = (A0 @ sp.diags_array(1.0 / sigma)).tocsr()
    A1.sort_indices()
    rho, _ = _row_scales(A0, A1, cont, continuous_resolution, span, digits, max_denominator)
    counts = np.diff(A1.indptr)
    m = A1.shape[0]
    row_of = np.repeat(np.arange(m), counts)
    scaled = A1.data * rho[row_of]
    coef = np.round(scaled)
    err = np.abs(coef - scaled)  # scaled units
    slack = np.zeros(m)
    if A1.nnz:
        np.add.at(slack, row_of, err * span[A1.indices] + np.where(cont[A1.indices], 0.5 * np.abs(scaled), 0.0))
    # an all-integer row with integer coefficients is exact whatever its bounds: its activity is an integer
    slack[slack <= 1e-6] = 0.0
    Ai = sp.csr_array((coef.astype(np.int64), A1.indices, A1.indptr), shape=A1.shape)
    wide = slack > 0
    lbs, ubs = model.row_lb * rho, model.row_ub * rho
    with np.errstate(invalid="ignore"):
        rlb = np.where(wide, np.floor(lbs - slack - _REL_SLACK * np.maximum(1.0, np.abs(lbs))),
                       np.ceil(lbs - 1e-9 * np.maximum(1.0, np.abs(lbs))))
        rub = np.where(wide, np.ceil(ubs + slack + _REL_SLACK * np.maximum(1.0, np.abs(ubs))),
                       np.floor(ubs + 1e-9 * np.maximum(1.0, np.abs(ubs))))
    rlb = np.where(np.isfinite(model.row_lb), rlb, -np.inf)
    rub = np.where(np.isfinite(model.row_ub), rub, np.inf)
    act = np.abs(Ai.astype(float)) @ span
    # a bound beyond the activity range is never binding on that side: clamp it (keeps it in 64 bits)
    top = np.floor(act) + 1
    rlb = np.where(np.isfinite(rlb), np.clip(rlb, -top, top), rlb)
    rub = np.where(np.isfinite(rub), np.clip(rub, -top, top), rub)
    if act.size and act.max() >= _LIMIT:
        r = int(np.argmax(act))
        raise InvalidInputError(
            f"digits: row {model.row_label(r)} overflows CP-SAT's 64-bit range after scaling (activity up to "
            f"{act[r]:.3g}); lower 'digits' or raise 'continuous_resolution'"
        )
    c1 = model.c / sigma
    C0 = sp.csr_array(model.c[None, :])
    C1 = sp.csr_array(c1[None, :])
    C0.sort_indices()
    C1.sort_indices()
    rho0_arr, ex0 = _row_scales(C0, C1, cont, continuous_resolution, span, digits, max_denominator)
    rho0 = float(rho0_arr[0])
    cI = np.round(c1 * rho0)
    obj_round = float(np.abs(cI / rho0 - c1) @ span + 0.5 * np.abs(c1[cont]).sum())
    if np.abs(cI) @ span >= _LIMIT:
        raise InvalidInputError("digits: the objective overflows CP-SAT's 64-bit range after scaling; lower 'digits'")
    rounded = np.zeros(m, dtype=bool)
    if A1.nnz:
        np.logical_or.at(rounded, row_of, err > 1e-9)
    return ScaledModel(
        A=Ai, row_lb=rlb, row_ub=rub, col_lb=col_lb, col_ub=col_ub, c=cI.astype(np.int64), c0=float(model.c0),
        col_scale=sigma, row_scale=rho, obj_scale=rho0, exact_rows=int((~wide).sum()), rounded_rows=int(rounded.sum()),
        relaxed_rows=int(wide.sum()), row_slack=slack,
        max_coef_error=float((err / rho[row_of]).max()) if err.size else 0.0,
        obj_rounding=obj_round, exact_objective=bool(ex0[0]) and not np.any(c1[cont]),
    )


# --------------------------------------------------------------------------- checking CP-SAT's answers
class _Checker:
    """Judges CP-SAT's integer points against the original model.

    With ``key`` (a formulation's true objective of a selection, None when
    infeasible) a point is its selection; without, the integer columns are
    fixed and the LP over the continuous ones is solved with HiGHS.
    """

    def __init__(self, model: LinearModel, key: Callable[[np.ndarray], float | None] | None) -> None:
        self.model = model
        self.key = key
        self.sel_cols = model.selection_columns()
        self.int_cols = np.flatnonzero(model.integrality)
        binary = (model.col_lb[self.int_cols] >= 0) & (model.col_ub[self.int_cols] <= 1)
        self.can_refute = key is not None or bool(binary.all())
        self._h: Any = None
        self.checked = 0

    def identity(self, V: np.ndarray) -> tuple[np.ndarray, bytes]:
        """(the columns a no-good acts on with their 0/1 values, a hashable identity)."""
        cols = self.sel_cols if self.key is not None else self.int_cols
        vals = np.round(V[cols]).astype(np.int64)
        return vals, vals.tobytes()

    def selection(self, V: np.ndarray) -> np.ndarray:
        return self.model.selection_from_x(V)

    def value(self, V: np.ndarray) -> float | None:
        """True objective (model units) of the point, or None when the original rejects it."""
        self.checked += 1
        if self.key is not None:
            sel = self.selection(V)
            return self.key(sel)
        return self._lp_value(np.round(V[self.int_cols]))

    def value_of_selection(self, sel: np.ndarray) -> float | None:
        if self.key is not None:
            return self.key(sel)
        if not np.array_equal(np.sort(self.int_cols), np.sort(self.sel_cols)):
            return None  # a bare model whose integers are not the selection: nothing to fix from it
        _, vals = self.model.x_from_selection(sel)
        x = np.zeros(self.model.n_cols)
        x[self.sel_cols] = vals
        return self._lp_value(x[self.int_cols])

    def _lp_value(self, vals: np.ndarray) -> float | None:

        hp = highspy_module()
        model = self.model
        if self._h is None:
            h = hp.Highs()
            h.setOptionValue("output_flag", False)
            pass_to_highs(h, hp, model)
            if self.int_cols.size:
                h.changeColsIntegrality(int(self.int_cols.size), self.int_cols.astype(np.int32),
                                        np.zeros(self.int_cols.size, dtype=np.uint8))
            self._h = h
        h = self._h
        if self.int_cols.size:
            h.changeColsBounds(int(self.int_cols.size), self.int_cols.astype(np.int32), vals.astype(float),
                               vals.astype(float))
        h.run()
        if h.getModelStatus() != hp.HighsModelStatus.kOptimal:
            return None
        return float(h.getInfo().objective_function_value)


def _build_proto(cm: Any, cp_model: Any, sm: ScaledModel, deadline: float | None) -> bool:
    """Fill ``cm``'s proto from the scaled model; False when the deadline passed first."""
    proto = cm.proto
    for c, (lo, hi) in enumerate(zip(sm.col_lb.tolist(), sm.col_ub.tolist())):
        if deadline is not None and c % 1024 == 0 and time.perf_counter() > deadline:
            return False
        proto.variables.add().domain.extend([lo, hi])
    A = sm.A
    ind, dat, ptr = A.indices.tolist(), A.data.tolist(), A.indptr.tolist()
    fl, fu = np.isfinite(sm.row_lb), np.isfinite(sm.row_ub)
    lb_arr = np.full(sm.row_lb.size, cp_model.INT_MIN, dtype=np.int64)
    ub_arr = np.full(sm.row_ub.size, cp_model.INT_MAX, dtype=np.int64)
    lb_arr[fl] = sm.row_lb[fl].astype(np.int64)  # |bounds| < 2**62 (clamped to the activity range)
    ub_arr[fu] = sm.row_ub[fu].astype(np.int64)
    lbs, ubs = lb_arr.tolist(), ub_arr.tolist()
    for r in range(A.shape[0]):
        if deadline is not None and r % 256 == 0 and time.perf_counter() > deadline:
            return False
        a, b = ptr[r], ptr[r + 1]
        ct = proto.constraints.add().linear
        ct.vars.extend(ind[a:b])
        ct.coeffs.extend(dat[a:b])
        ct.domain.extend([lbs[r], ubs[r]])
    nz = np.flatnonzero(sm.c)
    if nz.size:
        proto.objective.vars.extend(nz.tolist())
        proto.objective.coeffs.extend(sm.c[nz].tolist())
        proto.objective.offset = float(sm.c0 * sm.obj_scale)
        proto.objective.scaling_factor = float(1.0 / sm.obj_scale)
    return True


def solve_model_cpsat(model: LinearModel, *, time_limit: float | None = None, seed: int | None = 0,
                      mip_rel_gap: float | None = 1e-6, mip_abs_gap: float | None = 1e-6, threads: int | None = None,
                      verbose: bool = False, warm_start: np.ndarray | None = None, digits: int = 15,
                      continuous_resolution: float = 1e-8, max_denominator: int = 10**6, max_nogoods: int = 100,
                      cpsat_parameters: dict[str, Any] | None = None,
                      key: Callable[[np.ndarray], float | None] | None = None,
                      ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Solve a static :class:`LinearModel` with CP-SAT; returns (selection, termination, bound, extra).

    Parameters
    ----------
    model : LinearModel
        A static model (no lazy rows); every column needs finite bounds.
    time_limit : float, optional
        Seconds for the whole call (scaling, proto building, every solve).
    mip_rel_gap, mip_abs_gap : float
        A checked objective within ``max(mip_rel_gap * |z|, mip_abs_gap)`` of
        the widened bound is called optimal.
    threads : int, optional
        CP-SAT workers (default: :func:`default_workers`).
    warm_start : ndarray of int, optional
        A selection: the hint, and the incumbent when the original accepts it.
    digits, continuous_resolution, max_denominator
        Scaling (see :func:`scale_model`).
    max_nogoods : int
        Selections CP-SAT proposes and the original refutes before the
        backend stops re-solving (and reports ``"feasible"``).
    cpsat_parameters : dict, optional
        Raw CP-SAT parameters.
    key : callable, optional
        ``key(selection)`` -> the true objective in model units or None when
        infeasible (a formulation's judgement). Without it, points are checked
        by an LP over the continuous columns with the integers fixed.

    Returns
    -------
    selection : ndarray of int or None
        The best selection the original accepts (None when none is known).
    termination : Termination
    bound : float or None
        Valid bound on the original (minimised) objective.
    extra : dict
    """
    cp_model = cp_model_module()
    t_start = time.perf_counter()
    deadline = None if time_limit is None else t_start + float(time_limit)
    if model.lazy is not None:
        raise InvalidInputError("model: CP-SAT needs a static model (no lazy rows)")
    if deadline is not None:
        need = predicted_build_seconds(model)
        if need > deadline - time.perf_counter():
            return None, Termination.TIME_LIMIT, None, {
                "cpsat_status": "NOT_RUN",
                "cpsat_build": f"skipped: scaling and filling CP-SAT's model takes about {need:.2f} s, "
                               f"{max(deadline - time.perf_counter(), 0.0):.2f} s left"}
    sm = scale_model(model, digits=digits, continuous_resolution=continuous_resolution, max_denominator=max_denominator)
    workers = int(threads) if threads is not None else default_workers()
    extra = _scaling_extra(sm, continuous_resolution, workers)
    cm = cp_model.CpModel()
    if not _build_proto(cm, cp_model, sm, deadline):
        extra.update(cpsat_status="NOT_RUN", cpsat_build="unfinished at the time limit")
        return None, Termination.TIME_LIMIT, None, extra
    run = _Search(cp_model, cm, model, sm, _Checker(model, key), mip_rel_gap, mip_abs_gap, extra)
    if warm_start is not None and np.asarray(warm_start).size:
        run.offer_warm_start(np.asarray(warm_start))
    bound: float | None = None
    term = Termination.UNKNOWN
    while True:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0.0:
            term = Termination.TIME_LIMIT
            break
        run.hint(warm_start)
        solver = _solver(cp_model, left, workers, seed, mip_rel_gap, mip_abs_gap, verbose, cpsat_parameters)
        collect = _Collector(cp_model)
        status = solver.solve(cm, collect)
        verdict = run.after_solve(solver, status, collect.found, max_nogoods)
        if verdict is not None:
            bound, term = verdict
            if term == Termination.TIME_LIMIT and time_limit is None:
                term = Termination.UNKNOWN
            break
    extra.update(run.summary())
    best = run.best_sel
    # CP-SAT's status is about the copy: the judge decides what the checked incumbent and the bound may claim
    judged = judge(term, None if best is None else float(run.best_val), bound, run.tolerances)
    judged.record(extra)
    term, bound = judged.termination, judged.bound
    return (None if best is None else np.asarray(best, dtype=np.int64)), term, bound, extra


class _Search:
    """The state of one CP-SAT call across its solves: the incumbent checked on the original, the refuted
    selections (no-goods), the cutoff of a certificate solve, and the verdict after each solve."""

    def __init__(self, cp_model: Any, cm: Any, model: LinearModel, sm: ScaledModel, checker: _Checker,
                 mip_rel_gap: float | None, mip_abs_gap: float | None, extra: dict[str, Any]) -> None:
        self.cp_model, self.cm, self.proto, self.model, self.sm = cp_model, cm, cm.proto, model, sm
        self.checker = checker
        # CP-SAT's points are re-checked on the original: no feasibility slack
        self.tolerances = Tolerances(float(mip_rel_gap or 0.0), float(mip_abs_gap or 0.0), 0.0)
        self.extra = extra
        self.has_obj = bool(np.any(sm.c))
        self.best_sel: np.ndarray | None = None
        self.best_val = math.inf
        self.best_id: tuple[np.ndarray, bytes] | None = None
        self.refuted: set[bytes] = set()
        self.values: dict[bytes, float | None] = {}
        self.cutoff_ct: Any = None
        self.certificate = False
        self.solves = 0
        self.status_name = "NOT_RUN"
        self.nogood_cols = model.selection_columns() if checker.key is not None else checker.int_cols

    def tol(self, v: float) -> float:
        """How much better than ``v`` a selection must be to matter (the judge's slack at ``v``)."""
        return slack(v, self.tolerances)

    def offer_warm_start(self, sel: np.ndarray) -> None:
        v = self.checker.value_of_selection(sel)
        if v is not None:
            self.best_sel, self.best_val = sel, v
            self.best_id = self.checker.identity(_x_of(self.model, sel))

    def hint(self, warm_start: np.ndarray | None) -> None:
        self.proto.clear_solution_hint()
        hint = self.best_sel if self.best_sel is not None else warm_start
        if hint is not None and np.asarray(hint).size:
            cols, hv = self.model.x_from_selection(np.asarray(hint))
            self.proto.solution_hint.vars.extend(cols.tolist())
            self.proto.solution_hint.values.extend([int(v) for v in hv])

    def add_nogood(self, ident: tuple[np.ndarray, bytes]) -> None:
        vals, name = ident
        if name in self.refuted:
            return
        ones = vals > 0
        ct = self.proto.constraints.add().linear
        ct.vars.extend(self.nogood_cols.tolist())
        ct.coeffs.extend(np.where(ones, 1, -1).tolist())
        ct.domain.extend([self.cp_model.INT_MIN, int(ones.sum()) - 1])
        self.refuted.add(name)

    def _check_found(self, found: list[np.ndarray], final: bool) -> tuple[np.ndarray, bytes] | None:
        """Check every solution CP-SAT showed on the original; the identity of its final one (or None)."""
        final_id = None
        for i, V in enumerate(found):
            Vx = V / self.sm.col_scale
            ident = self.checker.identity(Vx)
            if final and i == len(found) - 1:
                final_id = ident
            if ident[1] not in self.values:
                self.values[ident[1]] = z = self.checker.value(Vx)
                if z is not None and z < self.best_val:
                    self.best_sel, self.best_val, self.best_id = self.checker.selection(Vx), z, ident
        return final_id

    def _cut_off(self) -> None:
        """Ask for a selection better than the incumbent by more than the tolerance (a certificate solve)."""
        sm, best_val = self.sm, self.best_val
        cut = math.floor((best_val - self.tol(best_val) + sm.obj_rounding - sm.c0) * sm.obj_scale
                         + _REL_SLACK * max(1.0, abs(best_val * sm.obj_scale)))
        if self.cutoff_ct is None:
            nz = np.flatnonzero(sm.c)
            self.cutoff_ct = self.proto.constraints.add().linear
            self.cutoff_ct.vars.extend(nz.tolist())
            self.cutoff_ct.coeffs.extend(sm.c[nz].tolist())
            self.cutoff_ct.domain.extend([self.cp_model.INT_MIN, cut])
        else:
            self.cutoff_ct.domain[1] = min(int(self.cutoff_ct.domain[1]), cut)
        self.certificate = True

    def after_solve(self, solver: Any, status: Any, found: list[np.ndarray], max_nogoods: int
                    ) -> tuple[float | None, Termination] | None:
        """``(bound, termination)`` when the call is done after this solve, None to solve again (whether the
        incumbent meets the widened bound is asked of the judge's :func:`~benchsel.solvers.claims.within`)."""
        cp = self.cp_model
        self.solves += 1
        self.status_name = solver.status_name(status)
        solved = status in (cp.OPTIMAL, cp.FEASIBLE)
        if solved:
            found.append(np.asarray(list(solver.response_proto.solution), dtype=float))
        final_id = self._check_found(found, solved)
        b_cp = float(solver.best_objective_bound) if self.has_obj else float(self.sm.c0)
        widened = b_cp - self.sm.obj_rounding if np.isfinite(b_cp) else None
        if self.certificate and self.best_sel is not None and widened is not None:
            widened = min(widened, self.best_val - self.tol(self.best_val))
        can_refute = self.checker.can_refute and len(self.refuted) < max_nogoods
        if status == cp.OPTIMAL:
            assert final_id is not None
            if self.values[final_id[1]] is None:  # the copy's optimum fails the original: refute it, solve again
                if not can_refute:  # the copy's claim stands or falls by the judge (checked incumbent vs bound)
                    return widened, Termination.OPTIMAL
                self.add_nogood(final_id)
                return None
            assert self.best_sel is not None and self.best_id is not None
            if widened is not None and within(self.best_val, widened, self.tolerances):
                return widened, Termination.OPTIMAL
            # the checked objective is not within the tolerance of the widened bound: certificate solve
            if not can_refute or not self.has_obj:  # no certificate solve left: the judge refuses the claim
                return widened, Termination.OPTIMAL
            self.add_nogood(self.best_id)
            self.add_nogood(final_id)
            self._cut_off()
            return None
        if status == cp.INFEASIBLE:
            if self.certificate and self.best_sel is not None:
                # every selection but the refuted ones and the incumbent is worse than the incumbent - tol
                return self.best_val - self.tol(self.best_val), Termination.OPTIMAL
            if self.best_sel is not None:  # contradicts a checked selection: the judge keeps the selection
                self.extra["cpsat_note"] = "CP-SAT reported the copy infeasible although a checked selection exists"
            return None, Termination.INFEASIBLE
        if status == cp.MODEL_INVALID:
            self.extra["error"] = self.cm.validate()
            return None, Termination.ERROR
        return widened, Termination.TIME_LIMIT  # FEASIBLE or UNKNOWN: stopped by a limit

    def summary(self) -> dict[str, Any]:
        return {
            "cpsat_status": self.status_name,
            "cpsat_solves": self.solves,
            "cpsat_nogoods": len(self.refuted),
            "cpsat_certificate": self.certificate,
            "cpsat_points_checked": self.checker.checked,
            "cpsat_objective": None if self.best_sel is None else float(self.best_val),
        }


def _scaling_extra(sm: ScaledModel, continuous_resolution: float, workers: int) -> dict[str, Any]:
    """The facts of the scaled copy recorded in the result's extras."""
    return {
        "cpsat_obj_scale": sm.obj_scale,
        "cpsat_row_scale_max": float(sm.row_scale.max()) if sm.row_scale.size else 1.0,
        "cpsat_exact_rows": sm.exact_rows,
        "cpsat_rounded_rows": sm.rounded_rows,
        "cpsat_relaxed_rows": sm.relaxed_rows,
        "cpsat_exact_copy": sm.exact_copy,
        "cpsat_max_coef_error": sm.max_coef_error,
        "cpsat_obj_rounding": sm.obj_rounding,
        "cpsat_continuous_resolution": continuous_resolution,
        "cpsat_workers": workers,
        "cpsat_version": _ortools_version(),
    }


def _solver(cp_model: Any, left: float | None, workers: int, seed: int | None, mip_rel_gap: float | None,
            mip_abs_gap: float | None, verbose: bool, cpsat_parameters: dict[str, Any] | None) -> Any:
    """A ``CpSolver`` with this call's parameters (raw ``cpsat_parameters`` last)."""
    solver = cp_model.CpSolver()
    prm = solver.parameters
    if left is not None:
        prm.max_time_in_seconds = max(float(left), 0.01)
    prm.num_workers = workers
    prm.random_seed = int(seed or 0) % 2147483647
    # CP-SAT stops at these gaps of the copy; the answer's own gap is checked by the caller
    prm.relative_gap_limit = 0.5 * float(mip_rel_gap or 0.0)
    prm.absolute_gap_limit = 0.5 * float(mip_abs_gap or 0.0)
    prm.log_search_progress = bool(verbose)
    # OR-Tools 9.15 sums Boolean coefficients in a 32-bit int in one presolve rule (linear + at-most-one
    # inclusion) and silently drops constraints when they exceed 2**31 (google/or-tools#5293): scaled
    # rows routinely do, so that rule is switched off
    prm.presolve_inclusion_work_limit = 0
    for k, v in (cpsat_parameters or {}).items():
        if not hasattr(prm, k):
            raise InvalidInputError(f"cpsat_parameters: CP-SAT has no parameter {k!r}")
        setattr(prm, k, v)
    return solver


def _Collector(cp_model: Any) -> Any:
    """A CP-SAT solution callback that keeps every solution vector it is shown (in ``.found``)."""

    class Collect(cp_model.CpSolverSolutionCallback):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[np.ndarray] = []

        def on_solution_callback(self) -> None:
            self.found.append(np.asarray(self.response_proto.solution, dtype=float))

    return Collect()


def _x_of(model: LinearModel, sel: np.ndarray) -> np.ndarray:
    """A column vector with the selection block set from ``sel`` (other columns 0)."""
    cols, vals = model.x_from_selection(sel)
    x = np.zeros(model.n_cols)
    x[cols] = vals
    return x


def _ortools_version() -> str:
    try:
        import ortools

        return str(getattr(ortools, "__version__", "unknown"))
    except Exception:  # pragma: no cover
        return "unknown"


def _solve_step(run: ExactRun) -> SolveStep:
    o = run.opts
    sel, term, bound, extra = solve_model_cpsat(
        run.model, time_limit=run.budget.solver_limit(), seed=run.seed,
        mip_rel_gap=o["mip_rel_gap"], mip_abs_gap=o["mip_abs_gap"], threads=o["threads"], verbose=o["verbose"],
        warm_start=o["warm_start"],
        digits=o["digits"], continuous_resolution=o["continuous_resolution"], max_denominator=o["max_denominator"],
        max_nogoods=o["max_nogoods"], cpsat_parameters=o["cpsat_parameters"], key=run.key,
    )
    return SolveStep(sel, term, bound, extra)


@register_method(
    "cpsat",
    kind="exact",
    accepts=linear_acceptor("CP-SAT"),
    description="OR-Tools CP-SAT on an integer-scaled relaxation of the neutral model, every answer re-checked",
    options=CPSAT_OPTIONS,
)
def run_cpsat(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    return run_exact(f, options, time_limit=time_limit, seed=seed, solve=_solve_step,
                     nnz_per_second=CPSAT_NNZ_PER_SECOND)
