"""The positional paper's headline comparison (benchmarks/studies/positional_lite.py) on the shared HELM table."""
from __future__ import annotations

import csv

from support.data import needs_data

from benchsel.benchmarks.studies import positional_lite


@needs_data("positional", "helm", "accuracy.tsv")
def test_lite_study_writes_proven_rows(tmp_path):
    assert positional_lite.main(["--policies", "drop", "--no-groups", "--time-limit", "30", "--out",
                                 str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "lite.csv").open()))
    assert len(rows) == 3 + len(positional_lite.EPS) + len(positional_lite.GS)
    assert all(r["termination"] == "optimal" and r["policy"] == "drop" for r in rows)
    for r in rows:
        sel = [int(i) for i in r["selection"].split()]
        if "superset" in r["question"]:  # the lite subset is forced and costs at least the free optimum
            assert {0, 2, 3, 4, 7} <= set(sel)  # MMLU, NarrativeQA, NQ closed, NQ open, OpenbookQA
            assert float(r["found"]) == len(sel) >= float(r["optimum_without_include"])
        elif "largest deviation" not in r["question"]:  # same guarantee as the lite subset, never more metrics
            assert float(r["found"]) <= 5
    assert "| drop | 16 x 29 |" in (tmp_path / "lite.md").read_text()
