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
