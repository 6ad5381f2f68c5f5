"""``benchsel next``: the adaptive loop with lm-eval, end to end on generated logs (the docs' recipe as written)."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
from support.evallog_formats import date_id, model_scores, write_lm_eval_run

from benchsel.benchmarks.cli import main

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"arc_easy": 150, "piqa": 150}


def _sources(path: Path, seed: int = 0) -> tuple[dict, str]:
    scores = model_scores(31, TASKS, seed=seed)
    names = list(scores)
    new = names[20]
    for m in names:
        if m != new:
            write_lm_eval_run(path, m, scores[m])
    return scores, new


def _lm_eval(scores: dict, model: str, samples_file: Path, out: Path, run: int) -> None:
    """What ``lm_eval --model_args pretrained=MODEL --samples FILE --log_samples --output_path OUT`` leaves
    behind: the listed documents, logged under their doc ids, in a new run of the model's folder."""
    samples = json.loads(samples_file.read_text())
    per = {t: {d: scores[model][t][d] for d in ids} for t, ids in samples.items()}
    write_lm_eval_run(out, model, per, samples=samples, date=date_id(run))


def _truth(scores: dict, model: str) -> float:
    return float(np.mean([v["acc"] for t in scores[model].values() for v in t.values()]))


def test_docs_loop_runs_as_written(tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / "adaptive.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text.split("## With lm-eval", 1)[1], re.S).group(1)
    lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    heads = [ln.split()[0] for ln in lines]
    assert heads == ["benchsel", "benchsel", "lm_eval", "benchsel"], heads
    compress, first_next, run, again = (shlex.split(ln) for ln in lines)
    monkeypatch.chdir(tmp_path)
    scores, _ = _sources(tmp_path / compress[2])
    new = run[run.index("--model_args") + 1].split("pretrained=", 1)[1]
    scores[new] = scores["org/model-20"]
    assert main(compress[1:]) == 0
    capsys.readouterr()
    assert main(first_next[1:]) == 0
    samples_file = Path(run[run.index("--samples") + 1])
    logs = Path(run[run.index("--output_path") + 1])
    assert again[3] == str(logs) and samples_file.exists()
    asked: set[str] = set()
    for r in range(40):
        labels = {f"{t}/{d}" for t, ids in json.loads(samples_file.read_text()).items() for d in ids}
        assert not labels & asked, "an item was asked twice"
        asked |= labels
        _lm_eval(scores, new, samples_file, logs, r)
        capsys.readouterr()
        assert main(again[1:]) == 0
        out = capsys.readouterr().out
        if "done:" in out:
            break
    else:
        raise AssertionError("the loop did not stop")
    m = re.search(r"estimate (\S+)  90% interval \[(\S+), (\S+)\]", out)
    est, lo, hi = map(float, m.groups())
    assert lo <= est <= hi and (hi - lo) / 2 <= 0.08 + 1e-9
    assert abs(est - _truth(scores, new)) < 0.15
    assert "done: the interval's half-width is at most 0.08" in out
    assert len(asked) < 300
    # once done, the --json record says so and names no next file
    assert main([*again[1:], "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["state"] == "narrow" and rec["next"] is None and rec["items"] == len(asked)


def test_partial_run_asks_for_the_rest_and_other_logs_are_refused(tmp_path, capsys):
    scores, new = _sources(tmp_path / "out")
    assert main(["compress", str(tmp_path / "out"), "--k", "10", "--metric", "acc", "--pool",
                 "--out", str(tmp_path / "c")]) == 0
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new"), "--out", str(tmp_path / "n.json")]) == 0
    first = json.loads((tmp_path / "n.json").read_text())
    assert first == json.loads((tmp_path / "c" / "samples.json").read_text()), "the first batch is the compression's"
    task, ids = next(iter(first.items()))
    write_lm_eval_run(tmp_path / "new", new, {task: {d: scores[new][task][d] for d in ids[1:]}})
    capsys.readouterr()
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new"), "--out", str(tmp_path / "n.json")]) == 0
    rest = json.loads((tmp_path / "n.json").read_text())
    want = {t: v for t, v in first.items() if t != task}
    want[task] = ids[:1]
    assert rest == want
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new"), "--out", str(tmp_path / "n2.json"),
                 "--design", "importance"]) == 0, "the other design starts from the same first batch"
    assert json.loads((tmp_path / "n2.json").read_text()) == want
    # logs of another compression: items this evaluation never asked
    assert main(["compress", str(tmp_path / "out"), "--k", "10", "--metric", "acc", "--pool", "--seed", "9",
                 "--out", str(tmp_path / "c2")]) == 0
    other = json.loads((tmp_path / "c2" / "samples.json").read_text())
    write_lm_eval_run(tmp_path / "new2", new, {t: {d: scores[new][t][d] for d in v} for t, v in other.items()})
    capsys.readouterr()
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new2")]) == 2
    assert "never asked" in capsys.readouterr().err
    # logs of another benchmark
    write_lm_eval_run(tmp_path / "new3", new, {"hellaswag": {0: {"acc": 1.0}}})
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new3")]) == 2
    assert "not items of the compression" in capsys.readouterr().err
    # bad options are named
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new"), "--half-width", "0.7"]) == 2
    assert "half_width" in capsys.readouterr().err
    assert main(["next", str(tmp_path / "c"), str(tmp_path / "new"), "--batch", "0"]) == 2
    assert "batch" in capsys.readouterr().err


def test_difference_design_loop_replays_deterministically(tmp_path, capsys):
    scores, new = _sources(tmp_path / "out", seed=2)
    assert main(["compress", str(tmp_path / "out"), "--k", "10", "--metric", "acc", "--pool",
                 "--out", str(tmp_path / "c")]) == 0
    opts = ["--design", "difference", "--half-width", "0.1", "--batch", "20", "--seed", "3"]
    logs, nxt = tmp_path / "new", tmp_path / "n.json"
    assert main(["next", str(tmp_path / "c"), str(logs), "--out", str(nxt), *opts]) == 0
    asked: set[str] = set()
    for r in range(30):
        batch = json.loads(nxt.read_text())
        labels = {f"{t}/{d}" for t, ids in batch.items() for d in ids}
        assert not labels & asked, "an item was asked twice"
        asked |= labels
        _lm_eval(scores, new, nxt, logs, r)
        capsys.readouterr()
        assert main(["next", str(tmp_path / "c"), str(logs), "--out", str(nxt), *opts]) == 0
        out = capsys.readouterr().out
        if "done:" in out:
            break
        again = tmp_path / "again.json"
        assert main(["next", str(tmp_path / "c"), str(logs), "--out", str(again), *opts]) == 0
        assert json.loads(again.read_text()) == json.loads(nxt.read_text()), "the replay gives the same batch"
    else:
        raise AssertionError("the loop did not stop")
    est, lo, hi = map(float, re.search(r"estimate (\S+)  90% interval \[(\S+), (\S+)\]", out).groups())
    assert lo <= est <= hi and (hi - lo) / 2 <= 0.1 + 1e-9
    assert abs(est - _truth(scores, new)) < 0.15
