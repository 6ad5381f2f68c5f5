"""The suite fidelity benchmark on one small cell of real data: its rows, summary and table."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.suite_fidelity import METHODS, load_suite, render, run_cell, summarise
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
    text = render([s])
    assert "| glue | extrapolation | 30 |" in text and "by the route each task's estimate took" in text
