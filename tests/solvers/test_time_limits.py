"""Time limits over every formulation x exact backend: instances too hard for 1 s, checked by
``check_time_limit`` (termination, a feasible incumbent when the formulation knows one, valid bounds,
a generous wall bound that only catches hangs)."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.benchmarks.cli import EXIT_BAD_INPUT, main
from benchsel.formulations import (
    BatchInformationGain,
    KMedoids,
    PositionalProportionality,
    PositionalRepresentation,
    RankingRiskReconstruction,
    formulation_classes,
)
from benchsel.instances import make_kmedoids
from benchsel.instances.responses import make_multimetric
from benchsel.instances.scores import mallows_profile
from benchsel.solvers import InvalidInputError, available_methods, solve
from benchsel.solvers.backends.mps import solve_mps
from benchsel.solvers.conformance import check_time_limit

TIME_LIMIT = 1.0

#: An instance per formulation that no exact backend proves within TIME_LIMIT on a 2-core machine.
HARD = {
    "KMedoids": lambda: KMedoids.from_features(np.random.default_rng(0).uniform(size=(800, 2)), 10,
                                               metric="euclidean"),
    "PositionalRepresentation": lambda: PositionalRepresentation.from_scores(mallows_profile(100, 50, seed=0), g=2),
    "PositionalProportionality": lambda: PositionalProportionality.from_scores(mallows_profile(60, 30, seed=0),
                                                                               eps=0.1),
    "RankingRiskReconstruction": lambda: RankingRiskReconstruction(
        make_multimetric(6, 300, 3, corr=0.5, n_negative=1, seed=0).oriented(), retention=0.2, seed=0),
    "BatchInformationGain": lambda: BatchInformationGain(np.random.default_rng(0).uniform(size=(4, 50)), k=5),
}
_BUILT: dict[str, object] = {}


def _instance(name: str):
    if name not in _BUILT:
        _BUILT[name] = HARD[name]()
    return _BUILT[name]


#: The package's own formulations (a hard instance is each one's own data; tests/support/toys.py's toy has none).
BUILT_IN = [c for c in formulation_classes() if c.__module__.startswith("benchsel.")]


def test_every_formulation_has_a_hard_instance():
    assert {c.__name__ for c in BUILT_IN} == set(HARD)


def _cases():
    out = []
    for cls in BUILT_IN:
        f = _instance(cls.__name__)
        for m in available_methods(f, kind="exact"):
            out.append(pytest.param(cls.__name__, m, id=f"{cls.__name__}-{m}"))
    return out


@pytest.mark.parametrize("name,method", _cases())
def test_time_limit_holds_with_an_incumbent(name, method):
    f = _instance(name)
    assert check_time_limit(f, method, TIME_LIMIT) == []


def test_incumbent_is_the_warm_start_when_the_solver_has_none():
    # a model too large to build in the budget: the call still returns the formulation's warm start
    f = _instance("KMedoids")
    res = solve(f, "pyomo", time_limit=0.5)
    assert res.termination == "time_limit" and res.feasible
    assert res.extra["incumbent"] == "warm_start"
    assert res.objective == pytest.approx(res.extra["warm_start_objective"])
    assert res.objective <= f.evaluate(f.initial_selection()) + 1e-9  # a cut-short heuristic never trails it


def test_positional_warm_starts_are_feasible():
    for name in ("PositionalRepresentation", "PositionalProportionality"):
        f = _instance(name)
        ws = f.initial_selection()
        assert f.is_feasible(ws) and ws.size <= f.n_metrics
    fx = PositionalProportionality.from_scores(mallows_profile(20, 8, seed=1), size=5)
    assert fx.initial_selection().size == 5 and fx.is_feasible(fx.initial_selection())


# ------------------------------------------------------- a huge time limit (issue 31)
def test_a_time_limit_beyond_the_maximum_is_refused_by_name_and_the_maximum_works(tmp_path):
    """time_limit=1e10 raised OverflowError from threading; it is refused by name, 1e7 s (the maximum) runs."""
    f = make_kmedoids(15, 3, seed=0)
    msg = r"^time_limit: expected at most 1e\+07 seconds \(about 116 days; None for no limit\), got 1e\+10"
    for method in [*available_methods(f, kind="exact"), "fasterpam"]:
        with pytest.raises(InvalidInputError, match=msg):
            solve(f, method, time_limit=1e10)
        res = solve(f, method, time_limit=1e7)
        assert res.feasible, method
    mps, _ = f.to_mps(tmp_path / "k.mps")
    with pytest.raises(InvalidInputError, match=msg):
        solve_mps(mps, time_limit=1e10)
    assert main(["solve", str(mps), "--method", "highs", "--time-limit", "1e10"]) == EXIT_BAD_INPUT
