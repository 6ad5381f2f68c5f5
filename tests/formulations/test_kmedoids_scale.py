"""KMedoids at scale: blockwise distances, float32, from_graph, the Benders cuts, the branch-and-cut,
the FasterPAM warm start, model-size guards, time limits, memory and the coreset-scale benchmark."""
from __future__ import annotations

import csv
import json
import time
import tracemalloc

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from support.data import DATA, needs_data

from benchsel.formulations import KMedoids
from benchsel.formulations.kmedoids import BendersCuts, ModelTooLargeError, SwapState, dissimilarity
from benchsel.instances import make_benchmark_responses, make_kmedoids
from benchsel.solvers import InvalidInputError, solve
from benchsel.solvers.conformance import brute_force

RESP = None if DATA is None else DATA / "responses" / "benchmark_prediction"


def _naive_dissimilarity(X, metric):
    if metric == "euclidean":
        D = cdist(X, X)
    else:
        Z = X - X.mean(axis=1, keepdims=True) if metric == "correlation" else X.copy()
        n = np.linalg.norm(Z, axis=1, keepdims=True)
        Z = Z / np.where(n > 0, n, 1)
        D = 1 - Z @ Z.T
    D = np.clip(D, 0, None)
    np.fill_diagonal(D, 0)
    return D


# ---------------------------------------------------------------- distances
@pytest.mark.parametrize("metric", ["correlation", "cosine", "euclidean"])
def test_blockwise_dissimilarity_matches_the_dense_formula(metric, monkeypatch):
    import benchsel.formulations.kmedoids.distances as km

    monkeypatch.setattr(km, "_BLOCK", 64)  # many blocks
    X = np.random.default_rng(0).normal(size=(50, 7))
    X[3] = 0.0  # a zero row
    assert np.allclose(dissimilarity(X, metric), _naive_dissimilarity(X, metric), atol=1e-12)
    D32 = dissimilarity(X, metric, dtype="float32")
    assert D32.dtype == np.float32 and np.allclose(D32, _naive_dissimilarity(X, metric), atol=1e-6)


def test_float32_storage_objective_in_float64_and_overflow_refused():
    X = np.random.default_rng(1).normal(size=(40, 5))
    f64 = KMedoids.from_features(X, 4, metric="euclidean")
    f32 = KMedoids.from_features(X, 4, metric="euclidean", dtype="float32")
    assert f32.D.dtype == np.float32 and f32.dtype == "float32" and f32.get_params()["dtype"] == "float32"
    S = np.array([1, 7, 20, 33])
    expect = float(np.sum(f32.D[:, S].astype(np.float64).min(axis=1)))
    assert f32.evaluate(S) == expect and abs(f32.evaluate(S) - f64.evaluate(S)) < 1e-4
    assert solve(f32, "highs", time_limit=30).termination == "optimal"
    with pytest.raises(InvalidInputError,
                       match=r"dtype: 'float32' cannot hold the distances in D \(largest value 1e\+39"):
        KMedoids(np.array([[0.0, 1e39], [1e39, 0.0]]), 1, dtype="float32")
    with pytest.raises(InvalidInputError, match="dtype: 'float32' cannot hold the distances"):
        dissimilarity(np.array([[0.0], [1e39]]), "euclidean", dtype="float32")
    with pytest.raises(InvalidInputError, match="dtype: expected one of 'float64', 'float32', got 'float16'"):
        KMedoids(np.eye(3), 1, dtype="float16")


