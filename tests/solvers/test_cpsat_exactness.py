"""CP-SAT's integer copy is a relaxation (no feasible selection cut off), every claim is re-checked (no-goods,
certificate solves), workers default to the cores; a seeded share of the exactness study; the shared
exact-run rules (warm start kept, contradicted claims refused)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from benchsel.benchmarks.studies.cpsat_exactness import GENERATORS, check_run, make_instance
from benchsel.formulations import RankingRiskReconstruction
from benchsel.formulations.core.result import Tolerances
from benchsel.solvers import ModelBuilder, Termination, solve
from benchsel.solvers.backends.common import SolveStep, _reconcile, true_key
from benchsel.solvers.backends.cpsat import _build_proto, default_workers, scale_model, solve_model_cpsat
from benchsel.solvers.conformance import brute_force


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_seeded_share_of_the_exactness_study(name):
    wrong = []
    for i in list(range(12)) + ([23] if name == "RankingRiskReconstruction" else []):
        f, opts = make_instance(name, i)
        opt, _ = brute_force(f)
        why = check_run(f, opt, solve(f, "cpsat", time_limit=60, **opts))
        if why:
            wrong.append(f"{name}[{i}]: {why}")
    assert wrong == []


def _copy_accepts(model, sm, selection) -> bool:
    """Is some completion of ``selection`` feasible in CP-SAT's integer copy?"""
    from ortools.sat.python import cp_model

    cm = cp_model.CpModel()
    assert _build_proto(cm, cp_model, sm, None)
    cols, vals = model.x_from_selection(selection)
    for c, v in zip(cols.tolist(), vals.tolist()):
        dom = cm.proto.variables[c].domain
        dom[0] = dom[1] = int(v)
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.presolve_inclusion_work_limit = 0
    return s.solve(cm) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


@pytest.mark.parametrize("seed", [0, 3, 6])
def test_copy_never_cuts_off_a_feasible_selection(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(4, 7, 2)).astype(float) if seed % 2 == 0 else rng.normal(size=(4, 7, 2))
    f = RankingRiskReconstruction(X, budget=3, seed=seed)
    model = f.linear_model()
    sm = scale_model(model)
    at_eps = 0
    for S in f.enumerate_selections():
        if f.is_feasible(S):
            at_eps += abs(f.ranking_risk(S) - f.eps) < 1e-12
            assert _copy_accepts(model, sm, S), f"feasible selection {S} cut off"
    assert at_eps >= 1  # the calibrated eps is attained: boundary selections are in the copy too


def _toy():
    """min 3a + 2b + 2c + 5d, a + b + c + d = 2 (binary): optimum {b, c} = 4, then {a, b}, {a, c} = 5."""
    b = ModelBuilder("toy")
    x = b.add_vars("x", 4, lb=0, ub=1, integer=True, cost=[3.0, 2.0, 2.0, 5.0])
    b.add_cardinality("card", x, 2)
    return b.build(selection_block="x", selection_items=np.arange(4))


def test_refuted_optimum_gets_a_nogood_and_the_next_best_is_optimal():
    model = _toy()
    true = {(1, 2): None, (0, 1): 5.0, (0, 2): 5.0, (0, 3): 8.0, (1, 3): 7.0, (2, 3): 7.0}  # {b, c} infeasible
    sel, term, bound, extra = solve_model_cpsat(model, key=lambda s: true[tuple(s.tolist())], threads=1)
    assert term == Termination.OPTIMAL and tuple(sel.tolist()) in ((0, 1), (0, 2))
    assert extra["cpsat_nogoods"] >= 1 and bound == pytest.approx(5.0)


def test_certificate_solve_finds_the_truly_best_selection():
    model = _toy()
    # the original values are at least the copy's (the copy is a relaxation) but larger for some selections:
    # the copy's optimum {b, c} (4) is truly 5.5, {a, b} truly 5.2, {a, c} truly 5.0 = its copy value
    true = {(1, 2): 5.5, (0, 1): 5.2, (0, 2): 5.0, (0, 3): 8.0, (1, 3): 7.0, (2, 3): 7.0}
    sel, term, bound, extra = solve_model_cpsat(model, key=lambda s: true[tuple(s.tolist())], threads=1,
                                                mip_abs_gap=1e-9, mip_rel_gap=1e-9)
    assert tuple(sel.tolist()) == (0, 2) and term == Termination.OPTIMAL
    assert extra["cpsat_certificate"] is True and extra["cpsat_nogoods"] >= 1
    assert bound == pytest.approx(5.0, abs=1e-6) and bound <= 5.0


def test_default_workers_are_the_available_cores():
    assert default_workers() == len(os.sched_getaffinity(0))
    f, opts = make_instance("KMedoids", 1)
    res = solve(f, "cpsat", **opts)
    assert res.extra["cpsat_workers"] == len(os.sched_getaffinity(0))
    assert res.extra["warm_start_source"] == f.numerical_properties.warm_start.method  # the hint CP-SAT receives


def test_reconcile_keeps_the_warm_start_and_refuses_contradicted_claims():
    f = RankingRiskReconstruction(np.random.default_rng(0).normal(size=(4, 8, 2)), budget=3, seed=0)
    key = true_key(f)
    ws = f.initial_selection()
    v = key(ws)
    opts = Tolerances(1e-6, 1e-6)
    # the solver found nothing before its limit: the warm start is the incumbent
    ex: dict = {}
    sel, term, bound = _reconcile(f, SolveStep(None, Termination.TIME_LIMIT, 0.0), ws, v, key, opts, ex)
    assert np.array_equal(sel, ws) and term == Termination.TIME_LIMIT and ex["incumbent"] == "warm_start"
    # "infeasible" although a feasible selection is known: weakened, no bound
    ex = {}
    sel, term, bound = _reconcile(f, SolveStep(None, Termination.INFEASIBLE), ws, v, key, opts, ex)
    assert term == Termination.FEASIBLE and bound is None and "claim_rejected" in ex
    # a bound past a feasible objective is dropped and its optimality claim weakened
    ex = {}
    sel, term, bound = _reconcile(f, SolveStep(ws, Termination.OPTIMAL, v + 1.0), ws, v, key, opts, ex)
    assert term == Termination.FEASIBLE and bound is None
    # a true optimum with its bound stays optimal
    opt, best = brute_force(f)
    ex = {}
    sel, term, bound = _reconcile(f, SolveStep(best, Termination.OPTIMAL, opt), ws, v, key, opts, ex)
    assert term == Termination.OPTIMAL and bound == opt and ex["incumbent"] == "solver"
