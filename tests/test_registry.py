"""The method registry: variants per formulation family, listings, refusals."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.formulations import BatchInformationGain, KMedoids
from benchsel.instances import make_kmedoids
from benchsel.solvers import MethodNotApplicableError, available_methods, list_methods, registry, solve
from benchsel.solvers.result import MethodOutput, Termination


def test_a_name_can_have_one_variant_per_formulation_family(monkeypatch):
    list_methods()  # load the built-in methods before working on a copy of the registry
    monkeypatch.setattr(registry, "_REGISTRY", {k: list(v) for k, v in registry._REGISTRY.items()})

    def km_greedy(f, *, time_limit, seed, **kw):
        return MethodOutput(np.sort(f.greedy_selection()), Termination.CONVERGED)

    registry.register_method("greedy", kind="heuristic", accepts=KMedoids, description="BUILD")(km_greedy)
    f = make_kmedoids(20, 3, seed=0)
    res = solve(f, "greedy")
    assert res.feasible and res.selection.tolist() == sorted(f.greedy_selection().tolist())
    m = registry.get_method("greedy")
    assert "BUILD" in m.description and "beta(A)" in m.description
    R = np.random.default_rng(0).integers(0, 2, size=(4, 12)).astype(float)
    b = BatchInformationGain(R, k=2)
    assert m.accepts(b) is None and solve(b, "greedy").feasible
    with pytest.raises(ValueError, match="kind: method 'greedy' is already registered as 'heuristic'"):
        registry.register_method("greedy", kind="exact", accepts=KMedoids)(km_greedy)


def test_listing_and_refusal():
    names = [m.name for m in list_methods()]
    assert names == sorted(names) and {"highs", "pyomo", "cpsat", "fasterpam", "random"} <= set(names)
    R = np.random.default_rng(0).integers(0, 2, size=(4, 12)).astype(float)
    b = BatchInformationGain(R, k=2)
    assert "highs" not in available_methods(b)
    with pytest.raises(MethodNotApplicableError, match="no quadratic integer model.*Methods that accept it: .*exhaustive"):
        solve(b, "highs")
    assert set(available_methods(make_kmedoids(10, 2), kind="exact")) == {"highs", "pyomo", "cpsat"}