# ------------------------------------------------------------------- graphs
def test_from_graph_shortest_paths_directed_multigraph_and_zero_weights():
    G = nx.Graph()
    G.add_weighted_edges_from([("a", "b", 2.0), ("b", "c", 0.0), ("c", "d", 5.0), ("a", "d", 9.0)])
    f = KMedoids.from_graph(G, 2)
    D = nx.floyd_warshall_numpy(G, nodelist=list(G.nodes))
    assert np.allclose(f.D, D) and f.D[1, 2] == 0.0
    g = KMedoids.from_graph(G, 1, nodelist=["d", "c", "b", "a"])
    assert g.D[0, 3] == 7.0
    H = nx.DiGraph([(0, 1), (1, 2), (2, 0)])
    h = KMedoids.from_graph(H, 1, weight=None)
    assert h.D[0, 2] == 2 and h.D[2, 0] == 1  # from 0 to 2 is two hops; 2 -> 0 is one
    M = nx.MultiGraph()
    M.add_edge(0, 1, weight=4.0)
    M.add_edge(0, 1, weight=1.5)
    M.add_edge(1, 1, weight=0.1)  # self-loop: ignored
    assert KMedoids.from_graph(M, 1).D[0, 1] == 1.5


@pytest.mark.parametrize("make,kw,match", [
    (lambda: nx.Graph([(0, 1), (2, 3)]), {}, "G: the graph is not connected"),
    (lambda: nx.DiGraph([(0, 1)]), {}, "G: the graph is not connected"),
    (lambda: nx.Graph([(0, 1, {"weight": -1})]), {}, "weight: expected finite non-negative edge weights"),
    (lambda: nx.Graph([(0, 1, {"weight": "far"})]), {}, "weight: edge .* non-numeric"),
    (lambda: nx.Graph([(0, 1), (1, 2)]), {"nodelist": [0, 1]}, r"nodelist: expected every node of G once"),
    (lambda: nx.Graph([(0, 1), (1, 2)]), {"nodelist": [0, 1, 1]}, "nodelist: expected distinct nodes"),
    (lambda: np.eye(3), {}, "G: expected a networkx Graph"),
])
def test_from_graph_bad_input(make, kw, match):
    with pytest.raises(InvalidInputError, match=match):
        KMedoids.from_graph(make(), 1, **kw)


# --------------------------------------------------------- oracle helpers
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40), k=st.integers(1, 6), weighted=st.booleans())
def test_incremental_build_is_greedy(seed, n, k, weighted):
    """Each BUILD step takes a candidate of largest gain (ties may break either way)."""
    rng = np.random.default_rng(seed)
    k = min(k, n - 1)
    f = KMedoids.from_features(rng.normal(size=(n, 3)), k, metric="euclidean",
                               weights=rng.uniform(0.2, 2, n) if weighted else None)
    sel = f.greedy_selection()
    assert len(set(sel.tolist())) == k
    d1 = None
    for step, j in enumerate(sel):
        cost = np.array([f.weights @ (f.D[:, c] if d1 is None else np.minimum(d1, f.D[:, c])) for c in range(n)])
        left = np.setdiff1d(np.arange(n), sel[:step])
        assert cost[j] <= cost[left].min() + 1e-9 * max(1.0, cost[j])
        d1 = f.D[:, j] if d1 is None else np.minimum(d1, f.D[:, j])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_swap_deltas_equal_the_cost_change(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 25)), int(rng.integers(1, 4))
    f = KMedoids.from_features(rng.normal(size=(n, 2)), k, metric="euclidean", weights=rng.uniform(0.5, 2, n))
    med = rng.choice(n, size=k, replace=False)
    s = SwapState(f.D, med, f.weights)
    cands = np.setdiff1d(np.arange(n), med)
    slot, delta = s.deltas(cands)
    for c, i, d in zip(cands, slot, delta):
        best = min(f.evaluate(np.r_[np.delete(med, t), c]) for t in range(k))
        assert f.evaluate(np.r_[np.delete(med, i), c]) == pytest.approx(best)
        assert d == pytest.approx(best - f.evaluate(med), abs=1e-9)


# ------------------------------------------------------------ Benders cuts
def _deepest(f, y, i):
    """Brute force: max over levels L in D[i] of L - sum_j max(0, L - D[i, j]) y_j."""
    return max(L - np.maximum(0.0, L - f.D[i, f.candidates]) @ y for L in f.D[i, f.candidates])


