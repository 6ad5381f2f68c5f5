"""HoloCosm (SPEC F1): risks against a literal reference, calibration, MILP, swap search,
estimation, fidelity, generators, split helper and bad input."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, spearmanr

from benchsel.formulations import RankingRiskReconstruction
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.holocosm import FEAS_TOL, fidelity, weighted_estimate
from benchsel.heuristics.holocosm import swap_search
from benchsel.instances.responses import Responses, make_multimetric, paper_split
from benchsel.solvers import solve
from benchsel.solvers.backends.highs import solve_model_highs
from benchsel.solvers.conformance import brute_force


# --------------------------------------------------------------------------- literal reference (SPEC F1)
def reference_risks(X: np.ndarray, S, lam: float = 1.0) -> tuple[float, float]:
    """R_mean and R_rank written out loop by loop from SPEC F1."""
    M, _N, K = X.shape
    mu = X.mean(axis=1)
    muhat = X[:, list(S), :].mean(axis=1)
    pools = [[a for a in range(M) if a != m] for m in range(M)] if M >= 4 else [list(range(M))]
    r_mean, r_rank = [], []
    for A in pools:
        total = 0.0
        for k in range(K):
            a = max(mu[A, k]) - min(mu[A, k])
            if a == 0:
                vals = X[A][:, :, k]
                if vals.max() == vals.min():
                    continue
                a = vals.std()
            total += sum(abs(muhat[m, k] - mu[m, k]) for m in A) / len(A) / a
        r_mean.append(total / K)
        losses = []
        for k in range(K):
            pairs = [(a, b) for a in A for b in A if mu[a, k] > mu[b, k]]
            if not pairs:
                continue
            p = np.median([mu[a, k] - mu[b, k] for a, b in pairs])
            for a, b in pairs:
                d = mu[a, k] - mu[b, k]
                dh = muhat[a, k] - muhat[b, k]
                losses.append((max(0.0, d - dh) + lam * max(0.0, -dh)) / p)
        r_rank.append(float(np.mean(losses)) if losses else 0.0)
    return float(np.mean(r_mean)), float(np.mean(r_rank))


@st.composite
def instances(draw):
    M = draw(st.integers(2, 6))
    N = draw(st.integers(4, 12))
    K = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["normal", "integer", "binary"]))
    if kind == "normal":
        X = rng.normal(size=(M, N, K))
    elif kind == "integer":  # ties between models and zero-scale metrics
        X = rng.integers(0, 3, size=(M, N, K)).astype(float)
    else:
        X = (rng.random((M, N, K)) < 0.5).astype(float)
    if draw(st.booleans()):
        X[:, :, 0] = 2.0  # a constant metric
    B = draw(st.integers(1, N - 1))
    lam = draw(st.sampled_from([0.0, 1.0, 2.5]))
    return X, B, lam, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_risks_match_literal_reference(inst, data):
    X, B, lam, seed = inst
    f = RankingRiskReconstruction(X, budget=B, seed=seed % 1000, lam=lam, bank_size=8)
    S = np.sort(np.asarray(data.draw(st.permutations(range(X.shape[1])))[:B]))
    rm, rr = f.risks(S)
    ref_m, ref_r = reference_risks(X, S, lam)
    assert rm == pytest.approx(ref_m, rel=1e-9, abs=1e-12)
    assert rr == pytest.approx(ref_r, rel=1e-9, abs=1e-12)
    assert f.evaluate(S) == rm
    assert f.n_pools == (X.shape[0] if X.shape[0] >= 4 else 1)


def test_zero_scale_rule_uses_std_then_drops_constant_metric():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 10, 3))
    X[:, :, 1] = rng.normal(size=(1, 10))  # equal model means, items vary: std scale
    X[:, :, 2] = 5.0  # constant
    f = RankingRiskReconstruction(X, budget=4, seed=0)
    S = np.arange(4)
    assert f.risks(S) == pytest.approx(reference_risks(X, S))
    w = f.terms.mean_w.reshape(3, 3)
    assert np.all(w[:, 2] == 0)
    std = X[:, :, 1].std()
    assert w[0, 1] == pytest.approx(1.0 / (3 * 3 * std))
    assert not np.any(f.terms.pair_k == 1) and not np.any(f.terms.pair_k == 2)  # ties are not pairs


# --------------------------------------------------------------------------- calibration
def test_calibration_quantile_inverted_cdf_and_seeded():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 40, 3))
    f = RankingRiskReconstruction(X, budget=8, seed=11)
    assert f.bank.shape == (128, 8)
    assert np.all(np.diff(f.bank, axis=1) > 0)
    rr = np.array([f.ranking_risk(S) for S in f.bank])
    np.testing.assert_allclose(rr, f.bank_R_rank, rtol=1e-10, atol=1e-13)
    assert f.eps == np.quantile(f.bank_R_rank, 0.25, method="inverted_cdf")
    assert np.any(f.bank_R_rank == f.eps)  # attained
    assert (f.bank_R_rank <= f.eps + FEAS_TOL).sum() >= 1
    g = RankingRiskReconstruction(X, budget=8, seed=11)
    assert g.eps == f.eps and np.array_equal(g.bank, f.bank)
    h = RankingRiskReconstruction(X, budget=8, seed=12)
    assert not np.array_equal(h.bank, f.bank)
    q = RankingRiskReconstruction(X, budget=8, seed=11, quantile=0.5, bank_size=33)
    assert q.eps == np.quantile(q.bank_R_rank, 0.5, method="inverted_cdf") and q.bank.shape == (33, 8)


def test_retention_budget_and_params_roundtrip():
    X = np.random.default_rng(1).normal(size=(4, 25, 2))
    f = RankingRiskReconstruction(X, retention=0.2, seed=3, orientation=[1, -1])
    assert f.budget == 5
    g = type(f)(**f.get_params())
    assert g.budget == f.budget and g.eps == f.eps and np.array_equal(g.bank, f.bank)
    assert np.array_equal(g.X, f.X)
    assert RankingRiskReconstruction(X, retention=0.01, seed=0).budget == 1


def test_orientation_negates_lower_is_better():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 12, 2))
    f = RankingRiskReconstruction(X, budget=4, orientation=[1, -1])
    g = RankingRiskReconstruction(X, budget=4, lower_is_better=[False, True])
    Xo = X.copy()
    Xo[:, :, 1] *= -1
    h = RankingRiskReconstruction(Xo, budget=4)
    assert f.eps == g.eps == h.eps
    S = [0, 3, 5, 9]
    assert f.risks(S) == g.risks(S) == h.risks(S)


# --------------------------------------------------------------------------- MILP
def _fixed(model, S):
    x_cols, x_vals = model.x_from_selection(S)
    lb, ub = model.col_lb.copy(), model.col_ub.copy()
    lb[x_cols] = ub[x_cols] = x_vals
    return dataclasses.replace(model, col_lb=lb, col_ub=ub)


@pytest.mark.parametrize("pools,muhat", [("merged", "inline"), ("separate", "inline"), ("merged", "aux"),
                                         ("separate", "aux")])
def test_milp_at_fixed_selection_gives_r_mean_or_infeasible(pools, muhat):
    rng = np.random.default_rng(5)
    f = RankingRiskReconstruction(rng.normal(size=(5, 14, 2)), budget=4, seed=2)
    model = f.linear_model(pools=pools, muhat=muhat)
    assert np.isfinite(model.col_lb).all() and np.isfinite(model.col_ub).all()
    for S in f.bank[:12]:
        _sel, term, bound, _ = solve_model_highs(_fixed(model, S), threads=1)
        if f.is_feasible(S):
            assert term == "optimal"
            assert bound == pytest.approx(f.evaluate(S), rel=1e-7, abs=1e-9)
        else:
            assert term == "infeasible"


def test_milp_forms_reach_brute_force_optimum():
    rng = np.random.default_rng(8)
    f = RankingRiskReconstruction(rng.normal(size=(4, 10, 2)), budget=3, seed=1)
    vals = [(f.evaluate(S), S) for S in f.enumerate_selections() if f.is_feasible(S)]
    opt = min(v for v, _ in vals)
    for kw in ({}, {"pools": "separate"}, {"muhat": "aux"}):
        res = solve(f, "highs", seed=0, threads=1, **kw)
        assert res.termination == "optimal" and res.feasible
        assert res.objective == pytest.approx(opt, abs=1e-9)
        assert res.extra["eps"] == f.eps and res.extra["R_mean"] == res.objective
    cp = solve(f, "cpsat", seed=0, threads=2)
    assert cp.termination == "optimal" and cp.objective == pytest.approx(opt, abs=1e-6)


def test_explicit_infeasible_eps_is_reported_not_relaxed():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4, 8, 2))
    base = RankingRiskReconstruction(X, budget=3)
    low = 0.5 * min(base.ranking_risk(S) for S in base.enumerate_selections())
    f = RankingRiskReconstruction(X, budget=3, eps=low)
    assert f.eps == low and f.calibrated_eps == base.eps and f.initial_selection() is None
    res = solve(f, "highs", seed=0)
    assert res.termination == "infeasible" and not res.feasible and res.selection.size == 0
    sw = solve(f, "swap", seed=0)
    assert not sw.feasible and sw.selection.size == 3 and sw.extra["found_feasible"] is False
    assert "exceeds eps" in sw.extra["violations"]
    rnd = solve(f, "random", seed=0)
    assert not rnd.feasible


# --------------------------------------------------------------------------- swap search
@pytest.fixture(scope="module")
def medium():
    R = make_multimetric(8, 300, 4, corr=0.3, n_negative=1, seed=7)
    return RankingRiskReconstruction(R.oriented(), retention=0.2, seed=7)


def test_swap_feasible_deterministic_and_incremental_scores_exact(medium):
    f = medium
    a = swap_search(f, rng=np.random.default_rng(1))
    b = swap_search(f, rng=np.random.default_rng(1))
    assert np.array_equal(a.selection, b.selection)
    rm, rr = f.risks(a.selection)
    assert a.R_mean == pytest.approx(rm, rel=1e-10) and a.R_rank == pytest.approx(rr, rel=1e-10)
    assert a.feasible and rr <= f.eps + FEAS_TOL
    start = f.bank[a.start]
    assert f.is_feasible(start)
    feas = f.bank_R_rank <= f.eps + FEAS_TOL
    assert f.bank_R_mean[a.start] == f.bank_R_mean[feas].min()
    assert rm < f.bank_R_mean[a.start] or a.swaps == 0
    assert a.swaps <= 80
    assert a.rounds == a.swaps + 1 if a.swaps < 80 else a.rounds == 80
    res = solve(f, "swap", seed=1)
    assert np.array_equal(res.selection, a.selection) and res.feasible
    assert res.objective == pytest.approx(rm) and res.extra["eps"] == f.eps


def test_swap_options(medium):
    f = medium
    r0 = solve(f, "swap", seed=0, max_swaps=0)
    best = np.lexsort((f.bank_R_mean, f.bank_R_rank > f.eps + FEAS_TOL))[0]
    assert np.array_equal(r0.selection, f.bank[best]) and r0.termination == "iteration_limit"
    assert np.array_equal(f.initial_selection(), f.bank[best])
    r3 = solve(f, "swap", seed=0, max_swaps=3)
    assert r3.extra["swaps"] <= 3
    default = solve(f, "swap", seed=0)
    long = solve(f, "swap", seed=0, patience=5, max_swaps=400)  # same path, then keeps going
    assert long.feasible and long.objective <= default.objective
    assert long.extra["swaps"] >= default.extra["swaps"]
    un = solve(f, "swap", seed=0, rank_constraint=False)
    assert un.extra["rank_constraint"] is False and un.extra["start_bank_index"] == int(np.argmin(f.bank_R_mean))
    init = f.bank[5]
    ri = solve(f, "swap", seed=0, init=init, max_swaps=0)
    assert np.array_equal(ri.selection, init)
    with pytest.raises(InvalidInputError, match="proposals"):
        solve(f, "swap", proposals=0)
    with pytest.raises(InvalidInputError, match="not understood"):
        solve(f, "swap", nonsense=1)
    with pytest.raises(InvalidInputError, match="init"):
        solve(f, "swap", init=[0, 1])
    with pytest.raises(InvalidInputError, match="rank_constraint"):
        solve(f, "swap", rank_constraint="yes")


def test_swap_is_no_better_than_milp_optimum():
    rng = np.random.default_rng(9)
    for s in range(3):
        f = RankingRiskReconstruction(rng.normal(size=(6, 12, 2)), budget=3, seed=s)
        ex = solve(f, "highs", seed=0, threads=1)
        sw = solve(f, "swap", seed=s)
        assert ex.termination == "optimal" and sw.feasible
        assert sw.objective >= ex.objective - 1e-9
        assert ex.bound is not None and ex.bound <= sw.objective + 1e-9


def test_random_method_draws_feasible_subsets(medium):
    r = solve(medium, "random", seed=3)
    assert r.feasible and r.selection.size == medium.budget
    u = medium.uniform_selection(np.random.default_rng(3))
    assert u.size == medium.budget and np.all(np.diff(u) > 0)


# --------------------------------------------------------------------------- estimation and fidelity
def test_source_assisted_estimate_identities():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(5, 30, 3))
    f = RankingRiskReconstruction(X, budget=6, seed=0, orientation=[1, -1, 1])
    S = np.array([12, 3, 7, 20, 25, 1])  # unsorted: Y follows this order
    Y = rng.normal(size=(4, 30, 3))
    est = f.estimate(S, Y[:, S, :])
    c = (X.mean(axis=1) - X[:, np.sort(S), :].mean(axis=1)).mean(axis=0)  # in given units
    np.testing.assert_allclose(est, Y[:, S, :].mean(axis=1) + c)
    # within-metric differences between targets are those of the plain means
    np.testing.assert_allclose(est[0] - est[1], Y[0, S].mean(0) - Y[1, S].mean(0))
    # sources as targets: the mean estimate equals the mean full score exactly
    np.testing.assert_allclose(f.estimate(S, X[:, S, :]).mean(axis=0), X.mean(axis=1).mean(axis=0))
    assert f.estimate(S, Y[0, S, :]).shape == (3,)
    with pytest.raises(InvalidInputError, match="Y"):
        f.estimate(S, Y[:, S[:3], :])


def test_weighted_estimate():
    Y = np.arange(24, dtype=float).reshape(2, 4, 3)
    np.testing.assert_allclose(weighted_estimate(Y), Y.mean(axis=1))
    w = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(weighted_estimate(Y, w), np.einsum("gbk,b->gk", Y, w))
    with pytest.raises(InvalidInputError, match="weights"):
        weighted_estimate(Y, [0.5, 0.5, 0.5, 0.5])


def test_fidelity_against_scipy():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(9, 4))
    e = y + 0.3 * rng.normal(size=(9, 4))
    y[:, 3] = 1.0  # constant truth: range 0 -> divide by 1; correlations undefined
    fd = fidelity(e, y)
    for k in range(3):
        assert fd.nmae[k] == pytest.approx(np.abs(e[:, k] - y[:, k]).mean() / np.ptp(y[:, k]))
        assert fd.spearman[k] == pytest.approx(spearmanr(e[:, k], y[:, k]).statistic)
        assert fd.kendall[k] == pytest.approx(kendalltau(e[:, k], y[:, k], variant="b").statistic)
    assert fd.nmae[3] == pytest.approx(np.abs(e[:, 3] - 1.0).mean())
    assert np.isnan(fd.spearman[3]) and np.isnan(fd.kendall[3])
    assert fd.mean_nmae == pytest.approx(fd.nmae.mean()) and fd.worst_nmae == fd.nmae.max()
    assert fd.mean_sp == pytest.approx(np.mean(fd.spearman[:3])) and fd.worst_sp == np.min(fd.spearman[:3])
    perfect = fidelity(y[:, :3], y[:, :3])
    assert perfect.mean_nmae == 0 and perfect.mean_sp == pytest.approx(1.0) and perfect.worst_tau == pytest.approx(1.0)
    with pytest.raises(InvalidInputError, match="estimate"):
        fidelity(e[:, :2], y)


# --------------------------------------------------------------------------- generator and split
def test_make_multimetric_seeded_and_correlation_controlled():
    a = make_multimetric(30, 400, 4, corr=0.9, seed=5)
    b = make_multimetric(30, 400, 4, corr=0.9, seed=5)
    assert isinstance(a, Responses) and a.Y.shape == (30, 400, 4) and np.array_equal(a.Y, b.Y)

    def mean_offdiag(R, rows, cols):
        rho = spearmanr(R.oriented().mean(axis=1)).statistic
        return np.mean([rho[i, j] for i in rows for j in cols if i != j])

    assert mean_offdiag(a, range(4), range(4)) > 0.6
    neg = make_multimetric(30, 400, 4, corr=0.9, n_negative=2, seed=5)
    assert mean_offdiag(neg, [0, 1], [2, 3]) < -0.5 and mean_offdiag(neg, [0, 1], [0, 1]) > 0.5
    lib = make_multimetric(10, 50, 3, n_lower_is_better=1, kind="binary", seed=1)
    assert lib.lower_is_better.tolist() == [False, False, True] and set(np.unique(lib.Y)) <= {0.0, 1.0}
    with pytest.raises(InvalidInputError, match="corr"):
        make_multimetric(5, 10, 3, corr=-0.9)
    with pytest.raises(InvalidInputError, match="corr"):
        make_multimetric(5, 10, 2, corr=[[1.0, 2.0], [2.0, 1.0]])


def test_make_multimetric_largest_size():
    R = make_multimetric(59, 8400, 14, seed=0)
    assert R.Y.shape == (59, 8400, 14) and np.isfinite(R.Y).all()


def test_paper_split():
    # model means rise with the index on metric 0 and fall on the lower-is-better metric 1
    M = 10
    Y = np.zeros((M, 3, 2))
    Y[:, :, 0] = np.arange(M)[:, None]
    Y[:, :, 1] = -np.arange(M)[:, None] * 2.0
    s = paper_split(Y, 6, lower_is_better=[False, True])
    assert s.sources.tolist() == [0, 2, 4, 5, 7, 9]  # round(linspace(0, 9, 6)) = 0, 2, 4, 5, 7, 9
    assert s.targets.tolist() == [1, 3, 6, 8]
    assert np.all(np.diff(s.score[s.order]) >= 0)
    Ys, Yt = s.take(Y)
    assert Ys.shape == (6, 3, 2) and Yt.shape == (4, 3, 2)
    # reversed orientation reverses the ranking
    r = paper_split(Y, 6)
    assert r.order[0] == 9 or np.ptp(r.score) == 0
    with pytest.raises(InvalidInputError, match="n_sources"):
        paper_split(Y, 10)
    with pytest.raises(InvalidInputError, match="lower_is_better"):
        paper_split(Y, 3, lower_is_better=[True])


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"budget": 10}, "budget"),
        ({"budget": 0}, "budget"),
        ({"budget": 3, "retention": 0.2}, "exactly one"),
        ({}, "exactly one"),
        ({"retention": 1.0}, "retention"),
        ({"retention": 0.97}, "retention"),
        ({"budget": 3, "orientation": [1, -1]}, "orientation"),
        ({"budget": 3, "orientation": [1, 0, 1]}, "orientation"),
        ({"budget": 3, "lower_is_better": [True]}, "lower_is_better"),
        ({"budget": 3, "orientation": [1, 1, 1], "lower_is_better": [True] * 3}, "orientation"),
        ({"budget": 3, "eps": -0.1}, "eps"),
        ({"budget": 3, "quantile": 1.5}, "quantile"),
        ({"budget": 3, "bank_size": 0}, "bank_size"),
        ({"budget": 3, "lam": -1.0}, "lam"),
        ({"budget": 3, "seed": -1}, "seed"),
    ],
)
def test_bad_parameters(kwargs, match):
    X = np.random.default_rng(0).normal(size=(3, 10, 3))
    with pytest.raises(InvalidInputError, match=match):
        RankingRiskReconstruction(X, **kwargs)


def test_bad_tensors():
    X = np.random.default_rng(0).normal(size=(3, 10, 2))
    Xn = X.copy()
    Xn[1, 2, 0] = np.nan
    with pytest.raises(InvalidInputError, match=r"X: expected finite values.*NaN"):
        RankingRiskReconstruction(Xn, budget=3)
    with pytest.raises(InvalidInputError, match="at least 2 source models"):
        RankingRiskReconstruction(X[:1], budget=3)
    with pytest.raises(InvalidInputError, match="X"):
        RankingRiskReconstruction(X[0, 0], budget=1)
    f = RankingRiskReconstruction(X, budget=3)
    with pytest.raises(InvalidInputError, match="selection"):
        f.evaluate([])
    with pytest.raises(InvalidInputError, match="'risk_slack' not understood"):  # no solver-specific slack
        solve(f, "highs", risk_slack=1e-6)
    assert not f.check([0, 1]).feasible and "budget" in f.check([0, 1]).reasons[0]


def test_enumeration_and_two_dimensional_input():
    X = np.random.default_rng(0).normal(size=(3, 6))
    f = RankingRiskReconstruction(X, budget=2)
    assert f.n_metrics == 1 and f.n_selections() == 15
    assert len(list(f.enumerate_selections())) == 15
    assert all(len(s) == 2 for s in itertools.islice(f.enumerate_selections(), 3))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.integers(0, 1000), st.booleans())
def test_swap_property_feasible_and_consistent(inst, seed, constrained):
    X, B, lam, fseed = inst
    f = RankingRiskReconstruction(X, budget=B, seed=fseed % 1000, lam=lam, bank_size=16)
    out = swap_search(f, rng=np.random.default_rng(seed), rank_constraint=constrained)
    assert out.selection.size == B and np.unique(out.selection).size == B
    rm, rr = f.risks(out.selection)
    assert out.R_mean == pytest.approx(rm, rel=1e-9, abs=1e-12)
    assert out.R_rank == pytest.approx(rr, rel=1e-9, abs=1e-12)
    if constrained:  # the calibrated eps is met by a bank subset, and feasibility is never lost
        assert out.feasible and f.is_feasible(out.selection)
        start_rm = f.bank_R_mean[out.start]
        assert f.is_feasible(f.bank[out.start]) and rm <= start_rm * (1 + 1e-12) + 1e-15
    else:
        assert rm <= f.bank_R_mean.min() + 1e-12


# --------------------------------------------------------------------------- numeric edges (issue 31)
def test_responses_near_1e_minus_200_solve_like_the_same_responses_at_unit_scale():
    """term_floors raised OverflowError (a grid step of 0: tiny responses rounded to the fraction 0)."""
    rng = np.random.default_rng(0)
    for X in (rng.random((4, 9, 2)), rng.integers(0, 4, size=(4, 9, 2)).astype(float)):
        unit = RankingRiskReconstruction(X, budget=3, seed=0)
        tiny = RankingRiskReconstruction(X * 1e-200, budget=3, seed=0)
        floors = tiny.term_floors()
        assert np.isfinite(floors).all() and (floors == 0).all()
        opt = brute_force(unit)[0]
        assert brute_force(tiny)[0] == pytest.approx(opt, rel=1e-9)
        res = solve(tiny, "highs", time_limit=60)
        assert res.termination == "optimal" and res.objective == pytest.approx(opt, rel=1e-6)


def test_model_means_equal_up_to_rounding_are_ties_whatever_the_unit_of_x():
    """Means equal in exact arithmetic but not in floating point (here: x 0.1) were a 'pair' with a margin of
    1e-17 and a weight of 1e16, and a pool's mean-risk scale of 1e-17: the problem changed with the unit of X."""
    X = np.random.default_rng(0).integers(0, 4, size=(4, 9, 2)).astype(float)
    X[1] = X[0][::-1]  # model 1: model 0's responses in reverse order, the same means
    unit = RankingRiskReconstruction(X, budget=3, seed=0)
    sels = [np.sort(np.random.default_rng(s).choice(9, 3, replace=False)) for s in range(20)]
    for scale in (0.1, 1e-9, 1e6):
        f = RankingRiskReconstruction(X * scale, budget=3, seed=0)
        if scale == 0.1:
            assert (f.mu[0] != f.mu[1]).any()  # the rounding this test is about
        assert f.terms.pair_a.tolist() == unit.terms.pair_a.tolist()
        assert f.terms.pair_b.tolist() == unit.terms.pair_b.tolist()
        np.testing.assert_allclose(f.terms.pair_w * scale, unit.terms.pair_w, rtol=1e-9)
        np.testing.assert_allclose(f.terms.mean_w * scale, unit.terms.mean_w, rtol=1e-9)
        assert f.eps == pytest.approx(unit.eps, rel=1e-9)
        for S in sels:
            assert f.risks(S) == pytest.approx(unit.risks(S), rel=1e-9, abs=1e-12)
