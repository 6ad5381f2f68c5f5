"""``groups=`` (generalised positional proportionality, the paper's Definition 4.2) and ``include=`` (forced
metrics) on both positional formulations: the definition, every registered method against brute force,
bad input."""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.formulations import PositionalProportionality as PP
from benchsel.formulations import PositionalRepresentation as PR
from benchsel.solvers import InvalidInputError, available_methods, solve
from benchsel.solvers.conformance import brute_force, check_method


# ------------------------------------------------------------------ helpers
def grouped_prop_by_definition(P, K, eps, groups, include):
    """Every group: K ∩ G non-empty and |C(G,r,a)/|G| - C(K∩G,r,a)/|K∩G|| <= eps; K holds every forced metric."""
    e = Fraction(eps).limit_denominator(10**6)
    if not set(include) <= set(K.tolist()):
        return False
    m = P.shape[0]
    for G in groups:
        KG = [i for i in K.tolist() if i in G]
        if not KG:
            return False
        for a in range(m):
            for r in range(1, m + 1):
                cg = Fraction(int(sum(P[a, i] <= r for i in G)), len(G))
                ck = Fraction(int(sum(P[a, i] <= r for i in KG)), len(KG))
                if abs(cg - ck) > e:
                    return False
    return True


def random_partition(rng, n, t):
    labels = rng.permutation(np.arange(n) % t)  # every group non-empty
    return [np.flatnonzero(labels == j).tolist() for j in range(t)]


cases = st.tuples(st.integers(0, 10**6), st.integers(2, 4), st.integers(2, 7), st.integers(1, 3),
                  st.integers(0, 2))


# ------------------------------------------------------------ the definition
@given(cases, st.sampled_from([0.2, 0.25, 1 / 3, 0.5]))
@settings(max_examples=30, deadline=None)
def test_grouped_proportionality_check_matches_definition(args, eps):
    seed, m, n, t, s = args
    rng = np.random.default_rng(seed)
    t = min(t, n)
    groups = random_partition(rng, n, t)
    inc = sorted(rng.choice(n, size=min(s, n), replace=False).tolist())
    f = PP.from_scores(rng.integers(0, 3, size=(m, n)), eps=eps, groups=groups, include=inc or None)
    for k in range(1, n + 1):
        for c in itertools.combinations(range(n), k):
            K = np.asarray(c, dtype=np.int64)
            assert f.check(K).feasible == grouped_prop_by_definition(f.positions, K, eps, groups, inc)


@given(cases)
@settings(max_examples=25, deadline=None)
def test_grouped_optimum_is_the_sum_of_group_optima_and_sizes_are_admissible(args):
    seed, m, n, t, s = args
    rng = np.random.default_rng(seed)
    groups = random_partition(rng, n, min(t, n))
    inc = sorted(rng.choice(n, size=min(s, n), replace=False).tolist())
    f = PP.from_scores(rng.integers(0, 3, size=(m, n)), eps=0.25, groups=groups, include=inc or None)
    opt, sel = brute_force(f)
    assert opt == sum(brute_force(sub)[0] for _, sub in f.group_formulations())
    assert int(opt) in set(f.admissible_sizes().tolist()) and f.admissible_sizes()[0] <= opt
    assert set(inc) <= set(sel.tolist())
    rs = f.random_selection(np.random.default_rng(seed))
    assert f.is_feasible(rs) and f.is_feasible(f.initial_selection())


@given(cases, st.integers(1, 3))
@settings(max_examples=25, deadline=None)
def test_forced_representation_check_and_random_start(args, g):
    seed, m, n, _, s = args
    rng = np.random.default_rng(seed)
    inc = sorted(rng.choice(n, size=min(s, n), replace=False).tolist())
    f = PR.from_scores(rng.integers(0, 3, size=(m, n)), g=min(g, n), include=inc or None)
    free = PR(f.positions, g=f.g)
    for k in range(0, n + 1):
        for c in itertools.combinations(range(n), k):
            K = np.asarray(c, dtype=np.int64)
            assert f.check(K).feasible == (free.check(K).feasible and set(inc) <= set(c))
    assert f.is_feasible(f.random_selection(np.random.default_rng(seed)))
    assert f.lower_bound() <= brute_force(f)[0]