@pytest.mark.parametrize("sorted_rows", [None, 0, 7])
def test_separation_finds_the_deepest_cut_sorted_or_not(sorted_rows):
    f = make_kmedoids(30, 4, seed=3, weighted=True)
    m = f.linear_model(model="benders", allow_lazy=True)
    lazy: BendersCuts = m.lazy
    if sorted_rows is not None:  # pretend only the first rows are sorted yet
        lazy.sorted.done = 0
        lazy.sorted.extend()
        lazy.sorted.done = sorted_rows
        lazy.sort_slice = -1.0  # separate() sorts nothing more
    rng = np.random.default_rng(0)
    y = rng.dirichlet(np.ones(30)) * 4
    y = np.minimum(y, 1.0)
    x = np.zeros(m.n_cols)
    x[lazy.y_cols] = y
    L, act, _ = lazy.levels(y)
    for i in range(30):
        assert L[i] - act[i] == pytest.approx(_deepest(f, y, i), abs=1e-9)
    cuts = lazy.separate(x)
    A = cuts.csr(m.n_cols)
    viol = cuts.lb - A @ x
    assert cuts.n_rows == 30 and np.all(viol > 0)  # theta = 0 violates every deepest cut
    assert np.allclose(viol, [_deepest(f, y, i) for i in range(30)])


def test_benders_model_shares_the_distance_matrix():
    f = make_kmedoids(200, 5, seed=1)
    m = f.linear_model(model="benders", allow_lazy=True)
    assert np.shares_memory(m.lazy.Dc, f.D)
    assert m.lazy.sorted is f.sorted_candidates()  # one sorted table per instance
    assert m.lazy.sorted.order.dtype == np.int32


