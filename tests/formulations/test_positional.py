"""Positional representation and proportionality (SPEC F2, F3): ranking, rows, models, diagnostics, bad input."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.formulations import PositionalProportionality as PP
from benchsel.formulations import PositionalRepresentation as PR
from benchsel.formulations.rankings import count_table, rank_table, scoring_vector
from benchsel.solvers import InvalidInputError, solve
from benchsel.solvers.conformance import brute_force


# ------------------------------------------------------------------ helpers
def subsets(n, sizes=None):
    for k in sizes or range(1, n + 1):
        for c in itertools.combinations(range(n), k):
            yield np.asarray(c, dtype=np.int64)


def rep_feasible_by_definition(P, K, g, groups=None):
    """C(K∩G, r, a) >= floor(C(G, r, a)/g) straight from the definition."""
    m, n = P.shape
    groups = groups or [list(range(n))]
    for G in groups:
        KG = [i for i in K if i in G]
        for a in range(m):
            for r in range(1, m + 1):
                cg = sum(P[a, i] <= r for i in G)
                ck = sum(P[a, i] <= r for i in KG)
                if ck < cg // g:
                    return False
    return True


def prop_feasible_by_definition(P, K, eps):
    m, n = P.shape
    if len(K) == 0:
        return False
    e = Fraction(eps).limit_denominator(10**6)
    for a in range(m):
        for r in range(1, m + 1):
            cn = Fraction(int((P[a] <= r).sum()), n)
            ck = Fraction(int((P[a, K] <= r).sum()), len(K))
            if abs(cn - ck) > e:
                return False
    return True


tables = st.integers(0, 10**6).flatmap(
    lambda seed: st.tuples(st.just(seed), st.integers(2, 5), st.integers(2, 7), st.integers(1, 4))
)


# ------------------------------------------------------------------ ranking
def test_tie_policies_on_a_known_column():
    t = np.array([[3.0], [1.0], [3.0], [2.0]])
    assert rank_table(t, ties="min").positions[:, 0].tolist() == [1, 4, 1, 3]
    assert rank_table(t, ties="max").positions[:, 0].tolist() == [2, 4, 2, 3]
    assert rank_table(t, ties="ordinal").positions[:, 0].tolist() == [1, 4, 2, 3]
    assert rank_table(t, higher_is_better=False, ties="min").positions[:, 0].tolist() == [3, 1, 3, 2]


def test_missing_last_is_tied_for_last_and_drop_removes_rows():
    t = np.array([[np.nan, 1.0], [1.0, 2.0], [2.0, np.nan], [np.nan, 0.5]])
    p = rank_table(t, missing="last", ties="min").positions
    assert p[:, 0].tolist() == [3, 2, 1, 3]
    assert p[:, 1].tolist() == [2, 1, 4, 3]
    assert rank_table(t, missing="last", ties="max").positions[:, 0].tolist() == [4, 2, 1, 4]
    prof = rank_table(t, missing="drop")
    assert prof.positions.tolist() == [[1, 1]]
    assert prof.dropped == ("0", "2", "3") and prof.n_missing == 3


def test_dash_cells_are_missing_and_directions_come_from_attrs():
    df = pd.DataFrame({"acc": [0.9, "-", 0.7], "ece": [0.1, 0.3, 0.2]}, index=["a", "b", "c"])
    df.attrs["lower_is_better"] = ["ece"]
    prof = rank_table(df, missing="last")
    assert prof.positions[:, 0].tolist() == [1, 3, 2]
    assert prof.positions[:, 1].tolist() == [1, 3, 2]  # ece: lower is better
    assert prof.higher_is_better.tolist() == [True, False]
    # an explicit flag overrides the attribute
    assert rank_table(df, missing="last", higher_is_better=True).positions[:, 1].tolist() == [3, 1, 2]
    assert rank_table(df, missing="last", higher_is_better={"ece": True}).positions[:, 1].tolist() == [3, 1, 2]


@given(tables)
@settings(max_examples=25, deadline=None)
def test_count_table_matches_definition(args):
    seed, m, n, _ = args
    P = rank_table(np.random.default_rng(seed).integers(0, 3, size=(m, n))).positions
    C = count_table(P)
    for a in range(m):
        for r in range(1, m + 1):
            assert C[a, r - 1] == (P[a] <= r).sum()


# ------------------------------------------------------------ representation
@given(tables)
@settings(max_examples=30, deadline=None)
def test_presolved_rows_define_the_same_feasible_set(args):
    """SPEC's presolve (first cut-off per h, duplicates, dominance) keeps exactly the feasible set."""
    seed, m, n, g = args
    g = min(g, n)
    rng = np.random.default_rng(seed)
    f = PR.from_scores(rng.integers(0, 3, size=(m, n)), g=g)
    B, h, _ = f.cover_rows(presolve=True)
    Braw, hraw, _ = f.cover_rows(presolve=False)
    for K in itertools.chain([np.zeros(0, np.int64)], subsets(n)):
        by_def = rep_feasible_by_definition(f.positions, K.tolist(), g)
        assert f.check(K).feasible == by_def
        assert bool(np.all(B[:, K].sum(axis=1) >= h)) == by_def
        assert bool(np.all(Braw[:, K].sum(axis=1) >= hraw)) == by_def


