"""Selections: named ways of choosing ``k`` items from source scores, and :func:`select_items`.

A selection is a formulation built from the source scores plus a registered method that solves it
(:func:`benchsel.solvers.methods.register_method`), or a sampling design that draws the items.
:func:`register_selection` adds one by name; :func:`benchsel.solvers.compression.compress` and the
fidelity benchmark accept every registered name.
"""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.bayes import BatchInformationGain
from benchsel.formulations.bayes.evaluate import bayesame_evaluate
from benchsel.formulations.bayes.model import bucketize
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.registry import Registry
from benchsel.formulations.core.result import Result, Termination
from benchsel.formulations.core.validation import check_int, check_run_settings, check_unique_labels, describe
from benchsel.formulations.estimation import check_scores
from benchsel.formulations.estimation.design import (
    BALANCE_DRAWS,
    difficulty_features,
    difficulty_score,
    draw_balanced_sample,
    proportional_strata,
)
from benchsel.formulations.estimation.irt import fit_irt
from benchsel.formulations.holocosm import RankingRiskReconstruction
from benchsel.formulations.kmedoids import KMedoids
from benchsel.formulations.kmedoids.bounds import available_bytes
from benchsel.formulations.kmedoids.distances import dissimilarity
from benchsel.formulations.repcore import align_hidden_states
from benchsel.solvers.api import solve
from benchsel.solvers.methods import get_method

__all__ = [
    "CLUSTER_SPACES",
    "DENSE_MEMORY_SHARE",
    "SELECTIONS",
    "Selection",
    "SelectionResult",
    "anchor_kmedoids",
    "bayesame_draw",
    "check_matrix",
    "check_selection_input",
    "check_source_scores",
    "check_tensor",
    "cluster_stratified_draw",
    "get_selection",
    "holocosm_problem",
    "irt_kmedoids",
    "item_clusters",
    "register_selection",
    "repcore_problem",
    "select_items",
    "selection_names",
    "stratified_draw",
]

# ------------------------------------------------------------------ builders
def anchor_kmedoids(Y_source: np.ndarray, k: int, seed: int = 0) -> Any:
    """AnchorPoints' k-medoids problem: items as points, ``1 - Pearson`` of their source score vectors.

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Source models (rows) x items (columns).
    k : int
    seed : int
        Unused (the problem is deterministic).
    """

    _dense_fits(np.shape(Y_source)[1], "kmedoids")
    return KMedoids.from_features(np.asarray(Y_source, dtype=float).T, k, metric="correlation")


def irt_kmedoids(Y_source: np.ndarray, k: int, seed: int = 0, dim: int = 1) -> Any:
    """tinyBenchmarks' IRT anchor problem: k-medoids on the items' 2PL parameters ``(a_i, b_i)`` (Euclidean).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Source scores in [0, 1].
    k : int
    seed : int
        Seeds the IRT fit's start.
    dim : int
        Latent dimension of the 2PL model.
    """

    _dense_fits(np.shape(Y_source)[1], "irt-anchor")
    model = fit_irt(Y_source, dim, seed=seed)
    return KMedoids.from_features(model.item_embedding(), k, metric="euclidean")


