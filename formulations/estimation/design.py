"""Model-assisted estimation: a per-target item model corrected by the design-weighted residuals.

New models are usually stronger than every source model. An estimator that learns a map from coreset
scores to full scores across the sources (ridge, stacking) then extrapolates a line beyond the range it
was fitted on, and its error grows with the distance. A model-assisted (generalised regression, GREG)
estimate stays close to unbiased there: per target it fits the item scores on the selected items to item
features taken from the sources, predicts every item, and adds the weighted mean of its own residuals
on the selected items, so a model that is off for this target is corrected by the target's own scores.

Item features (:func:`difficulty_features`): each item's mean score over all sources and over the
strongest ``top_share`` of them (the sources closest to a new, stronger model). The weights of the
selected items are the shares of the items they stand for: given by a sampling design
(:func:`stratified_sample`), or, by default, each item joins the selected item nearest in difficulty
(:func:`difficulty_shares`).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.validation import as_array, check_int, describe

from .base import Estimator, bounded_variance, plus_four, register_estimator

__all__ = ["BALANCE_DRAWS", "ModelAssisted", "balanced_stratified_sample", "check_strata", "difficulty_features",
           "difficulty_score", "difficulty_shares", "draw_balanced_sample", "proportional_strata",
           "strata_edges", "stratified_sample", "sure_sample_bound"]

#: Share of the strongest sources whose mean item score is the second item feature.
TOP_SHARE = 0.2
#: Stratified samples :func:`balanced_stratified_sample` chooses among (chosen on the fidelity benchmark's four
#: tuning matrices: 1, 200, 1000 and 3000 compared in both protocols, docs/results/new_models.md).
BALANCE_DRAWS = 1000
#: Quantile over the sources of the ratio behind :class:`ModelAssisted`'s variance floor (chosen on the fidelity
#: benchmark's nine matrices, docs/results/new_models.md).
FLOOR_QUANTILE = 0.25
#: Cap on the floats of one block of candidate samples' source scores (sources x draws x k).
_BALANCE_BLOCK = 4_000_000


def difficulty_features(Y_source: np.ndarray, top_share: float = TOP_SHARE) -> np.ndarray:
    """Each item's mean score over all sources and over the strongest ``top_share`` of them; shape (N, 2).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Source models (rows) x items (columns).
    top_share : float
        In (0, 1]; at least two sources (all of them when ``S <= 2``) make up the strongest group, ranked
        by mean score (ties by row order).
    """
    Y = np.asarray(Y_source, dtype=float)
    S = Y.shape[0]
    n_top = min(S, max(2, math.ceil(top_share * S)))
    top = np.argsort(-Y.mean(axis=1), kind="stable")[:n_top]
    return np.column_stack([Y.mean(axis=0), Y[top].mean(axis=0)])


def difficulty_score(features: np.ndarray) -> np.ndarray:
    """One number per item that orders the items by difficulty for strong models; shape (N,).

    The strongest sources' mean, ties broken by the mean over all sources.

    Parameters
    ----------
    features : ndarray, shape (N, 2)
        :func:`difficulty_features`.
    """
    f = np.asarray(features, dtype=float)
    span = float(np.ptp(f[:, 0])) or 1.0
    return f[:, 1] + 1e-3 * (f[:, 0] - f[:, 0].min()) / span * max(float(np.ptp(f[:, 1])), 1e-12)


def strata_edges(N: int, k: int) -> np.ndarray:
    """Boundaries of ``k`` equal-count strata of ``N`` sorted items (``1 <= k <= N``, checked by the caller);
    shape (k + 1,)."""
    return np.round(np.linspace(0, N, k + 1)).astype(np.int64)


def _check_k(k: Any, N: int) -> int:
    """The one check of a design's ``k``: an integer ``1 <= k <= N``."""
    k = check_int(k, "k", low=1)
    if k > N:
        raise InvalidInputError(f"k: expected 1 <= k <= {N} (the number of items), got {k}")
    return k


