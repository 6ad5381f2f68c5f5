"""Extending benchsel: a formulation, a method and an estimator added in one file each are found by the registries,
so the registry-driven suites test them with no list edited (the toys of tests/support/toys.py, imported by
conftest.py; docs/extending.md walks through them); and the one registry API they all use."""
from __future__ import annotations

import numpy as np
import pytest
from support.toys import CheapestItems, ShiftedMean

from benchsel import compress, solve
from benchsel.formulations import formulation_classes
from benchsel.formulations.core.errors import InvalidInputError, UnknownMethodError
from benchsel.formulations.core.registry import Registry
from benchsel.formulations.estimation import ESTIMATORS, estimator_names, get_estimator
from benchsel.solvers import available_methods, get_method
from benchsel.solvers.conformance import brute_force, check_method


def test_the_toys_are_in_the_registries_the_suites_iterate():
    f = CheapestItems.conformance_instances(seed=0)[0]
    assert CheapestItems in formulation_classes()  # the conformance suite's formulations
    assert {"toy-sort", "random", "highs"} <= set(available_methods(f))  # ... and the methods it runs on each
    assert get_method("toy-sort").kind == "heuristic"
    assert "toy-shifted-mean" in estimator_names() and ESTIMATORS.get("toy-shifted-mean") is ShiftedMean


@pytest.mark.parametrize("method", ["toy-sort", "highs"])
def test_the_toy_formulation_conforms(method):
    f = CheapestItems([3.0, -1.0, 2.0, 0.5, 2.0], 2)
    assert brute_force(f)[0] == pytest.approx(-0.5)
    assert check_method(f, method, time_limit=30) == []
    res = solve(f, method, time_limit=30)
    assert res.selection.tolist() == [1, 3] and res.feasible and res.objective == pytest.approx(-0.5)


def test_the_toy_formulation_checks_its_input():
    with pytest.raises(InvalidInputError, match=r"^k: "):
        CheapestItems([1.0, 2.0], 3)
    with pytest.raises(InvalidInputError, match=r"^costs: "):
        CheapestItems([[1.0, 2.0]], 1)


def test_the_toy_estimator_runs_in_compress():
    rng = np.random.default_rng(0)
    Y = rng.random((30, 40))
    c = compress(Y[:25], k=8, estimator="toy-shifted-mean", seed=0)
    est = get_estimator("toy-shifted-mean").fit(Y[:25], c.items)
    np.testing.assert_allclose(c.predict(Y[25:, c.items]), est.predict(Y[25:, c.items]))
    gap = np.mean(Y[:25].mean(axis=1) - Y[:25, c.items].mean(axis=1))
    np.testing.assert_allclose(est.predict(Y[25:, c.items]), Y[25:, c.items].mean(axis=1) + gap)


# ------------------------------------------------------------------ the registry API
def test_registry_registers_gets_and_lists_in_order():
    r: Registry[int] = Registry("colour", argument="colour")
    assert r.register("red", 1) == 1 and r.register("blue", 2) == 2
    assert r.get("blue") == 2 and r.names() == ["red", "blue"] and r.items() == [("red", 1), ("blue", 2)]
    assert r.values() == [1, 2] and "red" in r and "green" not in r and len(r) == 2
    r.unregister("red")
    r.unregister("red")  # no error when absent
    assert r.names() == ["blue"]


def test_registry_errors_name_the_argument_and_the_known_names():
    r: Registry[int] = Registry("colour", argument="colour")
    r.register("red", 1)
    with pytest.raises(InvalidInputError, match=r"^colour: unknown colour 'green'; colours: red$"):
        r.get("green")
    with pytest.raises(InvalidInputError, match=r"^colour: unknown colour 3; colours: red$"):
        r.get(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"^name: 'red' is already registered \(colour 1\)"):
        r.register("red", 5)
    assert r.register("red", 1) == 1  # the same entry again: a no-op
    assert r.register("red", 5, replace=True) == 5 and r.get("red") == 5
    with pytest.raises(InvalidInputError, match=r"^name: expected a non-empty colour name \(str\), got ''"):
        r.register("", 1)
    m: Registry[int] = Registry("method", argument="method", listing="registered methods", error=UnknownMethodError)
    with pytest.raises(UnknownMethodError, match=r"^method: unknown method 'x'; registered methods: $"):
        m.get("x")


def test_registry_loader_runs_once_before_the_first_lookup():
    calls = []
    r: Registry[str] = Registry("plugin", load=lambda: calls.append(r.register("built-in", "b")))
    r.register("third-party", "t")
    assert calls == []  # registering loads nothing
    assert r.names() == ["third-party", "built-in"] and calls == ["b"]
    assert r.get("built-in") == "b" and "built-in" in r and calls == ["b"]
