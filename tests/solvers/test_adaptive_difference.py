"""The ``"difference"`` design of AdaptiveEvaluation: a seeded random order of the remainder, an unbiased
cross-fitted difference estimate with an honest design variance, a floor near the ends, bad input."""
from __future__ import annotations

import numpy as np
import pytest

import benchsel
from benchsel import InvalidInputError, compress
from benchsel.solvers.adaptive_difference import DifferenceDesign
from benchsel.solvers.adaptive_importance import MIN_DRAWS


def _models(n_models: int, n_items: int, seed: int) -> np.ndarray:
    """Binary 2PL scores, shape (n_models, n_items); rows sorted by ability."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(size=n_models))
    a, b = rng.uniform(0.5, 2.5, n_items), rng.normal(size=n_items)
    return (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)


@pytest.fixture(scope="module")
def setup() -> tuple[np.ndarray, object]:
    Y = _models(41, 300, seed=7)
    return Y, compress(Y[:-1], 10, seed=0)


def _run(c, y, **kw):
    ev = benchsel.AdaptiveEvaluation(c, design="difference", **kw)
    asked: list[int] = []
    while len(it := ev.next_items()):
        asked.extend(it.tolist())
        ev.observe(it, y[it])
    return ev, asked


def test_order_follows_seed_only_and_covers_the_remainder(setup):
    Y, c = setup
    _, a = _run(c, Y[-1], half_width=0.001, seed=3, batch=17)
    _, b = _run(c, Y[20], half_width=0.001, seed=3, batch=17)  # another model: a prefix of the same sequence
    _, d = _run(c, Y[-1], half_width=0.001, seed=4, batch=17)
    assert len(b) > c.k + MIN_DRAWS and a[: len(b)] == b and a != d
    assert a[: c.k] == c.items.tolist()
    assert sorted(a) == list(range(Y.shape[1])), "every item once"


def test_estimate_is_unbiased_and_its_variance_honest(setup):
    """At a fixed budget the estimate averages to the truth over seeds, and its interval's variance matches the
    estimates' spread (a difference estimate under simple random sampling)."""
    Y, c = setup
    y = Y[-1]
    est, sd = [], []
    for seed in range(60):
        ev, _ = _run(c, y, half_width=0.001, max_items=70, seed=seed, batch=20)
        assert ev.state == "budget"
        e, lo, hi = ev.estimate()
        est.append(e)
        sd.append((hi - lo) / 2 / 1.67)
    est_a = np.asarray(est)
    spread = float(est_a.std(ddof=1))
    assert abs(est_a.mean() - y.mean()) < 3 * spread / np.sqrt(est_a.size)
    assert 0.6 < float(np.mean(sd)) / spread < 1.7


def test_exact_when_every_item_is_seen_and_floor_at_the_ends(setup):
    Y, c = setup
    U = Y[:-1]
    design = DifferenceDesign(U, c.items, lambda: None, 0.1, seed=0)
    design.batch({}, U.shape[1])
    y = Y[-1]
    scores = {i: float(y[i]) for i in range(U.shape[1])}
    design.look(scores)
    est, lo, hi = design.interval(scores)
    assert est == pytest.approx(y.mean()) and lo == hi == est
    # a model right on every item: the interval is not zero-width before every item is seen
    ev, _ = _run(c, np.ones(Y.shape[1]), half_width=0.001, max_items=10 + MIN_DRAWS, seed=0)
    _, lo, hi = ev.estimate()
    assert ev.state == "budget" and hi - lo > 0.01 and lo < 1.0


def test_pilot_interval_until_two_items_after_it(setup):
    Y, c = setup
    ev = benchsel.AdaptiveEvaluation(c, design="difference", half_width=0.05, batch=1, seed=0)
    it = ev.next_items()
    ev.observe(it, Y[-1][it])
    e, lo, hi = ev.estimate()
    X = Y[-1][c.items][None, :]
    assert e == pytest.approx(float(np.ravel(c.predict(X))[0]))
    it = ev.next_items()
    assert it.size == 1 and it[0] not in c.items
    ev.observe(it, Y[-1][it])
    assert ev.estimate() == (e, lo, hi), "one item after the pilot: still the compression's interval"


def test_bad_input_is_named(setup):
    _, c = setup
    with pytest.raises(InvalidInputError, match="half_width"):
        benchsel.AdaptiveEvaluation(c, design="difference", half_width=0.0)
    ev = benchsel.AdaptiveEvaluation(c, design="difference", half_width=0.05, seed=0)
    it = ev.next_items()
    with pytest.raises(InvalidInputError, match="scores: expected finite scores"):
        ev.observe(it, np.full(it.size, 2.0))
    with pytest.raises(InvalidInputError, match="design"):
        benchsel.AdaptiveEvaluation(c, design="Difference")


def test_study_bounds_are_monotone_and_in_range(setup):
    """The study's design-based bounds: between the pilot and every item, fewer items for a wider half-width,
    the uniform one the closed form of a simple random sample at the residuals' variance."""
    from benchsel.benchmarks.studies.adaptive import bound_items

    Y, c = setup
    y = Y[-1]
    wide = bound_items(Y[:-1], y, c.items, 0.08, seed=0)
    narrow = bound_items(Y[:-1], y, c.items, 0.03, seed=0)
    for b in (*wide, *narrow):
        assert c.k < b <= Y.shape[1]
    assert wide[0] < narrow[0] and wide[1] < narrow[1]
    assert bound_items(Y[:-1], y, c.items, 0.03, seed=0) == narrow, "seeded"
