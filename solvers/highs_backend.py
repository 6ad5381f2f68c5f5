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

from ._exact import COMMON_OPTIONS, formulation_bound, linear_acceptor, prepare, refuse_quadratic, remaining, true_key
from .errors import InvalidInputError, SolverNotInstalledError
from .model import LinearModel, RowBlock
from .options import Option
from .registry import register_method
from .result import MethodOutput, Termination

__all__ = ["solve_model_highs"]

HIGHS_OPTIONS = (*COMMON_OPTIONS, Option("highs_options", None, "mapping", doc="raw HiGHS options (name: value)"))


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


def solve_model_highs(model: LinearModel, *, time_limit: float | None = None, seed: int | None = 0,
                      mip_rel_gap: float | None = 1e-6, threads: int | None = None, verbose: bool = False,
                      warm_start: np.ndarray | None = None, highs_options: dict[str, Any] | None = None,
                      key: Callable[[np.ndarray], float | None] | None = None,
                      ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Solve a :class:`LinearModel` with HiGHS.

    Parameters
    ----------
    model : LinearModel
        With ``model.lazy`` set, rows are generated on demand in a
        branch-and-cut whose node LPs HiGHS solves (see :func:`_solve_lazy`).
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
        sel, term, bound, more = _solve_lazy(h, hp, model, time_limit, key, warm_start, mip_rel_gap, verbose)
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
                warm_start: np.ndarray | None, mip_rel_gap: float | None = 1e-6, verbose: bool = False,
                ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Branch-and-cut for a model with lazy rows, HiGHS solving every node LP.

    HiGHS has no lazy-constraint callback, so the search is driven here: at
    each node the LP relaxation is solved (dual simplex, warm-started from the
    previous node's basis) and the lazy rows it violates are added until none
    is (the rows are globally valid, so they stay for every later node). A node
    is pruned when its LP bound reaches the incumbent; integer columns at a
    bound are fixed by reduced cost; the most fractional integer column is
    branched on; open nodes are explored best bound first. Incumbents come from
    the warm start, from integral node LPs, and from ``model.lazy.round(x)``
    when the lazy rows offer a rounding. Every bound reported is a valid bound
    of the full model.
    """
    import heapq

    t0 = time.perf_counter()
    left = (lambda: np.inf) if time_limit is None else (lambda: time_limit - (time.perf_counter() - t0))
    lazy = model.lazy
    S = hp.HighsModelStatus
    n = model.n_cols
    ints = np.flatnonzero(model.integrality).astype(np.int32)
    if ints.size:
        h.changeColsIntegrality(int(ints.size), ints, np.zeros(ints.size, dtype=np.uint8))
    rounder = getattr(lazy, "round", None)
    rel = 1e-9 if mip_rel_gap is None else max(float(mip_rel_gap), 1e-9)
    best_sel, UB = None, np.inf

    def offer(sel: np.ndarray | None) -> None:
        nonlocal best_sel, UB
        if sel is None or np.asarray(sel).size == 0:
            return
        k = key(np.asarray(sel))
        if k is not None and k < UB - 1e-12 * max(1.0, abs(k)):
            best_sel, UB = np.asarray(sel), k

    def tol() -> float:
        if not np.isfinite(UB):
            return 0.0
        t = max(1e-9, rel * abs(UB))
        # with an integral objective, a node whose bound exceeds UB - 1 holds nothing better than UB
        return max(t, 1.0 - 1e-6) if model.integral_objective else t

    offer(warm_start)
    stats = {"cuts": 0, "lp_solves": 0}

    def node_lp(lb_i: np.ndarray, ub_i: np.ndarray):
        """Solve a node's LP with its lazy rows; returns (status, x, objective, reduced costs).

        On a time-out the objective is the last LP value reached (a valid bound
        of the node: an LP with fewer rows is a relaxation), or None.
        """
        if ints.size:
            h.changeColsBounds(int(ints.size), ints, lb_i, ub_i)
        partial = None
        while True:
            rem = left()
            if rem <= 0:
                return "time", None, partial, None
            # HiGHS compares its time limit with its run time summed over every run() of this object
            h.setOptionValue("time_limit", float(h.getRunTime() + rem))
            h.run()
            stats["lp_solves"] += 1
            st = h.getModelStatus()
            if st in (S.kInfeasible,):
                return "infeasible", None, None, None
            if st in (S.kUnbounded, S.kUnboundedOrInfeasible):
                return "unbounded", None, None, None
            if st != S.kOptimal:
                return "time" if st == S.kTimeLimit else "error", None, partial, None
            sol = h.getSolution()
            x = np.asarray(sol.col_value, dtype=float)
            partial = float(h.getInfo().objective_function_value)
            cuts = lazy.separate(x)
            if cuts is None:
                return "optimal", x, float(h.getInfo().objective_function_value), np.asarray(sol.col_dual, float)
            _add_rows(h, cuts, n)
            stats["cuts"] += cuts.n_rows

    heap: list = [(-np.inf, 0, 0, model.col_lb[ints].copy(), model.col_ub[ints].copy())]
    counter = 1
    nodes = 0
    root_bound = None
    pruned_min = np.inf  # smallest bound among nodes pruned by bound
    term: Termination | None = None
    while heap:
        if left() <= 0:
            term = Termination.TIME_LIMIT
            break
        lb_node, depth, _, lb_i, ub_i = heapq.heappop(heap)
        if lb_node >= UB - tol():
            pruned_min = min(pruned_min, lb_node)
            continue
        status, x, obj, rc = node_lp(lb_i, ub_i)
        if status in ("time", "error"):
            heapq.heappush(heap, (max(lb_node, obj if obj is not None else -np.inf), depth, 0, lb_i, ub_i))
            term = Termination.TIME_LIMIT if status == "time" else Termination.ERROR
            break
        nodes += 1
        if status == "unbounded":
            if nodes == 1:
                return None, Termination.UNBOUNDED, None, {"bnc_nodes": nodes}
            continue
        if status == "infeasible":
            continue
        if nodes == 1:
            root_bound = obj
        if rounder is not None:
            offer(rounder(x))
        if obj >= UB - tol():
            pruned_min = min(pruned_min, obj)
            continue
        xi = x[ints]
        frac = np.abs(xi - np.round(xi)) > 1e-6
        if not frac.any():
            offer(model.selection_from_x(x))
            if obj >= UB - tol():
                pruned_min = min(pruned_min, obj)
            continue
        # reduced-cost fixing: a column at a bound whose reduced cost exceeds the gap stays there
        room = UB - obj
        r = rc[ints]
        lb_c, ub_c = lb_i.copy(), ub_i.copy()
        at_lb = (xi <= lb_i + 1e-9) & (r > room + tol())
        at_ub = (xi >= ub_i - 1e-9) & (-r > room + tol())
        ub_c[at_lb] = lb_i[at_lb]
        lb_c[at_ub] = ub_i[at_ub]
        fr = np.flatnonzero(frac)
        j = int(fr[np.argmax(np.minimum(xi[fr] - np.floor(xi[fr]), np.ceil(xi[fr]) - xi[fr]))])
        v = xi[j]
        up_lb, dn_ub = lb_c.copy(), ub_c.copy()
        up_lb[j] = np.ceil(v)
        dn_ub[j] = np.floor(v)
        # deeper nodes first among equal bounds (heap key: bound, -depth)
        heapq.heappush(heap, (obj, depth - 1, counter, up_lb, ub_c))
        heapq.heappush(heap, (obj, depth - 1, counter + 1, lb_c, dn_ub))
        counter += 2
        if verbose and nodes % 25 == 0:
            open_lb = min(e[0] for e in heap)
            print(f"[benchsel] highs branch-and-cut: {nodes} nodes, {len(heap)} open, bound {open_lb:.6g}, "
                  f"incumbent {UB:.6g}, {stats['cuts']} cuts, {time.perf_counter() - t0:.1f} s", file=sys.stderr,
                  flush=True)
    if term is None:
        term = Termination.OPTIMAL if best_sel is not None else Termination.INFEASIBLE
    open_min = min((e[0] for e in heap), default=np.inf)
    bound = min(open_min, pruned_min, UB)
    if model.integral_objective and np.isfinite(bound):
        bound = float(np.ceil(bound - 1e-6))
    if term == Termination.INFEASIBLE:
        bound = None
    elif not np.isfinite(bound):
        bound = root_bound if root_bound is not None else None
    extra = {
        "highs_status": "branch-and-cut: " + term.value,
        "bnc_nodes": nodes,
        "bnc_open_nodes": len(heap),
        "lazy_cuts": stats["cuts"],
        "lp_solves": stats["lp_solves"],
        "root_bound": root_bound,
    }
    return best_sel, term, bound, extra


@register_method(
    "highs",
    kind="exact",
    accepts=linear_acceptor("HiGHS"),
    description="HiGHS MIP solver through highspy, reading the neutral linear model",
    options=HIGHS_OPTIONS,
)
def run_highs(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    model, opts, build = prepare(f, options, allow_lazy=True)
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
    extra.update(opts["_times"])
    if extra.get("highs_objective") is not None:
        extra["highs_objective"] = model.objective_sign * extra["highs_objective"]
    return MethodOutput(sel, term, formulation_bound(model, bound), build, solve_s, extra)
