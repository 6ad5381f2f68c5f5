"""The branch-and-cut's parallel tree search: several threads on one queue, each with its own HiGHS LP."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from benchsel.formulations import KMedoids
from benchsel.solvers import InvalidInputError, solve
from benchsel.solvers.backends.branch_and_cut.searcher import Searcher
from benchsel.solvers.conformance import brute_force

KW = dict(model="benders", warm_start=None, time_limit=60, seed=0)


def _branching_instance(n: int = 70, k: int = 8) -> KMedoids:
    X = np.random.default_rng(2).integers(0, 2, size=(n, 16)).astype(float)  # a flat LP: the tree branches
    return KMedoids.from_features(X, k=k, metric="correlation")


def test_two_threads_reach_the_single_thread_optimum_and_share_the_nodes():
    f = _branching_instance()
    one = solve(f, "highs", threads=1, **KW)
    two = solve(f, "highs", threads=2, parallel_after=0.0, **KW)
    assert one.extra["search_threads"] == 1 and one.extra["helper_nodes"] == 0
    assert one.termination == two.termination == "optimal"
    assert two.objective == pytest.approx(one.objective, rel=1e-9)
    assert two.bound == pytest.approx(one.objective, rel=1e-6) and two.bound <= two.objective + 1e-9
    ex = two.extra
    assert ex["search_threads"] == 2 and 0 < ex["helper_nodes"] < ex["bnc_nodes"]
    assert ex["bnc_open_nodes"] == 0
    assert f.evaluate(two.selection) == pytest.approx(two.objective)


@pytest.mark.parametrize("k", [3, 4])
def test_parallel_search_finds_the_brute_force_optimum(k):
    rng = np.random.default_rng(11)
    D = rng.integers(0, 40, size=(13, 13)).astype(float)
    np.fill_diagonal(D, 0)
    f = KMedoids(D, k, weights=rng.uniform(0.5, 2, 13))
    opt, _ = brute_force(f)
    res = solve(f, "highs", threads=2, parallel_after=0.0, strong=0, heuristic_every=0, **KW)
    assert res.termination == "optimal" and res.objective == pytest.approx(opt)
    assert res.bound == pytest.approx(opt, rel=1e-6)


def test_node_limit_with_threads_keeps_a_valid_bound_and_stops_every_thread():
    f = _branching_instance()
    opt = solve(f, "highs", threads=1, **KW).objective
    before = threading.active_count()
    res = solve(f, "highs", threads=2, parallel_after=0.0, max_nodes=6, **KW)
    assert res.termination == "iteration_limit"
    assert res.extra["bnc_nodes"] >= 6 and res.extra["search_threads"] == 2
    assert res.bound is not None and res.bound <= opt + 1e-9 <= res.objective + 2e-9
    assert res.extra["bnc_open_nodes"] > 0  # the nodes the threads held went back to the queue
    assert threading.active_count() == before


def test_a_helper_thread_error_is_raised_by_the_solve(monkeypatch):
    real = Searcher.process

    def process(self, node):
        if self.helper:
            raise RuntimeError("helper failed on purpose")
        return real(self, node)

    monkeypatch.setattr(Searcher, "process", process)
    before = threading.active_count()
    with pytest.raises(RuntimeError, match="helper failed on purpose"):
        solve(_branching_instance(), "highs", threads=2, parallel_after=0.0, **KW)
    assert threading.active_count() == before


def test_a_main_thread_error_stops_the_helper_threads(monkeypatch):
    real = Searcher.process

    def process(self, node):
        if not self.helper and len(self.threads.members) > 1 and self.stats["nodes"] >= 3:
            raise KeyboardInterrupt  # e.g. the user stops a long run
        return real(self, node)

    monkeypatch.setattr(Searcher, "process", process)
    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        solve(_branching_instance(), "highs", threads=2, parallel_after=0.0, **KW)
    assert threading.active_count() == before


def test_no_further_thread_beyond_the_lazy_rows_memory_budget(monkeypatch):
    from benchsel.solvers.backends import branch_and_cut as bc

    f = _branching_instance()
    lazy = f.linear_model(model="benders", allow_lazy=True).lazy
    assert lazy.memory_budget == 3 * 8 * f.n_items ** 2 + 400 * 2 ** 20  # the k-medoids memory goal
    one = solve(f, "highs", threads=1, **KW)
    monkeypatch.setattr(bc.memory, "_peak_rss_bytes", lambda: lazy.memory_budget - 2**20)  # 1 MB left
    monkeypatch.setattr(bc.threads.SearchThreads, "count", lambda self: 2)  # the default count, on any machine
    res = solve(f, "highs", parallel_after=0.0, **KW)  # the default count is held to the budget
    assert res.extra["search_threads"] == 1 and res.extra["helper_nodes"] == 0
    assert "1 of 2 search threads" in res.extra["search_threads_note"]
    assert "memory budget" in res.extra["search_threads_note"]
    assert res.termination == "optimal" and res.objective == pytest.approx(one.objective, rel=1e-9)
    asked = solve(f, "highs", threads=2, parallel_after=0.0, **KW)  # a count given explicitly is used as is
    assert asked.extra["search_threads"] == 2 and "search_threads_note" not in asked.extra
    monkeypatch.setattr(bc.memory, "_peak_rss_bytes", lambda: 0)  # room for the second thread
    monkeypatch.setattr(bc.memory, "_rss_bytes", lambda: 2**20)  # and it keeps running (pytest's own memory aside)
    two = solve(f, "highs", parallel_after=0.0, **KW)
    assert two.extra["search_threads"] == 2 and "search_threads_note" not in two.extra


def test_a_further_thread_is_expected_to_take_what_the_search_s_lp_side_took(monkeypatch):
    """The budget check counts the resident memory the search gained since it began (HiGHS' LP, factor,
    pool), not only a per-non-zero estimate: with room for the static estimate but not for that growth,
    the default count keeps one thread."""
    from benchsel.solvers.backends import branch_and_cut as bc

    now = bc.memory._rss_bytes()
    assert now is None or now > 0  # Linux: this process's resident memory
    f = _branching_instance()
    budget = f.linear_model(model="benders", allow_lazy=True).lazy.memory_budget
    monkeypatch.setattr(bc.threads.SearchThreads, "count", lambda self: 2)
    monkeypatch.setattr(bc.memory, "_peak_rss_bytes", lambda: budget // 2)  # room for the static estimate
    calls = []

    def rss() -> int:  # the search began at 0 and has since gained more than half the budget
        calls.append(1)
        return 0 if len(calls) == 1 else budget // 2 + 2**20

    monkeypatch.setattr(bc.memory, "_rss_bytes", rss)
    res = solve(f, "highs", parallel_after=0.0, **KW)
    assert res.extra["search_threads"] == 1 and "1 of 2 search threads" in res.extra["search_threads_note"]
    assert res.termination == "optimal"
    monkeypatch.setattr(bc.memory, "_rss_bytes", lambda: 2**20)  # nothing gained: the static estimate fits
    two = solve(f, "highs", parallel_after=0.0, **KW)
    assert two.extra["search_threads"] == 2 and "search_threads_note" not in two.extra
    assert two.objective == pytest.approx(res.objective, rel=1e-9)


def test_the_other_threads_retire_when_the_resident_memory_nears_the_budget(monkeypatch):
    """A thread that started within the budget but whose search then grew is retired: once the resident
    memory reaches RETIRE_SHARE of the budget the helper puts back its node and leaves, and the main thread
    finishes the same search (same optimum, nothing left open); threads given explicitly keep running."""
    from benchsel.solvers.backends import branch_and_cut as bc

    f = _branching_instance()
    budget = f.linear_model(model="benders", allow_lazy=True).lazy.memory_budget
    monkeypatch.setattr(bc.threads.SearchThreads, "count", lambda self: 2)
    monkeypatch.setattr(bc.memory, "_peak_rss_bytes", lambda: 2**20)  # room for a second thread at the start
    rss = {"now": 2**20}
    monkeypatch.setattr(bc.memory, "_rss_bytes", lambda: rss["now"])
    spawn = bc.threads.SearchThreads.spawn

    def spawn_then_grow(self):
        spawn(self)
        if self.threads:  # the search grows past the share after the thread started
            rss["now"] = int(bc.RETIRE_SHARE * budget) + 1

    monkeypatch.setattr(bc.threads.SearchThreads, "spawn", spawn_then_grow)
    res = solve(f, "highs", parallel_after=0.0, **KW)
    ex = res.extra
    assert ex["search_threads"] == 2 and ex["threads_retired"] == 1
    assert f"memory budget of {budget / 2**20:.0f} MB" in ex["search_threads_note"]
    assert "1 further search thread retired after" in ex["search_threads_note"]
    assert ex["bnc_open_nodes"] == 0 and res.termination == "optimal"
    retired = [t for t in threading.enumerate() if t.name == "benchsel-branch-and-cut"]
    assert not retired  # the helper has left its loop
    one = solve(f, "highs", threads=1, **KW)
    assert res.objective == pytest.approx(one.objective, rel=1e-9)
    assert res.bound == pytest.approx(one.objective, rel=1e-6)
    given = solve(f, "highs", threads=2, parallel_after=0.0, **KW)  # the memory passes the share again: kept
    assert given.extra["threads_retired"] == 0 and given.extra["search_threads"] == 2
    assert "search_threads_note" not in given.extra


def test_threads_and_parallel_options_are_checked():
    f = _branching_instance(20, 3)
    with pytest.raises(InvalidInputError, match="parallel_after"):
        solve(f, "highs", parallel_after=-1.0)
    with pytest.raises(InvalidInputError, match="own_share"):
        solve(f, "highs", own_share=2.0)
    with pytest.raises(InvalidInputError, match="threads"):
        solve(f, "highs", threads=0)
