"""Weighted coreset means: the plain mean, AnchorPoints' cluster-weighted mean, HoloCosm's source-assisted
correction."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.validation import as_array
from benchsel.formulations.item_distances import selection_distances

from .base import (
    Estimator,
    register_estimator,
)

__all__ = ["ClusterWeighted", "MeanEstimator", "SourceAssisted", "cluster_shares"]


@register_estimator
class MeanEstimator(Estimator):
    """``mean_{i in C} y_t[i]``: the coreset mean (needs no sources)."""

    name = "mean"
    description = "the coreset mean"
    multi_metric = True
    needs_sources = False
    min_sources = 1

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        pass

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1)


def _item_features(Y: np.ndarray) -> np.ndarray:
    """Items as rows of features: shape (N, S) or (N, S*K) for multi-metric sources."""
    F = np.moveaxis(Y, 1, 0)
    return F.reshape(F.shape[0], -1)


def cluster_shares(D_sel: np.ndarray, sel: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Share of the items (or item weight) nearest to each selected item, shape (k,), in selection order.

    Ties go to the selected item of lowest index (as :meth:`KMedoids.assign`).

    Parameters
    ----------
    D_sel : ndarray, shape (N, k)
        Dissimilarity of each item to each selected item (columns in the order of ``sel``).
    sel : ndarray of int, shape (k,)
    weights : ndarray, shape (N,), optional
    """
    order = np.argsort(sel, kind="stable")
    lab = order[np.argmin(D_sel[:, order], axis=1)]  # column (selection position) serving each item
    w = np.ones(D_sel.shape[0]) if weights is None else weights
    return np.bincount(lab, weights=w, minlength=sel.size) / w.sum()


@register_estimator
class ClusterWeighted(Estimator):
    """AnchorPoints: ``sum_{j in C} (|cluster j| / N) y_t[j]``.

    Each item joins its nearest selected item under the sources' dissimilarity
    (``1 - Pearson`` correlation of the items' source score vectors by
    default); ties go to the selected item of lowest index. ``D`` (an
    ``N x N`` dissimilarity, e.g. a :class:`KMedoids` instance's) replaces the
    sources' geometry; ``item_weights`` weights the items' shares.
    """

    name = "cluster-weighted"
    description = "AnchorPoints' cluster-size weights (nearest selected item in the sources' correlation geometry)"
    multi_metric = True
    options = (
        Option("metric", "correlation", "choice", choices=("correlation", "cosine", "euclidean"),
               doc="dissimilarity between the items' source score vectors"),
        Option("D", None, "any", doc="precomputed (N, N) dissimilarity; Y_source may then be None"),
        Option("item_weights", None, "any", doc="(N,) non-negative item weights (default 1)"),
    )

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        D = params["D"]
        if D is not None:
            D = as_array(D, "D", ndim=2, shape_doc="(N, N)", nonnegative=True)
            if D.shape[0] != D.shape[1]:
                raise InvalidInputError(f"D: expected a square dissimilarity of shape (N, N), got shape {D.shape}")
            params["D"] = D
        w = params["item_weights"]
        if w is not None:
            w = as_array(w, "item_weights", ndim=1, shape_doc="(N,)", nonnegative=True)
            if not w.any():
                raise InvalidInputError("item_weights: expected at least one positive weight, got all zeros")
            params["item_weights"] = w
        self.needs_sources = D is None  # type: ignore[misc]
        return params

    def fit(self, Y_source: Any, selection: Any, *, n_items: int | None = None) -> ClusterWeighted:
        D = self.params["D"]
        if Y_source is None and D is not None and n_items is None:
            n_items = D.shape[0]
        super().fit(Y_source, selection, n_items=n_items)
        return self

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        D = self.params["D"]
        w = self.params["item_weights"]
        N = self.n_items_
        if D is not None and D.shape[0] != N:
            raise InvalidInputError(f"D: expected shape ({N}, {N}) (one row per item of Y_source), got {D.shape}")
        if w is not None and w.shape[0] != N:
            raise InvalidInputError(f"item_weights: expected shape ({N},), got {w.shape}")
        if D is not None:
            D_sel = D[:, sel]
        else:
            assert Y is not None
            D_sel = selection_distances(_item_features(Y), sel, self.params["metric"])
        self.weights_ = cluster_shares(D_sel, sel, w)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return np.tensordot(Yt, self.weights_, axes=([1], [0]))


@register_estimator
class SourceAssisted(Estimator):
    """HoloCosm's source-assisted correction (its ``RankingRiskReconstruction.estimate``).

    ``yhat[t, k] = mean_{i in C} y_t[i, k] + c[k]`` with
    ``c[k] = mean_s (mu[s, k] - muhat[s, k](C))`` over the sources: the coreset
    mean shifted by the sources' average gap between full and coreset score.
    Leaves every difference between targets unchanged.
    """

    name = "source-assisted"
    description = "HoloCosm: coreset mean plus the sources' mean full-minus-coreset gap"
    multi_metric = True
    min_sources = 1

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        self.correction_ = (Y.mean(axis=1) - Y[:, sel].mean(axis=1)).mean(axis=0)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1) + self.correction_
