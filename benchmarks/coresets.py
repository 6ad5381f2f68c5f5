"""The k-medoids coreset instances of real response matrices (the ``coreset-scale`` suite and its study)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.kmedoids import KMedoids
from benchsel.instances.splits import interpolation_split

__all__ = ["KS", "SOURCE_SHARE", "real_matrices", "response_coreset"]

KS = (10, 25, 50, 100)
SOURCE_SHARE = 0.75


def response_coreset(Y: np.ndarray, k: int, *, source_share: float = SOURCE_SHARE, seed: int = 0,
                     dtype: str = "float64") -> tuple[Any, np.ndarray]:
    """The k-medoids instance of a response matrix, as AnchorPoints builds it.

    Parameters
    ----------
    Y : ndarray, shape (M, N)
        Models x items.
    k : int
    source_share : float
        Share of the models whose responses describe the items (a seeded
        random subset; the rest are the held-out targets).
    seed : int
    dtype : {"float64", "float32"}

    Returns
    -------
    f : KMedoids
        Over the items that are not constant on the sources.
    items : ndarray of int, shape (n,)
        Column of ``Y`` of each item of ``f``.
    """
    M = Y.shape[0]
    n_src = round(source_share * M)
    sp = interpolation_split(Y, n_targets=M - n_src, ref_fraction=1.0, seed=seed)
    X = np.asarray(Y[sp.references], dtype=float).T  # items x source models
    items = np.flatnonzero(X.std(axis=1) > 0)
    return KMedoids.from_features(X[items], k, metric="correlation", dtype=dtype), items


def real_matrices(data_dir: Path | None) -> dict[str, Path]:
    """``{name: path}`` of the binary matrices in ``<data>/responses/benchmark_prediction``."""
    if data_dir is None:
        return {}
    folder = Path(data_dir) / "responses" / "benchmark_prediction"
    return {p.stem: p for p in sorted(folder.glob("*.npz"))}
