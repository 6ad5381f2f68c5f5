"""Multi-target BayesAME (linear model of coregionalisation): posterior, likelihood, strategies, bad input."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.formulations.bayes import BayesModel
from benchsel.formulations.bayes.evaluate import EvaluationResult
from benchsel.formulations.bayes.lmc import LMCObjective, LMCParams, _kernels, default_kernels, lmc_nll
from benchsel.formulations.bayes.multi import (
    MultiTargetResult,
    _JointPosterior,
    _multi_settings,
    bayesame_multi_evaluate,
)
from benchsel.solvers import InvalidInputError


def _data(seed: int = 0, N: int = 60, Kr: int = 6, Kt: int = 3, spread: float = 0.02):
    """References and correlated targets driven by one latent item difficulty."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=N)
    ab = rng.normal(size=Kr + Kt)
    P = 1.0 / (1.0 + np.exp(-(ab[:, None] - d[None, :])))
    return P[:Kr], np.clip(P[Kr:] + spread * rng.normal(size=(Kt, N)), 0, 1)


def _settings(R, T, **kw):
    base = dict(L=None, kernels=None, strategy="round-robin", init_fraction=0.1, eps1=0.005, eps2=0.02, W=None,
                N0=10, sigma2=None, lr=None, F=50, fit_steps=0, min_fit_steps=0, fit_max_obs=600, weight_decay=0.0,
                tol=None, selection="auto", max_items=None)
    base.update(kw)
    return _multi_settings(R, T, **base)


def test_default_kernels_half_and_half():
    assert default_kernels(4) == ("se", "se", "matern32", "matern32")
    assert default_kernels(3) == ("se", "se", "matern32") and default_kernels(1) == ("se",)


def test_joint_posterior_matches_dense_conditioning_and_rebuild():
    rng = np.random.default_rng(1)
    R = np.round(rng.uniform(size=(3, 30)), 1)
    T = rng.uniform(size=(2, 30))
    cfg = _settings(R, T, L=2)
    bk = cfg.buckets
    B = bk.n_buckets
    mu = bk.phi.mean(axis=1)
    sq = ((bk.phi[:, None] - bk.phi[None]) ** 2).sum(-1)
    p = LMCParams(np.array([1.0, 0.5]), np.array([2.0, 0.7]), rng.normal(size=(2, 2)), 0.02)
    items = rng.integers(0, 30, 12)
    t_o = rng.integers(0, 2, 12)
    b_o = bk.labels[items]
    s_o = T[t_o, items]
    noise = p.sigma2 * bk.sizes[b_o]
    post = _JointPosterior(cfg, p, sq, mu, 3)  # grows past its first capacity
    for t, b, s, nz in zip(t_o, b_o, s_o, noise):
        post.add(int(t), int(b), float(s - mu[b]), float(nz))
    S = _kernels(sq, p, cfg.kernels, 3)
    K = sum(np.kron(np.outer(p.W[l], p.W[l]), S[l]) for l in range(2))
    idx = t_o * B + b_o
    KOO = K[np.ix_(idx, idx)] + np.diag(noise)
    mean = np.tile(mu, 2) + K[:, idx] @ np.linalg.solve(KOO, s_o - mu[b_o])
    cov = K - K[:, idx] @ np.linalg.solve(KOO, K[idx, :])
    again = _JointPosterior(cfg, p, sq, mu, 1)
    again.rebuild(t_o, b_o, s_o - mu[b_o], noise)
    x = rng.normal(size=B)
    for t in range(2):
        blk = slice(t * B, (t + 1) * B)
        for q in (post, again):
            assert np.allclose(q.mean(t), mean[blk], atol=1e-10)
            assert np.allclose(q.cov_times(t, x), cov[blk, blk] @ x, atol=1e-10)
            assert np.allclose(q.cov_diag(t), np.diag(cov)[blk], atol=1e-10)


def test_one_target_one_latent_is_the_single_target_model():
    """Kt = L = 1, squared-exponential: the prior is W^2 Sigma(alpha, beta), the single-target model's."""
    R, T = _data(2, Kt=1)
    cfg = _settings(R, T, L=1, kernels=["se"])
    bk = cfg.buckets
    mu = bk.phi.mean(axis=1)
    sq = ((bk.phi[:, None] - bk.phi[None]) ** 2).sum(-1)
    p = LMCParams(np.array([0.8]), np.array([1.5]), np.array([[0.7]]), 1e-3)
    items = np.array([3, 10, 17, 22, 40])
    post = _JointPosterior(cfg, p, sq, mu, 8)
    post.rebuild(np.zeros(5, np.int64), bk.labels[items], T[0, items] - mu[bk.labels[items]],
                 p.sigma2 * bk.sizes[bk.labels[items]])
    single = BayesModel(R, sigma2=1e-3).posterior(items, T[0, items], alpha=0.8 * 0.49, beta=1.5)
    assert np.allclose(post.mean(0), single.mean, atol=1e-10)
    assert np.allclose(post.cov_diag(0), np.diag(single.cov), atol=1e-10)


