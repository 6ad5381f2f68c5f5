"""The group-coverage study on a real suite: group rows estimated and their intervals counted."""
from __future__ import annotations

import pytest

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.studies.group_coverage import GROUPS, run

DATA = default_data_dir()


@pytest.mark.skipif(DATA is None or not (DATA / "responses" / "benchmark_prediction").is_dir(),
                    reason="needs the shared data")
def test_group_rows_of_a_real_suite():
    assert DATA is not None
    out = run(DATA, "glue", "interpolation", 60, 0)
    assert set(out) == set(GROUPS["glue"])
    g = out["inference"]
    assert 0 <= g["covered"] <= g["targets"] and 0 <= g["mae"] < 0.2
