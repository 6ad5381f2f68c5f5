"""HoloCosm's peers (Vote, mRMR + RidgeCV, tinyBenchmarks, the registry) on small synthetic instances and one small
real multi-metric matrix."""
from __future__ import annotations

import numpy as np
import pytest
from support.data import DATA, needs_data

from benchsel.formulations import RankingRiskReconstruction
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_rng
from benchsel.formulations.estimation.linear import ridge_loo
from benchsel.formulations.holocosm import fidelity
from benchsel.heuristics.holocosm import (
    FittedSelection,
    anchorpoints,
    get_baseline,
    holocosm_baselines,
    kmeans_baseline,
    mrmr_order,
    mrmr_ridge,
    run_baseline,
    tinybenchmarks,
    vote,
    vote_counts,
    weighted_kmeans,
)
from benchsel.heuristics.holocosm.mrmr import REDUNDANCY_FLOOR, _prepare, mi_binary, mi_ksg, mi_mixed
from benchsel.heuristics.holocosm.peers import binarize_mean_matched
from benchsel.instances.responses import load_responses, make_multimetric, paper_split


@pytest.fixture(scope="module")
def synth():
    R = make_multimetric(14, 60, 3, corr=0.5, n_negative=1, seed=7)
    X, Y = paper_split(R, 6).take(R.oriented())
    return RankingRiskReconstruction(X, retention=0.2, seed=0), Y


PER_METRIC = [("anchorpoints", 0), ("mrmr_ridge", 1), ("mrmr_ridge", "average"), ("tinybenchmarks", 2),
              ("tinybenchmarks", "average"), ("tinybenchmarks_gpirt", 0)]


@pytest.mark.parametrize("name", ["vote", "kmeans", "random", "random_sac"])
def test_whole_set_baselines_select_the_budget_deterministically(synth, name):
    f, Y = synth
    a, b = run_baseline(name, f, 3), run_baseline(name, f, 3)
    assert a.selection.size == f.budget and np.unique(a.selection).size == f.budget
    assert np.array_equal(a.selection, np.sort(a.selection))
    assert 0 <= a.selection.min() and a.selection.max() < f.n_items
    assert np.array_equal(a.selection, b.selection)
    est = a.estimate(f, Y[:, a.selection, :])
    assert est.shape == (Y.shape[0], f.n_metrics) and np.isfinite(est).all()


@pytest.mark.parametrize(("name", "metric"), PER_METRIC)
def test_per_metric_baselines_select_the_budget_deterministically(synth, name, metric):
    f, Y = synth
    a, b = run_baseline(name, f, 1, metric=metric), run_baseline(name, f, 1, metric=metric)
    assert a.selection.size == f.budget and np.unique(a.selection).size == f.budget
    assert np.array_equal(a.selection, b.selection)
    tag = "avg" if metric == "average" else f"m{metric}"
    assert a.method.removesuffix("_gpirt").endswith(tag)
    est = a.estimate(f, Y[:, a.selection, :])
    assert est.shape == (Y.shape[0], f.n_metrics) and np.isfinite(est).all()
    assert np.array_equal(est, b.estimate(f, Y[:, b.selection, :]))


def test_registry_names_and_errors(synth):
    f, _ = synth
    names = holocosm_baselines()
    for n in ("holocosm", "random", "random_sac", "anchorpoints", "kmeans", "vote", "mrmr_ridge", "tinybenchmarks",
              "swap_unconstrained"):
        assert n in names and get_baseline(n).name == n
    assert {n for n in names if get_baseline(n).per_metric} == {"anchorpoints", "mrmr_ridge", "tinybenchmarks",
                                                                 "tinybenchmarks_gpirt"}
    with pytest.raises(InvalidInputError,
                       match="name: unknown comparison method 'zipbench'; comparison methods: holocosm"):
        get_baseline("zipbench")
    with pytest.raises(InvalidInputError, match="metric"):
        run_baseline("vote", f, 0, metric=0)
    with pytest.raises(InvalidInputError, match="metric"):
        run_baseline("mrmr_ridge", f, 0, metric=5)
    with pytest.raises(InvalidInputError, match="metric"):
        run_baseline("tinybenchmarks", f, 0, metric="sum")


def test_kmeans_is_registered_as_the_papers_kmeans(synth):
    f, _ = synth
    assert get_baseline("kmeans").build is kmeans_baseline
    b = run_baseline("kmeans", f, 4)
    assert np.isclose(b.weights.sum(), 1.0)