def stratified_draw(Y_source: np.ndarray, k: int, seed: int = 0, *, draws: int = BALANCE_DRAWS
                    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The ``"stratified"`` design: items sorted by difficulty for strong models, ``k`` equal-count strata,
    one item drawn uniformly from each; of ``draws`` such samples, the one whose stratum-weighted mean
    reproduces the sources' full scores best
    (:func:`benchsel.formulations.estimation.design.balanced_stratified_sample`).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Checked source scores (:func:`check_selection_input`), trusted here.
    k : int
        Checked, ``1 <= k < N``.
    seed : int
    draws : int
        Candidate samples (``selection_options={"draws": 1}``: the plain stratified sample).

    Returns
    -------
    items : ndarray of int64, shape (k,)
    weights : ndarray, shape (k,)
        Each stratum's share of the items.
    info : dict
        ``draws`` and ``imbalance`` (root mean squared error of the sample's weighted mean against the
        sources' full scores).
    """
    # Y_source and k were checked once at the boundary (check_selection_input); draws is this design's option
    draws = check_int(draws, "draws", low=1)
    Y = np.asarray(Y_source, dtype=float)
    items, w, imbalance = draw_balanced_sample(difficulty_score(difficulty_features(Y)), k, Y, draws, seed)
    return items, w, {"draws": draws, "imbalance": imbalance}


#: Item spaces :func:`cluster_stratified_draw` clusters in.
CLUSTER_SPACES = ("correlation", "sqeuclidean", "difficulty")


def item_clusters(Y_source: np.ndarray, k: int, seed: int = 0, *, space: str = "correlation") -> np.ndarray:
    """The items' ``k`` k-medoids clusters, solved by FasterPAM: each item's cluster label; shape (N,).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Checked source scores, trusted here.
    k : int
        ``1 <= k < N``.
    seed : int
        Seeds FasterPAM.
    space : {"correlation", "sqeuclidean", "difficulty"}
        ``"correlation"``: AnchorPoints' problem (:func:`anchor_kmedoids`, ``1 - Pearson`` of the items' source
        score vectors, blind to an item's mean score); ``"sqeuclidean"``: squared Euclidean distance of the
        items' source score vectors (for 0/1 scores the number of sources that score the two items apart),
        so a cluster's summed distance to its medoid bounds from above its items' variance summed over the
        sources, which makes the variance of the stratified mean; ``"difficulty"``: Euclidean k-medoids on
        the items' difficulty features (:func:`~benchsel.formulations.estimation.design.difficulty_features`,
        their mean over all sources and over the strongest).

    Returns
    -------
    labels : ndarray of int64, shape (N,)
        ``labels[i]`` in ``0 .. k - 1``: the rank of item ``i``'s nearest medoid among the sorted medoids
        (ties to the lowest index); every label is used (each medoid is in its own cluster).
    """
    if not isinstance(space, str) or space not in CLUSTER_SPACES:
        raise InvalidInputError(f"space: expected one of {', '.join(map(repr, CLUSTER_SPACES))}, got "
                                f"{describe(space)}")
    Y = np.asarray(Y_source, dtype=float)
    if space == "correlation":
        f = anchor_kmedoids(Y, k)
    elif space == "sqeuclidean":
        _dense_fits(Y.shape[1], "cluster-stratified")
        D = dissimilarity(Y.T, "euclidean")
        f = KMedoids(np.square(D, out=D), k)
    else:
        _dense_fits(Y.shape[1], "cluster-stratified")
        f = KMedoids.from_features(difficulty_features(Y), k, metric="euclidean")
    res = solve(f, "fasterpam", time_limit=None, seed=seed)
    medoids = np.sort(np.asarray(res.selection, dtype=np.int64))
    labels = np.searchsorted(medoids, f.assign(medoids)).astype(np.int64)
    labels[medoids] = np.arange(medoids.size)  # a medoid with a twin at distance 0 keeps its own cluster
    return labels


def cluster_stratified_draw(Y_source: np.ndarray, k: int, seed: int = 0, *, draws: int = BALANCE_DRAWS,
                            space: str = "correlation", levels: int = 1
                            ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The ``"cluster-stratified"`` design: the items' ``k`` k-medoids clusters as strata
    (:func:`item_clusters`), one item drawn uniformly from each; of ``draws`` such samples, the one whose
    cluster-weighted mean reproduces the sources' full scores best
    (:func:`benchsel.formulations.estimation.design.balanced_stratified_sample` with given ``strata``).

    Like ``"stratified"`` it is a design sample (each item drawn with probability ``1 / N_h`` of its
    cluster, before the balancing choice), so the model-assisted estimate stays unbiased beyond the
    sources' range; like ``"kmedoids"`` its strata group the items the sources score alike.

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Checked source scores (:func:`check_selection_input`), trusted here.
    k : int
        Checked, ``1 <= k < N``.
    seed : int
        Seeds the clustering and the draws.
    draws : int
        Candidate samples (``1``: the plain cluster-stratified sample).
    space : {"correlation", "sqeuclidean", "difficulty"}
        Where the items are clustered (:func:`item_clusters`).
    levels : int
        Difficulty levels per cluster, on average (``>= 1``). 1: the ``k`` clusters are the strata. More: a
        hybrid of clusters and difficulty, ``ceil(k / levels)`` clusters, each given a number of strata
        proportional to its size (at least one), its items sorted by difficulty for strong models (as
        ``"stratified"`` sorts them) cut into that many equal-count strata
        (:func:`~benchsel.formulations.estimation.design.proportional_strata`); ``levels >= k`` is
        ``"stratified"``'s design (one cluster).

    Returns
    -------
    items : ndarray of int64, shape (k,)
        One item per stratum (per cluster; with ``levels > 1`` per cluster and difficulty level).
    weights : ndarray, shape (k,)
        Each stratum's share of the items, ``N_h / N`` (sum 1).
    info : dict
        ``draws``, ``space``, ``clusters`` (their number), ``imbalance`` (root mean squared error of the
        sample's weighted mean against the sources' full scores), ``smallest_stratum`` and
        ``largest_stratum`` (items).
    """
    # Y_source and k were checked once at the boundary (check_selection_input); draws, space and levels are
    # this design's options
    draws = check_int(draws, "draws", low=1)
    m = -(-k // check_int(levels, "levels", low=1))  # clusters (item_clusters checks space)
    Y = np.asarray(Y_source, dtype=float)
    rng = np.random.default_rng(seed)
    strata = item_clusters(Y, m, int(rng.integers(2**31)), space=space)
    if m < k:
        strata = proportional_strata(strata, difficulty_score(difficulty_features(Y)), k)
    items, w, imbalance = draw_balanced_sample(np.zeros(Y.shape[1]), k, Y, draws, int(rng.integers(2**31)),
                                               strata=strata)
    sizes = np.bincount(strata, minlength=k)
    return items, w, {"draws": draws, "space": space, "clusters": m, "imbalance": imbalance,
                      "smallest_stratum": int(sizes.min()), "largest_stratum": int(sizes.max())}


def holocosm_problem(Y_source: np.ndarray, k: int, seed: int = 0, *, quantile: float = 0.25, lam: float = 1.0,
                     lower_is_better: Any = None) -> Any:
    """HoloCosm's problem (SPEC F1): ``k`` items whose source-assisted estimates keep every metric's
    scores (mean risk) under a ranking-risk budget calibrated on random subsets.

    Parameters
    ----------
    Y_source : ndarray, shape (S, N, K)
        Source models x items x metrics.
    k : int
        The budget ``B``.
    seed : int
        Seeds the reference bank that calibrates ``eps``.
    quantile, lam : float
        As in :class:`~benchsel.formulations.holocosm.RankingRiskReconstruction`.
    lower_is_better : bool or array_like of bool, shape (K,), optional
        Metrics where lower is better.
    """
    return RankingRiskReconstruction(Y_source, budget=k, seed=seed, quantile=quantile, lam=lam,
                                     lower_is_better=lower_is_better)


def repcore_problem(Y_source: np.ndarray, k: int, seed: int = 0, *, hidden_states: Any = None, dim: int = 32,
                    epochs: int | None = None) -> Any:
    """RepCore's problem (SPEC F7): the sources' hidden states aligned into a consensus embedding of the
    items (supervised by their correctness ``Y_source``), then k anchors by spherical k-means (cosine).

    Parameters
    ----------
    Y_source : ndarray of {0, 1}, shape (S, N)
        Source correctness.
    k : int
    seed : int
        Seeds the alignment.
    hidden_states : sequence of array_like, each shape (N, d_s), or an object with ``hidden_states``
        One array per source model, in the order of the rows of ``Y_source``
        (:func:`benchsel.instances.hidden.load_hidden_states` reads them).
    dim : int
        Embedding width (paper: 32).
    epochs : int, optional
        Training epochs of the alignment (default: the aligner's).
    """
    if hidden_states is None:
        raise InvalidInputError("hidden_states: selection 'repcore' needs the source models' hidden states, one "
                                "array of shape (items, width) per row of Y: pass "
                                "selection_options={'hidden_states': H}; got None")
    H = list(getattr(hidden_states, "hidden_states", hidden_states))
    S, N = np.shape(Y_source)
    if len(H) != S:
        raise InvalidInputError(f"hidden_states: expected one array per source model (row of Y), {S} arrays, got "
                                f"{len(H)}")
    bad = [i for i, h in enumerate(H) if np.ndim(h) != 2 or np.shape(h)[0] != N]
    if bad:
        raise InvalidInputError(f"hidden_states: expected arrays of shape ({N}, width), one row per item; array "
                                f"{bad[0]} has shape {np.shape(H[bad[0]])}")
    if not np.isin(Y_source, (0.0, 1.0)).all():
        raise InvalidInputError("Y: selection 'repcore' learns from correctness: expected 0/1 scores, got values "
                                f"in [{float(np.min(Y_source)):g}, {float(np.max(Y_source)):g}]")
    opts: dict[str, Any] = {} if epochs is None else {"epochs": epochs}
    E = align_hidden_states(H, Y_source, dim=dim, seed=seed, **opts)
    return KMedoids.from_features(E, k, metric="cosine")


def _pseudo_targets(Y: np.ndarray, n: int) -> np.ndarray:
    """``n`` source rows evenly spaced over the ranking by full score (the weakest and the strongest included)."""
    order = np.argsort(Y.mean(axis=1), kind="stable")
    if n >= order.size:
        return order
    return order[np.unique(np.round(np.linspace(0, order.size - 1, n)).astype(np.int64))]


def bayesame_draw(Y_source: np.ndarray, k: int, seed: int = 0, *, eps1: float = 0.005, eps2: float = 0.02,
                  pseudo_targets: int = 4, N0: int = 10, tol: float | None = None,
                  batch_method: str = "greedy") -> tuple[np.ndarray, None, dict[str, Any]]:
    """BayesAME's size by its stopping rule, then its items (SPEC F5).

    Each of ``pseudo_targets`` source models (evenly spaced from the weakest to the strongest) is
    evaluated by BayesAME's sequential evaluator with the other sources as references, up to ``k``
    items; its stopping point is where the rule (estimate range over the last ``W`` steps ``<= eps1``
    and 95 % credible width ``<= eps2``) first holds, ``k`` when it does not within ``k``. The size is
    the largest stopping point (enough for every pseudo-target; the rule needs ``W`` = 30 steps, so with
    ``k < 30`` it cannot hold and the size is ``k``). The items: in the unique regime
    (buckets ``>= N - N0``) the batch of that size with the largest information gain over all sources
    (``batch_method``), otherwise a uniform random sample (the paper's rule).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        ``S >= 3`` source models.
    k : int
        The most items to take.
    seed : int
    eps1, eps2 : float
        The stopping rule's thresholds.
    pseudo_targets : int
        Source models evaluated to find the size (``>= 1``).
    N0 : int
        Margin of the unique regime.
    tol : float, optional
        Bucketing tolerance for continuous scores.
    batch_method : {"greedy", "smc", "exhaustive"}
        The batch search (greedy by default: SMC's cost grows fast with the batch size).

    Returns
    -------
    items : ndarray of int64, shape (k',)
    weights : None
    info : dict
        ``k_max``, ``k`` (the size chosen), ``stopping_points`` (one per pseudo-target, None when the rule
        did not hold within ``k``), ``pseudo_targets`` (rows), ``regime``, ``eps1``, ``eps2``.
    """
    Y = np.asarray(Y_source, dtype=float)
    S, N = Y.shape
    if S < 3:
        raise InvalidInputError(f"Y: selection 'bayesame' needs at least 3 source models (one is held out as a "
                                f"pseudo-target against at least 2 references), got {S}")
    P = check_int(pseudo_targets, "pseudo_targets", low=1)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    rows = _pseudo_targets(Y, P)
    stops: list[int | None] = []
    for r in rows:
        ref = np.delete(Y, r, axis=0)
        out = bayesame_evaluate(ref, Y[r], eps1=eps1, eps2=eps2, N0=N0, tol=tol, max_items=k,
                                seed=int(rng.integers(2**31)))
        stops.append(out.n if out.stopped else None)
    size = max(k if n is None else n for n in stops)
    unique = bool(bucketize(Y, tol).unique_regime(N0))
    if unique and size < N:
        res = solve(BatchInformationGain(Y, k=size, tol=tol, N0=N0), batch_method, seed=int(rng.integers(2**31)))
        items = np.asarray(res.selection, dtype=np.int64)
    else:
        items = np.sort(rng.choice(N, size=size, replace=False)).astype(np.int64)
    info = {"formulation": "BayesAME stopping rule", "k_max": int(k), "k": int(items.size),
            "stopping_points": stops, "pseudo_targets": [int(r) for r in rows],
            "regime": "unique" if unique else "non-unique", "eps1": float(eps1), "eps2": float(eps2)}
    return items, None, info


def _no_build(Y_source: np.ndarray, k: int, seed: int = 0) -> Any:
    raise InvalidInputError("selection: this selection is a sampling design; it has no formulation to build")


#: Share of the available memory a k-medoids selection's dense N x N matrices (two float64 copies at the
#: peak of their construction) may take.
DENSE_MEMORY_SHARE = 0.5


def _dense_fits(n_items: int, selection: str) -> None:
    """Refuse, by name, a k-medoids selection whose dense ``N x N`` dissimilarity would not fit in memory."""
    need = 2 * 8 * float(n_items) ** 2
    avail = float(available_bytes())
    if need > DENSE_MEMORY_SHARE * avail:
        raise InvalidInputError(
            f"selection: {selection!r} builds a dense {n_items} x {n_items} dissimilarity ({need / 2**30:.1f} GiB at "
            f"its peak), more than {DENSE_MEMORY_SHARE:.0%} of the {avail / 2**30:.1f} GiB available; use "
            "selection='stratified' (the default, no N x N matrix) or a subset of the items")


# ------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Selection:
    """A named way of choosing ``k`` items from source scores.

    Attributes
    ----------
    name : str
    build : callable
        ``build(Y_source, k, seed) -> Formulation`` (module-level, so it pickles).
    method : str
        Registered method that solves the formulation.
    options : mapping
        Method options.
    description : str
    draw : callable, optional
        A sampling design or a procedure instead of one optimisation: ``draw(Y_source, k, seed) ->
        (items, weights)`` or ``(items, weights, info)``, items and weights each shape (k',), ``k' <= k``,
        the weights being the shares of the items each drawn item stands for (sum 1; None: unweighted),
        ``info`` a dict that goes to ``Result.extra``. ``build`` and ``method`` are then unused.
    ndim : {2, 3}
        The source scores it takes: 2 for (models, items), 3 for (models, items, metrics).
    build_options : tuple of str
        Options that go to ``build`` (or ``draw``) as keyword arguments (data such as hidden states);
        the others go to the method.
    estimator : str, optional
        The estimator :func:`~benchsel.solvers.compression.compress` pairs with it when none is named.
    fidelity : bool
        The fidelity benchmark runs it by default: it chooses items from a (models, items) score matrix
        alone, cheaply enough for that grid (False for selections that need more data, such as hidden
        states, for 3-D scores, for ``"bayesame"``, which runs a sequential evaluation per
        pseudo-target, and for ``"cluster-stratified"``, measured against the default and worse,
        docs/results/new_models.md; the benchmark still runs them when named).
    """

    name: str
    build: Callable[..., Any]
    method: str
    options: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    draw: Callable[..., Any] | None = None
    ndim: int = 2
    build_options: tuple[str, ...] = ()
    estimator: str | None = None
    fidelity: bool = True


#: Every selection by name (:func:`register_selection`).
SELECTIONS: Registry[Selection] = Registry("selection", argument="selection")


def register_selection(name: str, build: Callable[..., Any] | None, method: str, *,
                       options: Mapping[str, Any] | None = None, description: str = "",
                       draw: Callable[..., Any] | None = None, ndim: int = 2,
                       build_options: tuple[str, ...] = (), estimator: str | None = None,
                       fidelity: bool = True) -> Selection:
    """Register a selection: ``build(Y_source, k, seed) -> Formulation`` solved by ``method``, or a sampling
    design ``draw(Y_source, k, seed) -> (items, weights)`` (then ``build`` may be None).

    ``ndim``, ``build_options``, ``estimator`` and ``fidelity`` as in :class:`Selection`. The fidelity benchmark (2-D
    selections) and :func:`~benchsel.solvers.compression.compress` then accept ``name``.
    """
    if ndim not in (2, 3):
        raise InvalidInputError(f"ndim: expected 2 (models, items) or 3 (models, items, metrics), got {ndim!r}")
    if not (isinstance(build_options, tuple) and all(isinstance(o, str) for o in build_options)):
        raise InvalidInputError(f"build_options: expected a tuple of option names, got {describe(build_options)}")
    if estimator is not None and not isinstance(estimator, str):
        raise InvalidInputError(f"estimator: expected an estimator name or None, got {describe(estimator)}")
    if draw is not None:
        if not callable(draw):
            raise InvalidInputError(f"draw: expected a callable draw(Y_source, k, seed), got {describe(draw)}")
        build = build if build is not None else _no_build
    if not isinstance(name, str) or not name or ":" in name:
        raise InvalidInputError(f"name: expected a non-empty selection name without ':', got {name!r}")
    if not callable(build):
        raise InvalidInputError(f"build: expected a callable build(Y_source, k, seed), got {describe(build)}")
    if not isinstance(method, str):
        raise InvalidInputError(f"method: expected a registered method name, got {describe(method)}")
    s = Selection(name, build, method, dict(options or {}), description, draw, ndim, build_options, estimator,
                  fidelity=ndim == 2 and fidelity)
    return SELECTIONS.register(name, s, replace=True)


def selection_names(*, fidelity: bool = False) -> list[str]:
    """Names of the registered selections (``fidelity=True``: only those the fidelity benchmark runs by
    default, :attr:`Selection.fidelity`)."""
    return [n for n, s in SELECTIONS.items() if s.fidelity or not fidelity]


def get_selection(name: str) -> Selection:
    """The selection called ``name`` (an error lists the known ones)."""
    return SELECTIONS.get(name)


register_selection("stratified", None, "stratified-sample", draw=stratified_draw, build_options=("draws",),
                   description="one item drawn from each of k equal-count strata of the items sorted by their "
                               "difficulty for the strongest sources, the draw (of 1000, seeded) that reproduces "
                               "the sources' full scores best; design weights for the estimators")
register_selection("random", anchor_kmedoids, "random", description="k items drawn uniformly at random (seeded)")
register_selection("kmedoids", anchor_kmedoids, "fasterpam",
                   description="AnchorPoints: k-medoids on 1 - Pearson of the items' source scores, FasterPAM")
register_selection("kmedoids-highs", anchor_kmedoids, "highs",
                   description="the same k-medoids problem solved exactly by HiGHS (proven optimum or gap)")
register_selection("irt-anchor", irt_kmedoids, "fasterpam",
                   description="tinyBenchmarks: k-medoids on the items' 2PL parameters (a_i, b_i), FasterPAM")
register_selection("holocosm", holocosm_problem, "swap", ndim=3, estimator="source-assisted",
                   build_options=("quantile", "lam", "lower_is_better"),
                   description="HoloCosm (3-D scores: models x items x metrics): smallest mean error of every "
                               "metric under a ranking-risk budget, exchange search; source-assisted estimates")
register_selection("repcore", repcore_problem, "spherical-kmeans", estimator="repcore-ridge", fidelity=False,
                   build_options=("hidden_states", "dim", "epochs"),
                   description="RepCore: the sources' hidden states aligned into a consensus embedding, k anchors "
                               "by spherical k-means (needs selection_options={'hidden_states': H})")
register_selection("bayesame", None, "bayesame-stopping-rule", draw=bayesame_draw, estimator="bayesame", fidelity=False,
                   build_options=("eps1", "eps2", "pseudo_targets", "N0", "tol", "batch_method"),
                   description="BayesAME: the size by its stopping rule on held-out sources (k is the most), the "
                               "items by information gain (random in the non-unique regime); posterior estimates")
register_selection("cluster-stratified", None, "cluster-stratified-sample", draw=cluster_stratified_draw,
                   build_options=("draws", "space", "levels"), fidelity=False,
                   description="one item drawn from each of the k k-medoids clusters of the items (1 - Pearson of "
                               "their source scores, FasterPAM), the draw (of 1000, seeded) that reproduces the "
                               "sources' full scores best; design weights (cluster shares) for the estimators")


# ------------------------------------------------------------------ checks
def _axes_doc(Y: np.ndarray) -> str:
    return f"shape {Y.shape}: {Y.shape[0]} models (rows) x {Y.shape[1]} items (columns)"


def check_matrix(Y: Any, k: int | None = None, name: str = "Y", *, min_models: int = 2
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """A models x items score matrix (and its column labels when ``Y`` is a DataFrame).

    ``min_models`` is 2 for sources to learn from, 1 for new models' scores.

    Raises a message that says which axis is which, and suggests ``Y.T`` when
    the shape can only make sense transposed (``k`` not below the number of
    columns while the rows could hold it).
    """

    labels = None
    if hasattr(Y, "columns") and hasattr(Y, "to_numpy"):
        check_unique_labels(Y.index, f"{name}.index", "model")
        check_unique_labels(Y.columns, f"{name}.columns", "item")
        labels = np.asarray(Y.columns)
    A = check_scores(Y, name, ndim=(2,), axes=("model", "item"), shape_doc="(models, items)")
    M, N = A.shape
    if M < min_models and N >= 2:
        raise InvalidInputError(f"{name}: expected at least 2 models (rows) to learn from, got {_axes_doc(A)}")
    if k is not None:
        if k >= N:
            hint = (f"; if your rows are items and columns models, pass {name}.T" if k < M else "")
            raise InvalidInputError(
                f"k: expected 1 <= k < {N}, the number of items (columns of {name}), got k = {k} with "
                f"{name} of {_axes_doc(A)}{hint}"
            )
    if N < 2:
        raise InvalidInputError(f"{name}: expected at least 2 items (columns), got {_axes_doc(A)}"
                                + (f"; if your rows are items, pass {name}.T" if M >= 2 else ""))
    return A, labels


# ------------------------------------------------------------------ selection
@dataclass(frozen=True, eq=False)
class SelectionResult:
    """Selected items and how they were found.

    Attributes
    ----------
    items : ndarray of int64, shape (k,)
        Sorted item indices.
    selection : str
    result : benchsel.formulations.core.result.Result
        The solver's result (objective, bound, gap, termination, seconds).
    seconds : float
        Wall seconds of building and solving.
    weights : ndarray, shape (k,), optional
        A sampling design's weights of ``items`` (the share of the items each stands for), in the order
        of ``items``.
    """

    items: np.ndarray
    selection: str
    result: Any
    seconds: float
    weights: np.ndarray | None = None


def _log(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"benchsel: {msg}", file=sys.stderr, flush=True)


def check_tensor(Y: Any, k: int | None = None, name: str = "Y", selection: str = "holocosm") -> np.ndarray:
    """A models x items x metrics score array for a multi-metric selection (named errors for a 2-D matrix).

    Parameters
    ----------
    Y : array_like, shape (models, items, metrics)
    k : int, optional
        Items to select, ``1 <= k < items``.
    name, selection : str
        For the messages.
    """
    nd = np.ndim(Y)
    if nd == 2:
        raise InvalidInputError(
            f"{name}: selection {selection!r} takes multi-metric scores of shape (models, items, metrics), got a "
            f"2-D matrix of shape {np.shape(Y)}; for one metric pass {name}[:, :, None], or use a one-metric "
            "selection such as 'stratified'")
    A = check_scores(Y, name, ndim=(3,), axes=("model", "item", "metric"), shape_doc="(models, items, metrics)")
    M, N, K = A.shape
    if M < 2 or N < 2 or K < 1:
        raise InvalidInputError(f"{name}: expected at least 2 models, 2 items and 1 metric, shape (models, items, "
                                f"metrics), got shape {A.shape}")
    if k is not None and k >= N:
        raise InvalidInputError(f"k: expected 1 <= k < {N}, the number of items (axis 1 of {name}), got k = {k} "
                                f"with {name} of shape {A.shape}")
    return A


def check_selection_input(s: Selection, Y: Any, k: Any, name: str = "Y") -> tuple[np.ndarray, Any, int]:
    """The one check of what a selection is given (pure): ``(scores, column labels or None, k)``.

    ``k`` an integer ``1 <= k < items``; ``Y`` (argument ``name``) the source scores as
    :func:`check_source_scores` checks them. :func:`select_items` and
    :func:`~benchsel.solvers.compression.compress` call it once; what runs after trusts its result.
    """
    k = check_int(k, "k", low=1)
    A, labels = check_source_scores(s, Y, k, name)
    return A, labels, k


def check_source_scores(s: Selection, Y: Any, k: int | None, name: str = "Y") -> tuple[np.ndarray, Any]:
    """The source scores checked for selection ``s`` (2-D with its column labels, or 3-D and None)."""
    if s.ndim == 3:
        return check_tensor(Y, k, name, s.name), None
    if np.ndim(Y) == 3:
        multi = [n for n, v in SELECTIONS.items() if v.ndim == 3]
        raise InvalidInputError(
            f"{name}: selection {s.name!r} takes a (models, items) matrix, got a 3-D array of shape {np.shape(Y)}; "
            f"multi-metric scores (models, items, metrics) go to selection {' or '.join(map(repr, multi))}")
    return check_matrix(Y, k, name)


def _split_options(s: Selection, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(options for the build or draw, options for the method)."""
    build = {o: v for o, v in options.items() if o in s.build_options}
    rest = {o: v for o, v in options.items() if o not in s.build_options}
    if s.draw is not None and rest:
        takes = (f"takes the options {', '.join(s.build_options)}; got" if s.build_options else
                 "is a sampling design and takes no options, got")
        raise InvalidInputError(f"options: selection {s.name!r} {takes} {', '.join(sorted(rest))}")
    if s.draw is None and s.build_options:  # a typo is refused before an expensive build (heuristic methods)
        m = get_method(s.method)
        if not m.exact:
            try:
                m.check_options(None, {**dict(s.options), **rest})
            except InvalidInputError as e:
                raise InvalidInputError(f"{e}; selection {s.name!r} itself takes "
                                        f"{', '.join(s.build_options)}") from None
    return build, rest


def select_items(Y_source: Any, k: int, selection: str = "kmedoids", *, seed: int = 0, time_limit: float | None = 60.0,
                 verbose: bool = False, **options: Any) -> SelectionResult:
    """Choose ``k`` items from the source models' scores.

    Parameters
    ----------
    Y_source : array_like, shape (S, N) (or (S, N, K) for a multi-metric selection)
        Source models (rows) x items (columns) (x metrics).
    k : int
        Items to select, ``1 <= k < N`` (the most a selection that sizes itself, ``"bayesame"``, may take).
    selection : str
        A registered selection (:func:`selection_names`).
    seed : int
    time_limit : float, optional
        Seconds for the solver.
    verbose : bool
        Progress lines on stderr.
    **options
        The selection's build options (:attr:`Selection.build_options`, e.g. ``hidden_states``), then
        method options, overriding the selection's own.
    """

    s = get_selection(selection)
    seed, time_limit = check_run_settings(seed, time_limit)
    Y, _, k = check_selection_input(s, Y_source, k, "Y_source")
    return _run_selection(s, Y, k, seed=seed, time_limit=time_limit, verbose=verbose, options=options)


def _run_selection(s: Selection, Y: np.ndarray, k: int, *, seed: int, time_limit: float | None, verbose: bool,
                  options: Mapping[str, Any]) -> SelectionResult:
    """:func:`select_items` on scores and ``k`` already checked (:func:`check_selection_input`); the options are
    checked here (their names, then by the draw or the method).

    Parameters
    ----------
    s : Selection
    Y : ndarray, shape (S, N) (or (S, N, K))
    k : int
    seed, time_limit, verbose, options
        As for :func:`select_items`.
    """
    selection = s.name
    build_kw, method_kw = _split_options(s, options)
    t0 = time.perf_counter()
    if s.draw is not None:
        out = s.draw(Y, k, seed, **build_kw)
        drawn, w = out[0], out[1]
        info = dict(out[2]) if len(out) > 2 else {}
        order = np.argsort(drawn, kind="stable")
        items = np.asarray(drawn, dtype=np.int64)[order]
        weights = None if w is None else np.asarray(w, dtype=float)[order]
        dt = time.perf_counter() - t0
        res = Result(selection=items, objective=math.nan, bound=None, gap=None, feasible=True,
                     termination=Termination.CONVERGED, method=s.method, seed=seed, build_seconds=0.0,
                     solve_seconds=dt, formulation=info.pop("formulation", "sampling design"), extra=info)
        _log(verbose, f"selection {selection!r}: {items.size} items drawn in {dt:.2f} s")
        return SelectionResult(items, selection, res, dt, weights)
    _log(verbose, f"selection {selection!r}: building the problem from scores of shape {Y.shape}")
    f = s.build(Y, k, seed, **build_kw)
    _log(verbose, f"selection {selection!r}: solving with {s.method!r} (time limit {time_limit} s)")
    res = solve(f, s.method, time_limit=time_limit, seed=seed, **{**dict(s.options), **method_kw})
    if not res.has_solution:
        raise InvalidInputError(f"selection: {selection!r} ({s.method}) found no selection: "
                                f"{res.termination} {res.extra.get('error', '')}")
    items = np.asarray(res.selection, dtype=np.int64)
    dt = time.perf_counter() - t0
    _log(verbose, f"selection {selection!r}: {items.size} items in {dt:.2f} s ({res.termination})")
    return SelectionResult(items, selection, res, dt)
