"""``"scip"``: SCIP (through PySCIPOpt) on the neutral model — MILPs, lazy rows and quadratic objectives.

SCIP reads the same :class:`~benchsel.formulations.core.model.LinearModel` as the other
exact backends, and two things they cannot:

* **lazy rows** (``LinearModel.lazy``, e.g. the k-medoids Benders master) go
  through a SCIP *constraint handler*: every candidate solution SCIP considers
  feasible (LP optima at nodes, pseudo solutions, heuristics' solutions) is
  checked with ``lazy.separate(x, tol)``; violated rows are added as global
  linear constraints, and fractional LP solutions are separated too
  (``separate_fractional``), so the search is SCIP's own branch-and-cut;
* a **quadratic objective** (``LinearModel.Q``): SCIP takes no nonlinear
  objective, so the quadratic part is split into the connected components of
  ``Q``'s sparsity graph, each stated as an epigraph
  ``t_c >= s * 1/2 x_c' Q_c x_c`` (a SCIP nonlinear constraint) with ``t_c``
  in the objective. An isolated square ``q_j x_j^2`` of a column that is
  switched off by a binary (``-M z <= x_j <= M z``) then gets SCIP's
  perspective cuts. Convex components are solved by outer approximation,
  non-convex ones by spatial branch-and-bound: either way to global
  optimality.

Settings: ``time_limit`` (``limits/time``, the time left after the build),
``mip_rel_gap`` (``limits/gap``), ``threads`` (more than one runs SCIP's
concurrent solver, ``parallel/maxnthreads``; not with lazy rows, whose Python
handler the concurrent copies do not carry: such a model runs on one thread
and the result says so), ``seed`` (``randomization/randomseedshift``),
``verbose`` (SCIP's log), ``warm_start`` (a selection; for a linear model it is
completed first into a full solution — the model with the selection fixed,
solved by HiGHS through ``scipy.optimize.milp`` within a fifth of the time
limit, and with lazy rows separated until none is violated; for a quadratic
model it is a partial solution that SCIP completes; the returned selection is
never worse than it) and ``scip_params`` (raw SCIP parameters).

On a time limit the incumbent is kept and the bound is SCIP's dual bound; a
solution is taken only when SCIP reports one.

Precision of quadratic objectives. SCIP holds every nonlinear constraint to its
feasibility tolerance (``numerics/feastol``, 1e-6), so each epigraph may
undercut its square by that much. The objective (and the epigraphs) are
therefore multiplied by a scale ``s`` (``objective_scale``; by default
``n_epigraphs / |objective of the warm start|``, so that all the slack together
stays near ``1e-6`` of the objective). The backend reports SCIP's tolerances
(its gap, plus ``1e-6`` relative on quadratic models and models with lazy
rows, and ``numerics/feastol``) and the selection's verified gap
(``extra["verified_gap"]``); the one judge of claims
(:func:`benchsel.solvers.claims.judge`) calls an ``"optimal"`` status from SCIP
optimal only when the selection's exact objective is within those tolerances of
SCIP's bound, else ``"feasible"``.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from benchsel.formulations.core.errors import InvalidInputError, SolverNotInstalledError
from benchsel.formulations.core.model import LinearModel, RowBlock
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.properties import NumericalProperties
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import MethodOutput, Termination, Tolerances, mip_gap
from benchsel.solvers.backends.common import (
    COMMON_OPTIONS,
    ExactRun,
    SolveStep,
    module_available,
    quadratic_acceptor,
    remaining,
    run_exact,
)

__all__ = ["scip_available", "solve_model_scip"]

#: Model building rate (non-zeros per second: rows are added one by one through PySCIPOpt), for size guards.
SCIP_NNZ_PER_SECOND = 2.0e5

SCIP_OPTIONS = (
    *COMMON_OPTIONS,
    Option("scip_params", None, "mapping", doc="raw SCIP parameters (name: value), e.g. {'limits/nodes': 10000}"),
    Option("objective_scale", None, "float", low=0.0, low_open=True,
           doc="factor on the objective passed to SCIP (default: 1 for linear models; for quadratic ones "
               "n_epigraphs / |warm-start objective|)"),
    Option("separate_fractional", True, "bool", doc="separate lazy rows at fractional LP solutions too"),
)

_INSTALL = ("method 'scip' needs the package 'pyscipopt' (SCIP's Python interface): pip install pyscipopt, "
            "or benchsel[scip]")

#: Extra relative slack allowed when checking a quadratic model's optimality claim (SCIP's tolerances).
QUADRATIC_CLAIM_SLACK = 1e-6

#: SCIP's settings for statements whose optimum sits on near ties (``NumericalProperties.near_ties``): on tied
#: and near-tied HoloCosm data SCIP 10's presolve and its knapsack-cover cuts cut off the optimum of the ranking
#: constraints (3 false "optimal" claims in 150 brute-forced instances of benchmarks/studies/holocosm_mps.py's
#: designs); without them, none.
NEAR_TIE_PARAMS: dict[str, Any] = {"presolving/maxrounds": 0, "separating/knapsackcover/freq": -1}


def scip_policy(properties: NumericalProperties) -> dict[str, Any]:
    """SCIP's parameters for a statement with these numerical properties (the caller's ``scip_params`` win)."""
    return dict(NEAR_TIE_PARAMS) if properties.near_ties else {}


def scip_available() -> bool:
    """Is PySCIPOpt installed?"""
    return module_available("pyscipopt")


def _scip():
    try:
        import pyscipopt
    except ImportError as e:
        raise SolverNotInstalledError(f"{_INSTALL} ({e})") from None
    return pyscipopt


_STATUS = {
    "optimal": Termination.OPTIMAL,
    "gaplimit": Termination.OPTIMAL,  # the requested gap is reached
    "timelimit": Termination.TIME_LIMIT,
    "infeasible": Termination.INFEASIBLE,
    "unbounded": Termination.UNBOUNDED,
    "inforunbd": Termination.INFEASIBLE_OR_UNBOUNDED,
    "nodelimit": Termination.ITERATION_LIMIT,
    "totalnodelimit": Termination.ITERATION_LIMIT,
    "stallnodelimit": Termination.ITERATION_LIMIT,
    "sollimit": Termination.SOLUTION_LIMIT,
    "bestsollimit": Termination.SOLUTION_LIMIT,
    "primallimit": Termination.OBJECTIVE_LIMIT,
    "duallimit": Termination.OBJECTIVE_LIMIT,
    "userinterrupt": Termination.INTERRUPTED,
    "terminate": Termination.INTERRUPTED,
    "memlimit": Termination.ERROR,
    "restartlimit": Termination.ITERATION_LIMIT,
}


@contextlib.contextmanager
def _quiet_stderr(quiet: bool) -> Iterator[None]:
    """Silence C-level stderr (SoPlex prints tolerance notices there, past SCIP's message handler)."""
    if not quiet:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no file descriptors to juggle (embedded interpreters)
        yield
        return
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _bound(v: float) -> float | None:
    return None if not np.isfinite(v) else float(v)


# ---------------------------------------------------------------- building
class _BuildTimeout(Exception):
    """The time limit ran out while the model was passed to SCIP."""


class _Builder:
    """Pass a :class:`LinearModel` to a PySCIPOpt ``Model`` (columns in the model's order).

    ``deadline`` (a ``time.perf_counter()`` value or None) is checked every
    few thousand rows: passing a large model row by row takes seconds.
    """

    def __init__(self, ps: Any, m: Any, model: LinearModel, scale: float, deadline: float | None = None) -> None:
        self.ps, self.m, self.model, self.scale, self.deadline = ps, m, model, scale, deadline
        self.vars: list[Any] = []
        self.terms: list[Any] = []

    def columns(self) -> None:
        model, m, s = self.model, self.m, self.scale
        lb, ub, integ, c = model.col_lb, model.col_ub, model.integrality, model.c
        binary = integ & (lb >= 0) & (ub <= 1)
        vtype = np.where(binary, "B", np.where(integ, "I", "C")).tolist()
        lo = [None if v == -math.inf else v for v in lb.tolist()]
        hi = [None if v == math.inf else v for v in ub.tolist()]
        obj = (s * c).tolist()
        add, Term = m.addVar, self.ps.scip.Term
        for j0 in range(0, model.n_cols, 8192):
            chunk = slice(j0, j0 + 8192)
            new = [add(vtype=t, lb=a, ub=b, obj=o) for t, a, b, o in zip(vtype[chunk], lo[chunk], hi[chunk],
                                                                         obj[chunk])]
            self.vars.extend(new)
            self.terms.extend(Term(v) for v in new)
            if self.deadline is not None and time.perf_counter() > self.deadline:
                raise _BuildTimeout

    def linear_rows(self, A: sp.csr_array, lb: np.ndarray, ub: np.ndarray, **kw: Any) -> int:
        """Add ``lb <= A x <= ub`` row by row; returns the number of rows added."""
        ps, m, T = self.ps, self.m, self.terms
        Expr, ExprCons = ps.scip.Expr, ps.scip.ExprCons
        ptr, ind, dat = A.indptr.tolist(), A.indices.tolist(), A.data.tolist()
        lo = [None if v == -math.inf else v for v in np.asarray(lb, float).tolist()]
        hi = [None if v == math.inf else v for v in np.asarray(ub, float).tolist()]
        add = m.addCons
        for r in range(A.shape[0]):
            a, b = ptr[r], ptr[r + 1]
            lor, hir = lo[r], hi[r]
            if a == b:  # an empty row: only its bounds matter
                if (lor is not None and lor > 1e-9) or (hir is not None and hir < -1e-9):
                    add(ExprCons(Expr({}), lhs=lor, rhs=hir), **kw)  # infeasible: let SCIP say so
                continue
            add(ExprCons(Expr({T[j]: v for j, v in zip(ind[a:b], dat[a:b])}), lhs=lor, rhs=hir), **kw)
            if self.deadline is not None and r % 4096 == 4095 and time.perf_counter() > self.deadline:
                raise _BuildTimeout
        return int(A.shape[0])

    def quadratic(self) -> int:
        """Epigraphs of the connected components of ``Q``; returns their number."""
        model, ps, m, X, s = self.model, self.ps, self.m, self.vars, self.scale
        Q = model.Q
        if Q is None or Q.nnz == 0:
            return 0
        Term, Expr, ExprCons = ps.scip.Term, ps.scip.Expr, ps.scip.ExprCons
        Q = sp.csr_array(Q)
        pattern = sp.csr_array((np.ones(Q.nnz), Q.indices, Q.indptr), shape=Q.shape)
        _ncomp, label = connected_components(pattern, directed=False)
        touched = np.flatnonzero(np.diff(Q.indptr) > 0)
        comps = np.unique(label[touched])
        U = sp.triu(Q, format="coo")
        comp_of_entry = label[U.row]
        order = np.argsort(comp_of_entry, kind="stable")
        starts = np.searchsorted(comp_of_entry[order], comps)
        stops = np.searchsorted(comp_of_entry[order], comps, side="right")
        for ci, (a, b) in enumerate(zip(starts, stops)):
            idx = order[a:b]
            rows, cols, vals = U.row[idx], U.col[idx], U.data[idx]
            members = np.flatnonzero(label == comps[ci])
            psd = self._psd(Q, members)
            t = m.addVar(vtype="C", lb=0.0 if psd else None, ub=None, obj=1.0)
            terms = {Term(t): -1.0}
            for i, j, v in zip(rows.tolist(), cols.tolist(), vals.tolist()):
                terms[Term(X[i], X[j])] = s * (0.5 * v if i == j else v)
            if self.deadline is not None and ci % 256 == 255 and time.perf_counter() > self.deadline:
                raise _BuildTimeout
            m.addCons(ExprCons(Expr(terms), rhs=0.0))
        return int(comps.size)

    @staticmethod
    def _psd(Q: sp.csr_array, members: np.ndarray) -> bool:
        """Is the component's block positive semi-definite (then its epigraph variable is >= 0)?"""
        if members.size == 1:
            return bool(Q[int(members[0]), int(members[0])] >= 0)
        if members.size > 2000:
            return False
        block = Q[members][:, members].toarray()
        ev = np.linalg.eigvalsh(0.5 * (block + block.T))
        return bool(ev[0] >= -1e-12 * max(1.0, abs(ev[-1])))


def _lazy_handler_class(ps: Any):
    """A constraint handler class calling ``lazy.separate`` (built lazily: PySCIPOpt is optional)."""
    Conshdlr, RESULT = ps.Conshdlr, ps.SCIP_RESULT

    class LazyRowsHandler(Conshdlr):  # type: ignore[misc, valid-type]
        def __init__(self, builder: _Builder, lazy: Any, tol: float, fractional: bool) -> None:
            super().__init__()
            self.builder, self.lazy, self.tol, self.fractional = builder, lazy, tol, fractional
            self.rows_added = 0
            self.separations = 0

        def _x(self, sol: Any) -> np.ndarray:
            m = self.model
            return np.fromiter((m.getSolVal(sol, v) for v in self.builder.vars), dtype=float,
                               count=len(self.builder.vars))

        def _violated(self, sol: Any) -> RowBlock | None:
            self.separations += 1
            rows = self.lazy.separate(self._x(sol), self.tol)
            return rows if rows is not None and rows.n_rows else None

        def _add(self, rows: RowBlock) -> None:
            A = rows.csr(len(self.builder.vars))
            self.builder.linear_rows(A, rows.lb, rows.ub, removable=False)
            self.rows_added += rows.n_rows

        def conscheck(self, constraints, solution, checkintegrality, checklprows, printreason, completely,
                      **kw):
            return {"result": RESULT.INFEASIBLE if self._violated(solution) is not None else RESULT.FEASIBLE}

        def _enforce(self) -> dict:
            rows = self._violated(None)
            if rows is None:
                return {"result": RESULT.FEASIBLE}
            self._add(rows)
            return {"result": RESULT.CONSADDED}

        def consenfolp(self, constraints, nusefulconss, solinfeasible):
            return self._enforce()

        def consenfops(self, constraints, nusefulconss, solinfeasible, objinfeasible):
            return self._enforce()

        def conssepalp(self, constraints, nusefulconss):
            if not self.fractional:
                return {"result": RESULT.DIDNOTRUN}
            rows = self._violated(None)
            if rows is None:
                return {"result": RESULT.DIDNOTFIND}
            self._add(rows)
            return {"result": RESULT.CONSADDED}

        def conslock(self, constraint, locktype, nlockspos, nlocksneg):
            # the rows may hold any column with either sign: lock every column both ways
            m = self.model
            n = nlockspos + nlocksneg
            original = constraint is None or constraint.isOriginal()
            for v in self.builder.vars:
                m.addVarLocksType(v if original else m.getTransformedVar(v), locktype, n, n)

    return LazyRowsHandler


def _complete(model: LinearModel, selection: np.ndarray, time_limit: float | None,
              tol: float = 1e-6, max_rounds: int = 50) -> np.ndarray | None:
    """A full solution of a linear model with the selection block fixed, or None.

    Solves the model with the selection columns fixed by HiGHS
    (``scipy.optimize.milp``); with lazy rows, adds the rows the solution
    violates and repeats until none is violated.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    t0 = time.perf_counter()
    lb, ub = model.col_lb.copy(), model.col_ub.copy()
    cols, vals = model.x_from_selection(selection)
    lb[cols] = vals
    ub[cols] = vals
    A, rlb, rub = model.A, model.row_lb, model.row_ub
    for _ in range(max_rounds):
        opts: dict[str, Any] = {"disp": False}
        if time_limit is not None:
            left = time_limit - (time.perf_counter() - t0)
            if left <= 0:
                return None
            opts["time_limit"] = left
        cons = [LinearConstraint(A, rlb, rub)] if A.shape[0] else []
        res = milp(model.c, constraints=cons, bounds=Bounds(lb, ub), integrality=model.integrality.astype(int),
                   options=opts)
        if res.x is None:
            return None
        x = np.asarray(res.x, dtype=float)
        if model.lazy is None:
            return x
        rows = model.lazy.separate(x, tol)
        if rows is None or rows.n_rows == 0:
            return x
        A = sp.vstack([A, rows.csr(model.n_cols)], format="csr")
        rlb = np.concatenate([rlb, rows.lb])
        rub = np.concatenate([rub, rows.ub])
    return None


def _auto_scale(model: LinearModel, n_epigraphs: int, key: Callable[[np.ndarray], float | None] | None,
                warm_start: np.ndarray | None) -> float:
    hint = model.meta.get("objective_scale")
    if hint is not None:  # the formulation knows its objective's size (e.g. BayesAME's outer approximation)
        return float(np.clip(float(hint), 1e-8, 1e8))
    if not model.is_quadratic or key is None or warm_start is None:
        return 1.0
    v = key(np.asarray(warm_start))
    if v is None or not np.isfinite(v) or v == 0:
        return 1.0
    return float(np.clip(max(n_epigraphs, 1) / abs(v), 1e-8, 1e8))


# ------------------------------------------------------------------ solving
def solve_model_scip(model: LinearModel, *, time_limit: float | None = None, seed: int | None = 0,
                     mip_rel_gap: float | None = 1e-6, threads: int | None = None, verbose: bool = False,
                     warm_start: np.ndarray | None = None, scip_params: dict[str, Any] | None = None,
                     objective_scale: float | None = None, separate_fractional: bool = True,
                     key: Callable[[np.ndarray], float | None] | None = None,
                     ) -> tuple[np.ndarray | None, Termination, float | None, dict]:
    """Solve a :class:`LinearModel` (lazy rows and a quadratic objective allowed) with SCIP.

    Parameters
    ----------
    model : LinearModel
    time_limit, seed, mip_rel_gap, threads, verbose
        SCIP settings (see the module docstring).
    warm_start : ndarray of int, optional
        A selection (item indices).
    scip_params : dict, optional
        Raw SCIP parameters, set last (they win).
    objective_scale : float, optional
        Factor on the objective inside SCIP (default: see the module docstring).
    separate_fractional : bool
        Separate lazy rows at fractional LP solutions.
    key : callable, optional
        ``key(selection)`` -> exact objective in model units (lower is better)
        or None when infeasible: sets the default scale of quadratic models and
        checks their optimality claim.

    Returns
    -------
    selection : ndarray of int or None
    termination : Termination
    bound : float or None
        Bound on the model (minimisation) objective.
    extra : dict
    """
    ps = _scip()
    t_start = time.perf_counter()
    m = ps.Model()
    m.hideOutput(not verbose)
    lazy = model.lazy
    deadline = None if time_limit is None else t_start + time_limit
    extra: dict[str, Any] = {"scip_version": str(m.version())}
    # the quadratic part's components decide the default scale: count them first
    n_epi = 0
    if model.is_quadratic:
        assert model.Q is not None
        touched = np.flatnonzero(np.diff(sp.csr_array(model.Q).indptr) > 0)
        pattern = sp.csr_array((np.ones(model.Q.nnz), model.Q.indices, model.Q.indptr), shape=model.Q.shape)
        n_epi = int(np.unique(connected_components(pattern, directed=False)[1][touched]).size)
    scale = float(objective_scale) if objective_scale is not None else _auto_scale(model, n_epi, key, warm_start)
    b = _Builder(ps, m, model, scale, deadline)
    try:
        b.columns()
        b.linear_rows(model.A, model.row_lb, model.row_ub)
        n_epi = b.quadratic()
    except _BuildTimeout:
        extra.update({"scip_status": "time limit while passing the model to SCIP",
                      "scip_build_seconds": time.perf_counter() - t_start})
        ws = None if warm_start is None or np.asarray(warm_start).size == 0 else np.asarray(warm_start)
        return ws, Termination.TIME_LIMIT, None, extra
    if model.integral_objective and scale == 1.0 and model.c0 == round(model.c0) and not model.is_quadratic:
        m.setObjIntegral()  # every feasible solution has an integer objective: SCIP may round its bounds
    handler = None
    if lazy is not None:
        handler = _lazy_handler_class(ps)(b, lazy, 1e-6, bool(separate_fractional))
        m.includeConshdlr(handler, "benchsel_lazy", f"lazy rows {lazy.name}", sepapriority=1,
                          enfopriority=-1, chckpriority=-1, sepafreq=1, eagerfreq=-1, needscons=True)
        m.addPyCons(m.createCons(handler, "lazy_rows", initial=False, separate=True, enforce=True, check=True,
                                 propagate=False))
    extra["scip_warm_start"] = _add_warm_start(m, b, model, warm_start, time_limit, t_start)
    concurrent = _set_params(m, seed, mip_rel_gap, threads, lazy is not None, scip_params, extra)
    build = time.perf_counter() - t_start
    left = remaining(time_limit, build)
    if left is not None:
        m.setParam("limits/time", float(left))
    t0 = time.perf_counter()
    with _quiet_stderr(not verbose):
        if concurrent:
            m.solveConcurrent()
        else:
            m.optimize()
    solve_s = time.perf_counter() - t0
    status = str(m.getStatus())
    term = _STATUS.get(status, Termination.UNKNOWN)
    sel = None
    if m.getNSols() > 0:
        best = m.getBestSol()
        x = np.fromiter((m.getSolVal(best, v) for v in b.vars), dtype=float, count=len(b.vars))
        sel = model.selection_from_x(x)
    if key is not None and warm_start is not None and np.asarray(warm_start).size:
        ws = np.asarray(warm_start)
        kw, ks = key(ws), (key(sel) if sel is not None else None)
        if kw is not None and (ks is None or kw < ks - 1e-12 * max(1.0, abs(kw))):
            sel = np.sort(ws.astype(np.int64))  # SCIP kept nothing better than the warm start
            extra["scip_returned_warm_start"] = True
    bound = None
    if term not in (Termination.INFEASIBLE, Termination.UNBOUNDED, Termination.INFEASIBLE_OR_UNBOUNDED):
        db = float(m.getDualbound())
        bound = _bound(db / scale + model.c0) if abs(db) < 1e19 else None
    primal = float(m.getPrimalbound()) if m.getNSols() > 0 else None
    extra.update({
        "scip_status": status,
        "scip_nodes": int(m.getNTotalNodes()),
        "scip_gap": float(m.getGap()) if m.getNSols() > 0 else None,
        "scip_objective": (primal / scale + model.c0) if primal is not None else None,
        "scip_objective_scale": scale,
        "scip_epigraphs": n_epi,
        "scip_build_seconds": build,
        "scip_solve_seconds": solve_s,
    })
    if handler is not None:
        extra["lazy_cuts"] = handler.rows_added
        extra["lazy_separations"] = handler.separations
        stats = lazy.stats if lazy is not None else {}
        if stats:  # the generator's own counters, named as the HiGHS branch-and-cut names them
            extra.update({f"separation_{k}": v for k, v in stats.items() if np.isscalar(v)})
    extra["scip_feasibility_tolerance"] = float(m.getParam("numerics/feastol"))
    exact = key(sel) if key is not None and sel is not None and bound is not None else None
    if exact is not None and bound is not None:  # the exact objective's gap, as every result's (the judge rules)
        extra["verified_gap"] = mip_gap(exact, bound)
    return sel, term, bound, extra


def _add_warm_start(m: Any, b: _Builder, model: LinearModel, warm_start: np.ndarray | None,
                    time_limit: float | None, t_start: float) -> str | None:
    """Hand the warm start to SCIP: completed to a full point (linear models) or as a partial solution."""
    if warm_start is None or not np.asarray(warm_start).size:
        return None
    if model.is_quadratic:
        sol = m.createPartialSol()
        cols, vals = model.x_from_selection(np.asarray(warm_start))
        for j, val in zip(cols.tolist(), vals.tolist()):
            m.setSolVal(sol, b.vars[j], val)
        m.addSol(sol)
        return "partial"
    # at most a fifth of the time limit (30 s without one) goes to completing the warm start
    cap = 30.0 if time_limit is None else 0.2 * time_limit
    left = remaining(time_limit, time.perf_counter() - t_start)
    x0 = _complete(model, np.asarray(warm_start), cap if left is None else min(cap, left))
    if x0 is None:
        return "not completed"
    sol = m.createSol()
    for v, val in zip(b.vars, x0.tolist()):
        m.setSolVal(sol, v, val)
    return "full" if m.addSol(sol) else "rejected"


def _set_params(m: Any, seed: int | None, mip_rel_gap: float | None, threads: int | None, lazy: bool,
                scip_params: dict[str, Any] | None, extra: dict[str, Any]) -> bool:
    """This call's SCIP parameters (raw ``scip_params`` last); whether to solve concurrently."""
    if seed is not None:
        m.setParam("randomization/randomseedshift", int(seed) % 2147483647)
    if mip_rel_gap is not None:
        m.setParam("limits/gap", float(mip_rel_gap))
    concurrent = threads is not None and threads > 1
    if concurrent and lazy:
        extra["scip_threads_note"] = ("lazy rows are separated by a Python handler that SCIP's concurrent copies do "
                                      "not carry: solved on one thread")
        concurrent = False
    if concurrent:
        m.setParam("parallel/maxnthreads", int(threads))  # type: ignore[arg-type]
        m.setParam("parallel/minnthreads", 1)
    for k, v in (scip_params or {}).items():
        try:
            m.setParam(k, v)
        except (KeyError, LookupError, TypeError, ValueError) as e:
            raise InvalidInputError(f"scip_params: SCIP refused parameter {k!r} = {v!r} ({e})") from None
    return concurrent


def _solve_step(run: ExactRun) -> SolveStep:
    o = run.opts
    sel, term, bound, extra = solve_model_scip(
        run.model,
        time_limit=run.budget.solver_limit(),
        seed=run.seed,
        mip_rel_gap=o["mip_rel_gap"],
        threads=o["threads"],
        verbose=o["verbose"],
        warm_start=o["warm_start"],
        scip_params={**scip_policy(run.f.numerical_properties), **dict(o["scip_params"] or {})},
        objective_scale=o["objective_scale"],
        separate_fractional=o["separate_fractional"],
        key=run.key,
    )
    if extra.get("scip_objective") is not None:
        extra["scip_objective"] = run.model.objective_sign * extra["scip_objective"]
    return SolveStep(sel, term, bound, extra, tolerances=_tolerances(run.model, o["mip_rel_gap"], extra))


def _tolerances(model: LinearModel, mip_rel_gap: float | None, extra: dict[str, Any]) -> Tolerances:
    """SCIP's tolerances for the judge: its gap and feasibility tolerance; on a quadratic model or one with
    lazy rows the gap widens by :data:`QUADRATIC_CLAIM_SLACK` (each epigraph or separated row may undercut its
    term by the feasibility tolerance, see the module notes)."""
    rel = float(mip_rel_gap or 0.0)
    if model.is_quadratic or model.lazy is not None:
        rel += QUADRATIC_CLAIM_SLACK
    return Tolerances(rel, 0.0, float(extra.get("scip_feasibility_tolerance", 0.0)))


@register_method(
    "scip",
    kind="exact",
    accepts=quadratic_acceptor("SCIP", "scip", usable=lambda: scip_available(), missing=_INSTALL),
    description="SCIP through PySCIPOpt: MILPs, lazy rows by a constraint handler, mixed-integer quadratic objectives",
    options=SCIP_OPTIONS,
)
def run_scip(f: Any, *, time_limit: float | None, seed: int | None, **options: Any) -> MethodOutput:
    return run_exact(f, options, time_limit=time_limit, seed=seed, solve=_solve_step, allow_lazy=True,
                     nnz_per_second=SCIP_NNZ_PER_SECOND)
