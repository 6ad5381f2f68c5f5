"""HoloCosm's other peers, with the paper's settings (its Sections 4.3 (1), Appendix B.1-B.2): Vote and
tinyBenchmarks (IRT item parameters + weighted K-means). mRMR + RidgeCV is :mod:`.mrmr`.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import as_array, check_choice, check_int, check_rng
from benchsel.formulations.estimation import fit_irt, get_estimator
from benchsel.formulations.estimation.base import UninformativeSourcesWarning
from benchsel.formulations.holocosm import RankingRiskReconstruction

from .baselines import BaselineSelection, FittedSelection, _sqdist, anchorpoints, selection_target

__all__ = ["binarize_mean_matched", "tinybenchmarks", "vote", "vote_counts", "weighted_kmeans"]


# --------------------------------------------------------------------------- Vote
def vote_counts(selections: list[np.ndarray], budget: int, n_items: int, seed: int = 0) -> np.ndarray:
    """Combine per-metric selections by votes: the ``budget`` most-voted distinct items.

    Every item gets one vote per selection containing it. Items above the
    boundary vote count are all kept; at the boundary, items are added one at
    a time, each time one whose least-covered voting metric (fewest kept items
    from that metric's selection) is least covered; remaining ties go to a
    seeded random order.

    Parameters
    ----------
    selections : list of ndarray of int, K entries of shape (budget,)
    budget : int
    n_items : int
    seed : int

    Returns
    -------
    ndarray of int64, shape (budget,), sorted
    """
    N = check_int(n_items, "n_items", low=1)
    B = check_int(budget, "budget", low=1, high=N)
    if not selections:
        raise InvalidInputError("selections: expected at least one per-metric selection, got none")
    member = np.zeros((len(selections), N), dtype=bool)
    for k, s in enumerate(selections):
        s = np.asarray(s, dtype=np.int64)
        if s.ndim != 1 or s.size != B or np.unique(s).size != B or s.min() < 0 or s.max() >= N:
            raise InvalidInputError(f"selections[{k}]: expected {B} distinct item indices in [0, {N}), got {s!r}")
        member[k, s] = True
    votes = member.sum(axis=0)
    level = np.sort(votes)[::-1][B - 1]  # the boundary vote count (>= 1: the union holds >= B items)
    keep = votes > level
    tied = np.flatnonzero(votes == level)
    order = check_rng(seed).permutation(tied.size)
    tied = tied[order]
    cover = member[:, keep].sum(axis=1).astype(float)  # kept items per metric
    for _ in range(B - int(keep.sum())):
        key = np.where(member[:, tied], cover[:, None], np.inf).min(axis=0)
        j = int(np.argmin(key))  # first in the seeded order among the least covered
        i = int(tied[j])
        keep[i] = True
        cover[member[:, i]] += 1
        tied = np.delete(tied, j)
    return np.flatnonzero(keep).astype(np.int64)


def vote(f: RankingRiskReconstruction, seed: int = 0) -> BaselineSelection:
    """Vote: AnchorPoints on every metric (``B`` items each), the ``B`` most-voted items, plain means.

    Parameters
    ----------
    f : RankingRiskReconstruction
    seed : int
        Seeds AnchorPoints and the boundary tie-break (:func:`vote_counts`).

    Returns
    -------
    BaselineSelection
        ``extra["union_size"]``: items selected by at least one metric.
    """
    per = [anchorpoints(f, k, seed).selection for k in range(f.n_metrics)]
    sel = vote_counts(per, f.budget, f.n_items, seed)
    return BaselineSelection("vote", sel, None, False, {"union_size": int(np.unique(np.concatenate(per)).size)})


# --------------------------------------------------------------------------- tinyBenchmarks
def binarize_mean_matched(F: Any) -> np.ndarray:
    """0/1 responses from continuous ones, as HoloCosm's paper prepares them for tinyBenchmarks' IRT.

    Min-max normalise all entries (a constant matrix becomes 0), then keep
    ``z >= t`` with the threshold ``t`` among the entries whose share of ones
    is closest to the mean of ``z`` (the larger ``t`` on ties). 0/1 input is
    returned as it is.

    Parameters
    ----------
    F : array_like, shape (M, N)

    Returns
    -------
    ndarray of float, shape (M, N), entries 0 or 1
    """
    Fv = as_array(F, "F", ndim=2, shape_doc="(M, N)")
    if np.isin(Fv, (0.0, 1.0)).all():
        return Fv.copy()
    span = float(np.ptp(Fv))
    if span == 0:
        return np.zeros_like(Fv)
    z = (Fv - Fv.min()) / span
    vals = np.unique(z)  # ascending candidate thresholds
    flat = np.sort(z.ravel())
    share = 1.0 - np.searchsorted(flat, vals, side="left") / flat.size  # share of entries >= t
    gap = np.abs(share - z.mean())
    t = vals[np.flatnonzero(gap <= gap.min() + 1e-12)[-1]]
    return (z >= t).astype(float)


def weighted_kmeans(F: Any, n_clusters: int, weights: Any = None, seed: int = 0, *, max_iter: int = 300,
                    tol: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd K-means with sample weights and a weighted k-means++ start.

    Parameters
    ----------
    F : array_like, shape (N, D)
    n_clusters : int
        ``1 <= n_clusters <= N``.
    weights : array_like, shape (N,), optional
        Nonnegative sample weights with a positive sum (None: uniform).
    seed : int
    max_iter : int
    tol : float
        Stop when no centre moves by more than ``tol`` times the mean feature variance.

    Returns
    -------
    centres : ndarray, shape (n_clusters, D)
        An empty cluster keeps its previous centre.
    labels : ndarray of int64, shape (N,)
    """
    X = as_array(F, "F", ndim=2, shape_doc="(N, D)")
    N = X.shape[0]
    B = check_int(n_clusters, "n_clusters", low=1, high=N)
    w = np.ones(N) if weights is None else as_array(weights, "weights", shape=(N,), shape_doc=f"(N,) = ({N},)",
                                                    nonnegative=True)
    if w.sum() <= 0:
        raise InvalidInputError("weights: expected a positive sum, got all zeros")
    rng = check_rng(seed)
    C = np.empty((B, X.shape[1]))
    C[0] = X[rng.choice(N, p=w / w.sum())]
    d2 = ((X - C[0]) ** 2).sum(axis=1)
    for c in range(1, B):
        p = w * d2
        C[c] = X[rng.choice(N, p=p / p.sum())] if p.sum() > 0 else X[rng.choice(N, p=w / w.sum())]
        d2 = np.minimum(d2, ((X - C[c]) ** 2).sum(axis=1))
    thr = tol * float(X.var(axis=0).mean())
    labels = np.zeros(N, dtype=np.int64)
    for _ in range(check_int(max_iter, "max_iter", low=1)):
        labels = _sqdist(X, C).argmin(axis=1)
        mass = np.bincount(labels, weights=w, minlength=B)
        sums = np.zeros_like(C)
        np.add.at(sums, labels, w[:, None] * X)
        new = np.where(mass[:, None] > 0, sums / np.where(mass > 0, mass, 1.0)[:, None], C)
        shift = float(((new - C) ** 2).sum(axis=1).max())
        C = new
        if shift <= thr:
            break
    return C, _sqdist(X, C).argmin(axis=1).astype(np.int64)


def tinybenchmarks(f: RankingRiskReconstruction, metric: int | str = "average", seed: int = 0, *, dim: int = 5,
                   estimator: str = "weighted") -> BaselineSelection:
    """tinyBenchmarks' IRT selection on one metric (or the AverageMetric), HoloCosm's adaptation.

    The selection metric's source responses are binarised
    (:func:`binarize_mean_matched`); a ``dim``-dimensional 2PL model fitted on
    them (:func:`~benchsel.formulations.estimation.fit_irt`, Gaussian priors)
    gives each item ``(a_i, b_i)``; weighted K-means (uniform weights: the data
    has no sub-scenarios to balance) forms ``B`` clusters and a linear-sum
    assignment of centres to items (squared distance) picks one distinct item
    per centre.

    Parameters
    ----------
    f : RankingRiskReconstruction
    metric : int or "average"
    seed : int
        Seeds the IRT start and K-means.
    dim : int
        IRT dimension (the paper: 5).
    estimator : {"weighted", "gp-irt"}
        ``"weighted"`` (the paper): cluster shares as weights of the selected
        items' means. ``"gp-irt"``: tinyBenchmarks' gp-IRT estimator fitted per
        evaluation metric on source responses min-max normalised to [0, 1]
        (targets normalised with the sources' range and clipped to [0, 1]).

    Returns
    -------
    BaselineSelection or FittedSelection
        ``method`` ``"tinybenchmarks_<tag>"`` (``"_gpirt"`` appended for gp-IRT).
    """
    how = check_choice(estimator, "estimator", ("weighted", "gp-irt"))
    F, tag = selection_target(f, metric)
    d = check_int(dim, "dim", low=1)
    model = fit_irt(binarize_mean_matched(F), d, seed=seed)
    E = model.item_embedding()
    B = f.budget
    C, labels = weighted_kmeans(E, B, None, seed)
    rows, cols = linear_sum_assignment(_sqdist(C, E))
    reps = np.empty(B, dtype=np.int64)
    reps[rows] = cols
    shares = np.bincount(labels, minlength=B) / f.n_items
    order = np.argsort(reps)
    sel, w = reps[order], shares[order]
    extra = {"irt_converged": bool(model.info.get("converged", False)), "empty_clusters": int((shares == 0).sum())}
    if how == "weighted":
        return BaselineSelection(f"tinybenchmarks_{tag}", sel, w, False, extra)
    lo = f.X.min(axis=(0, 1))
    span = np.ptp(f.X, axis=(0, 1))
    span = np.where(span > 0, span, 1.0)
    with warnings.catch_warnings():  # reconstruction only: the warning's intervals do not apply here
        warnings.simplefilter("ignore", UninformativeSourcesWarning)
        ests = tuple(get_estimator("irt", variant="gp-irt", seed=seed).fit((f.X[:, :, k] - lo[k]) / span[k], sel)
                     for k in range(f.n_metrics))
    return FittedSelection(f"tinybenchmarks_{tag}_gpirt", sel, w, False, extra, estimators=ests, lo=lo, span=span,
                           clip=True)
