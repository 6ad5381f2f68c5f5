"""``"highs"``: the neutral model passed to HiGHS through highspy (``passModel``).

The solution is taken only when HiGHS reports a feasible primal solution; on a
time limit the incumbent is kept; the bound is HiGHS' MIP dual bound.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

import numpy as np

from .errors import InvalidInputError, SolverNotInstalledError
from .model import LinearModel, RowBlock
from .registry import register_method
from .result import MethodOutput, Termination
from ._exact import COMMON_OPTIONS, formulation_bound, linear_acceptor, prepare, remaining, true_key

__all__ = ["solve_model_highs"]

HIGHS_OPTIONS = {**COMMON_OPTIONS, "highs_options": None}


_BANNER_DONE = False


def _highspy():
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


def _status_map(hp) -> dict[Any, Termination]:
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


def _pass_model(h, hp, model: LinearModel) -> None:
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


def solve_model_highs(model: LinearModel, *, time_limit: float | None = None, seed: int | None = 0,
                      mip_rel_gap: float | None = 1e-6, threads: int | None = None, verbose: bool = False,
                      warm_start: np.ndarray | None = None, highs_options: dict[str, Any] | None = None,
                      key: Callable[[np.ndarray], float | None] | None = None,
                      ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Solve a :class:`LinearModel` with HiGHS.

    Parameters
    ----------
    model : LinearModel
        With ``model.lazy`` set, rows are generated on demand: first a cut loop
        on the LP relaxation, then MIP solves; the rows violated by any master
        solution HiGHS found are added and the solve restarted from the best
        true incumbent, until the master optimum violates no row.
    time_limit, seed, mip_rel_gap, threads, verbose, highs_options
        HiGHS settings (``highs_options`` is passed to ``setOptionValue``).
    warm_start : ndarray of int, optional
        A selection (item indices) given to HiGHS as a partial solution.
    key : callable, optional
        ``key(selection)`` -> true objective in model units (lower is better),
        or None when the selection is infeasible. Needed with lazy rows to
        rank incumbents (the master objective underestimates).

    Returns
    -------
    selection : ndarray of int or None
        The best selection when HiGHS found a feasible solution.
    termination : Termination
    bound : float or None
        Bound on the model (minimisation) objective.
    extra : dict
    """
    hp = _highspy()
    h = hp.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
        h.resetGlobalScheduler(True)
    if seed is not None:
        h.setOptionValue("random_seed", int(seed) % 2147483647)
    if mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    for k, v in (highs_options or {}).items():
        if h.setOptionValue(k, v) == hp.HighsStatus.kError:
            raise InvalidInputError(f"highs_options: HiGHS refused option {k!r} = {v!r}")
    _pass_model(h, hp, model)
    extra: dict[str, Any] = {
        "highs_version": f"{hp.HIGHS_VERSION_MAJOR}.{hp.HIGHS_VERSION_MINOR}.{hp.HIGHS_VERSION_PATCH}"
    }
    if model.lazy is not None:
        if key is None:
            raise InvalidInputError("key: a model with lazy rows needs a true-objective key to rank incumbents")
        sel, term, bound, more = _solve_lazy(h, hp, model, time_limit, key, warm_start)
        extra.update(more)
        return sel, term, bound, extra
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if warm_start is not None:
        cols, vals = model.x_from_selection(warm_start)
        h.setSolution(int(len(cols)), np.asarray(cols, np.int32), np.asarray(vals, np.float64))
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    term = _status_map(hp).get(status, Termination.ERROR if "Error" in str(status) else Termination.UNKNOWN)
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
    return (model.selection_from_x(x) if x is not None else None), term, bound, extra


def _add_rows(h, block: RowBlock, n_cols: int) -> None:
    A = block.csr(n_cols)
    h.addRows(int(A.shape[0]), block.lb.astype(np.float64), block.ub.astype(np.float64), int(A.nnz),
              A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data.astype(np.float64))