def proportional_strata(groups: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """``k`` strata nested in given groups: each group gets a number of strata proportional to its size (at
    least one; largest remainders), its items sorted by ``score`` cut into that many equal-count strata.

    Trusts its input (checked by the caller): ``groups`` int64 labels of shape (N,) using every one of
    ``0 .. m - 1`` with ``m <= k <= N``, ``score`` of shape (N,).

    Parameters
    ----------
    groups : ndarray of int64, shape (N,)
    score : ndarray, shape (N,)
        Sort key within a group (ties by item index).
    k : int

    Returns
    -------
    strata : ndarray of int64, shape (N,)
        Labels ``0 .. k - 1``, every one used; strata of one group are consecutive, in order of ``score``.
    """
    N = groups.size
    sizes = np.bincount(groups)
    m = sizes.size
    alloc = np.ones(m, dtype=np.int64)
    share = k * sizes / N
    for _ in range(k - m):  # one more stratum at a time to the group furthest below its share (with room)
        alloc[int(np.argmax(np.where(alloc < sizes, share - alloc, -np.inf)))] += 1
    out = np.empty(N, dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(alloc)[:-1]])
    order = np.lexsort((np.arange(N), score, groups))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for g in range(m):
        members = order[starts[g]:starts[g] + sizes[g]]
        edges = strata_edges(int(sizes[g]), int(alloc[g]))
        out[members] = first[g] + np.repeat(np.arange(alloc[g]), np.diff(edges))
    return out


