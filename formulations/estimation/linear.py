"""Linear estimators: ridge on the coreset scores (exact leave-one-out penalty), RepCore's per-target
extrapolator, and the stacked combination of members."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option

from .base import Estimator, get_estimator, register_estimator

__all__ = ["RIDGE_ALPHAS", "RepCoreRidge", "Ridge", "Stacked", "ridge_loo", "simplex_weights"]

#: Default penalty grid of :class:`Ridge` (scores on a 0..1 scale).
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 4, 29))


def ridge_loo(X: np.ndarray, y: np.ndarray, alphas: Any) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Ridge regression with an unpenalised intercept, penalty chosen by exact leave-one-out.

    For a penalised least-squares fit the leave-one-out residual is
    ``e_i / (1 - h_ii)``, with ``H = 11^T/n + Xc (Xc^T Xc + alpha I)^-1 Xc^T``;
    all penalties are scored from one SVD of the centred design.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    alphas : sequence of float, shape (A,)
        Positive penalties.

    Returns
    -------
    coef : ndarray, shape (p,)
    intercept : float
    alpha : float
        The penalty of smallest leave-one-out mean squared error (the largest
        such penalty on ties).
    loo_mse : ndarray, shape (A,)
    """
    a = np.asarray(alphas, dtype=float)
    n = X.shape[0]
    xm = X.mean(axis=0)
    ym = float(y.mean())
    Xc = X - xm
    yc = y - ym
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    s2 = s * s
    Uy = U.T @ yc  # (r,)
    f = s2[None, :] / (s2[None, :] + a[:, None])  # (A, r) shrinkage factors
    fit = (f * Uy[None, :]) @ U.T  # (A, n) fitted centred values
    h = 1.0 / n + f @ (U * U).T  # (A, n) leverages
    loo = (yc[None, :] - fit) / np.maximum(1.0 - h, 1e-12)
    mse = np.mean(loo * loo, axis=1)
    best = np.flatnonzero(mse <= mse.min() * (1 + 1e-12) + 1e-300)
    j = int(best[np.argmax(a[best])])
    coef = Vt.T @ (s / (s2 + a[j]) * Uy)
    return coef, ym - float(xm @ coef), float(a[j]), mse


@register_estimator
class Ridge(Estimator):
    """A ridge regression across the sources: full score ~ coreset scores.

    Fitted on the ``S`` source models (``X = Y_source[:, C]``,
    ``y = mean_i Y_source[:, i]``), penalty by exact leave-one-out over
    ``alphas``. With ``target="unseen"`` the regression predicts the mean of
    the items outside the coreset and the estimate is
    ``(sum_C y_t + (N - k) * prediction) / N``: the observed part is kept
    exactly. Predictions are clipped to the sources' score range.
    """

    name = "ridge"
    description = "ridge regression of the full score on the coreset scores across sources (leave-one-out penalty)"
    options = (
        Option("alphas", RIDGE_ALPHAS, "any", doc="penalty grid searched by leave-one-out"),
        Option("target", "full", "choice", choices=("full", "unseen"),
               doc="regress the full mean ('full') or the mean of the unselected items ('unseen')"),
        Option("clip", True, "bool", doc="clip estimates to the sources' score range"),
    )

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            a = np.atleast_1d(np.asarray(params["alphas"], dtype=float))
        except (TypeError, ValueError):
            a = np.array([np.nan])
        if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise InvalidInputError(f"alphas: expected a non-empty 1-D sequence of positive penalties, got "
                                    f"{params['alphas']!r}")
        params["alphas"] = tuple(float(v) for v in a)
        return params

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        X = Y[:, sel]
        if self.params["target"] == "full":
            y = Y.mean(axis=1)
        else:
            mask = np.ones(Y.shape[1], bool)
            mask[sel] = False
            y = Y[:, mask].mean(axis=1) if mask.any() else Y.mean(axis=1)
        self.coef_, self.intercept_, self.alpha_, self.loo_mse_ = ridge_loo(X, y, self.params["alphas"])

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        p = Yt @ self.coef_ + self.intercept_
        if self.params["clip"]:
            p = self._clip(p)
        if self.params["target"] == "unseen":
            N, k = self.n_items_, self.selection_.size
            p = (Yt.sum(axis=1) + (N - k) * p) / N
        return p


