"""The "scip" backend: lazy rows through a constraint handler, quadratic objectives, options and limits."""
from __future__ import annotations

import time

import numpy as np
import pytest

from benchsel.formulations.bayes import BatchInformationGain
from benchsel.formulations.kmedoids import KMedoids
from benchsel.instances import make_kmedoids
from benchsel.solvers import InvalidInputError, MethodNotApplicableError, available_methods, solve
from benchsel.solvers.backends import scip as scip_backend
from benchsel.solvers.backends.scip import scip_available

pytestmark = pytest.mark.skipif(not scip_available(), reason="PySCIPOpt is not installed")


def _bayes(seed: int, *, N: int = 24, Kr: int = 4, k: int = 3, binary: bool = False, n_coreset: int = 4,
           sigma2: float = 1e-2) -> BatchInformationGain:
    rng = np.random.default_rng(seed)
    R = rng.integers(0, 2, size=(Kr, N)).astype(float) if binary else rng.uniform(size=(Kr, N))
    C = rng.choice(N, n_coreset, replace=False)
    return BatchInformationGain(R, coreset=C, observed=rng.uniform(size=n_coreset), k=k, sigma2=sigma2)


def test_registered_and_available_for_linear_and_quadratic_formulations():
    assert "scip" in available_methods(make_kmedoids(20, 3, seed=0))
    assert "scip" in available_methods(_bayes(0), kind="exact")


def test_refused_with_install_hint_when_pyscipopt_is_missing(monkeypatch):
    monkeypatch.setattr(scip_backend, "scip_available", lambda: False)
    f = make_kmedoids(20, 3, seed=0)
    assert "scip" not in available_methods(f)
    with pytest.raises(MethodNotApplicableError, match=r"pip install pyscipopt"):
        solve(f, "scip")


@pytest.mark.parametrize("seed", range(3))
def test_lazy_rows_benders_master_matches_highs(seed):
    f = make_kmedoids(70, 4 + seed, dim=3, weighted=seed == 1, seed=seed)
    ref = solve(f, "highs", model="assignment")
    res = solve(f, "scip", model="benders", time_limit=60)
    assert res.termination == "optimal" and res.feasible
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    assert res.bound == pytest.approx(ref.objective, rel=1e-6)
    assert res.extra["lazy_cuts"] > 0 and res.extra["model_variant"] == "benders"
    assert res.extra["scip_warm_start"] == "full"  # the greedy start, completed through the lazy rows


def test_lazy_rows_without_warm_start_and_fractional_separation_off():
    f = make_kmedoids(50, 4, seed=5)
    ref = solve(f, "highs", model="assignment")
    res = solve(f, "scip", model="benders", warm_start=None, separate_fractional=False, time_limit=60)
    assert res.termination == "optimal" and res.objective == pytest.approx(ref.objective, rel=1e-9)
    assert res.extra["scip_warm_start"] is None


def test_time_limit_keeps_the_incumbent_and_a_valid_bound():
    rng = np.random.default_rng(1)
    f = KMedoids.from_features(rng.normal(size=(300, 6)), 25, metric="euclidean")
    solve(make_kmedoids(20, 3, seed=0), "scip")  # registry and SCIP loaded before the clock starts
    t0 = time.perf_counter()
    res = solve(f, "scip", model="radius", time_limit=2)
    wall = time.perf_counter() - t0
    assert wall < 3 * 2 + 10
    assert res.feasible  # the warm start at least
    assert res.objective <= f.evaluate(f.initial_selection()) + 1e-9
    if res.termination == "time_limit":
        assert res.bound is None or res.bound <= res.objective + 1e-6


def test_threads_run_concurrently_and_lazy_models_say_why_not():
    f = make_kmedoids(40, 3, seed=2)
    res = solve(f, "scip", threads=2, model="assignment", time_limit=60)
    assert res.termination == "optimal" and "scip_threads_note" not in res.extra
    lazy = solve(f, "scip", threads=2, model="benders", time_limit=60)
    assert lazy.termination == "optimal" and "one thread" in lazy.extra["scip_threads_note"]
    assert lazy.objective == pytest.approx(res.objective, rel=1e-9)


def test_scip_params_are_passed_and_bad_ones_named():
    f = make_kmedoids(30, 3, seed=3)
    res = solve(f, "scip", scip_params={"limits/nodes": 1, "presolving/maxrounds": 0})
    assert res.feasible and res.termination in ("optimal", "iteration_limit")
    with pytest.raises(InvalidInputError, match=r"scip_params: SCIP refused parameter 'no/such/param'"):
        solve(f, "scip", scip_params={"no/such/param": 1})
    with pytest.raises(InvalidInputError, match=r"objective_scale"):
        solve(f, "scip", objective_scale=-1.0)


