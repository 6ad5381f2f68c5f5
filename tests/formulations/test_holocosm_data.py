"""HoloCosm baselines and the paper's protocol on the real multi-metric sets (../shared/data)."""
from __future__ import annotations

import numpy as np
import pytest
from support.data import needs_data

from benchsel.benchmarks._data import default_data_dir
from benchsel.formulations import KMedoids, RankingRiskReconstruction
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.holocosm import fidelity
from benchsel.heuristics.holocosm import (
    BaselineSelection,
    anchorpoints,
    average_metric,
    holocosm_selection,
    kmeans_baseline,
    random_baseline,
    swap_unconstrained,
)
from benchsel.instances.responses import load_responses, make_multimetric, paper_split
from benchsel.solvers import solve

DATA = default_data_dir()
RESP = None if DATA is None else DATA / "responses"


@pytest.fixture(scope="module")
def synth():
    R = make_multimetric(12, 200, 3, corr=0.4, n_negative=1, seed=4)
    split = paper_split(R)
    Xs, Yt = split.take(R.oriented())
    return RankingRiskReconstruction(Xs, retention=0.2, seed=1), Yt


def _check_baseline(b: BaselineSelection, f: RankingRiskReconstruction, Yt: np.ndarray) -> None:
    assert b.selection.dtype == np.int64 and b.selection.size == f.budget
    assert np.all(np.diff(b.selection) > 0) and b.selection.max() < f.n_items
    if b.weights is not None:
        assert b.weights.shape == (f.budget,) and b.weights.sum() == pytest.approx(1.0) and (b.weights >= 0).all()
    est = b.estimate(f, Yt[:, b.selection, :])
    assert est.shape == (Yt.shape[0], f.n_metrics) and np.isfinite(est).all()


def test_baselines_in_the_same_terms(synth):
    f, Yt = synth
    for b in (holocosm_selection(f, 0), random_baseline(f, 0), random_baseline(f, 0, correction=True),
              swap_unconstrained(f, 0), anchorpoints(f, "average", 0), anchorpoints(f, 2, 0), kmeans_baseline(f, 0)):
        _check_baseline(b, f, Yt)
    h = holocosm_selection(f, 3)
    assert np.array_equal(h.selection, solve(f, "swap", seed=3).selection) and h.correction
    r = random_baseline(f, 5)
    assert np.array_equal(r.selection, f.uniform_selection(np.random.default_rng(5))) and not r.correction
    assert np.array_equal(kmeans_baseline(f, 2).selection, kmeans_baseline(f, 2).selection)
    with pytest.raises(InvalidInputError, match="metric"):
        anchorpoints(f, 7)
    with pytest.raises(InvalidInputError, match="metric"):
        anchorpoints(f, "sum")


def test_anchorpoints_is_kmedoids_on_correlation(synth):
    f, Yt = synth
    b = anchorpoints(f, 1, seed=0)
    km = KMedoids.from_features(f.X[:, :, 1].T, f.budget, metric="correlation")
    assert b.extra["cost"] == pytest.approx(km.evaluate(b.selection))
    np.testing.assert_allclose(b.weights, km.cluster_weights(b.selection))
    # BUILD alone is no better than the FasterPAM result
    assert b.extra["cost"] <= solve(km, "build").objective + 1e-9
    # estimate = cluster-size weighted target responses on the medoids
    np.testing.assert_allclose(b.estimate(f, Yt[:, b.selection, :]),
                               np.einsum("gbk,b->gk", Yt[:, b.selection, :], b.weights))


def test_average_metric_uses_source_min_max():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 20, 2))
    X[:, :, 1] = 100 * X[:, :, 0] + 7  # same metric on another scale: identical after normalisation
    A = average_metric(X)
    mu = X[:, :, 0].mean(axis=1)
    np.testing.assert_allclose(A, (X[:, :, 0] - mu.min()) / np.ptp(mu))


def test_unconstrained_ablation_ignores_the_constraint(synth):
    f, _ = synth
    u = swap_unconstrained(f, 0)
    assert u.extra["R_mean"] == pytest.approx(f.evaluate(u.selection))
    assert u.extra["R_mean"] <= f.bank_R_mean.min() + 1e-12


@needs_data("responses", "wmt_mqm")
@pytest.mark.parametrize("name,n_sources", [("wmt_mqm/ted_ende_multimetric.npz", 6),
                                            ("wmt_mqm/ted_zhen_multimetric.npz", 6),
                                            ("unieval_topical_chat/topical_chat_multimetric.npz", 3)])
def test_real_multimetric_sets(name, n_sources):
    R = load_responses(RESP / name)
    assert R.Y.ndim == 3 and R.n_metrics in (6, 7)
    split = paper_split(R, n_sources)
    assert split.sources.size == n_sources and split.targets.size == R.n_models - n_sources
    Xs, Yt = split.take(R.oriented())
    f = RankingRiskReconstruction(Xs, retention=0.2, seed=0)
    assert f.n_pools == (n_sources if n_sources >= 4 else 1)
    res = solve(f, "swap", seed=0)
    assert res.feasible and res.selection.size == f.budget == max(1, round(0.2 * R.n_items))
    assert res.extra["R_rank"] <= res.extra["eps"] + 1e-9
    est = f.estimate(res.selection, Yt[:, res.selection, :])
    fd = fidelity(est, Yt.mean(axis=1), R.metrics)
    assert np.isfinite(fd.mean_nmae) and 0 <= fd.mean_nmae <= fd.worst_nmae
    # the raw (lower-is-better) units give the same fidelity
    f_raw = RankingRiskReconstruction(split.take(R.tensor())[0], retention=0.2, seed=0,
                                      lower_is_better=R.lower_is_better)
    assert f_raw.eps == pytest.approx(f.eps, rel=1e-12)
    raw_est = f_raw.estimate(res.selection, split.take(R.tensor())[1][:, res.selection, :])
    np.testing.assert_allclose(raw_est, est * np.where(R.lower_is_better, -1.0, 1.0), atol=1e-12)


@needs_data("responses", "wmt_mqm")
def test_ted_split_is_the_papers():
    R = load_responses(RESP / "wmt_mqm/ted_ende_multimetric.npz")
    split = paper_split(R)
    mu = R.oriented().mean(axis=1)
    norm = (mu - mu.min(0)) / np.ptp(mu, axis=0)
    order = np.argsort(norm.mean(axis=1), kind="stable")
    assert split.sources.tolist() == order[[0, 3, 5, 8, 10, 13]].tolist()
