"""Strong branching's domain reductions in the HiGHS branch-and-cut: children shown past the cutoff are not
created, columns with one such side are fixed to the other, and the proven optimum stays the brute-force one."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.formulations import KMedoids
from benchsel.solvers import solve
from benchsel.solvers.backends.branch_and_cut.branching import Brancher
from benchsel.solvers.conformance import brute_force

KW = dict(model="benders", warm_start=None, threads=1, time_limit=60, seed=0, heuristic_every=0)


def _flat(seed: int) -> KMedoids:
    X = np.random.default_rng(seed).integers(0, 2, size=(20, 10)).astype(float)  # fractional root LPs
    return KMedoids.from_features(X, k=4, metric="correlation")


def test_strong_branching_reductions_keep_the_brute_force_optimum():
    reductions = 0
    for seed in (3, 4, 7, 8):
        f = _flat(seed)
        opt, _ = brute_force(f)
        res = solve(f, "highs", **KW)
        assert res.termination == "optimal"
        assert res.objective == pytest.approx(opt, rel=1e-12)
        assert res.bound <= res.objective + 1e-9 and res.bound == pytest.approx(opt, rel=1e-6)
        reductions += res.extra["strong_fixed"] + res.extra["strong_pruned"]
    assert reductions > 0  # the instances exercise the reductions


def test_children_past_the_cutoff_are_not_solved(monkeypatch):
    """Every child strong branching bounds past the cutoff is dropped at branching, so no node taken from the
    queue starts with a bound past the cutoff it was created under."""
    created: list[tuple[float, float]] = []
    real = Brancher.branch

    def branch(self, lp, lb, ub, depth, frac):
        kids = real(self, lp, lb, ub, depth, frac)
        created.extend((c.bound, self.incumbent.cutoff()) for c in kids)
        return kids

    monkeypatch.setattr(Brancher, "branch", branch)
    res = solve(_flat(3), "highs", **KW)
    assert res.termination == "optimal" and res.extra["strong_pruned"] + res.extra["strong_fixed"] > 0
    assert created and all(b < c for b, c in created)


def test_without_strong_branching_nothing_is_reduced():
    res = solve(_flat(3), "highs", strong=0, **KW)
    opt, _ = brute_force(_flat(3))
    assert res.termination == "optimal" and res.objective == pytest.approx(opt, rel=1e-12)
    assert res.extra["strong_fixed"] == res.extra["strong_pruned"] == res.extra["strong_lps"] == 0
