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
(``pyomo_build_seconds``) and the solve time apart. Under a time limit the
build and the hand-over to the solver are predicted from the model's size and
the solve is skipped (the warm start returned) when they cannot fit; building
checks the clock at every component element; the solver gets the time left
after the predicted hand-over.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

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
    module_available,
    quadratic_acceptor,
    run_exact,
)
from benchsel.solvers.backends.pyomo_model import (
    PyomoBuildTimeout,
    pyomo_environ,
    selection_from_pyomo,
    to_pyomo,
)
from benchsel.solvers.backends.scip import scip_policy

__all__ = ["solve_pyomo_model", "to_pyomo"]

#: SCIP's feasibility tolerance for quadratic models handed over by Pyomo (unless ``solver_options`` sets one).
#: 1e-6 leaves the bound of a quadratic epigraph loose by about 1e-6 relative; at 1e-9 SCIP 10 ran past its
#: time limit without end on BatchInformationGain with sigma2 = 1e-8 alpha (tests/formulations/test_bayes.py).
QUADRATIC_FEASTOL = 1e-8
#: The feasibility tolerance of the solvers Pyomo hands models to (option name, default), reported to the judge
#: of claims; another solver's is unknown here (0: its claims are judged at the gap alone).
_FEASIBILITY: dict[str, tuple[str, float]] = {"highs": ("mip_feasibility_tolerance", 1e-6),
                                               "scip": ("numerics/feastol", 1e-6)}
#: Model building rate (non-zeros per second: Pyomo components are built term by term), for size guards.
PYOMO_NNZ_PER_SECOND = 1.0e5

