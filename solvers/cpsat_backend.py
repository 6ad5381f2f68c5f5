"""``"cpsat"``: OR-Tools CP-SAT on an explicitly integer-scaled copy of the model.

CP-SAT takes integer variables and integer coefficients only. The scaling is
explicit and recorded in the result:

* integer and implied-integer columns stay as they are; a truly continuous
  column ``v`` becomes the integer ``V = v / resolution`` (``continuous_resolution``,
  default ``1e-6``), so it needs finite bounds;
* each row (and the objective) is multiplied by its own scale ``rho``: the
  least common denominator of its coefficients and bounds when they are
  rationals with denominators up to ``max_denominator`` (exact), otherwise a
  power of ten that puts the largest coefficient near ``10**digits`` (rounded);
* row bounds are rounded inwards (``ceil`` of a lower, ``floor`` of an upper
  bound), which is exact when the coefficients are;
* ``threads`` sets CP-SAT's ``num_workers``; it defaults to 8 whatever the core
  count, because CP-SAT's portfolio (LP-based workers included) needs them;
* the largest coefficient rounding error, the objective's worst-case rounding
  and the scales go to ``Result.extra``; the bound is widened by the
  objective's rounding so that it stays valid.

The returned selection is re-evaluated in floating point by the formulation,
whatever CP-SAT's objective says.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._exact import COMMON_OPTIONS, formulation_bound, linear_acceptor, prepare, refuse_quadratic, remaining
from .errors import InvalidInputError, SolverNotInstalledError
from .model import LinearModel
from .options import Option
from .registry import register_method
from .result import MethodOutput, Termination

__all__ = ["ScaledModel", "scale_model", "solve_model_cpsat"]

CPSAT_OPTIONS = (
    *COMMON_OPTIONS,
    Option("digits", 9, "int", low=1, high=15, doc="significant digits of a row scaled by a power of ten"),
    Option("continuous_resolution", 1e-6, "float", low=0.0, low_open=True,
           doc="grid step of continuous columns in the integer copy"),
    Option("max_denominator", 10**6, "int", low=1, doc="largest denominator of an exactly scaled rational row"),
    Option("cpsat_parameters", None, "mapping", doc="raw CP-SAT parameters (name: value)"),
)
_LIMIT = 2**62


def _cp_model():
    try:
        from ortools.sat.python import cp_model
    except ImportError as e:  # pragma: no cover - ortools is a base dependency
        raise SolverNotInstalledError(
            f"method 'cpsat' needs the package 'ortools', which is not installed ({e}); pip install ortools"
        ) from None
    return cp_model


@dataclass(frozen=True, eq=False)
class ScaledModel:
    """Integer copy of a :class:`LinearModel`.

    Attributes
    ----------
    A : scipy.sparse.csr_array of int64, shape (m, n)
    row_lb, row_ub : ndarray of int64 (or inf as float for free sides), shape (m,)
    col_lb, col_ub : ndarray of int64, shape (n,)
    c : ndarray of int64, shape (n,)
    col_scale : ndarray, shape (n,)
        ``V = col_scale * v``.
    row_scale : ndarray, shape (m,)
    obj_scale : float
    exact_rows : int
        Rows scaled exactly (rational); the rest were rounded.
    max_coef_error : float
        Largest ``|round(rho a) / rho - a|`` over the rows, in model units.
    obj_rounding : float
        Worst-case change of the objective caused by rounding its coefficients.
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
    max_coef_error: float
    obj_rounding: float


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


