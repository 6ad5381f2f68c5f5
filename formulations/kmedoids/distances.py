"""Dissimilarity matrices of k-medoids instances: computed block by block, exactly tied duplicates."""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.distance import cdist

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import (
    as_array,
    check_allocation,
    check_choice,
)

METRICS = ("correlation", "cosine", "euclidean")
DTYPES = ("float64", "float32")
#: Entries handled per block by the blockwise kernels (rows x columns).
_BLOCK = 1 << 22


def _row_block(n_cols: int) -> int:
    return max(1, _BLOCK // max(int(n_cols), 1))


def _dtype(dtype: Any) -> type:
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    check_choice(name, "dtype", DTYPES)
    return np.float32 if name == "float32" else np.float64


def _check_float32(maximum: float, what: str) -> None:
    if maximum > float(np.finfo(np.float32).max):
        raise InvalidInputError(
            f"dtype: 'float32' cannot hold the {what} (largest value {maximum:.6g} > {np.finfo(np.float32).max:.6g}, "
            "the float32 maximum); use dtype='float64'"
        )


def dissimilarity(X: Any, metric: str = "correlation", *, dtype: Any = "float64") -> np.ndarray:
    """Pairwise dissimilarity of the rows of ``X``, computed block by block.

    Parameters
    ----------
    X : array_like, shape (N, d)
        One row of features per item (e.g. the item's responses from source
        models, or an embedding).
    metric : {"correlation", "cosine", "euclidean"}
        ``"correlation"``: ``1 - Pearson`` (AnchorPoints; constant rows get
        correlation 0 with everything but themselves); ``"cosine"``:
        ``1 - cos`` of L2-normalised rows (RepCore); ``"euclidean"``.
    dtype : {"float64", "float32"}
        Storage of the result; the arithmetic is float64 either way and only
        the stored values are rounded.

    Returns
    -------
    ndarray, shape (N, N)
        Non-negative, zero diagonal. Items with identical rows of ``X`` are at
        distance exactly 0 and get identical rows and columns (the blockwise
        products would otherwise leave rounding noise of about ``1e-16``
        there). Peak memory is the result plus one block of about 4 M entries.
    """
    X = as_array(X, "X", ndim=2, shape_doc="(N, d)")
    check_choice(metric, "metric", METRICS)
    out_t = _dtype(dtype)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise InvalidInputError(f"X: expected at least one row and one column, got shape {X.shape}")
    N = X.shape[0]
    check_allocation(float(np.dtype(out_t).itemsize) * N * N, "X", f"the ({N}, {N}) dissimilarity matrix")
    X, unscale = _exact_rescale(X, metric)
    D = np.empty((N, N), dtype=out_t)
    B = _row_block(N)
    if metric == "euclidean":
        for a in range(0, N, B):
            blk = cdist(X[a:a + B], X, "euclidean")
            if out_t is np.float32:
                _check_float32(float(np.ldexp(blk.max(initial=0.0), unscale)), "distances")
            D[a:a + B] = blk
    else:
        Z = X - X.mean(axis=1, keepdims=True) if metric == "correlation" else X.copy()
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        Z /= np.where(norms > 0, norms, 1.0)  # zero rows give similarity 0 (distance 1)
        for a in range(0, N, B):
            blk = Z[a:a + B] @ Z.T
            np.subtract(1.0, blk, out=blk)
            D[a:a + B] = blk
    np.clip(D, 0.0, None, out=D)
    np.fill_diagonal(D, 0.0)
    _tie_duplicates(D, X)
    return D if unscale == 0 else np.ldexp(D, unscale)


def _tie_duplicates(D: np.ndarray, X: np.ndarray) -> None:
    """In place: items with identical rows of ``X`` (shape (N, d)) copy the rows and columns of ``D``
    (shape (N, N)) of their group's first item, and are at distance 0 from each other."""
    N = X.shape[0]
    _, first, inv = np.unique(X, axis=0, return_index=True, return_inverse=True)
    rep = first[np.asarray(inv).ravel()]
    dup = np.flatnonzero(rep != np.arange(N))
    if dup.size == 0:
        return
    D[dup, :] = D[rep[dup], :]
    D[:, dup] = D[:, rep[dup]]  # so D[a, b] = D[r, r] = 0 for any two items a, b of the group of r


def _exact_rescale(X: np.ndarray, metric: str) -> tuple[np.ndarray, int]:
    """``X`` scaled by powers of two (exact) so that squares neither overflow nor underflow.

    Correlation and cosine do not depend on a row's scale: each row is scaled
    by ``2**-e`` with ``2**e`` about its largest magnitude. Euclidean distances
    scale with ``X``: one common factor, returned as the exponent to undo
    (``D = ldexp(D_scaled, e)``).
    """
    if metric == "euclidean":
        big = float(np.max(np.abs(X))) if X.size else 0.0
        if big == 0.0 or 2.0**-500 < big < 2.0**500:
            return X, 0
        e = int(np.frexp(big)[1])
        return np.ldexp(X, -e), e
    big = np.max(np.abs(X), axis=1)
    e = np.frexp(big)[1].astype(np.int64)
    e[big == 0] = 0
    if not np.any((big > 0) & ((big < 2.0**-500) | (big > 2.0**500))):
        return X, 0
    return np.ldexp(X, -e[:, None]), 0