def test_separation_allocates_no_n_by_n_temporary():
    n = 2500
    f = make_kmedoids(n, 20, seed=2, metric="correlation", dim=30)
    m = f.linear_model(model="benders", allow_lazy=True)
    f.sorted_candidates()
    rng = np.random.default_rng(1)
    x = np.zeros(m.n_cols)
    x[m.lazy.y_cols[rng.choice(n, size=40, replace=False)]] = 0.5  # an LP-like point: 2k half-open medoids
    tracemalloc.start()
    cuts = m.lazy.separate(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert cuts is not None and cuts.n_rows == n
    # temporaries scale with the cuts it returns (N x walk depth), not with N x N
    assert peak < 16 * 8 * cuts.vals.size + 4 * 2**20 and peak < 0.75 * n * n * 8, (peak, cuts.vals.size)


# ---------------------------------------------------------- branch-and-cut
@pytest.mark.parametrize("opts", [{}, {"in_out": 0.0, "cut_age": 0}, {"branching": "fractional", "plunge": 0.0},
                                  {"strong": 3, "heuristic_every": 0}, {"cut_age": 1, "node_rounds": 1},
                                  {"cut_age": 1, "pool_nnz": 0}, {"strong": 3, "reliable": 2},
                                  {"strong": 2, "reliable": 1, "branching": "fractional"}])
def test_branch_and_cut_options_reach_the_brute_force_optimum(opts):
    rng = np.random.default_rng(5)
    D = rng.integers(0, 40, size=(11, 11)).astype(float)
    np.fill_diagonal(D, 0)
    for f in (KMedoids(D, 3, weights=rng.uniform(0.5, 2, 11)), KMedoids(D, 4, candidates=[0, 2, 3, 5, 7, 8, 10])):
        opt, _ = brute_force(f)
        res = solve(f, "highs", model="benders", warm_start=None, time_limit=60, **opts)
        assert res.termination == "optimal" and res.objective == pytest.approx(opt)
        assert res.bound == pytest.approx(opt, rel=1e-6)


def test_reliability_branching_strong_branches_only_unreliable_columns():
    X = np.random.default_rng(2).integers(0, 2, size=(70, 16)).astype(float)  # a flat LP: the tree branches
    f = KMedoids.from_features(X, k=8, metric="correlation")
    kw = dict(model="benders", warm_start=None, time_limit=60, seed=0, threads=1)  # one thread: counts compare
    ref = solve(f, "highs", strong=0, **kw)
    every = solve(f, "highs", strong=4, reliable=0, **kw)
    rel = solve(f, "highs", strong=4, reliable=1, **kw)
    for res in (every, rel):
        assert res.termination == "optimal" and res.objective == pytest.approx(ref.objective, rel=1e-9)
    assert ref.extra["strong_lps"] == 0
    # every branching node strong-branches 2 x 4 LPs without reliability; with it, only columns never observed
    assert ref.extra["bnc_nodes"] > 10
    assert 0 < rel.extra["strong_lps"] < every.extra["strong_lps"]
    with pytest.raises(InvalidInputError, match=r"reliable"):
        solve(f, "highs", model="benders", reliable=-1)


def test_columns_fixed_at_zero_leave_the_lp_and_cuts_keep_model_columns(monkeypatch):
    from benchsel.solvers.backends.branch_and_cut import BranchAndCut
    from benchsel.solvers.backends.branch_and_cut.lp import LPRelaxation

    seen: dict = {}
    real_run, real_compact = BranchAndCut.run, LPRelaxation.compact

    def run(self):
        seen["bnc"] = self.main.lp
        return real_run(self)

    def compact(self, glb, gub):
        before = self.cols.size
        real_compact(self, glb, gub)
        if self.cols.size < before:
            seen.setdefault("aged_before", self.stats["cuts_aged_out"])
            assert np.all(gub[np.isin(self.ints, self.cols, invert=True)] == 0)  # only columns held at 0

    monkeypatch.setattr(BranchAndCut, "run", run)
    monkeypatch.setattr(LPRelaxation, "compact", compact)
    X = np.random.default_rng(2).integers(0, 2, size=(90, 16)).astype(float)
    f = KMedoids.from_features(X, k=3, metric="correlation")
    kw = dict(model="benders", warm_start=None, time_limit=60, seed=0, cut_age=1, threads=1)
    kept = solve(f, "highs", compact=0.0, **kw)
    assert kept.extra["columns_removed"] == 0
    res = solve(f, "highs", compact=0.01, **kw)
    opt, _ = brute_force(f)
    for r in (kept, res):
        assert r.termination == "optimal" and r.objective == pytest.approx(opt)
        assert r.bound == pytest.approx(opt, rel=1e-6)
    ex, b = res.extra, seen["bnc"]
    assert ex["columns_removed"] > 0 and b.h.getNumCol() == b.cols.size == b.n - ex["columns_removed"]
    assert ex["bnc_nodes"] == kept.extra["bnc_nodes"] > 1  # the same search, on a smaller LP
    # rows that left the LP after the columns did were read back from HiGHS in model columns: each is a
    # Benders cut theta_i + sum_j max(0, L - D[i, j]) y_j >= L of its own item, entry by entry
    assert ex["cuts_aged_out"] > seen["aged_before"] and b.pool.size > 0
    lazy, A = b.model.lazy, b.pool.A.tocsr()
    theta_of = {int(c): i for i, c in enumerate(lazy.theta_cols)}
    y_of = {int(c): j for j, c in enumerate(lazy.y_cols)}
    for r in range(A.shape[0]):
        cols, vals = A.indices[A.indptr[r]:A.indptr[r + 1]], A.data[A.indptr[r]:A.indptr[r + 1]]
        items = [theta_of[int(c)] for c in cols if int(c) in theta_of]
        assert len(items) == 1
        i, L = items[0], b.pool.lb[r]
        want = {int(lazy.y_cols[j]): L - lazy.Dc[i, j] for j in np.flatnonzero(lazy.Dc[i] < L)}
        want[int(lazy.theta_cols[i])] = 1.0
        got = dict(zip(cols.tolist(), vals.tolist()))
        assert set(got) <= set(want) and all(got[c] == pytest.approx(want[c], rel=1e-9) for c in got)
        miss = set(want) - set(got) - {c for c in want if c in y_of and b.col_of[c] < 0}  # dropped: held at 0
        assert all(want[c] < 1e-12 for c in miss)  # else only rounding-level ties the cut leaves out
    with pytest.raises(InvalidInputError, match=r"compact"):
        solve(f, "highs", model="benders", compact=1.5)


def test_strong_branching_budget_caps_its_share_of_the_simplex_iterations(monkeypatch):
    from benchsel.solvers.backends.branch_and_cut.branching import Brancher

    X = np.random.default_rng(2).integers(0, 2, size=(70, 16)).astype(float)  # the flat LP of the test above
    f = KMedoids.from_features(X, k=8, metric="correlation")
    kw = dict(model="benders", warm_start=None, time_limit=60, seed=0, strong=4, reliable=0, threads=1)
    free = solve(f, "highs", strong_share=None, **kw)
    off = solve(f, "highs", strong_share=0.0, strong_offset=0, **kw)
    caps: list[int] = []
    real_cap = Brancher.strong_iteration_cap

    def spy(self):
        cap = real_cap(self)
        caps.append(cap)
        return cap

    monkeypatch.setattr(Brancher, "strong_iteration_cap", spy)
    some = solve(f, "highs", strong_share=0.1, strong_offset=0, **kw)
    for res in (free, off, some):
        assert res.termination == "optimal" and res.objective == pytest.approx(free.objective, rel=1e-9)
    assert free.extra["strong_skipped"] == 0 and free.extra["strong_lps"] > 0
    # no budget at all: every branching node falls back to pseudo-costs
    assert off.extra["strong_lps"] == 0 and off.extra["strong_iterations"] == 0 and off.extra["strong_skipped"] > 0
    # a 10 % budget: checked before each node, so it is exceeded by at most that node's 2 x 4 capped LPs
    ex = some.extra
    other = ex["simplex_iterations"] - ex["strong_iterations"]
    assert ex["strong_skipped"] > 0 and 0 < ex["strong_iterations"] < free.extra["strong_iterations"]
    assert caps and ex["strong_iterations"] <= 0.1 * other + 8 * max(caps)
    for bad in ({"strong_share": -0.5}, {"strong_offset": -1}):
        with pytest.raises(InvalidInputError, match=next(iter(bad))):
            solve(f, "highs", model="benders", **bad)


def test_strong_branching_lp_stops_at_its_iteration_cap():
    import highspy

    from benchsel.solvers.backends.branch_and_cut import BnCOptions, BranchAndCut
    from benchsel.solvers.backends.common import pass_to_highs  # the backend's own model loading

    X = np.random.default_rng(2).integers(0, 2, size=(70, 16)).astype(float)
    m = KMedoids.from_features(X, k=8, metric="correlation").linear_model(model="benders", allow_lazy=True)

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    pass_to_highs(h, highspy, m)
    bnc = BranchAndCut(h, highspy, m, key=lambda s: None, options=BnCOptions()).main
    h.changeColsIntegrality(int(bnc.ints.size), bnc.ints, np.zeros(bnc.ints.size, dtype=np.uint8))
    root = bnc.node_lp(bnc.fixing.lb, bnc.fixing.ub, root=True)  # the root with its cuts
    assert root.status == "optimal" and bnc.stats["cuts"] > 0
    h.clearSolver()  # no basis: one iteration cannot finish it
    assert bnc.lp.solve(iteration_limit=1) == "iterations"
    assert h.getOptionValue("simplex_iteration_limit")[1] == 2**31 - 1  # the limit applies to that LP only
    assert bnc.lp.solve() == "optimal"


def test_an_lp_left_without_a_verdict_is_solved_again_from_scratch(monkeypatch):
    import highspy

    class Flaky(highspy.Highs):  # the first LP with cut rows ends "unknown", as HiGHS once did at N = 14 000
        fails = 1

        def getModelStatus(self):
            st = super().getModelStatus()
            if Flaky.fails and st == highspy.HighsModelStatus.kOptimal and self.getNumRow() > 1:
                Flaky.fails -= 1
                return highspy.HighsModelStatus.kUnknown
            return st

    monkeypatch.setattr(highspy, "Highs", Flaky)
    rng = np.random.default_rng(5)
    D = rng.integers(0, 40, size=(11, 11)).astype(float)
    np.fill_diagonal(D, 0)
    f = KMedoids(D, 3)
    res = solve(f, "highs", model="benders", warm_start=None, time_limit=60)
    assert Flaky.fails == 0 and res.extra["lp_retries"] == 1
    assert res.termination == "optimal" and res.objective == pytest.approx(brute_force(f)[0])


def test_cut_pool_forgets_its_oldest_rows_beyond_its_nonzero_budget():
    import scipy.sparse as sp

    from benchsel.solvers.backends.branch_and_cut import CutPool

    pool = CutPool(6, capacity=100, max_nnz=7)
    rows = [sp.csr_array(np.array([[1.0, 1, 1, 0, 0, 0]])), sp.csr_array(np.array([[0, 2.0, 0, 0, 0, 0]])),
            sp.csr_array(np.array([[0, 0, 3.0, 3, 3, 3]]))]
    for i, A in enumerate(rows):
        pool.add(A, np.array([float(i)]), np.array([np.inf]))
    # 3 + 1 + 4 = 8 non-zeros > 7: the oldest row (3 non-zeros) goes, the newer two stay, in order
    assert pool.size == 2 and pool.A.nnz == 5 and pool.forgotten == 1
    assert list(pool.lb) == [1.0, 2.0]
    x = np.zeros(6)
    taken = pool.take_violated(x, 1e-9)  # 0 >= 1 and 0 >= 2 are both violated
    assert taken is not None and taken.n_rows == 2 and pool.size == 0


def test_fasterpam_warm_start_may_use_half_the_limit_with_no_cap(monkeypatch):
    # at N = 14 000 FasterPAM needs about 30 s: a 10 s cap left the exact incumbent worse than FasterPAM's
    from benchsel.solvers import methods
    from benchsel.solvers.backends import common as _exact

    seen = []
    real = methods.get_method

    class Spy:
        def __init__(self, m):
            self.m = m

        def run(self, f, *, time_limit=None, seed=None):
            seen.append((self.m.name, time_limit))
            return self.m.run(f, time_limit=time_limit, seed=seed)

    monkeypatch.setattr(_exact, "get_method", lambda name: Spy(real(name)))
    f = make_kmedoids(40, 3, seed=1, dim=3)
    for limit, want in ((600.0, 300.0), (None, None), (4.0, 2.0)):
        sel, source = _exact._warm_start(f, "auto", _exact.Budget(limit), 0)
        assert source == "fasterpam" and sel is not None and seen[-1] == ("fasterpam", want)
    from benchsel.formulations.base import Formulation
    from benchsel.formulations.holocosm import RankingRiskReconstruction

    # others keep the default share and cap
    ws = RankingRiskReconstruction.numerical_properties.warm_start
    assert (ws.share, ws.cap) == (0.2, 10.0) == (Formulation.numerical_properties.warm_start.share,
                                                 Formulation.numerical_properties.warm_start.cap)


def test_warm_start_is_fasterpam_and_never_beaten_by_it():
    f = make_kmedoids(400, 12, seed=8, dim=6, metric="correlation")
    fp = solve(f, "fasterpam", seed=0)
    res = solve(f, "highs", time_limit=60)
    assert res.extra["warm_start_source"] == "fasterpam" and res.extra["model_variant"] == "benders"
    assert res.objective <= fp.objective + 1e-9 and res.termination == "optimal" and res.gap <= 1e-4


def test_progress_lines_when_verbose(capsys):
    f = make_kmedoids(300, 6, seed=4, metric="correlation", dim=8)
    import benchsel.solvers.backends.highs as hb
    from benchsel.solvers.backends.branch_and_cut import BnCOptions

    old = hb.BnCOptions
    hb.BnCOptions = lambda **kw: BnCOptions(**{**kw, "log_every": 0.0})  # type: ignore[assignment]
    try:
        solve(f, "highs", time_limit=30, verbose=True)
    finally:
        hb.BnCOptions = old  # type: ignore[assignment]
    assert "[benchsel] highs branch-and-cut:" in capsys.readouterr().err


# -------------------------------------------------------------- size guards
def test_explicit_radius_too_large_is_refused_with_its_size(monkeypatch):
    f = make_kmedoids(300, 5, seed=0)
    monkeypatch.setattr(KMedoids, "MAX_MODEL_BYTES", 10_000_000)
    with pytest.raises(InvalidInputError, match=r"model: the radius model of this instance \(N = 300, 300 candidates, "
                                                r"k = 5\) has about 88,800 columns and [\d,]+ non-zeros, "
                                                r"about 0\.\d\d GiB"):
        solve(f, "highs", model="radius", time_limit=10)
    with pytest.raises(ModelTooLargeError) as e:
        f.linear_model(model="assignment")
    assert e.value.size["columns"] == 300 * 300 + 300 and e.value.size["bytes"] > 10_000_000


@pytest.mark.parametrize("method", ["cpsat", "pyomo"])
def test_auto_never_picks_a_static_model_that_does_not_fit(method, monkeypatch):
    f = make_kmedoids(200, 4, seed=6)
    monkeypatch.setattr(KMedoids, "MAX_MODEL_BYTES", 1_000_000)
    opt = solve(f, "highs", time_limit=60).objective
    res = solve(f, method, time_limit=5)
    assert res.termination == "time_limit" and res.feasible and "model: the radius model" in res.extra["model_skipped"]
    assert res.extra["warm_start_source"] == "fasterpam"
    assert res.bound is not None and res.bound <= opt + 1e-6 and res.objective >= opt - 1e-9


def test_lagrangian_bound_is_valid_and_near_the_lp_bound():
    f = make_kmedoids(250, 6, seed=9, weighted=True, metric="correlation", dim=5)
    res = solve(f, "highs", time_limit=60)
    lb, lam = f.lagrangian_bound(10, incumbent=res.selection)
    assert lb <= res.objective + 1e-6 and lam.shape == (250,)
    assert lb >= res.extra["root_bound"] - 0.02 * abs(res.objective)
    g = KMedoids(np.array([[0, 1, 4], [1, 0, 2], [4, 2, 0.0]]), 1)
    assert g.quick_bound(1) <= brute_force(g)[0] + 1e-9


# -------------------------------------------------------------- time limits
def test_time_limit_holds_with_incumbent_and_bound_at_n_2000():
    Y = make_benchmark_responses(60, 2000, seed=3)
    f = KMedoids.from_features(Y.T[Y.std(axis=0) > 0], 50, metric="correlation")
    t0 = time.perf_counter()
    res = solve(f, "highs", time_limit=4)
    wall = time.perf_counter() - t0
    assert wall < 3 * 4 + 10, wall  # catches hangs; the benchmark measures 1.2 x limit + 2 s
    assert res.feasible and res.bound is not None and res.bound <= res.objective + 1e-9
    assert res.termination in ("time_limit", "optimal")


def test_fasterpam_time_limit_checks_the_clock_between_passes():
    f = make_kmedoids(1500, 30, seed=1, metric="correlation", dim=20)
    t0 = time.perf_counter()
    res = solve(f, "fasterpam", time_limit=0.2, init="random")
    assert time.perf_counter() - t0 < 10 and res.feasible


def test_benchmark_responses_generator():
    Y = make_benchmark_responses(10, 300, n_subjects=5, seed=0)
    assert Y.shape == (10, 300) and set(np.unique(Y)) <= {0.0, 1.0}
    assert np.array_equal(Y, make_benchmark_responses(10, 300, n_subjects=5, seed=0))


# ----------------------------------------------------------------- benchmark
@needs_data("responses", "benchmark_prediction")
def test_coreset_scale_script_and_suite(capsys, tmp_path):
    from benchsel.benchmarks.studies import coreset_scale
    from benchsel.benchmarks.suites import suite_instances

    assert coreset_scale.main(["--matrices", "glue_rte", "--k", "25", "--time-limit", "30"]) == 0
    out = capsys.readouterr().out
    assert "glue_rte" in out and "highs N <= 2100: 1/1 proven" in out
    row = coreset_scale.run_case("glue_rte", 10, "fasterpam", 30, data_dir=DATA, options={"n_restarts": 3})
    assert json.loads(row["options"]) == {"n_restarts": 3} and row["termination"] == "converged"
    out_csv = tmp_path / "rows.csv"
    assert coreset_scale.main(["--matrices", "glue_rte", "--k", "10", "--methods", "fasterpam", "--time-limit", "30",
                               "--fasterpam-options", '{"n_restarts": 2}', "--out", str(out_csv)]) == 0
    (r,) = csv.DictReader(out_csv.open())
    assert json.loads(r["options"]) == {"n_restarts": 2}
    specs = suite_instances("coreset-scale", DATA)
    names = [s.name for s in specs]
    assert "glue_rte-k10" in names and "synthetic-14000-k100" in names and len(names) == 14 * 4 + 1
    f = next(s for s in specs if s.name == "glue_rte-k10").make()
    assert f.k == 10 and f.n_items == 277


def test_lagrangian_terms_sorted_equal_dense():
    from benchsel.formulations.kmedoids.bounds import _LagrangeTerms

    f = make_kmedoids(200, 5, seed=2, weighted=True, metric="correlation", dim=5)
    Dc, w, rows = f.data.cost_matrix(), f.weights, f.sorted_candidates()
    rng = np.random.default_rng(0)
    for _ in range(3):
        lam = w * rng.uniform(0, 0.5, 200)
        dense, srt = _LagrangeTerms(Dc, w, None), _LagrangeTerms(Dc, w, rows)
        rho = dense.rho(lam)
        assert np.allclose(rho, srt.rho(lam))
        S = np.argsort(rho)[:5]
        assert np.array_equal(dense.served(lam, S), srt.served(lam, S))


def test_lagrangian_warm_start_of_the_root_and_its_bound(monkeypatch):
    f = make_kmedoids(300, 6, seed=3, metric="correlation", dim=6)
    plain = solve(f, "highs", time_limit=60)
    assert plain.extra["initial_rows"] == 0  # a small instance: the plain cut loop
    monkeypatch.setattr(BendersCuts, "INITIAL_ROWS_MIN", 0)  # as on a large instance
    res = solve(f, "highs", time_limit=60)
    assert res.extra["initial_rows"] == 300 and res.termination == "optimal"
    assert res.objective == pytest.approx(plain.objective)
    m = f.linear_model(model="benders", allow_lazy=True)
    m.lazy.initial_rows(1.0, res.selection)
    assert m.lazy.initial_bound <= res.objective + 1e-9


def test_root_that_separates_to_the_end_is_the_lp_relaxation():
    """``root_end == "separated"``: no Benders cut is violated, so the root bound is the LP relaxation of
    the (static) assignment model; ``root_rounds`` counts the cut rounds."""
    from scipy.optimize import linprog

    f = make_kmedoids(40, 4, seed=3, metric="correlation", dim=4)
    res = solve(f, "highs", model="benders", warm_start=None, heuristic_every=0, time_limit=60, threads=1)
    assert res.extra["root_end"] == "separated" and res.extra["root_rounds"] >= 1
    m = f.linear_model(model="assignment")
    eq = m.row_lb == m.row_ub
    A = m.A.tocsr()
    le, ge = np.isfinite(m.row_ub) & ~eq, np.isfinite(m.row_lb) & ~eq
    lp = linprog(m.c, A_ub=sp.vstack([A[le], -A[ge]]), b_ub=np.concatenate([m.row_ub[le], -m.row_lb[ge]]),
                 A_eq=A[eq], b_eq=m.row_lb[eq], bounds=np.column_stack([m.col_lb, m.col_ub]), method="highs")
    assert lp.status == 0
    relax = lp.fun + m.c0
    assert abs(res.extra["root_bound"] - relax) <= 1e-6 * max(1.0, abs(relax))
    assert res.extra["root_bound"] <= res.objective + 1e-9
