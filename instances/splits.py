"""Reference/target splits of a response matrix (the BayesAME paper's protocol).

* Interpolation: ``n_targets`` models drawn at random are the targets; the rest
  is the reference pool, of which a random ``ref_fraction`` are the reference
  models.
* Extrapolation: the ``n_targets`` best models (by full-benchmark mean score)
  are the targets; the next ``drop_fraction`` of all models (by rank) are
  dropped to open a performance gap; the rest is the pool, of which a random
  ``ref_fraction`` are the references.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import as_array, check_float, check_int, check_rng

__all__ = ["Split", "extrapolation_split", "interpolation_split"]


@dataclass(frozen=True, eq=False)
class Split:
    """Model indices of a split (rows of the response matrix).

    Attributes
    ----------
    targets : ndarray of int64, shape (n_targets,)
    references : ndarray of int64, shape (Kr,)
    pool : ndarray of int64
        The reference pool the references were drawn from.
    dropped : ndarray of int64
        Models left out (extrapolation gap; empty for interpolation).
    kind : {"interpolation", "extrapolation"}
    """

    targets: np.ndarray
    references: np.ndarray
    pool: np.ndarray
    dropped: np.ndarray
    kind: str


def _scores(Y: Any) -> np.ndarray:
    Y = as_array(Y, "Y", ndim=2, shape_doc="(M, N)")
    if Y.shape[1] < 1:
        raise InvalidInputError(f"Y: expected at least one item, got shape {Y.shape}")
    return Y


def _refs(pool: np.ndarray, ref_fraction: float, rng: np.random.Generator) -> np.ndarray:
    n = max(1, round(ref_fraction * pool.size))
    return np.sort(rng.choice(pool, size=n, replace=False).astype(np.int64))


def interpolation_split(Y: Any, *, n_targets: int = 10, ref_fraction: float = 0.5, seed: Any = None) -> Split:
    """Random targets; a random ``ref_fraction`` of the remaining models as references.

    Parameters
    ----------
    Y : array_like, shape (M, N)
        Response matrix (models x items).
    n_targets : int
        Number of target models (default 10), ``1 <= n_targets <= M - 1``.
    ref_fraction : float
        Share of the pool used as references, in ``(0, 1]`` (default 0.5; at least one model).
    seed : int or numpy Generator, optional

    Returns
    -------
    Split
    """
    Y = _scores(Y)
    M = Y.shape[0]
    n_targets = check_int(n_targets, "n_targets", low=1, high=M - 1, high_doc=f"M - 1 = {M - 1} (Y has {M} models)")
    ref_fraction = check_float(ref_fraction, "ref_fraction", low=0.0, high=1.0, low_open=True)
    rng = check_rng(seed)
    perm = rng.permutation(M)
    targets = np.sort(perm[:n_targets]).astype(np.int64)
    pool = np.sort(perm[n_targets:]).astype(np.int64)
    return Split(targets, _refs(pool, ref_fraction, rng), pool, np.zeros(0, dtype=np.int64), "interpolation")


def extrapolation_split(Y: Any, *, n_targets: int = 10, drop_fraction: float = 0.2, ref_fraction: float = 0.5,
                        seed: Any = None) -> Split:
    """The ``n_targets`` best models as targets; the next ``round(drop_fraction * M)`` dropped.

    Models are ranked by their mean score over the items (higher is better;
    ties broken by index). The references are a random ``ref_fraction`` of the
    remaining (lower-scoring) pool.

    Parameters
    ----------
    Y : array_like, shape (M, N)
        Response matrix, oriented higher-is-better.
    n_targets : int
        Default 10.
    drop_fraction : float
        Share of all ``M`` models dropped below the targets, in ``[0, 1)`` (default 0.2).
    ref_fraction : float
        Share of the pool used as references (default 0.5).
    seed : int or numpy Generator, optional

    Returns
    -------
    Split
    """
    Y = _scores(Y)
    M = Y.shape[0]
    n_targets = check_int(n_targets, "n_targets", low=1, high=M - 1, high_doc=f"M - 1 = {M - 1} (Y has {M} models)")
    drop_fraction = check_float(drop_fraction, "drop_fraction", low=0.0, high=1.0, high_open=True)
    ref_fraction = check_float(ref_fraction, "ref_fraction", low=0.0, high=1.0, low_open=True)
    n_drop = round(drop_fraction * M)
    if n_targets + n_drop >= M:
        raise InvalidInputError(
            f"drop_fraction: {n_targets} targets plus {n_drop} dropped models leave no reference model "
            f"(Y has {M} models); lower n_targets or drop_fraction"
        )
    rng = check_rng(seed)
    order = np.lexsort((np.arange(M), -Y.mean(axis=1)))  # best first, ties by index
    targets = np.sort(order[:n_targets]).astype(np.int64)
    dropped = np.sort(order[n_targets:n_targets + n_drop]).astype(np.int64)
    pool = np.sort(order[n_targets + n_drop:]).astype(np.int64)
    return Split(targets, _refs(pool, ref_fraction, rng), pool, dropped, "extrapolation")