@pytest.mark.parametrize("form", ["cells", "pairs"])
def test_nll_gradient_matches_finite_differences(form):
    rng = np.random.default_rng(3)
    L, Kt, u, m, Kr = 3, 2, 9, 14, 4
    phi = rng.uniform(size=(u, Kr))
    sq = ((phi[:, None] - phi[None]) ** 2).sum(-1)
    pos = rng.integers(0, u, m)
    t = rng.integers(0, Kt, m)
    sizes = rng.integers(1, 4, m).astype(float)
    r = 0.3 * rng.normal(size=m)
    p = LMCParams(rng.uniform(0.5, 2, L), rng.uniform(0.5, 2, L), rng.normal(size=(L, Kt)), 0.05)
    ker = ("se", "matern32", "se")
    val, g = lmc_nll(p, ker, Kr, sq, pos, t, sizes, r, gradient=True, form=form)
    x = p.vector()
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = 1e-6
        hi = lmc_nll(LMCParams.from_vector(x + e, L, Kt), ker, Kr, sq, pos, t, sizes, r, form=form)
        lo = lmc_nll(LMCParams.from_vector(x - e, L, Kt), ker, Kr, sq, pos, t, sizes, r, form=form)
        assert (hi - lo) / 2e-6 == pytest.approx(g[i], rel=1e-5, abs=1e-6)
    assert val == pytest.approx(lmc_nll(p, ker, Kr, sq, pos, t, sizes, r, form=form))


def test_nll_forms_agree_with_the_dense_kronecker_likelihood():
    """Both routes of LMCObjective equal 1/2 r'K^-1 r + 1/2 log|K| with K from sum_l w_l w_l' (x) Sigma_l."""
    rng = np.random.default_rng(11)
    L, Kt, u, Kr = 4, 3, 12, 5
    phi = rng.integers(0, 2, size=(u, Kr)).astype(float)
    sq = ((phi[:, None] - phi[None]) ** 2).sum(-1)
    pos = np.concatenate([np.tile(np.arange(u), Kt), rng.integers(0, u, 7)])  # a full grid plus repeated cells
    t = np.concatenate([np.repeat(np.arange(Kt), u), rng.integers(0, Kt, 7)])
    m = pos.size
    sizes = rng.integers(1, 3, m).astype(float)
    r = 0.2 * rng.normal(size=m)
    p = LMCParams(rng.uniform(0.5, 2, L), rng.uniform(0.2, 1, L), rng.normal(size=(L, Kt)), 0.03)
    ker = default_kernels(L)
    S = _kernels(sq, p, ker, Kr)
    Kfull = sum(np.kron(np.outer(p.W[l], p.W[l]), S[l]) for l in range(L))
    idx = t * u + pos
    K = Kfull[np.ix_(idx, idx)] + np.diag(p.sigma2 * sizes)
    want = 0.5 * r @ np.linalg.solve(K, r) + 0.5 * np.linalg.slogdet(K)[1]
    (vc, gc), (vp, gp) = (lmc_nll(p, ker, Kr, sq, pos, t, sizes, r, gradient=True, form=f) for f in ("cells", "pairs"))
    assert vc == pytest.approx(want, rel=1e-10) and vp == pytest.approx(want, rel=1e-10)
    assert np.allclose(gc, gp, rtol=1e-9, atol=1e-10)
    assert LMCObjective(ker, Kr, sq, pos, t, sizes, r, Kt).form == "cells"  # few cells per observation pair
    obs = (rng.integers(0, Kt, 20), np.ones(20), np.zeros(20), Kt)
    sq_big = rng.uniform(size=(400, 400))
    sq_big += sq_big.T
    assert LMCObjective(ker, Kr, sq_big[:4, :4], rng.integers(0, 4, 20), *obs).form == "cells"
    assert LMCObjective(ker, Kr, sq_big, rng.permutation(400)[:20], *obs).form == "pairs"  # 20 of 400 buckets


