"""``"highs"``: the neutral model passed to HiGHS through highspy (``passModel``).

The solution is taken only when HiGHS reports a feasible primal solution; on a
time limit the incumbent is kept; the bound is HiGHS' MIP dual bound. The run
goes through :func:`benchsel.solvers.backends.common.run_exact` (one budget for the warm
start, the model build and the solve; the warm start kept as the incumbent when
HiGHS has none or a worse one). On the static path HiGHS gets the time left
after passing the model and runs in a worker thread that is abandoned when it
overruns the limit by more than ``0.4 * time_limit + 1.5`` s (its MIP presolve
does not check the clock everywhere).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import MethodOutput, Termination, Tolerances
from benchsel.solvers.backends.branch_and_cut import BnCOptions, BranchAndCut
from benchsel.solvers.backends.common import (
    COMMON_OPTIONS,
    ExactRun,
    SolveStep,
    call_with_deadline,
    highs_status_map,
    highspy_module,
    linear_acceptor,
    pass_to_highs,
    run_exact,
    wall_grace,
)

__all__ = ["solve_model_highs"]

_BNC = BnCOptions()
#: Options of the branch-and-cut used for models with lazy rows (the k-medoids Benders master).
BNC_OPTIONS = (
    Option("root_rounds", _BNC.root_rounds, "int", low=1, doc="branch-and-cut: most separation rounds at the root"),
    Option("node_rounds", _BNC.node_rounds, "int", low=1,
           doc="branch-and-cut: most separation rounds at other nodes (also stops when the bound stalls)"),
    Option("in_out", _BNC.in_out, "float", low=0.0, high=1.0,
           doc="branch-and-cut: weight of the LP point in the in-out separation point at the root (0 or 1: off)"),
    Option("cut_age", _BNC.cut_age, "int", low=0,
           doc="branch-and-cut: LP solves a cut may stay slack before it moves to the cut pool (0: never)"),
    Option("pool_nnz", _BNC.pool_nnz, "int", low=0,
           doc="branch-and-cut: most non-zeros in the cut pool (about 12 bytes each; the oldest rows go first)"),
    Option("branching", _BNC.branching, "choice", choices=("pseudocost", "fractional"),
           doc="branch-and-cut: branching rule (pseudo-costs learnt from every child, or most fractional)"),
    Option("max_nodes", None, "int", low=1, doc="branch-and-cut: node limit (termination 'iteration_limit')"),
    Option("strong", _BNC.strong, "int", low=0, doc="branch-and-cut: strong-branching candidates per node (0: off)"),
    Option("strong_depth", _BNC.strong_depth, "int", low=0, doc="branch-and-cut: deepest node that strong-branches"),
    Option("reliable", _BNC.reliable, "int", low=0,
           doc="branch-and-cut: with strong, strong-branch only columns with fewer pseudo-cost observations (0: all)"),
    Option("strong_share", _BNC.strong_share, "float", low=0.0, none_ok=True,
           doc="branch-and-cut: strong-branching iterations at most this share of the other LPs' (None: no budget)"),
    Option("strong_offset", _BNC.strong_offset, "int", low=0,
           doc="branch-and-cut: strong-branching iterations allowed beyond strong_share's"),
    Option("plunge", _BNC.plunge, "float", low=0.0,
           doc="branch-and-cut: plunge while a child is within this share of the gap"),
    Option("heuristic_every", _BNC.heuristic_every, "int", low=0,
           doc="branch-and-cut: node heuristic (LP rounding, then eager swaps) every this many nodes (0: root only)"),
    Option("compact", _BNC.compact, "float", low=0.0, high=1.0,
           doc="branch-and-cut: columns root fixing holds at 0 leave the LP once they are this share of it (0: never)"),
    Option("parallel_after", _BNC.parallel_after, "float", low=0.0,
           doc="branch-and-cut: seconds on one thread before the other search threads start (threads: their "
               "number, default the cores available, at most 4; threads=1 makes the search reproducible)"),
    Option("own_share", _BNC.own_share, "float", low=0.0, high=1.0,
           doc="branch-and-cut, several threads: a thread takes its own best open node while that node's bound is "
               "within this share of the gap above the best open bound"),
)
HIGHS_OPTIONS = (*COMMON_OPTIONS, Option("highs_options", None, "mapping", doc="raw HiGHS options (name: value)"),
                 *BNC_OPTIONS)


#: Rate at which HiGHS takes in a static model (non-zeros per second, passModel and presolve), for size guards.
HIGHS_NNZ_PER_SECOND = 5.0e5

def solve_model_highs(model: LinearModel, *, time_limit: float | None = None, seed: int | None = 0,
                      mip_rel_gap: float | None = 1e-6, threads: int | None = None, verbose: bool = False,
                      warm_start: np.ndarray | None = None, highs_options: dict[str, Any] | None = None,
                      mip_abs_gap: float | None = None,
                      key: Callable[[np.ndarray], float | None] | None = None, grace: float | None = None,
                      bnc_options: BnCOptions | None = None,
                      ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Solve a :class:`LinearModel` with HiGHS.

    Parameters
    ----------
    model : LinearModel
        With ``model.lazy`` set, rows are generated on demand in a
        branch-and-cut whose node LPs HiGHS solves
        (:class:`~benchsel.solvers.backends.branch_and_cut.BranchAndCut`).
    time_limit : float, optional
        Seconds for the call; on the static path the time spent passing the
        model and the warm start is subtracted before HiGHS starts.
    seed, mip_rel_gap, mip_abs_gap, threads, verbose, highs_options
        HiGHS settings (``highs_options`` is passed to ``setOptionValue``).
    warm_start : ndarray of int, optional
        A selection (item indices) given to HiGHS as a partial solution.
    key : callable, optional
        ``key(selection)`` -> true objective in model units (lower is better),
        or None when the selection is infeasible. Needed with lazy rows to
        rank incumbents (the master objective underestimates).
    grace : float, optional
        With a time limit on the static path: HiGHS runs in a worker thread
        and is abandoned (no selection, termination ``"time_limit"``) when it
        has not returned ``grace`` seconds after the limit.
    bnc_options : BnCOptions, optional
        Settings of the branch-and-cut (lazy rows only).

    Returns
    -------
    selection : ndarray of int or None
        The best selection when HiGHS found a feasible solution.
    termination : Termination
        HiGHS' own status (the judge, :mod:`benchsel.solvers.claims`, decides the claim).
    bound : float or None
        Bound on the model (minimisation) objective (None with ``extra["highs_inconsistent"]``).
    extra : dict
    """
    t_enter = time.perf_counter()
    hp = highspy_module()
    h = hp.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
        h.resetGlobalScheduler(True)
    if seed is not None:
        h.setOptionValue("random_seed", int(seed) % 2147483647)
    if mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    if mip_abs_gap is not None:
        h.setOptionValue("mip_abs_gap", float(mip_abs_gap))
    for k, v in (highs_options or {}).items():
        if h.setOptionValue(k, v) == hp.HighsStatus.kError:
            raise InvalidInputError(f"highs_options: HiGHS refused option {k!r} = {v!r}")
    pass_to_highs(h, hp, model)
    extra: dict[str, Any] = {
        "highs_version": f"{hp.HIGHS_VERSION_MAJOR}.{hp.HIGHS_VERSION_MINOR}.{hp.HIGHS_VERSION_PATCH}",
        "highs_feasibility_tolerance": _option(
            h, "mip_feasibility_tolerance" if model.integrality.any() else "primal_feasibility_tolerance"),
    }
    if model.lazy is not None:
        if key is None:
            raise InvalidInputError("key: a model with lazy rows needs a true-objective key to rank incumbents")
        h.setOptionValue("output_flag", False)  # one LP per node: progress comes from the branch-and-cut
        if model.integrality.any():
            h.setOptionValue("presolve", "off")  # node LPs are re-solved from the previous basis
        bnc = BranchAndCut(h, hp, model, key, time_limit=time_limit, mip_rel_gap=mip_rel_gap, verbose=verbose,
                           warm_start=warm_start, options=bnc_options)
        sel, term, bound, more = bnc.run()
        extra.update(more)
        return sel, term, bound, extra
    if warm_start is not None:
        cols, vals = model.x_from_selection(warm_start)
        h.setSolution(len(cols), np.asarray(cols, np.int32), np.asarray(vals, np.float64))
    if time_limit is not None:  # the call's seconds: passing the model and the warm start count too
        h.setOptionValue("time_limit", max(float(time_limit) - (time.perf_counter() - t_enter), 0.01))
    wait = None if time_limit is None or grace is None else max(float(time_limit) - (time.perf_counter() - t_enter),
                                                                0.0) + float(grace)
    done, _ = call_with_deadline(h.run, wait, "benchsel-highs")
    if not done:  # HiGHS does not check its time limit everywhere (e.g. the MIP presolve of a large model)
        extra["highs_status"] = "abandoned: still running after the time limit and its grace"
        return None, Termination.TIME_LIMIT, None, extra
    status = h.getModelStatus()
    info = h.getInfo()
    term = highs_status_map(hp).get(status, Termination.ERROR if "Error" in str(status) else Termination.UNKNOWN)
    has_sol = info.primal_solution_status == hp.kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_sol else None
    is_mip = bool(model.integrality.any())
    if is_mip:
        bound = float(info.mip_dual_bound)
    else:
        bound = float(info.objective_function_value) if term == Termination.OPTIMAL else None
    if term in (Termination.INFEASIBLE, Termination.UNBOUNDED, Termination.INFEASIBLE_OR_UNBOUNDED):
        bound = None
    extra.update({
        "highs_status": h.modelStatusToString(status),
        "highs_mip_gap": float(info.mip_gap) if is_mip and has_sol else None,
        "highs_nodes": int(info.mip_node_count) if is_mip else 0,
        "highs_objective": float(info.objective_function_value) if has_sol else None,
    })
    if x is not None and not _objective_consistent(model, x, float(info.objective_function_value)):
        # HiGHS 1.16 can return a given start with a wrong objective value and dual bound (seen on a
        # presolved set-multicover model): neither its claim nor its bound can be trusted
        note = (f"HiGHS reported objective {info.objective_function_value:.9g} for a solution whose objective "
                f"is {float(model.c @ x + model.c0):.9g}")
        if warm_start is not None:  # solve again without the start, in the time left
            left = None if time_limit is None else max(float(time_limit) - (time.perf_counter() - t_enter), 0.05)
            sel, term, bound, again = solve_model_highs(
                model, time_limit=left, seed=seed, mip_rel_gap=mip_rel_gap, threads=threads, verbose=verbose,
                warm_start=None, highs_options=highs_options, mip_abs_gap=mip_abs_gap, key=key, grace=grace)
            again["highs_warm_start_rejected"] = note + "; solved again without the warm start"
            return sel, term, bound, again
        extra["highs_inconsistent"] = note  # the one judge keeps the selection, not the claim or the bound
        return model.selection_from_x(x), term, None, extra
    return (model.selection_from_x(x) if x is not None else None), term, bound, extra


