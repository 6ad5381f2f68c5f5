"""Model-assisted estimation, the stratified design, the per-model default, intervals and scikit-learn
conventions (issue 30)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import (
    balanced_stratified_sample,
    conformal_quantile,
    difficulty_features,
    difficulty_score,
    difficulty_shares,
    estimator_names,
    get_estimator,
    stratified_sample,
)


@pytest.fixture(scope="module")
def ranked():
    """IRT responses, rows sorted by ability: the weakest half are sources, the strongest fifth targets."""
    Y = irt_responses(80, 300, seed=5)
    order = np.argsort(Y.mean(axis=1), kind="stable")
    return Y[order[:40]], Y[order[-16:]], Y[order[40:64]]


# ------------------------------------------------------------ scikit-learn conventions
@pytest.mark.parametrize("name", estimator_names())
def test_every_estimator_clones_and_sets_params(name):
    from sklearn.base import clone

    est = get_estimator(name)
    c = clone(est)
    assert type(c) is type(est) and c.get_params() == est.get_params()
    assert c.get_params(deep=True).keys() == c.get_params(deep=False).keys()
    assert not c.is_fitted


def test_set_params_checks_and_unfits():
    Y = irt_responses(20, 40, seed=0)
    est = get_estimator("ridge").fit(Y, [1, 2, 3])
    assert est.is_fitted
    assert est.set_params(target="unseen") is est and not est.is_fitted
    assert est.get_params()["target"] == "unseen"
    with pytest.raises(InvalidInputError, match=r"^params: 'nope' not understood by estimator 'ridge'"):
        est.set_params(nope=1)
    with pytest.raises(InvalidInputError, match="alphas: expected a non-empty 1-D sequence of positive penalties"):
        est.set_params(alphas=[-1.0])
    assert est.get_params()["alphas"] != [-1.0]  # a refused change leaves the parameters as they were


def test_parameters_are_checked_once_where_they_are_given(monkeypatch):
    """Construction and set_params check the parameters; fit, the folds and members of a composite estimator
    and the conformal refits trust them."""
    import benchsel.formulations.estimation.base as base

    checked: list[str] = []
    real = base.check_options

    def counting(raw, options, name):
        checked.append(name)
        return real(raw, options, name)

    monkeypatch.setattr(base, "check_options", counting)
    Y = irt_responses(20, 40, seed=0)
    est = get_estimator("auto")
    at_construction = sorted(checked)
    assert at_construction == sorted(["auto", "stacked", "ridge", "cluster-weighted", "model-assisted",
                                      "model-assisted"])
    est.fit(Y, [1, 2, 3, 7, 11]).predict_interval(Y[:4, [1, 2, 3, 7, 11]])
    get_estimator("stacked").fit(Y, [1, 2, 3]).predict_interval(Y[:4, [1, 2, 3]])
    assert sorted(checked) == sorted([*at_construction, "stacked", "ridge", "irt", "cluster-weighted"])
    est.set_params(top_share=0.5)
    assert checked.count("auto") == 2
    with pytest.raises(InvalidInputError, match="top_share"):
        est.set_params(top_share=0.0)


# ------------------------------------------------------------ intervals
@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, "0.1x", True, None, float("nan")])
def test_alpha_outside_the_unit_interval_is_refused_by_name(alpha):
    Y = irt_responses(20, 40, seed=0)
    est = get_estimator("mean").fit(Y, [1, 2, 3])
    with pytest.raises(InvalidInputError, match=r"^alpha: expected a miscoverage level 0 < alpha < 1"):
        est.predict_interval(Y[:2, [1, 2, 3]], alpha=alpha)


@pytest.mark.parametrize("name", ["auto", "model-assisted", "stacked", "ridge", "mean", "cluster-weighted",
                                  "repcore-ridge", "irt", "rs-mean", "bayes-aipw", "source-assisted"])
def test_intervals_hold_the_estimate_and_stay_in_the_score_range(name, ranked):
    src, tgt, _ = ranked
    sel = np.arange(0, 300, 12)
    est = get_estimator(name).fit(src, sel)
    p = est.predict(tgt[:, sel])
    lo, hi = est.predict_interval(tgt[:, sel], alpha=0.1)
    assert lo.shape == hi.shape == p.shape
    assert np.all(lo <= p + 1e-12) and np.all(p <= hi + 1e-12)
    assert np.all(lo >= 0.0) and np.all(hi <= 1.0)
    lo2, hi2 = est.predict_interval(tgt[:, sel], alpha=0.5)
    assert np.all(hi2 - lo2 <= hi - lo + 1e-12)  # a lower level never gives a wider interval


def test_conformal_quantile():
    r = np.arange(1.0, 10.0)  # 9 residuals
    assert conformal_quantile(r, 0.1) == 9.0  # ceil(10 * 0.9) = 9th smallest
    assert conformal_quantile(r, 0.5) == 5.0
    assert conformal_quantile(r[:3], 0.1) == np.inf  # too few to reach 90 %


def test_model_assisted_interval_covers_stronger_models(ranked):
    """The issue's case: targets stronger than every source. 90 % intervals over 40 draws of the design."""
    src, tgt, _ = ranked
    truth = tgt.mean(axis=1)
    hits = []
    for seed in range(40):
        sel, w = stratified_sample(difficulty_score(difficulty_features(src)), 30, seed)
        est = get_estimator("model-assisted", weights=w).fit(src, sel)
        lo, hi = est.predict_interval(tgt[:, sel])
        hits.append(np.mean((lo <= truth) & (truth <= hi)))
    assert 0.8 <= np.mean(hits) <= 0.99


