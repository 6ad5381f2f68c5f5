"""Every backend passes one shared suite of known-answer linear models (infeasible and unbounded included)."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.solvers import InvalidInputError, ModelBuilder, Termination
from benchsel.solvers.backends.cpsat import scale_model, solve_model_cpsat
from benchsel.solvers.backends.highs import solve_model_highs
from benchsel.solvers.backends.pyomo import selection_from_pyomo, solve_pyomo_model, to_pyomo
from benchsel.solvers.backends.scip import scip_available, solve_model_scip

needs_scip = pytest.mark.skipif(not scip_available(), reason="PySCIPOpt is not installed")


def knapsack():
    """max 5a + 4b + 3c s.t. 2a + 3b + c <= 5 (binary) -> a, b: value 9."""
    b = ModelBuilder("knap")
    x = b.add_vars("x", 3, lb=0, ub=1, integer=True, cost=[-5.0, -4.0, -3.0])
    b.add_rows("cap", rows=[0, 0, 0], cols=x, vals=[2.0, 3.0, 1.0], ub=[5.0])
    return b.build(selection_block="x", selection_items=np.arange(3), objective_sign=-1), 9.0, [0, 1]


def mixed_fractional():
    """min 0.1 t + sum_i c_i x_i, t >= 0.3 * sum x - 0.2, sum x = 2 over 4 binaries, rational data."""
    b = ModelBuilder("mixed")
    x = b.add_vars("x", 4, lb=0, ub=1, integer=True, cost=[0.5, 0.25, 0.75, 1.0 / 3.0])
    t = b.add_vars("t", 1, lb=0, ub=10, cost=0.1)
    b.add_rows("card", rows=np.zeros(4, int), cols=x, vals=1.0, lb=[2], ub=[2])
    b.add_rows("tdef", rows=np.zeros(5, int), cols=np.r_[t, x], vals=np.r_[1.0, -0.3 * np.ones(4)], lb=[-0.2])
    b.add_objective_constant(1.5)
    # best pair {1, 3}: 0.25 + 1/3; t = 0.4 -> 0.04; + 1.5
    return b.build(selection_block="x", selection_items=np.arange(4)), 1.5 + 0.25 + 1 / 3 + 0.04, [1, 3]


def infeasible():
    b = ModelBuilder("infeas")
    x = b.add_vars("x", 2, lb=0, ub=1, integer=True, cost=1.0)
    b.add_rows("need", rows=[0, 0], cols=x, vals=1.0, lb=[3.0])
    return b.build(selection_block="x", selection_items=np.arange(2))


def unbounded():
    b = ModelBuilder("unb")
    x = b.add_vars("x", 2, lb=0, ub=1, integer=True)
    z = b.add_vars("z", 1, lb=0, cost=-1.0)
    b.add_rows("link", rows=[0, 0, 0], cols=np.r_[x, z], vals=[1.0, 1.0, -1.0], ub=[1.0])
    return b.build(selection_block="x", selection_items=np.arange(2))


def _highs(model):
    sel, term, bound, _ = solve_model_highs(model, time_limit=30)
    return sel, term, bound


def _cpsat(model):
    sel, term, bound, _ = solve_model_cpsat(model, time_limit=30)
    return sel, term, bound


def _pyomo(model):
    m = to_pyomo(model)
    ok, term, bound, _ = solve_pyomo_model(m, time_limit=30)
    return (selection_from_pyomo(m) if ok else None), term, bound


def _scip(model):
    sel, term, bound, _ = solve_model_scip(model, time_limit=30)
    return sel, term, bound


BACKENDS = {"highs": _highs, "cpsat": _cpsat, "pyomo": _pyomo, "scip": _scip}
ALL = [pytest.param(b, marks=needs_scip) if b == "scip" else b for b in BACKENDS]


def _run(backend, model):
    return BACKENDS[backend](model)


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("case", [knapsack, mixed_fractional])
def test_known_optimum(backend, case):
    model, optimum, selection = case()
    sel, term, bound = _run(backend, model)
    assert term == Termination.OPTIMAL
    assert sel.tolist() == selection
    # bound is on the minimised model objective; convert with the sign
    assert model.objective_sign * bound == pytest.approx(optimum, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("backend", ALL)
def test_infeasible(backend):
    sel, term, bound = _run(backend, infeasible())
    assert sel is None
    assert term in (Termination.INFEASIBLE, Termination.INFEASIBLE_OR_UNBOUNDED)
    assert bound is None


@pytest.mark.parametrize("backend", ["highs", "pyomo", pytest.param("scip", marks=needs_scip)])
def test_unbounded(backend):
    _sel, term, bound = _run(backend, unbounded())
    assert term in (Termination.UNBOUNDED, Termination.INFEASIBLE_OR_UNBOUNDED)
    assert bound is None


def test_cpsat_refuses_unbounded_variables_clearly():
    with pytest.raises(InvalidInputError, match=r"finite bounds.*z\[0\]"):
        solve_model_cpsat(unbounded(), time_limit=5)


def test_cpsat_scaling_is_exact_for_rationals_and_recorded():
    model, _, _ = mixed_fractional()
    sm = scale_model(model)
    assert sm.max_coef_error == 0.0 and sm.rounded_rows == 0  # rational rows: integer coefficients
    # the cardinality row is equivalent to its copy; the row with the continuous t is widened by its grid
    assert sm.exact_rows == 1 and sm.relaxed_rows == 1 and not sm.exact_copy
    assert 0 < sm.row_slack[1] / sm.row_scale[1] <= 1e-8  # half a grid step of t (coefficient 1)
    assert sm.obj_rounding < 1e-8  # 1/3 in the objective is rational: exact up to the continuous grid
    _, term, _, extra = solve_model_cpsat(model, time_limit=30)
    assert term == Termination.OPTIMAL
    assert extra["cpsat_rounded_rows"] == 0
    assert extra["cpsat_obj_scale"] >= 1


def test_cpsat_rounds_irrational_rows_and_records_error():
    b = ModelBuilder("irr")
    x = b.add_vars("x", 3, lb=0, ub=1, integer=True, cost=[np.pi, np.e, np.sqrt(2)])
    b.add_rows("c", rows=[0, 0, 0], cols=x, vals=[np.sqrt(3), np.sqrt(5), np.sqrt(7)], lb=[3.0])
    model = b.build(selection_block="x", selection_items=np.arange(3))
    sm = scale_model(model, digits=6)
    assert sm.exact_rows == 0
    assert 0 < sm.max_coef_error < 1e-5
    sel, term, bound, extra = solve_model_cpsat(model, time_limit=30, digits=6)
    assert term == Termination.OPTIMAL
    assert extra["cpsat_rounded_rows"] == 1 and extra["cpsat_obj_rounding"] > 0
    # sqrt3 + sqrt5 = 3.97 >= 3 (cost pi + e) vs sqrt3 + sqrt7 = 4.38 (pi + 1.41) vs sqrt5 + sqrt7 (e + 1.41 = 4.13)
    assert sel.tolist() == [1, 2]
    assert bound <= np.e + np.sqrt(2) + 1e-9


def test_model_builder_checks():
    b = ModelBuilder("chk")
    x = b.add_vars("x", 2)
    with pytest.raises(InvalidInputError, match="already used"):
        b.add_vars("x", 2)
    with pytest.raises(InvalidInputError, match="identifier"):
        b.add_vars("bad name", 2)
    with pytest.raises(InvalidInputError, match="column indices"):
        b.add_rows("r", rows=[0], cols=[5], vals=[1.0], lb=[0.0])
    with pytest.raises(InvalidInputError, match="no finite bound"):
        b.add_rows("r2", rows=[0], cols=[x[0]], vals=[1.0])


def test_model_builder_sums_duplicates_and_labels():
    b = ModelBuilder("dup")
    x = b.add_vars("x", (2, 3))
    b.add_rows("r", rows=[0, 0, 0], cols=[x[1, 2], x[1, 2], x[0, 0]], vals=[1.0, 2.0, 0.0], lb=[1.0])
    m = b.build(selection_block="x", selection_items=np.arange(6))
    assert m.A.nnz == 1 and m.A[0, x[1, 2]] == 3.0
    assert m.column_label(int(x[1, 2])) == "x[1,2]"
    assert m.row_label(0) == "r[0]"


# ------------------------------------------------------------ quadratic objectives
def convex_miqp():
    """min sum_i (w_i - a_i)^2, w_i = 0 unless z_i, sum z = 1: keep the largest |a_i| (item 1): 0.25 + 1."""
    a = np.array([0.5, -1.5, 1.0])
    b = ModelBuilder("cmiqp")
    z = b.add_vars("z", 3, lb=0, ub=1, integer=True)
    w = b.add_vars("w", 3, lb=-2, ub=2, cost=-2 * a)
    b.add_cardinality("card", z, 1)
    r = np.arange(3)
    b.add_rows("up", rows=np.r_[r, r], cols=np.r_[w, z], vals=np.r_[np.ones(3), -2 * np.ones(3)], ub=np.zeros(3))
    b.add_rows("lo", rows=np.r_[r, r], cols=np.r_[w, z], vals=np.r_[np.ones(3), 2 * np.ones(3)], lb=np.zeros(3))
    b.add_quadratic_objective(w, w, 2.0)
    b.add_objective_constant(float(a @ a))
    return b.build(selection_block="z", selection_items=np.arange(3)), 1.25, [1]


def nonconvex_miqp():
    """min -x0 x1 - 2 x1 x2 + 3 x0 x2 over pairs of binaries: {1, 2} at -2 (an indefinite Q)."""
    b = ModelBuilder("ncmiqp")
    x = b.add_vars("x", 3, lb=0, ub=1, integer=True)
    b.add_cardinality("card", x, 2)
    b.add_quadratic_objective([0, 1, 0], [1, 2, 2], [-2.0, -4.0, 6.0])  # 1/2 x'Tx with T upper: the products above
    return b.build(selection_block="x", selection_items=np.arange(3)), -2.0, [1, 2]


def test_quadratic_builder_symmetrises_and_evaluates():
    model, opt, _sel = nonconvex_miqp()
    Q = model.Q.toarray()
    assert np.allclose(Q, Q.T) and Q[0, 1] == -1.0 and Q[1, 2] == -2.0 and Q[0, 2] == 3.0
    x = np.array([0.0, 1.0, 1.0])
    assert model.objective_value(x) == pytest.approx(opt)
    assert model.is_quadratic and model.summary()["q_nnz"] == 6


QUADRATIC = [pytest.param("scip", marks=needs_scip), pytest.param("pyomo", marks=needs_scip)]


@pytest.mark.parametrize("backend", QUADRATIC)
@pytest.mark.parametrize("case", [convex_miqp, nonconvex_miqp])
def test_quadratic_known_optimum(backend, case):
    model, optimum, selection = case()
    if backend == "scip":
        sel, term, bound = _scip(model)
    else:
        m = to_pyomo(model)
        _ok, term, bound, _ = solve_pyomo_model(m, solver="scip", time_limit=30)
        sel = selection_from_pyomo(m)
    assert term == Termination.OPTIMAL
    assert sel.tolist() == selection
    assert bound == pytest.approx(optimum, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_linear_backends_refuse_quadratic_models_naming_takers(backend):
    model, _, _ = convex_miqp()
    with pytest.raises(InvalidInputError, match=r"quadratic objective.*backends that take it: ") as e:
        BACKENDS[backend](model)
    assert ("scip" in str(e.value)) == scip_available()


def test_highs_answer_checked_against_its_own_objective():
    # HiGHS 1.16 returns this warm start (3 metrics) as "optimal" with objective and bound 1.0 when presolve
    # is on; the backend notices the mismatch and solves again without the start
    from benchsel import solve
    from benchsel.formulations import PositionalRepresentation
    from benchsel.instances import mallows_profile

    f = PositionalRepresentation.from_scores(mallows_profile(41, 5, phi=0.7, seed=6), g=20)
    model = f.linear_model()
    sel, term, bound, _extra = solve_model_highs(model, warm_start=np.array([4, 27, 34]))
    assert term == Termination.OPTIMAL and sel.size == 2 and bound == pytest.approx(2.0)
    assert f.is_feasible(sel)
    res = solve(f, "highs", warm_start=[4, 27, 34])
    assert res.termination == "optimal" and res.objective == 2 and res.bound == pytest.approx(2.0)
