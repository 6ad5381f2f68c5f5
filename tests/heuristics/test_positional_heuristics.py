"""Heuristics for positional representation / proportionality and the synthetic profiles."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.formulations import PositionalProportionality as PP
from benchsel.formulations import PositionalRepresentation as PR
from benchsel.heuristics.positional import greedy_colour
from benchsel.instances import mallows_profile, swap_pairs_profile
from benchsel.solvers import InvalidInputError, MethodNotApplicableError, solve
from benchsel.solvers.conformance import brute_force


@given(st.integers(0, 10**6), st.integers(2, 8), st.integers(1, 12), st.integers(1, 4),
       st.sampled_from(["min", "max", "ordinal"]))
@settings(max_examples=40, deadline=None)
def test_greedy_colour_is_always_representative(seed, m, n, g, ties):
    g = min(g, n)
    f = PR.from_scores(np.random.default_rng(seed).integers(0, 4, size=(m, n)), g=g, ties=ties)
    for cleanup in (False, True):
        res = solve(f, "greedy-color", cleanup=cleanup)
        assert res.feasible, res.extra.get("violations")
        assert res.objective <= f.bounds()["greedy_colour_bound"] + 1e-9
    assert solve(f, "greedy-multicover", cleanup=True).feasible


def test_greedy_colour_follows_the_colour_rule():
    # 2 alternatives x 4 metrics, g = 2; metrics ordered by position, ties by metric index
    P = np.array([[1, 1, 2, 2], [2, 2, 1, 1]])
    f = PR(P, 2)
    cols = f.colours()
    assert [c.tolist() for c in cols] == [[[0, 1], [2, 3]], [[2, 3], [0, 1]]]
    picked = greedy_colour(cols, 4)
    # every metric carries 2 colours; metric 0 (lowest index) covers both {0,1} colours, then metric 2 the rest
    assert picked.tolist() == [0, 2]


def test_cleanup_never_grows_and_keeps_feasibility():
    df = mallows_profile(40, 15, phi=0.8, seed=4)
    f = PR.from_scores(df, g=3)
    plain = solve(f, "greedy-color")
    clean = solve(f, "greedy-color", cleanup=True)
    assert clean.feasible and clean.objective <= plain.objective
    assert clean.extra["cleanup_removed"] == plain.objective - clean.objective
    opt = solve(f, "highs", time_limit=60)
    assert opt.termination == "optimal" and opt.objective <= clean.objective


def test_sample_is_seeded_and_proportional():
    df = mallows_profile(30, 12, phi=0.7, seed=1)
    f = PP.from_scores(df, eps=0.2)
    a = solve(f, "sample", seed=3)
    b = solve(f, "sample", seed=3)
    assert np.array_equal(a.selection, b.selection)
    assert a.feasible and f.is_proportional(a.selection)
    assert a.extra["sample_size"] == min(30, int(np.ceil(np.log(24) / 0.04)))
    exact = solve(f, "highs", time_limit=60)
    assert exact.termination == "optimal" and exact.objective <= a.objective


def test_prop_swap_reaches_the_brute_force_optimum_on_a_small_case():
    rng = np.random.default_rng(2)
    f = PP.from_scores(rng.integers(0, 4, size=(5, 9)).astype(float), size=3)
    opt = brute_force(f)[0]
    res = solve(f, "prop-swap", n_restarts=5, seed=1)
    assert res.feasible and res.objective >= opt - 1e-12
    assert res.objective == pytest.approx(f.max_deviation(res.selection))
    with pytest.raises(InvalidInputError, match="init"):
        solve(f, "prop-swap", init=[0, 1])
    with pytest.raises(MethodNotApplicableError):
        solve(f, "sample")
    with pytest.raises(MethodNotApplicableError):
        solve(PP.from_scores(rng.normal(size=(4, 6)), eps=0.2), "prop-swap")


def test_time_limit_returns_a_feasible_selection():
    df = mallows_profile(60, 30, phi=0.9, seed=0)
    f = PP.from_scores(df, eps=0.1)
    res = solve(f, "sample", time_limit=0.2)
    assert res.feasible


def test_synthetic_profiles_are_seeded_and_structured():
    a, b = mallows_profile(6, 5, seed=9), mallows_profile(6, 5, seed=9)
    assert a.equals(b) and a.shape == (5, 6)
    assert all(sorted(a[c]) == [1, 2, 3, 4, 5] for c in a.columns)
    near = mallows_profile(50, 6, phi=0.05, seed=0)
    assert (near.idxmax(axis=0) == "alt_0").mean() > 0.8  # concentrated around the centre
    s = swap_pairs_profile(20, 5, seed=0)
    pos = 6 - s.to_numpy()  # positions
    assert set(map(tuple, np.sort(pos[:2], axis=0).T)) == {(1, 2)}
    assert set(map(tuple, np.sort(pos[2:4], axis=0).T)) == {(3, 4)}
    assert (pos[4] == 5).all()
    assert 0 < (pos[0] == 2).mean() < 1
    with pytest.raises(InvalidInputError, match="phi"):
        mallows_profile(3, 3, phi=0)
    with pytest.raises(InvalidInputError, match="p"):
        swap_pairs_profile(3, 3, p=1.5)


def test_forced_metrics_stay_through_sample_swaps_and_greedy():
    df = mallows_profile(30, 12, phi=0.7, seed=1)
    forced = [0, 7, 19, 28]
    f = PP.from_scores(df, eps=0.2, include=forced)
    a = solve(f, "sample", seed=3)
    assert a.feasible and set(forced) <= set(a.selection.tolist()) and f.is_proportional(a.selection)
    exact = solve(f, "auto", time_limit=60)
    assert exact.termination == "optimal" and exact.objective <= a.objective
    assert exact.objective >= solve(PP.from_scores(df, eps=0.2), "auto", time_limit=60).objective
    fx = PP.from_scores(df, size=6, include=forced)
    s = solve(fx, "prop-swap", seed=0, n_restarts=2)
    assert s.feasible and set(forced) <= set(s.selection.tolist())
    assert greedy_colour(PR.from_scores(df, g=3).colours(), 30, start=np.array(forced))[:4].tolist() == forced
    grouped = PP.from_scores(df, eps=0.25, groups=[list(range(15)), list(range(15, 30))], include=forced)
    g = solve(grouped, "sample", seed=0)
    assert g.feasible and g.objective >= solve(grouped, "auto", time_limit=60).objective
