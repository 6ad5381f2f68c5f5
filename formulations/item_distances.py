"""Dissimilarities between items in the geometry of their score vectors, without the ``N x N`` matrix.

Shared by the estimators that weight a coreset by its items' clusters
(:mod:`benchsel.formulations.estimation.weighted`, :mod:`benchsel.formulations.estimation.irt`) and by
the sequential evaluators' anchor-points covering (:mod:`benchsel.formulations.bayes.peers`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["selection_distances"]


def selection_distances(F: np.ndarray, sel: np.ndarray, metric: str = "correlation") -> np.ndarray:
    """Dissimilarity of every item to each selected item, shape (N, k).

    The same dissimilarities as :func:`benchsel.formulations.kmedoids.dissimilarity`
    (``"correlation"``: ``1 - Pearson``, a constant item has correlation 0
    with every other; ``"cosine"``; ``"euclidean"``) without forming the
    ``N x N`` matrix.

    Parameters
    ----------
    F : ndarray, shape (N, d)
        Item features (e.g. the sources' scores of each item).
    sel : ndarray of int, shape (k,)
    metric : {"correlation", "cosine", "euclidean"}
    """
    if metric == "euclidean":
        from scipy.spatial.distance import cdist

        D = cdist(F, F[sel], "euclidean")
    else:
        Z = F - F.mean(axis=1, keepdims=True) if metric == "correlation" else F.astype(float, copy=True)
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        Z = Z / np.where(norms > 0, norms, 1.0)
        D = 1.0 - Z @ Z[sel].T
    np.clip(D, 0.0, None, out=D)
    D[sel, np.arange(sel.size)] = 0.0
    return D
