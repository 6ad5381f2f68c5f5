"""Coverage per group of target-runs (SPEC F11) and the smallest-k comparison in the fidelity report."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.benchmarks.fidelity_groups import coverage_text, group_coverage, small_k_text, target_record


def _row(pipeline, protocol, truth, pred, lo, hi, route=None, dataset="d", k=10):
    return {"pipeline": pipeline, "protocol": protocol, "dataset": dataset, "k": k, "mae": 1.0,
            "targets": target_record(np.array(truth), np.array(pred), np.array(lo), np.array(hi),
                                     None if route is None else np.array(route), binary=True)}


def test_group_coverage_counts_each_target_in_its_groups():
    rows = [_row("stratified+auto", "interpolation", [0.01, 0.5, 0.97], [0.02, 0.5, 0.9], [0.0, 0.4, 0.85],
                 [0.05, 0.6, 0.95], route=["model-assisted", "stacked", "model-assisted"]),
            _row("random+mean", "interpolation", [0.01, 0.5], [0.0, 0.45], [0.0, 0.3], [0.0, 0.6]),
            {"pipeline": "x", "protocol": "p", "dataset": "d", "k": 10, "mae": None}]  # an error row: skipped
    g = {(e["pipeline"], e["group"]): e for e in group_coverage(rows)}
    assert g[("stratified+auto", "all")]["n"] == 3
    assert g[("stratified+auto", "all")]["coverage"] == pytest.approx(2 / 3)  # 0.97 is above 0.95
    assert g[("stratified+auto", "position: ends (within 5 pp)")]["n"] == 2
    assert g[("stratified+auto", "position: ends (within 5 pp)")]["coverage"] == pytest.approx(0.5)
    assert g[("stratified+auto", "route: model-assisted")]["coverage"] == pytest.approx(0.5)
    assert g[("stratified+auto", "route: stacked")]["width"] == pytest.approx(20.0)
    assert g[("stratified+auto", "dataset: d, route stacked")]["n"] == 1
    assert g[("random+mean", "all")]["mae"] == pytest.approx(100 * (0.01 + 0.05) / 2)
    assert ("random+mean", "route: stacked") not in g and ("random+mean", "dataset: d") not in g
    text = coverage_text(rows)
    assert "#### stratified+auto" in text and "| interpolation | route: model-assisted | 2 | 50.0 % |" in text


def test_large_groups_below_the_goal_are_marked():
    n = 120
    rows = [_row("stratified+auto", "paper-extrapolation", [0.5] * n, [0.5] * n, [0.6] * n, [0.7] * n,
                 route=["stacked"] * n)]
    text = coverage_text(rows)
    assert "| paper-extrapolation | all | 120 | 0.0 % (below 80 %) |" in text
    assert "the least covered group of at least 100 target-runs" in text
    assert coverage_text([]) == ""


def test_small_k_text_compares_the_default_with_the_peer_per_dataset():
    summary = [{"protocol": "interpolation", "dataset": d, "k": k, "pipeline": p, "mae": m}
               for d, vals in (("a", (5.0, 4.0)), ("b", (3.0, 3.5))) for k in (10, 25)
               for p, m in zip(("stratified+auto", "kmedoids+stacked"), vals)]
    text = small_k_text(summary)
    assert "| dataset (k = 10, interpolation) | stratified+auto | kmedoids+stacked |" in text
    assert "| mean | 4.00 | 3.75 |" in text and "in 1 of 2 matrices; mean MAE ratio 1.067" in text
    assert small_k_text([s for s in summary if s["pipeline"] != "kmedoids+stacked"]) == ""
