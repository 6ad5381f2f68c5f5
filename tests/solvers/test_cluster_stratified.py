"""The ``"cluster-stratified"`` selection (issue 41, goal 3): the items' k-medoids clusters as strata of a
balanced design sample, and its hybrid with difficulty strata."""
from __future__ import annotations

import numpy as np
import pytest

import benchsel
from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation.design import difficulty_features, difficulty_score
from benchsel.solvers import solve
from benchsel.solvers.selections import (
    CLUSTER_SPACES,
    anchor_kmedoids,
    cluster_stratified_draw,
    get_selection,
    item_clusters,
    select_items,
    selection_names,
)


@pytest.fixture(scope="module")
def Y():
    return irt_responses(40, 150, seed=3)


def test_registered_as_a_design_run_by_name_only():
    s = get_selection("cluster-stratified")
    assert s.draw is cluster_stratified_draw and s.build_options == ("draws", "space", "levels")
    assert "cluster-stratified" in selection_names() and "cluster-stratified" not in selection_names(fidelity=True)


def test_one_item_per_cluster_weighted_by_cluster_share(Y):
    k = 12
    r = select_items(Y, k, "cluster-stratified", seed=4)
    labels = item_clusters(Y, k, int(np.random.default_rng(4).integers(2**31)))  # the draw's first seed
    assert r.items.size == k and np.unique(labels[r.items]).size == k  # one item in each cluster
    sizes = np.bincount(labels, minlength=k)
    assert r.weights.sum() == pytest.approx(1.0)
    assert np.allclose(r.weights, sizes[labels[r.items]] / Y.shape[1])  # weight = cluster size / N
    info = r.result.extra
    assert info["draws"] == 1000 and info["space"] == "correlation" and info["clusters"] == k
    assert (info["smallest_stratum"], info["largest_stratum"]) == (sizes.min(), sizes.max())
    assert r.result.formulation == "sampling design"


def test_clusters_are_anchorpoints_kmedoids_solved_by_fasterpam(Y):
    f = anchor_kmedoids(Y, 8)
    medoids = np.sort(solve(f, "fasterpam", time_limit=None, seed=5).selection)
    labels = item_clusters(Y, 8, 5)
    assert np.array_equal(medoids[labels], f.assign(medoids))
    assert np.array_equal(labels[medoids], np.arange(8))


def test_reproducible_with_a_seed(Y):
    a = select_items(Y, 10, "cluster-stratified", seed=7)
    b = select_items(Y, 10, "cluster-stratified", seed=7)
    assert np.array_equal(a.items, b.items) and np.array_equal(a.weights, b.weights)
    others = {tuple(select_items(Y, 10, "cluster-stratified", seed=s, draws=1).items) for s in range(5)}
    assert len(others) > 1  # a random design: other seeds draw other items


def test_balancing_chooses_among_draws(Y):
    one = select_items(Y, 10, "cluster-stratified", seed=2, draws=1).result.extra["imbalance"]
    many = select_items(Y, 10, "cluster-stratified", seed=2, draws=300).result.extra["imbalance"]
    assert many <= one


@pytest.mark.parametrize("space", CLUSTER_SPACES)
def test_every_space_gives_a_design_sample(Y, space):
    r = select_items(Y, 9, "cluster-stratified", seed=1, space=space, draws=50)
    assert r.items.size == 9 and np.unique(r.items).size == 9 and r.weights.sum() == pytest.approx(1.0)
    assert r.result.extra["space"] == space


def test_levels_cross_clusters_with_difficulty(Y):
    k = 12
    r = select_items(Y, k, "cluster-stratified", seed=3, levels=3, draws=20)
    assert r.result.extra["clusters"] == 4 and r.items.size == k and r.weights.sum() == pytest.approx(1.0)
    # levels >= k: one cluster, k equal-count strata of the items sorted by difficulty ("stratified"'s design)
    one = select_items(Y, k, "cluster-stratified", seed=3, levels=k, draws=20)
    assert one.result.extra["clusters"] == 1
    order = np.lexsort((np.arange(Y.shape[1]), difficulty_score(difficulty_features(Y))))
    edges = np.round(np.linspace(0, Y.shape[1], k + 1)).astype(int)
    pos = np.argsort(order)[one.items]
    assert sorted(np.searchsorted(edges, pos, side="right") - 1) == list(range(k))
    assert np.allclose(np.sort(one.weights), np.sort(np.diff(edges) / Y.shape[1]))


def test_compress_passes_the_cluster_shares_to_the_estimator(Y):
    c = benchsel.compress(Y[:30], k=10, selection="cluster-stratified")
    assert c.estimator.name == "auto" and np.allclose(c.estimator.params["weights"], c.selection.weights)
    assert c.predict(Y[30:, c.items]).shape == (10,)


def test_bad_options_are_refused_by_name(Y):
    with pytest.raises(InvalidInputError, match=r"^draws: .*got 0"):
        select_items(Y, 5, "cluster-stratified", draws=0)
    with pytest.raises(InvalidInputError, match=r"^space: expected one of 'correlation', 'sqeuclidean', "
                                                r"'difficulty', got str 'cosine'"):
        select_items(Y, 5, "cluster-stratified", space="cosine")
    with pytest.raises(InvalidInputError, match=r"^levels: .*got 0"):
        select_items(Y, 5, "cluster-stratified", levels=0)
    with pytest.raises(InvalidInputError, match=r"^levels: "):
        select_items(Y, 5, "cluster-stratified", levels=1.5)
    with pytest.raises(InvalidInputError, match=r"selection 'cluster-stratified' takes the options draws, space, "
                                                r"levels; got level$"):
        select_items(Y, 5, "cluster-stratified", level=2)
    with pytest.raises(InvalidInputError, match=r"^k: expected 1 <= k < 150"):
        select_items(Y, 150, "cluster-stratified")
