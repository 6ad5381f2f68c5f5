"""The count-floor study: the least coverage of a count-monotone interval valid for every model."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.studies.count_floor import least_valid_coverage, poisson_binomial, run, stratum_means
from benchsel.formulations.core.errors import InvalidInputError

DATA = default_data_dir()


def test_poisson_binomial_with_equal_probabilities_is_the_binomial():
    np.testing.assert_allclose(poisson_binomial(np.full(7, 0.3)), binom.pmf(np.arange(8), 7, 0.3), atol=1e-14)
    assert poisson_binomial(np.array([])).tolist() == [1.0]


def test_five_items_near_the_ceiling_leave_no_interval_in_the_band():
    # counts 5, 4, 3 have 0.774, 0.204, 0.021: a run with >= 90 % holds {4, 5}, 0.977
    f = binom.pmf(np.arange(6), 5, 0.95)
    assert least_valid_coverage(f, 0.90) == pytest.approx(f[4] + f[5])
    assert least_valid_coverage(f, 0.90) > 0.95
    # at 0.9 the run {4, 5} holds 0.919, inside the band
    assert least_valid_coverage(binom.pmf(np.arange(6), 5, 0.9), 0.90) == pytest.approx(0.91854)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), st.floats(0.05, 1.0))
def test_least_valid_coverage_against_every_run(ws, level):
    w = np.asarray(ws) + 1e-3
    f = w / w.sum()
    runs = [f[a:b].sum() for a in range(f.size) for b in range(a + 1, f.size + 1)]
    best = min((r for r in runs if r >= level - 1e-12), default=1.0)
    assert least_valid_coverage(f, level) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("level", [0.0, -0.1, 1.5])
def test_level_outside_the_unit_interval_is_named(level):
    with pytest.raises(InvalidInputError, match="level"):
        least_valid_coverage(np.array([0.5, 0.5]), level)


def test_stratum_means_follow_the_sorted_score():
    Y = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    got = stratum_means(Y, np.array([3.0, 0.0, 2.0, 1.0]), 2)  # order: items 1, 3 | 2, 0
    np.testing.assert_allclose(got, [[0.5, 1.0], [0.0, 0.5]])
    with pytest.raises(InvalidInputError, match="k"):
        stratum_means(Y, np.zeros(4), 5)


@pytest.mark.skipif(DATA is None or not (DATA / "responses" / "benchmark_prediction").is_dir(),
                    reason="needs the shared data")
def test_a_real_suite_cell():
    assert DATA is not None
    out = run(DATA, "glue", "extrapolation", 30, 0)
    assert set(out) == {"mrpc", "rte", "sst2"}
    for r in out.values():
        assert r["items"] >= 2 and 0 <= r["cover"] <= 1
        assert r["floor"] is not None and 0.9 - 1e-9 <= r["floor"][0.90] <= 1 and r["floor"][0.85] <= r["floor"][0.90]