@register_estimator
class RepCoreRidge(Estimator):
    """RepCore's extrapolator (paper section 2.4).

    ``x_i = mean_s Y_source[s, i]`` (each item's source-mean score). Per
    target ``t``, ``g_t(x) = a_t + b_t x`` minimises
    ``sum_{i in C} (g_t(x_i) - y_t[i])^2 + alpha b_t^2``; the estimate is
    ``(sum_{i in C} y_t[i] + sum_{i not in C} g_t(x_i)) / N`` with each
    ``g_t(x_i)`` clipped to the sources' score range.

    Items every source scored the same lowest (or highest) score, e.g. items no source solves, carry
    no information about a stronger target, and the line's value there is an extrapolation (it
    overestimated weak-source benchmarks such as Open LLM v2 MATH by 13-16 points). With
    ``pool_constant=True`` (default) such an unseen item is predicted by the target's mean on the
    selected items of the same group, with the line's value as one pseudo-observation.
    """

    name = "repcore-ridge"
    description = "RepCore: per target, a ridge of its coreset scores on the items' source-mean score"
    options = (
        Option("alpha", 1.0, "float", low=0.0, doc="ridge penalty on the slope (scikit-learn Ridge's default 1)"),
        Option("clip", True, "bool", doc="clip each predicted item score to the sources' score range"),
        Option("pool_constant", True, "bool",
               doc="predict items every source scored at the minimum (maximum) from the target's selected "
                   "items of the same group"),
    )

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        x = Y.mean(axis=0)
        self.x_ = x
        mask = np.ones(x.size, bool)
        mask[sel] = False
        self.x_unseen_ = x[mask]
        lo, hi = float(Y.min()), float(Y.max())
        groups = np.zeros(x.size, dtype=np.int8)  # 0: informative, 1: all at the minimum, 2: all at the maximum
        if self.params["pool_constant"] and hi > lo:
            groups[(Y == lo).all(axis=0)] = 1
            groups[(Y == hi).all(axis=0)] = 2
        self.groups_sel_ = groups[sel]
        self.groups_unseen_ = groups[mask]
        xc = x[sel]
        self._xm = float(xc.mean())
        self._dx = xc - self._xm
        self._sxx = float(self._dx @ self._dx)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        ym = Yt.mean(axis=1)
        denom = self._sxx + self.params["alpha"]
        slope = (Yt - ym[:, None]) @ self._dx / denom if denom > 0 else np.zeros(Yt.shape[0])
        icpt = ym - slope * self._xm
        self.slope_, self.intercept_ = slope, icpt
        g = icpt[:, None] + slope[:, None] * self.x_unseen_[None, :]  # (T, N - k)
        if self.params["clip"]:
            g = self._clip(g)
        for grp in (1, 2):
            in_sel = self.groups_sel_ == grp
            unseen = self.groups_unseen_ == grp
            if in_sel.any() and unseen.any():
                line = g[:, unseen].mean(axis=1)
                pooled = (Yt[:, in_sel].sum(axis=1) + line) / (in_sel.sum() + 1.0)
                g[:, unseen] = pooled[:, None]
        return (Yt.sum(axis=1) + g.sum(axis=1)) / self.n_items_


# ------------------------------------------------------------------ BayesAME baselines