# --------------------------------------------------------------------------- Vote
def test_vote_known_answers():
    # every metric agrees: the common selection
    same = [np.array([1, 4, 7]), np.array([1, 4, 7]), np.array([1, 4, 7])]
    assert vote_counts(same, 3, 10).tolist() == [1, 4, 7]
    # two votes beat one; the boundary is filled from the metric that has no kept item yet
    sels = [np.array([0, 1, 2]), np.array([0, 1, 3]), np.array([5, 6, 7])]
    for s in range(5):
        out = vote_counts(sels, 3, 10, seed=s)
        assert out.size == 3 and {0, 1} <= set(out.tolist())
        assert int(np.setdiff1d(out, [0, 1])[0]) in (5, 6, 7)  # metric 2 is the least covered


def test_vote_balances_coverage_at_the_boundary():
    # all items have one vote; B = 2 from three metrics: the two kept items come from two different metrics
    sels = [np.array([0, 1]), np.array([2, 3]), np.array([4, 5])]
    for s in range(6):
        out = vote_counts(sels, 2, 6, seed=s)
        assert len({int(i) // 2 for i in out}) == 2


def test_vote_bad_input():
    with pytest.raises(InvalidInputError, match="selections\\[1\\]"):
        vote_counts([np.array([0, 1]), np.array([0, 0])], 2, 5)
    with pytest.raises(InvalidInputError, match="selections"):
        vote_counts([], 2, 5)
    with pytest.raises(InvalidInputError, match="budget"):
        vote_counts([np.array([0, 1])], 9, 5)


def test_vote_on_identical_metrics_is_anchorpoints():
    R = make_multimetric(10, 40, 1, seed=3)
    X = np.repeat(R.oriented()[:6], 3, axis=2)  # three copies of one metric
    f = RankingRiskReconstruction(X, budget=6, seed=0)
    assert np.array_equal(vote(f, 0).selection, anchorpoints(f, 0, 0).selection)
    assert vote(f, 0).weights is None


# --------------------------------------------------------------------------- mutual information and mRMR
def test_mutual_information_matches_scikit_learn():
    skl = pytest.importorskip("sklearn.feature_selection")
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    for n in (6, 20, 50):
        x = rng.normal(size=n)
        Y = rng.normal(size=(5, n)) + 0.8 * x
        xs, Ys = x / x.std(), Y / Y.std(axis=1, keepdims=True)
        ref = skl.mutual_info_regression(Y.T, x, n_neighbors=3, random_state=0)
        assert np.allclose(mi_ksg(xs, Ys), ref, atol=1e-9)
        D = (rng.uniform(size=(5, n)) < 0.5).astype(float)
        d = (rng.uniform(size=n) < 0.5).astype(float)
        assert np.allclose(mi_binary(d, D), [metrics.mutual_info_score(d, row) for row in D], atol=1e-12)
        if n > 6:  # at n = 6 a neighbour at exactly the radius falls on either side of it in scikit-learn
            ref = skl.mutual_info_regression(D.T, x, discrete_features=True, n_neighbors=3, random_state=0)
            assert np.allclose(mi_mixed(xs, D), ref, atol=1e-9)


def test_mutual_information_known_values():
    x = np.array([0, 0, 1, 1, 0, 1], dtype=float)
    assert np.isclose(mi_binary(x, x[None])[0], np.log(2))  # a fair coin with itself: log 2 nats
    assert mi_binary(x, 1 - x[None])[0] == pytest.approx(np.log(2))
    with pytest.raises(InvalidInputError, match="Y: expected"):
        mi_ksg(np.arange(5.0), np.ones((2, 4)))
    with pytest.raises(InvalidInputError, match="n_neighbors"):
        mi_ksg(np.arange(5.0), np.ones((2, 5)), n_neighbors=5)


def test_mrmr_picks_the_most_relevant_item_first_and_avoids_redundant_copies():
    rng = np.random.default_rng(0)
    M = 30
    F = rng.normal(size=(M, 8))
    F[:, 0] = np.linspace(0, 1, M) * 10  # the item that dominates the mean: most relevant
    F[:, 1] = F[:, 0] * 1.0001 + 1e-6 * rng.normal(size=M)  # a near copy of it: redundant
    order = mrmr_order(F, 3, seed=0)
    assert order[0] in (0, 1)  # the two copies are equally relevant
    assert order[1] not in (0, 1)  # the second copy is redundant
    assert np.array_equal(order, mrmr_order(F, 3, seed=0))
    with pytest.raises(InvalidInputError, match="F: expected"):
        mrmr_order(F[None], 2)
    with pytest.raises(InvalidInputError, match="budget"):
        mrmr_order(F, 9)


def test_mrmr_on_binary_responses_uses_the_discrete_estimators():
    rng = np.random.default_rng(3)
    F = (rng.uniform(size=(12, 30)) < rng.uniform(0.2, 0.8, size=30)).astype(float)
    order = mrmr_order(F, 6, seed=1)
    assert order.size == 6 and np.unique(order).size == 6
    assert np.array_equal(order, mrmr_order(F, 6, seed=1))
    # the first item is the most relevant by Ross's estimator on the prepared (scaled, jittered) target
    target = _prepare(F.mean(axis=1), check_rng(1))
    rel = mi_mixed(target, F.T, 3)
    assert rel[order[0]] == rel.max()
    # later items by the quotient with plug-in redundancy between 0/1 items
    red = mi_binary(F[:, order[0]], F.T)
    q = rel / np.maximum(red, REDUNDANCY_FLOOR)
    q[order[0]] = -np.inf
    assert q[order[1]] == q.max()


def test_mrmr_ridge_is_ridgecv_per_metric(synth):
    f, Y = synth
    b = mrmr_ridge(f, 0, seed=0)
    assert isinstance(b, FittedSelection) and len(b.estimators) == f.n_metrics
    est = b.estimate(f, Y[:, b.selection, :])
    for k in range(f.n_metrics):
        coef, icpt, alpha, _ = ridge_loo(f.X[:, b.selection, k], f.X[:, :, k].mean(axis=1), (0.1, 1.0, 10.0))
        assert np.allclose(est[:, k], Y[:, b.selection, k] @ coef + icpt)
        assert alpha == b.extra["alpha"][k]
    with pytest.raises(InvalidInputError, match="Y: expected"):
        b.estimate(f, Y[:, b.selection, 0])


def test_mrmr_ridge_matches_scikit_learn_ridgecv(synth):
    lm = pytest.importorskip("sklearn.linear_model")
    f, Y = synth
    b = mrmr_ridge(f, 1, seed=2)
    est = b.estimate(f, Y[:, b.selection, :])
    for k in range(f.n_metrics):
        r = lm.RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(f.X[:, b.selection, k], f.X[:, :, k].mean(axis=1))
        assert np.allclose(est[:, k], r.predict(Y[:, b.selection, k]), atol=1e-8)


# --------------------------------------------------------------------------- tinyBenchmarks
def test_binarize_matches_the_mean():
    F = np.array([[0.0, 0.1, 0.2], [0.5, 0.9, 1.0]])
    Z = binarize_mean_matched(F)
    assert set(np.unique(Z)) <= {0.0, 1.0}
    z = (F - F.min()) / np.ptp(F)
    shares = [np.mean(z >= t) for t in np.unique(z)]
    assert abs(Z.mean() - z.mean()) == pytest.approx(min(abs(s - z.mean()) for s in shares))
    B = (F > 0.3).astype(float)
    assert np.array_equal(binarize_mean_matched(B), B)
    assert np.array_equal(binarize_mean_matched(np.full((2, 3), 4.0)), np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match="F: expected"):
        binarize_mean_matched(np.ones(3))


def test_weighted_kmeans_known_clusters_and_weights():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.01, size=(10, 2)), rng.normal(5, 0.01, size=(10, 2))])
    C, lab = weighted_kmeans(X, 2, seed=0)
    assert len(set(lab[:10].tolist())) == 1 and len(set(lab[10:].tolist())) == 1 and lab[0] != lab[10]
    # a heavy point pulls its cluster's centre
    w = np.ones(20)
    w[0] = 1000.0
    C, lab = weighted_kmeans(X, 2, w, seed=0)
    assert np.allclose(C[lab[0]], X[0], atol=1e-3)
    with pytest.raises(InvalidInputError, match="weights"):
        weighted_kmeans(X, 2, np.zeros(20))
    with pytest.raises(InvalidInputError, match="n_clusters"):
        weighted_kmeans(X, 21)


