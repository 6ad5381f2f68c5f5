"""Estimators: the contract, each estimator against a direct computation, bad input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import (
    RIDGE_ALPHAS,
    estimator_names,
    get_estimator,
    list_estimators,
    register_estimator,
    ridge_loo,
    simplex_weights,
)

REQUIRED = ("mean", "cluster-weighted", "ridge", "repcore-ridge", "irt")
SINGLE = ("mean", "cluster-weighted", "ridge", "repcore-ridge", "irt", "rs-mean", "bayes-aipw", "source-assisted",
          "stacked", "model-assisted", "auto", "aipw", "bayes-rs-learn", "suite")


@pytest.fixture(scope="module")
def data():
    Y = irt_responses(60, 120, seed=3)
    rng = np.random.default_rng(0)
    perm = rng.permutation(60)
    src, tgt = Y[perm[:45]], Y[perm[45:]]
    sel = np.sort(rng.choice(120, 15, replace=False))
    return src, tgt, sel


def test_names_listed():
    names = estimator_names()
    assert set(SINGLE) <= set(names)
    assert [c.name for c in list_estimators()] == names
    assert all(c.description for c in list_estimators())


@pytest.mark.parametrize("name", SINGLE)
def test_contract_shape_and_accuracy(name, data):
    src, tgt, sel = data
    est = get_estimator(name).fit(src, sel)
    p = est.predict(tgt[:, sel])
    assert p.shape == (tgt.shape[0],)
    assert np.all(np.isfinite(p))
    # every estimator is far better than guessing the sources' mean score
    truth = tgt.mean(axis=1)
    assert np.abs(p - truth).mean() < np.abs(src.mean() - truth).mean() + 0.05
    one = est.predict(tgt[0, sel])  # a single target as a 1-D array
    assert one.shape == (1,) and one[0] == pytest.approx(p[0])


@pytest.mark.parametrize("name", [*SINGLE, "bayesame"])
def test_predict_with_interval_is_predict_and_predict_interval(name, data):
    src, tgt, sel = data
    est = get_estimator(name).fit(src, sel)
    p, lo, hi = est.predict_with_interval(tgt[:, sel], alpha=0.2)
    np.testing.assert_allclose(p, est.predict(tgt[:, sel]), rtol=0, atol=1e-12)
    assert np.all(lo <= hi)
    lo2, hi2 = est.predict_interval(tgt[:, sel], alpha=0.05)  # a 95 % interval holds the 80 % one
    assert np.all(lo2 <= lo + 1e-12) and np.all(hi <= hi2 + 1e-12)


@pytest.mark.parametrize("name", SINGLE)
def test_selection_order_is_the_column_order(name, data):
    src, tgt, sel = data
    perm = np.random.default_rng(1).permutation(sel.size)
    a = get_estimator(name).fit(src, sel).predict(tgt[:, sel])
    b = get_estimator(name).fit(src, sel[perm]).predict(tgt[:, sel[perm]])
    assert np.allclose(a, b, atol=1e-7)


def test_mean_and_rs_mean(data):
    src, tgt, sel = data
    assert np.allclose(get_estimator("mean").fit(src, sel).predict(tgt[:, sel]), tgt[:, sel].mean(axis=1))
    est = get_estimator("rs-mean").fit(None, sel, n_items=src.shape[1])
    lo, hi = est.predict_interval(tgt[:, sel], alpha=0.05)  # fitted without sources: nothing to clip to
    k, N = sel.size, src.shape[1]
    half = 1.959963984540054 * np.sqrt(tgt[:, sel].var(axis=1, ddof=1) / k * (N - k) / N)
    assert np.allclose(hi - lo, 2 * half)


def test_cluster_weighted_matches_kmedoids(data):
    from benchsel.formulations.kmedoids import KMedoids

    src, tgt, sel = data
    f = KMedoids.from_features(src.T, sel.size, metric="correlation")
    est = get_estimator("cluster-weighted").fit(src, sel)
    assert np.allclose(est.weights_, f.cluster_weights(sel))
    assert np.allclose(est.predict(tgt[:, sel]), f.estimate(sel, tgt[:, sel]))
    assert est.weights_.sum() == pytest.approx(1.0)


def test_kmedoids_estimate_is_the_cluster_weighted_estimator():
    from benchsel.formulations.kmedoids import KMedoids

    rng = np.random.default_rng(4)
    D = rng.uniform(0, 5, size=(9, 9))
    np.fill_diagonal(D, 0)
    w = rng.uniform(0.5, 2, 9)
    f = KMedoids(D, 3, weights=w)
    sel = np.array([7, 1, 4])
    s = rng.uniform(size=(4, 3))
    lab = sel[np.argsort(sel)][np.argmin(D[:, np.sort(sel)], axis=1)]
    share = {j: w[lab == j].sum() / w.sum() for j in sel}
    assert np.allclose(f.estimate(sel, s), s @ np.array([share[j] for j in sel]))
    assert isinstance(f.estimate(sel, s[0]), float)


def _brute_loo(X, y, a):
    err = []
    for i in range(X.shape[0]):
        m = np.ones(X.shape[0], bool)
        m[i] = False
        Xm, ym = X[m], y[m]
        xm, yb = Xm.mean(0), ym.mean()
        coef = np.linalg.solve((Xm - xm).T @ (Xm - xm) + a * np.eye(X.shape[1]), (Xm - xm).T @ (ym - yb))
        err.append(y[i] - (yb + (X[i] - xm) @ coef))
    return float(np.mean(np.square(err)))


def test_ridge_loo_is_exact_leave_one_out():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, size=(20, 7)).astype(float)
    y = X @ rng.normal(size=7) + 0.3 * rng.normal(size=20)
    alphas = [0.01, 0.3, 3.0, 30.0]
    coef, icpt, alpha, mse = ridge_loo(X, y, alphas)
    assert np.allclose(mse, [_brute_loo(X, y, a) for a in alphas])
    assert alpha == alphas[int(np.argmin(mse))]
    Xc = X - X.mean(0)
    direct = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(7), Xc.T @ (y - y.mean()))
    assert np.allclose(coef, direct) and icpt == pytest.approx(y.mean() - X.mean(0) @ direct)


def test_ridge_matches_scikit_learn(data):
    sk = pytest.importorskip("sklearn.linear_model")
    src, tgt, sel = data
    ours = get_estimator("ridge", clip=False).fit(src, sel)
    ref = sk.RidgeCV(alphas=RIDGE_ALPHAS).fit(src[:, sel], src.mean(axis=1))
    assert ours.alpha_ == pytest.approx(ref.alpha_)
    assert np.allclose(ours.predict(tgt[:, sel]), ref.predict(tgt[:, sel]))


def test_ridge_unseen_target_keeps_the_observed_part(data):
    src, tgt, sel = data
    est = get_estimator("ridge", target="unseen").fit(src, sel)
    p = est.predict(tgt[:, sel])
    N, k = src.shape[1], sel.size
    inner = tgt[:, sel] @ est.coef_ + est.intercept_
    assert np.allclose(p, (tgt[:, sel].sum(1) + (N - k) * np.clip(inner, 0, 1)) / N)


def test_repcore_ridge_matches_a_direct_fit(data):
    src, tgt, sel = data
    alpha = 0.7
    p = get_estimator("repcore-ridge", alpha=alpha).fit(src, sel).predict(tgt[:, sel])
    x = src.mean(axis=0)
    unseen = np.setdiff1d(np.arange(src.shape[1]), sel)
    for t in range(tgt.shape[0]):
        y = tgt[t, sel]
        xc = x[sel] - x[sel].mean()
        b = xc @ (y - y.mean()) / (xc @ xc + alpha)
        a = y.mean() - b * x[sel].mean()
        expect = (y.sum() + np.clip(a + b * x[unseen], 0, 1).sum()) / src.shape[1]
        assert p[t] == pytest.approx(expect)


def test_repcore_ridge_matches_scikit_learn_ridge(data):
    sk = pytest.importorskip("sklearn.linear_model")
    src, tgt, sel = data
    est = get_estimator("repcore-ridge", clip=False).fit(src, sel)
    p = est.predict(tgt[:, sel])
    x = src.mean(axis=0)
    unseen = np.setdiff1d(np.arange(src.shape[1]), sel)
    for t in range(3):
        r = sk.Ridge(alpha=1.0).fit(x[sel, None], tgt[t, sel])
        assert p[t] == pytest.approx((tgt[t, sel].sum() + r.predict(x[unseen, None]).sum()) / src.shape[1])


def test_bayes_aipw_matches_the_sequential_baseline(data):
    from benchsel.formulations.bayes.evaluate import BayesianRidge

    src, tgt, sel = data
    est = get_estimator("bayes-aipw").fit(src, sel)
    p = est.predict(tgt[:, sel])
    lo, hi = est.predict_interval(tgt[:, sel], alpha=0.05)
    Phi = src.T
    N, k = Phi.shape[0], sel.size
    for t in range(3):
        br = BayesianRidge(src.shape[0])
        for i in sel:
            br.add(Phi[i], tgt[t, i])
        br.fit()
        mC = Phi[sel].mean(0)
        mU = (Phi.sum(0) - Phi[sel].sum(0)) / (N - k)
        f = 1 + k / (N - k)
        expect = tgt[t, sel].mean() + (mU @ br.coef - mC @ br.coef) / f
        assert p[t] == pytest.approx(expect, abs=1e-6)
        d = mU - mC
        var = (d @ br.sigma @ d + (1 / br.alpha) * (1 / k + 1 / (N - k))) / f ** 2
        h = 1.959963984540054 * np.sqrt(var)  # clipped to the sources' score range [0, 1]
        assert hi[t] == pytest.approx(min(1.0, p[t] + h), rel=1e-4) and lo[t] == pytest.approx(max(0.0, p[t] - h),
                                                                                              rel=1e-4, abs=1e-9)


def test_source_assisted_matches_holocosm():
    from benchsel.formulations.holocosm import RankingRiskReconstruction
    from benchsel.instances.responses import make_multimetric

    R = make_multimetric(10, 25, 3, seed=1)
    X = R.oriented()
    src, tgt = X[:6], X[6:]
    f = RankingRiskReconstruction(src, budget=5, seed=0)
    sel = np.array([3, 9, 1, 20, 14])
    est = get_estimator("source-assisted").fit(src, sel)
    out = est.predict(tgt[:, sel, :])
    assert out.shape == (4, 3)
    assert np.allclose(out, f.estimate(sel, tgt[:, sel, :]))


def test_multi_metric_shapes():
    rng = np.random.default_rng(5)
    src, tgt = rng.uniform(size=(8, 30, 2)), rng.uniform(size=(5, 30, 2))
    sel = np.array([2, 5, 11, 17])
    for name in ("mean", "cluster-weighted", "source-assisted"):
        out = get_estimator(name).fit(src, sel).predict(tgt[:, sel])
        assert out.shape == (5, 2)
    assert np.allclose(get_estimator("mean").fit(src, sel).predict(tgt[:, sel]), tgt[:, sel].mean(1))
    with pytest.raises(InvalidInputError, match="Y_source"):
        get_estimator("ridge").fit(src, sel)


def test_continuous_scores():
    rng = np.random.default_rng(6)
    src = rng.normal(50, 10, size=(30, 40)) + rng.normal(0, 5, size=(30, 1))
    tgt = rng.normal(50, 10, size=(6, 40)) + rng.normal(0, 5, size=(6, 1))
    sel = np.arange(0, 40, 4)
    for name in ("ridge", "repcore-ridge", "bayes-aipw", "cluster-weighted"):
        p = get_estimator(name).fit(src, sel).predict(tgt[:, sel])
        assert np.all(np.abs(p - tgt.mean(1)) < 15)
    with pytest.raises(InvalidInputError, match=r"\[0, 1\]"):
        get_estimator("irt").fit(src, sel)


def test_irt_variants(data):
    src, tgt, sel = data
    est = get_estimator("irt").fit(src, sel)
    v = est.predict_variants(tgt[:, sel])
    assert set(v) == {"irt", "p-irt", "gp-irt"}
    assert 0.0 <= est.lambda_ <= 1.0
    assert np.allclose(est.predict(tgt[:, sel]), v["gp-irt"])
    k, N = sel.size, src.shape[1]
    th = est.model_.abilities(tgt[:, sel], sel)
    P = est.model_.prob(th)
    unseen = np.setdiff1d(np.arange(N), sel)
    assert np.allclose(v["p-irt"], k / N * tgt[:, sel].mean(1) + (1 - k / N) * P[:, unseen].mean(1))
    assert np.allclose(v["irt"], P.mean(1))
    # an all-correct coreset has a finite ability and an estimate below 1
    top = get_estimator("irt", variant="p-irt").fit(src, sel).predict(np.ones(k))
    assert 0.5 < top[0] <= 1.0
    assert est.irt_seconds_ > 0 and est.model_.info["nit"] > 0


def test_irt_recovers_the_ranking_of_abilities():
    from benchsel.formulations.estimation.irt import fit_irt

    Y = irt_responses(40, 200, seed=8)  # rows sorted by mean score
    m = fit_irt(Y, 1, cache=False)
    from scipy.stats import spearmanr

    assert abs(spearmanr(m.theta[:, 0], Y.mean(1)).statistic) > 0.95
    m2 = fit_irt(Y, 2, seed=1)
    assert m2.A.shape == (200, 2) and m2.item_embedding().shape == (200, 3)
    assert fit_irt(Y, 2, seed=1) is m2  # cached


def test_stacked(data):
    src, tgt, sel = data
    est = get_estimator("stacked").fit(src, sel)
    assert est.weights_.min() >= 0 and est.weights_.sum() == pytest.approx(1.0)
    solo = get_estimator("stacked", members=["ridge"]).fit(src, sel)
    assert np.allclose(solo.predict(tgt[:, sel]), get_estimator("ridge").fit(src, sel).predict(tgt[:, sel]))
    with pytest.raises(InvalidInputError, match="members"):
        get_estimator("stacked", members=[42])
    with pytest.raises(InvalidInputError, match="not understood"):
        get_estimator("stacked", members=[("ridge", {"bogus": 1})])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.integers(0, 1000))
def test_simplex_weights_property(shift, seed):
    rng = np.random.default_rng(seed)
    P = rng.uniform(size=(12, 3)) + np.asarray(shift)
    y = rng.uniform(size=12)
    w = simplex_weights(P, y)
    assert w.min() >= -1e-12 and w.sum() == pytest.approx(1.0)
    err = np.sum((P @ w - y) ** 2)
    for j in range(3):  # no vertex of the simplex beats the fitted weights
        assert err <= np.sum((P[:, j] - y) ** 2) + 1e-9


# ------------------------------------------------------------------ bad input
def test_bad_input(data):
    src, tgt, sel = data
    est = get_estimator("ridge")
    with pytest.raises(InvalidInputError, match="not fitted"):
        est.predict(tgt[:, sel])
    est.fit(src, sel)
    with pytest.raises(InvalidInputError, match=r"Y_target: expected shape \(targets, 15\)"):
        est.predict(tgt[:, sel[:-1]])
    with pytest.raises(InvalidInputError, match="transposed"):
        est.predict(tgt[:10, sel].T)
    with pytest.raises(InvalidInputError, match=r"Y_target\[:, selection\]"):
        est.predict(tgt)
    with pytest.raises(InvalidInputError, match=r"selection: expected distinct item indices, got 1 repeated"):
        get_estimator("ridge").fit(src, [3, 5, 3])
    with pytest.raises(InvalidInputError, match=r"selection: expected item indices in \[0, 120\), got values"):
        get_estimator("ridge").fit(src, [3, 120])
    with pytest.raises(InvalidInputError, match="selection: expected at least one"):
        get_estimator("ridge").fit(src, [])
    bad = src.copy()
    bad[2, 7] = np.nan
    bad[4, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"Y_source: expected finite scores, got 2 NaN entries in 2 source "
                                                r"models \(first at source model 2, item 7"):
        get_estimator("ridge").fit(bad, sel)
    with pytest.raises(InvalidInputError, match=r"Y_target: expected finite.*1 NaN"):
        t = tgt[:, sel].copy()
        t[1, 0] = np.nan
        est.predict(t)
    with pytest.raises(InvalidInputError, match="Y_source: expected at least 2 source models"):
        get_estimator("ridge").fit(src[:1], sel)
    with pytest.raises(InvalidInputError, match="unknown estimator 'lasso'; estimators: mean, cluster-weighted"):
        get_estimator("lasso")
    with pytest.raises(InvalidInputError, match=r"not understood by estimator 'ridge'.*alphas"):
        get_estimator("ridge", alpha=3)
    with pytest.raises(InvalidInputError, match="alphas"):
        get_estimator("ridge", alphas=[-1.0])
    with pytest.raises(InvalidInputError, match="Y_source: estimator 'ridge' learns from source models"):
        get_estimator("ridge").fit(None, sel)
    with pytest.raises(InvalidInputError, match="Y_source: expected an array of shape"):
        get_estimator("ridge").fit(src[0], sel)


def test_register_estimator_and_errors():
    from benchsel.formulations.estimation import Estimator

    class Median(Estimator):
        name = "test-median"
        description = "coreset median"
        needs_sources = False
        min_sources = 1

        def _fit(self, Y, sel):
            pass

        def _predict(self, Yt):
            return np.median(Yt, axis=1)

    register_estimator(Median)
    assert "test-median" in estimator_names()
    p = get_estimator("test-median").fit(None, [0, 2, 3], n_items=5).predict([[0, 1, 1], [0, 0, 1]])
    assert np.allclose(p, [1, 0])
    with pytest.raises(InvalidInputError, match="Estimator subclass"):
        register_estimator(int)  # type: ignore[arg-type]


def test_timing_goal_shapes():
    """100 targets on a 5 000-item matrix: every estimator fits and predicts (times are measured by a script)."""
    Y = irt_responses(200, 5000, seed=11)
    src, tgt = Y[::2], Y[1::2]
    sel = np.arange(0, 5000, 50)
    for name in ("mean", "cluster-weighted", "ridge", "repcore-ridge", "bayes-aipw", "rs-mean", "source-assisted"):
        assert get_estimator(name).fit(src, sel).predict(tgt[:, sel]).shape == (100,)


def test_irt_gradient_matches_finite_differences():
    from scipy.optimize import check_grad

    from benchsel.formulations.estimation.irt import irt_objective

    rng = np.random.default_rng(9)
    Y = (rng.uniform(size=(7, 11)) < 0.6).astype(float)
    Y[0, :3] = 0.4  # a fractional score
    for d in (1, 2):
        x = rng.normal(size=7 * d + 11 * d + 11)
        err = check_grad(lambda v, d=d: irt_objective(v, Y, d, 1.0, 2.0)[0],
                         lambda v, d=d: irt_objective(v, Y, d, 1.0, 2.0)[1], x)
        assert err < 1e-6
        z = np.clip(x[:7 * d].reshape(7, d) @ x[7 * d:18 * d].reshape(11, d).T - x[18 * d:], -30, 30)
        direct = (np.logaddexp(0, z) - Y * z).sum() + 0.5 * (np.sum(x[:7 * d] ** 2) + np.sum(x[7 * d:] ** 2) / 4)
        assert irt_objective(x, Y, d, 1.0, 2.0)[0] == pytest.approx(direct / 77)


def test_stacked_upward_cross_fitting():
    Y = irt_responses(60, 120, seed=12)  # rows sorted by score: the top 15 are stronger than every source
    src, tgt = Y[:45], Y[45:]
    sel = np.arange(0, 120, 8)
    up = get_estimator("stacked", cv="upward", folds=3).fit(src, sel)
    assert up.weights_.sum() == pytest.approx(1.0) and up.oof_mae_.shape == (3,)
    p = up.predict(tgt[:, sel])
    assert p.shape == (15,) and np.all(np.isfinite(p))


# ------------------------------------------------------------ magnitudes (issue 31)
@pytest.mark.parametrize("name", SINGLE)
def test_scores_beyond_the_float_range_of_their_squares_are_refused_by_name(name):
    """Scores near 1e300 gave numpy overflow warnings and NaN estimates (or an argmax error); near 1e-300, estimates
    that had lost the scores."""
    rng = np.random.default_rng(0)
    Y = rng.random((12, 30))
    sel = np.arange(0, 30, 3)
    big = r"stays below 1e\+75 in squares and products of scores, got values up to 9.\d+e\+299"
    tiny = r"expected scores whose largest magnitude is 0 or at least 1e-75, got values up to 9.\d+e-301"
    with pytest.raises(InvalidInputError, match=rf"^Y_source: expected values whose magnitude {big}"):
        get_estimator(name).fit(Y[:8] * 1e300, sel)
    with pytest.raises(InvalidInputError, match=rf"^Y_source: {tiny}"):
        get_estimator(name).fit(Y[:8] * 1e-300, sel)
    est = get_estimator(name).fit(Y[:8], sel)
    with pytest.raises(InvalidInputError, match=rf"^Y_target: expected values whose magnitude {big}"):
        est.predict(Y[8:, sel] * 1e300)
    assert np.isfinite(est.predict(Y[8:, sel])).all()
    if name not in ("irt", "stacked", "auto"):  # IRT takes scores in [0, 1] only
        with np.errstate(all="raise"):
            assert np.isfinite(get_estimator(name).fit(Y[:8] * 1e70, sel).predict(Y[8:, sel] * 1e70)).all()


def test_repcore_ridge_pools_items_no_source_solves():
    """Issue 30: items every source failed are predicted from the target's selected items of that group."""
    rng = np.random.default_rng(4)
    src = (rng.random((20, 60)) < 0.5).astype(float)
    src[:, 40:] = 0.0  # 20 items no source solves
    sel = np.array([0, 5, 10, 15, 41, 42, 43, 44])
    tgt = (rng.random((3, 60)) < 0.6).astype(float)
    est = get_estimator("repcore-ridge").fit(src, sel)
    off = get_estimator("repcore-ridge", pool_constant=False).fit(src, sel)
    p, q = est.predict(tgt[:, sel]), off.predict(tgt[:, sel])
    unseen = np.setdiff1d(np.arange(60), sel)
    x = src.mean(axis=0)
    for t in range(3):
        y = tgt[t, sel]
        b = ((y - y.mean()) @ (x[sel] - x[sel].mean())) / ((x[sel] - x[sel].mean()) @ (x[sel] - x[sel].mean()) + 1.0)
        g = np.clip(y.mean() - b * x[sel].mean() + b * x[unseen], 0, 1)
        assert q[t] == pytest.approx((y.sum() + g.sum()) / 60)
        zero = unseen >= 40
        pooled = (tgt[t, [41, 42, 43, 44]].sum() + g[zero].mean()) / 5
        g[zero] = pooled
        assert p[t] == pytest.approx((y.sum() + g.sum()) / 60)