# ------------------------------------------------------------ the design and the model-assisted estimate
def test_stratified_sample_draws_one_item_per_stratum():
    score = np.random.default_rng(0).random(103)
    for seed in range(5):
        items, w = stratified_sample(score, 10, seed)
        assert items.size == 10 and np.unique(items).size == 10
        assert w.sum() == pytest.approx(1.0) and np.all(w > 0)
        ranks = np.argsort(np.argsort(score))[items]
        edges = np.round(np.linspace(0, 103, 11)).astype(int)
        assert all(edges[h] <= ranks[h] < edges[h + 1] for h in range(10))
    assert np.array_equal(stratified_sample(score, 10, 3)[0], stratified_sample(score, 10, 3)[0])
    with pytest.raises(InvalidInputError, match=r"^k: expected 1 <= k <= 103"):
        stratified_sample(score, 104)


def test_stratified_weighted_mean_is_unbiased_for_any_model():
    """Expectation over the design, computed exactly: sum_h w_h * (mean of stratum h) = the full mean."""
    rng = np.random.default_rng(1)
    score = rng.random(57)
    y = (rng.random(57) < 0.9).astype(float)  # a model unlike the sorting key
    _, w = stratified_sample(score, 8, 0)
    order = np.argsort(score, kind="stable")
    edges = np.round(np.linspace(0, 57, 9)).astype(int)
    expect = sum(w[h] * y[order[edges[h]:edges[h + 1]]].mean() for h in range(8))
    assert expect == pytest.approx(y.mean())


def test_balanced_sample_is_a_stratified_sample_reproducing_the_sources():
    """One item per stratum, reproducible, and the returned imbalance is the chosen sample's own."""
    Y = irt_responses(30, 157, seed=2)
    score = np.random.default_rng(0).random(157)  # no ties: the strata are fixed
    ranks = np.argsort(np.argsort(score, kind="stable"), kind="stable")
    edges = np.round(np.linspace(0, 157, 13)).astype(int)
    for seed in range(3):
        items, w, imb = balanced_stratified_sample(score, 12, Y, draws=50, seed=seed)
        assert items.size == 12 and np.unique(items).size == 12 and w.sum() == pytest.approx(1.0)
        assert all(edges[h] <= ranks[items[h]] < edges[h + 1] for h in range(12))
        assert imb == pytest.approx(np.sqrt(np.mean((Y[:, items] @ w - Y.mean(axis=1)) ** 2)))
    a = balanced_stratified_sample(score, 12, Y, draws=50, seed=7)
    b = balanced_stratified_sample(score, 12, Y, draws=50, seed=7)
    assert np.array_equal(a[0], b[0]) and a[2] == b[2]