def test_tinybenchmarks_weights_and_gp_irt(synth):
    f, Y = synth
    b = tinybenchmarks(f, 0, seed=0)
    assert b.weights is not None and np.isclose(b.weights.sum(), 1.0) and (b.weights >= 0).all()
    g = tinybenchmarks(f, 0, seed=0, estimator="gp-irt")
    assert np.array_equal(g.selection, b.selection) and g.method == "tinybenchmarks_m0_gpirt"
    est = g.estimate(f, Y[:, g.selection, :])
    lo, hi = f.X.min(axis=(0, 1)), f.X.max(axis=(0, 1))
    assert ((est >= lo - 1e-9) & (est <= hi + 1e-9)).all()  # gp-IRT estimates stay in the sources' range
    with pytest.raises(InvalidInputError, match="estimator"):
        tinybenchmarks(f, 0, estimator="irt")


# --------------------------------------------------------------------------- real data
@needs_data("responses", "unieval_topical_chat", "topical_chat_multimetric.npz")
def test_new_baselines_on_a_real_multimetric_matrix():
    assert DATA is not None
    R = load_responses(DATA / "responses" / "unieval_topical_chat" / "topical_chat_multimetric.npz")
    X, Y = paper_split(R, 3).take(R.oriented())
    f = RankingRiskReconstruction(X, retention=0.2, seed=0)
    muY = Y.mean(axis=1)
    for name, kw in [("vote", {}), ("kmeans", {}), ("mrmr_ridge", {"metric": 0}), ("mrmr_ridge", {"metric": "average"}),
                     ("tinybenchmarks", {"metric": 5}), ("tinybenchmarks", {"metric": "average"})]:
        b = run_baseline(name, f, 0, **kw)
        assert b.selection.size == f.budget == 12 and np.unique(b.selection).size == 12
        fd = fidelity(b.estimate(f, Y[:, b.selection, :]), muY)
        assert np.isfinite(fd.nmae).all() and fd.nmae.shape == (6,)