PYOMO_OPTIONS = (
    *COMMON_OPTIONS,
    Option("solver", None, "str", doc="a Pyomo solver name (default: the new-API HiGHS interface for linear models, "
                                      "SCIP through PySCIPOpt for quadratic objectives)"),
    Option("solver_options", None, "mapping", doc="raw options of that solver"),
)


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
                      seed: int | None = None, solver_options: dict[str, Any] | None = None,
                      mip_abs_gap: float | None = None) -> tuple[bool, Termination, float | None, dict]:
    """Solve a Pyomo model; returns (solution loaded?, termination, bound, extra)."""
    pyo = pyomo_environ()
    opts = dict(solver_options or {})
    if solver == "highs":

        highspy_module()  # silence HiGHS' one-time stdout banner
    if solver in _NEW_API:
        from pyomo.contrib.solver.common.factory import SolverFactory as NewFactory
        from pyomo.contrib.solver.common.results import SolutionStatus

        opt = NewFactory(_NEW_API[solver])
        if not opt.available():
            raise SolverNotInstalledError(
                f"solver: Pyomo solver {solver!r} is not available on this machine ({opt.available()})")
        if solver == "highs" and seed is not None:
            opts.setdefault("random_seed", int(seed) % 2147483647)
        res = opt.solve(m, time_limit=time_limit, rel_gap=mip_rel_gap, abs_gap=mip_abs_gap, threads=threads,
                        tee=bool(verbose),
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
        name = {"cbc": "sec", "glpk": "tmlim", "cplex": "timelimit", "scip": "limits/time"}.get(solver, "timelimit")
        opts.setdefault(name, float(time_limit) if solver != "glpk" else int(max(1, time_limit)))
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


#: Handing a Pyomo model to HiGHS (expression walk, row by row) took about 1.5x as long as building it
#: (200 x 100 proportionality: 4.3 s build, 6.6 s hand-over); the solver gets the budget left after
#: this estimate, and the solve is skipped when nothing would be left.
HANDOVER_FACTOR = 1.6
#: Pyomo building costs about this much per row or column and per non-zero (constants calibrated once on a
#: k-medoids radius model and a proportionality model; the prediction is rough and only guards time limits).
SECONDS_PER_ROW_OR_COL, SECONDS_PER_NONZERO = 4e-5, 2e-6


def predicted_build_seconds(model: LinearModel) -> float:
    """Rough seconds :func:`to_pyomo` needs for ``model`` (from the calibrated constants)."""
    return SECONDS_PER_ROW_OR_COL * (model.n_cols + model.n_rows) + SECONDS_PER_NONZERO * model.nnz


def _solve_step(run: ExactRun) -> SolveStep:
    o = run.opts
    solver = o["solver"] or ("scip" if run.model.is_quadratic else "highs")
    if run.model.is_quadratic and solver in ("highs", "cbc", "glpk"):
        raise InvalidInputError(f"solver: {solver!r} solves no mixed-integer quadratic program; use solver='scip' "
                                "(the default for quadratic objectives) or another MIQP solver (e.g. 'gurobi')")
    if run.budget.limit is not None:
        left = run.budget.left() or 0.0
        need = predicted_build_seconds(run.model) * (1.0 + HANDOVER_FACTOR)
        if need > left:
            return SolveStep(None, Termination.TIME_LIMIT, None,
                             {"pyomo_build": f"skipped: building and handing over the Pyomo model takes about "
                                             f"{need:.2f} s, {left:.2f} s left"})
    t0 = time.perf_counter()
    try:
        m = to_pyomo(run.model, deadline=run.budget.deadline)
    except PyomoBuildTimeout:
        return SolveStep(None, Termination.TIME_LIMIT, None, {"pyomo_build": "unfinished at the time limit"},
                         build_seconds=time.perf_counter() - t0)
    if o["warm_start"] is not None:
        name, items = m._benchsel_selection
        var = getattr(m, name)
        chosen = set(np.asarray(o["warm_start"]).tolist())
        for k, it in zip(var, items):
            var[k].set_value(1.0 if int(it) in chosen else 0.0)
    pyomo_build = time.perf_counter() - t0
    extra: dict[str, Any] = {"pyomo_build_seconds": pyomo_build}
    limit = None
    if run.budget.limit is not None:
        left = run.budget.left() or 0.0
        handover = HANDOVER_FACTOR * pyomo_build
        if left - handover < 0.05:
            extra["pyomo_solve"] = f"skipped: {left:.2f} s left, handing the model over takes about {handover:.2f} s"
            return SolveStep(None, Termination.TIME_LIMIT, None, extra, build_seconds=pyomo_build)
        limit = left - handover
    # no watchdog thread here: Pyomo's solver interfaces redirect the process's file descriptors while
    # they run, which an abandoned thread would leave in disorder
    solver_options = dict(o["solver_options"] or {})
    if solver == "scip":  # SCIP's policy for the problem's numerical properties, the caller's options first
        solver_options = {**scip_policy(run.f.numerical_properties), **solver_options}
    if run.model.is_quadratic and solver == "scip":
        # SCIP's default feasibility tolerance (1e-6) leaves the epigraph of the quadratic objective loose by
        # about that much relative: its bound then misses the default 1e-6 relative gap of the checked claim
        solver_options.setdefault("numerics/feastol", QUADRATIC_FEASTOL)
    ok, term, bound, more = solve_pyomo_model(
        m, solver=solver, time_limit=limit, mip_rel_gap=o["mip_rel_gap"], mip_abs_gap=o["mip_abs_gap"],
        threads=o["threads"], verbose=o["verbose"], seed=run.seed, solver_options=solver_options,
    )
    extra.update(more)
    name, default = _FEASIBILITY.get(solver, ("", 0.0))
    tol = Tolerances(float(o["mip_rel_gap"] or 0.0), float(o["mip_abs_gap"] or 0.0),
                     float(solver_options.get(name, default)))
    return SolveStep(selection_from_pyomo(m) if ok else None, term, bound, extra, build_seconds=pyomo_build,
                     tolerances=tol)


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
    return run_exact(f, options, time_limit=time_limit, seed=seed, solve=_solve_step,
                     nnz_per_second=PYOMO_NNZ_PER_SECOND)
