"""``"pyomo"``: the neutral model as a Pyomo ``ConcreteModel``.

One indexed ``Var`` per column block and one indexed ``Constraint`` per row
block, with the same names as the neutral model. Solved by Pyomo's HiGHS
interface (``pyomo.contrib.solver``, the new solver API: termination kept apart
from solution status, solution loaded only when there is one), or by any other
Pyomo solver given by name (``solver="cbc"``, ``"glpk"``, ``"gurobi"``, ...).

A model with a quadratic objective (``LinearModel.Q``) becomes a Pyomo
quadratic objective; it needs a solver that takes mixed-integer quadratic
programs: by default (``solver=None``) SCIP through PySCIPOpt
(``scip_direct``, the new solver API), or e.g. ``solver="gurobi"``.

Building Pyomo components is slow for large models; the result's extras record
the neutral build time (``build_seconds``), the Pyomo build time
(``pyomo_build_seconds``) and the solve time apart.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from ._exact import COMMON_OPTIONS, formulation_bound, module_available, prepare, quadratic_acceptor, remaining
from .errors import InvalidInputError, SolverNotInstalledError
from .model import Block, LinearModel
from .options import Option
from .registry import register_method
from .result import MethodOutput, Termination

__all__ = ["to_pyomo", "solve_pyomo_model"]

PYOMO_OPTIONS = (
    *COMMON_OPTIONS,
    Option("solver", None, "str", doc="a Pyomo solver name (default: the new-API HiGHS interface for linear models, "
                                      "SCIP through PySCIPOpt for quadratic objectives)"),
    Option("solver_options", None, "mapping", doc="raw options of that solver"),
)


def _pyo():
    try:
        import pyomo.environ as pyo
    except ImportError as e:  # pragma: no cover - pyomo is a base dependency
        raise SolverNotInstalledError(f"method 'pyomo' needs the package 'pyomo', which is not installed ({e})") from None
    return pyo


def _index_set(block: Block):
    if len(block.shape) == 1:
        return range(block.shape[0])
    return list(np.ndindex(*block.shape))


def to_pyomo(model: LinearModel) -> Any:
    """A Pyomo ``ConcreteModel`` equal to ``model``.

    Column block ``b`` becomes ``m.<b>`` (a ``Var`` indexed like the block),
    row block ``r`` becomes ``m.<r>`` (a ``Constraint``), the objective is
    ``m.objective`` (minimise). Add side constraints to the returned model and
    solve it with any Pyomo solver; :func:`selection_from_pyomo` reads the
    selection back.

    Parameters
    ----------
    model : LinearModel
        A static model (no lazy rows).
    """
    pyo = _pyo()
    from pyomo.core.expr.numeric_expr import LinearExpression

    if model.lazy is not None:
        raise ValueError("model: a model with lazy rows cannot be stated in Pyomo; build a static variant")
    m = pyo.ConcreteModel(name=model.name)
    flat: list[Any] = []
    for blk in model.col_blocks:
        sl = slice(blk.start, blk.stop)
        lb, ub, integ = model.col_lb[sl], model.col_ub[sl], model.integrality[sl]
        binary = integ & (lb == 0) & (ub == 1)
        keys = list(_index_set(blk))
        bounds = {k: (None if np.isneginf(lb[i]) else float(lb[i]), None if np.isposinf(ub[i]) else float(ub[i]))
                  for i, k in enumerate(keys)}
        if integ.all():
            domain = pyo.Binary if binary.all() else pyo.Integers
        elif not integ.any():
            domain = pyo.Reals
        else:  # mixed block: per-element domains
            doms = {k: (pyo.Binary if binary[i] else pyo.Integers if integ[i] else pyo.Reals) for i, k in enumerate(keys)}
            domain = lambda _m, *k: doms[k if len(k) > 1 else k[0]]  # noqa: E731
        var = pyo.Var(keys, domain=domain, bounds=lambda _m, *k: bounds[k if len(k) > 1 else k[0]])
        setattr(m, blk.name, var)
        flat.extend(var[k] for k in keys)
    A = model.A.tocsr()
    indptr, indices, data = A.indptr, A.indices, A.data
    for blk in model.row_blocks:
        keys = list(_index_set(blk))
        rows = range(blk.start, blk.stop)

        def rule(_m, *k, _keys=dict(zip(keys, rows))):
            r = _keys[k if len(k) > 1 else k[0]]
            a, b = indptr[r], indptr[r + 1]
            expr = LinearExpression(constant=0.0, linear_coefs=data[a:b].tolist(),
                                    linear_vars=[flat[j] for j in indices[a:b]])
            lo = None if np.isneginf(model.row_lb[r]) else float(model.row_lb[r])
            hi = None if np.isposinf(model.row_ub[r]) else float(model.row_ub[r])
            return (lo, expr, hi)

        setattr(m, blk.name, pyo.Constraint(keys, rule=rule))
    nz = np.flatnonzero(model.c)
    obj = LinearExpression(constant=float(model.c0), linear_coefs=model.c[nz].tolist(),
                           linear_vars=[flat[j] for j in nz])
    if model.Q is not None and model.Q.nnz:  # 1/2 x'Qx from the upper triangle
        import scipy.sparse as sp

        U = sp.triu(model.Q, format="coo")
        half = np.where(U.row == U.col, 0.5, 1.0) * U.data
        obj = obj + pyo.quicksum(float(v) * flat[i] * flat[j] for i, j, v in zip(U.row.tolist(), U.col.tolist(),
                                                                               half.tolist()))
    m.objective = pyo.Objective(expr=obj, sense=pyo.minimize)
    m._benchsel_flat = flat  # column order of the neutral model
    m._benchsel_selection = (model.selection_block, model.selection_items)
    return m


def selection_from_pyomo(m: Any) -> np.ndarray:
    """Selected items (sorted int64) from a solved model made by :func:`to_pyomo`."""
    name, items = m._benchsel_selection
    var = getattr(m, name)
    vals = np.array([var[k].value if var[k].value is not None else 0.0 for k in var], dtype=float)
    return np.sort(items[vals > 0.5]).astype(np.int64)


_NEW_API = {"highs": "highs", "gurobi": "gurobi_direct", "gurobi_persistent": "gurobi_persistent", "ipopt": "ipopt",
            "scip": "scip_direct"}


def _termination_new(tc) -> Termination:
    from pyomo.contrib.solver.common.results import TerminationCondition as T

    return {
        T.convergenceCriteriaSatisfied: Termination.OPTIMAL,
        T.maxTimeLimit: Termination.TIME_LIMIT,
        T.iterationLimit: Termination.ITERATION_LIMIT,
        T.objectiveLimit: Termination.OBJECTIVE_LIMIT,
        T.unbounded: Termination.UNBOUNDED,
        T.provenInfeasible: Termination.INFEASIBLE,
        T.locallyInfeasible: Termination.INFEASIBLE,
        T.infeasibleOrUnbounded: Termination.INFEASIBLE_OR_UNBOUNDED,
        T.error: Termination.ERROR,
        T.interrupted: Termination.INTERRUPTED,
        T.emptyModel: Termination.OPTIMAL,
    }.get(tc, Termination.UNKNOWN)


def _termination_legacy(tc) -> Termination:
    from pyomo.opt import TerminationCondition as T

    return {
        T.optimal: Termination.OPTIMAL,
        T.maxTimeLimit: Termination.TIME_LIMIT,
        T.maxIterations: Termination.ITERATION_LIMIT,
        T.maxEvaluations: Termination.ITERATION_LIMIT,
        T.infeasible: Termination.INFEASIBLE,
        T.unbounded: Termination.UNBOUNDED,
        T.infeasibleOrUnbounded: Termination.INFEASIBLE_OR_UNBOUNDED,
        T.userInterrupt: Termination.INTERRUPTED,
        T.error: Termination.ERROR,
        T.solverFailure: Termination.ERROR,
    }.get(tc, Termination.UNKNOWN)


def solve_pyomo_model(m: Any, *, solver: str = "highs", time_limit: float | None = None,
                      mip_rel_gap: float | None = None, threads: int | None = None, verbose: bool = False,
                      seed: int | None = None, solver_options: dict[str, Any] | None = None
                      ) -> tuple[bool, Termination, float | None, dict]:
    """Solve a Pyomo model; returns (solution loaded?, termination, bound, extra)."""
    pyo = _pyo()
    opts = dict(solver_options or {})
    if solver == "highs":
        from .highs_backend import _highspy

        _highspy()  # silence HiGHS' one-time stdout banner
    if solver in _NEW_API:
        from pyomo.contrib.solver.common.factory import SolverFactory as NewFactory
        from pyomo.contrib.solver.common.results import SolutionStatus

        opt = NewFactory(_NEW_API[solver])
        if not opt.available():
            raise SolverNotInstalledError(f"solver: Pyomo solver {solver!r} is not available on this machine ({opt.available()})")
        if solver == "highs" and seed is not None:
            opts.setdefault("random_seed", int(seed) % 2147483647)
        res = opt.solve(m, time_limit=time_limit, rel_gap=mip_rel_gap, threads=threads, tee=bool(verbose),
                        load_solutions=False, raise_exception_on_nonoptimal_result=False, solver_options=opts)
        ok = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
        if ok:
            res.solution_loader.load_vars()
        extra = {
            "pyomo_termination": str(res.termination_condition.name),
            "pyomo_solution_status": str(res.solution_status.name),
            "pyomo_solver": solver,
        }
        term = _termination_new(res.termination_condition)
        return ok, term, _valid_bound(res.objective_bound, term), extra
    legacy = pyo.SolverFactory(solver)
    if legacy is None or not legacy.available(exception_flag=False):
        raise SolverNotInstalledError(
            f"solver: Pyomo solver {solver!r} is not installed or not found on PATH; "
            f"built in: {', '.join(_NEW_API)} (others need their executable or package)"
        )
    if time_limit is not None:
        opts.setdefault({"cbc": "sec", "glpk": "tmlim", "cplex": "timelimit", "scip": "limits/time"}.get(solver, "timelimit"),
                        float(time_limit) if solver != "glpk" else int(max(1, time_limit)))
    res = legacy.solve(m, tee=bool(verbose), load_solutions=False, options=opts)
    tc = res.solver.termination_condition
    ok = len(res.solution) > 0
    if ok:
        m.solutions.load_from(res)
    lb = getattr(res.problem, "lower_bound", None)
    term = _termination_legacy(tc)
    return ok, term, _valid_bound(lb, term), {"pyomo_termination": str(tc), "pyomo_solver": solver}


def _valid_bound(b: Any, term: Termination) -> float | None:
    if term in (Termination.INFEASIBLE, Termination.UNBOUNDED, Termination.INFEASIBLE_OR_UNBOUNDED):
        return None
    try:
        b = float(b)
    except (TypeError, ValueError):
        return None
    return b if np.isfinite(b) else None


@register_method(
    "pyomo",
    kind="exact",
    accepts=quadratic_acceptor(
        "Pyomo", "pyomo", label="pyomo (solver='scip')",
        quadratic_usable=lambda: module_available("pyscipopt"),
        quadratic_missing="Pyomo's solver for mixed-integer quadratic programs here is SCIP through PySCIPOpt "
                          "('scip_direct'), which is not installed: pip install pyscipopt",
    ),
    description="Pyomo ConcreteModel of the neutral model, solved by Pyomo's HiGHS interface (or solver=<name>)",
    options=PYOMO_OPTIONS,
)
def run_pyomo(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    model, opts, build = prepare(f, options)
    t0 = time.perf_counter()
    m = to_pyomo(model)
    if opts["warm_start"] is not None:
        name, items = m._benchsel_selection
        var = getattr(m, name)
        chosen = set(np.asarray(opts["warm_start"]).tolist())
        for k, it in zip(var, items):
            var[k].set_value(1.0 if int(it) in chosen else 0.0)
    pyomo_build = time.perf_counter() - t0
    t1 = time.perf_counter()
    solver = opts["solver"] or ("scip" if model.is_quadratic else "highs")
    if model.is_quadratic and solver in ("highs", "cbc", "glpk"):
        raise InvalidInputError(f"solver: {solver!r} solves no mixed-integer quadratic program; use solver='scip' "
                                "(the default for quadratic objectives) or another MIQP solver (e.g. 'gurobi')")
    ok, term, bound, extra = solve_pyomo_model(
        m, solver=solver, time_limit=remaining(time_limit, build + pyomo_build),
        mip_rel_gap=opts["mip_rel_gap"], threads=opts["threads"], verbose=opts["verbose"], seed=seed,
        solver_options=opts["solver_options"],
    )
    solve_s = time.perf_counter() - t1
    sel = selection_from_pyomo(m) if ok else None
    extra.update(model.summary())
    extra["pyomo_build_seconds"] = pyomo_build
    extra.update(opts["_times"])
    return MethodOutput(sel, term, formulation_bound(model, bound), build + pyomo_build, solve_s, extra)