def test_representation_groups_hold_within_every_group():
    rng = np.random.default_rng(3)
    P = rank_table(rng.normal(size=(4, 7))).positions
    groups = [[0, 1, 2, 3], [2, 3, 4, 5, 6]]
    f = PR(P, 2, groups=groups)
    B, h, _ = f.cover_rows()
    for K in subsets(7):
        ok = rep_feasible_by_definition(P, K.tolist(), 2, groups)
        assert f.check(K).feasible == ok
        assert bool(np.all(B[:, K].sum(axis=1) >= h)) == ok
    res = solve(f, "highs")
    assert res.termination == "optimal" and res.objective == brute_force(f)[0]
    same = PR(P, 2, groups=[list(range(7))])
    assert solve(same, "highs").objective == solve(PR(P, 2), "highs").objective


def test_check_reports_violated_pairs():
    P = np.array([[1, 2, 3, 1], [2, 1, 1, 2], [3, 3, 2, 3]])  # 3 alternatives x 4 metrics
    f = PR(P, 2, alternatives=["x", "y", "z"])
    chk = f.check([0])
    assert not chk.feasible and chk.n_violations > 0
    assert any("alternative 'y'" in r for r in chk.reasons)
    v = f.violations([0])
    assert set(v.columns) == {"group", "alternative", "r", "C_N", "C_K", "required"}
    assert (v["C_K"] < v["required"]).all() and len(v) == chk.n_violations
    pairs = chk.details["violated_pairs"]
    assert pairs.shape == (chk.n_violations, 2)


def test_g_equal_one_needs_every_metric_and_lower_bound_holds():
    f = PR.from_scores(np.random.default_rng(0).normal(size=(5, 6)), g=1)
    assert solve(f, "highs").objective == 6
    f2 = PR.from_scores(np.random.default_rng(0).normal(size=(5, 6)), g=4)
    assert solve(f2, "highs").objective >= f2.lower_bound() == 1


def test_contract_dataframe_selection_is_column_positions_and_policies_recorded():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(6, 8)), index=[f"m{i}" for i in range(6)],
                      columns=[f"task{j}" for j in range(8)])
    df.iloc[2, 3] = np.nan
    f = PR.from_scores(df, g=2, missing="drop")
    assert f.n_items == 8 and f.n_alternatives == 5
    for method in ("highs", "cpsat", "greedy-color"):
        res = solve(f, method, time_limit=30)
        assert res.feasible
        assert res.selection.max() < df.shape[1]
        assert res.extra["missing"] == "drop" and res.extra["ties"] == "min"
        assert res.extra["n_alternatives_dropped"] == 1
    fp = PP.from_scores(df, eps=0.1, missing="drop")
    for method in ("highs", "cpsat", "sample"):
        res = solve(fp, method, time_limit=30)
        assert res.feasible and res.extra["missing"] == "drop" and res.extra["eps_rational"] == "1/10"
        assert fp.is_proportional(res.selection)


def test_params_rebuild_equal_formulations():
    rng = np.random.default_rng(2)
    t = rng.integers(0, 4, size=(5, 7)).astype(float)
    for f in (PR.from_scores(t, g=2, ties="max"), PR.from_scores(t, g=2, groups=[[0, 1, 2], [3, 4, 5, 6]]),
              PP.from_scores(t, eps=0.2), PP.from_scores(t, size=3)):
        f2 = type(f)(**f.get_params())
        assert np.array_equal(f2.positions, f.positions)
        assert f2.get_params().keys() == f.get_params().keys()
        sel = f.random_selection(np.random.default_rng(0))
        assert f2.evaluate(sel) == f.evaluate(sel) and f2.check(sel).feasible == f.check(sel).feasible


