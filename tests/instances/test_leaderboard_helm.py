"""Open LLM Leaderboard details parquet, HELM per-instance stats, and load_scores (tables, npz, dispatch)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from support.evallog_formats import (
    model_scores,
    write_helm_run,
    write_leaderboard_v1_details,
    write_leaderboard_v2_parquet,
    write_lm_eval_run,
)

from benchsel.formulations.core.errors import InvalidInputError, SolverNotInstalledError
from benchsel.instances.helm import helm_task, read_helm_runs
from benchsel.instances.leaderboard import read_leaderboard_details
from benchsel.instances.scorefiles import detect_format, load_scores, read_score_table

pytest.importorskip("pyarrow")


# ------------------------------------------------------------------ leaderboard v1
def _v1(tmp_path, n_models=3, n_docs=5):
    rng = np.random.default_rng(1)
    truth = {}
    for i in range(n_models):
        model_dir = tmp_path / f"details_org__model-{i}"
        for task in ("harness|arc:challenge|25", "harness|hellaswag|10"):
            rows = [{"acc": float(rng.random() < 0.5), "acc_norm": float(rng.random() < 0.5),
                     "acc_stderr": None} for _ in range(n_docs)]
            write_leaderboard_v1_details(model_dir, task, rows)
            truth[(f"org__model-{i}", task)] = rows
    return truth


def test_leaderboard_v1_details(tmp_path):
    truth = _v1(tmp_path)
    df = read_leaderboard_details(tmp_path, "acc_norm")
    assert list(df.index) == ["org__model-0", "org__model-1", "org__model-2"]
    assert df.columns[0] == "harness|arc:challenge|25/0" and df.shape == (3, 10)
    for (m, task), rows in truth.items():
        assert df.loc[m, [f"{task}/{r}" for r in range(5)]].tolist() == [x["acc_norm"] for x in rows]
    with pytest.raises(InvalidInputError, match=r"metric: task 'harness\|arc:challenge\|25' .* has 2 metrics "
                                                r"\(acc, acc_norm\)"):
        read_leaderboard_details(tmp_path)
    with pytest.raises(InvalidInputError, match=r"no metric 'mc2' in .*metrics there: acc, acc_norm"):
        read_leaderboard_details(tmp_path, "mc2")
    only = read_leaderboard_details(tmp_path, "acc", tasks=["harness|hellaswag|*"])
    assert only.shape == (3, 5)


def test_leaderboard_v1_two_runs_and_missing_rows(tmp_path):
    _v1(tmp_path)
    later = "2024-02-01T00-00-00.000000"
    write_leaderboard_v1_details(tmp_path / "details_org__model-0", "harness|arc:challenge|25",
                                 [{"acc": 1.0, "acc_norm": 1.0}] * 4, date=later)
    with pytest.raises(InvalidInputError, match=r"duplicates: 2 details of task 'harness\|arc:challenge\|25' for "
                                                r"model 'org__model-0'"):
        read_leaderboard_details(tmp_path, "acc")
    # v1 items are row positions: 4 rows against 5 may be any document missing, so it is refused by name
    for missing in ("error", "drop-items"):
        with pytest.raises(InvalidInputError, match=r"v1 details of task 'harness\|arc:challenge\|25' hold 4 rows for "
                                                    r"model 'org__model-0' and 5 for model 'org__model-1'"):
            read_leaderboard_details(tmp_path, "acc", duplicates="latest", missing=missing)
    df = read_leaderboard_details(tmp_path, "acc", duplicates="latest", tasks=["harness|hellaswag|10"])
    assert df.shape == (3, 5)


def test_leaderboard_v2_dataset_viewer_parquet(tmp_path):
    scores = model_scores(2, {"leaderboard_musr_team_allocation": 4, "leaderboard_ifeval": 3}, seed=5)
    for model, tasks in scores.items():
        san = model.replace("/", "__")
        for task, docs in tasks.items():
            write_leaderboard_v2_parquet(tmp_path / f"{san}-details", f"{san}__{task}", "latest", docs)
    df = read_leaderboard_details(tmp_path, "acc")
    assert list(df.index) == ["org__model-0", "org__model-1"]
    assert list(df.columns[:2]) == ["leaderboard_ifeval/0", "leaderboard_ifeval/1"]
    assert df.loc["org__model-1", "leaderboard_musr_team_allocation/2"] == \
        scores["org/model-1"]["leaderboard_musr_team_allocation"][2]["acc"]
    # a dated split beside 'latest' is a second run; 'latest' counts as the newest
    write_leaderboard_v2_parquet(tmp_path / "org__model-0-details", "org__model-0__leaderboard_ifeval",
                                 "2024_06_26T17_12_39.153512", {d: {"acc": 0.5, "acc_norm": 0.5} for d in range(3)})
    with pytest.raises(InvalidInputError, match="duplicates: 2 details of task 'leaderboard_ifeval'"):
        read_leaderboard_details(tmp_path, "acc")
    again = read_leaderboard_details(tmp_path, "acc", duplicates="latest")
    pd.testing.assert_frame_equal(again, df)
    # an explicit mapping of model names to folders
    named = read_leaderboard_details({"org/model-0": tmp_path / "org__model-0-details"}, "acc",
                                     duplicates="latest")
    assert list(named.index) == ["org/model-0"]


def test_leaderboard_non_scalar_metric_named(tmp_path):
    write_leaderboard_v2_parquet(tmp_path / "m", "m__leaderboard_ifeval", "latest",
                                 {0: {"inst_level_strict_acc": [True, False]}})
    with pytest.raises(InvalidInputError, match=r"'inst_level_strict_acc' at .* row 0 is not one number"):
        read_leaderboard_details(tmp_path, "inst_level_strict_acc")


def test_parquet_needs_pyarrow_named(tmp_path, monkeypatch):
    _v1(tmp_path, n_models=1)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("pyarrow", "fastparquet") else real(name, *a))
    with pytest.raises(SolverNotInstalledError, match=r"needs the package 'pyarrow' .*benchsel\[parquet\]"):
        read_leaderboard_details(tmp_path, "acc")


def test_leaderboard_bad_layouts(tmp_path):
    with pytest.raises(InvalidInputError, match="expected a folder with one subfolder per model"):
        read_leaderboard_details(tmp_path / "nope")
    (tmp_path / "m").mkdir()
    with pytest.raises(InvalidInputError, match="no details parquet files"):
        read_leaderboard_details(tmp_path)
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "m" / "scores.parquet")
    with pytest.raises(InvalidInputError, match="cannot tell the task of"):
        read_leaderboard_details(tmp_path)


# ------------------------------------------------------------------ HELM
def test_helm_task_name():
    assert helm_task("mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2") == \
        "mmlu:subject=anatomy,method=multiple_choice_joint"
    assert helm_task("gsm:model=a_b,model_deployment=c_d") == "gsm"
    assert helm_task("plain") == "plain"


def test_helm_runs(tmp_path):
    suite = tmp_path / "benchmark_output" / "runs" / "v1.0.0"
    rng = np.random.default_rng(0)
    truth = {}
    for model in ("openai/gpt2", "meta/llama-7b"):
        for scen in ("mmlu:subject=anatomy,method=multiple_choice_joint", "gsm:"):
            inst = {f"id{j}": {"exact_match": float(rng.random() < 0.5), "quasi_exact_match": 1.0}
                    for j in range(4)}
            write_helm_run(suite, scen.rstrip(":"), model, inst, perturbed=True)
            truth[(model, scen.rstrip(":"))] = inst
    df = read_helm_runs(tmp_path, "exact_match")
    assert list(df.index) == ["meta/llama-7b", "openai/gpt2"] and df.shape == (2, 8)
    for (m, task), inst in truth.items():
        assert df.loc[m, [f"{task}/id{j}" for j in range(4)]].tolist() == [v["exact_match"] for v in inst.values()]
    assert read_helm_runs(tmp_path, "exact_match", tasks=["gsm"], split="test").shape == (2, 4)
    with pytest.raises(InvalidInputError, match=r"no per-instance 'f1' .*statistics there: exact_match, "
                                                "quasi_exact_match, num_prompt_tokens"):
        read_helm_runs(tmp_path, "f1")
    with pytest.raises(InvalidInputError, match="no per-instance 'exact_match' on split 'valid'"):
        read_helm_runs(tmp_path, "exact_match", split="valid")
    # a second suite of the same runs: two runs of one (model, task)
    write_helm_run(tmp_path / "benchmark_output" / "runs" / "v1.1.0", "gsm", "openai/gpt2",
                   {"id0": {"exact_match": 1.0}})
    with pytest.raises(InvalidInputError, match="duplicates: two HELM runs of task 'gsm' for model 'openai/gpt2'"):
        read_helm_runs(tmp_path, "exact_match")


def test_helm_bad_files(tmp_path):
    run = write_helm_run(tmp_path, "gsm", "a/b", {"id0": {"exact_match": 1.0}})
    (run / "per_instance_stats.json").write_text("{not json")
    with pytest.raises(InvalidInputError, match=r"path: .*per_instance_stats.json': expected `array`, got `object`"):
        read_helm_runs(tmp_path, "exact_match")
    (run / "per_instance_stats.json").write_text("[not json")
    with pytest.raises(InvalidInputError, match=r"per_instance_stats.json': not valid JSON"):
        read_helm_runs(tmp_path, "exact_match")
    (run / "per_instance_stats.json").write_text(json.dumps([{"stats": []}]))
    with pytest.raises(InvalidInputError, match=r"field \$\[0\] object missing required field `instance_id`"):
        read_helm_runs(tmp_path, "exact_match")
    with pytest.raises(InvalidInputError, match="no HELM run"):
        read_helm_runs(run / "run_spec.json", "exact_match")


# ------------------------------------------------------------------ tables, npz, dispatch
def test_csv_and_parquet_tables(tmp_path):
    Y = pd.DataFrame([[1, 0, 0.5], [0, 1, 0.25]], index=pd.Index(["m1", "m2"], name="model"),
                     columns=["q1", "q2", "q3"])
    Y.to_csv(tmp_path / "s.csv")
    Y.reset_index().to_parquet(tmp_path / "s.parquet", index=False)
    for name in ("s.csv", "s.parquet"):
        df = load_scores(tmp_path / name)
        assert list(df.index) == ["m1", "m2"] and list(df.columns) == ["q1", "q2", "q3"]
        assert df.to_numpy().tolist() == Y.to_numpy(float).tolist()
        assert df.attrs["reader"]["format"] == "table"
    (tmp_path / "gap.csv").write_text("model,q1,q2\nm1,1,\nm2,0,1\n")
    with pytest.raises(InvalidInputError, match=r"1 of the 4 cells of .*gap.csv.* are empty .*first at model 'm1', "
                                                r"item 'q2'"):
        read_score_table(tmp_path / "gap.csv")
    assert list(read_score_table(tmp_path / "gap.csv", missing="drop-items").columns) == ["q1"]
    assert list(read_score_table(tmp_path / "gap.csv", missing="drop-models").index) == ["m2"]
    (tmp_path / "bad.csv").write_text("model,q1,q2\nm1,1,yes\nm2,0,1\n")
    with pytest.raises(InvalidInputError, match="score of model 'm1' on item 'q2' is not a number: 'yes'"):
        read_score_table(tmp_path / "bad.csv")
    (tmp_path / "dup.csv").write_text("model,q1,q1\nm1,1,1\n")
    with pytest.raises(InvalidInputError, match="names item"):
        read_score_table(tmp_path / "dup.csv")


def test_npz_response_file(tmp_path):
    Y = np.arange(12, dtype=float).reshape(2, 3, 2) / 12
    np.savez(tmp_path / "r.npz", Y=Y, models=np.array(["a", "b"]), item_ids=np.array([10, 11, 12]),
             metrics=np.array(["bleu", "chrf"]))
    with pytest.raises(InvalidInputError, match=r"holds 2 metrics \(bleu, chrf\); pass metric=NAME"):
        load_scores(tmp_path / "r.npz")
    df = load_scores(tmp_path / "r.npz", metric="chrf")
    assert list(df.columns) == [10, 11, 12] and df.loc["b", 11] == Y[1, 1, 1]


def test_detect_format(tmp_path):
    write_lm_eval_run(tmp_path / "lm", "a/b", {"t": {0: {"acc": 1.0}}})
    write_helm_run(tmp_path / "helm", "gsm", "a/b", {"id0": {"exact_match": 1.0}})
    write_leaderboard_v1_details(tmp_path / "lb" / "m", "harness|arc:challenge|25", [{"acc": 1.0}])
    assert [detect_format(tmp_path / d) for d in ("lm", "helm", "lb")] == ["lm-eval", "helm", "leaderboard"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="holds no lm-eval sample logs"):
        detect_format(tmp_path / "empty")
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(InvalidInputError, match="cannot tell the format"):
        detect_format(tmp_path / "x.xlsx")
    with pytest.raises(InvalidInputError, match="HELM runs need the per-instance statistic"):
        load_scores(tmp_path / "helm")
    with pytest.raises(InvalidInputError, match="filter: only lm-eval sample logs have filters"):
        load_scores(tmp_path / "helm", metric="exact_match", filter="none")
    with pytest.raises(InvalidInputError, match="format: expected one of"):
        load_scores(tmp_path / "lm", format="xlsx")
