"""HoloCosm's cross-metric diagnostics against direct computation, the weak-to-strong split."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.holocosm import (
    cross_metric_worse_share,
    high_agreement_share,
    metric_rank_correlation,
    union_cost,
)
from benchsel.instances.responses import make_multimetric, paper_split, weak_to_strong_split


def test_metric_rank_correlation_is_spearman_of_model_means():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(9, 15, 4))
    Y[:, :, 3] = Y[:, :, 0] * 2 + 1  # a monotone copy of metric 0
    Y[3, :, 1] = Y[4, :, 1]  # a tie in metric 1's model means
    C = metric_rank_correlation(Y)
    mu = Y.mean(axis=1)
    for a, b in itertools.product(range(4), repeat=2):
        assert C[a, b] == pytest.approx(spearmanr(mu[:, a], mu[:, b]).statistic, abs=1e-12)
    assert C[0, 3] == pytest.approx(1.0) and np.allclose(C, C.T)


def test_metric_rank_correlation_constant_metric_and_bad_input():
    Y = np.random.default_rng(1).normal(size=(5, 6, 3))
    Y[:, :, 2] = 0.5
    C = metric_rank_correlation(Y)
    assert np.isnan(C[2]).all() and np.isnan(C[:, 2]).all() and np.isfinite(C[:2, :2]).all()
    with pytest.raises(InvalidInputError, match=r"Y: expected .*\(G, N, K\)"):
        metric_rank_correlation(Y[:, :, 0])  # 2-D where 3-D is needed
    with pytest.raises(InvalidInputError, match="at least 2 metrics"):
        metric_rank_correlation(Y[:, :, :1])
    with pytest.raises(InvalidInputError, match="at least 3 models"):
        metric_rank_correlation(Y[:2])


def test_high_agreement_share_counts_pairs_once():
    C = np.array([[1, 0.9, 0.2], [0.9, 1, np.nan], [0.2, np.nan, 1]])
    assert high_agreement_share(C) == pytest.approx(0.5)  # pairs (0,1) = 0.9, (0,2) = 0.2; (1,2) undefined
    assert high_agreement_share(C, 0.95) == 0.0
    with pytest.raises(InvalidInputError, match="square"):
        high_agreement_share(np.ones((2, 3)))


def test_cross_metric_worse_share_against_direct_count():
    rng = np.random.default_rng(2)
    E = rng.uniform(size=(4, 5, 5))
    ref = rng.uniform(size=5)
    direct = np.mean([E[r, a, b] > ref[b] for r in range(4) for a in range(5) for b in range(5) if a != b])
    assert cross_metric_worse_share(E, ref) == pytest.approx(direct)
    diag = np.mean([E[r, a, b] > ref[b] for r in range(4) for a in range(5) for b in range(5)])
    assert cross_metric_worse_share(E, ref, include_diagonal=True) == pytest.approx(diag)
    per_rep = rng.uniform(size=(4, 5))
    direct = np.mean([E[r, a, b] > per_rep[r, b] for r in range(4) for a in range(5) for b in range(5) if a != b])
    assert cross_metric_worse_share(E, per_rep) == pytest.approx(direct)
    # known answer: worse everywhere off the diagonal, better on it
    T = np.full((3, 3), 2.0)
    np.fill_diagonal(T, 0.0)
    assert cross_metric_worse_share(T, np.ones(3)) == 1.0
    assert cross_metric_worse_share(T, np.ones(3), include_diagonal=True) == pytest.approx(6 / 9)
    assert cross_metric_worse_share(np.ones((3, 3)), np.ones(3)) == 0.0  # ties are not worse


def test_cross_metric_worse_share_bad_input():
    with pytest.raises(InvalidInputError, match="nmae: expected square"):
        cross_metric_worse_share(np.ones((3, 4)), np.ones(4))
    with pytest.raises(InvalidInputError, match="random_nmae"):
        cross_metric_worse_share(np.ones((3, 3)), np.ones(4))
    with pytest.raises(InvalidInputError, match="nmae: expected"):
        cross_metric_worse_share(np.ones(3), np.ones(3))


def test_union_cost_against_direct_computation():
    sels = [np.array([0, 1, 2, 3]), np.array([2, 3, 4, 5]), np.array([5, 6, 7, 0])]
    u = union_cost(sels, 10)
    assert (u.size, u.budget) == (len(set(np.concatenate(sels).tolist())), 4)
    assert u.inflation == pytest.approx(8 / 4)
    assert union_cost([sels[0]] * 3).inflation == 1.0
    with pytest.raises(InvalidInputError, match=r"selections\[1\]"):
        union_cost([np.array([0, 1]), np.array([1, 1])])
    with pytest.raises(InvalidInputError, match=r"selections\[1\]"):
        union_cost([np.array([0, 1]), np.array([1, 2, 3])])
    with pytest.raises(InvalidInputError, match=r"selections\[0\]"):
        union_cost([np.array([0, 12])], 10)
    with pytest.raises(InvalidInputError, match="selections"):
        union_cost([])


def test_weak_to_strong_split():
    R = make_multimetric(12, 20, 3, corr=0.5, n_negative=1, seed=4)
    sp = weak_to_strong_split(R, 4)
    ref = paper_split(R, 4)
    assert np.array_equal(sp.score, ref.score)
    assert np.array_equal(sp.sources, ref.order[:4])
    assert np.array_equal(sp.targets, np.sort(ref.order[4:]))
    assert sp.score[sp.sources].max() <= sp.score[sp.targets].min()
    with pytest.raises(InvalidInputError, match="n_sources"):
        weak_to_strong_split(R, 11)
