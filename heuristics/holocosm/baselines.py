"""The baselines of HoloCosm's comparison (Random, AnchorPoints per metric, the average metric, K-means), as
selections with their estimates.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import as_array, check_int, check_rng
from benchsel.formulations.holocosm import RankingRiskReconstruction, weighted_estimate
from benchsel.formulations.kmedoids import KMedoids

from ..kmedoids import run_fasterpam
from .swap import swap_search


# --------------------------------------------------------------------------- baselines
@dataclass(frozen=True)
class BaselineSelection:
    """A baseline's selection and the estimator that goes with it.

    Attributes
    ----------
    method : str
    selection : ndarray of int64, shape (B,)
        Selected items, sorted.
    weights : ndarray, shape (B,) or None
        Aggregation weights aligned with ``selection`` (None: plain mean).
    correction : bool
        Add the source-assisted correction of the formulation.
    extra : dict
    """

    method: str
    selection: np.ndarray
    weights: np.ndarray | None = None
    correction: bool = False
    extra: dict = field(default_factory=dict)

    def estimate(self, f: RankingRiskReconstruction, Y: Any) -> np.ndarray:
        """Estimated full scores, shape (G, K), from target responses ``Y`` on the selection, shape (G, B, K)
        (in the units of ``f``'s ``X`` as given)."""
        if self.correction:
            base = weighted_estimate(Y, self.weights)
            return base + f.correction(self.selection)
        return weighted_estimate(Y, self.weights)


@dataclass(frozen=True)
class FittedSelection(BaselineSelection):
    """A baseline whose estimate is a registered estimator fitted per metric on the sources.

    Attributes
    ----------
    estimators : tuple of benchsel.formulations.estimation.Estimator, length K
        Metric ``k``'s estimator, fitted on ``scale``-normalised ``f.X[:, :, k]`` and the selection.
    lo, span : ndarray, shape (K,)
        The affine map to the estimators' units (``(x - lo) / span``) and back; 0 and 1 when none.
    clip : bool
        Clip target responses to [0, 1] in the estimators' units (estimators that need scores in [0, 1]).
    """

    estimators: tuple = ()
    lo: np.ndarray | None = None
    span: np.ndarray | None = None
    clip: bool = False

    def estimate(self, f: RankingRiskReconstruction, Y: Any) -> np.ndarray:
        """Estimated full scores, shape (G, K), from target responses ``Y`` on the selection, shape (G, B, K)."""
        Yt = as_array(Y, "Y", ndim=3, shape=(None, self.selection.size, f.n_metrics),
                      shape_doc=f"(G, B, K) = (G, {self.selection.size}, {f.n_metrics})")
        K = Yt.shape[2]
        lo = np.zeros(K) if self.lo is None else self.lo
        span = np.ones(K) if self.span is None else self.span
        out = np.empty((Yt.shape[0], K))
        for k, est in enumerate(self.estimators):
            z = (Yt[:, :, k] - lo[k]) / span[k]
            out[:, k] = est.predict(np.clip(z, 0.0, 1.0) if self.clip else z) * span[k] + lo[k]
        return out


def holocosm_selection(f: RankingRiskReconstruction, seed: int = 0, **options: Any) -> BaselineSelection:
    """HoloCosm (``"swap"``) with its source-assisted estimator, as a :class:`BaselineSelection`."""
    out = swap_search(f, rng=check_rng(seed), **options)
    return BaselineSelection("holocosm", out.selection, None, True,
                             {"swaps": out.swaps, "feasible": out.feasible, "R_mean": out.R_mean, "R_rank": out.R_rank})


def swap_unconstrained(f: RankingRiskReconstruction, seed: int = 0, **options: Any) -> BaselineSelection:
    """The exchange search without the ranking constraint (ablation), source-assisted estimator."""
    out = swap_search(f, rng=check_rng(seed), rank_constraint=False, **options)
    return BaselineSelection("swap_unconstrained", out.selection, None, True,
                             {"swaps": out.swaps, "R_mean": out.R_mean, "R_rank": f.ranking_risk(out.selection)})


def random_baseline(f: RankingRiskReconstruction, seed: int = 0, *, correction: bool = False) -> BaselineSelection:
    """Uniform random ``B`` items (``f.uniform_selection``, the constraint ignored); plain means, or with the
    source-assisted correction."""
    sel = f.uniform_selection(check_rng(seed))
    return BaselineSelection("random_sac" if correction else "random", sel, None, bool(correction))


def average_metric(X: Any) -> np.ndarray:
    """AverageMetric: min-max normalise each metric with source statistics and average the metrics.

    Each metric ``k`` is mapped by ``(X - lo_k) / (hi_k - lo_k)`` with ``lo_k``,
    ``hi_k`` the smallest and largest source-model mean (falling back to the
    item-level range, then 1, when the means coincide).

    Parameters
    ----------
    X : array_like, shape (M, N, K)
        Oriented source responses.

    Returns
    -------
    ndarray, shape (M, N)
    """
    X = as_array(X, "X", ndim=3, shape_doc="(M, N, K)")
    mu = X.mean(axis=1)
    lo, hi = mu.min(axis=0), mu.max(axis=0)
    span = hi - lo
    item_span = X.max(axis=(0, 1)) - X.min(axis=(0, 1))
    span = np.where(span > 0, span, np.where(item_span > 0, item_span, 1.0))
    return ((X - lo) / span).mean(axis=2)


def selection_target(f: RankingRiskReconstruction, metric: int | str) -> tuple[np.ndarray, str]:
    """The single-metric source matrix a single-metric baseline selects with, and its name tag.

    Parameters
    ----------
    f : RankingRiskReconstruction
    metric : int or "average"
        A metric index ``k`` (``f.X[:, :, k]``, tag ``"m<k>"``) or ``"average"``
        (:func:`average_metric`, tag ``"avg"``).

    Returns
    -------
    F : ndarray, shape (M, N)
    tag : str
    """
    if isinstance(metric, str):
        if metric != "average":
            raise InvalidInputError(f"metric: expected a metric index or 'average', got {metric!r}")
        return average_metric(f.X), "avg"
    k = check_int(metric, "metric", low=0, high=f.n_metrics - 1)
    return f.X[:, :, k], f"m{k}"


def anchorpoints(f: RankingRiskReconstruction, metric: int | str = "average", seed: int = 0) -> BaselineSelection:
    """AnchorPoints on one metric (``metric=k``) or on the AverageMetric (``metric="average"``).

    k-medoids (``B`` medoids) on ``1 - Pearson`` correlation between items'
    source response vectors (FasterPAM from a BUILD start, through the
    registered ``"fasterpam"`` runner); each item joins its most-correlated
    medoid; the weights are cluster sizes / N. Needs an ``N x N`` matrix.
    """
    F, tag = selection_target(f, metric)
    name = f"anchorpoints_{tag}"
    km = KMedoids.from_features(F.T, f.budget, metric="correlation")
    out = run_fasterpam(km, time_limit=None, seed=seed)
    sel = np.sort(np.asarray(out.selection, dtype=np.int64))
    return BaselineSelection(name, sel, km.cluster_weights(sel), False, {"cost": km.evaluate(sel)})


def kmeans_baseline(f: RankingRiskReconstruction, seed: int = 0, *, max_iter: int = 100) -> BaselineSelection:
    """Lloyd k-means (k-means++ start) on items' concatenated source responses.

    Each metric is divided by the standard deviation of the source models'
    full-benchmark means (1 when that is 0); ``B`` clusters; each centre keeps
    its nearest not-yet-kept item (centres in order of their nearest distance);
    weights are cluster sizes / N.
    """
    from scipy.cluster.vq import kmeans2

    X = f.X
    M, N, K = X.shape
    sd = f.mu.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    F = (X / sd).transpose(1, 0, 2).reshape(N, M * K)
    rng = check_rng(seed)
    B = f.budget
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty clusters: kmeans2 keeps their centre
        centres, labels = kmeans2(F, B, iter=check_int(max_iter, "max_iter", low=1), minit="++", seed=rng)
    d2 = ((F[None, :, :] - centres[:, None, :]) ** 2).sum(axis=2) if B * N * M * K <= 5e7 else _sqdist(centres, F)
    taken = np.zeros(N, dtype=bool)
    reps = np.empty(B, dtype=np.int64)
    for c in np.argsort(d2.min(axis=1), kind="stable"):
        row = np.where(taken, np.inf, d2[c])
        j = int(np.argmin(row))
        reps[c] = j
        taken[j] = True
    sizes = np.bincount(labels, minlength=B).astype(float) / N
    order = np.argsort(reps)
    return BaselineSelection("kmeans", reps[order], sizes[order], False, {"empty_clusters": int((sizes == 0).sum())})


def _sqdist(C: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, shape (len(C), len(F))."""
    return np.maximum((C**2).sum(1)[:, None] - 2 * C @ F.T + (F**2).sum(1)[None, :], 0.0)
