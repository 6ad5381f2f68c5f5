"""Item response theory for benchmark compression (tinyBenchmarks, Maia Polo et al. 2024), numpy/scipy only.

A ``d``-dimensional two-parameter logistic (2PL) model

``P(y[m, i] = 1) = sigmoid(theta_m . a_i - b_i)``

is fitted on the source models by regularised maximum likelihood (a Gaussian
prior on every parameter; L-BFGS with the analytic gradient). A target's
ability ``theta_t`` is then its maximum a posteriori estimate from its scores
on the coreset, the item parameters fixed (batched Newton steps; a weak prior
keeps an all-correct coreset finite). Scores in ``[0, 1]`` that are not binary
use the same likelihood as a Bernoulli with a fractional outcome.

Estimators (``get_estimator("irt", variant=...)``):

* ``"irt"``: ``mean_i P_i(theta_t)`` over all items;
* ``"p-irt"``: ``lam * mean_C y_t + (1 - lam) * mean_{i not in C} P_i(theta_t)``,
  ``lam = k / N`` (observed items count as themselves);
* ``"gp-irt"`` (default): ``lam* * cluster-weighted + (1 - lam*) * p-IRT``, with
  ``lam*`` chosen on held-out source models (the IRT model refitted without
  them) to minimise their mean absolute error.
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.validation import check_float, check_int, check_rng
from benchsel.formulations.item_distances import selection_distances

from .base import Estimator, check_scores, register_estimator, single_thread
from .weighted import _item_features, cluster_shares

__all__ = ["IRTEstimator", "IRTModel", "fit_irt", "irt_objective"]


@dataclass(frozen=True, eq=False)
class IRTModel:
    """A fitted multidimensional 2PL model.

    Attributes
    ----------
    A : ndarray, shape (N, d)
        Item discriminations ``a_i``.
    b : ndarray, shape (N,)
        Item difficulties ``b_i``.
    theta : ndarray, shape (S, d)
        The fitted models' abilities.
    info : dict
        ``seconds``, ``nit``, ``loss`` (penalised negative log-likelihood per
        score), ``converged``, ``message``.
    """

    A: np.ndarray
    b: np.ndarray
    theta: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.A.shape[1])

    @property
    def n_items(self) -> int:
        return int(self.A.shape[0])

    def prob(self, theta: np.ndarray, items: np.ndarray | None = None) -> np.ndarray:
        """``P_i(theta)`` for each ability row and item, shape (T, n_items or len(items))."""
        A = self.A if items is None else self.A[items]
        b = self.b if items is None else self.b[items]
        return expit(np.asarray(theta, dtype=float) @ A.T - b)

    def item_embedding(self) -> np.ndarray:
        """``(a_i, b_i)`` per item, shape (N, d + 1): tinyBenchmarks' item representation."""
        return np.hstack([self.A, self.b[:, None]])

    def abilities(self, Y: np.ndarray, items: np.ndarray, *, prior_sd: float = 3.0, max_iter: int = 100,
                  tol: float = 1e-8) -> np.ndarray:
        """Maximum a posteriori abilities from scores on ``items``, item parameters fixed.

        Parameters
        ----------
        Y : ndarray, shape (T, k)
            Scores in [0, 1] of ``T`` models on ``items``.
        items : ndarray of int, shape (k,)
        prior_sd : float
            Standard deviation of the ``N(0, prior_sd^2 I)`` prior on ``theta``.

        Returns
        -------
        ndarray, shape (T, d)
        """
        A = self.A[items]
        b = self.b[items]
        T, d = Y.shape[0], self.dim
        prec = 1.0 / prior_sd ** 2
        th = np.zeros((T, d))
        eye = np.eye(d)
        for _ in range(max_iter):
            P = expit(th @ A.T - b)
            g = (Y - P) @ A - prec * th
            W = P * (1.0 - P)
            H = np.einsum("tk,ki,kj->tij", W, A, A) + prec * eye
            step = np.linalg.solve(H, g[..., None])[..., 0]
            nrm = np.linalg.norm(step, axis=1)
            step *= np.minimum(1.0, 2.0 / np.maximum(nrm, 1e-300))[:, None]  # damped Newton
            th += step
            if nrm.max() < tol:
                break
        return th


