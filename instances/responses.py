"""Item-level response data: ``.npz`` files with ``Y`` of shape (models, items[, metrics]).

``load_responses`` reads the format of ``shared/data/responses`` (keys ``Y``,
optional ``models``, ``item_ids``, ``metrics``) and knows which metrics are
lower-is-better there (MQM penalties); pass ``lower_is_better`` for other data.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import (
    as_array,
    check_allocation,
    check_choice,
    check_float,
    check_int,
    check_rng,
)

from .files import read_npz

__all__ = ["LOWER_IS_BETTER_FILES", "Responses", "load_responses"]

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
    if not path.is_file():
        raise InvalidInputError(f"path: no such response file {str(path)!r}")
    where = f"path: {str(path)!r}"
    z = read_npz(path, "a response file (.npz archive)", [], optional=("Y", "models", "item_ids", "metrics"))
    if "Y" not in z:
        raise InvalidInputError(f"{where} has no array 'Y' (keys: {', '.join(z)})")
    raw = z["Y"]
    if raw.dtype.kind not in "biuf":
        raise InvalidInputError(f"{where}: Y must hold real numbers (or booleans), got dtype {raw.dtype}")
    Y = as_array(raw, f"{where}: Y", finite=False)
    if Y.ndim not in (2, 3) or min(Y.shape) < 1:
        raise InvalidInputError(f"{where}: Y must be (models, items) or (models, items, metrics), got {Y.shape}")
    if not np.isfinite(Y).all():
        raise InvalidInputError(f"{where}: Y has {int((~np.isfinite(Y)).sum())} non-finite entries")
    M, N = Y.shape[:2]
    K = Y.shape[2] if Y.ndim == 3 else 1
    for key in ("models", "item_ids", "metrics"):
        if key in z and z[key].ndim != 1:
            raise InvalidInputError(f"{where}: {key} must be a 1-D array of labels, got shape {z[key].shape}")
    models = z["models"].astype(str) if "models" in z else np.array([f"model_{i}" for i in range(M)])
    items = z["item_ids"] if "item_ids" in z else np.arange(N)
    metrics = z["metrics"].astype(str) if "metrics" in z else (
        np.array([f"metric_{k}" for k in range(K)]) if K > 1 else np.array(["score"]))
    if models.size != M or items.size != N or metrics.size != K:
        raise InvalidInputError(
            f"{where}: label lengths (models {models.size}, item_ids {items.size}, metrics {metrics.size}) "
            f"do not match Y's shape {Y.shape}"
        )
    if np.unique(metrics).size != metrics.size:
        raise InvalidInputError(f"{where}: metric names must be distinct, got {metrics.tolist()}")
    if lower_is_better is None:
        lib = np.full(K, any(fnmatch.fnmatch(path.name, p) for p in LOWER_IS_BETTER_FILES))
    elif isinstance(lower_is_better, (bool, np.bool_)):
        lib = np.full(K, bool(lower_is_better))
    else:
        lib = np.asarray(lower_is_better)
        if lib.dtype != bool:
            raise InvalidInputError(f"lower_is_better: expected a bool or {K} bools (one per metric), "
                                    f"got {lower_is_better!r}")
        if lib.shape != (K,):
            raise InvalidInputError(f"lower_is_better: expected one flag per metric, shape ({K},), "
                                    f"got shape {lib.shape}")
    return Responses(Y=Y, models=models, item_ids=items, metrics=metrics, lower_is_better=lib, name=path.stem)


# --------------------------------------------------------------------------- multi-metric (HoloCosm)
def make_multimetric(n_models: int = 20, n_items: int = 1000, n_metrics: int = 4, *, corr: Any = 0.5,
                     n_negative: int = 0, n_topics: int = 8, topic_strength: float = 0.8, noise: float = 0.1,
                     kind: str = "continuous", n_lower_is_better: int = 0, seed: Any = 0) -> Responses:
    """Seeded synthetic multi-metric responses with controllable cross-metric correlation.

    Model ``m`` has an ability ``g[m, k]`` per metric, drawn from a normal law
    with correlation matrix ``C`` across metrics (``corr``); the last
    ``n_negative`` metrics have their ability negated, so they correlate
    negatively (``-corr``) with the others. Items belong to one of ``n_topics``
    topics on which each model is better or worse per metric
    (``topic_strength * N(0, 1)``), have a difficulty ``beta[n, k]`` (half
    shared across metrics) and a discrimination ``alpha[n, k]`` (log-normal);
    ``p = sigmoid(alpha * (g + topic effect - beta))``. The model means'
    cross-metric rank correlation follows ``C`` (attenuated by the topic effects
    and noise; ``corr=1`` gives near-identical rankings).

    Parameters
    ----------
    n_models, n_items, n_metrics : int
        ``M >= 2``, ``N >= 2``, ``K >= 1`` (e.g. up to 59 x 8400 x 14).
    corr : float or array_like, shape (K, K)
        Equicorrelation in ``[-1/(K-1), 1]`` or a correlation matrix
        (symmetric, unit diagonal, positive semi-definite).
    n_negative : int
        Metrics (the last ones) whose ability is negated, ``0 <= n_negative <= K``.
    n_topics : int
    topic_strength, noise : float
        Spread of topic effects; standard deviation of additive noise
        (continuous responses are clipped to ``[0, 1]``).
    kind : {"continuous", "binary"}
        ``p`` plus noise, or Bernoulli(``p``) outcomes.
    n_lower_is_better : int
        The last ``n_lower_is_better`` metrics are stored as errors ``1 - value``
        and flagged lower-is-better (exercises orientation).
    seed : int or Generator

    Returns
    -------
    Responses
        ``Y`` of shape (M, N, K), float.
    """

    M = check_int(n_models, "n_models", low=2)
    N = check_int(n_items, "n_items", low=2)
    K = check_int(n_metrics, "n_metrics", low=1)
    neg = check_int(n_negative, "n_negative", low=0, high=K)
    T = check_int(n_topics, "n_topics", low=1)
    ts = check_float(topic_strength, "topic_strength", low=0.0)
    nz = check_float(noise, "noise", low=0.0)
    check_choice(kind, "kind", ("continuous", "binary"))
    nlib = check_int(n_lower_is_better, "n_lower_is_better", low=0, high=K)

    check_allocation(8 * 8.0 * M * N * K, "n_items", f"responses of {M} models x {N} items x {K} metrics")
    rng = check_rng(seed)
    if np.ndim(corr) == 0:
        c = check_float(corr, "corr", low=-1.0 / (K - 1) if K > 1 else -1.0, high=1.0)
        C = np.full((K, K), c)
        np.fill_diagonal(C, 1.0)
    else:
        C = np.asarray(corr, dtype=float)
        if C.shape != (K, K):
            raise InvalidInputError(f"corr: expected a scalar or a ({K}, {K}) correlation matrix, got shape {C.shape}")
        if not np.isfinite(C).all() or not np.allclose(C, C.T) or not np.allclose(np.diag(C), 1.0):
            raise InvalidInputError("corr: expected a finite symmetric matrix with unit diagonal")
    w, V = np.linalg.eigh(C)
    if w.min() < -1e-9:
        raise InvalidInputError(f"corr: expected a positive semi-definite matrix, smallest eigenvalue {w.min():.3g}")
    L = V * np.sqrt(np.clip(w, 0.0, None))  # C = L L^T
    sign = np.ones(K)
    if neg:
        sign[K - neg:] = -1.0
    g = (rng.standard_normal((M, K)) @ L.T) * sign  # (M, K)
    h = ts * rng.standard_normal((M, K, T))
    topic = rng.integers(T, size=N)
    beta = np.sqrt(0.5) * rng.standard_normal((N, 1)) + np.sqrt(0.5) * rng.standard_normal((N, K))
    alpha = np.exp(0.3 * rng.standard_normal((N, K)))
    theta = g[:, :, None] + h[:, :, topic]  # (M, K, N)
    z = alpha.T[None] * (theta - beta.T[None])
    p = 1.0 / (1.0 + np.exp(-z))
    if kind == "binary":
        Y = (rng.random(p.shape) < p).astype(float)
    else:
        Y = np.clip(p + nz * rng.standard_normal(p.shape), 0.0, 1.0) if nz > 0 else p
    Y = np.ascontiguousarray(Y.transpose(0, 2, 1))  # (M, N, K)
    lib = np.zeros(K, dtype=bool)
    if nlib:
        lib[K - nlib:] = True
        Y[:, :, lib] = 1.0 - Y[:, :, lib]
    return Responses(Y=Y, models=np.array([f"synth_model_{m}" for m in range(M)]), item_ids=np.arange(N),
                     metrics=np.array([f"metric_{k}" for k in range(K)]), lower_is_better=lib,
                     name=f"multimetric_M{M}_N{N}_K{K}")


@dataclass(frozen=True, eq=False)
class SourceTargetSplit:
    """Source and target models chosen by :func:`paper_split`.

    Attributes
    ----------
    sources : ndarray of int, shape (S,)
        Source model indices, from the lowest to the highest score.
    targets : ndarray of int, shape (M - S,)
        The remaining models, in index order.
    score : ndarray, shape (M,)
        Each model's average of min-max normalised metric means.
    order : ndarray of int, shape (M,)
        Models from the lowest to the highest score.
    """

    sources: np.ndarray
    targets: np.ndarray
    score: np.ndarray
    order: np.ndarray

    def take(self, Y: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(Y[sources], Y[targets])`` of an array with models on axis 0."""
        Y = np.asarray(Y)
        return Y[self.sources], Y[self.targets]