def _member_specs(members: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    out: list[tuple[str, dict[str, Any]]] = []
    for m in members:
        if isinstance(m, str):
            out.append((m, {}))
        elif isinstance(m, (tuple, list)) and len(m) == 2 and isinstance(m[0], str) and isinstance(m[1], dict):
            out.append((m[0], dict(m[1])))
        else:
            raise InvalidInputError(f"members: expected estimator names or (name, params) pairs, got {m!r}")
    if not out:
        raise InvalidInputError("members: expected at least one member estimator, got none")
    return tuple(out)


def simplex_weights(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative weights summing to 1 minimising ``|P w - y|^2``; shape (m,).

    Parameters
    ----------
    P : ndarray, shape (n, m)
        Each column one member's predictions.
    y : ndarray, shape (n,)
    """
    from scipy.optimize import nnls

    m = P.shape[1]
    big = 1e3 * max(1.0, float(np.abs(P).max()))
    w, _ = nnls(np.vstack([P, np.full((1, m), big)]), np.concatenate([y, [big]]))
    s = w.sum()
    return w / s if s > 0 else np.full(m, 1.0 / m)


@register_estimator
class Stacked(Estimator):
    """A convex combination of member estimators, weights fitted on held-out source models.

    The sources are split into ``folds`` groups; each member is fitted on all
    groups but one and predicts the held-out group's full scores from their
    coreset scores. The weights (non-negative, summing to 1) minimise the
    squared error of these out-of-fold predictions; every member is then
    refitted on all sources. With one member this is that member.

    ``cv="upward"`` mimics extrapolation to models stronger than every
    source: the sources are ranked by full score and cut into ``folds``
    contiguous groups, and group ``g >= 1`` is predicted by members fitted on
    groups ``0..g-1`` only (the weakest group is never predicted).
    """

    name = "stacked"
    description = "convex combination of member estimators, weights from out-of-fold predictions on the sources"
    options = (
        Option("members", (("ridge", {}), ("irt", {"variant": "p-irt"}), ("cluster-weighted", {})), "any",
               doc="member estimators: names or (name, params) pairs"),
        Option("folds", 5, "int", low=2, doc="cross-fitting folds over the source models"),
        Option("cv", "random", "choice", choices=("random", "upward"),
               doc="'random' folds, or 'upward': folds by full score, each predicted from the weaker folds only"),
        Option("seed", 0, "int", low=0, doc="seeds the fold assignment"),
    )
    min_sources = 4

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        params["members"] = _member_specs(params["members"])
        prototypes = []
        for n, p in params["members"]:
            if n == self.name:
                raise InvalidInputError("members: a stacked estimator cannot contain 'stacked'")
            prototypes.append(get_estimator(n, **p))  # names and options checked now, once
        #: unfitted members, their options checked: every fold's fit and the final fit copy them
        self._prototypes = tuple(prototypes)
        return params

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        specs = self.params["members"]
        S = Y.shape[0]
        folds = min(self.params["folds"], S // 2)
        truth = Y.mean(axis=1)
        if self.params["cv"] == "random":
            rng = np.random.default_rng(self.params["seed"])
            fold = rng.permutation(np.arange(S) % folds)
            plan = [(fold != f, fold == f) for f in range(folds)]
        else:  # upward: contiguous groups by full score, each predicted from the weaker ones
            fold = np.empty(S, dtype=np.int64)
            fold[np.argsort(truth, kind="stable")] = np.arange(S) * folds // S
            plan = [(fold < f, fold == f) for f in range(1, folds)]
        N = self.n_items_
        P = np.full((S, len(specs)), np.nan)
        for tr, va in plan:  # the members fit on parts of the checked sources: nothing is checked again
            for j, proto in enumerate(self._prototypes):
                P[va, j] = proto._unfitted()._fit_checked(Y[tr], sel, N)._predict(Y[va][:, sel])
        done = ~np.isnan(P[:, 0])
        self.weights_ = simplex_weights(P[done], truth[done])
        self.oof_mae_ = np.abs(P[done] - truth[done, None]).mean(axis=0)
        self.oof_residuals_ = P[done] @ self.weights_ - truth[done]
        #: the sources (row indices, shape (S',)) the out-of-fold residuals belong to, in their order
        self.oof_sources_ = np.flatnonzero(done)
        self.members_ = [proto._unfitted()._fit_checked(Y, sel, N) for proto in self._prototypes]

    def _check_targets(self, Yt: np.ndarray) -> None:
        for m in self.members_:
            m._check_targets(Yt)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return np.column_stack([np.asarray(m._predict(Yt), dtype=float) for m in self.members_]) @ self.weights_

    def _conformal_residuals(self) -> np.ndarray:
        """The combination's errors on the held-out sources of its own cross-fitting (no refit); shape (S',)."""
        return np.abs(self.oof_residuals_)