_CACHE: OrderedDict[tuple, IRTModel] = OrderedDict()
_CACHE_SIZE = 16


def _check_unit(Y: np.ndarray, name: str) -> None:
    lo, hi = float(Y.min()), float(Y.max())
    if lo < 0.0 or hi > 1.0:
        raise InvalidInputError(f"{name}: the IRT model takes binary or fractional scores in [0, 1], got scores in "
                                f"[{lo:g}, {hi:g}]; rescale them first")


def irt_objective(x: np.ndarray, Y: np.ndarray, d: int, prior_sd_theta: float, prior_sd_item: float
                  ) -> tuple[float, np.ndarray]:
    """Penalised negative log-likelihood of the 2PL model per score, and its gradient.

    Parameters
    ----------
    x : ndarray, shape (S*d + N*d + N,)
        ``theta`` (S, d), ``A`` (N, d) and ``b`` (N,), flattened in that order.
    Y : ndarray, shape (S, N)
        Scores in [0, 1].
    d : int
    prior_sd_theta, prior_sd_item : float
    """
    S, N = Y.shape
    n_th, n_a = S * d, N * d
    th = x[:n_th].reshape(S, d)
    A = x[n_th:n_th + n_a].reshape(N, d)
    b = x[n_th + n_a:]
    pt, pa = 1.0 / prior_sd_theta ** 2, 1.0 / prior_sd_item ** 2
    Z = th @ A.T
    Z -= b
    P = expit(Z)
    # softplus(z) = log(1 + e^z) = max(z, 0) - log(max(P, 1 - P)), P = sigmoid(z) (no overflow, one log)
    loss = float(np.sum(np.maximum(Z, 0.0)) - np.sum(np.log(np.maximum(P, 1.0 - P))) - np.vdot(Y, Z))
    loss += 0.5 * (pt * float(np.sum(th * th)) + pa * (float(np.sum(A * A)) + float(b @ b)))
    R = P - Y
    g = np.concatenate([(R @ A + pt * th).ravel(), (R.T @ th + pa * A).ravel(), -R.sum(axis=0) + pa * b])
    scale = 1.0 / (S * N)
    return loss * scale, g * scale


def fit_irt(Y: Any, dim: int = 1, *, prior_sd_theta: float = 1.0, prior_sd_item: float = 2.0, max_iter: int = 2000,
            seed: int = 0, cache: bool = True) -> IRTModel:
    """Fit a ``dim``-dimensional 2PL model to a models x items score matrix.

    Minimises ``sum_{m,i} [log(1 + e^z) - y z]`` with ``z = theta_m . a_i - b_i``,
    plus ``|theta|^2 / (2 prior_sd_theta^2)`` and
    ``(|a|^2 + b^2) / (2 prior_sd_item^2)``, by L-BFGS-B.

    Parameters
    ----------
    Y : array_like, shape (S, N)
        Scores in [0, 1] of ``S >= 2`` models (rows) on ``N`` items (columns).
    dim : int
        Latent dimension ``d >= 1``.
    prior_sd_theta, prior_sd_item : float
        Prior standard deviations of the abilities and of the item parameters.
    max_iter : int
        L-BFGS iteration cap.
    seed : int
        Seeds the small random start of dimensions 2..d.
    cache : bool
        Reuse a fit of the same data and settings from this process (the last 16 fits are kept).

    Returns
    -------
    IRTModel
    """
    Yv = check_scores(Y, "Y", ndim=(2,), axes=("model", "item"), shape_doc="(models, items)")
    _check_unit(Yv, "Y")
    if Yv.shape[0] < 2:
        raise InvalidInputError(f"Y: expected at least 2 models (rows; columns are items), got shape {Yv.shape}")
    return _fit_irt(Yv, check_int(dim, "dim", low=1),
                    check_float(prior_sd_theta, "prior_sd_theta", low=0.0, low_open=True),
                    check_float(prior_sd_item, "prior_sd_item", low=0.0, low_open=True),
                    check_int(max_iter, "max_iter", low=1), seed, cache)


