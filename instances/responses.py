"""Item-level response data: ``.npz`` files with ``Y`` of shape (models, items[, metrics]).

``load_responses`` reads the format of ``shared/data/responses`` (keys ``Y``,
optional ``models``, ``item_ids``, ``metrics``) and knows which metrics are
lower-is-better there (MQM penalties); pass ``lower_is_better`` for other data.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from solvers.errors import InvalidInputError

__all__ = ["Responses", "load_responses", "LOWER_IS_BETTER_FILES"]

#: File-name patterns whose every metric is lower-is-better (error penalties).
LOWER_IS_BETTER_FILES = ("*_mqm.npz", "ted_*_multimetric.npz")


@dataclass(frozen=True, eq=False)
class Responses:
    """A response matrix or tensor with its labels.

    Attributes
    ----------
    Y : ndarray of float, shape (M, N) or (M, N, K)
        As stored (not oriented).
    models : ndarray of str, shape (M,)
    item_ids : ndarray, shape (N,)
    metrics : ndarray of str, shape (K,)  (``("score",)`` for a 2-D file)
    lower_is_better : ndarray of bool, shape (K,)
    name : str
        File stem.
    """

    Y: np.ndarray
    models: np.ndarray
    item_ids: np.ndarray
    metrics: np.ndarray
    lower_is_better: np.ndarray
    name: str

    @property
    def n_models(self) -> int:
        return int(self.Y.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.Y.shape[1])

    @property
    def n_metrics(self) -> int:
        return int(self.metrics.size)

    @property
    def is_binary(self) -> bool:
        return bool(np.isin(self.Y, (0.0, 1.0)).all())

    def tensor(self) -> np.ndarray:
        """``Y`` as (M, N, K), as stored."""
        return self.Y if self.Y.ndim == 3 else self.Y[:, :, None]

    def oriented(self) -> np.ndarray:
        """(M, N, K) with every metric higher-is-better (lower-is-better ones negated)."""
        T = self.tensor().copy()
        T[:, :, self.lower_is_better] *= -1.0
        return T

    def matrix(self, metric: int | str = 0, *, oriented: bool = True) -> np.ndarray:
        """One metric as (M, N), oriented higher-is-better by default."""
        k = int(np.flatnonzero(self.metrics == metric)[0]) if isinstance(metric, str) else int(metric)
        T = self.oriented() if oriented else self.tensor()
        return T[:, :, k]


def load_responses(path: str | Path, *, lower_is_better: bool | Sequence[bool] | None = None) -> Responses:
    """Read a response file.

    Parameters
    ----------
    path : str or Path
        ``.npz`` with ``Y`` (models x items, or models x items x metrics) and
        optional ``models``, ``item_ids``, ``metrics``.
    lower_is_better : bool or sequence of bool (one per metric), optional
        Orientation; by default every metric of a file matching
        :data:`LOWER_IS_BETTER_FILES` is lower-is-better and all others are
        higher-is-better.

    Returns
    -------
    Responses
    """
    path = Path(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"path: cannot read response file {str(path)!r}: {e}") from None
    with z:
        if "Y" not in z.files:
            raise InvalidInputError(f"path: {str(path)!r} has no array 'Y' (keys: {', '.join(z.files)})")
        Y = np.asarray(z["Y"], dtype=float)
        if Y.ndim not in (2, 3) or min(Y.shape) < 1:
            raise InvalidInputError(f"path: {str(path)!r}: Y must be (models, items) or (models, items, metrics), got {Y.shape}")
        if not np.isfinite(Y).all():
            raise InvalidInputError(f"path: {str(path)!r}: Y has {int((~np.isfinite(Y)).sum())} non-finite entries")
        M, N = Y.shape[:2]
        K = Y.shape[2] if Y.ndim == 3 else 1
        models = np.asarray(z["models"]).astype(str) if "models" in z.files else np.array([f"model_{i}" for i in range(M)])
        items = np.asarray(z["item_ids"]) if "item_ids" in z.files else np.arange(N)
        metrics = np.asarray(z["metrics"]).astype(str) if "metrics" in z.files else (
            np.array([f"metric_{k}" for k in range(K)]) if K > 1 else np.array(["score"]))
    if models.size != M or items.size != N or metrics.size != K:
        raise InvalidInputError(
            f"path: {str(path)!r}: label lengths (models {models.size}, item_ids {items.size}, metrics {metrics.size}) "
            f"do not match Y's shape {Y.shape}"
        )
    if lower_is_better is None:
        lib = np.full(K, any(fnmatch.fnmatch(path.name, p) for p in LOWER_IS_BETTER_FILES))
    elif isinstance(lower_is_better, (bool, np.bool_)):
        lib = np.full(K, bool(lower_is_better))
    else:
        lib = np.asarray(lower_is_better, dtype=bool)
        if lib.shape != (K,):
            raise InvalidInputError(f"lower_is_better: expected one flag per metric, shape ({K},), got shape {lib.shape}")
    return Responses(Y=Y, models=models, item_ids=items, metrics=metrics, lower_is_better=lib, name=path.stem)
