"""The suite fidelity benchmark on one small cell of real data: its rows, summary and table."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.suite_fidelity import (
    BAND,
    METHODS,
    in_band,
    load_suite,
    render,
    run_cell,
    seed_interval,
    summarise,
    wilson_interval,
)
from benchsel.formulations.core.errors import InvalidInputError

DATA = default_data_dir()
needs_data = pytest.mark.skipif(DATA is None or not (DATA / "responses" / "benchmark_prediction").is_dir(),
                                reason="the shared data is not here")


@needs_data
def test_suites_load_joined_on_models():
    Y, tasks = load_suite(DATA, "openllm_v2")
    assert Y.shape[1] == tasks.size and list(dict.fromkeys(tasks.tolist())) == ["ifeval", "math", "musr"]
    assert 400 <= Y.shape[0] <= 448 and set(np.unique(Y)) <= {0.0, 1.0}
    with pytest.raises(InvalidInputError, match="suites: unknown suite 'mmlu'"):
        load_suite(DATA, "mmlu")


@needs_data
def test_one_cell_rows_and_summary():
    rows = []
    for seed in (0, 1):
        rows += run_cell({"data_dir": str(DATA), "suite": "glue", "regime": "extrapolation", "k": 30, "seed": seed})
    assert sorted({r["method"] for r in rows}) == sorted(METHODS)
    for r in rows:
        assert 0 <= r["mae"] < 0.3 and 0 <= r["cover"] <= 1
        if r["method"] != "pooled":
            assert list(r["task_mae"]) == ["mrpc", "rte", "sst2"]
        if r["method"] == "suite":  # every target of every task counted once, under the route it took
            routes = r["task_route_cover"]
            assert set(routes) <= {"stacked", "model-assisted", "exact"}
            assert sum(n for _, n in routes.values()) == 3 * r["targets"]
            assert all(0 <= hit <= n for hit, n in routes.values())
            hits = sum(hit for hit, _ in routes.values())
            assert hits == pytest.approx(sum(r["task_cover"].values()) * r["targets"])
    (s,) = summarise(rows)
    assert s["seeds"] == 2 and s["ratio"][0] > 0
    assert all(0 <= c <= 1 and n > 0 for c, n in s["task_route_cover"].values())
    runs = 2 * rows[0]["targets"]
    assert all(n == runs and 0 <= h <= n for h, n in s["task_hits"].values())
    for t, (h, n) in s["task_hits"].items():  # the pooled hits are the seeds' coverages
        by_seed = [r["task_cover"][t] for r in rows if r["method"] == "suite"]
        assert h / n == pytest.approx(np.mean(by_seed))
    strict = all(BAND[0] <= h / n <= BAND[1] for h, n in s["task_hits"].values())
    assert s["tasks_in_band"][0] == strict and (s["tasks_in_band"][1] or not strict)
    for t, iv in s["task_seed_intervals"].items():  # the seed interval holds the seeds' mean coverage
        assert iv[0] <= s["task_hits"][t][0] / runs + 1e-9 <= iv[1] + 2e-9
    assert s["tasks_in_band_seeds"] == all(iv[1] >= BAND[0] and iv[0] <= BAND[1]
                                           for iv in s["task_seed_intervals"].values())
    text = render([s])
    assert "| glue | extrapolation | 30 |" in text and "by the route each task's estimate took" in text
    assert f"every task's in {int(s['tasks_in_band_seeds'])} of 1." in text
    assert f"every task's in {int(strict)} of 1" in text


def test_wilson_interval_and_the_band_allowing_noise():
    low, high = wilson_interval(45, 50)  # 0.90 of 50: about 0.79-0.96
    assert low == pytest.approx(0.7864, abs=1e-3) and high == pytest.approx(0.9565, abs=1e-3)
    assert wilson_interval(50, 50)[1] == 1.0 and wilson_interval(0, 50)[0] == 0.0
    assert in_band(90, 100) == (True, True)
    assert in_band(48, 50) == (False, True)  # 0.96 of 50: out of the band, within noise
    assert in_band(125, 125) == (False, False)  # 1.000 of 125: beyond noise
    assert in_band(400, 500) == (False, False)  # 0.80 of 500: beyond noise
    assert in_band(41, 50) == (False, True)


def test_seed_interval_takes_the_seed_as_the_unit():
    # five seeds' coverages: mean 0.9, sd 0.1, t(4) 2.776 -> half 0.124
    low, high = seed_interval([0.8, 0.9, 1.0, 0.8, 1.0])
    assert low == pytest.approx(0.9 - 2.7764 * 0.1 / 5 ** 0.5, abs=1e-3) and high == 1.0
    assert seed_interval([1.0, 1.0, 1.0]) == (1.0, 1.0)  # no spread between seeds: beyond noise if out
    assert seed_interval([0.7]) == (0.7, 0.7)
    # pooled over 100 targets a seed, 0.80 is beyond Wilson noise; seeds that disagree keep it within noise
    assert in_band(400, 500)[1] is False
    assert seed_interval([0.5, 1.0, 0.9, 0.6, 1.0])[1] >= BAND[0]


@needs_data
def test_unbalanced_draw_and_design_coverage_rows():
    """``suite-unbalanced`` runs the default suite on one plain draw per task; every suite method keeps the
    coverage of each task's design-based interval alone, and the summary compares the two draws."""
    from benchsel.benchmarks.suite_fidelity import UNBALANCED

    rows = run_cell({"data_dir": str(DATA), "suite": "glue", "regime": "interpolation", "k": 30, "seed": 0,
                     "methods": [*METHODS, UNBALANCED]})
    by = {r["method"]: r for r in rows}
    for m in ("suite", UNBALANCED):
        cover = by[m]["task_design_cover"]
        assert set(cover) <= {"mrpc", "rte", "sst2"} and cover and all(0 <= c <= 1 for c in cover.values())
    assert by["suite"]["mae"] != by[UNBALANCED]["mae"]  # another sample
    (s,) = summarise(rows)
    lo, hi = s[f"{UNBALANCED}_design_covers"]
    assert 0 <= lo <= hi <= 1
    assert "one plain stratified draw per task" in render([s])
