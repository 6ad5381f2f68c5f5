"""Readers record each column's task (``df.attrs["tasks"]``), which compress uses for a suite."""
from __future__ import annotations

from support.evallog_formats import model_scores, write_lm_eval_run

from benchsel.formulations.estimation import item_tasks
from benchsel.instances._itemtable import assemble
from benchsel.instances.scorefiles import load_scores


def test_assemble_records_each_columns_task_after_the_missing_policy():
    cells = {"a": {"t2": {0: 1.0, 1: 0.0}, "t1": {0: 1.0, 5: 1.0}},
             "b": {"t2": {0: 0.0}, "t1": {0: 0.0, 5: 1.0}}}
    df = assemble(cells, missing="drop-items", what="test")
    assert list(df.columns) == ["t1/0", "t1/5", "t2/0"]
    assert df.attrs["tasks"] == ["t1", "t1", "t2"] and item_tasks(df) == ["t1", "t1", "t2"]
    assert item_tasks(df.iloc[:, :2]) is None  # columns cut since it was read: no tasks


def test_lm_eval_logs_keep_their_tasks(tmp_path):
    scores = model_scores(4, {"arc_easy": 6, "hellaswag": 3}, seed=1)
    for model, tasks in scores.items():
        write_lm_eval_run(tmp_path / "out", model, tasks)
    df = load_scores(tmp_path / "out", metric="acc")
    assert item_tasks(df) == ["arc_easy"] * 6 + ["hellaswag"] * 3
    assert df.attrs["reader"]["format"] == "lm-eval"
