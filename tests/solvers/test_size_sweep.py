"""``"size-sweep"`` and ``"auto"``: exact positional problems as sweeps of CP-SAT feasibility problems."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.data import needs_data

from benchsel.benchmarks._data import default_data_dir
from benchsel.formulations import KMedoids
from benchsel.formulations import PositionalProportionality as PP
from benchsel.formulations import PositionalRepresentation as PR
from benchsel.instances import load_score_table, mallows_profile
from benchsel.solvers import InvalidInputError, MethodNotApplicableError, solve
from benchsel.solvers.backends.size_sweep import (
    FEASIBLE,
    INFEASIBLE,
    UNKNOWN,
    CountFeasibility,
    MetricClasses,
    _Clock,
    sweep_min_size,
    sweep_monotone,
)
from benchsel.solvers.conformance import brute_force

DATA = default_data_dir()
POS = None if DATA is None else DATA / "positional"


def _with_duplicates(seed: int, m: int, n: int, dup: int) -> np.ndarray:
    """A random integer score table (ties) whose first ``dup`` columns are repeated at the end."""
    T = np.random.default_rng(seed).integers(0, 4, size=(m, n)).astype(float)
    return np.concatenate([T, T[:, :dup]], axis=1)


# ---------------------------------------------------------------- exactness
@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(3, 6), st.integers(0, 2),
       st.sampled_from([0.15, 0.2, 0.25, 0.34]))
@settings(max_examples=25, deadline=None)
def test_minimum_size_matches_brute_force(seed, m, n, dup, eps):
    f = PP.from_scores(_with_duplicates(seed, m, n, dup), eps=eps)
    opt, _ = brute_force(f)
    res = solve(f, "size-sweep", time_limit=30, seed=seed % 7)
    assert res.termination == "optimal" and res.feasible
    assert res.objective == opt == res.bound


@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(3, 6), st.integers(0, 2), st.integers(1, 4))
@settings(max_examples=25, deadline=None)
def test_fixed_size_matches_brute_force(seed, m, n, dup, k):
    f = PP.from_scores(_with_duplicates(seed, m, n, dup), size=min(k, n + dup))
    opt, _ = brute_force(f)
    res = solve(f, "size-sweep", time_limit=30)
    assert res.termination == "optimal" and res.feasible
    assert res.objective == pytest.approx(opt, abs=1e-12) and res.bound == pytest.approx(opt, abs=1e-12)


@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(3, 7), st.integers(0, 2), st.integers(1, 3))
@settings(max_examples=20, deadline=None)
def test_representation_matches_brute_force(seed, m, n, dup, g):
    f = PR.from_scores(_with_duplicates(seed, m, n, dup), g=g)
    opt, _ = brute_force(f)
    res = solve(f, "size-sweep", time_limit=30)
    assert res.termination == "optimal" and res.feasible and res.objective == opt == res.bound


def test_duplicate_metrics_are_merged_into_counts():
    T = np.random.default_rng(3).normal(size=(5, 6))
    f = PP.from_scores(np.concatenate([T, T[:, [0, 0, 2]]], axis=1), eps=0.2)
    cl = MetricClasses.from_rows(f.cut_rows()[0])
    assert cl.n_classes == 6 and cl.mult.tolist() == [3, 1, 2, 1, 1, 1]
    assert [m.tolist() for m in cl.members][:3] == [[0, 6, 7], [1], [2, 8]]
    y = cl.counts(np.array([0, 7, 8, 3]))
    assert y.tolist() == [2, 0, 1, 1, 0, 0]
    assert cl.selection(y).tolist() == [0, 2, 3, 6]  # the first members of each class
    res = solve(f, "size-sweep", time_limit=30)
    assert res.extra["n_metric_classes"] == 6 and res.termination == "optimal"
    assert res.objective == brute_force(f)[0]


def test_representation_groups_keep_identical_columns_apart():
    T = np.random.default_rng(5).integers(0, 3, size=(4, 4)).astype(float)
    f = PR.from_scores(np.concatenate([T, T], axis=1), g=2, groups=[[0, 1, 2, 3], [4, 5, 6, 7]])
    cl = MetricClasses.from_rows(f.cover_rows()[0])
    for m in cl.members:  # a metric and its copy sit in different groups: never interchangeable
        assert (m < 4).all() or (m >= 4).all()
    res = solve(f, "size-sweep", time_limit=30)
    assert res.termination == "optimal" and res.objective == brute_force(f)[0]


@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(3, 6), st.integers(1, 2), st.integers(0, 2),
       st.sampled_from(["min", "fixed", "rep"]))
@settings(max_examples=30, deadline=None)
def test_forced_metrics_with_duplicate_copies_match_brute_force(seed, m, n, dup, s, kind):
    T = _with_duplicates(seed, m, n, dup)
    inc = np.random.default_rng(seed).choice(n + dup, size=s, replace=False).tolist() or None
    f = (PP.from_scores(T, eps=0.25, include=inc) if kind == "min" else
         PP.from_scores(T, size=max(s, 2), include=inc) if kind == "fixed" else PR.from_scores(T, g=2, include=inc))
    opt, _ = brute_force(f)
    res = solve(f, "size-sweep", time_limit=30)
    assert res.termination == "optimal" and res.feasible and set(inc or ()) <= set(res.selection.tolist())
    assert res.objective == pytest.approx(opt, abs=1e-12) and res.bound == pytest.approx(opt, abs=1e-12)


def test_forced_metrics_get_their_own_classes_with_fixed_counts():
    T = np.random.default_rng(3).normal(size=(5, 4))
    f = PP.from_scores(np.concatenate([T, T[:, [0, 0]]], axis=1), eps=0.2, include=[4])
    forced = np.isin(np.arange(6), f.include)
    cl = MetricClasses.from_rows(f.cut_rows()[0], split=forced)
    assert [m.tolist() for m in cl.members] == [[0, 5], [1], [2], [3], [4]]  # 4, a copy of 0, is forced: apart
    lower = np.array([int(forced[m[0]]) * m.size for m in cl.members])
    oracle = CountFeasibility(cl, lower=lower)
    lo, hi = oracle.implied(3)
    B = cl.rows.astype(np.int64)
    assert (lo >= B @ lower).all() and (hi <= B @ cl.mult).all()
    assert oracle.solve(0, np.zeros(B.shape[0]), np.full(B.shape[0], 9), None)[0] == INFEASIBLE  # k < forced
    st_, y = oracle.solve(6, np.zeros(B.shape[0]), np.full(B.shape[0], 9), None)
    assert st_ == FEASIBLE and y.tolist() == cl.mult.tolist()


def test_grouped_sweep_joins_the_groups_and_splits_warm_starts():
    T = np.random.default_rng(4).integers(0, 3, size=(5, 8)).astype(float)
    f = PP.from_scores(T, eps=0.3, groups=[[0, 2, 4, 6], [1, 3, 5, 7]], include=[7])
    opt, _ = brute_force(f)
    res = solve(f, "size-sweep", time_limit=30, warm_start=np.arange(8))
    assert res.termination == "optimal" and res.objective == opt == res.bound and res.extra["n_groups"] == 2
    assert res.extra["attempts"].startswith("group0[")


# ------------------------------------------------------------ the schedulers
def _fake(statuses):
    """An oracle answering from ``statuses[k]`` (a list, one answer per call) and logging the calls."""
    calls = []

    def feasible_at(k, budget, hint):
        calls.append((k, budget, hint is not None))
        st_ = statuses[k].pop(0) if len(statuses[k]) > 1 else statuses[k][0]
        return st_, (np.array([k]) if st_ == FEASIBLE else None)

    return feasible_at, calls


def test_min_size_schedule_probes_below_then_ascends_and_interleaves():
    # incumbent 9; sizes 3..8; 4 stalls once, 8 is feasible only on its second call, 6 is feasible
    statuses = {3: [INFEASIBLE], 4: [UNKNOWN, INFEASIBLE], 5: [INFEASIBLE], 6: [FEASIBLE], 7: [INFEASIBLE],
                8: [UNKNOWN, FEASIBLE]}
    fa, calls = _fake(statuses)
    inc, y, open_, refuted = sweep_min_size(fa, np.arange(3, 9), 9, _Clock(None), size_budget=1.0, lookahead=1,
                                            hint_for=lambda k, y: np.zeros(1))
    assert [c[0] for c in calls][:4] == [8, 3, 4, 5]  # the probe below the incumbent first, then ascending
    assert calls[0][2] and not calls[1][2]  # only the probe is hinted
    assert inc == 6 and y.tolist() == [6] and open_ == [] and sorted(refuted) == [3, 4, 5]
    assert calls[-1] == (4, 2.0, True)  # the stalled size, now the probe below 6, came back with a doubled budget


def test_min_size_bound_is_the_smallest_open_size_and_feasibility_need_not_be_monotone():
    statuses = {4: [INFEASIBLE], 5: [FEASIBLE], 6: [INFEASIBLE], 7: [UNKNOWN]}
    fa, _ = _fake(statuses)
    inc, _, open_, refuted = sweep_min_size(fa, np.array([4, 6, 7]), 8, _Clock(0.3), size_budget=0.05,
                                            lookahead=0, hint_for=lambda k, y: None)
    assert inc == 8 and 7 in open_ and sorted(refuted) == [4, 6]  # 7 never answers: the bound stays 7
    fa, _ = _fake({4: [INFEASIBLE], 5: [FEASIBLE], 6: [INFEASIBLE], 7: [INFEASIBLE]})
    inc, _, open_, _ = sweep_min_size(fa, np.array([4, 5, 6, 7]), 8, _Clock(None), size_budget=1.0, lookahead=0,
                                      hint_for=lambda k, y: None)
    assert inc == 5 and open_ == []  # 5 feasible although 6 and 7 are not


def test_monotone_sweep_bisects_and_closes():
    truth = 13  # feasible from index 13 on; a solution found at index i has value max(truth, i - 2)
    seen = []

    def fa(i, budget):
        seen.append(i)
        if i >= truth:
            return FEASIBLE, max(truth, i - 2), np.array([i])
        return INFEASIBLE, None, None

    lo, hi, y = sweep_monotone(fa, 40, 0, 39, _Clock(None), size_budget=1.0)
    assert lo == hi == truth and y is not None
    assert seen[0] == 38 and len(seen) < 12  # the probe below the incumbent, then bisection


# --------------------------------------------------------------- time limit
def test_time_limit_returns_the_incumbent_and_a_valid_bound():
    f = PP.from_scores(mallows_profile(200, 100, phi=0.9, seed=0), eps=0.1)
    t0 = time.perf_counter()
    res = solve(f, "size-sweep", time_limit=4, heuristic_share=0.25)
    wall = time.perf_counter() - t0
    assert wall <= 1.2 * 4 + 1
    assert res.termination == "time_limit" and res.feasible and f.is_proportional(res.selection)
    assert f.admissible_sizes()[0] <= res.bound < res.objective
    assert res.extra["sizes_open"].split()[0] == str(int(res.bound))


# ---------------------------------------------------------- options, input
def test_bad_input_and_refusals():
    f = PP.from_scores(mallows_profile(12, 6, phi=0.7, seed=2), eps=0.25)
    for tl in (0, -1.0):
        with pytest.raises(InvalidInputError, match="time_limit"):
            solve(f, "size-sweep", time_limit=tl)
    from benchsel.solvers.methods import get_method

    with pytest.raises(InvalidInputError, match="time_limit"):
        get_method("size-sweep").run(f, time_limit=0, seed=0)
    km = KMedoids(np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0))), k=2)
    for method in ("size-sweep", "auto"):
        with pytest.raises(MethodNotApplicableError, match=r"PositionalProportionality.*PositionalRepresentation"):
            solve(km, method)
    with pytest.raises(InvalidInputError, match="size_budget"):
        solve(f, "size-sweep", size_budget=0)
    with pytest.raises(InvalidInputError, match="warm_start: expected a feasible selection"):
        solve(f, "size-sweep", warm_start=[0])
    with pytest.raises(InvalidInputError, match="warm_start"):
        solve(f, "size-sweep", warm_start="greedy")
    with pytest.raises(InvalidInputError, match=r"cpsat_parameters.*no_such"):
        solve(f, "size-sweep", warm_start=None, cpsat_parameters={"no_such": 1})
    with pytest.raises(InvalidInputError, match="lookahead"):
        solve(f, "size-sweep", lookahead=-1)


def test_warm_starts_options_and_progress(capsys):
    f = PP.from_scores(mallows_profile(24, 12, phi=0.8, seed=1), eps=0.25)
    ref = solve(f, "size-sweep", time_limit=20)
    assert ref.termination == "optimal"
    for ws in (None, "highs", ref.selection):
        r = solve(f, "size-sweep", time_limit=20, warm_start=ws, verbose=True)
        assert r.termination == "optimal" and r.objective == ref.objective
    assert r.extra["warm_start_source"] == "given"
    assert "size-sweep: size" in capsys.readouterr().err
    lp = solve(f, "size-sweep", time_limit=20, linearization_level=2, presolve=True, threads=2)
    assert lp.termination == "optimal" and lp.objective == ref.objective
    a, b = solve(f, "size-sweep", time_limit=20, seed=4), solve(f, "size-sweep", time_limit=20, seed=4)
    assert np.array_equal(a.selection, b.selection)


def test_auto_picks_per_instance_class():
    T = mallows_profile(14, 8, phi=0.7, seed=6)
    big = PR.from_scores(mallows_profile(41, 5, phi=0.7, seed=6), g=20)
    for f, method in ((PP.from_scores(T, eps=0.25), "size-sweep"), (PP.from_scores(T, size=4), "size-sweep"),
                      (PR.from_scores(T, g=2), "size-sweep"), (big, "highs")):
        r = solve(f, "auto", time_limit=30)
        assert r.method == "auto" and r.extra["auto_method"] == method
        assert r.termination == "optimal" and r.objective == pytest.approx(solve(f, "highs", time_limit=30).objective)


def test_harness_defaults_to_auto_on_positional_instances():
    from benchsel.benchmarks.tasks import default_methods

    T = mallows_profile(10, 6, phi=0.7, seed=0)
    d = default_methods(PP.from_scores(T, eps=0.25))
    assert d[0] == "auto" and "sample" in d and "highs" not in d
    assert default_methods(PR.from_scores(T, g=2))[0] == "auto"


# ---------------------------------------------------------------- real data
@needs_data("positional")
@pytest.mark.parametrize("name,eps,policy,optimum", [
    ("bigbench/leaderboard.tsv", 0.2, "last", 14),  # HiGHS: open at 30 s (gap 36 %)
    ("helm/bias.tsv", 0.15, "last", 15),  # HiGHS: open at 30 s
    ("helm/helm_lite_240829.csv", 0.1, "drop", None),
])
def test_contract_on_real_tables(name, eps, policy, optimum):
    f = PP.from_scores(load_score_table(POS / name), eps=eps, missing=policy)
    res = solve(f, "size-sweep", time_limit=10)
    assert res.termination == "optimal" and res.feasible and f.is_proportional(res.selection)
    assert res.bound == res.objective
    if optimum is None:
        optimum = solve(f, "highs", time_limit=30).objective
    assert res.objective == optimum


@needs_data("positional")
def test_fixed_size_five_on_a_real_table():
    f = PP.from_scores(load_score_table(POS / "bigbench/leaderboard.tsv"), size=5, missing="last")
    res = solve(f, "size-sweep", time_limit=10)
    assert res.termination == "optimal" and res.bound == pytest.approx(res.objective)
    assert res.objective == pytest.approx(58 / 135)  # 0.42963 = 58 / (27 * 5)


# ------------------------------------------------------- benchmark script
def test_synthetic_comparison_rows():
    from benchsel.benchmarks.studies.positional import synthetic

    rows = synthetic(14, 8, 2, 0.25, 10.0, 0, "auto", verbose=False, prop_methods=("size-sweep", "highs:model=direct"),
                     rep_methods=("auto", "highs"))
    assert [r["method"] for r in rows] == ["auto (size-sweep)", "highs", "size-sweep", "highs:model=direct"]
    assert all(r["termination"] == "optimal" for r in rows)
    assert rows[0]["objective"] == rows[1]["objective"] and rows[2]["objective"] == rows[3]["objective"]


@needs_data("positional")
def test_compare_script_writes_the_side_by_side_table(tmp_path):
    from benchsel.benchmarks.studies.positional import main

    assert main(["--compare", "--no-synthetic", "--tables", "helm/helm_lite_240829.csv", "--eps", "0.2", "--sizes", "5",
                 "--policies", "drop", "--methods", "highs:model=size-indexed", "size-sweep", "--out",
                 str(tmp_path)]) == 0
    md = (tmp_path / "compare.md").read_text()
    assert "| helm_lite_240829.csv | drop | eps=0.2 |" in md and "| helm_lite_240829.csv | drop | size=5 | n/a |" in md
    assert "`size-sweep` 1/1 proven" in md


@needs_data("positional")
def test_study_script_writes_the_proof_table(tmp_path):
    from benchsel.benchmarks.studies.positional import main

    assert main(["--no-synthetic", "--tables", "helm/helm_lite_240829.csv", "--g", "--eps", "0.2", "--sizes", "5",
                 "--policies", "drop", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "study.md").read_text()
    assert "| table | policy | m | n | eps=0.2 | size=5 |" in md
    row = next(line for line in md.splitlines() if line.startswith("| helm_lite_240829.csv | drop | 71 | 10 |"))
    assert row.split(" | ")[4].startswith("8 (") and "*" not in row  # optimum 8, proven
