"""Suites (SPEC F10): the allocation against brute force, the suite estimator against its tasks, bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import (
    allocate,
    allocation_variance,
    check_tasks,
    get_estimator,
    suite_allocation,
    task_weights,
)


def _brute_force(N, s2, k, w, low):
    best, arg = np.inf, None
    for ks in itertools.product(*(range(lo, n + 1) for lo, n in zip(low, N))):
        if sum(ks) != k:
            continue
        v = allocation_variance(ks, N, s2, w)
        if v < best - 1e-15:
            best, arg = v, ks
    return best, arg


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(2, 9), st.floats(0.0, 2.0), st.floats(0.0, 1.0)), min_size=1, max_size=4),
       st.data())
def test_greedy_allocation_is_optimal_against_brute_force(tasks, data):
    N = [t[0] for t in tasks]
    s2 = [t[1] for t in tasks]
    w = [t[2] for t in tasks]
    lower = [data.draw(st.integers(0, n)) for n in N]
    low = [min(max(2, lo), n) for lo, n in zip(lower, N)]
    k = data.draw(st.integers(sum(low), sum(N)))
    kt = allocate(N, s2, k, weights=w, lower=lower)
    assert kt.sum() == k and np.all(kt >= low) and np.all(kt <= N)
    best, _ = _brute_force(N, s2, k, w, low)
    assert allocation_variance(kt, N, s2, w) <= best + 1e-12 * max(1.0, abs(best))


def test_allocation_at_every_scale_of_the_variances():
    N, k = [30, 50, 20], 25
    base = allocate(N, [0.1, 0.4, 0.2], k)
    for scale in (1e-9, 1e-3, 1.0, 1e3, 1e9):
        assert allocate(N, np.array([0.1, 0.4, 0.2]) * scale, k).tolist() == base.tolist()


def test_neyman_gives_more_items_to_the_more_variable_task():
    kt = allocate([100, 100], [0.01, 0.25], 40)
    assert kt[1] > kt[0] >= 2


def test_suite_allocation_keeps_a_proportional_floor():
    rng = np.random.default_rng(0)
    Y = np.hstack([np.full((10, 60), 0.5), rng.random((10, 40)) > 0.5]).astype(float)
    codes = np.repeat([0, 1], [60, 40])
    kt = suite_allocation(Y, codes, ["flat", "varied"], 20, np.array([0.5, 0.5]))
    assert kt.sum() == 20 and kt[0] >= np.floor(0.75 * 20 * 0.6)


def test_allocation_bad_input():
    with pytest.raises(InvalidInputError, match="k_min = 2"):
        allocate([1, 5], [0.1, 0.1], 4, names=["tiny", "big"])
    with pytest.raises(InvalidInputError, match="k: expected 4 <= k <= 10"):
        allocate([5, 5], [0.1, 0.1], 3)
    with pytest.raises(InvalidInputError, match="sigma2"):
        allocate([5, 5], [0.1, -1.0], 4)


def test_check_tasks_and_weights():
    names, codes = check_tasks(["b", "a", "b", 3], 4)
    assert names == ["b", "a", "3"] and codes.tolist() == [0, 1, 0, 2]
    with pytest.raises(InvalidInputError, match="tasks: expected one task name per item, 3 names"):
        check_tasks(["a", "b"], 3)
    with pytest.raises(InvalidInputError, match="tasks: expected task names"):
        check_tasks(["a", None], 2)
    sizes = np.array([10, 30])
    np.testing.assert_allclose(task_weights("macro", ["a", "b"], sizes), [0.5, 0.5])
    np.testing.assert_allclose(task_weights("micro", ["a", "b"], sizes), [0.25, 0.75])
    np.testing.assert_allclose(task_weights({"a": 1, "b": 3}, ["a", "b"], sizes), [0.25, 0.75])
    with pytest.raises(InvalidInputError, match=r"aggregate: expected a weight for each.*missing 'b'.*unknown 'c'"):
        task_weights({"a": 1, "c": 2}, ["a", "b"], sizes)
    with pytest.raises(InvalidInputError, match="aggregate"):
        task_weights("median", ["a", "b"], sizes)


@pytest.fixture(scope="module")
def suite_data():
    Y = irt_responses(60, 120, seed=3)
    tasks = ["a"] * 40 + ["b"] * 50 + ["c"] * 30
    rng = np.random.default_rng(0)
    sel = np.concatenate([rng.choice(np.arange(s, e), 6, replace=False) for s, e in ((0, 40), (40, 90), (90, 120))])
    return Y[:45], Y[45:], np.array(tasks), rng.permutation(sel)


def test_suite_is_the_weighted_sum_of_per_task_estimators(suite_data):
    src, tgt, tasks, sel = suite_data
    est = get_estimator("suite", tasks=tasks, aggregate="micro").fit(src, sel)
    assert est.tasks_ == ["a", "b", "c"]
    P = est.predict_tasks(tgt[:, sel])
    for j, t in enumerate("abc"):
        items = np.flatnonzero(tasks == t)
        cols = np.flatnonzero(tasks[sel] == t)
        inner = get_estimator("auto").fit(src[:, items], np.searchsorted(items, sel[cols]))
        np.testing.assert_allclose(P[:, j], inner.predict(tgt[:, sel[cols]]), atol=1e-12)
    np.testing.assert_allclose(est.predict(tgt[:, sel]), P @ np.array([40, 50, 30]) / 120, atol=1e-12)
    lo, hi = est.predict_tasks_interval(tgt[:, sel], alpha=0.1)
    assert lo.shape == hi.shape == P.shape and np.all(lo <= P + 1e-12) and np.all(P <= hi + 1e-12)
    s, slo, shi = est.predict_with_interval(tgt[:, sel], alpha=0.1)
    assert np.all(slo <= s) and np.all(s <= shi)


def test_suite_chance_levels_rescale_the_tasks(suite_data):
    src, tgt, tasks, sel = suite_data
    plain = get_estimator("suite", tasks=tasks).fit(src, sel).predict_tasks(tgt[:, sel])
    resc = get_estimator("suite", tasks=tasks, chance={"a": 0.25}).fit(src, sel).predict_tasks(tgt[:, sel])
    np.testing.assert_allclose(resc[:, 0], np.maximum(0, (plain[:, 0] - 0.25) / 0.75))
    np.testing.assert_allclose(resc[:, 1:], plain[:, 1:])
    with pytest.raises(InvalidInputError, match="chance: expected chance levels 0 <= b < 1"):
        get_estimator("suite", tasks=tasks, chance={"a": 1.0})
    with pytest.raises(InvalidInputError, match="chance: tasks 'z' are not in the suite"):
        get_estimator("suite", tasks=tasks, chance={"z": 0.1})


def test_suite_fully_selected_task_is_exact_and_bad_selections():
    Y = irt_responses(30, 40, seed=1)
    tasks = ["x"] * 4 + ["y"] * 36
    sel = np.array([0, 1, 2, 3, 10, 20, 30])
    est = get_estimator("suite", tasks=tasks).fit(Y, sel)
    P, lo, hi = est.predict_tasks_with_interval(Y[:, sel])
    np.testing.assert_allclose(P[:, 0], Y[:, :4].mean(axis=1))
    np.testing.assert_allclose(lo[:, 0], P[:, 0])
    np.testing.assert_allclose(hi[:, 0], P[:, 0])
    with pytest.raises(InvalidInputError, match=r"selection: every task needs a selected item.*'x'"):
        get_estimator("suite", tasks=tasks).fit(Y, [10, 20])
    with pytest.raises(InvalidInputError, match="tasks: expected one task name per item, 40 names"):
        get_estimator("suite", tasks=tasks[:-1]).fit(Y, sel)
    with pytest.raises(InvalidInputError, match="estimator: the estimator inside each task cannot be 'suite'"):
        get_estimator("suite", estimator="suite")


def test_borrowing_strength_is_design_unbiased_by_enumeration():
    # every 3-item sample of task "x" (12 items), task "y"'s sample fixed: the GREG estimates average to the truth
    Y = irt_responses(31, 30, seed=4)
    src, target = Y[:30], Y[30]
    tasks = ["x"] * 12 + ["y"] * 18
    other = [12, 15, 20, 25]
    ests = []
    for trio in itertools.combinations(range(12), 3):
        sel = np.array([*trio, *other])
        est = get_estimator("suite", tasks=tasks, borrow=True).fit(src, sel)
        z = target[other].mean(keepdims=True)
        ests.append(est.members_[0].estimate(target[list(trio)][None], z, None)[0][0])  # before clipping to [0, 1]
    assert np.mean(ests) == pytest.approx(target[:12].mean(), abs=1e-9)
    P, lo, hi = est.predict_tasks_with_interval(target[sel][None], alpha=0.1)
    assert np.all(lo <= P) and np.all(P <= hi) and np.all(np.isfinite(hi))


def test_sum_half_width_adds_variances_with_welch_satterthwaite_dof():
    from scipy.stats import norm
    from scipy.stats import t as student

    from benchsel.formulations.estimation.suite import sum_half_width

    se = np.array([[0.1, 0.2, 0.05]])
    w = np.array([0.5, 0.3, 0.2])
    V = float(np.sum(w**2 * se[0] ** 2))
    # known variances: the normal quantile
    h = sum_half_width(se, np.full((1, 3), np.inf), w, 0.1)
    assert h[0] == pytest.approx(norm.ppf(0.95) * np.sqrt(V))
    # one task: its own t quantile
    h1 = sum_half_width(se[:, :1], np.array([[4.0]]), np.array([1.0]), 0.1)
    assert h1[0] == pytest.approx(student.ppf(0.95, 4) * 0.1)
    # Welch-Satterthwaite: nu = V^2 / sum v^2 / dof, at least the smallest dof
    dof = np.array([[3.0, 5.0, np.inf]])
    v = w**2 * se[0] ** 2
    nu = V**2 / (v[0] ** 2 / 3 + v[1] ** 2 / 5)
    assert nu >= 3
    assert sum_half_width(se, dof, w, 0.1)[0] == pytest.approx(student.ppf(0.95, nu) * np.sqrt(V))
    # adding t-half-widths in quadrature is wider than the t-interval of the sum (the over-coverage fixed)
    q = student.ppf(0.95, dof[0])
    assert sum_half_width(se, dof, w, 0.1)[0] < np.sqrt(np.sum((w * q * se[0]) ** 2))
    # no spread at all: a zero half-width, not a NaN
    assert sum_half_width(np.zeros((1, 3)), dof, w, 0.1)[0] == 0.0


def test_suite_interval_of_design_based_tasks_adds_their_variances(suite_data):
    from benchsel.formulations.estimation.suite import sum_half_width

    src, tgt, tasks, sel = suite_data
    est = get_estimator("suite", tasks=tasks, estimator="model-assisted").fit(src, sel)
    X = tgt[:, sel]
    s, lo, hi = est._interval(X, 0.1)
    se = np.column_stack([m.estimate_se(X[:, c])[1] for m, c in zip(est.members_, est.columns_)])
    dof = np.column_stack([np.full(X.shape[0], float(m.estimate_se(X[:, c])[2]))
                           for m, c in zip(est.members_, est.columns_)])
    h = sum_half_width(se, dof, est.task_weights_, 0.1)
    np.testing.assert_allclose(s - lo, h, rtol=1e-12)
    np.testing.assert_allclose(hi - s, h, rtol=1e-12)
    # narrower than the squared task half-widths added (each task's own t quantile, few items each)
    from scipy.stats import t as student

    assert np.all(h < np.sqrt(np.square(student.ppf(0.95, dof) * se) @ est.task_weights_**2))


def test_suite_interval_joins_the_route_and_the_design_estimates(suite_data):
    src, tgt, tasks, sel = suite_data
    est = get_estimator("suite", tasks=tasks).fit(src, sel)
    X = tgt[:, sel]
    s, lo, hi = est.predict_with_interval(X, alpha=0.1)
    d = np.column_stack([m.model_assisted_._predict(X[:, c]) for m, c in zip(est.members_, est.columns_)])
    design = d @ est.task_weights_
    assert np.all(lo <= s + 1e-12) and np.all(s <= hi + 1e-12)
    assert np.all(lo <= design + 1e-12) and np.all(design <= hi + 1e-12)
    # a wider level gives a wider interval
    lo2, hi2 = est.predict_interval(X, alpha=0.02)
    assert np.all(lo2 <= lo + 1e-12) and np.all(hi <= hi2 + 1e-12)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_suite_interval_at_the_ends_of_the_range_is_never_zero_width(suite_data, value):
    src, _, tasks, sel = suite_data
    est = get_estimator("suite", tasks=tasks).fit(src, sel)
    X = np.full((1, sel.size), value)
    s, lo, hi = est.predict_with_interval(X, alpha=0.1)
    assert hi[0] - lo[0] > 0.01 and lo[0] <= s[0] <= hi[0]
    tl, th = est.predict_tasks_interval(X, alpha=0.1)
    assert np.all(th - tl > 0.01)


def test_suite_interval_bad_alpha_is_a_named_error(suite_data):
    src, tgt, tasks, sel = suite_data
    est = get_estimator("suite", tasks=tasks).fit(src, sel)
    with pytest.raises(InvalidInputError, match="alpha"):
        est.predict_interval(tgt[:, sel], alpha=1.5)


def test_suite_of_one_task_has_that_tasks_interval(suite_data):
    src, tgt, tasks, sel = suite_data
    X = tgt[:, sel]
    one = get_estimator("suite").fit(src, sel)
    s, lo, hi = one.predict_with_interval(X, alpha=0.1)
    e, tlo, thi = one.members_[0].predict_with_interval(X, alpha=0.1)
    np.testing.assert_allclose(s, e, atol=1e-12)
    np.testing.assert_allclose(lo, tlo, atol=1e-12)
    np.testing.assert_allclose(hi, thi, atol=1e-12)
    # all the weight on one task of three: that task's interval
    w = get_estimator("suite", tasks=tasks, aggregate={"a": 0, "b": 1, "c": 0}).fit(src, sel)
    s, lo, hi = w.predict_with_interval(X, alpha=0.1)
    P, plo, phi = w.predict_tasks_with_interval(X, alpha=0.1)
    np.testing.assert_allclose(s, P[:, 1], atol=1e-12)
    np.testing.assert_allclose(lo, plo[:, 1], atol=1e-12)
    np.testing.assert_allclose(hi, phi[:, 1], atol=1e-12)


def test_suite_interval_of_conformal_tasks_adds_their_squared_half_widths(suite_data):
    # an inner estimator without a design-based part: each task's conformal half-width over the normal
    # quantile is its standard error, and the suite's half-width is sqrt(sum_t w_t^2 h_t^2)
    src, tgt, tasks, sel = suite_data
    est = get_estimator("suite", tasks=tasks, estimator="ridge").fit(src, sel)
    X = tgt[:, sel]
    s, lo, hi = est._interval(X, 0.1)
    h = np.column_stack([m._interval(X[:, c], 0.1)[2] - m._interval(X[:, c], 0.1)[0]
                         for m, c in zip(est.members_, est.columns_)])
    np.testing.assert_allclose(hi - s, np.sqrt(np.square(h) @ est.task_weights_**2), rtol=1e-9)
    np.testing.assert_allclose(s - lo, hi - s, rtol=1e-9)  # symmetric conformal half-widths


def test_suite_interval_with_chance_levels_and_a_fully_selected_task():
    Y = irt_responses(50, 60, seed=5)
    tasks = ["x"] * 4 + ["y"] * 56
    sel = np.array([0, 1, 2, 3, 10, 20, 30, 40, 50])
    est = get_estimator("suite", tasks=tasks, chance={"y": 0.25}).fit(Y[:40], sel)
    X = Y[40:, sel]
    s, lo, hi = est.predict_with_interval(X, alpha=0.1)
    P, plo, phi = est.predict_tasks_with_interval(X, alpha=0.1)
    np.testing.assert_allclose(s, P @ est.task_weights_)
    assert np.all(plo <= P + 1e-12) and np.all(P <= phi + 1e-12)
    assert np.all(lo <= s + 1e-12) and np.all(s <= hi + 1e-12) and np.all(hi > lo)
    # task "x" is known exactly, so the suite's spread is task "y"'s (weight 1/2, slope 1 / 0.75)
    spreads = est._spreads(X, 0.1)
    np.testing.assert_allclose(spreads[1][:, 0], 0.0)
    assert np.all(np.isinf(spreads[3][:, 0]))