@given(cases, st.sampled_from([0.25, 1 / 3]), st.booleans())
@settings(max_examples=12, deadline=None)
def test_random_grouped_and_forced_instances_every_method(args, eps, representation):
    seed, m, n, t, s = args
    rng = np.random.default_rng(seed)
    inc = sorted(rng.choice(n, size=min(s, n), replace=False).tolist()) or None
    table = rng.integers(0, 3, size=(m, n))
    if representation:
        f = PR.from_scores(table, g=2 if n >= 2 else 1, include=inc)
    else:
        f = PP.from_scores(table, eps=eps, groups=random_partition(rng, n, min(t, n)), include=inc)
    opt = brute_force(f)[0]
    for method in available_methods(f):
        if method in ("pyomo", "scip"):  # the same model as "highs" and "cpsat", checked on the fixed cases below
            continue
        assert check_method(f, method, optimum=opt, time_limit=60) == [], method


# ------------------------------------------ every method against brute force
def _instances():
    rng = np.random.default_rng(11)
    tied = rng.integers(0, 3, size=(5, 8)).astype(float)  # many ties
    cont = rng.normal(size=(4, 7))
    out = [
        ("prop-groups-tied", PP.from_scores(tied, eps=0.25, groups=[[0, 1, 2, 3], [4, 5, 6, 7]])),
        ("prop-groups-scaled", PP.from_scores(1e6 * tied, eps=0.25, groups=[[0, 1, 2, 3], [4, 5, 6, 7]])),
        ("prop-groups3-include", PP.from_scores(cont, eps=0.3, groups=[[0, 3], [1, 4, 6], [2, 5]], include=[6])),
        ("prop-include-tied", PP.from_scores(tied, eps=0.2, include=[1, 2])),
        ("prop-include-ordinal", PP.from_scores(cont, eps=1 / 3, ties="ordinal", include=[0])),
        ("prop-fixed-include", PP.from_scores(cont, size=3, include=[1, 5])),
        ("rep-include-tied", PR.from_scores(tied, g=2, include=[0, 7])),
        ("rep-include-scaled", PR.from_scores(1e-6 * tied, g=2, include=[0, 7])),
        ("rep-groups-include", PR.from_scores(cont, g=2, groups=[[0, 1, 2, 3], [4, 5, 6]], include=[3, 4])),
    ]
    return out


CASES = [pytest.param(f, m, id=f"{name}-{m}") for name, f in _instances() for m in available_methods(f)]
_OPT: dict[int, float] = {}


@pytest.mark.parametrize("f,method", CASES)
def test_every_method_agrees_with_brute_force(f, method):
    if id(f) not in _OPT:
        _OPT[id(f)] = brute_force(f)[0]
    assert check_method(f, method, optimum=_OPT[id(f)], time_limit=60) == []
    res = solve(f, method, seed=0)
    assert set(f.include.tolist()) <= set(res.selection.tolist())


def test_scaled_copies_give_the_same_instance():
    (_, a), (_, b) = _instances()[:2]
    assert np.array_equal(a.positions, b.positions) and brute_force(a)[0] == brute_force(b)[0]


def test_forcing_binds_and_is_respected_by_every_model_statement():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 4, size=(5, 8)).astype(float)
    free, forced = PP.from_scores(t, eps=0.25), PP.from_scores(t, eps=0.25, include=[0, 5])
    assert brute_force(forced)[0] > brute_force(free)[0]  # the conformance instance forces a larger optimum
    for model in ("direct", "size-indexed"):
        lm = forced.linear_model(model=model)
        x = lm.col_block("x")
        assert lm.col_lb[x.start:x.stop][[0, 5]].tolist() == [1.0, 1.0]
        r = solve(forced, "highs", model=model)
        assert r.termination == "optimal" and r.objective == brute_force(forced)[0]
    lm = PR.from_scores(t, g=2, include=[3]).linear_model()
    assert lm.col_lb[lm.col_block("x").start + 3] == 1.0


def test_greedy_clean_up_never_drops_a_forced_metric():
    rng = np.random.default_rng(3)
    t = rng.normal(size=(6, 12))
    f = PR.from_scores(t, g=3, include=[0, 1, 2, 3, 4, 5, 6])
    for m in ("greedy-color", "greedy-multicover"):
        r = solve(f, m, cleanup=True)
        assert r.feasible and set(range(7)) <= set(r.selection.tolist())


