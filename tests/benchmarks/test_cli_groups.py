"""``benchsel compress`` + ``benchsel estimate`` on lm-eval logs with nested groups: group rows, ``--json``
groups, the suite weighted as lm-eval weights its groups, and the named errors that point at --aggregate."""
from __future__ import annotations

import json

import pytest
from support.evallog_formats import model_scores, write_lm_eval_run

from benchsel.benchmarks.cli import main
from benchsel.solvers.compression import load_compressed

SIZES = {"mm_h1": 6, "mm_h2": 14, "mm_s1": 4, "mm_s2": 8, "mm_s3": 16}
GROUPS = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2"], "mm_stem": ["mm_s1", "mm_s2", "mm_s3"]}


def _write(out, n_models, seed, **kw):
    for m, tasks in model_scores(n_models, SIZES, seed=seed).items():
        write_lm_eval_run(out, m.replace("model", f"model{seed}"), tasks, groups=GROUPS, **kw)


@pytest.fixture
def logs(tmp_path):
    _write(tmp_path / "src", 14, 1)
    _write(tmp_path / "new", 3, 2)
    return tmp_path


def test_round_trip_gives_group_rows_and_json_groups(logs, capsys):
    assert main(["compress", str(logs / "src"), "--k", "15", "--metric", "acc", "--out", str(logs / "c")]) == 0
    err = capsys.readouterr().err
    assert "3 groups: mm (size), mm_hum (size), mm_stem (size)" in err
    c = load_compressed(logs / "c")
    assert c.groups == ["mm", "mm_hum", "mm_stem"] and c.group_tree.suite == "groups"
    assert main(["estimate", str(logs / "c"), str(logs / "new"), "--json"]) == 0
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(recs) == 3
    N = sum(SIZES.values())
    for rec in recs:
        t, g = rec["tasks"], rec["groups"]
        assert rec["aggregate"] == "suite (lm-eval groups)" and list(g) == ["mm", "mm_hum", "mm_stem"]
        assert rec["estimate"] == pytest.approx(g["mm"]["estimate"])
        assert rec["low"] == pytest.approx(g["mm"]["low"]) and rec["high"] == pytest.approx(g["mm"]["high"])
        assert g["mm"]["estimate"] == pytest.approx(sum(SIZES[k] * t[k]["estimate"] for k in SIZES) / N)
        hum = (6 * t["mm_h1"]["estimate"] + 14 * t["mm_h2"]["estimate"]) / 20
        assert g["mm_hum"]["estimate"] == pytest.approx(hum)
        for row in g.values():  # built like the suite's interval (Suite.predict_groups_with_interval)
            assert 0.0 <= row["low"] <= row["estimate"] <= row["high"] <= 1.0 and row["high"] > row["low"]
    assert main(["estimate", str(logs / "c"), str(logs / "new")]) == 0
    out = capsys.readouterr().out
    assert "mm_hum (group)" in out and "suite (lm-eval groups)" in out


def test_a_mismatching_group_score_names_aggregate_and_aggregate_decides(tmp_path, capsys):
    _write(tmp_path / "src", 14, 1, group_results={"mm_stem": {"acc,none": 0.123}})
    args = ["compress", str(tmp_path / "src"), "--k", "15", "--metric", "acc", "--out", str(tmp_path / "c")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "lm-eval reports group 'mm_stem' = 0.123" in err and "--aggregate" in err
    assert main([*args, "--aggregate", "micro"]) == 0
    assert "each group weights its tasks as the suite (--aggregate)" in capsys.readouterr().err
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "src"), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out.splitlines()[0])
    assert rec["aggregate"] == "suite (micro)" and set(rec["groups"]) == {"mm", "mm_hum", "mm_stem"}


MOVED = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2", "mm_s3"], "mm_stem": ["mm_s1", "mm_s2"]}
FLAT = {"mm_hum": GROUPS["mm_hum"], "mm_stem": GROUPS["mm_stem"]}


