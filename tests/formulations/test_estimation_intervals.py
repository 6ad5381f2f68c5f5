"""Intervals that hold for every kind of model (SPEC F11, issue 41): at the ends of the score range, for models
the route sends to the wrong estimate, and never zero-width from sources that carry no information."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from benchsel.formulations.estimation import (
    balanced_stratified_sample,
    difficulty_features,
    difficulty_score,
    get_estimator,
)
from benchsel.formulations.estimation.base import (
    UninformativeSourcesWarning,
    bounded_variance,
    design_half_width,
    plus_four,
)


def _irt(theta: np.ndarray, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float)


@pytest.fixture(scope="module")
def bottom():
    """60 sources of every strength and 200 models right at the bottom (0.5-5 % of 1 000 items), with the
    default design's 100 items and weights."""
    rng = np.random.default_rng(3)
    b, a = rng.normal(size=1000), rng.lognormal(0.0, 0.4, size=1000)
    Ys = _irt(rng.uniform(-1.5, 2.0, size=60), a, b, rng)
    Yt = _irt(rng.uniform(-6.0, -4.0, size=200), a, b, rng)
    items, w, _ = balanced_stratified_sample(difficulty_score(difficulty_features(Ys)), 100, Ys, seed=0)
    return Ys, Yt, items, w


@pytest.mark.parametrize("name", ["model-assisted", "auto"])
def test_intervals_near_zero_keep_their_coverage(bottom, name):
    """A model right on 0 of the sampled items has residuals near 0: without the variance floor the 90 %
    interval covers about three quarters of such models (measured: 75.5 %), with it at least 85 %."""
    Ys, Yt, items, w = bottom
    truth = Yt.mean(axis=1)
    assert truth.max() < 0.06
    est = get_estimator(name, weights=w).fit(Ys, items)
    lo, hi = est.predict_interval(Yt[:, items], alpha=0.1)
    covered = np.mean((lo <= truth) & (truth <= hi))
    assert covered >= 0.85 and np.all(lo >= 0.0)
    ma = est if name == "model-assisted" else est.model_assisted_
    assert 0.0 < ma.floor_ratio_ < 1.5
    ma.floor_ratio_ = 0.0  # the interval as before the floor: it fails this group
    lo0, hi0 = est.predict_interval(Yt[:, items], alpha=0.1)
    assert np.mean((lo0 <= truth) & (truth <= hi0)) < 0.8
    assert np.all(hi - lo >= hi0 - lo0 - 1e-12)  # the floor only widens


def test_auto_joins_the_model_assisted_interval_inside_the_range(bottom):
    """Inside the range the interval holds the model-assisted interval as well as the stacked one."""
    Ys, _, items, w = bottom
    est = get_estimator("auto", weights=w).fit(Ys, items)
    mid = Ys[:, items][est.route(Ys[:, items]) == "stacked"]
    assert mid.shape[0] >= 30
    lo, hi = est.predict_interval(mid, alpha=0.1)
    _, ma_lo, ma_hi = est.model_assisted_.t_interval(*est.model_assisted_.estimate_se(mid), 0.1)
    assert np.all(lo <= np.clip(ma_lo, 0, 1) + 1e-12) and np.all(hi >= np.clip(ma_hi, 0, 1) - 1e-12)


def test_plus_four_and_the_bounded_variance():
    assert plus_four(np.array([0.0]), 10, 0.0, 1.0)[0] == pytest.approx(2 / 14)
    assert plus_four(np.array([1.0]), 96, 0.0, 1.0)[0] == pytest.approx(98 / 100)
    assert bounded_variance(np.array([0.25, -1.0]), 0.0, 1.0) == pytest.approx([0.1875, 0.0])
    assert bounded_variance(np.array([3.0]), 2.0, 6.0)[0] == pytest.approx(3.0)
    Yt = np.zeros((1, 20))
    h = design_half_width(Yt, 200, 0.1, (0.0, 1.0))[0]
    assert h > 0.02  # all zeros: still an interval
    assert design_half_width(Yt, 200, 0.1, None)[0] == 0.0


@pytest.mark.parametrize("sources", ["half", "identical-rows"])
@pytest.mark.parametrize("name", ["auto", "model-assisted", "ridge", "stacked", "mean", "cluster-weighted"])
def test_sources_without_information_warn_and_never_give_a_zero_width_interval(sources, name):
    """Every source scoring 0.5 on every item (or every source the same 0/1 row): a named warning, and
    intervals of positive width that cover new models of every strength."""
    rng = np.random.default_rng(0)
    if sources == "half":
        Ys = np.full((20, 400), 0.5)
    else:
        Ys = np.tile((rng.random(400) < 0.5).astype(float), (20, 1))
    ability = np.linspace(0.02, 0.98, 40)
    Yt = (rng.random((40, 400)) < ability[:, None]).astype(float)
    truth = Yt.mean(axis=1)
    sel = rng.choice(400, size=40, replace=False)
    with pytest.warns(UninformativeSourcesWarning, match=r"^Y_source: every one of the 20 source models scores "
                                                         r"alike on every item"):
        est = get_estimator(name).fit(Ys, sel)
    lo, hi = est.predict_interval(Yt[:, sel], alpha=0.1)
    assert np.all(hi - lo > 0.01)
    assert np.mean((lo <= truth) & (truth <= hi)) >= 0.8
    if name in ("auto", "model-assisted", "mean"):
        assert np.mean(np.abs(est.predict(Yt[:, sel]) - truth)) < 0.1  # design-based: close to each model


def test_informative_sources_do_not_warn(bottom):
    Ys, _, items, w = bottom
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeSourcesWarning)
        get_estimator("auto", weights=w).fit(Ys, items)
        get_estimator("mean").fit(None, items, n_items=Ys.shape[1])


def test_ambiguous_z_is_checked_and_zero_keeps_the_route_interval(bottom):
    from benchsel.formulations.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="ambiguous_z"):
        get_estimator("auto", ambiguous_z=-1.0)
    Ys, Yt, items, w = bottom
    wide = get_estimator("auto", weights=w, ambiguous_z=50.0).fit(Ys, items)
    none = get_estimator("auto", weights=w, ambiguous_z=0.0).fit(Ys, items)
    lo_w, hi_w = wide.predict_interval(Yt[:, items])
    lo_n, hi_n = none.predict_interval(Yt[:, items])
    assert np.all(lo_w <= lo_n + 1e-12) and np.all(hi_w >= hi_n - 1e-12)
