"""The method registry: variants per formulation family, listings, refusals."""
from __future__ import annotations

import re

import numpy as np
import pytest

from benchsel.formulations import BatchInformationGain, KMedoids
from benchsel.formulations.core import registry as core_registry
from benchsel.formulations.core.result import MethodOutput, Termination
from benchsel.instances import make_kmedoids
from benchsel.solvers import MethodNotApplicableError, available_methods, list_methods, methods, solve


def test_a_name_can_have_one_variant_per_formulation_family(monkeypatch):
    list_methods()  # load the built-in methods before working on a copy of the registry
    monkeypatch.setattr(core_registry.METHODS, "_entries", dict(core_registry.METHODS._entries))

    def km_greedy(f, *, time_limit, seed, **kw):
        return MethodOutput(np.sort(f.greedy_selection()), Termination.CONVERGED)

    methods.register_method("greedy", kind="heuristic", accepts=KMedoids, description="BUILD")(km_greedy)
    f = make_kmedoids(20, 3, seed=0)
    res = solve(f, "greedy")
    assert res.feasible and res.selection.tolist() == sorted(f.greedy_selection().tolist())
    m = methods.get_method("greedy")
    assert "BUILD" in m.description and "beta(A)" in m.description
    R = np.random.default_rng(0).integers(0, 2, size=(4, 12)).astype(float)
    b = BatchInformationGain(R, k=2)
    assert m.accepts(b) is None and solve(b, "greedy").feasible
    with pytest.raises(ValueError, match="kind: method 'greedy' is already registered as 'heuristic'"):
        methods.register_method("greedy", kind="exact", accepts=KMedoids)(km_greedy)


def test_listing_and_refusal():
    names = [m.name for m in list_methods()]
    assert names == sorted(names) and {"highs", "pyomo", "cpsat", "fasterpam", "random"} <= set(names)
    R = np.random.default_rng(0).integers(0, 2, size=(4, 12)).astype(float)
    b = BatchInformationGain(R, k=2)
    assert "highs" not in available_methods(b)
    with pytest.raises(MethodNotApplicableError,
                       match=r"quadratic objective.*backends that take it: .*scip.*"
                             r"Methods that accept it: .*exhaustive"):
        solve(b, "highs")
    from benchsel.solvers.backends.scip import scip_available

    exact = {"highs", "pyomo", "cpsat"} | ({"scip"} if scip_available() else set())
    assert set(available_methods(make_kmedoids(10, 2), kind="exact")) == exact
    assert ("scip" in available_methods(b)) == scip_available()


def test_declared_options_are_checked_once_with_defaults_filled(monkeypatch):
    from benchsel.formulations.core.errors import InvalidInputError
    from benchsel.formulations.core.options import Option

    list_methods()
    monkeypatch.setattr(core_registry.METHODS, "_entries", dict(core_registry.METHODS._entries))
    seen = {}

    def run(f, *, time_limit, seed, passes, mode, scale):
        seen.update(passes=passes, mode=mode, scale=scale)
        return MethodOutput(np.sort(f.greedy_selection()), Termination.CONVERGED)

    methods.register_method("test-declared", kind="heuristic", accepts=KMedoids, options=(
        Option("passes", 3, "int", low=1), Option("mode", "a", "choice", choices=("a", "b")),
        Option("scale", None, "float", low=0.0, low_open=True)))(run)
    f = make_kmedoids(15, 3, seed=1)
    solve(f, "test-declared")
    assert seen == {"passes": 3, "mode": "a", "scale": None}
    solve(f, "test-declared", passes=5.0, mode="b", scale=2)
    assert seen == {"passes": 5, "mode": "b", "scale": 2.0} and isinstance(seen["passes"], int)
    for bad, text in [({"passes": 0}, "passes: expected an integer >= 1, got 0"),
                      ({"passes": True}, "passes: expected an integer, got bool"),
                      ({"mode": "c"}, "mode: expected one of 'a', 'b', got 'c'"),
                      ({"scale": 0.0}, "scale: expected"),
                      ({"pases": 2}, "options: 'pases' not understood by method 'test-declared'; its options: "
                                     "mode, passes, scale")]:
        with pytest.raises(InvalidInputError, match=re.escape(text)):
            solve(f, "test-declared", **bad)
    m = methods.get_method("test-declared")
    assert m.options == ("passes", "mode", "scale") and [o.name for o in m.specs] == list(m.options)
    assert m.check_options(f, {"passes": 2}) == {"passes": 2, "mode": "a", "scale": None}


def test_exact_backends_check_their_options_and_the_formulation_s_model_options():
    from benchsel.formulations.core.errors import InvalidInputError

    f = make_kmedoids(12, 3, seed=2)
    m = methods.get_method("highs")
    opts = m.check_options(f, {"model": "radius", "mip_rel_gap": 0.01})
    assert opts["model"] == "radius" and opts["mip_rel_gap"] == 0.01 and opts["warm_start"] == "auto"
    with pytest.raises(InvalidInputError, match="model: expected one of"):
        m.check_options(f, {"model": "bogus"})
    with pytest.raises(InvalidInputError, match="mip_rel_gap: expected a real number"):
        solve(f, "highs", mip_rel_gap="abc")
    with pytest.raises(InvalidInputError, match="threads: expected an integer >= 1"):
        solve(f, "cpsat", threads=0)