def _row_scales(A: sp.csr_array, lb: np.ndarray, ub: np.ndarray, digits: int, max_den: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Scale per row; returns (rho, exact) with ``exact`` a bool array."""
    m = A.shape[0]
    counts = np.diff(A.indptr)
    den_a = _denominators(A.data, max_den) if A.nnz else np.zeros(0, np.int64)
    fin_lb, fin_ub = np.isfinite(lb), np.isfinite(ub)
    den_lb = np.ones(m, np.int64)
    den_ub = np.ones(m, np.int64)
    if fin_lb.any():
        den_lb[fin_lb] = _denominators(lb[fin_lb], max_den)
    if fin_ub.any():
        den_ub[fin_ub] = _denominators(ub[fin_ub], max_den)
    rho = np.ones(m, dtype=float)
    exact = np.ones(m, dtype=bool)
    row_of = np.repeat(np.arange(m), counts)
    bad = (den_lb == 0) | (den_ub == 0)  # some value of the row is no rational with a small denominator
    frac = (den_lb > 1) | (den_ub > 1)  # some value of the row is a non-integer rational
    amax = np.zeros(m)
    if A.nnz:
        np.logical_or.at(bad, row_of, den_a == 0)
        np.logical_or.at(frac, row_of, den_a > 1)
        np.maximum.at(amax, row_of, np.abs(A.data))
    for r in np.flatnonzero(frac & ~bad):
        a, b = A.indptr[r], A.indptr[r + 1]
        q = int(np.lcm.reduce(np.concatenate([den_a[a:b], [den_lb[r], den_ub[r]]]).astype(object)))
        if q * max(amax[r], 1.0) <= 10.0 ** (digits + 3):
            rho[r] = q
        else:
            bad[r] = True
    for r in np.flatnonzero(bad):
        exp = digits - math.ceil(math.log10(amax[r])) if amax[r] > 0 else 0
        rho[r] = 10.0 ** max(exp, 0)
        exact[r] = False
    return rho, exact


def scale_model(model: LinearModel, *, digits: int = 9, continuous_resolution: float = 1e-6,
                max_denominator: int = 10**6) -> ScaledModel:
    """Integer-scale ``model`` for CP-SAT (see the module docstring)."""
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
    col_lb = np.ceil(lo - 1e-9).astype(np.int64)
    col_ub = np.floor(hi + 1e-9).astype(np.int64)
    A1 = (model.A @ sp.diags_array(1.0 / sigma)).tocsr()
    A1.sort_indices()
    rho, exact = _row_scales(A1, model.row_lb, model.row_ub, digits, max_denominator)
    counts = np.diff(A1.indptr)
    row_of = np.repeat(np.arange(A1.shape[0]), counts)
    scaled = A1.data * rho[row_of]
    coef = np.round(scaled)
    err = np.abs(coef - scaled) / rho[row_of] if coef.size else np.zeros(0)
    Ai = sp.csr_array((coef.astype(np.int64), A1.indices, A1.indptr), shape=A1.shape)
    tol = 1e-9
    rlb = np.where(np.isfinite(model.row_lb), np.ceil(model.row_lb * rho - tol * np.maximum(1, np.abs(model.row_lb * rho))), -np.inf)
    rub = np.where(np.isfinite(model.row_ub), np.floor(model.row_ub * rho + tol * np.maximum(1, np.abs(model.row_ub * rho))), np.inf)
    # overflow guard: |activity| must fit in int64
    span = np.maximum(np.abs(col_lb), np.abs(col_ub)).astype(float)
    act = np.abs(Ai.astype(float)) @ span
    if act.size and act.max() >= _LIMIT:
        r = int(np.argmax(act))
        raise InvalidInputError(
            f"digits: row {model.row_label(r)} overflows CP-SAT's 64-bit range after scaling (activity up to "
            f"{act[r]:.3g}); lower 'digits' or raise 'continuous_resolution'"
        )
    c1 = model.c / sigma
    rho0_arr, ex0 = _row_scales(sp.csr_array(c1[None, :]), np.array([-np.inf]), np.array([np.inf]), digits, max_denominator)
    rho0 = float(rho0_arr[0])
    cI = np.round(c1 * rho0)
    obj_round = float(np.abs(cI / rho0 - c1) @ span)
    if np.abs(cI) @ span >= _LIMIT:
        raise InvalidInputError("digits: the objective overflows CP-SAT's 64-bit range after scaling; lower 'digits'")
    return ScaledModel(
        A=Ai, row_lb=rlb, row_ub=rub, col_lb=col_lb, col_ub=col_ub, c=cI.astype(np.int64), c0=float(model.c0),
        col_scale=sigma, row_scale=rho, obj_scale=rho0, exact_rows=int(exact.sum()),
        max_coef_error=float(err.max()) if err.size else 0.0, obj_rounding=obj_round,
    )


def solve_model_cpsat(model: LinearModel, *, time_limit: float | None = None, seed: int | None = 0,
                      mip_rel_gap: float | None = 1e-6, threads: int | None = None, verbose: bool = False,
                      warm_start: np.ndarray | None = None, digits: int = 9, continuous_resolution: float = 1e-6,
                      max_denominator: int = 10**6, cpsat_parameters: dict[str, Any] | None = None
                      ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Solve a static :class:`LinearModel` with CP-SAT; returns (selection, termination, bound, extra)."""
    cp_model = _cp_model()
    if model.lazy is not None:
        raise InvalidInputError("model: CP-SAT needs a static model (no lazy rows)")
    sm = scale_model(model, digits=digits, continuous_resolution=continuous_resolution, max_denominator=max_denominator)
    cm = cp_model.CpModel()
    proto = cm.proto
    for lo, hi in zip(sm.col_lb.tolist(), sm.col_ub.tolist()):
        proto.variables.add().domain.extend([lo, hi])
    A = sm.A
    ind, dat, ptr = A.indices.tolist(), A.data.tolist(), A.indptr
    lbs = [int(v) if np.isfinite(v) else cp_model.INT_MIN for v in sm.row_lb]
    ubs = [int(v) if np.isfinite(v) else cp_model.INT_MAX for v in sm.row_ub]
    for r in range(A.shape[0]):
        a, b = int(ptr[r]), int(ptr[r + 1])
        ct = proto.constraints.add().linear
        ct.vars.extend(ind[a:b])
        ct.coeffs.extend(dat[a:b])
        ct.domain.extend([lbs[r], ubs[r]])
    nz = np.flatnonzero(sm.c)
    proto.objective.vars.extend(nz.tolist())
    proto.objective.coeffs.extend(sm.c[nz].tolist())
    proto.objective.offset = float(sm.c0 * sm.obj_scale)
    proto.objective.scaling_factor = float(1.0 / sm.obj_scale)
    if warm_start is not None:
        cols, vals = model.x_from_selection(warm_start)
        proto.solution_hint.vars.extend(cols.tolist())
        proto.solution_hint.values.extend([int(v) for v in vals])
    solver = cp_model.CpSolver()
    prm = solver.parameters
    if time_limit is not None:
        prm.max_time_in_seconds = float(time_limit)
    prm.num_workers = int(threads) if threads is not None else 8  # CP-SAT's portfolio needs several workers
    prm.random_seed = int(seed or 0) % 2147483647
    if mip_rel_gap is not None:
        prm.relative_gap_limit = float(mip_rel_gap)
    prm.log_search_progress = bool(verbose)
    for k, v in (cpsat_parameters or {}).items():
        if not hasattr(prm, k):
            raise InvalidInputError(f"cpsat_parameters: CP-SAT has no parameter {k!r}")
        setattr(prm, k, v)
    status = solver.solve(cm)
    name = solver.status_name(status)
    has = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    if status == cp_model.OPTIMAL:
        term = Termination.OPTIMAL
    elif status == cp_model.INFEASIBLE:
        term = Termination.INFEASIBLE
    elif status == cp_model.MODEL_INVALID:
        term = Termination.ERROR
    else:  # FEASIBLE or UNKNOWN: stopped by a limit
        term = Termination.TIME_LIMIT if time_limit is not None else Termination.UNKNOWN
    sel = None
    if has:
        V = np.asarray(list(solver.response_proto.solution), dtype=float)
        sel = model.selection_from_x(V / sm.col_scale)
    bound = None
    if term not in (Termination.INFEASIBLE, Termination.ERROR) and (has or term == Termination.TIME_LIMIT):
        b = float(solver.best_objective_bound)
        bound = b - sm.obj_rounding if np.isfinite(b) else None
    extra = {
        "cpsat_status": name,
        "cpsat_objective": float(solver.objective_value) if has else None,
        "cpsat_obj_scale": sm.obj_scale,
        "cpsat_row_scale_max": float(sm.row_scale.max()) if sm.row_scale.size else 1.0,
        "cpsat_exact_rows": sm.exact_rows,
        "cpsat_rounded_rows": int(sm.row_scale.size - sm.exact_rows),
        "cpsat_max_coef_error": sm.max_coef_error,
        "cpsat_obj_rounding": sm.obj_rounding,
        "cpsat_continuous_resolution": continuous_resolution,
        "cpsat_version": _ortools_version(),
    }
    if status == cp_model.MODEL_INVALID:
        extra["error"] = cm.validate()
    return sel, term, bound, extra


def _ortools_version() -> str:
    try:
        import ortools

        return ortools.__version__
    except Exception:  # pragma: no cover
        return "unknown"


@register_method(
    "cpsat",
    kind="exact",
    accepts=linear_acceptor("CP-SAT"),
    description="OR-Tools CP-SAT on an explicitly integer-scaled copy of the neutral model",
    options=CPSAT_OPTIONS,
)
def run_cpsat(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    model, opts, build = prepare(f, options)
    t0 = time.perf_counter()
    sel, term, bound, extra = solve_model_cpsat(
        model, time_limit=remaining(time_limit, build), seed=seed, mip_rel_gap=opts["mip_rel_gap"],
        threads=opts["threads"], verbose=opts["verbose"], warm_start=opts["warm_start"], digits=opts["digits"],
        continuous_resolution=opts["continuous_resolution"], max_denominator=opts["max_denominator"],
        cpsat_parameters=opts["cpsat_parameters"],
    )
    extra.update(model.summary())
    extra.update(opts["_times"])
    return MethodOutput(sel, term, formulation_bound(model, bound), build, time.perf_counter() - t0, extra)