# ------------------------------------------------------------ proportionality
@given(tables, st.sampled_from([0.1, 0.2, 0.25, 1 / 3, 0.4]))
@settings(max_examples=25, deadline=None)
def test_proportionality_check_and_model_rows_match_definition(args, eps):
    seed, m, n, _ = args
    f = PP.from_scores(np.random.default_rng(seed).integers(0, 3, size=(m, n)), eps=eps)
    S, H, sizes, _ = f._size_indexed_rows
    col = {int(k): j for j, k in enumerate(sizes)}
    for K in subsets(n):
        ok = prop_feasible_by_definition(f.positions, K, eps)
        assert f.check(K).feasible == ok == f.is_proportional(K)
        k = K.size
        by_rows = k in col and bool(np.all(S[:, K].sum(axis=1) >= H[:, col[k]]))
        assert by_rows == ok


def test_exact_boundary_eps_is_rational():
    # n = 10, |K| = 5: deviations are multiples of 1/10; eps = 0.1 must admit a deviation of exactly 1/10
    P = np.ones((2, 10), dtype=np.int64)
    P[0, :3] = 1
    P[0, 3:] = 2
    P[1, :3] = 2
    P[1, 3:] = 1
    f = PP(P, eps=0.1)
    K = np.array([0, 1, 5, 6, 7])  # share of metrics ranking alternative 0 first: 2/5 vs 3/10
    assert f.max_deviation(K) == pytest.approx(0.1)
    assert f.check(K).feasible
    assert not PP(P, eps=0.0999).check(K).feasible


def test_proportionality_exact_methods_agree_with_brute_force_and_cpsat_scales_exactly():
    rng = np.random.default_rng(5)
    t = rng.integers(0, 4, size=(5, 9)).astype(float)
    f = PP.from_scores(t, eps=0.1)
    opt = brute_force(f)[0]
    for model in ("direct", "size-indexed"):
        r = solve(f, "highs", model=model)
        assert r.termination == "optimal" and r.objective == opt
        c = solve(f, "cpsat", model=model, time_limit=30)
        assert c.termination == "optimal" and c.objective == opt
        assert c.extra["cpsat_rounded_rows"] == 0
    fx = PP.from_scores(t, eps=0.1, size=4)
    opt_fx = brute_force(fx)[0]
    r = solve(fx, "highs")
    c = solve(fx, "cpsat", time_limit=30)
    assert r.objective == pytest.approx(opt_fx) and c.objective == pytest.approx(opt_fx)
    assert c.extra["cpsat_rounded_rows"] == 0 and c.extra["cpsat_obj_scale"] == 9 * 4
    assert r.extra["proportional"] == (opt_fx <= 0.1 + 1e-12)
    with pytest.raises(InvalidInputError, match="size-indexed"):
        fx.linear_model(model="size-indexed")


def test_admissible_sizes_are_a_necessary_condition():
    rng = np.random.default_rng(7)
    f = PP.from_scores(rng.normal(size=(4, 8)), eps=0.2)
    adm = set(f.admissible_sizes().tolist())
    for K in subsets(8):
        if f.is_proportional(K):
            assert K.size in adm
    assert 8 in adm


# -------------------------------------------------------------- diagnostics
@given(tables)
@settings(max_examples=25, deadline=None)
def test_scoring_rule_differences_are_within_the_deviation_bound(args):
    seed, m, n, _ = args
    rng = np.random.default_rng(seed)
    f = PP.from_scores(rng.integers(0, 4, size=(m, n)), eps=0.3)
    K = np.sort(rng.choice(n, size=rng.integers(1, n + 1), replace=False))
    df = f.scoring_rule_check(K, rules=("borda", "plurality", "veto", f"top-{max(1, m // 2)}"))
    assert df["within_bound"].all()
    assert (df["abs_diff"] <= df["bound"] + 1e-12).all()
    full = f.scoring_rule_check(np.arange(n))
    assert np.allclose(full["abs_diff"], 0.0)


def test_scoring_rule_values_match_direct_sums():
    P = np.array([[1, 2, 1], [2, 1, 3], [3, 3, 2]])
    f = PP(P, eps=0.3, alternatives=["a", "b", "c"])
    df = f.scoring_rule_check([0, 2], rules=("borda", "plurality")).set_index(["rule", "alternative"])
    # Borda s = (2, 1, 0): alternative a on N: (2 + 1 + 2)/3; on K = {0, 2}: (2 + 2)/2
    assert df.loc[("borda", "a"), "score_N"] == pytest.approx(5 / 3)
    assert df.loc[("borda", "a"), "score_K"] == pytest.approx(2.0)
    assert df.loc[("plurality", "b"), "score_N"] == pytest.approx(1 / 3)
    assert df.loc[("plurality", "b"), "score_K"] == pytest.approx(0.0)
    assert scoring_vector("top-2", 3)[1].tolist() == [1, 1, 0]