def _option(h: Any, name: str) -> float:
    """A HiGHS option's value (highspy returns ``(status, value)`` in some versions, the value in others)."""
    v = h.getOptionValue(name)
    return float(v[1] if isinstance(v, tuple) else v)


def _objective_consistent(model: LinearModel, x: np.ndarray, reported: float) -> bool:
    """Does HiGHS' reported objective match the model's objective at its solution ``x`` (shape (n_cols,))?"""
    value = float(model.c @ x + model.c0)
    return abs(value - reported) <= 1e-6 * max(1.0, abs(value))


def _solve_step(run: ExactRun) -> SolveStep:
    o = run.opts
    sel, term, bound, extra = solve_model_highs(
        run.model, time_limit=run.budget.solver_limit(), seed=run.seed, mip_rel_gap=o["mip_rel_gap"],
        mip_abs_gap=o["mip_abs_gap"], threads=o["threads"], verbose=o["verbose"], warm_start=o["warm_start"],
        highs_options=o["highs_options"], key=run.key, grace=wall_grace(run.budget.limit),
        bnc_options=BnCOptions(root_rounds=o["root_rounds"], node_rounds=o["node_rounds"], in_out=o["in_out"],
                               cut_age=o["cut_age"], heuristic_every=o["heuristic_every"], strong=o["strong"],
                               strong_depth=o["strong_depth"], reliable=o["reliable"],
                               strong_share=o["strong_share"], strong_offset=o["strong_offset"], plunge=o["plunge"],
                               branching=o["branching"],
                               max_nodes=o["max_nodes"], pool_nnz=o["pool_nnz"], compact=o["compact"],
                               threads=o["threads"], parallel_after=o["parallel_after"],
                               own_share=o["own_share"]),
    )
    if extra.get("highs_objective") is not None:
        extra["highs_objective"] = run.model.objective_sign * extra["highs_objective"]
    tol = Tolerances(float(o["mip_rel_gap"] or 0.0), float(o["mip_abs_gap"] or 0.0),
                     float(extra.get("highs_feasibility_tolerance", 0.0)))
    return SolveStep(sel, term, bound, extra, tolerances=tol, distrust=extra.get("highs_inconsistent"))


@register_method(
    "highs",
    kind="exact",
    accepts=linear_acceptor("HiGHS"),
    description="HiGHS MIP solver through highspy, reading the neutral linear model",
    options=HIGHS_OPTIONS,
)
def run_highs(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    return run_exact(f, options, time_limit=time_limit, seed=seed, solve=_solve_step, allow_lazy=True,
                     nnz_per_second=HIGHS_NNZ_PER_SECOND)
