"""``benchsel compress`` / ``estimate`` on a suite: --aggregate, --chance, and their bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest
from support.evallog_formats import model_scores, write_lm_eval_run

from benchsel.benchmarks.cli import main
from benchsel.solvers.compression import load_compressed


@pytest.fixture
def logs(tmp_path):
    scores = model_scores(14, {"arc_easy": 40, "hellaswag": 30}, seed=2)
    for m, tasks in scores.items():
        write_lm_eval_run(tmp_path / "out", m, tasks)
    return tmp_path


def test_weights_and_chance_levels_from_the_command_line(logs, capsys):
    assert main(["compress", str(logs / "out"), "--k", "12", "--metric", "acc", "--out", str(logs / "c"),
                 "--aggregate", "arc_easy=1", "--aggregate", "hellaswag=3", "--chance", "hellaswag=0.25"]) == 0
    assert "suite of 2 tasks: arc_easy" in capsys.readouterr().err
    c = load_compressed(logs / "c")
    assert c.tasks == ["arc_easy", "hellaswag"] and c.estimator.params["chance"] == {"hellaswag": 0.25}
    assert main(["estimate", str(logs / "c"), str(logs / "out"), "--json"]) == 0
    for line in capsys.readouterr().out.splitlines():
        rec = json.loads(line)
        t = rec["tasks"]
        assert rec["aggregate"] == "suite (weighted)"
        assert rec["estimate"] == pytest.approx(0.25 * t["arc_easy"]["estimate"] + 0.75 * t["hellaswag"]["estimate"])
        assert np.isfinite(rec["low"]) and rec["low"] <= rec["estimate"] <= rec["high"]


def test_suite_bad_input_is_one_line_and_exit_2(logs, capsys):
    for extra, msg in ((["--aggregate", "arc_easy=1"], "aggregate: expected a weight for each of the 2 tasks"),
                       (["--chance", "2"], "chance: expected chance levels 0 <= b < 1"),
                       (["--chance", "lots"], "chance: expected a number or TASK=NUMBER"),
                       (["--aggregate", "median"], "aggregate: expected 'macro', 'micro' or a mapping"),
                       (["--pool", "--aggregate", "micro"], "aggregate: given without tasks")):
        assert main(["compress", str(logs / "out"), "--k", "12", "--metric", "acc", "--out", str(logs / "c"),
                     "--force", *extra]) == 2
        assert msg in capsys.readouterr().err, extra
    assert main(["compress", str(logs / "out"), "--k", "3", "--metric", "acc", "--out", str(logs / "c")]) == 2
    assert "--pool" in capsys.readouterr().err