def test_deviation_table_and_bounds():
    rng = np.random.default_rng(11)
    f = PP.from_scores(rng.normal(size=(6, 10)), eps=0.2)
    K = np.array([0, 3, 5])
    dev = f.deviations(K, top=5)
    assert len(dev) == 5 and dev["deviation"].is_monotonic_decreasing
    assert dev["deviation"].iloc[0] == pytest.approx(f.max_deviation(K))
    b = f.bounds(K)
    assert b["upper_bound"] == pytest.approx(math.log(12) / 0.04)
    assert b["sample_size"] == 10 and b["found"] == 3
    assert b["worst_case_lower_bound"] == pytest.approx(math.log(6) / (288 * 0.04))
    ct = f.count_table(K)
    assert ct.shape == (6, 6) and (ct.iloc[:, -1] == 3).all()
    r = PR.from_scores(rng.normal(size=(6, 10)), g=2)
    rb = r.bounds(solve(r, "greedy-color").selection)
    assert rb["lower_bound"] == 5 and rb["found"] <= rb["greedy_colour_bound"]


# ----------------------------------------------------------------- bad input
@pytest.mark.parametrize("eps", [0, -0.1, 1, 1.5, float("nan"), "0.1"])
def test_bad_eps(eps):
    with pytest.raises(InvalidInputError, match="eps"):
        PP.from_scores(np.eye(3), eps=eps)


@pytest.mark.parametrize("g", [0, -1, 4, 2.5])
def test_bad_g(g):
    with pytest.raises(InvalidInputError, match="g"):
        PR.from_scores(np.eye(3), g=g)


def test_bad_tables():
    with pytest.raises(InvalidInputError, match="no score at all"):
        PR.from_scores(pd.DataFrame({"a": [1.0, 2.0], "b": [np.nan, np.nan]}), g=1, missing="last")
    t = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [1.0, 2.0, np.nan]}, index=["x", "y", "z"])
    with pytest.raises(InvalidInputError, match=r"2 missing scores.*'y'.*'a'") as e:
        PR.from_scores(t, g=1)
    assert "missing='last'" in str(e.value)
    with pytest.raises(InvalidInputError, match=r"non-numeric.*'b'.*'zz'"):
        PR.from_scores(pd.DataFrame({"a": [1, 2], "b": ["1.5", "abc"]}, index=["yy", "zz"]), g=1)
    with pytest.raises(InvalidInputError, match="removes all"):
        PR.from_scores(pd.DataFrame({"a": [1, np.nan], "b": [np.nan, 2]}), g=1, missing="drop")
    with pytest.raises(InvalidInputError, match="finite"):
        PR.from_scores(np.array([[1.0, np.inf], [2.0, 3.0]]), g=1)
    with pytest.raises(InvalidInputError, match="ties"):
        PR.from_scores(np.eye(3), g=1, ties="average")
    with pytest.raises(InvalidInputError, match="missing"):
        PR.from_scores(np.eye(3), g=1, missing="impute")
    with pytest.raises(InvalidInputError, match="higher_is_better"):
        PR.from_scores(np.eye(3), g=1, higher_is_better=[True, False])
    with pytest.raises(InvalidInputError, match="table"):
        PR.from_scores(np.arange(5), g=1)


def test_bad_other_arguments():
    with pytest.raises(InvalidInputError, match="eps"):
        PP.from_scores(np.eye(3))
    with pytest.raises(InvalidInputError, match="size"):
        PP.from_scores(np.eye(3), size=4)
    with pytest.raises(InvalidInputError, match=r"groups\[1\]"):
        PR.from_scores(np.eye(3), g=1, groups=[[0, 1], [5]])
    with pytest.raises(InvalidInputError, match=r"groups\[0\]"):
        PR.from_scores(np.eye(3), g=1, groups=[["nope"]])
    with pytest.raises(InvalidInputError, match="positions"):
        PR(np.array([[1, 3], [2, 1]]), g=1)
    with pytest.raises(InvalidInputError, match="model"):
        PP.from_scores(np.eye(3), eps=0.2).linear_model(model="dense")
    with pytest.raises(InvalidInputError, match="rules"):
        PP.from_scores(np.eye(3), eps=0.2).scoring_rule_check([0], rules=("condorcet",))


@pytest.mark.parametrize("table", [
    np.array([[1 + 1j, 2.0], [3.0, 4.0]]),
    pd.DataFrame({"a": [1 + 0j, 2 + 0j], "b": [3.0, 4.0]}),
    pd.DataFrame({"a": [1j, "0.5"], "b": [3.0, 4.0]}, dtype=object),
])
def test_complex_scores_are_refused_not_cast(table):
    # casting would drop the imaginary part without a word
    with pytest.raises(InvalidInputError, match=r"^table: column '(0|a)' holds complex numbers, expected real scores"):
        PR.from_scores(table, g=1)
