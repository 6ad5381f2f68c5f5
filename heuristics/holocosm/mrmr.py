"""mRMR + RidgeCV (Bowyer et al. 2026), as HoloCosm's paper runs it (its Appendix B.1).

Items are the features and the source models the samples: relevance is the
mutual information between an item's source responses and the sources'
full-benchmark means; redundancy is the mutual information between two items.
Items are chosen greedily by the mutual-information quotient (relevance over
the mean redundancy with the items already chosen). A separate ridge
regression with leave-one-out penalty choice (RidgeCV: penalties 0.1, 1, 10,
an intercept, no clipping) per evaluation metric maps the selected items'
scores to the full-benchmark mean.

The mutual-information estimators are the ones scikit-learn's
``mutual_info_regression`` / ``mutual_info_classif`` use: Kraskov-Stögbauer-
Grassberger (KSG, ``k`` = 3 neighbours, Chebyshev distance, variables scaled to
unit standard deviation and jittered by ``1e-10``) between continuous vectors,
Ross's estimator between a binary item and a continuous target, and the plug-in
estimate between two binary items (natural logarithms).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.special import digamma

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import as_array, check_int, check_rng
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.base import UninformativeSourcesWarning
from benchsel.formulations.holocosm import RankingRiskReconstruction

from .baselines import FittedSelection, selection_target

#: RidgeCV's default penalty grid (scikit-learn ``RidgeCV(alphas=(0.1, 1.0, 10.0))``).
RIDGECV_ALPHAS = (0.1, 1.0, 10.0)
#: Smallest mean redundancy the quotient divides by (items independent of every chosen one).
REDUNDANCY_FLOOR = 1e-3

__all__ = ["REDUNDANCY_FLOOR", "RIDGECV_ALPHAS", "mi_binary", "mi_ksg", "mi_mixed", "mrmr_order", "mrmr_ridge"]


def _kth(d: np.ndarray, k: np.ndarray | int) -> np.ndarray:
    """The ``k``-th smallest entry (1-based) of each row of ``d`` (last axis); ``k`` one per row or shared."""
    s = np.sort(d, axis=-1)
    kk = np.broadcast_to(np.asarray(k, dtype=np.int64), s.shape[:-1])
    return np.take_along_axis(s, (kk - 1)[..., None], axis=-1)[..., 0]


def mi_ksg(x: Any, Y: Any, n_neighbors: int = 3) -> np.ndarray:
    """KSG mutual information (nats) between a continuous vector and each row of ``Y``.

    Parameters
    ----------
    x : array_like, shape (n,)
    Y : array_like, shape (P, n)
    n_neighbors : int
        ``k``, ``1 <= k < n``.

    Returns
    -------
    ndarray, shape (P,)
        ``max(0, psi(n) + psi(k) - mean(psi(n_x + 1)) - mean(psi(n_y + 1)))``.
    """
    xv = as_array(x, "x", ndim=1, shape_doc="(n,)")
    Yv = as_array(Y, "Y", ndim=2, shape=(None, xv.size), shape_doc=f"(P, n) = (P, {xv.size})")
    n = xv.size
    k = check_int(n_neighbors, "n_neighbors", low=1, high=n - 1)
    dx = np.abs(xv[:, None] - xv[None, :])  # (n, n)
    dy = np.abs(Yv[:, :, None] - Yv[:, None, :])  # (P, n, n)
    joint = np.maximum(dx[None], dy)
    idx = np.arange(n)
    joint[:, idx, idx] = np.inf
    eps = np.nextafter(_kth(joint, k), 0)[..., None]  # (P, n, 1): neighbours strictly inside the k-th distance
    nx = (dx[None] <= eps).sum(axis=2) - 1
    ny = (dy <= eps).sum(axis=2) - 1
    mi = digamma(n) + digamma(k) - digamma(nx + 1).mean(axis=1) - digamma(ny + 1).mean(axis=1)
    return np.maximum(mi, 0.0)


def mi_mixed(c: Any, D: Any, n_neighbors: int = 3) -> np.ndarray:
    """Ross's mutual information (nats) between a continuous vector and each row of discrete labels ``D``.

    Points whose label occurs once are left out; ``k_i = min(k, count_i - 1)``.

    Parameters
    ----------
    c : array_like, shape (n,)
    D : array_like, shape (P, n)
        Discrete labels (e.g. 0/1 item scores).
    n_neighbors : int

    Returns
    -------
    ndarray, shape (P,)
    """
    cv = as_array(c, "c", ndim=1, shape_doc="(n,)")
    Dv = as_array(D, "D", ndim=2, shape=(None, cv.size), shape_doc=f"(P, n) = (P, {cv.size})")
    k = check_int(n_neighbors, "n_neighbors", low=1)
    n = cv.size
    dc = np.abs(cv[:, None] - cv[None, :])
    out = np.zeros(Dv.shape[0])
    idx = np.arange(n)
    for p, d in enumerate(Dv):
        same = d[:, None] == d[None, :]
        count = same.sum(axis=1)
        keep = count > 1
        if not keep.any():
            continue
        kk = np.minimum(k, count - 1)
        masked = np.where(same, dc, np.inf)
        masked[idx, idx] = np.inf
        radius = np.nextafter(_kth(masked[keep], np.maximum(kk[keep], 1)), 0)
        sub = dc[np.ix_(keep, keep)]
        m = (sub <= radius[:, None]).sum(axis=1)
        mi = digamma(int(keep.sum())) + digamma(kk[keep]).mean() - digamma(count[keep]).mean() - digamma(m).mean()
        out[p] = max(mi, 0.0)
    return out


def mi_binary(x: Any, Y: Any) -> np.ndarray:
    """Plug-in mutual information (nats) between a 0/1 vector and each 0/1 row of ``Y``.

    Parameters
    ----------
    x : array_like, shape (n,)
    Y : array_like, shape (P, n)

    Returns
    -------
    ndarray, shape (P,)
    """
    xv = as_array(x, "x", ndim=1, shape_doc="(n,)")
    Yv = as_array(Y, "Y", ndim=2, shape=(None, xv.size), shape_doc=f"(P, n) = (P, {xv.size})")
    n = xv.size
    mi = np.zeros(Yv.shape[0])
    px = np.array([(xv == 0).mean(), (xv == 1).mean()])
    py = np.stack([(Yv == 0).mean(axis=1), (Yv == 1).mean(axis=1)], axis=1)  # (P, 2)
    for a in (0, 1):
        for b in (0, 1):
            pab = ((xv == a)[None, :] & (Yv == b)).sum(axis=1) / n
            with np.errstate(divide="ignore", invalid="ignore"):
                term = pab * np.log(pab / (px[a] * py[:, b]))
            mi += np.where(pab > 0, term, 0.0)
    return np.maximum(mi, 0.0)


def _is_binary(F: np.ndarray) -> bool:
    return bool(np.isin(F, (0.0, 1.0)).all())


def _prepare(v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """scikit-learn's preprocessing of a continuous variable: unit standard deviation (kept when 0), jitter."""
    sd = v.std(axis=-1, keepdims=True)
    v = v / np.where(sd > 0, sd, 1.0)
    scale = np.maximum(1.0, np.abs(v).mean(axis=-1, keepdims=True))
    return v + 1e-10 * scale * rng.standard_normal(v.shape)