def _write_new(out, groups):
    for m, tasks in model_scores(3, SIZES, seed=2).items():
        write_lm_eval_run(out, m.replace("model", "model2"), tasks, groups=groups)


def test_estimate_refuses_new_logs_whose_groups_differ_and_names_the_options(logs, capsys):
    assert main(["compress", str(logs / "src"), "--k", "15", "--metric", "acc", "--out", str(logs / "c")]) == 0
    capsys.readouterr()
    _write_new(logs / "moved", MOVED)  # a task moved to another group
    assert main(["estimate", str(logs / "c"), str(logs / "moved")]) == 2
    err = capsys.readouterr().err
    assert "scores: the lm-eval groups in the results of model 'org/model2-0' differ from the compression's " \
           "(2 other new model(s) differ too)" in err
    assert ("group 'mm_hum' has members mm_h1, mm_h2 in the compression but mm_h1, mm_h2, mm_s3 in the new "
            "results") in err
    assert "group 'mm_stem' has members mm_s1, mm_s2, mm_s3 in the compression but mm_s1, mm_s2" in err
    assert "--no-groups" in err and "--pool" in err and "--aggregate" in err
    _write_new(logs / "flat", FLAT)  # a group missing
    assert main(["estimate", str(logs / "c"), str(logs / "flat"), "--json"]) == 2
    assert "group 'mm' (members: mm_hum, mm_stem) is not among the new results' groups" in capsys.readouterr().err


def test_estimate_takes_new_scores_that_state_no_groups(logs, tmp_path, capsys):
    assert main(["compress", str(logs / "src"), "--k", "15", "--metric", "acc", "--out", str(logs / "c")]) == 0
    capsys.readouterr()
    _write_new(logs / "byname", None)  # lm-eval run on the subjects by name: every task in no group
    assert main(["estimate", str(logs / "c"), str(logs / "byname"), "--json"]) == 0
    by_name = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [list(r["groups"]) for r in by_name] == [["mm", "mm_hum", "mm_stem"]] * 3
    # the same scores as a table (no group information at all): the same estimates
    from benchsel.instances.evallogs import read_lm_eval_samples
    df = read_lm_eval_samples(logs / "byname", "acc")
    df.to_csv(tmp_path / "new.csv")
    assert main(["estimate", str(logs / "c"), str(tmp_path / "new.csv"), "--format", "table", "--json"]) == 0
    table = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["estimate"] for r in table] == pytest.approx([r["estimate"] for r in by_name])
    assert [r["groups"]["mm_hum"]["estimate"] for r in table] == pytest.approx(
        [r["groups"]["mm_hum"]["estimate"] for r in by_name])


def test_no_groups_keeps_the_tasks_weights_by_aggregate_and_takes_any_groups(logs, capsys):
    out = str(logs / "c")
    args = ["compress", str(logs / "src"), "--k", "15", "--metric", "acc", "--out", out, "--no-groups"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "--no-groups: the logs' 3 lm-eval groups ignored" in err and "groups: mm" not in err
    c = load_compressed(logs / "c")
    assert c.groups is None and c.group_tree is None and c.tasks == list(SIZES)
    assert c.estimator.params["aggregate"] == "macro"
    _write_new(logs / "moved", MOVED)
    assert main(["estimate", out, str(logs / "moved"), "--json"]) == 0
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(recs) == 3
    for rec in recs:
        assert "groups" not in rec and rec["aggregate"] == "suite (macro)"
        assert rec["estimate"] == pytest.approx(sum(t["estimate"] for t in rec["tasks"].values()) / len(SIZES))
    assert main([*args, "--force", "--aggregate", "micro"]) == 0
    c = load_compressed(logs / "c")
    assert c.groups is None and c.estimator.params["aggregate"] == "micro"
    capsys.readouterr()
    assert main([*args, "--force", "--pool"]) == 2
    assert "benchsel: error: no-groups: --pool already ignores the tasks and their groups" in capsys.readouterr().err
