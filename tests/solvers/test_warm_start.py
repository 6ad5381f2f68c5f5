"""A warm start given by the caller (issue 31): refused by name unless it is feasible, never dropped silently."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.formulations import BatchInformationGain, RankingRiskReconstruction
from benchsel.instances import make_kmedoids
from benchsel.solvers import InvalidInputError, available_methods, solve

EXACT = ("highs", "scip", "pyomo", "cpsat")


@pytest.mark.parametrize("method", EXACT)
def test_kmedoids_warm_start_of_the_wrong_size_is_refused(method):
    f = make_kmedoids(12, 3, seed=0)
    if method not in available_methods(f):
        pytest.skip(f"{method} is not installed")
    for ws in ([0, 5], [0, 5, 7, 9]):
        with pytest.raises(InvalidInputError, match=rf"^warm_start: expected a feasible selection for this KMedoids, "
                                                    rf"got {len(ws)} items that are not: {len(ws)} medoids selected, "
                                                    rf"k = 3 required"):
            solve(f, method, warm_start=ws, time_limit=30)
    res = solve(f, method, warm_start=[0, 5, 7], time_limit=30)  # the right size is taken
    assert res.extra["warm_start_source"] == "given" and res.termination == "optimal"


def test_other_formulations_refuse_a_warm_start_of_the_wrong_size():
    rng = np.random.default_rng(0)
    h = RankingRiskReconstruction(rng.integers(0, 3, size=(4, 9, 1)).astype(float), budget=3, seed=0)
    with pytest.raises(InvalidInputError, match=r"^warm_start: .* 2 items selected, budget B = 3 required"):
        solve(h, "highs", warm_start=[0, 1], time_limit=30)
    b = BatchInformationGain(rng.random((3, 10)).round(1), k=2, sigma2=1e-2)
    with pytest.raises(InvalidInputError, match=r"^warm_start: .* 3 items selected, k = 2 required"):
        solve(b, "scip" if "scip" in available_methods(b) else "pyomo", warm_start=[0, 1, 2], time_limit=30)