def _fit_irt(Yv: np.ndarray, d: int, st: float, si: float, max_iter: int, seed: int, cache: bool = True) -> IRTModel:
    """:func:`fit_irt` on arguments it checked (or an estimator's checked options and sources)."""
    S, N = Yv.shape
    # the seed only moves the start of dimensions 2..d: a 1-D fit does not depend on it
    key = (hashlib.sha1(np.ascontiguousarray(Yv).tobytes()).hexdigest(), Yv.shape, d, st, si, max_iter,
           int(seed) if d > 1 else 0)
    if cache and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    t0 = time.perf_counter()
    rng = check_rng(seed)
    acc = np.clip(Yv.mean(axis=1), 0.02, 0.98)
    lt = np.log(acc / (1 - acc))
    sd = lt.std()
    th0 = np.zeros((S, d))
    th0[:, 0] = (lt - lt.mean()) / (sd if sd > 0 else 1.0)
    if d > 1:
        th0[:, 1:] = 0.1 * rng.standard_normal((S, d - 1))
    pi = np.clip(Yv.mean(axis=0), 0.02, 0.98)
    b0 = -np.log(pi / (1 - pi))
    A0 = np.zeros((N, d))
    A0[:, 0] = 1.0
    if d > 1:
        A0[:, 1:] = 0.1 * rng.standard_normal((N, d - 1))
    x0 = np.concatenate([th0.ravel(), A0.ravel(), b0])
    n_th, n_a = S * d, N * d

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        return irt_objective(x, Yv, d, st, si)

    with single_thread():
        res = minimize(fun, x0, jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "maxcor": 20, "ftol": 1e-10, "gtol": 1e-8})
    x = res.x
    model = IRTModel(
        A=x[n_th:n_th + n_a].reshape(N, d).copy(), b=x[n_th + n_a:].copy(), theta=x[:n_th].reshape(S, d).copy(),
        info={"seconds": time.perf_counter() - t0, "nit": int(res.nit), "loss": float(res.fun),
              "converged": bool(res.success), "message": str(res.message)},
    )
    if cache:
        _CACHE[key] = model
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return model


