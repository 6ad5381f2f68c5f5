"""The lm-eval reader records the groups of its results files (``df.attrs["groups"]``) and what lm-eval reported
for them (``df.attrs["group_report"]``), every field checked."""
from __future__ import annotations

import json

import pytest
from support.evallog_formats import model_scores, write_lm_eval_run

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.instances.evallogs import read_lm_eval_samples

SIZES = {"mm_h1": 6, "mm_h2": 14, "mm_s1": 4, "mm_s2": 8, "mm_s3": 16}
GROUPS = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2"], "mm_stem": ["mm_s1", "mm_s2", "mm_s3"]}


def write_mmlu_like(out, n_models=6, seed=0, *, extra=None, weight_by_size=True, group_results=None, groups=GROUPS):
    """An mmlu-like run per model (nested groups, unequal sizes), plus ``extra`` tasks in no group."""
    scores = model_scores(n_models, {**SIZES, **(extra or {})}, seed=seed)
    for m, tasks in scores.items():
        write_lm_eval_run(out, m, tasks, groups=groups(m) if callable(groups) else groups,
                          weight_by_size=weight_by_size, group_results=group_results)
    return scores


def test_nested_groups_and_reported_scores_are_recorded(tmp_path):
    write_mmlu_like(tmp_path, extra={"arc": 5})
    df = read_lm_eval_samples(tmp_path, "acc")
    assert df.attrs["groups"] == GROUPS
    rep = df.attrs["group_report"]
    assert rep["conflict"] is None and rep["problems"] == {}
    model = df.index[0]
    assert rep["sizes"][model] == {**SIZES, "arc": 5}
    vals = rep["values"][model]
    for t in SIZES:  # a task's reported score is its mean over the logged documents
        assert vals[t] == pytest.approx(df.loc[model, [c for c in df.columns if c.startswith(t + "/")]].mean())
    assert vals["mm"] == pytest.approx(df.loc[model, [c for c in df.columns if not c.startswith("arc/")]].mean())
    assert rep["hierarchies"] == {m: GROUPS for m in df.index}  # each model's own groups
    json.dumps(df.attrs["group_report"])  # JSON values (DataFrame.to_parquet writes attrs as JSON)


def test_groups_of_tasks_not_read_are_dropped(tmp_path):
    write_mmlu_like(tmp_path, extra={"arc": 5})
    df = read_lm_eval_samples(tmp_path, "acc", tasks=["arc"])
    assert df.attrs["groups"] == {} and df.attrs["group_report"] is None
    df = read_lm_eval_samples(tmp_path, "acc", tasks=["mm_s*"])
    # groups with a task read are kept, with their members not read: compress refuses the incomplete ones
    assert df.attrs["groups"] == {"mm": GROUPS["mm"], "mm_stem": GROUPS["mm_stem"]}


def test_models_that_disagree_on_the_groups_are_recorded_as_a_conflict(tmp_path):
    other = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2", "mm_s1"], "mm_stem": ["mm_s2", "mm_s3"]}
    write_mmlu_like(tmp_path, groups=lambda m: other if m.endswith("-3") else GROUPS)
    df = read_lm_eval_samples(tmp_path, "acc")
    assert df.attrs["groups"] == {}
    conflict = df.attrs["group_report"]["conflict"]
    assert "disagree on the groups" in conflict and "'mm_hum'" in conflict and "org/model-3" in conflict


def test_a_bad_group_subtasks_field_is_a_named_error(tmp_path):
    write_mmlu_like(tmp_path, n_models=2)
    (res,) = (tmp_path / "org__model-0").glob("results_*.json")
    data = json.loads(res.read_text())
    data["group_subtasks"]["mm_hum"] = ["mm_h1", 7]
    res.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"field \$\.group_subtasks\[\.\.\.\]\[1\] expected `str`"):
        read_lm_eval_samples(tmp_path, "acc")
    data["group_subtasks"]["mm_hum"] = ["mm_h1", "mm"]
    res.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"subtasks: group 'mm_hum' contains itself \(mm_hum -> mm -> mm_hum"):
        read_lm_eval_samples(tmp_path, "acc")
    data["group_subtasks"]["mm_hum"] = ["mm_h1", "mm_h2"]
    data["n-samples"]["mm_h1"] = {"original": -1, "effective": 6}
    res.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"field \$\.n-samples\[\.\.\.\]\.original"):
        read_lm_eval_samples(tmp_path, "acc")


def test_scores_are_those_of_the_filter_read(tmp_path):
    scores = model_scores(3, {"a": 4, "b": 6}, seed=3)
    for m, tasks in scores.items():
        write_lm_eval_run(tmp_path, m, tasks, filters=("strict-match",), groups={"g": ["a", "b"]})
    df = read_lm_eval_samples(tmp_path, "acc")
    vals = df.attrs["group_report"]["values"][df.index[0]]
    assert vals["g"] == pytest.approx((4 * vals["a"] + 6 * vals["b"]) / 10)
    (res,) = (tmp_path / "org__model-0").glob("results_*.json")
    assert "acc,strict-match" in json.loads(res.read_text())["results"]["g"]