def _solve_lazy(h, hp, model: LinearModel, time_limit: float | None, key: Callable[[np.ndarray], float | None],
                warm_start: np.ndarray | None, max_lp_rounds: int = 1000
                ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Row generation: LP cut loop, then MIP solves restarted when a lazy row is violated."""
    t0 = time.perf_counter()
    left = (lambda: None) if time_limit is None else (lambda: time_limit - (time.perf_counter() - t0))
    lazy = model.lazy
    S = hp.HighsModelStatus
    n = model.n_cols
    ints = np.flatnonzero(model.integrality).astype(np.int32)
    bound = -np.inf
    n_cuts = 0
    best_sel, best_key = None, np.inf

    def offer(sel: np.ndarray) -> None:
        nonlocal best_sel, best_key
        k = key(sel)
        if k is not None and k < best_key - 1e-12:
            best_sel, best_key = sel, k

    if warm_start is not None:
        offer(np.asarray(warm_start))
    # 1. cut loop on the LP relaxation
    if ints.size:
        h.changeColsIntegrality(int(ints.size), ints, np.zeros(ints.size, dtype=np.uint8))
    lp_rounds = 0
    term = None
    while lp_rounds < max_lp_rounds:
        rem = left()
        if rem is not None and rem <= 0:
            term = Termination.TIME_LIMIT
            break
        h.setOptionValue("time_limit", float(rem) if rem is not None else np.inf)
        h.run()
        st = h.getModelStatus()
        if st in (S.kInfeasible, S.kUnboundedOrInfeasible):
            return None, Termination.INFEASIBLE, None, {"lazy_lp_rounds": lp_rounds}
        if st != S.kOptimal:
            term = Termination.TIME_LIMIT if st == S.kTimeLimit else Termination.ERROR
            break
        lp_rounds += 1
        x = np.asarray(h.getSolution().col_value, dtype=float)
        bound = max(bound, float(h.getInfo().objective_function_value))
        cuts = lazy.separate(x)
        if cuts is None:
            break
        _add_rows(h, cuts, n)
        n_cuts += cuts.n_rows
    lp_bound = bound
    # 2. MIP solves
    mip_runs = 0
    if term is None and ints.size:
        h.changeColsIntegrality(int(ints.size), ints, np.ones(ints.size, dtype=np.uint8))
        found: list[np.ndarray] = []

        def on_solution(e) -> None:  # every improving master solution yields cuts afterwards
            found.append(np.array(e.data_out.mip_solution, dtype=float))

        h.cbMipImprovingSolution.subscribe(on_solution)
        while True:
            rem = left()
            if rem is not None and rem <= 0:
                term = Termination.TIME_LIMIT
                break
            h.setOptionValue("time_limit", float(rem) if rem is not None else np.inf)
            if best_sel is not None:
                cols, vals = model.x_from_selection(best_sel)
                h.setSolution(int(len(cols)), np.asarray(cols, np.int32), np.asarray(vals, np.float64))
            found.clear()
            h.run()
            mip_runs += 1
            st = h.getModelStatus()
            info = h.getInfo()
            if st in (S.kInfeasible, S.kUnboundedOrInfeasible):
                term = Termination.INFEASIBLE if best_sel is None else Termination.ERROR
                break
            if info.primal_solution_status == hp.kSolutionStatusFeasible:
                found.append(np.asarray(h.getSolution().col_value, dtype=float))
            if np.isfinite(info.mip_dual_bound):
                bound = max(bound, float(info.mip_dual_bound))
            new = 0
            for x in found:
                offer(model.selection_from_x(x))
                cuts = lazy.separate(x)
                if cuts is not None:
                    _add_rows(h, cuts, n)
                    new += cuts.n_rows
            n_cuts += new
            if st == S.kOptimal and new == 0:
                term = Termination.OPTIMAL
                break
            if st == S.kTimeLimit:
                term = Termination.TIME_LIMIT
                break
            if st != S.kOptimal:
                term = _status_map(hp).get(st, Termination.ERROR)
                break
        h.cbMipImprovingSolution.unsubscribe(on_solution)
    elif term is None:
        term = Termination.OPTIMAL
        offer(model.selection_from_x(np.asarray(h.getSolution().col_value, dtype=float)))
    if best_sel is not None and term == Termination.OPTIMAL:
        bound = max(bound, min(best_key, bound)) if np.isfinite(bound) else bound
    extra = {
        "highs_status": "lazy: " + term.value,
        "lazy_cuts": n_cuts,
        "lazy_lp_rounds": lp_rounds,
        "lazy_lp_bound": lp_bound if np.isfinite(lp_bound) else None,
        "lazy_mip_runs": mip_runs,
    }
    return best_sel, term, (bound if np.isfinite(bound) else None), extra


@register_method(
    "highs",
    kind="exact",
    accepts=linear_acceptor("HiGHS"),
    description="HiGHS MIP solver through highspy, reading the neutral linear model",
    options=tuple(HIGHS_OPTIONS),
)
def run_highs(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    model, opts, build = prepare(f, options, HIGHS_OPTIONS, "highs", allow_lazy=True)
    t0 = time.perf_counter()
    sel, term, bound, extra = solve_model_highs(
        model,
        time_limit=remaining(time_limit, build),
        seed=seed,
        mip_rel_gap=opts["mip_rel_gap"],
        threads=opts["threads"],
        verbose=opts["verbose"],
        warm_start=opts["warm_start"],
        highs_options=opts["highs_options"],
        key=true_key(f, model),
    )
    solve_s = time.perf_counter() - t0
    extra.update(model.summary())
    if extra.get("highs_objective") is not None:
        extra["highs_objective"] = model.objective_sign * extra["highs_objective"]
    return MethodOutput(sel, term, formulation_bound(model, bound), build, solve_s, extra)