def test_balancing_reproduces_the_sources_better_than_a_plain_draw():
    Y = irt_responses(40, 300, seed=3)
    score = difficulty_score(difficulty_features(Y))
    plain = [balanced_stratified_sample(score, 15, Y, draws=1, seed=s)[2] for s in range(20)]
    bal = [balanced_stratified_sample(score, 15, Y, draws=200, seed=s)[2] for s in range(20)]
    assert max(bal) < np.median(plain) and np.median(bal) < 0.8 * np.median(plain)


def test_balanced_design_stays_close_to_unbiased_for_a_stronger_model(ranked):
    """Over 300 draws of the design the weighted sample mean of a target stronger than every source (and of
    one unrelated to the sources) averages to its full mean within Monte Carlo error."""
    src, tgt, _ = ranked
    score = difficulty_score(difficulty_features(src))
    other = (np.random.default_rng(4).random(src.shape[1]) < 0.7).astype(float)
    for y in (tgt[-1], other):
        est = np.array([y[i] @ w for i, w, _ in
                        (balanced_stratified_sample(score, 20, src, draws=50, seed=s) for s in range(300))])
        assert abs(est.mean() - y.mean()) < 3 * est.std() / np.sqrt(est.size) + 1e-3


def test_balanced_sample_bad_input_is_refused_by_name():
    Y = irt_responses(10, 40, seed=1)
    score = Y.mean(axis=0)
    with pytest.raises(InvalidInputError, match=r"^draws: "):
        balanced_stratified_sample(score, 5, Y, draws=0)
    with pytest.raises(InvalidInputError, match=r"^Y_balance: expected shape \(S, 40\).*got shape \(10, 39\)"):
        balanced_stratified_sample(score, 5, Y[:, :39])
    with pytest.raises(InvalidInputError, match=r"^k: expected 1 <= k <= 40"):
        balanced_stratified_sample(score, 41, Y)


def test_stratified_selection_takes_its_draws_option():
    from benchsel.solvers.compression import select_items

    Y = irt_responses(30, 200, seed=6)
    one = select_items(Y, 10, "stratified", seed=1, draws=1)
    many = select_items(Y, 10, "stratified", seed=1)
    assert one.result.extra["draws"] == 1 and many.result.extra["draws"] == 1000
    assert many.result.extra["imbalance"] <= one.result.extra["imbalance"]
    assert one.result.formulation == "sampling design" and many.weights.sum() == pytest.approx(1.0)
    with pytest.raises(InvalidInputError, match=r"selection 'stratified' takes the options draws; got draw$"):
        select_items(Y, 10, "stratified", draw=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=5, max_size=30), st.data())
def test_difficulty_shares_match_nearest_assignment(values, data):
    s = np.asarray(values, dtype=float)
    k = data.draw(st.integers(1, s.size))
    sel = np.asarray(data.draw(st.permutations(range(s.size)))[:k])
    w = difficulty_shares(s, sel)
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    # brute force: each item split equally among the selected items at the smallest distance
    expect = np.zeros(k)
    for i in range(s.size):
        d = np.abs(s[sel] - s[i])
        near = np.flatnonzero(d == d.min())
        vals = np.unique(s[sel][near])  # split between distinct values, then among the items sharing one
        for v in vals:
            group = near[s[sel][near] == v]
            expect[group] += 1.0 / vals.size / group.size
    assert np.allclose(w, expect / s.size)