def _split_scores(data: Any, lower_is_better: Any) -> tuple[np.ndarray, np.ndarray]:
    """(score, order) of the paper's split: per-model average of min-max normalised, oriented metric means, and
    the models from the lowest to the highest score (ties by index)."""
    if isinstance(data, Responses):
        if lower_is_better is not None:
            raise InvalidInputError("lower_is_better: a Responses object carries its own orientation; do not pass one")
        T = data.oriented()
    else:
        T = as_array(data, "data", ndim=(2, 3), shape_doc="(M, N, K) or (M, N)")
        if T.ndim == 2:
            T = T[:, :, None]
        K = T.shape[2]
        if lower_is_better is not None:
            lib = np.asarray(lower_is_better)
            lib = np.full(K, bool(lib)) if lib.ndim == 0 else lib
            if lib.shape != (K,):
                raise InvalidInputError(
                    f"lower_is_better: expected one flag per metric, shape ({K},), got shape {lib.shape}")
            T = T * np.where(lib.astype(bool), -1.0, 1.0)
    M = T.shape[0]
    mu = T.mean(axis=1)
    lo, hi = mu.min(axis=0), mu.max(axis=0)
    span = hi - lo
    norm = np.where(span > 0, (mu - lo) / np.where(span > 0, span, 1.0), 0.0)
    score = norm.mean(axis=1)
    return score, np.lexsort((np.arange(M), score))


