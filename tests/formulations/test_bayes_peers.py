"""BayesAME's peers (Seq-APW, Bayes-RS-Learn, AIPW, the out-of-sample control-variate estimator) and the
registry of sequential evaluators."""
from __future__ import annotations

import math

import numpy as np
import pytest
from support.data import DATA, needs_data

from benchsel.benchmarks.studies.bayes import METHODS, ewi_interval, ewi_rmse, headline_rows
from benchsel.formulations.bayes.model import BayesModel
from benchsel.formulations.bayes.peers import (
    AIPW_ALPHA,
    _Covering,
    aipw_evaluate,
    apw_variance,
    bayes_cvo_evaluate,
    bayes_rs_learn_evaluate,
    cvo_estimate,
    seq_apw_evaluate,
)
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.sequential import get_sequential, register_sequential, sequential_names
from benchsel.formulations.item_distances import selection_distances
from benchsel.instances.responses import load_responses
from benchsel.instances.splits import interpolation_split
from benchsel.solvers import InvalidInputError

NEW = ("seq-apw", "bayes-rs-learn", "aipw", "bayes-cvo")


def _population(seed: int = 0, Kr: int = 4, N: int = 300, binary: bool = False):
    """Reference models and a target that follow one latent item difficulty (continuous or 0/1)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=N)
    ab = rng.normal(size=Kr + 1)
    P = 1.0 / (1.0 + np.exp(-(ab[:, None] - 1.5 * d[None, :])))
    if binary:
        Y = (rng.uniform(size=P.shape) < P).astype(float)
    else:
        Y = np.clip(P + 0.1 * rng.normal(size=P.shape), 0.0, 1.0)
    return Y[:Kr], Y[Kr]


# ================================================================ registry
def test_registry_names_and_study_methods():
    names = sequential_names()
    for m in ("bayesame", "bayesame-rs", "rs-mean", "bayes-aipw", *NEW):
        assert m in names
        assert get_sequential(m).description
    assert tuple(names) == METHODS
    with pytest.raises(InvalidInputError,
                       match=r"name: unknown sequential evaluator 'nope'; sequential evaluators: bayesame, "):
        get_sequential("nope")
    with pytest.raises(InvalidInputError, match=r"name: 'aipw' is already registered"):
        register_sequential("aipw", aipw_evaluate, "again")
    with pytest.raises(InvalidInputError, match=r"run: expected a callable, got int"):
        register_sequential("fresh-name", 3, "not callable")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sequential_names())
def test_every_method_deterministic_by_seed(name):
    R, y = _population(1, N=60)
    a = get_sequential(name)(R, y, stop=False, max_items=40, seed=5)
    b = get_sequential(name)(R, y, stop=False, max_items=40, seed=5)
    assert a.n == b.n == 40
    np.testing.assert_array_equal(a.coreset, b.coreset)
    np.testing.assert_array_equal(a.trace["estimate"], b.trace["estimate"])
    np.testing.assert_array_equal(a.trace["width"], b.trace["width"])
    assert np.all(np.isfinite(a.trace["estimate"]))
    if name not in ("seq-apw", "bayesame"):  # covering / information gain (unique regime here) are deterministic
        c = get_sequential(name)(R, y, stop=False, max_items=40, seed=6)
        assert not np.array_equal(a.coreset, c.coreset)


# ================================================================= Seq-APW
def test_apw_variance_is_rs_mean_variance_for_equal_weights():
    s = np.array([0.0, 1.0, 1.0, 0.5, 0.25])
    N = 40
    assert apw_variance(np.ones(5), s, N) == pytest.approx(np.var(s, ddof=1) / 5 * (N - 5) / N, rel=1e-12)
    w = np.array([3.0, 1.0, 1.0, 2.0, 1.0])
    wn = w / w.sum()
    n_eff = 1.0 / np.sum(wn ** 2)
    direct = np.var(s, ddof=1) * np.sum(wn ** 2) * (N - n_eff) / N
    assert apw_variance(w, s, N) == pytest.approx(direct, rel=1e-12)
    assert apw_variance(np.ones(1), s[:1], N) == math.inf


def test_covering_lazy_greedy_matches_plain_greedy():
    R, _ = _population(2, Kr=6, N=50)
    D = selection_distances(R.T, np.arange(50), "correlation")
    cov = _Covering(D)
    near = np.full(50, 2.0)
    for _ in range(20):
        gains = np.maximum(near[None, :] - D, 0.0).sum(axis=1)
        gains[near == 0.0] = -1.0  # chosen anchors (their own distance is 0)
        c = cov.next()
        assert gains[c] == pytest.approx(gains.max(), rel=1e-12, abs=1e-12)
        cov.add(c)
        near = np.minimum(near, D[c])


def test_seq_apw_clusters_cover_every_item_with_anti_correlated_items():
    # binary references: item 1 is perfectly anti-correlated with item 0 (correlation distance 2), and
    # must still join the first anchor's cluster: the weights sum to 1 and the first estimate is its score
    R = np.array([[1, 0, 1, 0, 1, 1], [0, 1, 0, 1, 1, 0], [0, 1, 1, 0, 0, 1]], dtype=float)
    y = np.array([1, 0, 1, 0, 1, 1], dtype=float)
    res = seq_apw_evaluate(R, y, stop=False, seed=0)
    assert res.trace["estimate"][0] == pytest.approx(y[res.coreset[0]])
    ones = seq_apw_evaluate(R, np.ones(6), stop=False, seed=0)
    assert np.allclose(ones.trace["estimate"], 1.0)


def test_seq_apw_weights_estimate_and_variance():
    R, y = _population(3, Kr=6, N=80)
    res = seq_apw_evaluate(R, y, stop=False, seed=0)
    D = selection_distances(R.T, np.arange(80), "correlation")
    assert res.coreset[0] == int(np.argmax(np.sum(2.0 - D, axis=1)))  # the 1-medoid first
    for n in (3, 10, 40):
        C = res.coreset[:n]
        owner = np.argmin(D[:, C], axis=1)  # nearest anchor, ties to the earliest
        owner[C] = np.arange(n)
        w = np.bincount(owner, minlength=n) / 80
        assert res.trace["estimate"][n - 1] == pytest.approx(float(w @ y[C]), rel=1e-12)
        assert res.trace["var"][n - 1] == pytest.approx(apw_variance(w, y[C], 80), rel=1e-12)
    assert res.trace["estimate"][-1] == pytest.approx(y.mean(), rel=1e-12)  # every item its own anchor
    assert res.trace["var"][-1] == pytest.approx(0.0, abs=1e-15)


# ==================================================================== AIPW
def _ridge(X, y, lam):
    xm, ym = X.mean(axis=0), y.mean()
    Xc = X - xm
    coef = np.linalg.solve(Xc.T @ Xc + lam * np.eye(X.shape[1]), Xc.T @ (y - ym))
    return coef, ym - xm @ coef


def test_aipw_matches_direct_formula_and_its_variance():
    R, y = _population(4, N=90)
    res = aipw_evaluate(R, y, stop=False, seed=2)
    Phi = R.T
    for n in (5, 30, 89):
        C = res.coreset[:n]
        U = np.setdiff1d(np.arange(90), C)
        coef, b = _ridge(Phi[C], y[C], AIPW_ALPHA)
        mu = Phi @ coef + b
        est = y[C].mean() + (mu[U].mean() - mu[C].mean()) / (1 + n / (90 - n))
        assert res.trace["estimate"][n - 1] == pytest.approx(est, rel=1e-10)
        # the difference estimator's form and its design variance
        assert est == pytest.approx(mu.mean() + (y[C] - mu[C]).mean(), rel=1e-10)
        e = y[C] - mu[C]
        assert res.trace["var"][n - 1] == pytest.approx(np.var(e, ddof=1) / n * (90 - n) / 90, rel=1e-10)
    assert res.trace["estimate"][-1] == pytest.approx(y.mean(), rel=1e-12)
    assert res.trace["var"][-1] == 0.0


def test_aipw_matches_scikit_learn_ridge():
    sk = pytest.importorskip("sklearn.linear_model")
    R, y = _population(5, N=70)
    res = aipw_evaluate(R, y, stop=False, seed=1, max_items=25)
    C = res.coreset
    U = np.setdiff1d(np.arange(70), C)
    rg = sk.Ridge(alpha=10).fit(R.T[C], y[C])
    est = y[C].mean() + (rg.predict(R.T[U]).mean() - rg.predict(R.T[C]).mean()) / (1 + 25 / 45)
    assert res.estimate == pytest.approx(est, rel=1e-10)


def test_aipw_reduces_to_the_mean_with_a_constant_predictor():
    y = _population(6, N=50)[1]
    R = np.ones((3, 50))  # every item has the same reference vector: the fitted predictor is constant
    res = aipw_evaluate(R, y, stop=False, seed=3)
    np.testing.assert_allclose(res.trace["estimate"], np.cumsum(y[res.coreset]) / np.arange(1, 51), rtol=1e-12)


def test_aipw_unbiased_by_monte_carlo():
    R, y = _population(7, N=200)
    truth = y.mean()
    est = np.array([aipw_evaluate(R, y, stop=False, max_items=30, seed=r).estimate for r in range(300)])
    se = est.std(ddof=1) / math.sqrt(est.size)
    assert abs(est.mean() - truth) <= 4.0 * se


# ========================================================== Bayes-RS-Learn
def test_bayes_rs_learn_matches_scikit_learn():
    sk = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    R = rng.uniform(size=(30, 50))
    y = rng.uniform(size=50)
    res = bayes_rs_learn_evaluate(R, y, stop=False, seed=3)
    for n in (1, 2, 5, 29, 40):
        C = res.coreset[:n]
        br = sk.BayesianRidge().fit(R[:, C], R.mean(axis=1))
        mu, sd = br.predict(y[C][None, :], return_std=True)
        assert res.trace["estimate"][n - 1] == pytest.approx(mu[0], rel=1e-9)
        assert res.trace["var"][n - 1] == pytest.approx(sd[0] ** 2, rel=1e-6)


def test_bayes_rs_learn_by_direct_posterior():
    rng = np.random.default_rng(1)
    R = rng.uniform(size=(12, 30))
    y = rng.uniform(size=30)
    res = bayes_rs_learn_evaluate(R, y, stop=False, seed=0, max_items=20)
    for n in (4, 20):  # n = 20 > Kr = 12: directions of x outside the references' span carry 1/lam
        C = res.coreset[:n]
        X = R[:, C]
        Xc = X - X.mean(axis=0)
        t = R.mean(axis=1)
        alpha, lam = res.trace["alpha"][n - 1], res.trace["lam"][n - 1]
        S = np.linalg.inv(alpha * Xc.T @ Xc + lam * np.eye(n))
        coef = alpha * S @ Xc.T @ (t - t.mean())
        x = y[C] - X.mean(axis=0)
        assert res.trace["estimate"][n - 1] == pytest.approx(t.mean() + x @ coef, rel=1e-9)
        assert res.trace["var"][n - 1] == pytest.approx(x @ S @ x + 1.0 / alpha, rel=1e-8)


# ============================================== fixed-coreset estimators by name
@pytest.mark.parametrize("name, run", [("aipw", aipw_evaluate), ("bayes-rs-learn", bayes_rs_learn_evaluate)])
def test_estimators_by_name_agree_with_the_sequential_evaluators(name, run):
    R, y = _population(11, Kr=12, N=80)
    res = run(R, y, stop=False, seed=2, max_items=25)
    est = get_estimator(name).fit(R, res.coreset)
    assert est.predict(y[res.coreset])[0] == pytest.approx(res.estimate, rel=1e-9)
    lo, hi = est.predict_interval(y[res.coreset], alpha=0.05)
    assert (hi[0] - lo[0]) == pytest.approx(res.width, rel=1e-6)
    with pytest.raises(InvalidInputError, match=r"ridge_alpha"):
        get_estimator("aipw", ridge_alpha=-1.0)


# ================================================================ CVO (A.2)
def test_cvo_estimate_is_the_leave_one_out_average():
    rng = np.random.default_rng(0)
    R = rng.integers(0, 2, (5, 40)).astype(float)
    y = rng.integers(0, 2, 40).astype(float)
    m = BayesModel(R, sigma2=0.1)
    C = rng.choice(40, 12, replace=False)
    s = y[C]
    lab, sizes = m.buckets.labels, m.buckets.sizes
    direct = 0.0
    for k, i in enumerate(C):
        keep = np.delete(np.arange(12), k)
        mu = m.posterior(C[keep], s[keep], alpha=0.7, beta=2.0).mean
        direct += s[k] - mu[lab[i]] + (sizes @ mu) / 40
    assert cvo_estimate(m, C, s, alpha=0.7, beta=2.0) == pytest.approx(direct / 12, rel=1e-10)
    # one item: the prior's control variate
    T0 = (sizes @ m.prior_mean) / 40
    assert cvo_estimate(m, C[:1], s[:1], alpha=0.7, beta=2.0) == pytest.approx(
        s[0] - m.prior_mean[lab[C[0]]] + T0, rel=1e-12)


def test_cvo_unbiased_by_monte_carlo_with_replacement():
    R, y = _population(8, Kr=3, N=60, binary=True)
    m = BayesModel(R, sigma2=0.1)
    rng = np.random.default_rng(1)
    est = np.array([cvo_estimate(m, C, y[C], alpha=0.5, beta=1.0)
                    for C in (rng.integers(0, 60, 8) for _ in range(3000))])
    se = est.std(ddof=1) / math.sqrt(est.size)
    assert abs(est.mean() - y.mean()) <= 4.0 * se


def test_bayes_cvo_evaluate_uses_bayesame_rs_posterior():
    R, y = _population(9, Kr=3, N=70, binary=True)
    res = bayes_cvo_evaluate(R, y, stop=False, seed=4, max_items=40)
    rs = get_sequential("bayesame-rs")(R, y, stop=False, seed=4, max_items=40)
    np.testing.assert_array_equal(res.coreset, rs.coreset)
    np.testing.assert_array_equal(res.trace["width"], rs.trace["width"])
    m = BayesModel(R, sigma2=res.info["sigma2"])
    n = 40  # the estimate at step n under the hyper-parameters in force before step n's refit
    a, b = rs.trace["alpha"][n - 2], rs.trace["beta"][n - 2]
    assert res.trace["estimate"][n - 1] == pytest.approx(cvo_estimate(m, rs.coreset, rs.scores, alpha=a, beta=b),
                                                         rel=1e-8)


# ============================================================== bad input
def test_bad_input_named_errors():
    R, y = _population(10, N=30)
    with pytest.raises(InvalidInputError, match=r"reference_scores: expected"):
        seq_apw_evaluate(R[0], y)
    with pytest.raises(InvalidInputError, match=r"target: reference and target item counts differ"):
        aipw_evaluate(R, y[:-1])
    with pytest.raises(InvalidInputError, match=r"ridge_alpha: expected 0.0 < ridge_alpha, got 0"):
        aipw_evaluate(R, y, ridge_alpha=0.0)
    with pytest.raises(InvalidInputError, match=r"reference_scores: expected at least 2 reference models, got 1"):
        bayes_rs_learn_evaluate(R[:1], y)
    with pytest.raises(InvalidInputError, match=r"reference_scores: expected at least 2 items"):
        bayes_rs_learn_evaluate(R[:, :1], y[:1])
    with pytest.raises(InvalidInputError, match=r"max_items: expected"):
        seq_apw_evaluate(R, y, max_items=31)
    with pytest.raises(InvalidInputError, match=r"selection: not an option of bayes_cvo_evaluate"):
        bayes_cvo_evaluate(R, y, selection="active")
    m = BayesModel(R, sigma2=0.1)
    with pytest.raises(InvalidInputError, match=r"items: expected a non-empty array of item indices in \[0, 30\)"):
        cvo_estimate(m, [], [])
    with pytest.raises(InvalidInputError, match=r"items: expected .* got 1 items in 30..30"):
        cvo_estimate(m, [30], [1.0])
    with pytest.raises(InvalidInputError, match=r"scores: expected"):
        cvo_estimate(m, [1, 2], [1.0])
    with pytest.raises(InvalidInputError, match=r"alpha: expected 0.0 < alpha"):
        cvo_estimate(m, [1], [1.0], alpha=-1.0)


# ============================================================ study pieces
def test_ewi_interval_brackets_the_estimate_and_headline_rows():
    rng = np.random.default_rng(0)
    err = 0.05 * rng.normal(size=(40, 100)) / np.sqrt(np.arange(1, 101))
    lo, hi = ewi_interval(err)
    e = ewi_rmse(np.sqrt(np.mean(err ** 2, axis=0)))
    assert lo <= e <= hi
    md = {"ewi_rmse": 50.0, "ewi_ci": (45.0, 55.0), "gain@0.05": 1.0, "spearman@0.05": 0.9}
    summ = {"datasets": {"openllm_v2_ifeval": {"runs": 4, "methods": {
        "rs-mean": {**md, "ewi_rmse": 72.0, "ewi_ci": (70.0, 74.0)}, "bayesame": md, "aipw": md}}}}
    rows = {r["method"]: r for r in headline_rows({"interpolation": summ}, ("rs-mean", "bayesame", "aipw"))}
    assert rows["rs-mean"]["in_ci"] == "yes" and rows["bayesame"]["in_ci"] == "yes"  # 72.45 and 49.53
    assert rows["aipw"]["in_ci"] == "" and math.isnan(rows["aipw"]["paper"])
    assert rows["bayesame"]["ratio"] == pytest.approx(50.0 / 72.0)
    assert rows["bayesame"]["paper_ratio"] == pytest.approx(49.53 / 72.45)


# ================================================================ real data
@needs_data("responses", "benchmark_prediction", "glue_rte.npz")
def test_new_methods_on_a_real_matrix():
    assert DATA is not None
    Y = load_responses(DATA / "responses" / "benchmark_prediction" / "glue_rte.npz").matrix(0)
    split = interpolation_split(Y, seed=0)
    R, y = Y[split.references], Y[split.targets[0]]
    N = y.size
    for name in NEW:
        res = get_sequential(name)(R, y, stop=False, seed=1, max_items=60)
        assert res.n == 60 and np.all(np.isfinite(res.trace["estimate"]))
        assert abs(res.trace["estimate"][-1] - y.mean()) < 0.25
        assert np.all(res.trace["width"][5:] > 0)
    for name in ("seq-apw", "aipw"):  # both recover the truth once every item is evaluated
        res = get_sequential(name)(R, y, stop=False, seed=1)
        assert res.n == N and res.estimate == pytest.approx(y.mean(), abs=1e-12)
