"""The SCIP benchmark scripts' small paths: a tiny MIQP cell end to end, and the summaries and tables."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.benchmarks._rows import read_rows
from benchsel.benchmarks.studies import bayes_miqp, scip_compare
from benchsel.solvers.backends.scip import scip_available

needs_scip = pytest.mark.skipif(not scip_available(), reason="PySCIPOpt is not installed")


@needs_scip
def test_miqp_cell_proven_by_both_and_tabulated(tmp_path):
    rows = bayes_miqp.run("continuous", ["8:2"], None, time_limit=20, quiet=True, out=tmp_path / "m.csv")
    methods = ["exhaustive", "scip", "scip-miqp"]
    assert [r["method"] for r in read_rows([tmp_path / "m.csv"])] == methods
    assert [r["method"] for r in rows] == methods
    assert all(r["proven"] for r in rows)
    e, s, q = rows
    for r in (s, q):
        assert abs(e["beta"] - r["beta"]) <= 1e-6 * max(abs(e["beta"]), 1e-12)
        assert "agrees with exhaustive: True" in r["note"]
    text = "\n".join(bayes_miqp.summarize(rows))
    assert "exhaustive: proved 1 cells" in text and "scip      : proved 1 cells" in text
    assert "scip-miqp : proved 1 cells" in text
    table = bayes_miqp.markdown(rows)
    assert table[0].startswith("| family | cell | \\|U\\| | k |") and "| scip-miqp | s |" in table[0]
    assert table[1].count("---") == table[0].replace("\\|", "").count("|") - 1  # one rule per column
    assert table[2].startswith("| continuous | 8:2 | 8 | 2 | 16 | 28 | proven |")
    only = bayes_miqp.run("continuous", ["8:2"], None, time_limit=20, quiet=True, methods=("scip",))
    assert [r["method"] for r in only] == ["scip"] and only[0]["proven"]


def test_scip_compare_summary_and_table_from_rows():
    rows = [
        {"part": "pmed", "instance": "a", "N": 10, "k": 2, "method": "highs", "objective": 5.0, "proven": True,
         "termination": "optimal", "seconds": 0.5},
        {"part": "pmed", "instance": "a", "N": 10, "k": 2, "method": "scip", "objective": 5.0, "proven": True,
         "termination": "optimal", "seconds": 1.5},
        {"part": "pmed", "instance": "b", "N": 20, "k": 3, "method": "highs", "objective": 7.0, "proven": False,
         "termination": "time_limit", "seconds": 60.0},
        {"part": "pmed", "instance": "b", "N": 20, "k": 3, "method": "scip", "objective": 6.0, "proven": True,
         "termination": "optimal", "seconds": 30.0},
    ]
    lines = scip_compare.summarize(rows)
    assert "pmed     highs : proven 1/2" in lines[0] and "pmed     scip  : proven 2/2" in lines[1]
    assert lines[2].endswith("proven by both: 1, same optimum: 1")
    assert lines[3].endswith("highs 1, scip 0")
    table = scip_compare.markdown(rows)
    assert table[2] == "| pmed | a | 10 | 2 | 0.50 | yes | 1.50 | yes | yes |"
    assert table[3] == "| pmed | b | 20 | 3 | 60.00 | time_limit | 30.00 | yes | no |"


def test_diagonal_room_is_the_most_each_bucket_can_give_up():
    f = bayes_miqp.continuous_instance(20, 3)
    S = 0.5 * (f.data.S + f.data.S.T)
    r = bayes_miqp.diagonal_room(f)
    room = 1.0 / np.diag(np.linalg.inv(S + 1e-12 * np.mean(np.diag(S)) * np.eye(S.shape[0])))
    assert r["max"] == pytest.approx(room.max()) and r["median"] == pytest.approx(np.median(room))
    for b in range(S.shape[0]):  # taking room_b from bucket b alone keeps S positive semi-definite ...
        e = np.zeros(S.shape[0])
        e[b] = 1.0
        assert np.linalg.eigvalsh(S - room[b] * np.outer(e, e)).min() > -1e-9
        # ... and taking 10 % more does not
        assert np.linalg.eigvalsh(S - 1.1 * room[b] * np.outer(e, e)).min() < 0
