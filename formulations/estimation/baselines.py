"""BayesAME's baselines with intervals: the sample mean (finite-population interval), AIPW with a Bayesian
ridge or a ridge of the target's item scores on the sources', and Bayes-RS-Learn (a Bayesian ridge across
the sources of their full score on their coreset scores)."""
from __future__ import annotations

import numpy as np

from benchsel.formulations.core.options import Option

from .base import (
    Estimator,
    register_estimator,
)

__all__ = ["AIPW", "BayesAIPW", "BayesRSLearn", "RSMean", "bayesian_ridge_batch"]


class _IntervalMixin:
    """Estimators whose interval is normal from their own variance: ``predict_interval(Y, alpha)``
    gives ``estimate -/+ z_{1 - alpha/2} sqrt(var)``."""

    def _interval(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from scipy.stats import norm

        est, var = self._predict_var(Yt)  # type: ignore[attr-defined]
        half = float(norm.ppf(1 - alpha / 2)) * np.sqrt(np.maximum(var, 0.0))
        return est, est - half, est + half

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return np.asarray(self._predict_var(Yt)[0])  # type: ignore[attr-defined]


@register_estimator
class RSMean(_IntervalMixin, Estimator):
    """BayesAME's RS-Mean: the coreset mean, with the finite-population variance
    ``Var_R = s^2 / k * (N - k) / N`` (``s`` the target's sample standard
    deviation on the coreset) for :meth:`predict_interval`. Meant for a random
    coreset; needs no sources."""

    name = "rs-mean"
    description = "BayesAME's RS-Mean: coreset mean with a finite-population 95 % interval"
    needs_sources = False
    min_sources = 1

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        pass

    def _predict_var(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, N = Yt.shape[1], self.n_items_
        est = Yt.mean(axis=1)
        if k < 2:
            return est, np.full(est.shape, np.inf)
        return est, Yt.var(axis=1, ddof=1) / k * (N - k) / N

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1)


def bayesian_ridge_batch(X: np.ndarray, Y: np.ndarray, *, max_iter: int = 300, tol: float = 1e-3,
                         a1: float = 1e-6, a2: float = 1e-6, l1: float = 1e-6, l2: float = 1e-6
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bayesian ridge regressions (MacKay evidence updates) of several responses on one design.

    The model of each column ``t`` of ``Y``: ``y = X w + b + e``,
    ``w ~ N(0, I / lambda_t)``, ``e ~ N(0, 1 / alpha_t)``, Gamma(1e-6, 1e-6)
    hyper-priors and an unpenalised intercept (scikit-learn's
    ``BayesianRidge`` updates and defaults). The design is shared, so one
    eigendecomposition serves every response.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    Y : ndarray, shape (n, T)

    Returns
    -------
    coef : ndarray, shape (T, p)
    intercept : ndarray, shape (T,)
    alpha, lam : ndarray, shape (T,)
    evals : ndarray, shape (p,)
        Eigenvalues of ``Xc^T Xc``.
    Q : ndarray, shape (p, p)
        Its eigenvectors (posterior covariance of ``w_t`` is
        ``Q diag(1 / (alpha_t evals + lam_t)) Q^T``).
    """
    n = X.shape[0]
    xm = X.mean(axis=0)
    ym = Y.mean(axis=0)
    Xc = X - xm
    Yc = Y - ym
    ev, Q = np.linalg.eigh(Xc.T @ Xc)
    ev = np.clip(ev, 0.0, None)
    qy = Q.T @ (Xc.T @ Yc)  # (p, T)
    yty = np.einsum("nt,nt->t", Yc, Yc)
    alpha = 1.0 / (yty / n + np.finfo(float).eps)
    lam = np.ones(Y.shape[1])
    active = np.ones(Y.shape[1], bool)
    coef_q = np.zeros_like(qy)
    for it in range(max_iter):
        coef_q_new = qy / (ev[:, None] + lam / alpha)
        rmse = np.maximum(yty - 2.0 * np.einsum("pt,pt->t", coef_q_new, qy) + np.einsum("pt,p,pt->t", coef_q_new, ev,
                                                                                         coef_q_new), 0.0)
        gamma = np.sum(alpha[None, :] * ev[:, None] / (lam[None, :] + alpha[None, :] * ev[:, None]), axis=0)
        wsq = np.einsum("pt,pt->t", coef_q_new, coef_q_new)
        lam_new = (gamma + 2 * l1) / (wsq + 2 * l2)
        alpha_new = (n - gamma + 2 * a1) / (rmse + 2 * a2)
        # no previous iterate at the first step: it never counts as converged
        change = np.sum(np.abs(Q @ (coef_q_new - coef_q)), axis=0) if it else np.full(Y.shape[1], np.inf)
        lam = np.where(active, lam_new, lam)
        alpha = np.where(active, alpha_new, alpha)
        coef_q = np.where(active[None, :], coef_q_new, coef_q)
        active &= ~(change < tol)
        if not active.any():
            break
    coef_q = qy / (ev[:, None] + lam / alpha)
    coef = (Q @ coef_q).T
    return coef, ym - coef @ xm, alpha, lam, ev, Q


class _AIPWDesign:
    """``fit`` of the AIPW estimators: the sources' score vectors of the coreset items ``phi_C`` and the
    mean vectors over the coreset (``_mC``) and the other items (``_mU``)."""

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        Phi = Y.T  # (N, S)
        self._phi_C = Phi[sel]
        self._mC = self._phi_C.mean(axis=0)
        N, k = Phi.shape[0], sel.size
        self._mU = (Phi.sum(axis=0) - self._phi_C.sum(axis=0)) / (N - k) if N > k else self._mC


@register_estimator
class BayesAIPW(_AIPWDesign, _IntervalMixin, Estimator):
    """BayesAME's Bayes-AIPW, for a coreset drawn at random.

    Per target, a Bayesian ridge regression of its scores on the coreset on the
    items' source score vectors ``phi_i = Y_source[:, i]`` gives
    ``mu_i = phi_i^T w + b`` for every item; the AIPW estimate is
    ``mean_C y + (mean_U mu - mean_C mu) / (1 + k / (N - k))`` and its
    variance ``[d^T Sigma_w d + (1/alpha)(1/k + 1/(N - k))] / (1 + k/(N - k))^2``
    with ``d = mean_U phi - mean_C phi``.
    """

    name = "bayes-aipw"
    description = "BayesAME's Bayes-AIPW: Bayesian ridge on the sources' item scores, AIPW estimate"

    def _predict_var(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        N, k = self.n_items_, self.selection_.size
        mean_c = Yt.mean(axis=1)
        if k >= N:
            return mean_c, np.zeros_like(mean_c)
        coef, _, alpha, lam, ev, Q = bayesian_ridge_batch(self._phi_C, Yt.T)
        d = self._mU - self._mC
        f = 1.0 + k / (N - k)
        est = mean_c + (coef @ d) / f
        dq = Q.T @ d
        var_w = np.sum(dq[None, :] ** 2 / (alpha[:, None] * ev[None, :] + lam[:, None]), axis=1)
        var = (var_w + (1.0 / alpha) * (1.0 / k + 1.0 / (N - k))) / f ** 2
        return est, var


@register_estimator
class AIPW(_AIPWDesign, _IntervalMixin, Estimator):
    """benchmark-prediction's AIPW, for a coreset drawn at random.

    Per target, a ridge regression (penalty ``ridge_alpha``, default 10, unpenalised intercept) of its
    coreset scores on the items' source score vectors ``phi_i`` gives ``mu_i`` for every item; the estimate
    is ``mean_C y + (mean_U mu - mean_C mu) / (1 + k / (N - k))``. The interval uses the difference
    estimator's design variance ``s_e^2 / k * (N - k) / N`` (``s_e``: the residuals' standard deviation on
    the coreset; our choice, the paper defines none).
    """

    name = "aipw"
    description = "AIPW (benchmark-prediction): ridge (alpha 10) of item scores on the sources' item scores"
    options = (Option("ridge_alpha", 10.0, "float", low=0.0, low_open=True, doc="ridge penalty"),)

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        super()._fit(Y, sel)
        self._Xc = self._phi_C - self._mC  # (k, S)
        A = self._Xc.T @ self._Xc + self.params["ridge_alpha"] * np.eye(self._Xc.shape[1])
        self._P = np.linalg.solve(A, self._Xc.T)  # (S, k): a target's ridge coefficients are P @ (y - mean y)

    def _predict_var(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        N, k = self.n_items_, self.selection_.size
        mean_c = Yt.mean(axis=1)
        if k >= N:
            return mean_c, np.zeros_like(mean_c)
        coef = (Yt - mean_c[:, None]) @ self._P.T  # (T, S)
        est = mean_c + (coef @ (self._mU - self._mC)) / (1.0 + k / (N - k))
        if k < 2:
            return est, np.full(est.shape, np.inf)
        resid = (Yt - mean_c[:, None]) - coef @ self._Xc.T
        return est, resid.var(axis=1, ddof=1) / k * (N - k) / N


@register_estimator
class BayesRSLearn(_IntervalMixin, Estimator):
    """BayesAME's Bayes-RS-Learn: a Bayesian ridge regression (scikit-learn's ``BayesianRidge`` defaults)
    across the sources of their full score on their coreset scores; a target's estimate is the posterior
    predictive mean at its coreset scores ``x``, and the interval's variance
    ``(x - xm)^T Sigma_beta (x - xm) + 1/alpha`` (``xm`` the sources' mean coreset scores)."""

    name = "bayes-rs-learn"
    description = "BayesAME's Bayes-RS-Learn: Bayesian ridge of the full score on the coreset scores, across sources"

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        X = Y[:, sel]
        coef, b, alpha, lam, ev, Q = bayesian_ridge_batch(X, Y.mean(axis=1)[:, None])
        self._coef, self._b = coef[0], float(b[0])
        self._alpha, self._lam = float(alpha[0]), float(lam[0])
        self._ev, self._Q, self._xm = ev, Q, X.mean(axis=0)

    def _predict_var(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = Yt @ self._coef + self._b
        xq = (Yt - self._xm) @ self._Q  # (T, k)
        var = np.sum(xq ** 2 / (self._alpha * self._ev + self._lam), axis=1) + 1.0 / self._alpha
        return est, var
