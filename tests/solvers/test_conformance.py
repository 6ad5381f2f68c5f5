"""Conformance suite: every formulation x every method that accepts it, on tiny instances
with brute-force optima (exact methods reach them; heuristics are feasible and no better)."""
from __future__ import annotations

import pytest

from benchsel.formulations import formulation_classes
from benchsel.solvers import available_methods
from benchsel.solvers.conformance import brute_force, check_method

CASES = []
for cls in formulation_classes():
    for i, f in enumerate(cls.conformance_instances(seed=0)):
        for m in available_methods(f):
            CASES.append(pytest.param(f, m, id=f"{cls.__name__}[{i}]-{m}"))

_OPT: dict[int, float] = {}


def _optimum(f):
    if id(f) not in _OPT:
        _OPT[id(f)] = brute_force(f)[0]
    return _OPT[id(f)]


def test_every_formulation_has_cases():
    """Every registered formulation (the built-in ones and any other, such as tests/support/toys.py's) is
    in the suite."""
    names = {c.__name__ for c in formulation_classes()}
    assert {"KMedoids", "PositionalRepresentation", "PositionalProportionality", "RankingRiskReconstruction",
            "BatchInformationGain", "CheapestItems"} <= names
    for cls in formulation_classes():
        assert cls.conformance_instances(seed=0), f"{cls.__name__} has no conformance instances"


@pytest.mark.parametrize("f,method", CASES)
def test_conformance(f, method):
    assert check_method(f, method, optimum=_optimum(f), time_limit=60) == []
