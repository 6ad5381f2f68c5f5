"""compress with the seed problems as selections: ``holocosm`` (3-D scores), ``repcore`` (hidden states) and
``bayesame`` (the size by the stopping rule), each against the formulation or evaluator it wraps."""
from __future__ import annotations

import numpy as np
import pytest
from support.data import DATA, needs_data

from benchsel import compress, load_compressed
from benchsel.formulations.bayes.evaluate import bayesame_evaluate, stopping_point
from benchsel.formulations.bayes.model import BayesModel
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.holocosm import RankingRiskReconstruction
from benchsel.formulations.kmedoids import KMedoids
from benchsel.formulations.repcore import align_hidden_states
from benchsel.instances.hidden import make_hidden_states
from benchsel.instances.responses import load_responses
from benchsel.solvers import solve
from benchsel.solvers.selections import bayesame_draw, get_selection, selection_names


def _multi(M: int = 24, N: int = 120, K: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ab = rng.normal(size=M)
    d = rng.normal(size=(N, K))
    P = 1 / (1 + np.exp(-(ab[:, None, None] - d[None])))
    return (rng.random(P.shape) < P).astype(float)


def _continuous(M: int = 14, N: int = 200, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ab = rng.normal(size=M)
    d = rng.normal(size=N)
    return 1 / (1 + np.exp(-(ab[:, None] - d[None, :]) + 0.3 * rng.normal(size=(M, N))))


# ------------------------------------------------------------------ holocosm
def test_holocosm_selection_is_the_formulation_solved_by_swap():
    Y = _multi()
    src, tgt = Y[:16], Y[16:]
    c = compress(src, 12, selection="holocosm", seed=3)
    f = RankingRiskReconstruction(src, budget=12, seed=3)
    res = solve(f, "swap", seed=3, time_limit=60.0)
    assert c.items.tolist() == sorted(res.selection.tolist())
    assert f.check(c.items).feasible
    assert c.estimator.name == "source-assisted" and c.n_metrics == 3
    est = c.predict(c.subset(tgt))
    assert est.shape == (8, 3)
    np.testing.assert_allclose(est, f.estimate(c.items, tgt[:, c.items, :]), rtol=0, atol=1e-12)
    lo, hi = c.predict_interval(tgt[:, c.items, :], alpha=0.2)
    assert lo.shape == hi.shape == (8, 3) and np.all(lo <= est + 1e-12) and np.all(est <= hi + 1e-12)
    assert set(c.route(tgt[:, c.items, :])) == {"source-assisted"}


def test_holocosm_selection_saves_and_loads(tmp_path):
    Y = _multi(seed=1)
    c = compress(Y[:16], 10, selection="holocosm", seed=0)
    c.save(tmp_path / "c")
    back = load_compressed(tmp_path / "c")
    np.testing.assert_allclose(back.predict(Y[16:][:, c.items, :]), c.predict(Y[16:][:, c.items, :]))


def test_holocosm_bad_input_is_named():
    Y = _multi()
    with pytest.raises(InvalidInputError, match=r"Y: selection 'holocosm' takes multi-metric scores.*Y\[:, :, None\]"):
        compress(Y[:, :, 0], 10, selection="holocosm")
    with pytest.raises(InvalidInputError, match=r"Y: selection 'stratified' takes a \(models, items\) matrix.*"
                                                r"'holocosm'"):
        compress(Y, 10)
    with pytest.raises(InvalidInputError, match=r"estimator: 'auto' estimates one metric"):
        compress(Y, 10, selection="holocosm", estimator="auto")
    with pytest.raises(InvalidInputError, match=r"k: expected 1 <= k < 120"):
        compress(Y, 120, selection="holocosm")
    c = compress(Y[:16], 10, selection="holocosm", seed=0)
    with pytest.raises(InvalidInputError, match=r"Y: expected scores of shape \(models, 120, 3\)"):
        c.subset(Y[:, :, :2])
    with pytest.raises(InvalidInputError, match="quantile"):
        compress(Y, 10, selection="holocosm", selection_options={"quantile": 2.0})


@needs_data("responses", "wmt_mqm", "ted_ende_multimetric.npz")
def test_holocosm_selection_on_real_multimetric_data():
    R = load_responses(DATA / "responses" / "wmt_mqm" / "ted_ende_multimetric.npz")
    X = R.oriented()  # (14 systems, 529 segments, 7 metrics)
    order = np.argsort(X.mean(axis=(1, 2)))
    src, tgt = X[order[::2]], X[order[1::2]]
    B = round(0.2 * X.shape[1])
    c = compress(src, B, selection="holocosm", seed=0)
    f = RankingRiskReconstruction(src, budget=B, seed=0)
    assert c.k == B and f.check(c.items).feasible
    est = c.predict(c.subset(tgt))
    truth = tgt.mean(axis=1)
    assert est.shape == truth.shape == (7, 7)
    # within each metric the estimates keep the targets' differences on the subset (the correction is a shift)
    sub = tgt[:, c.items, :].mean(axis=1)
    np.testing.assert_allclose(est - sub, np.broadcast_to(est[0] - sub[0], est.shape), atol=1e-9)


# ------------------------------------------------------------------ repcore
def test_repcore_selection_is_the_aligned_embedding_solved_by_spherical_kmeans():
    hs = make_hidden_states(n_items=240, n_models=6, n_targets=3, widths=32, seed=1)
    src, tgt = hs.Y[:6], hs.Y[6:]
    c = compress(src, 15, selection="repcore", seed=2,
                 selection_options={"hidden_states": hs.hidden_states, "epochs": 20})
    E = align_hidden_states(hs.hidden_states, src, seed=2, epochs=20)
    res = solve(KMedoids.from_features(E, 15, metric="cosine"), "spherical-kmeans", seed=2)
    assert c.items.tolist() == sorted(res.selection.tolist())
    assert c.estimator.name == "repcore-ridge"
    ref = get_estimator("repcore-ridge").fit(src, c.items).predict(tgt[:, c.items])
    np.testing.assert_allclose(c.predict(tgt[:, c.items]), ref)
    # the HiddenStates object works as well, and the states are not written into a save
    c2 = compress(src, 15, selection="repcore", seed=2, selection_options={"hidden_states": hs, "epochs": 20})
    assert c2.items.tolist() == c.items.tolist()
    assert c.source.selection_options["hidden_states"] == "<list, not saved>"


def test_repcore_bad_input_is_named():
    hs = make_hidden_states(n_items=60, n_models=4, widths=8, seed=0)
    Y = hs.Y[:4]
    with pytest.raises(InvalidInputError, match=r"hidden_states: selection 'repcore' needs"):
        compress(Y, 5, selection="repcore")
    with pytest.raises(InvalidInputError, match=r"hidden_states: expected one array per source model.*4 arrays, got 3"):
        compress(Y, 5, selection="repcore", selection_options={"hidden_states": hs.hidden_states[:3]})
    bad = [h[:50] for h in hs.hidden_states]
    with pytest.raises(InvalidInputError, match=r"hidden_states: expected arrays of shape \(60, width\)"):
        compress(Y, 5, selection="repcore", selection_options={"hidden_states": bad})
    with pytest.raises(InvalidInputError, match=r"Y: selection 'repcore' learns from correctness"):
        compress(Y * 0.5 + 0.25, 5, selection="repcore", selection_options={"hidden_states": hs.hidden_states})
    with pytest.raises(InvalidInputError, match=r"'epoch' not understood.*itself takes hidden_states, dim, epochs"):
        compress(Y, 5, selection="repcore", selection_options={"hidden_states": hs.hidden_states, "epoch": 3})


def test_fidelity_defaults_leave_out_the_seed_problem_selections():
    assert "repcore" in selection_names() and "holocosm" in selection_names()
    alone = selection_names(fidelity=True)
    assert not {"repcore", "holocosm", "bayesame"} & set(alone) and "stratified" in alone
    assert get_selection("holocosm").ndim == 3


# ------------------------------------------------------------------ bayesame
def test_bayesame_size_is_the_largest_stopping_point_of_the_pseudo_targets():
    Y = _continuous()
    items, w, info = bayesame_draw(Y, 120, seed=0, eps2=0.05, pseudo_targets=3)
    assert w is None and info["regime"] == "unique" and len(info["pseudo_targets"]) == 3
    # the pseudo-targets span the ranking: weakest and strongest source included
    means = Y.mean(axis=1)
    assert {int(np.argmin(means)), int(np.argmax(means))} <= set(info["pseudo_targets"])
    rng = np.random.default_rng(0)
    expect = []
    for r in info["pseudo_targets"]:
        out = bayesame_evaluate(np.delete(Y, r, axis=0), Y[r], eps2=0.05, max_items=120,
                                seed=int(rng.integers(2**31)))
        tr = out.trace
        n = stopping_point(tr["estimate"], tr["width"], 0.005, 0.05, out.info["W"])
        expect.append(None if n is None else int(tr["n"][n - 1]))
    assert info["stopping_points"] == expect
    assert info["k"] == items.size == max(120 if n is None else n for n in expect)
    assert np.unique(items).size == items.size


def test_bayesame_selection_in_compress_reports_its_size():
    Y = _continuous(seed=1)
    c = compress(Y[:10], 100, selection="bayesame", seed=0, selection_options={"eps2": 0.05, "pseudo_targets": 2})
    extra = dict(c.selection.result.extra)
    assert c.k == extra["k"] <= extra["k_max"] == 100
    assert c.estimator.name == "bayesame"
    lo, hi = c.predict_interval(Y[10:][:, c.items], alpha=0.05)
    est = c.predict(Y[10:][:, c.items])
    assert np.all(lo <= hi) and est.shape == (4,)
    with pytest.raises(InvalidInputError, match=r"options: selection 'bayesame' takes the options eps1"):
        compress(Y[:10], 50, selection="bayesame", selection_options={"time": 3})
    with pytest.raises(InvalidInputError, match=r"at least 3 source models"):
        compress(Y[:2], 50, selection="bayesame")


def test_bayesame_estimator_is_the_evaluators_posterior_on_the_same_coreset():
    Y = _continuous(seed=2)
    ref, target = Y[:9], Y[9]
    out = bayesame_evaluate(ref, target, max_items=30, stop=False, seed=4)  # below F = 50: no refit
    est = get_estimator("bayesame").fit(ref, out.coreset)
    got = est.predict(target[out.coreset][None])[0]
    assert got == pytest.approx(out.estimate, rel=1e-10, abs=1e-12)
    lo, hi = est.predict_interval(target[out.coreset][None], alpha=0.05)
    assert (lo[0], hi[0]) == pytest.approx(out.interval, rel=1e-9, abs=1e-12)
    # with k >= F the target's hyper-parameters are fitted: the estimate is the model's at those values
    sel = np.arange(0, 200, 3)
    e2 = get_estimator("bayesame", F=50).fit(ref, sel)
    m = BayesModel(ref, sigma2=e2.sigma2_)
    a, b, _ = m.fit(sel, target[sel], extra_starts=[(1.0, 1.0), (1.0, 100.0), (1.0, 1e4), (0.01, 1.0),
                                                     (0.01, 100.0), (0.01, 1e4)])
    post = m.posterior(sel, target[sel], alpha=a, beta=b)
    want = m.estimate(post.mean, post.counts, float(target[sel].sum()), sel.size)
    assert e2.predict(target[sel][None])[0] == pytest.approx(want, rel=1e-12)


@needs_data("responses", "benchmark_prediction", "helm_lite_math.npz")
def test_bayesame_selection_on_real_data():
    Y = load_responses(DATA / "responses" / "benchmark_prediction" / "helm_lite_math.npz").matrix(0)
    src = Y[::3][:12]
    c = compress(src, 60, selection="bayesame", seed=0, selection_options={"pseudo_targets": 2})
    extra = dict(c.selection.result.extra)
    assert c.k == extra["k"] <= 60 and len(extra["stopping_points"]) == 2
    est = c.predict(Y[1::3][:, c.items])
    assert np.all(np.isfinite(est)) and np.all((est >= Y.min() - 1e-9) & (est <= Y.max() + 1e-9))