def _p_irt(model: IRTModel, Yt: np.ndarray, sel: np.ndarray, unseen: np.ndarray, prior_sd: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """(pure IRT, p-IRT) estimates of targets with scores ``Yt`` (T, k) on ``sel``."""
    th = model.abilities(Yt, sel, prior_sd=prior_sd)
    P = model.prob(th)  # (T, N)
    N, k = model.n_items, sel.size
    pure = P.mean(axis=1)
    lam = k / N
    rest = P[:, unseen].mean(axis=1) if unseen.size else Yt.mean(axis=1)
    return pure, lam * Yt.mean(axis=1) + (1 - lam) * rest


@register_estimator
class IRTEstimator(Estimator):
    """tinyBenchmarks' IRT estimators: pure IRT, p-IRT and gp-IRT (see the module notes).

    After :meth:`fit`: ``model_`` (the :class:`IRTModel` fitted on all
    sources), ``lambda_`` (gp-IRT's weight of the cluster-weighted estimate),
    ``irt_seconds_`` (fitting time of the IRT models).
    """

    name = "irt"
    description = "tinyBenchmarks' IRT: 2PL fitted on the sources, target ability from the coreset (p-IRT / gp-IRT)"
    options = (
        Option("variant", "gp-irt", "choice", choices=("gp-irt", "p-irt", "irt"), doc="which IRT estimate"),
        Option("dim", 1, "int", low=1, high=10, doc="latent dimension d of the 2PL model"),
        Option("prior_sd_theta", 1.0, "float", low=0.0, low_open=True, doc="prior sd of the sources' abilities"),
        Option("prior_sd_item", 2.0, "float", low=0.0, low_open=True, doc="prior sd of the item parameters"),
        Option("ability_prior_sd", 3.0, "float", low=0.0, low_open=True,
               doc="prior sd of a target's ability (weak: near maximum likelihood)"),
        Option("max_iter", 2000, "int", low=1, doc="L-BFGS iterations of each IRT fit"),
        Option("val_fraction", 0.2, "float", low=0.0, high=0.9, low_open=True,
               doc="share of the sources held out to choose gp-IRT's lambda"),
        Option("seed", 0, "int", low=0, doc="seeds the held-out split and the IRT start"),
    )

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        _check_unit(Y, "Y_source")
        p = self.params
        # the options were checked when given, the sources by fit
        kw = {"st": p["prior_sd_theta"], "si": p["prior_sd_item"], "max_iter": p["max_iter"], "seed": p["seed"]}
        t0 = time.perf_counter()
        self.model_ = _fit_irt(Y, p["dim"], **kw)
        N = Y.shape[1]
        mask = np.ones(N, bool)
        mask[sel] = False
        self._unseen = np.flatnonzero(mask)
        self.lambda_ = None
        if p["variant"] == "gp-irt":
            self.weights_ = cluster_shares(selection_distances(_item_features(Y), sel), sel)
            self.lambda_ = self._choose_lambda(Y, sel, kw)
        self.irt_seconds_ = time.perf_counter() - t0

    def _choose_lambda(self, Y: np.ndarray, sel: np.ndarray, kw: dict[str, Any]) -> float:
        """gp-IRT's ``lam*``: the grid value (0, 0.05, ..., 1) of least MAE on held-out sources."""
        S = Y.shape[0]
        n_val = round(self.params["val_fraction"] * S)
        if n_val < 2 or S - n_val < 2:
            return float(sel.size / Y.shape[1])  # too few sources to hold out: p-IRT's own weight
        rng = np.random.default_rng(self.params["seed"])
        perm = rng.permutation(S)
        val, tr = perm[:n_val], perm[n_val:]
        m = _fit_irt(Y[tr], self.params["dim"], **kw)
        Yv = Y[val]
        _, pirt = _p_irt(m, Yv[:, sel], sel, self._unseen, self.params["ability_prior_sd"])
        cw = Yv[:, sel] @ cluster_shares(selection_distances(_item_features(Y[tr]), sel), sel)
        truth = Yv.mean(axis=1)
        grid = np.linspace(0.0, 1.0, 21)
        err = np.abs(grid[:, None] * cw[None, :] + (1 - grid[:, None]) * pirt[None, :] - truth[None, :]).mean(axis=1)
        return float(grid[int(np.argmin(err))])

    def predict_variants(self, Y_target: Any) -> dict[str, np.ndarray]:
        """Every variant's estimate from one ability fit: ``{"irt", "p-irt"[, "gp-irt"]}``, each shape (T,)."""
        return self._variants(self._targets(Y_target))

    def _check_targets(self, Yt: np.ndarray) -> None:
        _check_unit(Yt, "Y_target")

    def _variants(self, Yt: np.ndarray) -> dict[str, np.ndarray]:
        pure, pirt = _p_irt(self.model_, Yt, self.selection_, self._unseen, self.params["ability_prior_sd"])
        out = {"irt": pure, "p-irt": pirt}
        if self.lambda_ is not None:
            out["gp-irt"] = self.lambda_ * (Yt @ self.weights_) + (1 - self.lambda_) * pirt
        return out

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return self._variants(Yt)[self.params["variant"]]