def test_labels_params_and_results():
    rng = np.random.default_rng(2)
    import pandas as pd

    df = pd.DataFrame(rng.integers(0, 4, size=(5, 6)).astype(float), columns=list("abcdef"))
    f = PP.from_scores(df, eps=0.3, groups=[["a", "b", "c"], ["d", "e", "f"]], include=["e"])
    assert [G.tolist() for G in f.groups] == [[0, 1, 2], [3, 4, 5]] and f.include.tolist() == [4]
    f2 = PP(**f.get_params())
    sel = f.random_selection(np.random.default_rng(0))
    assert f2.check(sel).feasible == f.check(sel).feasible and "groups=2" in repr(f) and "include=1" in repr(f)
    res = solve(f, "auto")
    assert res.extra["n_groups"] == 2 and res.extra["n_included"] == 1 and res.extra["proportional"]
    assert res.extra["max_group_deviation"] <= 0.3
    r = PR.from_scores(df, g=2, include=["a", "f"])
    assert r.include.tolist() == [0, 5] and PR(**r.get_params()).include.tolist() == [0, 5]
    assert "include: 1 forced metric(s) not selected: 'f'" in r.check([0, 1, 2, 3, 4]).reasons[0]


# ------------------------------------------------------------------ bad input
T = np.random.default_rng(0).integers(0, 4, size=(4, 6)).astype(float)


@pytest.mark.parametrize("groups,match", [
    ([[0, 1, 2], [2, 3, 4, 5]], r"groups\[1\]: groups must not overlap, got metric '2' \(position 2\) also in "
                                r"groups\[0\]"),
    ([[0, 1, 1], [2, 3, 4, 5]], r"metric '1' \(position 1\) twice in that group"),
    ([[0, 1], [2, 3]], r"2 left out: '4', '5'"),
    ([[0, 1, 2], [], [3, 4, 5]], r"groups\[1\]: expected a non-empty group"),
    ([[0, 1, 2], [3, 4, 9]], r"groups\[1\]: .*unknown metric\(s\) 9"),
    ([[0, 1, -1], [2, 3, 4, 5]], r"unknown metric\(s\) -1"),
    ([[0, 1, "zz"], [2, 3, 4, 5]], r"unknown metric\(s\) 'zz'"),
    ([], r"groups: expected a non-empty list"),
    ("abc", r"groups: expected a non-empty list"),
    ([[0, 1, 2.5], [3, 4, 5]], r"expected metric column names or integer positions, got 2.5"),
])
def test_bad_groups(groups, match):
    with pytest.raises(InvalidInputError, match=match):
        PP.from_scores(T, eps=0.2, groups=groups)


@pytest.mark.parametrize("include,match", [
    ([1, 1], r"include: expected distinct metrics, got '1' more than once"),
    ([0, 6], r"include: .*unknown metric\(s\) 6"),
    (["nope"], r"include: .*unknown metric\(s\) 'nope'"),
    ([True], r"include: expected metric column names or integer positions, got True"),
    (3, r"include: expected a list"),
])
def test_bad_include(include, match):
    for build in (lambda: PP.from_scores(T, eps=0.2, include=include), lambda: PR.from_scores(T, g=2, include=include)):
        with pytest.raises(InvalidInputError, match=match):
            build()


def test_include_larger_than_size_and_other_unsupported_combinations():
    with pytest.raises(InvalidInputError, match=r"include: expected at most size = 2 forced metrics .* got 3"):
        PP.from_scores(T, size=2, include=[0, 1, 2])
    with pytest.raises(InvalidInputError, match="groups: the fixed-size problem"):
        PP.from_scores(T, size=2, groups=[[0, 1, 2], [3, 4, 5]])
    f = PP.from_scores(T, eps=0.2, groups=[[0, 1, 2], [3, 4, 5]])
    with pytest.raises(InvalidInputError, match="size-indexed"):
        f.linear_model(model="size-indexed")
    for call in (f.cut_rows, lambda: f.size_intervals(2)):
        with pytest.raises(InvalidInputError, match="grouped formulation"):
            call()
    with pytest.raises(InvalidInputError, match="init: expected a start holding every forced metric"):
        solve(PP.from_scores(T, size=2, include=[0]), "prop-swap", init=[1, 2])


def test_forced_inclusion_never_makes_a_minimum_size_problem_infeasible():
    # K = N holds every forced metric and has both properties, so every method returns a feasible answer
    f = PP.from_scores(T, eps=0.05, include=list(range(6)))
    for m in available_methods(f):
        r = solve(f, m, seed=0)
        assert r.feasible and r.selection.tolist() == list(range(6))
    assert brute_force(PR.from_scores(T, g=1, include=[5]))[0] == brute_force(PR.from_scores(T, g=1))[0]
