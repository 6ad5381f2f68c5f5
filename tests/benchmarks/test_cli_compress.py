"""``benchsel compress`` / ``benchsel estimate``, and the README's lm-eval recipe run end to end."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.evallog_formats import date_id, model_scores, write_lm_eval_run

from benchsel.benchmarks.cli import main

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"arc_easy": 60, "hellaswag": 40}


def _lm_eval_out(path: Path, n_models: int = 14, seed: int = 0) -> dict:
    scores = model_scores(n_models + 1, TASKS, seed=seed, continuous=("hellaswag",))
    names = list(scores)
    for m in names[:-1]:
        write_lm_eval_run(path, m, scores[m])
    return scores


def _fake_lm_eval(argv: list[str], scores: dict, workdir: Path) -> None:
    """What ``lm_eval ... --samples FILE --log_samples --output_path DIR`` leaves behind (from lm-eval's source:
    only the listed documents, logged under their original doc ids)."""
    assert argv[0] == "lm_eval" and "--limit" not in argv, "the recipe must use --samples without --limit"
    opt = {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("--")}
    assert "--log_samples" in argv
    model = dict(kv.split("=", 1) for kv in opt["--model_args"].split(","))["pretrained"]
    samples = json.loads((workdir / opt["--samples"]).read_text())
    tasks = opt["--tasks"].split(",")
    assert set(samples) <= set(tasks), "the --samples file names a task the command does not run"
    per = {t: {d: scores[model][t][d] for d in ids} for t, ids in samples.items()}
    write_lm_eval_run(workdir / opt["--output_path"], model, per, samples=samples, date=date_id(4))


def test_readme_recipe_runs_as_written(tmp_path, monkeypatch, capsys):
    text = (ROOT / "README.md").read_text()
    section = text.split("## From lm-eval logs to a subset and back", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert [ln.split()[0] for ln in lines] == ["benchsel", "lm_eval", "benchsel"]
    monkeypatch.chdir(tmp_path)
    first, run, last = (shlex.split(ln) for ln in lines)
    tasks = run[run.index("--tasks") + 1].split(",")
    new = run[run.index("--model_args") + 1].split("pretrained=", 1)[1]
    scores = model_scores(15, {t: 60 for t in tasks}, seed=7)  # 14 models already evaluated and a new one,
    scores[new] = scores.pop(list(scores)[7])                    # of middling ability (models sorted by ability)
    for m in list(scores)[:-1]:
        write_lm_eval_run(tmp_path / first[2], m, scores[m])  # their lm_eval --log_samples --output_path folder
    assert main(first[1:]) == 0
    _fake_lm_eval(run, scores, tmp_path)
    capsys.readouterr()
    assert main(last[1:]) == 0
    out = capsys.readouterr().out.splitlines()
    # a suite of two tasks: a row per task, then the suite's (the mean of the tasks), never a pooled average
    assert out[0].split() == ["model", "task", "estimate", "low", "high"]
    rows = [ln.split() for ln in out[1:]]
    assert [r[0] for r in rows] == [new] * 3 and [r[1] for r in rows] == [*tasks, "suite"]
    truth = {t: np.mean([v["acc"] for v in scores[new][t].values()]) for t in tasks}
    for r in rows:
        est, lo, hi = map(float, r[-3:])
        assert 0 <= lo <= est <= hi <= 1
    suite = float(rows[-1][-3])  # 10 items a task, 14 source models: a rough estimate
    assert abs(suite - np.mean(list(truth.values()))) < 0.2, (rows, truth)


def test_compress_writes_the_compression_samples_and_items(tmp_path, capsys):
    _lm_eval_out(tmp_path / "out")
    code = main(["compress", str(tmp_path / "out"), "--k", "12", "--metric", "arc_easy=acc",
                 "--metric", "hellaswag=f1", "--out", str(tmp_path / "c"), "--estimator", "rs-mean", "--seed", "2"])
    assert code == 0
    cap = capsys.readouterr()
    assert "12 items:" in cap.out
    for msg in ("reading", "scores: 14 models x 100 items", "selection 'stratified'", "wrote", "samples.json"):
        assert msg in cap.err
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["arrays.npz", "compression.json", "items.csv",
                                                                  "samples.json"]
    meta = json.loads((tmp_path / "c" / "compression.json").read_text())
    assert meta["source"]["reader"]["metric"] == {"arc_easy": "acc", "hellaswag": "f1"}
    samples = json.loads((tmp_path / "c" / "samples.json").read_text())
    labels = [f"{t}/{d}" for t, ds in samples.items() for d in ds]
    assert sorted(labels) == sorted(meta["item_labels"]) and all(ds == sorted(ds) for ds in samples.values())
    rows = (tmp_path / "c" / "items.csv").read_text().splitlines()
    assert rows[0] == "index,label" and len(rows) == 13
    # a second compress into the same folder needs --force
    assert main(["compress", str(tmp_path / "out"), "--k", "5", "--metric", "acc", "--tasks", "arc_easy",
                 "--out", str(tmp_path / "c")]) == 2
    assert "already holds a saved compression; pass --force" in capsys.readouterr().err
    assert main(["compress", str(tmp_path / "out"), "--k", "5", "--metric", "acc", "--tasks", "arc_easy",
                 "--out", str(tmp_path / "c"), "--force"]) == 0


def test_estimate_table_json_and_interval(tmp_path, capsys):
    scores = _lm_eval_out(tmp_path / "out")
    assert main(["compress", str(tmp_path / "out"), "--k", "10", "--metric", "acc", "--estimator", "bayes-aipw",
                 "--out", str(tmp_path / "c")]) == 0
    new = list(scores)[-1]
    samples = json.loads((tmp_path / "c" / "samples.json").read_text())
    write_lm_eval_run(tmp_path / "new", new, {t: {d: scores[new][t][d] for d in ds} for t, ds in samples.items()})
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "new"), "--json", "--alpha", "0.05"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    rec = json.loads(line)
    assert rec["model"] == new and rec["interval_note"] == "95% (suite)" and rec["aggregate"] == "suite (macro)"
    lo, hi = rec["interval"]
    assert lo <= rec["estimate"] <= hi and [rec["low"], rec["high"]] == [lo, hi]
    assert list(rec["tasks"]) == ["arc_easy", "hellaswag"]
    for t in rec["tasks"].values():
        assert t["low"] <= t["estimate"] <= t["high"]
    assert rec["estimate"] == pytest.approx(np.mean([t["estimate"] for t in rec["tasks"].values()]))
    # the source models' own logs hold every item: estimate takes the saved ones by label
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "out")]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 14 * 3
    # --pool: one pooled estimate, as before suites
    assert main(["compress", str(tmp_path / "out"), "--k", "10", "--metric", "acc", "--estimator", "bayes-aipw",
                 "--pool", "--out", str(tmp_path / "p")]) == 0
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "p"), str(tmp_path / "out"), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out.splitlines()[0])
    assert rec["method"] == "bayes-aipw" and "tasks" not in rec


def test_estimate_names_the_saved_items_the_new_scores_lack(tmp_path, capsys):
    scores = _lm_eval_out(tmp_path / "out")
    assert main(["compress", str(tmp_path / "out"), "--k", "8", "--metric", "acc", "--out",
                 str(tmp_path / "c")]) == 0
    new = list(scores)[-1]
    samples = json.loads((tmp_path / "c" / "samples.json").read_text())
    task, ids = next(iter(samples.items()))
    part = {task: {d: scores[new][task][d] for d in ids[1:]}}  # one saved item not run
    write_lm_eval_run(tmp_path / "new", new, part)
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert "items of the compression are not among the new scores' " in err and f"'{task}/{ids[0]}'" in err


def test_compress_a_csv_matrix_and_an_npz(tmp_path, capsys):
    rng = np.random.default_rng(0)
    Y = (rng.random((20, 30)) < np.linspace(0.2, 0.8, 20)[:, None]).astype(float)
    df = pd.DataFrame(Y, index=[f"m{i}" for i in range(20)], columns=[f"q{j}" for j in range(30)])
    df.iloc[:16].to_csv(tmp_path / "s.csv")
    assert main(["compress", str(tmp_path / "s.csv"), "--k", "6", "--out", str(tmp_path / "c"),
                 "--estimator", "ridge"]) == 0
    assert not (tmp_path / "c" / "samples.json").exists()
    assert "no samples.json: item labels such as" in capsys.readouterr().err
    df.iloc[16:].to_csv(tmp_path / "new.csv")
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "new.csv")]) == 0
    assert [ln.split()[0] for ln in capsys.readouterr().out.splitlines()] == ["model", "m16", "m17", "m18", "m19"]
    np.savez(tmp_path / "r.npz", Y=Y[:16].astype(np.uint8))
    assert main(["compress", str(tmp_path / "r.npz"), "--k", "4", "--out", str(tmp_path / "c2")]) == 0
    assert "no samples.json" in capsys.readouterr().err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    _lm_eval_out(tmp_path / "out", n_models=4)
    cases = [
        (["compress", str(tmp_path / "out"), "--k", "5", "--out", str(tmp_path / "c")],
         "has 2 metrics (acc, acc_norm)"),
        (["compress", str(tmp_path / "out"), "--k", "5", "--metric", "bleu", "--out", str(tmp_path / "c")],
         "no metric 'bleu'"),
        (["compress", str(tmp_path / "nope"), "--k", "5", "--out", str(tmp_path / "c")], "no such file or folder"),
        (["compress", str(tmp_path / "out"), "--k", "500", "--metric", "acc", "--out", str(tmp_path / "c")],
         "k: expected 1 <= k < 100"),
        (["compress", str(tmp_path / "out"), "--k", "5", "--metric", "acc", "--metric", "t=acc", "--out",
          str(tmp_path / "c")], "mix of a plain name and TASK=NAME"),
        (["estimate", str(tmp_path / "nothing"), str(tmp_path / "out")], "no saved compression at"),
    ]
    for argv, msg in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err, (argv, err)
    with pytest.raises(SystemExit) as e:
        main(["compress", str(tmp_path / "out"), "--k", "5", "--missing", "skip", "--out", "x"])
    assert e.value.code == 2 and "invalid choice: 'skip'" in capsys.readouterr().err


def test_filters_by_task_are_kept_for_estimate(tmp_path, capsys):
    scores = model_scores(13, {"arc_easy": 20, "gsm8k": 20}, seed=4)
    names = list(scores)
    for m in names[:12]:
        write_lm_eval_run(tmp_path / "out", m, {"arc_easy": scores[m]["arc_easy"]})
        write_lm_eval_run(tmp_path / "out", m, {"gsm8k": scores[m]["gsm8k"]}, filters=("strict-match",
                                                                                     "flexible-extract"))
    argv = ["compress", str(tmp_path / "out"), "--k", "6", "--metric", "acc", "--out", str(tmp_path / "c")]
    assert main(argv) == 2
    assert "under 2 filters (flexible-extract, strict-match)" in capsys.readouterr().err
    assert main([*argv, "--filter", "gsm8k=strict-match", "--estimator", "ridge"]) == 0
    samples = json.loads((tmp_path / "c" / "samples.json").read_text())
    new = names[12]
    for t, ds in samples.items():
        write_lm_eval_run(tmp_path / "new", new, {t: {d: scores[new][t][d] for d in ds}},
                          filters=("strict-match", "flexible-extract") if t == "gsm8k" else ("none",))
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "new")]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[0] == new
