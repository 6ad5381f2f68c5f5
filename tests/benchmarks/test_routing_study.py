"""The routing study: the default's error split into its route's parts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from benchsel.benchmarks.studies.routing import COLUMNS, run, summarise
from benchsel.formulations.core.errors import InvalidInputError


def _irt_matrix(M: int = 60, N: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=M), rng.normal(size=N)
    return (rng.random((M, N)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(float)


@pytest.mark.parametrize("protocol", ["interpolation", "paper-extrapolation"])
def test_parts_of_the_default_error(protocol):
    out = run(_irt_matrix(), protocol, 0, 10)
    assert set(out) == set(COLUMNS)
    # the oracle picks the closer of the two estimates per model: never worse than either
    assert out["oracle"] <= min(out["stacked"], out["model_assisted"]) + 1e-9
    # the default takes one of the two per model: never better than the oracle
    assert out["default"] >= out["oracle"] - 1e-9
    assert 0.0 <= out["share_ma"] <= 1.0
    if out["share_ma"] > 0:
        assert out["ma_routed"] >= 0 and out["stacked_routed"] >= 0
    else:
        assert math.isnan(out["ma_routed"])
    assert all(0 <= out[c] < 100 for c in ("default", "stacked", "model_assisted", "kmedoids_stacked"))


def test_too_few_sources_is_named():
    with pytest.raises(InvalidInputError, match="at least 4 source models"):
        run(_irt_matrix(M=6), "paper-extrapolation", 0, 5)


def test_summary_means_skip_unrouted_splits():
    rows = [{"protocol": "interpolation", "k": 10, **{c: 1.0 for c in COLUMNS}},
            {"protocol": "interpolation", "k": 10, **{c: 3.0 for c in COLUMNS}, "ma_routed": float("nan")}]
    (s,) = summarise(rows)
    assert s["runs"] == 2 and s["default"] == 2.0 and s["ma_routed"] == 1.0
