"""HoloCosm's cross-metric diagnostics (the paper's Section 1, Figs. 1-2, Appendix C.6.1).

* :func:`metric_rank_correlation` — Spearman correlation between the model
  rankings induced by each pair of metrics;
* :func:`cross_metric_worse_share` — selecting with metric ``a`` and
  evaluating on metric ``b != a``: the share of ``(a, b)`` cases whose error is
  worse than Random's;
* :func:`union_cost` — the size of the union of per-metric selections against
  the budget (the evaluation cost of per-metric selection).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import as_array, check_float, check_int
from benchsel.formulations.rankings import rankdata

__all__ = ["UnionCost", "cross_metric_worse_share", "high_agreement_share", "metric_rank_correlation", "union_cost"]


def metric_rank_correlation(Y: Any) -> np.ndarray:
    """Spearman correlation between the model rankings induced by each pair of metrics.

    Parameters
    ----------
    Y : array_like, shape (G, N, K)
        Responses of ``G >= 3`` models on ``N`` items under ``K >= 2`` metrics,
        oriented higher-is-better (each model's score on a metric is its mean over items).

    Returns
    -------
    ndarray, shape (K, K)
        Symmetric, ones on the diagonal; nan in the row and column of a metric
        on which every model has the same score.
    """
    Yv = as_array(Y, "Y", ndim=3, shape_doc="(G, N, K)")
    G, _, K = Yv.shape
    if G < 3:
        raise InvalidInputError(f"Y: expected at least 3 models (axis 0) to rank, got shape {Yv.shape}")
    if K < 2:
        raise InvalidInputError(f"Y: expected at least 2 metrics (axis 2) to correlate, got shape {Yv.shape}")
    r = rankdata(Yv.mean(axis=1), axis=0).astype(float)  # (G, K), average ranks of each metric's column
    r = r - r.mean(axis=0)
    sd = np.sqrt((r * r).sum(axis=0))
    ok = sd > 0
    C = np.full((K, K), np.nan)
    z = r[:, ok] / sd[ok]
    C[np.ix_(ok, ok)] = np.clip(z.T @ z, -1.0, 1.0)
    C[np.flatnonzero(ok), np.flatnonzero(ok)] = 1.0
    return C


def high_agreement_share(C: Any, threshold: float = 0.85) -> float:
    """Share of metric pairs (off-diagonal, each pair once, nan pairs left out) with correlation >= ``threshold``.

    Parameters
    ----------
    C : array_like, shape (K, K)
        A correlation table (:func:`metric_rank_correlation`).
    threshold : float
        The paper's "high correlation": 0.85.

    Returns
    -------
    float
        nan when no pair is defined.
    """
    Cv = as_array(C, "C", ndim=2, finite=False, shape_doc="(K, K)")
    if Cv.shape[0] != Cv.shape[1]:
        raise InvalidInputError(f"C: expected a square (K, K) table, got shape {Cv.shape}")
    t = check_float(threshold, "threshold", low=-1.0, high=1.0)
    iu = np.triu_indices(Cv.shape[0], 1)
    v = Cv[iu]
    v = v[np.isfinite(v)]
    return float(np.mean(v >= t)) if v.size else math.nan


def cross_metric_worse_share(nmae: Any, random_nmae: Any, *, include_diagonal: bool = False) -> float:
    """Share of cross-metric cases in which a single-metric selection is worse than Random.

    Parameters
    ----------
    nmae : array_like, shape (K, K) or (R, K, K)
        ``nmae[..., a, b]``: the error on metric ``b`` of the selection made with
        metric ``a`` (``R`` repetitions, e.g. seeds, pooled).
    random_nmae : array_like, shape (K,) or (R, K)
        Random's error on each metric (one reference for all repetitions, or one per repetition).
    include_diagonal : bool
        Count ``a == b`` too (default: only ``b != a``, the paper's cross-metric cases).

    Returns
    -------
    float
        The share of cases with ``nmae[..., a, b] > random_nmae[..., b]`` (ties are not worse).
    """
    E = as_array(nmae, "nmae", ndim=(2, 3), shape_doc="(K, K) or (R, K, K)")
    if E.ndim == 2:
        E = E[None]
    R, K, K2 = E.shape
    if K != K2:
        raise InvalidInputError(f"nmae: expected square (K, K) tables (selection x evaluation metric), got shape "
                                f"{E.shape[1:]}")
    ref = as_array(random_nmae, "random_nmae", ndim=(1, 2), shape_doc=f"({K},) or ({R}, {K})")
    if ref.shape not in ((K,), (R, K)):
        raise InvalidInputError(f"random_nmae: expected shape ({K},) or ({R}, {K}), got {ref.shape}")
    ref = np.broadcast_to(ref.reshape(-1, 1, K), (R, 1, K))
    if K < 2 and not include_diagonal:
        raise InvalidInputError(f"nmae: expected at least 2 metrics for cross-metric cases, got {K}")
    mask = np.ones((K, K), dtype=bool) if include_diagonal else ~np.eye(K, dtype=bool)
    worse = E > ref
    return float(worse[:, mask].mean())


@dataclass(frozen=True)
class UnionCost:
    """The evaluation cost of per-metric selection.

    Attributes
    ----------
    size : int
        Distinct items in the union of the per-metric selections.
    budget : int
        The nominal per-metric selection size ``B``.
    inflation : float
        ``size / budget`` (the paper's ``I_union``; between 1 and ``min(N, K B) / B``).
    """

    size: int
    budget: int
    inflation: float


def union_cost(selections: Any, n_items: int | None = None) -> UnionCost:
    """Size of the union of per-metric selections against the budget.

    Parameters
    ----------
    selections : sequence of array_like of int, K entries of shape (B,)
        One selection per metric, each of ``B`` distinct items.
    n_items : int, optional
        ``N``: indices must lie in ``[0, N)`` when given.

    Returns
    -------
    UnionCost
    """
    sels = list(selections) if not isinstance(selections, np.ndarray) or selections.ndim == 2 else [selections]
    if not sels:
        raise InvalidInputError("selections: expected at least one selection, got none")
    arrs = [as_array(s, f"selections[{k}]", ndim=1, dtype=np.int64, shape_doc="(B,)") for k, s in enumerate(sels)]
    B = arrs[0].size
    N = None if n_items is None else check_int(n_items, "n_items", low=1)
    for k, a in enumerate(arrs):
        if a.size != B or a.size == 0 or np.unique(a).size != a.size:
            raise InvalidInputError(f"selections[{k}]: expected {B} distinct item indices (the size of "
                                    f"selections[0]), got {a.size} with {np.unique(a).size} distinct")
        if a.min() < 0 or (N is not None and a.max() >= N):
            raise InvalidInputError(f"selections[{k}]: expected indices in [0, {N if N is not None else 'N'}), got "
                                    f"range [{a.min()}, {a.max()}]")
    size = int(np.unique(np.concatenate(arrs)).size)
    return UnionCost(size=size, budget=B, inflation=size / B)