def test_peers_are_solve_methods_the_harness_runs():
    from benchsel.benchmarks.suites import suite_instances
    from benchsel.benchmarks.tasks import default_methods
    from benchsel.formulations.holocosm import RankingRiskReconstruction
    from benchsel.heuristics.holocosm import PEER_METHODS, run_baseline
    from benchsel.instances.responses import make_multimetric
    from benchsel.solvers import solve

    X = make_multimetric(12, 50, 3, seed=1).oriented()
    f = RankingRiskReconstruction(X[:8], 10, seed=0)
    for name in PEER_METHODS:
        res = solve(f, f"peer-{name.replace('_', '-')}", seed=3)
        want = np.sort(run_baseline(name, f, seed=3).selection)
        assert res.selection.tolist() == want.tolist()
        assert res.objective == pytest.approx(f.evaluate(want)) and res.feasible == f.check(want).feasible
        assert res.extra["baseline"] == name and res.bound is None
    spec = next(s for s in suite_instances("quick", None) if s.name.startswith("holocosm-"))
    methods = spec.methods or default_methods(spec.make())
    assert {f"peer-{n.replace('_', '-')}" for n in PEER_METHODS} <= set(methods)


def test_harness_fidelity_scores_a_peer_with_its_own_estimator():
    from benchsel.benchmarks.suites import holocosm_fidelity
    from benchsel.formulations.holocosm import RankingRiskReconstruction, fidelity
    from benchsel.heuristics.holocosm import run_baseline
    from benchsel.instances.responses import make_multimetric
    from benchsel.solvers import solve

    X = make_multimetric(14, 60, 3, seed=2).oriented()
    f, tgt = RankingRiskReconstruction(X[:8], 12, seed=0), X[8:]
    res = solve(f, "peer-tinybenchmarks-gpirt", seed=1)
    out = holocosm_fidelity(f, res.selection, targets=tgt, method="peer-tinybenchmarks-gpirt", seed=1)
    b = run_baseline("tinybenchmarks_gpirt", f, seed=1)
    own = fidelity(b.estimate(f, tgt[:, b.selection, :]), tgt.mean(axis=1)).summary()
    assert out["own_mean_nmae"] == pytest.approx(own["mean_nmae"])
    assert out["mean_nmae"] == pytest.approx(fidelity(f.estimate(res.selection, tgt[:, res.selection, :]),
                                                      tgt.mean(axis=1)).summary()["mean_nmae"])
    assert "own_mean_nmae" not in holocosm_fidelity(f, res.selection, targets=tgt, method="swap", seed=1)