@pytest.mark.parametrize("strategy", ["round-robin", "average"])
def test_full_run_is_exact_and_results_are_consistent(strategy):
    R, T = _data(4, N=40, Kt=3)
    res = bayesame_multi_evaluate(R, T, strategy=strategy, stop=False, seed=5, fit_steps=40, min_fit_steps=10, F=10)
    assert isinstance(res, MultiTargetResult) and len(res) == 3
    assert all(isinstance(r, EvaluationResult) and r.method == "bayesame-multi" for r in res)
    assert res.n.tolist() == [40, 40, 40] and res.total_evaluations == 120
    assert np.allclose(res.estimates, T.mean(axis=1), atol=1e-9)  # everything evaluated: the exact means
    init = res.info["init"]
    assert init == 4 and res.order.shape == (120 - 3 * init, 2)
    for t, r in enumerate(res):
        assert np.unique(r.coreset).size == r.n  # an item is evaluated once per target
        assert np.allclose(r.scores, T[t, r.coreset])
        assert r.trace["n"][0] == init and r.trace["n"][-1] == 40 and r.trace["var"][-1] == pytest.approx(0, abs=1e-12)
        assert np.array_equal(np.sort(r.coreset[init:]), np.sort(res.order[res.order[:, 0] == t, 1]))
    assert res.intervals.shape == (3, 2) and len(res.info["fits"]) >= 2


def test_stopping_rule_seed_and_callable_targets():
    R, T = _data(6, N=80, Kt=2)
    a = bayesame_multi_evaluate(R, T, seed=7, fit_steps=30, eps2=0.05)
    b = bayesame_multi_evaluate(R, [lambda i: T[0, i], T[1]], seed=7, fit_steps=30, eps2=0.05)
    assert all(r.stopped for r in a) and a.n.tolist() == b.n.tolist()
    assert np.allclose(a.estimates, b.estimates)
    for r in a:
        w = r.trace["width"][-1]
        assert w <= 0.05 and r.interval[1] - r.interval[0] == pytest.approx(w)
    c = bayesame_multi_evaluate(R, T, seed=8, fit_steps=30, eps2=0.05)
    assert not np.array_equal(a[0].coreset, c[0].coreset)


def test_random_selection_draws_items_independently_per_target():
    """Regression: after the shared initial block each target samples its own items (one shared order made every
    target's coreset identical, so the joint model could never transfer scores to items a target had not seen)."""
    R, T = _data(12, N=200, Kt=3)
    res = bayesame_multi_evaluate(R, T, selection="random", max_items=50, stop=False, seed=4, fit_steps=5,
                                  min_fit_steps=1)
    init = res.info["init"]
    own = [set(r.coreset[init:].tolist()) for r in res]
    assert all(len(s) == 50 - init for s in own)
    assert all(np.array_equal(np.sort(r.coreset[:init]), np.sort(res[0].coreset[:init])) for r in res)
    for a in range(3):
        for b in range(a + 1, 3):  # independent uniform draws of 30 of 180 items overlap in about 5
            assert len(own[a] & own[b]) < 15
    avg = bayesame_multi_evaluate(R, T, selection="random", strategy="average", max_items=50, stop=False, seed=4,
                                  fit_steps=5, min_fit_steps=1)
    assert len({tuple(sorted(r.coreset[init:].tolist())) for r in avg}) == 3


def test_random_selection_and_max_items():
    R, T = _data(7, N=50, Kt=2)
    res = bayesame_multi_evaluate(R, T, selection="random", max_items=20, stop=False, seed=1, fit_steps=20)
    assert res.n.tolist() == [20, 20] and not res.info["active"]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(T=np.zeros((2, 59))), r"targets: reference and target item counts differ: reference_scores has N = 60"),
        (dict(T=[np.zeros(60), np.zeros(58)]), r"targets\[1\]: reference and target item counts differ"),
        (dict(L=0), r"L: expected an integer >= 1, got 0"),
        (dict(L=3, kernels=["se", "se"]), r"kernels: expected L = 3 kernel names \(one per latent vector\), got 2"),
        (dict(kernels=["se", "rbf", "se"]), r"kernels\[1\]: expected one of 'se', 'matern32', got 'rbf'"),
        (dict(T=np.full((2, 60), np.nan)), r"targets: .*(NaN|finite)"),
        (dict(T=[np.zeros(60), lambda i: float("nan")]), r"targets\[1\]: expected a finite score, got nan"),
        (dict(strategy="greedy"), r"strategy: expected one of 'round-robin', 'average'"),
        (dict(init_fraction=0.0), r"init_fraction"),
        (dict(T=[]), r"targets: expected at least one target"),
        (dict(max_items=3), r"max_items: expected at least the initial block of 6 items"),
    ],
)
def test_bad_input(kwargs, match):
    R, T = _data(8, N=60, Kt=3)
    kw = dict(kwargs)
    T = kw.pop("T", T)
    with pytest.raises(InvalidInputError, match=match):
        bayesame_multi_evaluate(R, T, fit_steps=5, **kw)


def test_nan_reference_scores_refused():
    R, T = _data(9, N=30, Kt=2)
    R[0, 3] = np.nan
    with pytest.raises(InvalidInputError, match=r"reference_scores"):
        bayesame_multi_evaluate(R, T)