def paper_split(data: Any, n_sources: int = 6, *, lower_is_better: Any = None) -> SourceTargetSplit:
    """The HoloCosm paper's source/target split.

    Orient every metric higher-is-better, take each model's mean per metric,
    min-max normalise each metric's means across all models (a metric whose
    means are all equal contributes 0), average the metrics into one score,
    rank the models (ties by index) and take ``n_sources`` evenly spaced models
    from the lowest to the highest (positions ``round(linspace(0, M-1, S))``)
    as sources; the others are targets.

    Parameters
    ----------
    data : Responses or array_like, shape (M, N, K) or (M, N)
    n_sources : int
        ``2 <= n_sources < M``.
    lower_is_better : bool or array_like of bool, shape (K,), optional
        Orientation of an array (a :class:`Responses` carries its own).

    Returns
    -------
    SourceTargetSplit
    """

    score, order = _split_scores(data, lower_is_better)
    M = score.size
    S = check_int(n_sources, "n_sources", low=2, high=M - 1, low_doc="2", high_doc=f"M - 1 = {M - 1}")
    pos = np.round(np.linspace(0, M - 1, S)).astype(int)
    sources = order[pos]
    targets = np.setdiff1d(np.arange(M), sources)
    return SourceTargetSplit(sources=sources, targets=targets, score=score, order=order)


def weak_to_strong_split(data: Any, n_sources: int = 6, *, lower_is_better: Any = None) -> SourceTargetSplit:
    """The HoloCosm paper's weak-to-strong split: the ``n_sources`` weakest models are the sources, every
    stronger model a target.

    Models are ranked by the score of :func:`paper_split` (the average of
    min-max normalised, oriented metric means; ties by index); the sources are
    the ``n_sources`` lowest, the targets all the others (each at least as
    strong as every source).

    Parameters
    ----------
    data : Responses or array_like, shape (M, N, K) or (M, N)
    n_sources : int
        ``2 <= n_sources <= M - 2`` (at least two targets to rank).
    lower_is_better : bool or array_like of bool, shape (K,), optional

    Returns
    -------
    SourceTargetSplit
    """
    score, order = _split_scores(data, lower_is_better)
    M = score.size
    S = check_int(n_sources, "n_sources", low=2, high=M - 2, low_doc="2", high_doc=f"M - 2 = {M - 2}")
    return SourceTargetSplit(sources=order[:S].copy(), targets=np.sort(order[S:]), score=score, order=order)


__all__ += ["SourceTargetSplit", "make_multimetric", "paper_split", "weak_to_strong_split"]