def stratified_sample(score: np.ndarray, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Systematic stratified sample: the items sorted by ``score`` cut into ``k`` equal-count strata, one
    item drawn uniformly from each.

    Every item is drawn with probability ``k / N`` up to the rounding of the strata, so the stratum-weighted
    mean is unbiased for every model, whatever its strength; sorting by difficulty spreads the sample over
    easy and hard items alike.

    Parameters
    ----------
    score : ndarray, shape (N,)
        Sort key (ties broken at random).
    k : int
        ``1 <= k <= N``.
    seed : int

    Returns
    -------
    items : ndarray of int64, shape (k,)
        One item per stratum, in stratum order.
    weights : ndarray, shape (k,)
        Each stratum's share of the items (sum 1).
    """
    s = np.asarray(score, dtype=float)
    N = s.size
    edges = strata_edges(N, _check_k(k, N))
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(N), s))
    picks = order[rng.integers(edges[:-1], edges[1:])]
    return picks.astype(np.int64), np.diff(edges) / N


def balanced_stratified_sample(score: np.ndarray | None, k: int, Y_balance: np.ndarray, *,
                               draws: int = BALANCE_DRAWS, seed: int = 0, strata: Any = None
                               ) -> tuple[np.ndarray, np.ndarray, float]:
    """Balanced (rejective) stratified sample: of ``draws`` independent draws of :func:`stratified_sample`'s
    design (or of one item per given stratum), the one whose stratum-weighted mean reproduces every
    balancing row's full mean best.

    The balancing rows are the source models: the chosen sample's weighted mean is closest, in mean squared
    error over the sources, to each source's mean over all items. Choosing among random draws keeps every
    item's chance of selection close to its stratum's ``1 / N_h`` (rejective sampling; with a regression
    estimator on the balanced features, such as :class:`ModelAssisted`, the estimate stays design consistent:
    Fuller 2009, *Some design properties of a rejective sampling procedure*, Biometrika 96(4)), while the
    sample is also representative of the sources, which the estimators that learn from the sources use.

    Parameters
    ----------
    score : ndarray, shape (N,), or None
        Sort key of ``k`` equal-count strata (ties broken at random, afresh in each draw); unused (may be
        None) when ``strata`` is given.
    k : int
        ``1 <= k <= N``.
    Y_balance : ndarray, shape (S, N)
        Balancing rows (the sources' scores).
    draws : int
        Candidate samples, ``>= 1``; 1 is the plain stratified sample (not the same draw as
        :func:`stratified_sample` with the same seed).
    seed : int
    strata : array_like of int, shape (N,), optional
        Given strata: each item's stratum label in ``0 .. k - 1``, every label used (clusters of the
        items, say); one item is drawn uniformly from each, its weight the stratum's share ``N_h / N``.

    Returns
    -------
    items, weights : ndarray, shapes (k,) and (k,)
        One item per stratum, in stratum order, and each stratum's share of the items (sum 1).
    imbalance : float
        Root mean squared difference, over the balancing rows, between the weighted sample mean and the
        full mean.
    """
    labels = None
    if strata is None:
        s = as_array(score, "score", ndim=1, shape_doc="(N,), one sort key per item")
        N = s.size
    else:
        N = np.shape(strata)[0] if np.ndim(strata) == 1 else -1
        labels = check_strata(strata, N)
        s = np.zeros(N)
    k = _check_k(k, N)
    if labels is not None and int(labels.max()) + 1 != k:
        raise InvalidInputError(f"strata: expected k = {k} strata, labels 0 .. {k - 1}, got "
                                f"{int(labels.max()) + 1} strata")
    draws = check_int(draws, "draws", low=1)
    Y = as_array(Y_balance, "Y_balance", ndim=2, shape=(None, N), shape_doc=f"(S, {N}), one column per item")
    return draw_balanced_sample(s, k, Y, draws, seed, strata=labels)


def check_strata(strata: Any, N: int) -> np.ndarray:
    """Given strata checked: integer labels of shape (N,) (``N >= 1``) using every one of ``0 .. max``; returned
    as int64 (their number is ``max + 1``)."""
    a = np.asarray(strata)
    if a.ndim != 1 or a.shape[0] != N or N < 1 or not np.issubdtype(a.dtype, np.integer):
        raise InvalidInputError(f"strata: expected integer stratum labels of shape (N,), one per item, got "
                                f"{describe(strata)}")
    a = a.astype(np.int64)
    used = np.unique(a)
    if used[0] != 0 or used[-1] != used.size - 1:
        raise InvalidInputError(f"strata: expected labels 0 .. (number of strata - 1), every one used, got "
                                f"{used.size} distinct labels in [{int(used[0])}, {int(used[-1])}]")
    return a


def draw_balanced_sample(score: np.ndarray, k: int, Y: np.ndarray, draws: int, seed: int, *,
                         strata: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`balanced_stratified_sample` on checked input, which it trusts: ``score`` of shape (N,), ``k`` an int
    in ``[1, N]``, ``Y`` a finite float array of shape (S, N), ``draws >= 1``, ``strata`` None or int64 labels
    of shape (N,) using every one of ``0 .. k - 1`` (checked by :func:`balanced_stratified_sample`, or once at
    the selection's public boundary). With ``strata`` the strata are those (``score`` unused), else ``k``
    equal-count strata of the items sorted by ``score``."""
    N = Y.shape[1]
    rng = np.random.default_rng(seed)
    if strata is None:
        edges = strata_edges(N, k)
        rank = np.unique(score, return_inverse=True)[1].reshape(-1).astype(float)  # ties share a rank
        fixed = None
    else:
        edges = np.concatenate([[0], np.cumsum(np.bincount(strata, minlength=k))]).astype(np.int64)
        fixed = np.argsort(strata, kind="stable")  # the strata as contiguous blocks; a uniform position is a
        # uniform item of the stratum, so no random order within them is needed
    w = np.diff(edges) / N
    full = Y.mean(axis=1)
    block = max(1, min(draws, _BALANCE_BLOCK // max(1, Y.shape[0] * k), _BALANCE_BLOCK // N))
    best_err, best = math.inf, np.empty(0, dtype=np.int64)
    done = 0
    while done < draws:
        c = min(block, draws - done)
        if fixed is None:
            order = np.argsort(rank[None, :] + 0.5 * rng.random((c, N)), axis=1)  # a random order within ties
            picks = np.take_along_axis(order, rng.integers(edges[:-1], edges[1:], size=(c, k)), axis=1)
        else:
            picks = fixed[rng.integers(edges[:-1], edges[1:], size=(c, k))]
        err = ((Y[:, picks] @ w - full[:, None]) ** 2).mean(axis=0)  # (c,)
        j = int(np.argmin(err))
        if err[j] < best_err:
            best_err, best = float(err[j]), picks[j].astype(np.int64)
        done += c
    return best, w, math.sqrt(best_err)


def _most_likely_sure(w: np.ndarray, theta: float) -> float:
    """The largest ``prod_h p_h`` over ``p`` in [0, 1]^k with ``sum_h w_h p_h = theta`` (``w`` positive, sum 1,
    ``0 <= theta <= 1``): by the KKT conditions ``p_h = min(1, c / w_h)``, with ``c`` filling
    ``sum_h min(w_h, c) = theta``."""
    ws = np.sort(w)
    before = np.concatenate([[0.0], np.cumsum(ws)[:-1]])  # weight of the strata lighter than each
    left = ws.size - np.arange(ws.size)  # strata at least as heavy as each
    # c in [ws[i - 1], ws[i]]: sum min(w_h, c) = before[i] + c * left[i]
    cand = (theta - before) / left
    i = int(np.flatnonzero(cand <= ws + 1e-15)[0])
    c = max(float(cand[i]), 0.0)
    return float(np.prod(np.minimum(1.0, c / w)))


def sure_sample_bound(weights: Any, level: float) -> float:
    """The least mean score at which a model can score 1 on every item of a stratified sample with probability
    ``level``.

    One item is drawn uniformly from each stratum ``h`` of weight ``w_h`` (its share of the items); a model whose
    stratum means are ``p_h`` and whose mean is ``theta = sum_h w_h p_h`` scores 1 on all ``k`` drawn items with
    probability ``prod_h p_h``. Below the returned ``L`` that probability is below ``level`` for every such
    model, so an interval whose low end is at most ``L`` whenever every sampled score is 1 misses a model's
    mean on such a sample with probability below ``level`` (a Clopper-Pearson end; with equal weights
    ``L = level ** (1 / k)``). By symmetry ``1 - L`` bounds a sample of all 0.

    Parameters
    ----------
    weights : array_like, shape (k,)
        Positive stratum weights (normalised here).
    level : float
        In (0, 1).

    Returns
    -------
    float
        ``L`` in (0, 1).
    """
    w = as_array(weights, "weights", ndim=1, shape_doc="(k,)", nonnegative=True)
    if w.size == 0 or not np.all(w > 0):
        raise InvalidInputError(f"weights: expected positive stratum weights, got {describe(weights)}")
    if not 0 < level < 1:
        raise InvalidInputError(f"level: expected 0 < level < 1, got {level!r}")
    w = w / w.sum()
    lo, hi = 0.0, 1.0
    for _ in range(60):  # the largest probability grows with theta: bisect for where it reaches the level
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _most_likely_sure(w, mid) < level else (lo, mid)
    return hi


def difficulty_shares(score: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """Share of the items nearest in ``score`` to each selected item; shape (k,), sums to 1.

    An item at equal distance from two selected values is split between them; items nearest to a value
    several selected items share are split equally among those.

    Parameters
    ----------
    score : ndarray, shape (N,)
    sel : ndarray of int, shape (k,)
    """
    s = np.asarray(score, dtype=float)
    vals = s[sel]
    u, inv, cnt = np.unique(vals, return_inverse=True, return_counts=True)
    pos = np.searchsorted(u, s)
    left = np.clip(pos - 1, 0, u.size - 1)
    right = np.clip(pos, 0, u.size - 1)
    dl = np.abs(s - u[left])
    dr = np.abs(u[right] - s)
    mass = np.zeros(u.size)
    np.add.at(mass, left, np.where(dl < dr, 1.0, np.where(dl == dr, 0.5, 0.0)))
    np.add.at(mass, right, np.where(dr < dl, 1.0, np.where(dl == dr, 0.5, 0.0)))
    return mass[inv] / cnt[inv] / s.size


#: At most this many of the sources' leading item components join the model-assisted features by default.
MAX_COMPONENTS = 5
#: Selected items per item component by default.
ITEMS_PER_COMPONENT = 20
#: Above this many multiply-adds (``N S min(N, S)``) :func:`item_components` sketches instead of an exact
#: eigendecomposition (about a second on this project's 2-core machine).
EXACT_COMPONENTS_WORK = 2e9


def default_components(k: int) -> int:
    """The number of item components the model-assisted estimate uses on ``k`` selected items by default:
    one per :data:`ITEMS_PER_COMPONENT` items, at most :data:`MAX_COMPONENTS` (none below 20 items, where
    every parameter costs a degree of freedom the residual variance needs)."""
    return min(MAX_COMPONENTS, int(k) // ITEMS_PER_COMPONENT)


def item_components(Y_source: np.ndarray, r: int) -> np.ndarray:
    """The items' scores on the leading principal components of the sources' item scores; shape (N, r'),
    ``r' = min(r, rank)`` (the scores may have fewer directions than ``r``; none when every source's scores
    are constant over the items).

    Each item is a point whose coordinates are its scores for the ``S`` sources (centred over the items); the
    components are the directions in which the items differ most from source to source. The default design
    balances its sample on every source's mean, so on these directions too, and a regression on them leaves
    the part of a model's item scores that the balance does not reach.

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
    r : int
        ``>= 0``.
    """
    Z = np.asarray(Y_source, dtype=float).T
    Z = Z - Z.mean(axis=0)
    N, S = Z.shape
    if r == 0 or not np.any(Z):
        return np.zeros((N, 0))
    if N * S * min(N, S) > EXACT_COMPONENTS_WORK:
        return _sketched_components(Z, r)
    small = S <= N  # eigenvectors of the smaller Gram matrix: O(N S^2) or O(S N^2)
    lam, V = np.linalg.eigh(Z.T @ Z if small else Z @ Z.T)
    top = np.argsort(lam)[::-1][:r]
    top = top[lam[top] > 1e-12 * lam.max()]
    return Z @ V[:, top] if small else V[:, top] * np.sqrt(lam[top])


def _sketched_components(Z: np.ndarray, r: int, power: int = 4) -> np.ndarray:
    """The leading ``r`` principal component scores of the centred (N, S) matrix ``Z`` by a randomized range
    finder with ``power`` subspace iterations (Halko, Martinsson and Tropp 2011), from a fixed seed so that a
    fit is reproducible: O(N S (r + 10)) per iteration; shape (N, r') as :func:`item_components`."""
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(Z @ rng.standard_normal((Z.shape[1], min(r + 10, min(Z.shape)))))
    for _ in range(power):
        Q, _ = np.linalg.qr(Z @ (Z.T @ Q))
    Ub, sv, _ = np.linalg.svd(Q.T @ Z, full_matrices=False)
    keep = sv[:r] > 1e-6 * sv[0]
    return (Q @ Ub[:, :r])[:, keep] * sv[:r][keep]


@register_estimator
class ModelAssisted(Estimator):
    """Model-assisted (GREG) estimate: a per-target item model plus its weighted residuals.

    For target ``t`` with scores ``y`` on the selected items ``C`` (weights ``w``, summing to 1), item
    features ``F = [1, x_all, x_top, g_1 .. g_r]`` (:func:`difficulty_features`; the items' scores on the
    ``r = components`` leading principal components of the sources' item scores, :func:`item_components`) and
    ``beta_t = argmin sum_{j in C} w_j (y_j - F_j beta)^2 + ridge |beta_{1:}|^2``, every item is predicted
    ``m_i = clip(F_i beta_t)`` and the estimate is ``mean_i m_i + sum_{j in C} w_j (y_j - m_j)``.

    The interval (:meth:`predict_interval`) is a t-interval from the residuals' spread: variance
    ``(1 - k / N) sum_j w_j^2 s^2`` with ``s^2`` the residual variance plus one pseudo-residual, the
    variance of an item drawn at random (:meth:`_prior_var`), so that it never collapses to zero. Near the
    ends of the score range that is not enough (a model right on 0 of 100 items has residuals near 0, and
    its true score may well be 2 %): ``s^2`` is at least ``rho v(p~)`` (SPEC F11), with ``v(p~)`` the largest
    variance of a score at the target's plus-four coreset mean (:func:`~.base.plus_four`; for 0/1 scores
    ``p~ (1 - p~)``, as in a score-type interval) and ``rho`` the ``floor_quantile`` quantile over the source
    models of their own ``s^2 / v(p~)`` (1 when the sources carry no information).
    """

    name = "model-assisted"
    description = ("per target, item scores fitted to the sources' item means (all and strongest), plus the "
                   "weighted residuals on the selected items (GREG): stays unbiased beyond the sources' range")
    options = (
        Option("weights", None, "any", doc="(k,) design weights of the selected items (default: difficulty shares)"),
        Option("top_share", TOP_SHARE, "float", low=0.0, high=1.0,
               doc="share of the strongest sources whose item means are a feature"),
        Option("ridge", 1e-3, "float", low=0.0, doc="ridge penalty on the feature slopes"),
        Option("components", None, "any",
               doc="the sources' leading item components among the features (None: one per 20 selected items, "
                   "at most 5; 0: the difficulty features only)"),
        Option("clip", True, "bool", doc="clip predicted item scores to the sources' score range"),
        Option("floor_quantile", FLOOR_QUANTILE, "float", low=0.0, high=1.0,
               doc="the variance floor's ratio rho: this quantile over the sources of their residual variance "
                   "over the bounded variance at their coreset mean"),
        Option("sure", True, "bool",
               doc="0/1 scores: a target scoring 1 (0) on every selected item gets a low (high) end at most "
                   "the one-sided Clopper-Pearson end of the stratified sample (sure_sample_bound at alpha)"),
    )

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params["top_share"] > 0:
            raise InvalidInputError(f"top_share: expected 0 < top_share <= 1, got {params['top_share']!r}")
        if params["components"] is not None:
            params["components"] = check_int(params["components"], "components", low=0)
        w = params["weights"]
        if w is not None:
            w = as_array(w, "weights", ndim=1, shape_doc="(k,)", nonnegative=True)
            if not w.sum() > 0:
                raise InvalidInputError("weights: expected at least one positive weight, got all zeros")
            params["weights"] = w / w.sum()
        return params

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        feats = difficulty_features(Y, self.params["top_share"])
        w = self.params["weights"]
        if w is None:
            w = difficulty_shares(difficulty_score(feats), sel)
        elif w.size != sel.size:
            raise InvalidInputError(f"weights: expected shape ({sel.size},), one weight per selected item, got "
                                    f"shape {w.shape}")
        self.weights_ = np.asarray(w, dtype=float)
        r = self.params["components"]
        #: the leading item components among the features (none when the sources carry no information)
        self.components_ = 0 if self.uninformative_ else (default_components(sel.size) if r is None else r)
        self.F_ = np.column_stack([np.ones(feats.shape[0]), feats, item_components(Y, self.components_)])
        p = self.F_.shape[1]
        Xs = self.F_[sel]
        W = self.weights_ * sel.size
        pen = self.params["ridge"] * np.diag([0.0] + [1.0] * (p - 1))
        A = Xs.T @ (Xs * W[:, None]) + pen + 1e-12 * np.eye(p)
        self.P_ = np.linalg.solve(A, Xs.T * W[None, :])  # (p, k): beta_t = P_ @ y_t
        self.floor_ratio_ = 1.0  # no information in the sources: the bounded variance itself
        bounds = self._bounds()
        if bounds is None:
            self.floor_ratio_ = 0.0
        elif not self.uninformative_:
            Ysel = Y[:, sel]
            v = bounded_variance(plus_four(Ysel @ self.weights_, sel.size, *bounds), *bounds)
            # a source whose coreset scores are all alike has (almost) no residuals whatever its true score:
            # its ratio says nothing about the residual spread, so only sources with varied scores count
            ok = (v > 0) & (np.ptp(Ysel, axis=1) > 0)
            ratio = self._residual_s2(Ysel)[1][ok] / v[ok]
            if ratio.size:
                self.floor_ratio_ = float(np.quantile(ratio, self.params["floor_quantile"]))

    def _parts(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        B = Yt @ self.P_.T  # (T, p)
        M = B @ self.F_.T  # (T, N)
        if self.params["clip"]:
            M = self._clip(M)
        E = Yt - M[:, self.selection_]
        est = M.mean(axis=1) + E @ self.weights_
        return est, M, E

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return self._clip(self._parts(Yt)[0])

    def _residual_s2(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """(unclipped estimate, residual variance with its pseudo-residual, degrees of freedom) of targets ``Yt``
        (T, k): shapes (T,), (T,), scalar."""
        est, _, E = self._parts(Yt)
        k = self.selection_.size
        dof = max(k - self.F_.shape[1], 0) + 1
        Ec = E - E.mean(axis=1, keepdims=True) if k > 1 else E
        ss = (Ec * Ec).sum(axis=1)
        return est, (ss + self._prior_var(Yt)) / dof, dof

    def estimate_se(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """(unclipped estimate, standard error, degrees of freedom) of targets ``Yt`` (T, k) on the selection:
        shapes (T,), (T,), scalar. The residual variance is at least the floor of the class docstring."""
        est, s2, dof = self._residual_s2(Yt)
        k, N = self.selection_.size, self.n_items_
        bounds = self._bounds()
        if bounds is not None and self.floor_ratio_ > 0:
            s2 = np.maximum(s2, self.floor_ratio_ * bounded_variance(plus_four(Yt @ self.weights_, k, *bounds),
                                                                     *bounds))
        var = max(0.0, 1.0 - k / N) * float(self.weights_ @ self.weights_) * s2
        return est, np.sqrt(var), dof

    def _prior_var(self, Yt: np.ndarray) -> np.ndarray:
        """One pseudo-residual's square per target, shape (T,): the variance of one item drawn at random
        (for 0/1 scores ``p (1 - p)`` at the add-one smoothed coreset mean, never 0), so that a coreset the
        model happens to fit exactly does not give a zero-width interval."""
        w = self.weights_
        if self.binary_sources_:
            k = Yt.shape[1]
            p = (Yt @ w * k + 1.0) / (k + 2.0)
            return p * (1.0 - p)
        mu = Yt @ w
        return ((Yt - mu[:, None]) ** 2) @ w

    def _interval(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        est, lo, hi = self.t_interval(*self.estimate_se(Yt), alpha)
        return (est, *self.sure_limits(Yt, alpha, lo, hi))

    def sure_limits(self, Yt: np.ndarray, alpha: float, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Interval ends ``lo``, ``hi`` (T,) of targets ``Yt`` (T, k), widened where a target scored 1 (0) on every
        selected item of 0/1 sources (option ``sure``): its low (high) end reaches at most
        ``L = sure_sample_bound(weights, alpha)`` (at least ``1 - L``).

        A model whose mean is below ``L`` scores 1 on every item of the stratified sample with probability below
        ``alpha``; the high end of such a sample is the end of the range and cannot miss, so the whole
        ``alpha`` goes to the low end (the one-sided Clopper-Pearson end, ``alpha ** (1 / k)`` with equal
        weights, close to Wilson's ``k / (k + z^2)``). Without it, a standard error estimated from ``k`` alike
        scores is the floor's, too small for the models just below the end: on GLUE MRPC with 9 items, the
        strong models of a sample they all solve were covered 31 % of the time."""
        if not (self.params["sure"] and self.binary_sources_) or Yt.shape[1] == 0:
            return lo, hi
        w = self.weights_[self.weights_ > 0]  # an item of weight 0 can be solved at no cost to the mean
        L = sure_sample_bound(w, alpha)
        top, bottom = np.all(Yt == 1.0, axis=1), np.all(Yt == 0.0, axis=1)
        return np.where(top, np.minimum(lo, L), lo), np.where(bottom, np.maximum(hi, 1.0 - L), hi)

    def _design_se(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        est, se, dof = self.estimate_se(Yt)
        return self._clip(est), se, np.full(se.shape, float(dof))

    def _spread(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        est, se, dof = self._design_se(Yt)
        return est, se, se, dof

    def t_interval(self, est: np.ndarray, se: np.ndarray, dof: int, alpha: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(clipped estimate, low, high) of the t-interval ``est -/+ t_{1 - alpha/2, dof} se``; each shape (T,)."""
        from scipy.stats import t as student

        half = float(student.ppf(1 - alpha / 2, dof)) * se
        return self._clip(est), est - half, est + half
