"""KMedoids: data checks, oracle, the three exact statements, heuristics, time limits, OR-Library loading."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.data import DATA, needs_data

from benchsel.formulations import KMedoids
from benchsel.formulations.base import Check, Formulation
from benchsel.instances import load_pmed, make_kmedoids, read_pmed_graph
from benchsel.solvers import (
    InvalidInputError,
    MethodNotApplicableError,
    SolverNotInstalledError,
    UnknownMethodError,
    available_methods,
    solve,
)
from benchsel.solvers.conformance import brute_force

PMED = None if DATA is None else DATA / "orlib" / "pmed"


# ----------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "D,k,match",
    [
        (np.zeros((3, 4)), 1, r"D: expected a square array of shape \(N, N\), got shape \(3, 4\)"),
        (np.array([[0, np.nan], [1, 0]]), 1, r"D: expected finite values, got 1 non-finite \(NaN\)"),
        (np.array([[0, -1.0], [1, 0]]), 1, r"D: expected non-negative values, got 1 negative"),
        (np.zeros((4, 4)), 0, r"k: expected an integer with 1 <= k <= .* got 0"),
        (np.zeros((4, 4)), 4, r"k: expected an integer with 1 <= k <= min\(N - 1, n_candidates\) = 3, got 4"),
        (np.zeros((4, 4)), 2.5, r"k: expected an integer, got float 2.5"),
        (np.zeros(4), 1, r"D: expected an array of shape \(N, N\), got shape \(4,\)"),
        ([["a", "b"], ["c", "d"]], 1, r"D: expected a numeric array"),
    ],
)
def test_bad_input(D, k, match):
    with pytest.raises(InvalidInputError, match=match):
        KMedoids(D, k)


def test_bad_weights_candidates_and_metric():
    D = np.ones((4, 4)) - np.eye(4)
    with pytest.raises(InvalidInputError, match=r"weights: expected shape \(N,\) = \(4,\), got shape \(3,\)"):
        KMedoids(D, 2, weights=[1, 1, 1])
    with pytest.raises(InvalidInputError, match="weights: expected non-negative"):
        KMedoids(D, 2, weights=[1, -1, 1, 1])
    with pytest.raises(InvalidInputError, match="candidates: expected distinct item indices in \\[0, 4\\)"):
        KMedoids(D, 2, candidates=[0, 9])
    with pytest.raises(InvalidInputError, match=r"k: .*got 3"):
        KMedoids(D, 3, candidates=[0, 1])
    with pytest.raises(InvalidInputError,
                       match="metric: expected one of 'correlation', 'cosine', 'euclidean', got 'l1'"):
        KMedoids.from_features(np.ones((4, 2)), 2, metric="l1")


def test_bad_selection_and_methods():
    f = make_kmedoids(12, 3, seed=1)
    with pytest.raises(InvalidInputError,
                       match=r"selection: expected item indices in \[0, 12\), got values from 0 to 12"):
        f.evaluate([0, 12])
    with pytest.raises(InvalidInputError, match="selection: expected distinct"):
        f.evaluate([1, 1])
    with pytest.raises(UnknownMethodError, match=r"method: unknown method 'gurobi-magic'; registered methods: .*highs"):
        solve(f, "gurobi-magic")
    with pytest.raises(InvalidInputError,
                       match=r"options: 'mip_gap' not understood by method 'highs'; its options: .*mip_rel_gap"):
        solve(f, "highs", mip_gap=0.1)
    with pytest.raises(InvalidInputError,
                       match="model: expected one of 'auto', 'assignment', 'radius', 'benders', got 'flow'"):
        solve(f, "highs", model="flow")
    with pytest.raises(InvalidInputError, match=r"time_limit: expected 0\.0 < time_limit, got -1"):
        solve(f, "highs", time_limit=-1)
    with pytest.raises(InvalidInputError, match="formulation: expected a benchsel Formulation"):
        solve(np.eye(3), "highs")
    with pytest.raises(InvalidInputError, match="model: 'benders' generates its cuts on demand"):
        f.to_mps("/tmp/never.mps", model="benders")


class _Toy(Formulation):
    """A third-party formulation with no linear statement: pick 1 of 3 items."""

    not_linear_reason = "toy objective is a table lookup"

    @property
    def n_items(self):
        return 3

    def get_params(self):
        return {}

    def evaluate(self, selection):
        return float(np.asarray(selection).sum())

    def check(self, selection):
        return Check.from_reasons([] if len(selection) == 1 else ["pick exactly one"])

    def random_selection(self, rng):
        return np.array([rng.integers(3)])


def test_method_refusals_name_the_alternatives():
    toy = _Toy()
    with pytest.raises(MethodNotApplicableError,
                       match=r"'fasterpam' does not accept a _Toy: it works on KMedoids only\. "
                             r"Methods that accept it: random"):
        solve(toy, "fasterpam")
    with pytest.raises(MethodNotApplicableError,
                       match=r"'highs' does not accept a _Toy: toy objective is a table lookup "
                             r"\(HiGHS reads mixed-integer linear models only\)"):
        solve(toy, "highs")
    assert available_methods(toy) == ["random"]


def test_optional_solver_not_installed():
    f = make_kmedoids(10, 2, seed=0)
    with pytest.raises(SolverNotInstalledError, match="solver: Pyomo solver 'no_such_solver' is not installed"):
        solve(f, "pyomo", solver="no_such_solver")


# -------------------------------------------------------------------- oracle
def test_evaluate_assign_estimate():
    D = np.array([[0, 1, 5, 6], [1, 0, 4, 5], [5, 4, 0, 2], [6, 5, 2, 0.0]])
    f = KMedoids(D, 2)
    assert f.evaluate([0, 2]) == 1 + 2
    assert f.assign([2, 0]).tolist() == [0, 0, 2, 2]
    assert f.cluster_weights([0, 2]).tolist() == [0.5, 0.5]
    # scores given in the order of `selection` ([3, 0]): medoid 3 serves items 2,3; medoid 0 serves 0,1
    assert f.estimate([3, 0], [0.2, 1.0]) == pytest.approx(0.5 * 1.0 + 0.5 * 0.2)
    est = f.estimate([0, 3], np.array([[1.0, 0.0], [0.5, 0.5]]))
    assert est.tolist() == [0.5, 0.5]
    assert not f.check([0]).feasible and "k = 2" in f.check([0]).reasons[0]


def test_correlation_metric_is_one_minus_pearson():
    X = np.random.default_rng(3).normal(size=(6, 9))
    f = KMedoids.from_features(X, 2, metric="correlation")
    expect = 1 - np.corrcoef(X)
    np.fill_diagonal(expect, 0)
    assert np.allclose(f.D, np.clip(expect, 0, None))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 9), k=st.integers(1, 3))
def test_objective_invariant_under_relabelling(seed, n, k):
    rng = np.random.default_rng(seed)
    D = rng.uniform(0, 10, size=(n, n))
    w = rng.uniform(0.1, 3, size=n)
    perm = rng.permutation(n)
    f = KMedoids(D, k, weights=w)
    g = KMedoids(D[np.ix_(perm, perm)], k, weights=w[perm])  # item i of g is item perm[i] of f
    S = np.sort(rng.choice(n, size=k, replace=False))
    inv = np.argsort(perm)
    assert g.evaluate(inv[S]) == pytest.approx(f.evaluate(S))
    assert brute_force(g)[0] == pytest.approx(brute_force(f)[0])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.01, 100))
def test_weights_scale_the_objective(seed, scale):
    rng = np.random.default_rng(seed)
    D = rng.uniform(0, 10, size=(7, 7))
    w = rng.uniform(0.1, 3, size=7)
    S = np.sort(rng.choice(7, size=2, replace=False))
    assert KMedoids(D, 2, weights=scale * w).evaluate(S) == pytest.approx(scale * KMedoids(D, 2, weights=w).evaluate(S))


# -------------------------------------------------------------- exact models
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_all_statements_reach_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    D = rng.integers(0, 30, size=(9, 9)).astype(float)
    np.fill_diagonal(D, 0)
    f = KMedoids(D, 3, weights=rng.uniform(0.5, 2, 9), candidates=[0, 1, 3, 4, 6, 8])
    opt, _ = brute_force(f)
    for method, model in [("highs", "assignment"), ("highs", "radius"), ("highs", "benders"),
                          ("cpsat", "radius"), ("pyomo", "radius")]:
        res = solve(f, method, model=model, time_limit=30)
        assert res.termination == "optimal", (method, model)
        assert res.objective == pytest.approx(opt), (method, model)
        assert res.bound == pytest.approx(opt, rel=1e-6), (method, model)
        assert res.extra["model_variant"] == model


# ------------------------------------------------- interchangeable candidates
@pytest.mark.parametrize("metric", ["correlation", "cosine", "euclidean"])
def test_duplicated_items_are_at_distance_zero_with_identical_rows_and_columns(metric):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 6))
    X = np.vstack([X, X[[1, 1, 7]]])  # items 12, 13 repeat item 1, item 14 repeats item 7
    D = KMedoids.from_features(X, 2, metric=metric).D
    for a, b in ((1, 12), (1, 13), (12, 13), (7, 14)):
        assert D[a, b] == 0.0 and D[b, a] == 0.0
        assert np.array_equal(D[a], D[b]) and np.array_equal(D[:, a], D[:, b])
    ref = KMedoids.from_features(X[:12], 2, metric=metric).D  # the other distances are as computed without twins
    assert np.allclose(D[:12, :12], ref, rtol=0, atol=1e-12)


def test_interchangeable_candidates_map_to_their_lowest_index_twin():
    rng = np.random.default_rng(1)
    D = rng.uniform(1, 10, size=(8, 8))
    D[:, 6] = D[:, 2]  # candidate 6 is as far from every item as candidate 2 (D[2, 2] is then 0 too)
    D[:, 7] = D[:, 2]
    np.fill_diagonal(D, 0.0)
    D[[2, 6, 7], 2] = D[[2, 6, 7], 6] = D[[2, 6, 7], 7] = 0.0
    f = KMedoids(D, 3)
    assert list(f.candidate_representatives()) == [0, 1, 2, 3, 4, 5, 2, 2]
    # a twin of a selected medoid gives way to the lowest-index spare representative: never worse
    sel = f.canonical_selection([6, 7, 4])
    assert list(sel) == [0, 2, 4] and f.evaluate(sel) <= f.evaluate([6, 7, 4]) + 1e-12
    assert list(f.canonical_selection([7, 3, 5])) == [2, 3, 5]
    g = KMedoids(D, 3, candidates=[0, 1, 2, 3, 4, 6, 7])
    assert list(g.canonical_selection([5, 6, 7])) == [5, 6, 7]  # 5 is no candidate: left as it is, infeasible
    assert f.evaluate([2, 3, 5]) == f.evaluate([7, 3, 5])
    # columns that differ anywhere on the served items stay apart; an item of weight 0 is not looked at
    D2 = D.copy()
    D2[0, 7] += 1.0
    assert list(KMedoids(D2, 3).candidate_representatives()) == [0, 1, 2, 3, 4, 5, 2, 7]
    w = np.ones(8)
    w[0] = 0.0
    assert list(KMedoids(D2, 3, weights=w).candidate_representatives()) == [0, 1, 2, 3, 4, 5, 2, 2]


@pytest.mark.parametrize("model", ["assignment", "radius", "benders"])
def test_statements_keep_one_candidate_per_twin_group_and_the_optimum(model):
    rng = np.random.default_rng(6)
    R = rng.integers(0, 2, size=(9, 8)).astype(float)
    f = KMedoids.from_features(np.vstack([R, R[[0, 0, 3, 5]]]), 4, metric="correlation")  # 4 twins
    opt, _ = brute_force(f)
    m = f.linear_model(model=model, allow_lazy=True)
    assert m.meta["merged_candidates"] == 4 and m.selection_items.size == 13 - 4
    assert m.meta["merged_items"] == 4  # the twins are also one weighted item each as clients
    assert set(m.selection_items) == set(np.unique(f.candidate_representatives()))
    methods = ["highs"] + (["cpsat", "pyomo"] if model != "benders" else [])
    for method in methods:
        res = solve(f, method, model=model, time_limit=30)
        assert res.termination == "optimal" and res.objective == pytest.approx(opt), method
        assert res.bound == pytest.approx(opt, rel=1e-6) and res.extra["model_merged_candidates"] == 4


def test_twin_merging_is_skipped_when_the_cost_matrix_copy_is_too_large(monkeypatch):
    rng = np.random.default_rng(6)
    R = rng.integers(0, 2, size=(9, 8)).astype(float)
    f = KMedoids.from_features(np.vstack([R, R[[0, 0, 3, 5]]]), 4, metric="correlation")
    monkeypatch.setattr(KMedoids, "DEDUP_COPY_MAX", 8)
    m = f.linear_model(model="benders", allow_lazy=True)
    assert "merged_candidates" not in m.meta and m.selection_items.size == 13
    res = solve(f, "highs", model="benders", time_limit=30)
    assert res.termination == "optimal" and res.objective == pytest.approx(brute_force(f)[0])
    # with a candidate subset the cost matrix is a copy already: merging costs no extra copy of D
    g = KMedoids(f.D, 4, candidates=np.arange(12))
    meta = g.linear_model(model="benders", allow_lazy=True).meta
    assert meta["merged_candidates"] == 3 and meta["merged_items"] == 4


def test_auto_statement_too_slow_to_build_is_refused_as_auto_on_an_instance_with_twins():
    # the exact backends answer with the warm start (no error) only when the refusal names "auto"
    from benchsel.formulations.kmedoids import ModelTooLargeError

    rng = np.random.default_rng(6)
    R = rng.integers(0, 2, size=(9, 8)).astype(float)
    f = KMedoids.from_features(np.vstack([R, R[[0, 0, 3, 5]]]), 4, metric="correlation")
    with pytest.raises(ModelTooLargeError) as e:
        f.linear_model(model="auto", time_limit=1.0, nnz_per_second=1.0)
    assert e.value.requested == "auto"


def test_twin_clients_merge_into_one_weighted_item():
    rng = np.random.default_rng(3)
    D = rng.uniform(1, 10, size=(9, 9))
    np.fill_diagonal(D, 0.0)
    D[4, 7] = 0.0
    D[7, :] = D[4, :]  # item 7 is as far as item 4 from every candidate (and from itself); as a candidate it differs
    f = KMedoids(D, 3, weights=rng.uniform(0.5, 2.0, 9), candidates=[0, 1, 2, 3, 5, 6, 8])
    reps = f.client_representatives()
    assert reps[7] == 4 and np.all(np.delete(reps, 7) == np.delete(np.arange(9), 7))
    m = f.linear_model(model="benders", allow_lazy=True)
    assert m.meta["merged_items"] == 1 and m.meta["merged_candidates"] == 0
    opt, _ = brute_force(f)
    for model in ("benders", "assignment", "radius"):
        res = solve(f, "highs", model=model, time_limit=30)
        assert res.termination == "optimal" and res.objective == pytest.approx(opt), model


def test_radius_model_is_smaller_and_agrees_on_a_larger_instance():
    f = make_kmedoids(120, 6, seed=4)
    ra, rr = f.linear_model(model="assignment"), f.linear_model(model="radius")
    assert rr.nnz < ra.nnz
    a = solve(f, "highs", model="assignment", time_limit=60)
    r = solve(f, "highs", model="radius", time_limit=60)
    b = solve(f, "highs", time_limit=60)  # auto -> benders
    assert b.extra["model_variant"] == "benders"
    assert a.objective == pytest.approx(r.objective) == pytest.approx(b.objective)
    assert a.termination == r.termination == b.termination == "optimal"


@pytest.mark.slow
def test_warm_start_is_accepted_and_checked():
    f = make_kmedoids(60, 4, seed=2)
    h = solve(f, "fasterpam", seed=0)
    for method in ("highs", "cpsat", "pyomo"):
        res = solve(f, method, warm_start=h.selection, time_limit=60, model="radius")
        assert res.feasible and res.objective <= h.objective + 1e-9
    with pytest.raises(InvalidInputError, match="warm_start: expected item indices"):
        solve(f, "highs", warm_start=[0, 99])


@pytest.mark.slow
@needs_data("orlib", "pmed")
@pytest.mark.parametrize("model", ["radius", "benders"])
def test_time_limit_keeps_a_feasible_incumbent(model):
    f = load_pmed(PMED / "pmed38.txt")  # N = 900, k = 5: not provable in 3 s
    res = solve(f, "highs", time_limit=3, model=model)
    assert res.termination == "time_limit"
    assert res.feasible and res.selection.size == f.k
    assert res.objective == pytest.approx(f.evaluate(res.selection))
    if model == "benders":  # its LP cut loop proves a bound within the first second
        assert res.bound is not None
    if res.bound is not None:  # the radius LP may not finish its root in 3 s: no bound then
        assert res.bound <= res.objective + 1e-6 and res.gap >= 0
    assert res.extra["wall_seconds"] < 30


# ---------------------------------------------------------------- heuristics
@pytest.mark.parametrize("method", ["fasterpam", "alternate", "build", "random"])
def test_heuristics_are_seeded_and_feasible(method):
    f = make_kmedoids(80, 5, seed=7, weighted=True)
    a, b = solve(f, method, seed=3), solve(f, method, seed=3)
    assert a.feasible and a.bound is None and a.gap is None
    assert a.selection.tolist() == b.selection.tolist()


def test_fasterpam_numpy_matches_the_kmedoids_package_objective():
    f = make_kmedoids(150, 6, seed=11)
    pkg = solve(f, "fasterpam", seed=0, backend="kmedoids")
    own = solve(f, "fasterpam", seed=0, backend="numpy")
    exact = solve(f, "highs", time_limit=60)
    assert pkg.extra["implementation"] == "kmedoids" and own.extra["implementation"] == "numpy"
    # both are local optima of the same swap neighbourhood: no better than the optimum, close to it
    assert exact.objective <= min(pkg.objective, own.objective) + 1e-9
    assert own.objective <= 1.05 * exact.objective and pkg.objective <= 1.05 * exact.objective


def test_fasterpam_calls_the_package_kernel_as_the_package_does(monkeypatch):
    """The compiled kernel called directly gives the package's own call's medoids, swaps and passes."""
    import benchsel.heuristics.kmedoids as hk

    f = make_kmedoids(200, 7, seed=4)
    for dtype in (np.float64, np.float32):
        D = f.D.astype(dtype)
        start = np.arange(7) * 13
        assert hk._package_kernel(D.dtype) is not None
        direct = hk.fasterpam_package(D, start, max_iter=50, rng=np.random.default_rng(5))
        monkeypatch.setattr(hk, "_package_kernel", lambda dtype: None)
        through = hk.fasterpam_package(D, start, max_iter=50, rng=np.random.default_rng(5))
        monkeypatch.undo()
        assert direct[0].tolist() == through[0].tolist() and direct[1:] == through[1:]


def test_fasterpam_warm_start_imports_neither_the_package_init_nor_scikit_learn():
    """``kmedoids/__init__`` imports scikit-learn (about 90 MB) when it is installed; a solve loads only
    the compiled module, and ``import kmedoids`` still works afterwards."""
    import subprocess
    import sys

    code = ("import sys; from benchsel import solve; from benchsel.instances import make_kmedoids; "
            "f = make_kmedoids(120, 5, seed=2); r = solve(f, 'highs', time_limit=30); "
            "assert r.extra['warm_start_source'] == 'fasterpam', r.extra; "
            "print('sklearn' in sys.modules, 'kmedoids' in sys.modules); "
            "import kmedoids, numpy as np; "
            "res = kmedoids.fasterpam(f.D, 5, init='build', n_cpu=1); "
            "print(abs(f.evaluate(np.sort(res.medoids)) - res.loss) < 1e-6)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False", "True"]


def test_fasterpam_respects_weights_and_candidates():
    f = make_kmedoids(40, 3, seed=5)
    g = KMedoids(f.D, 3, weights=np.r_[np.full(20, 5.0), np.ones(20)], candidates=np.arange(0, 40, 2))
    res = solve(g, "fasterpam", seed=0)
    assert res.extra["implementation"] == "numpy"
    assert res.feasible and set(res.selection.tolist()) <= set(range(0, 40, 2))
    assert res.objective >= brute_force(g)[0] - 1e-9
    with pytest.raises(InvalidInputError, match="backend: the kmedoids package takes neither"):
        solve(g, "fasterpam", backend="kmedoids")


# ----------------------------------------------------- non-zero diagonal (issue 31)
def _positive_diagonal(seed: int) -> KMedoids:
    """A small instance with a positive diagonal on which the kmedoids package's FasterPAM, started from
    BUILD, returns a repeated medoid (seeds 17, 51, 55, 64)."""
    rng = np.random.default_rng(seed)
    N = int(rng.integers(5, 10))
    k = int(rng.integers(2, N - 1))
    D = rng.random((N, N))
    np.fill_diagonal(D, rng.random(N) * float(rng.choice([0.5, 1, 5, 100])))
    return KMedoids(D, k)


def test_positive_diagonal_semantics_follow_the_spec():
    """``sum_i min_{j in S} D[i, j]``: a medoid serves itself at ``D[j, j]`` unless another medoid is closer."""
    D = np.array([[5.0, 1, 9], [1, 5, 9], [9, 9, 0]])
    f = KMedoids(D, 2)
    assert f.evaluate([0, 1]) == 1 + 1 + 9  # medoids 0 and 1 serve each other
    assert f.evaluate([0, 2]) == 5 + 1 + 0  # medoid 0 serves itself at D[0, 0] = 5
    assert f.check([0, 2]).feasible and brute_force(f)[0] == 6


@pytest.mark.parametrize("seed", [17, 51, 55, 64])
def test_fasterpam_on_a_positive_diagonal_returns_distinct_medoids(seed):
    f = _positive_diagonal(seed)
    opt = brute_force(f)[0]
    for init in ("build", "random", "kmedoids++"):
        res = solve(f, "fasterpam", seed=0, init=init)
        assert res.feasible and np.unique(res.selection).size == f.k, init
        assert res.extra["implementation"] == "numpy"  # the package assumes D[j, j] = 0
        assert res.objective == pytest.approx(f.evaluate(res.selection)) and res.objective >= opt - 1e-12
    with pytest.raises(InvalidInputError, match=r"^backend: the kmedoids package assumes a zero diagonal .* got D "
                                                r"with \d+ non-zero diagonal entries; use 'numpy'"):
        solve(f, "fasterpam", backend="kmedoids")


@pytest.mark.parametrize("method", ["highs", "scip", "pyomo", "cpsat"])
def test_exact_backends_warm_start_on_a_positive_diagonal(method):
    """The default warm start (FasterPAM) used to fail with 'selection: ... repeated' inside every backend."""
    for seed in (17, 51):
        f = _positive_diagonal(seed)
        if method not in available_methods(f):
            pytest.skip(f"{method} is not installed")
        res = solve(f, method, time_limit=60)
        assert res.extra["warm_start_source"] == "fasterpam"
        assert res.termination == "optimal" and res.objective == pytest.approx(brute_force(f)[0])


# ------------------------------------------------------------------ OR-Library
def test_pmed_reader_later_duplicate_edge_wins(tmp_path):
    p = tmp_path / "tiny.txt"
    p.write_text("4 4 2\n1 2 10\n2 3 1\n3 4 1\n1 2 3\n")
    D, k = read_pmed_graph(p)
    assert k == 2 and D[0, 1] == 3 and D[0, 3] == 5
    assert load_pmed(p).k == 2 and load_pmed(p, k=1).k == 1


@pytest.mark.parametrize("text,match", [
    ("4 2 1\n1 2 3\n", "header says n=4, m=2 edges"),
    ("3 1 1\n1 5 3\n", r"vertex indices must lie in 1..3"),
    ("3 1 1\n1 2 x\n", "expected integers, found 'x'"),
    ("3 1 1\n1 2 3\n", "not connected"),
])
def test_pmed_reader_bad_files(tmp_path, text, match):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(InvalidInputError, match=match):
        read_pmed_graph(p)


@needs_data("orlib", "pmed")
def test_pmed1_and_pmed4_are_proven_optimal():
    from benchsel.instances import load_pmed_optima

    opt = load_pmed_optima(PMED / "pmedopt.txt")
    for name in ("pmed1", "pmed4"):
        res = solve(load_pmed(PMED / f"{name}.txt"), "highs", time_limit=60)
        assert res.termination == "optimal" and res.objective == opt[name] and res.bound == pytest.approx(opt[name])


def test_result_row_is_flat():
    f = make_kmedoids(20, 2, seed=0)
    row = solve(f, "highs").to_dict()
    assert row["method"] == "highs" and row["termination"] == "optimal" and row["feasible"] is True
    assert all(v is None or isinstance(v, (int, float, str, bool)) for v in row.values())
