"""lm-evaluation-harness sample logs -> models x items, and the --samples / items CSV writers.

The fixtures are written by ``evallog_formats`` in lm-eval's own layout and line format.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.evallog_formats import date_id, model_scores, sample_line, write_lm_eval_run

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.instances.evallogs import (
    find_lm_eval_logs,
    parse_item_label,
    read_lm_eval_samples,
    samples_argument,
    write_items_csv,
    write_samples_json,
)

TASKS = {"arc_easy": 7, "hellaswag": 5}


@pytest.fixture
def out(tmp_path):
    scores = model_scores(4, TASKS, seed=3, continuous=("hellaswag",))
    for model, tasks in scores.items():
        write_lm_eval_run(tmp_path / "out", model, tasks)
    return tmp_path / "out", scores


def test_reads_every_model_and_task_with_labels_and_values(out):
    path, scores = out
    df = read_lm_eval_samples(path, "acc")
    assert list(df.index) == sorted(scores)  # names from results_<date>.json, not the sanitized folder names
    assert list(df.columns) == [f"arc_easy/{d}" for d in range(7)] + [f"hellaswag/{d}" for d in range(5)]
    for m in scores:
        for t, n in TASKS.items():
            want = [scores[m][t][d]["acc"] for d in range(n)]
            assert df.loc[m, [f"{t}/{d}" for d in range(n)]].tolist() == want
    assert df.dtypes.unique().tolist() == [np.dtype(float)]


def test_non_binary_metric_kept_as_float_and_metric_per_task(out):
    path, scores = out
    df = read_lm_eval_samples(path, {"arc_easy": "acc_norm", "hellaswag": "f1"})
    m = sorted(scores)[2]
    assert df.loc[m, "hellaswag/3"] == scores[m]["hellaswag"][3]["f1"]
    assert not np.isin(df.filter(like="hellaswag").to_numpy(), (0.0, 1.0)).all()
    assert df.loc[m, "arc_easy/1"] == scores[m]["arc_easy"][1]["acc_norm"]


def test_metric_errors_list_the_metrics_present(out):
    path, _ = out
    with pytest.raises(InvalidInputError, match=r"metric: task 'arc_easy' .* has 2 metrics \(acc, acc_norm\)"):
        read_lm_eval_samples(path)
    with pytest.raises(InvalidInputError, match=r"metric: no metric 'f1' in .*samples_arc_easy.*metrics there: acc, "
                                                r"acc_norm"):
        read_lm_eval_samples(path, "f1")
    with pytest.raises(InvalidInputError, match="names no metric for task 'hellaswag'"):
        read_lm_eval_samples(path, {"arc_easy": "acc"})
    # one task only: its single metric is the default when a task has one metric
    df = read_lm_eval_samples(path, "acc", tasks=["arc_*"])
    assert df.shape == (4, 7)


def test_model_name_falls_back_to_the_folder(tmp_path):
    folder = write_lm_eval_run(tmp_path, "org/m", {"t": {0: {"acc": 1.0}, 1: {"acc": 0.0}}})
    for p in folder.glob("results_*.json"):
        p.unlink()
    df = read_lm_eval_samples(tmp_path)  # one metric: the default
    assert list(df.index) == ["org__m"]
    # one model folder or one file given directly
    assert read_lm_eval_samples(folder).shape == (1, 2)
    assert read_lm_eval_samples(next(folder.glob("samples_*.jsonl"))).shape == (1, 2)


def test_a_task_name_with_underscores_and_the_date(tmp_path):
    write_lm_eval_run(tmp_path, "a/b", {"mmlu_high_school_physics": {3: {"acc": 1.0}}}, date=date_id(2))
    (log,) = find_lm_eval_logs(tmp_path)
    assert (log.task, log.date, log.model) == ("mmlu_high_school_physics", date_id(2), "a/b")


def test_malformed_lines_are_named_with_file_and_line(tmp_path):
    folder = write_lm_eval_run(tmp_path, "org/m", {"t": {0: {"acc": 1.0}, 1: {"acc": 0.0}}})
    log = next(folder.glob("samples_*.jsonl"))
    lines = log.read_text().splitlines()
    log.write_text(lines[0] + "\n" + lines[1][:-5] + "\n")
    with pytest.raises(InvalidInputError, match=rf"{log.name}:2: not valid JSON"):
        read_lm_eval_samples(tmp_path)
    log.write_text(lines[0] + "\n[1, 2]\n")
    with pytest.raises(InvalidInputError, match=rf"{log.name}:2: expected a JSON object"):
        read_lm_eval_samples(tmp_path)
    log.write_text(lines[0] + "\n" + json.dumps({"acc": 1.0}) + "\n")
    with pytest.raises(InvalidInputError, match=rf"{log.name}:2: the logged document has no 'doc_id'"):
        read_lm_eval_samples(tmp_path)
    log.write_text(lines[0] + "\n\n" + lines[0] + "\n")
    with pytest.raises(InvalidInputError, match=rf"{log.name}:3: doc_id 0 is logged twice \(lines 1 and 3"):
        read_lm_eval_samples(tmp_path)
    log.write_text("")
    with pytest.raises(InvalidInputError, match="holds no logged document"):
        read_lm_eval_samples(tmp_path)


def test_a_metric_without_a_per_item_number_is_refused(tmp_path):
    write_lm_eval_run(tmp_path, "org/m", {"wmt": {0: {"bleu": [["ref"], "pred"]}}})
    with pytest.raises(InvalidInputError, match=r"'bleu' at .*samples_wmt_.*:1 is not one number per document"):
        read_lm_eval_samples(tmp_path, "bleu")


def test_two_runs_of_one_task_for_one_model(tmp_path):
    write_lm_eval_run(tmp_path, "org/m", {"t": {0: {"acc": 0.0}, 1: {"acc": 0.0}}}, date=date_id(0))
    write_lm_eval_run(tmp_path, "org/m", {"t": {0: {"acc": 1.0}, 1: {"acc": 1.0}}}, date=date_id(1))
    write_lm_eval_run(tmp_path, "org/x", {"t": {0: {"acc": 0.0}, 1: {"acc": 1.0}}})
    with pytest.raises(InvalidInputError, match=r"duplicates: 2 logs of task 't' for model 'org/m'.*"
                                                r"duplicates='latest'"):
        read_lm_eval_samples(tmp_path)
    df = read_lm_eval_samples(tmp_path, duplicates="latest")
    assert df.loc["org/m"].tolist() == [1.0, 1.0]
    with pytest.raises(InvalidInputError, match="duplicates: expected one of 'error', 'latest'"):
        read_lm_eval_samples(tmp_path, duplicates="first")


def test_missing_cells_policy(tmp_path):
    docs = {d: {"acc": float(d % 2)} for d in range(4)}
    write_lm_eval_run(tmp_path, "org/a", {"t1": docs, "t2": docs})
    write_lm_eval_run(tmp_path, "org/b", {"t1": docs, "t2": docs})
    write_lm_eval_run(tmp_path, "org/c", {"t1": {d: docs[d] for d in range(3)}})  # no t2, lacks t1/3
    with pytest.raises(InvalidInputError, match=r"missing: 5 of the 24 cells .*model 'org/c' lacks 1 of the 4 "
                                                r"items of task 't1' \(e.g. t1/3\); model 'org/c' has no log of "
                                                r"task 't2'.*drop-items"):
        read_lm_eval_samples(tmp_path)
    items = read_lm_eval_samples(tmp_path, missing="drop-items")
    assert items.shape == (3, 3) and list(items.columns) == ["t1/0", "t1/1", "t1/2"]
    assert items.attrs["dropped_items"] == ["t1/3", "t2/0", "t2/1", "t2/2", "t2/3"]
    models = read_lm_eval_samples(tmp_path, missing="drop-models")
    assert list(models.index) == ["org/a", "org/b"] and models.shape[1] == 8
    assert models.attrs["dropped_models"] == ["org/c"]
    with pytest.raises(InvalidInputError, match="missing: expected one of"):
        read_lm_eval_samples(tmp_path, missing="ignore")


def test_null_and_nan_values_are_missing_cells(tmp_path):
    write_lm_eval_run(tmp_path, "org/a", {"t": {0: {"acc": None}, 1: {"acc": 1.0}}})
    write_lm_eval_run(tmp_path, "org/b", {"t": {0: {"acc": 1.0}, 1: {"acc": math.nan}}})
    with pytest.raises(InvalidInputError, match="missing: 2 of the 4 cells"):
        read_lm_eval_samples(tmp_path)
    with pytest.raises(InvalidInputError, match=r"no item of .* is scored for every one of the 2 models"):
        read_lm_eval_samples(tmp_path, missing="drop-items")


def test_filters(tmp_path):
    docs = {d: {"exact_match": float(d % 2)} for d in range(3)}
    write_lm_eval_run(tmp_path, "org/a", {"gsm8k": docs}, filters=("strict-match", "flexible-extract"))
    with pytest.raises(InvalidInputError, match=r"under 2 filters \(flexible-extract, strict-match\); pass "
                                                r"filter=NAME"):
        read_lm_eval_samples(tmp_path)
    df = read_lm_eval_samples(tmp_path, filter="strict-match")
    assert df.shape == (1, 3)
    with pytest.raises(InvalidInputError, match="no line with filter 'none'; filters there: flexible-extract, "
                                                "strict-match"):
        read_lm_eval_samples(tmp_path, filter="none")
    # a mapping names the filter of the tasks that have several; the others keep their only one
    write_lm_eval_run(tmp_path, "org/a", {"arc_easy": docs}, date="2024-06-01T12-30-56.789010")
    df = read_lm_eval_samples(tmp_path, "exact_match", filter={"gsm8k": "flexible-extract"})
    assert list(df.columns) == ["arc_easy/0", "arc_easy/1", "arc_easy/2", "gsm8k/0", "gsm8k/1", "gsm8k/2"]


def test_logs_from_before_lm_eval_0_4_6_without_filter_and_metric_names(tmp_path):
    docs = {d: {"acc": float(d % 2), "acc_norm": 1.0} for d in range(3)}
    write_lm_eval_run(tmp_path, "org/a", {"piqa": docs}, with_metric_names=False)
    line = json.loads(next(tmp_path.rglob("samples_*.jsonl")).read_text().splitlines()[0])
    assert "filter" not in line and "metrics" not in line
    assert read_lm_eval_samples(tmp_path, "acc").iloc[0].tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(InvalidInputError, match=r"has 2 metrics \(acc, acc_norm\)"):
        read_lm_eval_samples(tmp_path)
    with pytest.raises(InvalidInputError, match="name no filter"):
        read_lm_eval_samples(tmp_path, "acc", filter="none")


def test_tasks_patterns(out):
    path, _ = out
    assert read_lm_eval_samples(path, "acc", tasks=["hella*"]).shape == (4, 5)
    with pytest.raises(InvalidInputError, match=r"tasks: 'mmlu\*' matches no task .*tasks: arc_easy, hellaswag"):
        read_lm_eval_samples(path, "acc", tasks=["mmlu*"])


def test_nothing_to_read(tmp_path):
    with pytest.raises(InvalidInputError, match="no such file or folder"):
        read_lm_eval_samples(tmp_path / "nope")
    with pytest.raises(InvalidInputError, match=r"no lm-eval sample logs .*--log_samples"):
        read_lm_eval_samples(tmp_path)
    bad = tmp_path / "results.jsonl"
    bad.write_text(json.dumps(sample_line(0, {"acc": 1.0})) + "\n")
    with pytest.raises(InvalidInputError, match="is not an lm-eval sample log"):
        read_lm_eval_samples(bad)


# ------------------------------------------------------------------ writers
def test_samples_argument_sorts_doc_ids_per_task(tmp_path):
    labels = ["hellaswag/30", "arc_easy/12", "hellaswag/4", "arc_easy/3"]
    assert samples_argument(labels) == {"hellaswag": [4, 30], "arc_easy": [3, 12]}
    p = write_samples_json(labels, tmp_path / "s" / "samples.json")
    assert json.loads(p.read_text()) == {"hellaswag": [4, 30], "arc_easy": [3, 12]}
    assert parse_item_label("mmlu_anatomy/0") == ("mmlu_anatomy", 0)


def test_samples_argument_refuses_labels_that_are_not_task_doc_id():
    for bad in ("q7", "task/x", "/3", "t/-1"):
        with pytest.raises(InvalidInputError, match="expected labels 'task/doc_id'"):
            samples_argument([bad])
    with pytest.raises(InvalidInputError, match="lists a document twice"):
        samples_argument(["t/1", "t/1"])

    class NoLabels:
        item_labels = None
        items = np.array([1, 2])

    with pytest.raises(InvalidInputError, match="has no item labels"):
        samples_argument(NoLabels())


def test_items_csv(tmp_path):
    class C:
        items = np.array([4, 9])
        item_labels = np.array(["t/4", "t/9"], dtype=object)

    p = write_items_csv(C(), tmp_path / "items.csv")
    assert p.read_text().splitlines() == ["index,label", "4,t/4", "9,t/9"]
    p = write_items_csv(["a/1", "b/2"], tmp_path / "plain.csv")
    assert p.read_text().splitlines() == ["index,label", "0,a/1", "1,b/2"]


def test_read_then_samples_round_trip(out):
    path, _ = out
    df = read_lm_eval_samples(path, "acc")
    arg = samples_argument(df.columns[[11, 0, 6, 8]])
    assert arg == {"hellaswag": [1, 4], "arc_easy": [0, 6]}