def mrmr_order(F: Any, budget: int, seed: int = 0, *, n_neighbors: int = 3) -> np.ndarray:
    """Greedy mRMR (mutual-information quotient) on one source matrix; items in the order chosen.

    Parameters
    ----------
    F : array_like, shape (M, N)
        Source models x items, one metric.
    budget : int
        Items to choose, ``1 <= budget <= N``.
    seed : int
        Seeds the estimators' jitter and the order in which exact ties are broken.
    n_neighbors : int
        ``k`` of the KSG / Ross estimators (``< M``).

    Returns
    -------
    ndarray of int64, shape (budget,)
    """
    Fv = as_array(F, "F", ndim=2, shape_doc="(M, N)")
    M, N = Fv.shape
    B = check_int(budget, "budget", low=1, high=N)
    if M < 2:
        raise InvalidInputError(f"F: expected at least 2 source models (rows), got shape {Fv.shape}")
    k = min(check_int(n_neighbors, "n_neighbors", low=1), M - 1)
    rng = check_rng(seed)
    target = _prepare(Fv.mean(axis=1), rng)
    items = Fv.T.copy()  # (N, M)
    if _is_binary(Fv):
        rel = mi_mixed(target, items, k)
        red_of = lambda j: mi_binary(items[j], items)  # noqa: E731
    else:
        items = _prepare(items, rng)
        rel = mi_ksg(target, items, k)
        red_of = lambda j: mi_ksg(items[j], items, k)  # noqa: E731
    tie = rng.permutation(N)  # exact ties go to the earlier item of a seeded order
    chosen = np.empty(B, dtype=np.int64)
    taken = np.zeros(N, dtype=bool)
    red_sum = np.zeros(N)
    score = rel.copy()
    for t in range(B):
        s = np.where(taken, -np.inf, score)[tie]
        j = int(tie[int(np.argmax(s))])
        chosen[t] = j
        taken[j] = True
        if t + 1 < B:
            red_sum += red_of(j)
            score = rel / np.maximum(red_sum / (t + 1), REDUNDANCY_FLOOR)
    return chosen


def mrmr_ridge(f: RankingRiskReconstruction, metric: int | str = "average", seed: int = 0, *,
               n_neighbors: int = 3, alphas: Any = RIDGECV_ALPHAS) -> FittedSelection:
    """mRMR selection on one metric (or the AverageMetric) with one RidgeCV estimator per evaluation metric.

    Parameters
    ----------
    f : RankingRiskReconstruction
        Sources ``f.X``, shape (M, N, K), and budget ``f.budget``.
    metric : int or "average"
        The selection metric (:func:`~benchsel.heuristics.holocosm.baselines.selection_target`).
    seed : int
    n_neighbors : int
        Neighbours of the mutual-information estimators.
    alphas : sequence of float
        The ridge penalties searched by leave-one-out.

    Returns
    -------
    FittedSelection
        ``method`` ``"mrmr_m<k>"`` or ``"mrmr_avg"``; ``extra["order"]`` the greedy order.
    """
    F, tag = selection_target(f, metric)
    order = mrmr_order(F, f.budget, seed, n_neighbors=n_neighbors)
    sel = np.sort(order)
    with warnings.catch_warnings():  # reconstruction only: the warning's intervals do not apply here
        warnings.simplefilter("ignore", UninformativeSourcesWarning)
        ests: tuple[Any, ...] = tuple(get_estimator("ridge", alphas=alphas, clip=False).fit(f.X[:, :, k], sel)
                                      for k in range(f.n_metrics))
    return FittedSelection(f"mrmr_{tag}", sel, None, False, {"order": order.tolist(),
                                                                "alpha": [e.alpha_ for e in ests]},
                           estimators=ests)
