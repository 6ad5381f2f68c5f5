"""MPS export: read back with highspy, solve, same optimum; deterministic bytes; name map."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.instances import make_kmedoids
from benchsel.solvers import InvalidInputError, ModelBuilder, solve
from benchsel.solvers.mps import read_name_map, selection_from_values, write_mps


def _solve_mps(path):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    names = h.getLp().col_names_
    vals = h.getSolution().col_value
    return h.getInfo().objective_function_value, dict(zip(names, vals)), h


@pytest.mark.parametrize("model", ["assignment", "radius"])
def test_kmedoids_round_trip(tmp_path, model):
    f = make_kmedoids(30, 3, seed=1, weighted=True)
    mps, js = f.to_mps(tmp_path / "km.mps", model=model)
    obj, values, _ = _solve_mps(mps)
    nm = read_name_map(mps)
    sel = selection_from_values(nm, values)
    direct = solve(f, "highs", model=model)
    assert obj * nm["objective_sign"] == pytest.approx(direct.objective, rel=1e-9)
    assert f.evaluate(sel) == pytest.approx(direct.objective, rel=1e-9)
    assert nm["formulation"] == "KMedoids" and nm["formulation_params"]["k"] == 3
    assert nm["meta"]["variant"] == model
    assert [b["name"] for b in nm["columns"]][0] == "y"


def test_round_trip_with_constant_ranges_bounds_and_max_sense(tmp_path):
    b = ModelBuilder("mix")
    x = b.add_vars("x", 3, lb=0, ub=1, integer=True, cost=[-2.0, -3.0, -1.5])
    n = b.add_vars("n", 1, lb=-2, ub=4, integer=True, cost=0.5)
    t = b.add_vars("t", 1, lb=-np.inf, ub=np.inf, cost=0.1)
    b.add_rows("rng", rows=[0, 0, 0, 0], cols=np.r_[x, n], vals=[1.0, 1.0, 1.0, 1.0], lb=[1.0], ub=[2.5])
    b.add_rows("tdef", rows=[0, 0], cols=np.r_[t, x[0]], vals=[1.0, -1.0], lb=[-0.25])
    b.add_rows("eq", rows=[0], cols=n, vals=[1.0], lb=[-1.0], ub=[-1.0])
    b.add_objective_constant(7.25)
    m = b.build(selection_block="x", selection_items=np.array([10, 11, 12]), objective_sign=-1)
    from benchsel.solvers.highs_backend import solve_model_highs

    sel, term, bound, _ = solve_model_highs(m)
    mps, _ = write_mps(m, tmp_path / "mix.mps")
    obj, values, _ = _solve_mps(mps)
    assert obj == pytest.approx(bound, abs=1e-9)
    assert selection_from_values(read_name_map(mps), values).tolist() == sel.tolist()
    text = mps.read_text()
    assert "OBJSENSE" not in text and "CONST" in text and "RANGES" in text and " FR BND" in text
    assert all(len(tok) <= 8 for line in text.splitlines()[1:] for tok in line.split()[:3] if not tok.startswith("'"))


def test_writer_is_deterministic(tmp_path):
    f = make_kmedoids(25, 3, seed=2)
    a, _ = f.to_mps(tmp_path / "a.mps", model="radius")
    b, _ = f.to_mps(tmp_path / "b.mps", model="radius")
    assert a.read_bytes() == b.read_bytes()


def test_lazy_models_are_refused(tmp_path):
    f = make_kmedoids(150, 3, seed=2)
    with pytest.raises(InvalidInputError, match="MPS holds static models"):
        write_mps(f.linear_model(model="benders", allow_lazy=True), tmp_path / "x.mps")
    with pytest.raises(InvalidInputError, match="not a benchsel MPS name map"):
        (tmp_path / "y.mps.json").write_text('{"format": "other"}')
        read_name_map(tmp_path / "y.mps")