# ------------------------------------------------------------------ the MIQP
@pytest.mark.parametrize("model,variant", [("auto", "oa-counts"), ("oa", "oa-counts"), ("miqp", "miqp-counts")])
@pytest.mark.parametrize("seed,binary,k", [(0, False, 3), (1, True, 3), (2, False, 4), (3, True, 5)])
def test_batch_miqp_proves_the_exhaustive_optimum(seed, binary, k, model, variant):
    f = _bayes(seed, binary=binary, k=k, N=22 if binary else 18)
    ex = solve(f, "exhaustive")
    res = solve(f, "scip", time_limit=60, model=model)
    assert res.termination == "optimal" and res.feasible
    assert res.objective == pytest.approx(ex.objective, rel=1e-7)
    assert res.gap is not None and res.gap <= 1e-6 + 1e-6  # requested gap plus SCIP's tolerance slack
    assert res.extra["verified_gap"] == pytest.approx(res.gap, rel=1e-6, abs=1e-12)
    assert res.extra["model_variant"] == variant
    if variant == "oa-counts":
        # the handler adds only cuts the generator made (it also makes some for checks and the warm start)
        ex = res.extra
        assert ex["separation_oa_separations"] >= ex["separation_oa_cuts"] >= ex["lazy_cuts"]
        assert ex["separation_oa_separations"] > 0
        # the master's own scale (one over the greedy batch's beta) is SCIP's objective scale
        assert res.extra["scip_objective_scale"] == pytest.approx(1.0 / f.data.greedy()[1], rel=1e-12)


def test_batch_outer_approximation_cuts_are_tangent_and_valid():
    """Every cut lies below f everywhere (random count vectors) and touches it at its own point."""
    from benchsel.formulations.bayes.problem import _BatchOACuts

    rng = np.random.default_rng(5)
    for binary in (False, True):
        f = _bayes(6, binary=binary, k=4, N=24)
        d = f.data
        model = f.linear_model(allow_lazy=True, model="oa")
        cuts = model.lazy
        assert isinstance(cuts, _BatchOACuts)
        m = np.minimum(d.avail, d.k).astype(float)
        for _ in range(20):
            p = rng.uniform(size=d.n_buckets) * m
            p *= d.k / p.sum()
            value, c0, c = cuts.tangent(p)
            assert c0 - c @ p == pytest.approx(value, rel=1e-9, abs=1e-15)
            for _ in range(5):
                q = rng.uniform(size=d.n_buckets) * m
                assert cuts.tangent(q)[0] >= c0 - c @ q - 1e-12
        # at a 0/1 point the function is -beta of the batch
        buckets = d.greedy()[0]
        n = np.bincount(buckets, minlength=d.n_buckets).astype(float)
        assert -cuts.tangent(n)[0] == pytest.approx(d.value(buckets), rel=1e-9)


def test_batch_outer_approximation_is_refused_where_cuts_cannot_be_generated(tmp_path):
    f = _bayes(7, k=3)
    with pytest.raises(InvalidInputError, match=r"model: 'oa' generates its cuts on demand"):
        f.linear_model(model="oa")
    with pytest.raises(InvalidInputError, match=r"model: expected one of"):
        f.linear_model(model="nope")
    assert f.linear_model().meta["variant"] == "miqp-counts"  # MPS export and Pyomo get the MIQP


def test_an_unverifiable_optimality_claim_is_not_reported_as_optimal():
    f = _bayes(3, k=3, N=25, n_coreset=5)
    res = solve(f, "scip", objective_scale=0.01, time_limit=60)  # SCIP's tolerances then swamp the objective
    if res.extra.get("scip_status") in ("optimal", "gaplimit") and res.extra["verified_gap"] > 2e-6:
        assert res.termination == "feasible" and "beyond the backend's tolerances" in res.extra["claim_rejected"]
    assert res.feasible


def test_batch_miqp_mps_export_is_read_by_scip(tmp_path):
    import pyscipopt

    f = _bayes(4, k=3)
    mps, _ = f.to_mps(tmp_path / "batch.mps")
    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(str(mps))
    m.setParam("limits/gap", 1e-9)
    m.optimize()
    ex = solve(f, "exhaustive")
    # SCIP's optimum of the file is -beta* (objective_sign = -1), to SCIP's tolerances
    assert -m.getObjVal() == pytest.approx(ex.objective, rel=1e-3)
