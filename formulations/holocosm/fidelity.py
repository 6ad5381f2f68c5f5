"""Fidelity measures of HoloCosm's protocol: plain or cluster-size-weighted means (:func:`weighted_estimate`) and
NMAE, Spearman and Kendall tau-b per metric (:func:`fidelity`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import (
    as_array,
)


# --------------------------------------------------------------------------- estimation and fidelity
def weighted_estimate(Y: Any, weights: Any = None) -> np.ndarray:
    """Plain or weighted mean of target responses on selected items.

    Parameters
    ----------
    Y : array_like, shape (G, B, K)
        Target responses on the selected items.
    weights : array_like, shape (B,), optional
        Aggregation weights summing to 1 (e.g. cluster sizes / N); None: uniform.

    Returns
    -------
    ndarray, shape (G, K)
    """
    Yt = as_array(Y, "Y", ndim=3, shape_doc="(G, B, K)")
    if weights is None:
        return Yt.mean(axis=1)
    w = as_array(weights, "weights", shape=(Yt.shape[1],), shape_doc=f"(B,) = ({Yt.shape[1]},)", nonnegative=True)
    if not np.isclose(w.sum(), 1.0):
        raise InvalidInputError(f"weights: expected weights summing to 1, got sum {w.sum():g}")
    return np.einsum("gbk,b->gk", Yt, w)


@dataclass(frozen=True)
class Fidelity:
    """Score and ranking fidelity per metric.

    Attributes
    ----------
    nmae, spearman, kendall : ndarray, shape (K,)
        Per metric; a correlation is nan when one of its vectors is constant.
    """

    nmae: np.ndarray
    spearman: np.ndarray
    kendall: np.ndarray
    metrics: tuple[str, ...] = field(default=())

    @property
    def mean_nmae(self) -> float:
        return float(np.mean(self.nmae))

    @property
    def worst_nmae(self) -> float:
        return float(np.max(self.nmae))

    @property
    def mean_sp(self) -> float:
        return _nanstat(np.nanmean, self.spearman)

    @property
    def worst_sp(self) -> float:
        return _nanstat(np.nanmin, self.spearman)

    @property
    def mean_tau(self) -> float:
        return _nanstat(np.nanmean, self.kendall)

    @property
    def worst_tau(self) -> float:
        return _nanstat(np.nanmin, self.kendall)

    def summary(self) -> dict[str, float]:
        return {"mean_nmae": self.mean_nmae, "worst_nmae": self.worst_nmae, "mean_sp": self.mean_sp,
                "worst_sp": self.worst_sp, "mean_tau": self.mean_tau, "worst_tau": self.worst_tau}


def _nanstat(fn: Any, a: np.ndarray) -> float:
    return float(fn(a)) if np.isfinite(a).any() else math.nan


def fidelity(estimate: Any, truth: Any, metrics: Any = None) -> Fidelity:
    """NMAE, Spearman and Kendall tau-b per metric between estimated and true target scores.

    ``NMAE[k] = mean_g |yhat[g,k] - y[g,k]| / (max_g y[g,k] - min_g y[g,k])``
    (a zero range divides by 1). Correlations between constant vectors are
    undefined (nan) and skipped by the mean and worst summaries.

    Parameters
    ----------
    estimate, truth : array_like, shape (G, K) or (G,)
        Estimated and full-benchmark scores of ``G >= 2`` targets.
    metrics : sequence of str, optional
        Metric names (for reports).
    """
    from scipy.stats import kendalltau, spearmanr

    e = as_array(estimate, "estimate", ndim=(1, 2), shape_doc="(G, K)")
    y = as_array(truth, "truth", ndim=(1, 2), shape_doc="(G, K)")
    if e.ndim == 1:
        e = e[:, None]
    if y.ndim == 1:
        y = y[:, None]
    if e.shape != y.shape:
        raise InvalidInputError(f"estimate: expected the shape of truth {y.shape}, got {e.shape}")
    if y.shape[0] < 2:
        raise InvalidInputError(f"truth: expected at least 2 target models, got shape {y.shape}")
    rng_ = y.max(axis=0) - y.min(axis=0)
    nmae = np.abs(e - y).mean(axis=0) / np.where(rng_ > 0, rng_, 1.0)
    K = y.shape[1]
    sp = np.full(K, np.nan)
    kt = np.full(K, np.nan)
    for k in range(K):
        if np.ptp(e[:, k]) == 0 or np.ptp(y[:, k]) == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sp[k] = spearmanr(e[:, k], y[:, k]).statistic
            kt[k] = kendalltau(e[:, k], y[:, k], variant="b").statistic
    names = tuple(str(m) for m in metrics) if metrics is not None else tuple(f"metric_{k}" for k in range(K))
    return Fidelity(nmae=nmae, spearman=sp, kendall=kt, metrics=names)
