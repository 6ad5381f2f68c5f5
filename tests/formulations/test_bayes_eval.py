"""BayesAME sequential evaluator (Algorithm 1), RS-Mean and Bayes-AIPW baselines, splits, real data,
and the benchmark script's pieces."""
from __future__ import annotations

import math

import numpy as np
import pytest
from support.data import DATA, needs_data

from benchsel.formulations.bayes import BayesModel, bucketize
from benchsel.formulations.bayes.evaluate import (
    BayesianRidge,
    bayes_aipw_evaluate,
    bayesame_evaluate,
    rs_mean_evaluate,
    stopping_point,
)
from benchsel.instances.responses import load_responses
from benchsel.instances.splits import extrapolation_split, interpolation_split
from benchsel.solvers import InvalidInputError

RESP = None if DATA is None else DATA / "responses"


def _synthetic(seed: int = 0, Kr: int = 8, N: int = 120, binary: bool = False):
    """References and a target that follows them (a latent item difficulty)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=N)
    ab = rng.normal(size=Kr + 1)
    P = 1.0 / (1.0 + np.exp(-(ab[:, None] - d[None, :])))
    Y = (rng.uniform(size=P.shape) < P).astype(float) if binary else P
    return Y[:-1], Y[-1]


# ============================================================ stopping rule
def test_stopping_point_rule():
    est = np.array([0.5, 0.4, 0.41, 0.405, 0.402, 0.403, 0.403])
    wid = np.array([1.0, 1.0, 1.0, 0.5, 0.05, 0.01, 0.01])
    assert stopping_point(est, wid, eps1=0.01, eps2=0.06, W=3) == 5
    assert stopping_point(est, wid, eps1=0.01, eps2=0.02, W=3) == 6
    assert stopping_point(est, wid, eps1=1e-4, eps2=0.02, W=3) is None
    assert stopping_point(est[:2], wid[:2], eps1=1.0, eps2=2.0, W=3) is None
    for bad, match in [(dict(eps1=0.0), r"eps1: expected 0.0 < eps1, got 0"),
                       (dict(eps2=-0.1), r"eps2: expected 0.0 < eps2, got -0.1"),
                       (dict(W=0), r"W: expected an integer >= 1, got 0")]:
        kw = dict(eps1=0.01, eps2=0.02, W=3) | bad
        with pytest.raises(InvalidInputError, match=match):
            stopping_point(est, wid, **kw)


# ================================================================= BayesAME
def test_bayesame_full_run_is_exact_and_stop_matches_trace():
    R, y = _synthetic(1)
    full = bayesame_evaluate(R, y, stop=False, seed=3)
    assert full.n == y.size and np.unique(full.coreset).size == y.size
    assert full.estimate == pytest.approx(y.mean(), abs=1e-9) and full.trace["var"][-1] == pytest.approx(0, abs=1e-15)
    assert full.info["regime"] == "unique" and full.info["sigma2"] == 1e-4 and full.info["active"]
    for key in ("n", "estimate", "mean_R", "var", "width", "alpha", "beta"):
        assert full.trace[key].shape == (y.size,)
    j = stopping_point(full.trace["estimate"], full.trace["width"], 0.005, 0.05, 30)
    assert j is not None
    st = bayesame_evaluate(R, y, eps2=0.05, seed=3)
    assert st.stopped and st.n == j
    np.testing.assert_array_equal(st.coreset, full.coreset[:j])
    lo, hi = st.interval
    assert hi - lo == pytest.approx(st.trace["width"][-1]) and lo < st.trace["mean_R"][-1] < hi
    assert np.all(st.scores == y[st.coreset])


def test_bayesame_active_beats_random_early_on_average():
    errs = {"auto": [], "random": []}
    for s in range(4):
        R, y = _synthetic(10 + s, Kr=10, N=150)
        for sel in errs:
            r = bayesame_evaluate(R, y, selection=sel, stop=False, max_items=30, seed=s)
            errs[sel].append((r.trace["estimate"][-1] - y.mean()) ** 2)
    assert np.mean(errs["auto"]) < np.mean(errs["random"])


def test_bayesame_non_unique_regime_is_random_selection():
    rng = np.random.default_rng(0)
    R = rng.integers(0, 2, (3, 80)).astype(float)  # 8 buckets << N - 10
    y = (rng.uniform(size=80) < 0.4).astype(float)
    a = bayesame_evaluate(R, y, selection="auto", stop=False, max_items=40, seed=5)
    b = bayesame_evaluate(R, y, selection="random", stop=False, max_items=40, seed=5)
    assert a.info["regime"] == "non-unique" and not a.info["active"] and a.info["sigma2"] == 0.1
    np.testing.assert_array_equal(a.coreset, b.coreset)
    np.testing.assert_allclose(a.trace["estimate"], b.trace["estimate"])
    # the control-variate estimator, w = 1/n
    m = BayesModel(R, sigma2=0.1)
    p = m.posterior(a.coreset[:1], a.scores[:1])
    assert a.trace["estimate"][0] == pytest.approx(a.scores[0] + (m.buckets.sizes / 80 - p.counts) @ p.mean)


def test_bayesame_batch_mode_and_callable_target_and_seed():
    R, y = _synthetic(2, N=90)
    calls = []

    def oracle(i):
        calls.append(i)
        return y[i]

    for method in ("smc", "greedy"):
        r = bayesame_evaluate(R, oracle, batch_size=3, batch_method=method, stop=False, max_items=20, seed=1,
                              batch_options={"n_particles": 6, "n_generations": 3} if method == "smc" else None)
        assert r.n == 20 and np.unique(r.coreset).size == 20 and r.info["W"] == 10
        np.testing.assert_array_equal(r.trace["n"], [3, 6, 9, 12, 15, 18, 20])
    assert sorted(calls[:20]) == sorted(r.coreset.tolist()) or len(calls) == 40
    a = bayesame_evaluate(R, y, stop=False, max_items=15, seed=9, kernel="matern32", selection="active")
    b = bayesame_evaluate(R, y, stop=False, max_items=15, seed=9, kernel="matern32", selection="active")
    np.testing.assert_array_equal(a.coreset, b.coreset)
    t = bayesame_evaluate(R, y, tol=0.05, stop=False, max_items=10, seed=0)
    assert t.info["n_buckets"] == bucketize(R, 0.05).n_buckets


def test_bayesame_refits_every_F_items():
    R, y = _synthetic(4, N=70)
    r = bayesame_evaluate(R, y, F=20, stop=False, max_items=45, seed=0)
    a = r.trace["alpha"]
    assert np.all(a[:19] == 1.0) and np.all(a[19:39] == a[19]) and np.all(a[39:] == a[39])
    assert a[19] != 1.0 and a[39] >= 1e-5 and np.all(r.trace["beta"] >= 1e-5)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(y=np.zeros(5)),
         r"target: reference and target item counts differ: reference_scores has N = 6 items, target has 5"),
        (dict(y=np.array([0, 1, np.nan, 0, 1, 0.0])), r"target: expected finite values"),
        (dict(R=np.array([[0, np.inf, 1, 0, 1, 0.0]])), r"reference_scores: expected finite values"),
        (dict(eps1=0.0), r"eps1: expected 0.0 < eps1, got 0"),
        (dict(eps2=-1.0), r"eps2: expected 0.0 < eps2, got -1"),
        (dict(W=0), r"W: expected an integer >= 1, got 0"),
        (dict(batch_size=7), r"batch_size: expected an integer with 1 <= batch_size <= N = 6, got 7"),
        (dict(max_items=0), r"max_items: expected an integer with 1 <= max_items <= N = 6, got 0"),
        (dict(selection="best"), r"selection: expected one of 'auto', 'active', 'random', got 'best'"),
        (dict(batch_method="lp"), r"batch_method: expected one of 'smc', 'greedy', 'exhaustive', got 'lp'"),
        (dict(F=0), r"F: expected an integer >= 1, got 0"),
    ],
)
def test_bayesame_bad_input(kwargs, match):
    R = kwargs.pop("R", np.array([[0, 1, 1, 0, 1, 0.0], [1, 1, 0, 0, 1, 0.0]]))
    y = kwargs.pop("y", np.array([0, 1, 1, 0, 1, 1.0]))
    with pytest.raises(InvalidInputError, match=match):
        bayesame_evaluate(R, y, **kwargs)


def test_callable_target_bad_score():
    R, _y = _synthetic(0, N=20)
    with pytest.raises(InvalidInputError, match="target: expected a finite score, got inf"):
        bayesame_evaluate(R, lambda i: math.inf, seed=0)


# ================================================================ baselines
def test_rs_mean():
    rng = np.random.default_rng(0)
    y = rng.uniform(size=50)
    r = rs_mean_evaluate(y, stop=False, seed=2)
    n = np.arange(1, 51)
    csum = np.cumsum(y[r.coreset])
    np.testing.assert_allclose(r.trace["estimate"], csum / n)
    s2 = np.var(y[r.coreset[:10]], ddof=1)
    assert r.trace["var"][9] == pytest.approx(s2 / 10 * 40 / 50)
    assert math.isinf(r.trace["var"][0]) and r.trace["var"][-1] == pytest.approx(0, abs=1e-15)
    st = rs_mean_evaluate(y, eps1=0.2, eps2=0.2, seed=2)
    assert st.stopped and st.n == stopping_point(r.trace["estimate"], r.trace["width"], 0.2, 0.2, 30)
    with pytest.raises(InvalidInputError, match="n_items: expected the number of items N when target is a callable"):
        rs_mean_evaluate(lambda i: 0.0)
    with pytest.raises(InvalidInputError, match=r"eps1: expected 0\.0 < eps1"):
        rs_mean_evaluate(y, eps1=0)


def test_bayesian_ridge_recovers_linear_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    w = np.array([1.0, -2.0, 0.5, 0.0])
    y = X @ w + 0.3 + 0.01 * rng.normal(size=400)
    br = BayesianRidge(4)
    for x, v in zip(X, y):
        br.add(x, v)
    br.fit()
    np.testing.assert_allclose(br.coef, w, atol=0.01)
    assert br.intercept == pytest.approx(0.3, abs=0.01)
    assert 1.0 / br.alpha == pytest.approx(1e-4, rel=0.3)


def test_bayes_aipw():
    R, y = _synthetic(3, N=100)
    r = bayes_aipw_evaluate(R, y, stop=False, seed=1)
    assert r.estimate == pytest.approx(y.mean()) and r.trace["var"][-1] == 0.0
    assert np.all(r.trace["var"][:-1] > 0)
    rs = rs_mean_evaluate(y, stop=False, seed=1)
    e_ai = np.abs(r.trace["estimate"][20:60] - y.mean()).mean()
    e_rs = np.abs(rs.trace["estimate"][20:60] - y.mean()).mean()
    assert e_ai < e_rs  # the references predict this target well
    with pytest.raises(InvalidInputError, match="target: reference and target item counts differ"):
        bayes_aipw_evaluate(R, y[:-1])


# =================================================================== splits
def test_interpolation_split():
    Y = np.random.default_rng(0).uniform(size=(40, 5))
    s = interpolation_split(Y, seed=1)
    assert s.targets.size == 10 and s.pool.size == 30 and s.references.size == 15
    assert np.intersect1d(s.targets, s.pool).size == 0 and np.all(np.isin(s.references, s.pool))
    t = interpolation_split(Y, seed=1)
    np.testing.assert_array_equal(s.references, t.references)
    assert s.kind == "interpolation" and s.dropped.size == 0


def test_extrapolation_split():
    Y = np.random.default_rng(0).uniform(size=(50, 7)) + np.linspace(0, 1, 50)[:, None]
    s = extrapolation_split(Y, seed=0)
    order = np.argsort(-Y.mean(axis=1))
    np.testing.assert_array_equal(s.targets, np.sort(order[:10]))
    np.testing.assert_array_equal(s.dropped, np.sort(order[10:20]))  # 20 % of 50 models
    assert s.pool.size == 30 and s.references.size == 15
    assert Y.mean(axis=1)[s.pool].max() <= Y.mean(axis=1)[s.dropped].min()
    with pytest.raises(InvalidInputError,
                       match="drop_fraction: 10 targets plus 2 dropped models leave no reference model"):
        extrapolation_split(np.zeros((12, 3)), seed=0)
    with pytest.raises(InvalidInputError, match=r"n_targets: expected an integer with 1 <= n_targets <= M - 1 = 4"):
        interpolation_split(np.zeros((5, 3)))
    with pytest.raises(InvalidInputError, match=r"ref_fraction: expected 0\.0 < ref_fraction <= 1\.0, got 0"):
        interpolation_split(np.zeros((20, 3)), ref_fraction=0.0)


# ================================================================ real data
@needs_data("responses")
def test_real_bucket_counts_match_the_data_readme():
    gqa = load_responses(RESP / "proeval" / "gqa.npz")
    assert bucketize(gqa.Y).n_buckets == 744  # "Only 744 distinct item columns"
    psn = load_responses(RESP / "psn_irt" / "opencompass_11bench.npz")
    assert bucketize(psn.Y).n_buckets == 2099  # "Only 2099 distinct item response vectors among 41871 items"


@needs_data("responses")
def test_real_binary_interpolation_run():
    Y = load_responses(RESP / "benchmark_prediction" / "helm_lite_math.npz").matrix(0)
    s = interpolation_split(Y, seed=0)
    R = Y[s.references]
    y = Y[s.targets[0]]
    r = bayesame_evaluate(R, y, stop=False, max_items=60, seed=0)
    rs = rs_mean_evaluate(y, stop=False, max_items=60, seed=0)
    assert r.n == 60 and np.isfinite(r.trace["estimate"]).all() and np.all(r.trace["var"] > 0)
    assert abs(r.estimate - y.mean()) < 0.2 and abs(rs.estimate - y.mean()) < 0.3
    assert r.info["n_buckets"] == bucketize(R).n_buckets


@needs_data("responses")
def test_real_continuous_extrapolation_with_tolerance():
    resp = load_responses(RESP / "wmt_mqm" / "newstest2021_zhen_mqm.npz")
    Y = resp.matrix(0)  # oriented higher-is-better (negated MQM penalty)
    s = extrapolation_split(Y, n_targets=5, seed=0)
    R = Y[s.references]
    y = Y[s.targets[0]]
    exact, tol = bucketize(R).n_buckets, bucketize(R, tol=1.0).n_buckets
    assert tol < exact
    r = bayesame_evaluate(R, y, tol=1.0, stop=False, max_items=40, seed=0)
    assert r.info["regime"] == "non-unique" and np.isfinite(r.estimate)


# ================================================================ benchmark
def test_benchmark_pieces(tmp_path):
    from benchsel.benchmarks.studies import bayes as bb

    assert bb.ewi_rmse(np.full(100, 0.02)) == pytest.approx(100 * 100 * 0.02 / 2, rel=0.02)
    ex = bb.exact_part(3, quiet=True)
    assert ex["instances"] == 3 and 0 <= ex["smc_worst_gap"] <= 1
    tm = bb.timing_part(ks=(2, 4), n_cand=30, reps=1, quiet=True)
    assert tm[0]["max_rel_diff"] < 1e-8 and "slope_woodbury" in tm[1]
    res = bb.main(["--quick", "--parts", "exact", "timing", "--instances", "2", "--ks", "2", "3", "4",
                   "--candidates", "40", "--out", str(tmp_path)])
    assert set(res) == {"exact", "timing"}
    lines = (tmp_path / "neighbour_timing.csv").read_text().splitlines()
    assert lines[0].endswith("slope_woodbury,slope_direct") and len(lines) == 1 + len(res["timing"])
    assert (tmp_path / "smc_vs_exact.csv").read_text().count("\n") == 3


@needs_data("responses")
def test_benchmark_rmse_part_writes_plot(tmp_path):
    from benchsel.benchmarks.studies import bayes as bb

    out = bb.rmse_part(["benchmark_prediction/glue_rte"], "interpolation", seeds=1, targets=1,
                       methods=("rs-mean", "bayesame-rs"), workers=1, out=tmp_path, quiet=True)
    ds = out["datasets"]["glue_rte"]
    assert set(ds["methods"]) == {"rs-mean", "bayesame-rs"}
    assert (tmp_path / "rmse_vs_coreset.png").stat().st_size > 1000
    assert (tmp_path / "stopping.csv").read_text().count("\n") == 1 + 2 * 3
    assert ds["methods"]["rs-mean"]["gain@0.1"] == 0.0  # the baseline against itself
    header = (tmp_path / "rmse_summary.csv").read_text().splitlines()[0]
    assert "gain@0.05" in header and "spearman@0.5" in header


def test_rmse_gain_and_spearman():
    """BayesAME's RMSE Gain, 20 log10(RMSE(RS-Mean) / RMSE(method)) dB (issue 34)."""
    from benchsel.benchmarks.studies import bayes as bb

    assert bb.rmse_gain(0.02, 0.01) == pytest.approx(20 * np.log10(2))
    assert bb.rmse_gain(0.01, 0.01) == 0.0 and np.isnan(bb.rmse_gain(0.0, 0.01))
    rng = np.random.default_rng(0)
    truth = rng.random(20)
    N = 40
    E = {"rs-mean": truth[:, None] + 0.02 * rng.standard_normal((20, N)),
         "better": truth[:, None] + 0.01 * rng.standard_normal((20, N))}
    out = bb.gains_and_spearman(E, truth, N)
    for f in bb.FRACS:
        j = max(round(f * N), 1) - 1
        r_b = np.sqrt(np.mean((E["rs-mean"][:, j] - truth) ** 2))
        r_m = np.sqrt(np.mean((E["better"][:, j] - truth) ** 2))
        assert out["better"][f"gain@{f:g}"] == pytest.approx(20 * np.log10(r_b / r_m))
        assert out["rs-mean"][f"gain@{f:g}"] == 0.0
        assert 0.9 < out["better"][f"spearman@{f:g}"] <= 1.0
    assert "gain@0.1" not in bb.gains_and_spearman({"better": E["better"]}, truth, N)["better"]