def test_model_assisted_against_a_direct_computation(ranked):
    src, tgt, _ = ranked
    sel = np.array([5, 40, 77, 120, 160, 201, 250, 290])
    w = np.array([1, 2, 1, 1, 3, 1, 2, 1], dtype=float)
    est = get_estimator("model-assisted", weights=w, ridge=0.0, clip=False).fit(src, sel)
    w = w / w.sum()
    F = np.column_stack([np.ones(300), difficulty_features(src)])
    for t in range(3):
        y = tgt[t, sel]
        beta = np.linalg.lstsq(F[sel] * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
        m = F @ beta
        assert est.predict(tgt[t, sel])[0] == pytest.approx(np.clip(m.mean() + w @ (y - m[sel]), 0, 1), abs=1e-8)


def test_model_assisted_selection_order_is_the_column_order(ranked):
    src, tgt, _ = ranked
    sel = np.arange(3, 300, 20)
    w = np.linspace(1, 2, sel.size)
    perm = np.random.default_rng(2).permutation(sel.size)
    a = get_estimator("model-assisted", weights=w).fit(src, sel).predict(tgt[:, sel])
    b = get_estimator("model-assisted", weights=w[perm]).fit(src, sel[perm]).predict(tgt[:, sel[perm]])
    assert np.allclose(a, b)


def test_model_assisted_weights_of_the_wrong_length_are_refused(ranked):
    src, _, _ = ranked
    with pytest.raises(InvalidInputError, match=r"^weights: expected shape \(3,\), one weight per selected item"):
        get_estimator("model-assisted", weights=[1, 2]).fit(src, [1, 2, 3])
    with pytest.raises(InvalidInputError, match="weights: expected at least one positive weight"):
        get_estimator("model-assisted", weights=[0, 0, 0])


# ------------------------------------------------------------ the per-model default
def test_auto_routes_stronger_models_to_the_model_assisted_estimate(ranked):
    src, tgt, _mid = ranked
    sel, w = stratified_sample(difficulty_score(difficulty_features(src)), 40, 0)
    est = get_estimator("auto", weights=w).fit(src, sel)
    assert set(est.route(tgt[:, sel])) == {"model-assisted"}  # every target beyond the strongest source
    ma = get_estimator("model-assisted", weights=w).fit(src, sel)
    assert np.allclose(est.predict(tgt[:, sel]), ma.predict(tgt[:, sel]))
    inside = est.route(src[:, sel]) == "stacked"
    assert inside.mean() > 0.6  # most sources are inside their own range (the extremes fall out by noise)
    members = (("ridge", {}), ("cluster-weighted", {}), ("model-assisted", {"weights": w}))
    st_ = get_estimator("stacked", members=members).fit(src, sel)  # the stacked part: no IRT member
    assert np.allclose(est.predict(src[inside][:, sel]), st_.predict(src[inside][:, sel]))


def test_scores_on_another_scale_are_refused_by_name(ranked):
    src, tgt, _ = ranked
    sel = np.arange(10)
    est = get_estimator("auto").fit(src, sel)
    with pytest.raises(InvalidInputError, match=r"^Y_target: expected scores on the sources' scale \(sources 0 to 1, "
                                                r"so targets within 0 to 1\), got scores from 0 to 100"):
        est.predict(100 * tgt[:, sel])
    cont = get_estimator("ridge").fit(src * 0.5 + 0.25, sel)  # continuous scores in [0.25, 0.75]
    cont.predict(tgt[:, sel] * 5)  # up to 5: a much stronger model on a continuous metric, accepted
    with pytest.raises(InvalidInputError, match=r"^Y_target: expected scores on the sources' scale \(sources 0.25 to "
                                                r"0.75, so targets of magnitude at most 10 x 0.75\)"):
        cont.predict(tgt[:, sel] * 100)  # percent for fractions


def test_auto_with_too_few_sources_for_stacking_uses_the_model_assisted_estimate(ranked):
    src, tgt, _ = ranked
    sel = np.arange(0, 300, 10)
    for S in (2, 3):
        est = get_estimator("auto").fit(src[-S:], sel)
        assert est.stacked_ is None and set(est.route(tgt[:, sel])) == {"model-assisted"}
        ma = get_estimator("model-assisted").fit(src[-S:], sel)
        assert np.allclose(est.predict(tgt[:, sel]), ma.predict(tgt[:, sel]))
        assert np.allclose(est.predict_interval(tgt[:, sel])[0], ma.predict_interval(tgt[:, sel])[0])
    with pytest.raises(InvalidInputError, match="expected at least 2 source models"):
        get_estimator("auto").fit(src[:1], sel)


# ------------------------------------------------------------ given strata (the cluster-stratified design)
def test_balanced_sample_on_given_strata_draws_one_item_per_stratum():
    from benchsel.formulations.estimation.design import draw_balanced_sample

    Y = irt_responses(20, 90, seed=3)
    strata = np.random.default_rng(1).integers(0, 7, size=90)
    items, w, imb = balanced_stratified_sample(None, 7, Y, draws=40, seed=2, strata=strata)
    assert np.array_equal(strata[items], np.arange(7))  # one item per stratum, in stratum order
    assert np.allclose(w, np.bincount(strata) / 90) and w.sum() == pytest.approx(1.0)
    assert imb == pytest.approx(np.sqrt(((Y[:, items] @ w - Y.mean(axis=1)) ** 2).mean()))
    again = draw_balanced_sample(np.zeros(90), 7, Y, 40, 2, strata=strata.astype(np.int64))
    assert np.array_equal(again[0], items)


def test_given_strata_bad_input_is_refused_by_name():
    Y = irt_responses(10, 40, seed=1)
    ok = np.arange(40) % 5
    with pytest.raises(InvalidInputError, match=r"^strata: expected integer stratum labels"):
        balanced_stratified_sample(None, 5, Y, strata=ok + 0.5)
    with pytest.raises(InvalidInputError, match=r"^strata: expected labels 0 \.\. \(number of strata - 1\)"):
        balanced_stratified_sample(None, 5, Y, strata=np.where(ok == 2, 7, ok))
    with pytest.raises(InvalidInputError, match=r"^strata: expected k = 4 strata"):
        balanced_stratified_sample(None, 4, Y, strata=ok)
    with pytest.raises(InvalidInputError, match=r"^Y_balance: expected shape \(S, 39\)"):
        balanced_stratified_sample(None, 5, Y, strata=ok[:39])


def test_proportional_strata_nest_in_groups_and_cut_by_score():
    from benchsel.formulations.estimation.design import proportional_strata

    rng = np.random.default_rng(0)
    groups = rng.permutation(np.repeat(np.arange(4), [50, 30, 5, 15]))
    score = rng.random(100)
    s = proportional_strata(groups, score, 10)
    assert np.array_equal(np.unique(s), np.arange(10))
    per_group = [np.unique(s[groups == g]) for g in range(4)]
    assert [p.size for p in per_group] == [5, 3, 1, 1]  # largest remainders of 10 x shares, at least one
    assert all(np.unique(groups[s == h]).size == 1 for h in range(10))  # nested in the groups
    for p in per_group:  # equal-count cuts of the group's items sorted by score
        sizes = [int((s == h).sum()) for h in p]
        assert max(sizes) - min(sizes) <= 1
        assert all(score[s == a].max() < score[s == b].min() for a, b in itertools.pairwise(p))
    one = proportional_strata(np.zeros(100, dtype=np.int64), score, 7)
    edges = np.round(np.linspace(0, 100, 8)).astype(int)
    assert np.array_equal(one[np.argsort(score)], np.repeat(np.arange(7), np.diff(edges)))


def test_item_components_are_the_leading_directions_of_the_sources_item_scores():
    from benchsel.formulations.estimation.design import item_components

    rng = np.random.default_rng(0)
    load = rng.normal(size=200)  # one planted direction: each item's loading
    Y = np.outer(rng.normal(size=30), load) + 0.1 * rng.normal(size=(30, 200))
    G = item_components(Y, 3)
    assert G.shape == (200, 3)
    assert abs(np.corrcoef(G[:, 0], load)[0, 1]) > 0.99
    C = G.T @ G
    assert np.allclose(C - np.diag(np.diag(C)), 0.0, atol=1e-8 * C.max())  # orthogonal columns
    assert np.all(np.diff(np.diag(C)) <= 1e-9)  # in decreasing order of variance
    assert item_components(Y[:4], 10).shape == (200, 4)  # 4 sources: 4 directions at most
    few = item_components(Y[:, :3], 5)  # 3 items centred over the items: 2 directions, from the items' Gram
    assert few.shape == (3, 2) and abs(few[:, 0] @ few[:, 1]) < 1e-8
    assert item_components(np.ones((5, 50)), 3).shape == (50, 0)
    assert item_components(Y, 0).shape == (200, 0)


def test_model_assisted_with_item_components_against_a_direct_computation(ranked):
    from benchsel.formulations.estimation.design import default_components, item_components

    src, tgt, _ = ranked
    sel = np.arange(2, 300, 5)  # 60 items: 3 components by default
    assert default_components(sel.size) == 3 and default_components(19) == 0 and default_components(500) == 5
    est = get_estimator("model-assisted", ridge=0.0, clip=False).fit(src, sel)
    assert est.components_ == 3 and est.F_.shape == (300, 6)
    w = est.weights_
    F = np.column_stack([np.ones(300), difficulty_features(src), item_components(src, 3)])
    for t in range(3):
        y = tgt[t, sel]
        beta = np.linalg.lstsq(F[sel] * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
        m = F @ beta
        assert est.predict(tgt[t, sel])[0] == pytest.approx(np.clip(m.mean() + w @ (y - m[sel]), 0, 1), abs=1e-6)
    none = get_estimator("model-assisted", components=0).fit(src, sel)
    assert none.components_ == 0 and none.F_.shape == (300, 3)
    assert get_estimator("auto", components=0).fit(src, sel).model_assisted_.components_ == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_components_out_of_range_are_refused_by_name(bad):
    with pytest.raises(InvalidInputError, match="components"):
        get_estimator("model-assisted", components=bad)
    with pytest.raises(InvalidInputError, match="components"):
        get_estimator("auto", components=bad)


def test_item_components_of_large_matrices_are_sketched_and_span_the_same_directions(monkeypatch):
    """Above ``EXACT_COMPONENTS_WORK`` the components come from a seeded randomized range finder; on scores
    with a few strong directions it spans the exact components, and it is the same on every call."""
    from benchsel.formulations.estimation import design

    rng = np.random.default_rng(3)  # three-dimensional abilities: three strong directions
    theta, a = rng.normal(size=(300, 3)), 2.0 * rng.normal(size=(3, 1500))
    Y = (rng.random((300, 1500)) < 1 / (1 + np.exp(-(theta @ a)))).astype(float)
    exact = design.item_components(Y, 3)
    monkeypatch.setattr(design, "EXACT_COMPONENTS_WORK", 0)
    sketch = design.item_components(Y, 3)
    assert sketch.shape == exact.shape == (1500, 3)
    Qe, _ = np.linalg.qr(exact)
    Qs, _ = np.linalg.qr(sketch)
    assert np.linalg.svd(Qe.T @ Qs, compute_uv=False).min() > 0.99
    assert np.array_equal(sketch, design.item_components(Y, 3))
