"""F5 — BayesAME: the bucket model and the batch information-gain problem.

Reference models ``r_1..r_Kr`` have full scores ``reference_scores`` of shape
``(Kr, N)``. Items whose reference score vectors are identical (after rounding
to ``tol`` when one is given) form a *bucket* ``b = 1..B`` with vector
``phi_b`` (shape ``(Kr,)``) and size ``N_b``.

Model::

    theta ~ N(mean, Sigma),   mean_b = mean(phi_b),
    Sigma[b, b'] = alpha * exp(-(beta / Kr) * ||phi_b - phi_b'||^2)          (kernel "se")
                 = alpha * (1 + sqrt(3) beta d) * exp(-sqrt(3) beta d),         (kernel "matern32",
                   d = ||phi_b - phi_b'||                                        the paper's form)
    s_i | theta ~ N(theta_b(i), N_b(i) * sigma2)

Everything else here follows from it: the posterior in its item-level and
bucket-level forms (:func:`posterior`, and :class:`SequentialPosterior` with
Cholesky updates), ``Var(R | C)``, the unified estimator, the single-item gain,
the marginal likelihood and the L-BFGS-B fit of ``alpha, beta``
(:meth:`BayesModel.fit`), and :class:`BatchInformationGain`, the problem
``max_{A subset U, |A| = k} beta(A) = (1/N^2) v_A^T Sigma_U[A, A]^{-1} v_A``, stated for exact
solvers as a mixed-integer quadratic program (:meth:`BatchInformationGain.linear_model`).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular
from scipy.linalg.lapack import dpotri
from scipy.optimize import minimize

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder, RowBlock
from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    as_array,
    as_index_array,
    check_allocation,
    check_choice,
    check_float,
    check_int,
    check_magnitude,
    check_selection,
)

from .base import Check, Formulation

__all__ = [
    "HYPER_LOWER",
    "HYPER_UPPER",
    "KERNELS",
    "Z975",
    "BatchData",
    "BatchInformationGain",
    "BayesModel",
    "Buckets",
    "PosteriorSummary",
    "SequentialPosterior",
    "bucketize",
    "item_gains",
    "posterior_var_R",
    "unified_estimate",
]

#: Standard normal 97.5 % quantile (the 95 % credible interval is +- Z975 sd).
Z975 = 1.959963984540054
#: Covariance kernels of the prior.
KERNELS = ("se", "matern32")
#: Lower bound of ``alpha`` and ``beta`` in the L-BFGS-B fit.
HYPER_LOWER = 1e-5
#: Upper bound of ``alpha`` and ``beta`` in the fit (the project's choice: keeps exp() finite).
HYPER_UPPER = 1e6


# =================================================================== buckets
@dataclass(frozen=True, eq=False)
class Buckets:
    """Items grouped by identical reference score vectors.

    Attributes
    ----------
    labels : ndarray of int64, shape (N,)
        Bucket of each item.
    phi : ndarray of float, shape (B, Kr)
        Reference score vector of each bucket (the rounded vector when ``tol`` is set).
    sizes : ndarray of int64, shape (B,)
        ``N_b``, items per bucket.
    tol : float or None
        Rounding tolerance used (None: exact identity).
    """

    labels: np.ndarray
    phi: np.ndarray
    sizes: np.ndarray
    tol: float | None

    @property
    def n_items(self) -> int:
        return int(self.labels.size)

    @property
    def n_buckets(self) -> int:
        return int(self.sizes.size)

    @property
    def n_reference(self) -> int:
        return int(self.phi.shape[1])

    def unique_regime(self, N0: int = 10) -> bool:
        """``B >= N - N0``: the (nearly) unique regime where BayesAME selects actively."""
        return self.n_buckets >= self.n_items - N0

    def counts(self, items: np.ndarray) -> np.ndarray:
        """``n_b`` of a set of items, shape (B,)."""
        return np.bincount(self.labels[np.asarray(items, dtype=np.int64)], minlength=self.n_buckets).astype(np.int64)


def bucketize(reference_scores: Any, tol: float | None = None) -> Buckets:
    """Group items by their reference score vectors.

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        Full scores of ``Kr`` reference models on ``N`` items; finite.
    tol : float, optional
        Rounding tolerance for continuous scores: vectors are rounded to the grid
        ``tol * round(score / tol)`` before comparison. None (default): only
        identical vectors share a bucket (exact; right for binary scores).

    Returns
    -------
    Buckets
    """
    R = as_array(reference_scores, "reference_scores", ndim=2, shape_doc="(Kr, N)")
    if R.shape[0] < 1 or R.shape[1] < 2:
        raise InvalidInputError(
            f"reference_scores: expected at least 1 reference model and 2 items, shape (Kr, N), got shape {R.shape}"
        )
    if tol is not None:
        tol = check_float(tol, "tol", low=0.0, low_open=True)
        grid = np.round(R / tol)
        uniq, inv = np.unique(grid.T, axis=0, return_inverse=True)
        phi = uniq * tol
    else:
        phi, inv = np.unique(R.T, axis=0, return_inverse=True)
    inv = np.asarray(inv, dtype=np.int64).ravel()
    sizes = np.bincount(inv, minlength=phi.shape[0]).astype(np.int64)
    return Buckets(labels=inv, phi=np.ascontiguousarray(phi, dtype=float), sizes=sizes, tol=tol)


# ===================================================================== model
def _kernel(sqdist: np.ndarray, alpha: float, beta: float, n_reference: int, kernel: str) -> np.ndarray:
    if kernel == "se":
        return alpha * np.exp(-(beta / n_reference) * sqdist)
    d = np.sqrt(np.maximum(sqdist, 0.0))
    t = math.sqrt(3.0) * beta * d
    return alpha * (1.0 + t) * np.exp(-t)


def _kernel_dlogbeta(sqdist: np.ndarray, Kp: np.ndarray, beta: float, n_reference: int, kernel: str) -> np.ndarray:
    """``d Sigma / d log(beta)`` given ``Kp = Sigma`` on the same distances."""
    if kernel == "se":
        return -(beta / n_reference) * sqdist * Kp
    t = math.sqrt(3.0) * beta * np.sqrt(np.maximum(sqdist, 0.0))
    return -(t * t / (1.0 + t)) * Kp


@dataclass(frozen=True, eq=False)
class PosteriorSummary:
    """Posterior of the bucket abilities after a coreset (from :meth:`BayesModel.posterior`).

    Attributes
    ----------
    mean : ndarray, shape (B,)
        ``mu|C``.
    cov : ndarray, shape (B, B)
        ``Sigma|C``.
    counts : ndarray of int64, shape (B,)
        ``n_b``.
    sums : ndarray, shape (B,)
        Sum of observed scores per bucket (zeros when no scores were given).
    form : {"item", "bucket"}
        Which form computed it.
    """

    mean: np.ndarray
    cov: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    form: str


class BayesModel:
    """The fixed data of the bucket model: buckets, prior mean, distances, noise.

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        Full scores of the reference models; finite.
    sigma2 : float
        Noise variance ``sigma^2 > 0``; an item of bucket ``b`` has noise
        variance ``N_b * sigma2``.
    tol : float, optional
        Bucketing tolerance (see :func:`bucketize`).
    kernel : {"se", "matern32"}
        Prior covariance family.
    """

    def __init__(self, reference_scores: Any, *, sigma2: float = 1e-4, tol: float | None = None,
                 kernel: str = "se") -> None:
        self.buckets = bucketize(reference_scores, tol)
        self.sigma2 = check_float(sigma2, "sigma2", low=0.0, low_open=True)
        self.kernel = check_choice(kernel, "kernel", KERNELS)
        phi = self.buckets.phi
        self.prior_mean = phi.mean(axis=1)
        sq = np.einsum("ij,ij->i", phi, phi)
        D2 = sq[:, None] + sq[None, :] - 2.0 * (phi @ phi.T)
        np.maximum(D2, 0.0, out=D2)
        np.fill_diagonal(D2, 0.0)
        self.sqdist = D2
        self.noise = self.sigma2 * self.buckets.sizes.astype(float)  # N_b sigma^2, shape (B,)

    # ---------------------------------------------------------------- sizes
    @property
    def N(self) -> int:
        return self.buckets.n_items

    @property
    def B(self) -> int:
        return self.buckets.n_buckets

    @property
    def Kr(self) -> int:
        return self.buckets.n_reference

    def covariance(self, alpha: float, beta: float, rows: np.ndarray | None = None,
                   cols: np.ndarray | None = None) -> np.ndarray:
        """Prior covariance ``Sigma[rows, cols]`` (all buckets by default)."""
        D2 = self.sqdist
        if rows is not None or cols is not None:
            r = slice(None) if rows is None else rows
            c = slice(None) if cols is None else cols
            D2 = D2[r][:, c] if rows is not None else D2[:, c]
        return _kernel(D2, alpha, beta, self.Kr, self.kernel)

    # ------------------------------------------------------------ posterior
    def _obs(self, items: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
        C = np.asarray(items, dtype=np.int64).ravel()
        if C.size and (C.min() < 0 or C.max() >= self.N):
            raise InvalidInputError(f"items: expected item indices in [0, {self.N}), got {C.min()}..{C.max()}")
        if np.unique(C).size != C.size:
            raise InvalidInputError("items: expected distinct item indices (an item is evaluated once)")
        if scores is None:
            s = np.zeros(C.size)
        else:
            s = as_array(scores, "scores", shape=(C.size,), shape_doc=f"(n,) = ({C.size},), one per item")
        return C, s

    def _form(self, form: str, n: int) -> str:
        check_choice(form, "form", ("auto", "item", "bucket"))
        if form == "auto":
            return "item" if n < self.B else "bucket"
        return form

    def posterior(self, items: Any = (), scores: Any = None, *, alpha: float = 1.0, beta: float = 1.0,
                  form: str = "auto") -> PosteriorSummary:
        """Posterior of ``theta`` after observing ``scores`` on ``items``.

        Parameters
        ----------
        items : array_like of int, shape (n,)
            The coreset ``C`` (distinct item indices).
        scores : array_like, shape (n,), optional
            Target scores on ``items`` (the covariance does not depend on them;
            without scores the mean is computed as if every residual were 0).
        alpha, beta : float
            Prior hyper-parameters.
        form : {"auto", "item", "bucket"}
            ``"item"``: ``Sigma H_C^T (H_C Sigma H_C^T + D_C)^{-1} ...`` (an
            ``n x n`` Cholesky); ``"bucket"``: ``Sigma (Sigma + Delta)^{-1} ...``
            over observed buckets (``m x m``, ``m <= min(n, B)``); ``"auto"``:
            item-level when ``n < B`` (the paper's rule).

        Returns
        -------
        PosteriorSummary
        """
        C, s = self._obs(items, scores)
        B = self.B
        counts = np.bincount(self.buckets.labels[C], minlength=B).astype(np.int64)
        sums = np.bincount(self.buckets.labels[C], weights=s, minlength=B)
        form = self._form(form, C.size)
        Sig = self.covariance(alpha, beta)
        if C.size == 0:
            return PosteriorSummary(self.prior_mean.copy(), Sig, counts, sums, form)
        if form == "item":
            rows = self.buckets.labels[C]
            K = Sig[np.ix_(rows, rows)] + np.diag(self.noise[rows])
            resid = s - self.prior_mean[rows]
        else:
            rows = np.flatnonzero(counts)
            K = Sig[np.ix_(rows, rows)] + np.diag(self.noise[rows] / counts[rows])
            resid = sums[rows] / counts[rows] - self.prior_mean[rows]
        L = cholesky(K, lower=True, check_finite=False)
        G = solve_triangular(L, Sig[rows, :], lower=True, check_finite=False)  # (m, B)
        z = solve_triangular(L, resid, lower=True, check_finite=False)
        mean = self.prior_mean + G.T @ z
        cov = Sig - G.T @ G
        return PosteriorSummary(mean, cov, counts, sums, form)

    # --------------------------------------------------- marginal likelihood
    def nll(self, alpha: float, beta: float, items: Any, scores: Any, *, form: str = "auto",
            gradient: bool = False) -> float | tuple[float, np.ndarray]:
        """Negative log marginal likelihood ``L(alpha, beta)`` of the coreset scores (paper Eq. 11).

        Item-level (``n < B`` under ``"auto"``):
        ``1/2 r^T K^{-1} r + 1/2 log|K|`` with ``K = H_C Sigma H_C^T + D_C``,
        ``r = s_C - H_C mean``; bucket-level: the same with ``K = Sigma_OO + Delta``
        and ``r = sbar - mean`` over the observed buckets ``O``. The two differ by
        a constant that does not depend on ``alpha, beta`` (the ``2 pi`` term is
        left out of both).

        Returns
        -------
        float, or (float, ndarray of shape (2,)) with the gradient in
        ``(log alpha, log beta)`` when ``gradient`` is True.
        """
        C, s = self._obs(items, scores)
        if C.size == 0:
            return (0.0, np.zeros(2)) if gradient else 0.0
        form = self._form(form, C.size)
        if form == "item":
            rows = self.buckets.labels[C]
            noise = self.noise[rows]
            r = s - self.prior_mean[rows]
        else:
            counts = np.bincount(self.buckets.labels[C], minlength=self.B)
            sums = np.bincount(self.buckets.labels[C], weights=s, minlength=self.B)
            rows = np.flatnonzero(counts)
            noise = self.noise[rows] / counts[rows]
            r = sums[rows] / counts[rows] - self.prior_mean[rows]
        D2 = self.sqdist[np.ix_(rows, rows)]
        Kp = _kernel(D2, alpha, beta, self.Kr, self.kernel)
        K = Kp + np.diag(noise)
        try:
            cf = cho_factor(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return (np.inf, np.zeros(2)) if gradient else np.inf
        a = cho_solve(cf, r, check_finite=False)
        val = 0.5 * float(r @ a) + float(np.sum(np.log(np.diag(cf[0]))))
        if not gradient:
            return val
        Kinv, info = dpotri(cf[0], lower=1)
        if info != 0:
            Kinv = cho_solve(cf, np.eye(rows.size), check_finite=False)
        else:
            Kinv = np.tril(Kinv) + np.tril(Kinv, -1).T
        W = Kinv - np.outer(a, a)
        dA = Kp  # d K / d log alpha
        dB = _kernel_dlogbeta(D2, Kp, beta, self.Kr, self.kernel)
        g = 0.5 * np.array([np.sum(W * dA), np.sum(W * dB)])
        return val, g

    def fit(self, items: Any, scores: Any, *, alpha0: float = 1.0, beta0: float = 1.0, form: str = "auto",
            lower: float = HYPER_LOWER, upper: float = HYPER_UPPER, maxiter: int = 50,
            extra_starts: Any = ()) -> tuple[float, float, dict]:
        """Fit ``alpha, beta`` by L-BFGS-B on :meth:`nll` (bounds ``[lower, upper]``, default lower ``1e-5``).

        The search runs in ``(log alpha, log beta)`` with the analytic gradient,
        from ``(alpha0, beta0)`` and from each pair in ``extra_starts``; the
        result with the smallest ``nll`` wins (never worse than a start).

        Parameters
        ----------
        items, scores : array_like, shape (n,)
            Coreset and target scores on it.
        alpha0, beta0 : float
            First start.
        form : {"auto", "item", "bucket"}
        lower, upper : float
            Bounds of both parameters.
        maxiter : int
            L-BFGS-B iteration cap per start.
        extra_starts : iterable of (float, float)
            Further starts (the sequential evaluator passes the initial
            ``(alpha0, beta0)`` beside the warm start: where correlations vanish,
            e.g. ``beta`` large, the likelihood is flat and a warm start alone
            can stay there).

        Returns
        -------
        alpha, beta : float
        info : dict
            ``nll``, ``nit`` (summed over starts), ``success``, ``message``, ``starts``.
        """
        C, s = self._obs(items, scores)
        starts = []
        for a0, b0 in [(alpha0, beta0), *list(extra_starts)]:
            a0 = float(np.clip(check_float(a0, "alpha0", low=0.0, low_open=True), lower, upper))
            b0 = float(np.clip(check_float(b0, "beta0", low=0.0, low_open=True), lower, upper))
            if (a0, b0) not in starts:
                starts.append((a0, b0))
        if C.size == 0:
            return starts[0][0], starts[0][1], {"nll": 0.0, "nit": 0, "success": True, "message": "no observations",
                                                "starts": len(starts)}

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            out = self.nll(math.exp(x[0]), math.exp(x[1]), C, s, form=form, gradient=True)
            assert isinstance(out, tuple)
            v, g = out
            if not np.isfinite(v):
                return 1e300, np.zeros(2)
            return v, g

        bounds = [(math.log(lower), math.log(upper))] * 2
        best: tuple[float, float, float] | None = None
        nit, ok, msg = 0, True, ""
        for a0, b0 in starts:
            x0 = np.log([a0, b0])
            f0 = fun(x0)[0]
            res = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": maxiter})
            nit += int(res.nit)
            if res.fun <= f0:
                a, b = (float(np.clip(math.exp(v), lower, upper)) for v in res.x)
                cand = (float(res.fun), a, b)
            else:  # never return worse than the start
                cand = (f0, a0, b0)
            if best is None or cand[0] < best[0]:
                best = cand
                ok, msg = bool(res.success), str(res.message)
        assert best is not None
        return best[1], best[2], {"nll": best[0], "nit": nit, "success": ok, "message": msg, "starts": len(starts)}

    # ------------------------------------------------------- derived values
    def var_R(self, cov_r: np.ndarray, counts: np.ndarray) -> float:
        """``Var(R | C) = (1/N^2) sum_b r_b (sigma^2 N_b + sum_b' r_b' Sigma|C[b, b'])``, ``r = N_b - n_b``.

        Parameters
        ----------
        cov_r : ndarray, shape (B,)
            ``Sigma|C @ r``.
        counts : ndarray, shape (B,)
            ``n_b``.
        """
        return posterior_var_R(self.buckets.sizes, counts, self.noise, cov_r)

    def estimate(self, mean_post: np.ndarray, counts: np.ndarray, total: float, n: int, N0: int = 10) -> float:
        """The unified estimator ``Rhat = w sum_{i in C} s_i + sum_b (N_b/N - n_b w) mu|C[b]``.

        ``w = 1/N`` in the unique regime ``B >= N - N0`` (posterior mean of
        ``R``), else ``w = 1/n`` (control-variate form; ``1/N`` while ``n = 0``).

        Parameters
        ----------
        mean_post : ndarray, shape (B,)
        counts : ndarray, shape (B,)
        total : float
            ``sum_{i in C} s_i``.
        n : int
            ``|C|``.
        N0 : int
        """
        return unified_estimate(self.buckets.sizes, counts, mean_post, total, n, self.buckets.unique_regime(N0))

    def mean_R(self, mean_post: np.ndarray, counts: np.ndarray, total: float) -> float:
        """Posterior mean ``E[R | C] = (1/N)(sum_C s_i + sum_b (N_b - n_b) mu|C[b])``."""
        return float((total + (self.buckets.sizes - counts) @ mean_post) / self.N)

    def gains(self, cov_r: np.ndarray, cov_diag: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Single-item expected information gain of each bucket, shape (B,) (paper Eq. 6).

        ``-1/2 log(1 - ((Sigma|C r)_b + sigma^2 N_b)^2 / (N^2 Var(R|C) (Sigma|C[b,b] + sigma^2 N_b)))``;
        ``-inf`` for buckets without unevaluated items.
        """
        return item_gains(self.buckets.sizes, counts, self.noise, cov_r, cov_diag)


def posterior_var_R(sizes: np.ndarray, counts: np.ndarray, noise: np.ndarray, cov_r: np.ndarray) -> float:
    """``Var(R | C) = (1/N^2) sum_b r_b (noise_b + (Sigma|C r)_b)`` with ``r = sizes - counts``, ``N = sum(sizes)``.

    Parameters
    ----------
    sizes, counts : ndarray of int, shape (B,)
        ``N_b`` and ``n_b``.
    noise : ndarray, shape (B,)
        Item noise variance of each bucket, ``sigma^2 N_b``.
    cov_r : ndarray, shape (B,)
        ``Sigma|C @ r``.
    """
    r = (sizes - counts).astype(float)
    N = float(np.sum(sizes))
    return max(float(r @ (noise + cov_r)) / N ** 2, 0.0)


def unified_estimate(sizes: np.ndarray, counts: np.ndarray, mean_post: np.ndarray, total: float, n: int,
                     unique: bool) -> float:
    """``Rhat = w sum_C s_i + sum_b (N_b/N - n_b w) mu|C[b]``, ``w = 1/N`` if ``unique`` or ``n = 0``, else ``1/n``.

    Parameters
    ----------
    sizes, counts : ndarray of int, shape (B,)
    mean_post : ndarray, shape (B,)
        Posterior mean of the bucket abilities.
    total : float
        Sum of the observed scores.
    n : int
        Number of observed items.
    unique : bool
        The unique regime ``B >= N - N0``.
    """
    N = float(np.sum(sizes))
    w = 1.0 / N if (unique or n == 0) else 1.0 / n
    return float(w * total + (sizes / N - counts * w) @ mean_post)


def item_gains(sizes: np.ndarray, counts: np.ndarray, noise: np.ndarray, cov_r: np.ndarray,
               cov_diag: np.ndarray) -> np.ndarray:
    """Single-item information gain about ``R`` of an item of each bucket, shape (B,) (``-inf``: none left).

    ``-1/2 log(1 - ((Sigma|C r)_b + noise_b)^2 / (N^2 Var(R|C) (Sigma|C[b,b] + noise_b)))``.

    Parameters
    ----------
    sizes, counts : ndarray of int, shape (B,)
    noise : ndarray, shape (B,)
        ``sigma^2 N_b``.
    cov_r : ndarray, shape (B,)
        ``Sigma|C @ r``.
    cov_diag : ndarray, shape (B,)
        ``diag(Sigma|C)``.
    """
    var = posterior_var_R(sizes, counts, noise, cov_r)
    N = float(np.sum(sizes))
    num = (cov_r + noise) ** 2
    den = N ** 2 * var * (np.maximum(cov_diag, 0.0) + noise)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(den > 0, num / den, 0.0)
    ratio = np.clip(ratio, 0.0, 1.0 - 1e-15)
    g = -0.5 * np.log1p(-ratio)
    g[counts >= sizes] = -np.inf
    return g


# ============================================================ sequential form
class SequentialPosterior:
    """The bucket posterior under one-item-at-a-time observation, with Cholesky updates.

    While ``n < B`` it keeps the Cholesky factor of the item-level matrix
    ``H_C Sigma H_C^T + D_C`` and appends one row per observation (``O(n^2)``);
    once ``n >= B`` it switches (once) to the bucket-level matrix
    ``Sigma_OO + Delta`` over the observed buckets: a new bucket appends a row,
    another item of an observed bucket lowers ``Delta_bb`` — a rank-1 Cholesky
    downdate (``O(m^2)``). The posterior variances ``diag(Sigma|C)`` are kept up
    to date by the rank-1 conditioning identity; ``Sigma|C r`` and ``mu|C`` are
    computed from the factor in ``O(m^2 + m B)``.

    Parameters
    ----------
    model : BayesModel
    alpha, beta : float
        Hyper-parameters (change them with :meth:`set_hyper`, which rebuilds).
    form : {"auto", "item", "bucket"}
        ``"auto"`` follows the ``n < B`` rule; the others pin one form.
    """

    def __init__(self, model: BayesModel, alpha: float = 1.0, beta: float = 1.0, form: str = "auto") -> None:
        self.model = model
        self.form_rule = check_choice(form, "form", ("auto", "item", "bucket"))
        self.items: list[int] = []
        self.scores: list[float] = []
        self.counts = np.zeros(model.B, dtype=np.int64)
        self.sums = np.zeros(model.B)
        self.total = 0.0
        self._itemset: set[int] = set()
        self.set_hyper(alpha, beta)

    # ---------------------------------------------------------------- state
    @property
    def n(self) -> int:
        return len(self.items)

    def _want_form(self, n: int) -> str:
        if self.form_rule != "auto":
            return self.form_rule
        return "item" if n < self.model.B else "bucket"

    def set_hyper(self, alpha: float, beta: float) -> None:
        """Set ``alpha, beta`` and rebuild the factorisation from scratch."""
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.Sigma = self.model.covariance(self.alpha, self.beta)
        self._rebuild(self._want_form(self.n))

    def _rebuild(self, form: str) -> None:
        m = self.model
        self._cache: dict[str, np.ndarray] = {}
        self.form = form
        if form == "item":
            self.rows = [int(m.buckets.labels[i]) for i in self.items]
            noise = m.noise[self.rows] if self.rows else np.zeros(0)
            resid = (np.asarray(self.scores) - m.prior_mean[self.rows]) if self.rows else np.zeros(0)
        else:
            obs = np.flatnonzero(self.counts)
            self.rows = [int(b) for b in obs]
            noise = m.noise[obs] / self.counts[obs]
            resid = self.sums[obs] / self.counts[obs] - m.prior_mean[obs]
        self.pos = {b: p for p, b in enumerate(self.rows)} if form == "bucket" else {}
        k = len(self.rows)
        cap = max(16, 2 * k)
        self._L = np.zeros((cap, cap))
        self._resid = np.zeros(cap)
        self._z = np.zeros(cap)
        self._m = k
        if k:
            r = np.asarray(self.rows)
            K = self.Sigma[np.ix_(r, r)] + np.diag(noise)
            self._L[:k, :k] = cholesky(K, lower=True, check_finite=False)
            self._resid[:k] = resid
            self._z[:k] = solve_triangular(self._L[:k, :k], resid, lower=True, check_finite=False)
            G = solve_triangular(self._L[:k, :k], self.Sigma[r, :], lower=True, check_finite=False)
            self.cov_diag = np.diag(self.Sigma) - np.einsum("ij,ij->j", G, G)
        else:
            self.cov_diag = np.diag(self.Sigma).copy()
        self._sig_r = self.Sigma @ (self.model.buckets.sizes - self.counts).astype(float)

    def _grow(self) -> None:
        cap = self._L.shape[0]
        if self._m < cap:
            return
        L = np.zeros((2 * cap, 2 * cap))
        L[:cap, :cap] = self._L
        self._L = L
        for name in ("_resid", "_z"):
            v = np.zeros(2 * cap)
            v[:cap] = getattr(self, name)
            setattr(self, name, v)

    def _solve_K(self, rhs: np.ndarray) -> np.ndarray:
        """``K^{-1} rhs`` for the current factor (rhs shape (m,) or (m, p))."""
        m = self._m
        L = self._L[:m, :m]
        y = solve_triangular(L, rhs, lower=True, check_finite=False)
        return solve_triangular(L, y, lower=True, trans="T", check_finite=False)

    # ----------------------------------------------------------- posterior
    def _sig_cols(self, w: np.ndarray) -> np.ndarray:
        """``Sigma[:, rows] @ w`` (shape (B,)), without copying the columns when ``m`` is large."""
        r = self.rows
        if 4 * self._m < self.model.B:
            return self.Sigma[:, r] @ w
        wb = np.bincount(np.asarray(r), weights=w, minlength=self.model.B)
        return self.Sigma @ wb

    @property
    def mean(self) -> np.ndarray:
        """``mu|C``, shape (B,)."""
        if "mean" not in self._cache:
            m = self._m
            if m == 0:
                self._cache["mean"] = self.model.prior_mean.copy()
            else:
                w = solve_triangular(self._L[:m, :m], self._z[:m], lower=True, trans="T", check_finite=False)
                self._cache["mean"] = self.model.prior_mean + self._sig_cols(w)
        return self._cache["mean"]

    def cov_times(self, x: np.ndarray) -> np.ndarray:
        """``Sigma|C @ x`` for x of shape (B,)."""
        out = self.Sigma @ x
        if self._m:
            sx = out[self.rows]  # Sigma[rows, :] @ x (Sigma symmetric)
            out = out - self._sig_cols(self._solve_K(sx))
        return out

    def cov_r(self) -> np.ndarray:
        """``Sigma|C @ r`` with ``r_b = N_b - n_b`` (``Sigma r`` is kept incrementally)."""
        if "cov_r" not in self._cache:
            out = self._sig_r.copy()
            if self._m:
                out -= self._sig_cols(self._solve_K(self._sig_r[self.rows]))
            self._cache["cov_r"] = out
        return self._cache["cov_r"]

    def cov_col(self, b: int) -> np.ndarray:
        """``Sigma|C[:, b]``, shape (B,)."""
        out = self.Sigma[:, b].copy()
        if self._m:
            out -= self._sig_cols(self._solve_K(self.Sigma[b, self.rows]))
        return out

    def cov(self) -> np.ndarray:
        """The full ``Sigma|C``, shape (B, B) (``O(m^2 B + m B^2)``)."""
        if not self._m:
            return self.Sigma.copy()
        G = solve_triangular(self._L[:self._m, :self._m], self.Sigma[self.rows, :], lower=True, check_finite=False)
        return self.Sigma - G.T @ G

    def var_R(self) -> float:
        return self.model.var_R(self.cov_r(), self.counts)

    def estimate(self, N0: int = 10) -> float:
        return self.model.estimate(self.mean, self.counts, self.total, self.n, N0)

    def mean_R(self) -> float:
        return self.model.mean_R(self.mean, self.counts, self.total)

    def gains(self) -> np.ndarray:
        """Single-item gain per bucket, shape (B,) (``-inf`` where no item is left)."""
        return self.model.gains(self.cov_r(), self.cov_diag, self.counts)

    # --------------------------------------------------------------- update
    def add(self, item: int, score: float) -> None:
        """Observe ``score`` on ``item`` and update the posterior."""
        m = self.model
        item = int(item)
        if not 0 <= item < m.N:
            raise InvalidInputError(f"item: expected an item index in [0, {m.N}), got {item}")
        score = float(score)
        if not math.isfinite(score):
            raise InvalidInputError(f"score: expected a finite score, got {score} for item {item}")
        b = int(m.buckets.labels[item])
        if item in self._itemset:
            raise InvalidInputError(f"item: item {item} is already in the coreset")
        # rank-1 conditioning of the variances: Sigma|C' = Sigma|C - w w^T / (w_b + noise_b)
        w = self.cov_col(b)
        self._cache = {}
        self.cov_diag = self.cov_diag - w * w / (w[b] + m.noise[b])
        self.items.append(item)
        self.scores.append(score)
        self._itemset.add(item)
        self.counts[b] += 1
        self.sums[b] += score
        self.total += score
        self._sig_r -= self.Sigma[:, b]
        want = self._want_form(self.n)
        if want != self.form:
            self._rebuild(want)
            return
        if self.form == "item":
            self._append(b, m.noise[b], score - m.prior_mean[b])
        elif self.counts[b] == 1:
            self.pos[b] = self._m
            self._append(b, m.noise[b], score - m.prior_mean[b])
        else:
            p = self.pos[b]
            nb = self.counts[b]
            delta = m.noise[b] / nb - m.noise[b] / (nb - 1)  # < 0
            _chol_downdate_unit(self._L, self._m, p, math.sqrt(-delta))
            self._resid[p] = self.sums[b] / nb - m.prior_mean[b]
            self._z[:self._m] = solve_triangular(self._L[:self._m, :self._m], self._resid[:self._m], lower=True,
                                                 check_finite=False)

    def _append(self, b: int, noise: float, resid: float) -> None:
        self._grow()
        m = self._m
        kvec = self.Sigma[b, self.rows[:m]] if m else np.zeros(0)
        l = solve_triangular(self._L[:m, :m], kvec, lower=True, check_finite=False) if m else np.zeros(0)
        d2 = self.Sigma[b, b] + noise - float(l @ l)
        lnn = math.sqrt(max(d2, 1e-300))
        self._L[m, :m] = l
        self._L[m, m] = lnn
        self._resid[m] = resid
        self._z[m] = (resid - float(l @ self._z[:m])) / lnn
        self.rows.append(b)
        self._m = m + 1


def _chol_downdate_unit(L: np.ndarray, m: int, p: int, x_p: float) -> None:
    """In place: ``L L^T - x x^T`` with ``x = x_p e_p`` on the leading ``m x m`` block."""
    x = np.zeros(m)
    x[p] = x_p
    for k in range(p, m):
        Lkk = L[k, k]
        r2 = Lkk * Lkk - x[k] * x[k]
        if r2 <= 0:
            raise np.linalg.LinAlgError("Cholesky downdate lost positive definiteness")
        r = math.sqrt(r2)
        c = r / Lkk
        s = x[k] / Lkk
        L[k, k] = r
        if k + 1 < m:
            col = L[k + 1:m, k]
            col -= s * x[k + 1:m]
            col /= c
            x[k + 1:m] = c * x[k + 1:m] - s * col


# ============================================================ batch problem
@dataclass(frozen=True, eq=False)
class BatchData:
    """The batch problem in bucket space (what heuristics search).

    Only buckets that still hold unevaluated items appear, re-indexed ``0..Bu-1``.

    Attributes
    ----------
    items : ndarray of int64, shape (nU,)
        Unevaluated items ``U`` (sorted).
    labels : ndarray of int64, shape (nU,)
        Compact bucket of each item of ``U``.
    S : ndarray, shape (Bu, Bu)
        ``Sigma|C`` restricted to those buckets.
    noise : ndarray, shape (Bu,)
        ``sigma^2 N_b``.
    v : ndarray, shape (Bu,)
        ``v_b = (Sigma|C r)_b + sigma^2 N_b`` = ``(Sigma_U 1)_i`` for any item ``i`` of bucket ``b``.
    avail : ndarray of int64, shape (Bu,)
        Unevaluated items per bucket.
    phi : ndarray, shape (Bu, Kr)
    N : int
    k : int
    """

    items: np.ndarray
    labels: np.ndarray
    S: np.ndarray
    noise: np.ndarray
    v: np.ndarray
    avail: np.ndarray
    phi: np.ndarray
    N: int
    k: int

    @property
    def n_buckets(self) -> int:
        return int(self.avail.size)

    @classmethod
    def from_posterior(cls, model: BayesModel, cov: np.ndarray, counts: np.ndarray, evaluated: np.ndarray,
                       k: int) -> BatchData:
        """Build from a posterior ``Sigma|C`` (shape (B, B)), counts ``n_b`` and the evaluated items.

        Parameters
        ----------
        model : BayesModel
        cov : ndarray, shape (B, B)
        counts : ndarray of int, shape (B,)
        evaluated : ndarray of int, shape (n,)
            The coreset ``C``.
        k : int
        """
        N = model.N
        sizes = model.buckets.sizes
        r = (sizes - counts).astype(float)
        cov_r = cov @ r
        inU = np.ones(N, bool)
        inU[np.asarray(evaluated, dtype=np.int64)] = False
        U = np.flatnonzero(inU)
        live = np.flatnonzero(r > 0)
        compact = np.full(model.B, -1, dtype=np.int64)
        compact[live] = np.arange(live.size)
        return cls(
            items=U,
            labels=compact[model.buckets.labels[U]],
            S=np.ascontiguousarray(cov[np.ix_(live, live)]),
            noise=model.noise[live],
            v=cov_r[live] + model.noise[live],
            avail=(sizes - counts)[live].astype(np.int64),
            phi=model.buckets.phi[live],
            N=N,
            k=int(k),
        )

    def value(self, buckets: np.ndarray) -> float:
        """``beta(A)`` of a batch given as compact bucket ids (with repeats), shape (k,)."""
        bA = np.asarray(buckets, dtype=np.int64)
        if bA.size == 0:
            return 0.0
        M = self.S[np.ix_(bA, bA)] + np.diag(self.noise[bA])
        a = self.v[bA]
        L = np.linalg.cholesky(M)
        y = solve_triangular(L, a, lower=True, check_finite=False)
        return float(y @ y) / self.N ** 2

    def values(self, batches: np.ndarray) -> np.ndarray:
        """``beta`` of many batches at once; ``batches`` shape (P, k) of compact bucket ids -> (P,)."""
        X = np.asarray(batches, dtype=np.int64)
        if X.shape[1] == 0:
            return np.zeros(X.shape[0])
        M = self.S[X[:, :, None], X[:, None, :]]
        idx = np.arange(X.shape[1])
        M[:, idx, idx] += self.noise[X]
        a = self.v[X]
        sol = np.linalg.solve(M, a[:, :, None])[:, :, 0]
        return np.einsum("ij,ij->i", a, sol) / self.N ** 2

    def greedy(self) -> tuple[np.ndarray, float]:
        """Add the bucket (item) with the largest increase of ``beta`` ``k`` times.

        The increase of adding bucket ``c`` to ``A`` is
        ``(v_c - m_c^T M^{-1} a)^2 / (N^2 (Sigma_U[c, c] - m_c^T M^{-1} m_c))``
        (Schur complement), with ``m_c = Sigma_U[A, c]``.

        Returns
        -------
        buckets : ndarray of int64, shape (k,)
            Compact bucket ids of the batch.
        value : float
            Its ``beta``.

        Computed once per instance (the data are frozen); each call returns a fresh array.
        """
        buckets, value = self._greedy_batch
        return buckets.copy(), value

    @cached_property
    def _greedy_batch(self) -> tuple[np.ndarray, float]:
        sel: list[int] = []
        cnt = np.zeros(self.n_buckets, dtype=np.int64)
        diag = np.diag(self.S) + self.noise
        for _ in range(self.k):
            cands = np.flatnonzero(cnt < self.avail)
            if sel:
                b = np.asarray(sel)
                M = self.S[np.ix_(b, b)] + np.diag(self.noise[b])
                Minv = np.linalg.inv(M)
                a = self.v[b]
                mc = self.S[np.ix_(cands, b)]  # (P, t); an extra copy of a bucket in A still has its own noise
                t1 = mc @ Minv
                schur = diag[cands] - np.einsum("ij,ij->i", t1, mc)
                inc = (self.v[cands] - t1 @ a) ** 2 / np.maximum(schur, 1e-300)
            else:
                inc = self.v[cands] ** 2 / diag[cands]
            j = int(np.argmax(inc))
            sel.append(int(cands[j]))
            cnt[cands[j]] += 1
        out = np.asarray(sel, dtype=np.int64)
        return out, self.value(out)

    def to_items(self, buckets: np.ndarray) -> np.ndarray:
        """Item indices for a bucket multiset: the lowest-index unevaluated items of each bucket."""
        bA = np.asarray(buckets, dtype=np.int64)
        cnt = np.bincount(bA, minlength=self.n_buckets)
        if np.any(cnt > self.avail):
            raise InvalidInputError("buckets: a bucket is used more often than it has unevaluated items")
        out = []
        for b in np.flatnonzero(cnt):
            out.extend(self.items[self.labels == b][: cnt[b]].tolist())
        return np.sort(np.asarray(out, dtype=np.int64))

    def to_buckets(self, items: np.ndarray) -> np.ndarray:
        """Compact bucket ids of items of ``U`` (shape (k,))."""
        pos = np.searchsorted(self.items, np.asarray(items, dtype=np.int64))
        return self.labels[pos]


def _batch_iv(reference_scores: Any, coreset: Any, observed: Any, alpha: Any, sigma2: Any,
              tol: Any) -> np.ndarray:
    """Checks of :class:`BatchInformationGain`'s arguments that its parts do not make (pure).

    Magnitudes: squared distances of reference vectors, ``R / tol``, the
    prior variance and noise summed over ``N^2`` pairs and the observed scores
    summed over ``N`` items stay below :data:`MAX_MAGNITUDE`; the ``(B, B)``
    covariance matrices fit in memory; ``coreset`` as item indices or a boolean
    mask of length ``N``. Returns the coreset as item indices, in the order
    given, shape (n,).
    """
    R = as_array(reference_scores, "reference_scores", ndim=2, shape_doc="(Kr, N)")
    Kr, N = R.shape
    if Kr < 1 or N < 2:
        raise InvalidInputError(
            f"reference_scores: expected at least 1 reference model and 2 items, shape (Kr, N), got shape {R.shape}"
        )
    big = check_magnitude(R, "reference_scores", scale=2.0 * math.sqrt(Kr), limit=math.sqrt(MAX_MAGNITUDE),
                          what=f"squared distances between reference score vectors of length Kr = {Kr}")
    if tol is not None:
        t = check_float(tol, "tol", low=0.0, low_open=True)
        if big / t > MAX_MAGNITUDE:
            raise InvalidInputError(f"tol: expected a tolerance with max|reference_scores| / tol below "
                                    f"{MAX_MAGNITUDE:.3g}, got tol = {t:g} for scores up to {big:.3g}")
    for name, v, scale, what in (("alpha", alpha, float(N) ** 2, f"covariances summed over N^2 = {N}^2 item pairs"),
                                 ("sigma2", sigma2, float(N) ** 3, f"noise N_b sigma2 summed over N^2 = {N}^2 pairs")):
        x = check_float(v, name, low=0.0, low_open=True)
        check_magnitude(np.array([x]), name, scale=scale, what=what)
    if observed is not None:
        check_magnitude(as_array(observed, "observed", ndim=1), "observed", scale=N, what=f"a sum of N = {N} scores")
    nbytes = 6 * 8.0 * N * N
    if nbytes > 2**30:  # count the buckets only when the bound matters
        nbytes = 6 * 8.0 * np.unique(R.T, axis=0).shape[0] ** 2
        check_allocation(nbytes, "reference_scores", f"the (B, B) covariance matrices of the B buckets of {N} items")
    if coreset is None:
        return np.zeros(0, dtype=np.int64)
    return as_index_array(coreset, N, "coreset")


class _BatchOACuts:
    """Tangent cuts of the batch problem's perspective function (:meth:`BatchInformationGain._oa_model`).

    Parameters
    ----------
    data : BatchData
    bcol : ndarray of int, shape (n,)
        Bucket of each copy column.
    z : ndarray of int, shape (n,)
        Global columns of the copies.
    t : int
        Global column of the scaled objective ``t``.
    scale : float
        ``s`` of the master.
    """

    name = "batch_oa"

    def __init__(self, data: BatchData, bcol: np.ndarray, z: np.ndarray, t: int, scale: float) -> None:
        self.S = 0.5 * (data.S + data.S.T)
        self.D = np.asarray(data.noise, dtype=float)
        self.u = np.asarray(data.v, dtype=float) / data.N
        self.bcol, self.z, self.t, self.s = bcol, np.asarray(z), int(t), float(scale)
        self.B = int(data.n_buckets)
        self.stats = {"oa_cuts": 0, "oa_separations": 0}

    def tangent(self, n: np.ndarray) -> tuple[float, float, np.ndarray]:
        """``f(n)``, and the cut ``f >= c0 - c @ n`` touching it at ``n`` (shapes: (B,) in, (B,) out)."""
        n = np.clip(np.asarray(n, dtype=float), 0.0, None)
        sup = np.flatnonzero(n > 1e-12)
        W = np.zeros(self.B)
        if sup.size:
            M = self.S[np.ix_(sup, sup)] + np.diag(self.D[sup] / n[sup])
            try:
                W[sup] = cho_solve(cho_factor(M, lower=True, check_finite=False), self.u[sup], check_finite=False)
            except np.linalg.LinAlgError:
                W[sup] = np.linalg.lstsq(M, self.u[sup], rcond=None)[0]
        SW = self.S @ W
        c0 = -float(W @ SW)
        c = (self.u - SW) ** 2 / self.D
        value = float(-c0 + np.sum(self.D[sup] * W[sup] ** 2 / n[sup]) - 2.0 * self.u @ W)
        return value, c0, c

    def rows_at(self, points: list[np.ndarray]) -> RowBlock:
        """The tangent cut at each count vector of ``points`` (each shape (B,)), as rows of the master."""
        return self._rows([self.tangent(n)[1:] for n in points])

    def _rows(self, cuts: list[tuple[float, np.ndarray]]) -> RowBlock:
        """Rows ``t + s c[bcol] @ z >= s c0`` of cuts ``(c0, c)`` (``c`` shape (B,))."""
        width = self.z.size + 1
        cols = np.tile(np.concatenate([[self.t], self.z]), len(cuts))
        vals = np.concatenate([np.concatenate([[1.0], self.s * c[self.bcol]]) for _, c in cuts])
        lb = np.asarray([self.s * c0 for c0, _ in cuts], dtype=float)
        return RowBlock(np.repeat(np.arange(len(cuts)), width), cols, vals, lb, np.full(len(cuts), np.inf))

    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        """The tangent at ``x``'s count vector when ``x``'s ``t`` lies below ``s f(n)`` by more than ``tol``."""
        self.stats["oa_separations"] += 1
        n = np.bincount(self.bcol, weights=np.asarray(x, dtype=float)[self.z], minlength=self.B)
        value, c0, c = self.tangent(n)
        if float(x[self.t]) >= self.s * value - tol:
            return None
        self.stats["oa_cuts"] += 1
        return self._rows([(c0, c)])


class BatchInformationGain(Formulation):
    """Batch information gain of BayesAME: ``max_{A subset U, |A| = k} beta(A)``.

    ``beta(A) = (1/N^2) v_A^T Sigma_U[A, A]^{-1} v_A`` with
    ``Sigma_U = H Sigma|C H^T + D`` the posterior covariance of the scores of
    the unevaluated items ``U`` and ``v = Sigma_U 1``. It is the variance of
    ``R`` removed by evaluating ``A`` (``Var(R|C) - Var(R|C, s_A)``); the
    expected information gain ``-1/2 log(1 - beta(A) / Var(R|C))`` is monotone
    in it.

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        Full scores of the reference models; finite.
    coreset : array_like of int, shape (n,), optional
        Items already evaluated on the target model (default none).
    observed : array_like, shape (n,) or (N,), optional
        Target scores on ``coreset`` (in the order given), or a full target
        score vector of length ``N`` from which the coreset entries are read.
        ``beta`` does not depend on them; they give the posterior estimate in
        ``Result.extra``.
    k : int
        Batch size, ``1 <= k <= |U|``.
    alpha, beta : float
        Prior hyper-parameters (``> 0``).
    sigma2 : float
        Noise variance (``> 0``).
    tol : float, optional
        Bucketing tolerance (default None: only identical reference vectors share a bucket).
    kernel : {"se", "matern32"}
    N0 : int
        Margin of the unique regime (for the reported estimate).

    Notes
    -----
    ``beta`` depends on ``A`` only through the count vector ``c_b`` of items
    taken per bucket, so exact search may enumerate count vectors, and the
    mixed-integer statement (:meth:`linear_model`, a quadratic objective) keeps
    only ``min(k, unevaluated items)`` interchangeable copies per bucket.
    """

    sense = "max"
    quadratic_statement: ClassVar[bool] = True
    not_linear_reason: ClassVar[str | None] = (
        "beta(A) = (1/N^2) v_A^T Sigma_U[A,A]^{-1} v_A is a ratio of quadratic forms; its mixed-integer statement "
        "is the l0-constrained QP min w^T Sigma_U w - 2 w^T v / N s.t. ||w||_0 <= k (a quadratic objective), "
        "not a linear program"
    )

    def __init__(self, reference_scores: Any, *, coreset: Any = None, observed: Any = None, k: int,
                 alpha: float = 1.0, beta: float = 1.0, sigma2: float = 1e-4, tol: float | None = None,
                 kernel: str = "se", N0: int = 10) -> None:
        coreset = _batch_iv(reference_scores, coreset, observed, alpha, sigma2, tol)
        self.alpha = check_float(alpha, "alpha", low=0.0, low_open=True)
        self.beta = check_float(beta, "beta", low=0.0, low_open=True)
        self.model = BayesModel(reference_scores, sigma2=sigma2, tol=tol, kernel=kernel)
        self._R = np.ascontiguousarray(as_array(reference_scores, "reference_scores", ndim=2))
        self._R.setflags(write=False)
        N = self.model.N
        raw = np.zeros(0, dtype=np.int64) if coreset is None else np.asarray(coreset)
        if raw.size and raw.ndim != 1:
            raise InvalidInputError(f"coreset: expected a 1-D array of item indices, got shape {raw.shape}")
        order_in = raw.astype(np.int64) if raw.size else np.zeros(0, dtype=np.int64)
        C = check_selection(raw, N, "coreset")
        if C.size >= N:
            raise InvalidInputError(
                f"coreset: expected fewer than N = {N} items (some must remain unevaluated), got {C.size}"
            )
        self._C = C
        self._C.setflags(write=False)
        if observed is None:
            obs = None
        else:
            o = as_array(observed, "observed", ndim=1, shape_doc=f"(n,) = ({C.size},) or (N,) = ({N},)")
            if o.size == N and C.size != N:
                obs = o[C]
            elif o.size == C.size:
                obs = o[np.argsort(order_in, kind="stable")] if C.size else o
            else:
                raise InvalidInputError(
                    f"observed: target scores must match the coreset ({C.size} items) or the reference item count "
                    f"N = {N}; got {o.size} scores"
                )
        self._obs = obs
        nU = N - C.size
        self.k = check_int(k, "k", low=1, high=nU, low_doc="1",
                           high_doc=f"the number of unevaluated items |U| = N - |coreset| = {nU}")
        self.N0 = check_int(N0, "N0", low=0)
        post = self.model.posterior(C, obs, alpha=self.alpha, beta=self.beta)
        self.posterior = post
        sizes = self.model.buckets.sizes
        r = (sizes - post.counts).astype(float)
        self.var_R = self.model.var_R(post.cov @ r, post.counts)
        self.data = BatchData.from_posterior(self.model, post.cov, post.counts, C, self.k)
        self._inU = np.ones(N, bool)
        self._inU[C] = False

    # ------------------------------------------------------------------ data
    @property
    def n_items(self) -> int:
        return self.model.N

    @property
    def reference_scores(self) -> np.ndarray:
        return self._R

    @property
    def coreset(self) -> np.ndarray:
        return self._C

    @property
    def unevaluated(self) -> np.ndarray:
        return self.data.items

    @property
    def buckets(self) -> Buckets:
        return self.model.buckets

    def get_params(self) -> dict[str, Any]:
        return {
            "reference_scores": self._R,
            "coreset": self._C,
            "observed": self._obs,
            "k": self.k,
            "alpha": self.alpha,
            "beta": self.beta,
            "sigma2": self.model.sigma2,
            "tol": self.model.buckets.tol,
            "kernel": self.model.kernel,
            "N0": self.N0,
        }

    # ---------------------------------------------------------------- oracle
    def _bucket_ids(self, S: np.ndarray) -> np.ndarray:
        """Full-model bucket labels of the selected items."""
        return self.model.buckets.labels[S]

    def sigma_U(self, items: Any) -> np.ndarray:
        """Posterior covariance of the scores of ``items``: ``(H Sigma|C H^T + D)[items, items]``, shape (k, k)."""
        S = np.asarray(items, dtype=np.int64)
        b = self._bucket_ids(S)
        M = self.posterior.cov[np.ix_(b, b)] + np.diag(self.model.noise[b])
        return M

    def v(self, items: Any) -> np.ndarray:
        """``v_i = sum_{j in U} Sigma_U[i, j]`` of ``items``, shape (k,)."""
        S = np.asarray(items, dtype=np.int64)
        b = self._bucket_ids(S)
        sizes = self.model.buckets.sizes
        r = (sizes - self.posterior.counts).astype(float)
        return (self.posterior.cov[b] @ r) + self.model.noise[b]

    def evaluate(self, selection: Any) -> float:
        """``beta(A) = (1/N^2) v_A^T Sigma_U[A, A]^{-1} v_A`` (0 for an empty selection).

        Items of the coreset enter the same formula (their posterior predictive
        covariance); :meth:`check` marks such a selection infeasible.
        """
        S = self.as_selection(selection)
        if S.size == 0:
            return 0.0
        M = self.sigma_U(S)
        a = self.v(S)
        L = np.linalg.cholesky(M)
        y = solve_triangular(L, a, lower=True, check_finite=False)
        return float(y @ y) / self.model.N ** 2

    def information_gain(self, selection: Any) -> float:
        """Expected information gain ``-1/2 log(1 - beta(A) / Var(R|C))``."""
        b = self.evaluate(selection)
        if self.var_R <= 0:
            return 0.0
        return float(-0.5 * math.log1p(-min(b / self.var_R, 1.0 - 1e-15)))

    def check(self, selection: Any) -> Check:
        S = self.as_selection(selection)
        reasons = []
        if S.size != self.k:
            reasons.append(f"{S.size} items selected, k = {self.k} required")
        inC = S[~self._inU[S]]
        if inC.size:
            reasons.append(f"{inC.size} selected items are already in the coreset (e.g. item {int(inC[0])})")
        return Check.from_reasons(reasons)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self.data.items, size=self.k, replace=False))

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(self.data.items.tolist(), self.k):
            yield np.asarray(c, dtype=np.int64)

    def n_selections(self) -> int:
        return math.comb(int(self.data.items.size), self.k)

    def initial_selection(self) -> np.ndarray:
        """The greedy batch (:meth:`BatchData.greedy`): the exact backends' default warm start."""
        return self.data.to_items(self.data.greedy()[0])

    # ------------------------------------------------------ quadratic model
    #: ``linear_model(model=...)``: ``"miqp"`` (the quadratic statement), ``"oa"`` (its perspective
    #: outer approximation, lazy rows) or ``"auto"`` (``"oa"`` for consumers of lazy rows, else ``"miqp"``).
    model_options: ClassVar[dict[str, tuple[str, ...]]] = {"model": ("auto", "miqp", "oa")}

    def linear_model(self, *, allow_lazy: bool = False, model: str = "auto", **options: Any) -> LinearModel:
        """The batch problem as a mixed-integer program over the bucket copies.

        Two statements of the same problem (both exact; see :meth:`_miqp_model`
        and :meth:`_oa_model`):

        ``"miqp"``
            A mixed-integer quadratic program (``LinearModel.Q`` set): what MPS
            export and Pyomo get.
        ``"oa"``
            Its perspective reformulation's outer approximation: a linear
            master (selection binaries and one objective column) whose cuts
            are generated on demand (``LinearModel.lazy``): what ``"scip"``
            gets (``"auto"`` with a consumer of lazy rows).

        Parameters
        ----------
        allow_lazy : bool
            The consumer separates lazy rows (``"oa"`` needs it).
        model : {"auto", "miqp", "oa"}
        **options
            None other are defined; any is refused.

        Returns
        -------
        LinearModel
        """
        self.check_model_options({"model": model, **options})
        if model == "auto":
            model = "oa" if allow_lazy else "miqp"
        if model == "oa" and not allow_lazy:
            raise InvalidInputError(
                "model: 'oa' generates its cuts on demand, which this consumer (MPS export or Pyomo) cannot do; "
                "use model='miqp'"
            )
        return self._oa_model() if model == "oa" else self._miqp_model()

    def _copies(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bucket copies: bucket of each copy, its rank within the bucket and its item, each shape (n,).

        Bucket ``b`` keeps ``min(k, avail_b)`` copies, its lowest-index unevaluated items.
        """
        d = self.data
        copies = np.minimum(d.avail, d.k)
        bcol = np.repeat(np.arange(d.n_buckets), copies)
        first = np.concatenate([[0], np.cumsum(copies)[:-1]])
        pos = np.arange(bcol.size) - first[bcol]
        order = np.lexsort((d.items, d.labels))
        bucket_start = np.searchsorted(d.labels[order], np.arange(d.n_buckets))
        return bcol, pos, d.items[order[bucket_start[bcol] + pos]]

    @staticmethod
    def _order_rows(b: ModelBuilder, z: np.ndarray, pos: np.ndarray) -> None:
        """``z_{b,m} >= z_{b,m+1}``: a bucket's copies are taken in order (no symmetric duplicates)."""
        later = np.flatnonzero(pos > 0)
        if later.size:
            rows = np.arange(later.size)
            b.add_rows("order", rows=np.concatenate([rows, rows]), cols=np.concatenate([z[later - 1], z[later]]),
                       vals=np.concatenate([np.ones(later.size), -np.ones(later.size)]), lb=np.zeros(later.size))

    def _miqp_model(self) -> LinearModel:
        """The batch problem as a mixed-integer quadratic program (count-vector form).

        Items of one bucket are interchangeable, so each live bucket ``b`` keeps
        ``m_b = min(k, avail_b)`` copies (its lowest-index unevaluated items).
        With ``z`` the selection binaries of the copies and ``w`` their weights
        in the linear predictor of ``R`` (``w = N^{-1} Sigma_AA^{-1} v_A`` at the
        optimum)::

            min  sum_j g_j^2 + sum_i D_i w_i^2 - (2/N) sum_i v_i w_i       (= -beta(A) at the optimum)
            s.t. sum_i z_i = k,   z_{b,m} >= z_{b,m+1}                     (copies taken in order)
                 -M_i z_i <= w_i <= M_i z_i                                 (w_i = 0 unless selected)
                 g = G H^T w,   |g_j| <= sqrt(Var(R|C))

        where ``Sigma|C = G^T G`` over the live buckets (eigen-decomposition,
        null directions dropped), ``H`` maps copies to buckets and ``D_i`` is
        the copy's noise ``sigma^2 N_b``: ``w^T Sigma_U w = ||G H^T w||^2 + sum D_i w_i^2``.
        For a fixed support ``A`` the minimum over ``w`` is ``-beta(A)``, so the
        optimum of the program is ``-max beta`` (``objective_sign = -1``). The
        quadratic part is diagonal, and the noise squares ``D_i w_i^2`` belong to
        columns switched off by binaries (perspective-ready).

        The bounds are valid at every support's optimum, so no optimum is cut
        off: ``w^T Sigma_AA w = beta(A) <= Var(R|C)`` gives
        ``|g_j| <= sqrt(Var(R|C))`` and ``w_i^2 <= beta(A) (Sigma_AA^{-1})_ii
        <= Var(R|C) (Sigma_U^{-1})_ii`` (conditioning on more items lowers a
        conditional variance), with ``(Sigma_U^{-1})_ii = (d_b - Pi_bb) / d_b^2``,
        ``d_b = sigma^2 N_b`` and ``Pi`` the posterior covariance of the bucket
        abilities given every unevaluated item.

        Returns
        -------
        LinearModel
            Blocks ``z`` (selection, one column per copy), ``w``, ``g``; rows
            ``card``, ``order``, ``on_upper``, ``on_lower``, ``factor``;
            ``Q`` diagonal.
        """
        d = self.data
        Bu, k, N = d.n_buckets, d.k, d.N
        bcol, pos, copy_items = self._copies()
        n = bcol.size
        var_R = max(float(self.var_R), 1e-300)
        # w bounds: sqrt(Var(R|C) (Sigma_U^{-1})_ii)
        noise = d.noise
        Pi = d.S - d.S @ np.linalg.solve(d.S + np.diag(noise / d.avail), d.S)
        inv_diag = (noise - np.diag(Pi)) / noise ** 2
        inv_diag = np.clip(inv_diag, 1.0 / (np.diag(d.S) + noise), 1.0 / noise)
        M = np.sqrt(var_R * inv_diag) * (1.0 + 1e-6) + 1e-12
        # Sigma|C = G^T G
        lam, V = np.linalg.eigh(0.5 * (d.S + d.S.T))
        keep = lam > 1e-13 * max(float(lam.max()), 1e-300)
        G = (V[:, keep] * np.sqrt(lam[keep])).T  # (r, Bu)
        r = G.shape[0]
        gmax = math.sqrt(var_R) * (1.0 + 1e-6) + 1e-12
        b = ModelBuilder("bayes_batch_miqp")
        z = b.add_vars("z", n, lb=0, ub=1, integer=True)
        w = b.add_vars("w", n, lb=-M[bcol], ub=M[bcol], cost=-(2.0 / N) * d.v[bcol])
        g = b.add_vars("g", r, lb=-gmax, ub=gmax)
        b.add_cardinality("card", z, k)
        self._order_rows(b, z, pos)
        rows = np.arange(n)
        b.add_rows("on_upper", rows=np.concatenate([rows, rows]), cols=np.concatenate([w, z]),
                   vals=np.concatenate([np.ones(n), -M[bcol]]), ub=np.zeros(n))
        b.add_rows("on_lower", rows=np.concatenate([rows, rows]), cols=np.concatenate([w, z]),
                   vals=np.concatenate([np.ones(n), M[bcol]]), lb=np.zeros(n))
        GH = G[:, bcol]  # (r, n)
        jj, ii = np.nonzero(GH)
        b.add_rows("factor", rows=np.concatenate([np.arange(r), jj]), cols=np.concatenate([g, w[ii]]),
                   vals=np.concatenate([np.ones(r), -GH[jj, ii]]), lb=np.zeros(r), ub=np.zeros(r))
        b.add_quadratic_objective(g, g, 2.0)
        b.add_quadratic_objective(w, w, 2.0 * noise[bcol])
        return b.build(selection_block="z", selection_items=copy_items, objective_sign=-1,
                       meta={"variant": "miqp-counts", "copies": n, "rank": r, "buckets": Bu})

    def _oa_model(self) -> LinearModel:
        """The perspective outer approximation of the batch problem: a linear master with lazy cuts.

        With ``n_b`` the copies taken from bucket ``b`` (a sum of selection
        binaries), ``-beta`` is the value of the convex function

            f(n) = min_W  W' S W + sum_b D_b W_b^2 / n_b - (2/N) v' W     (W_b = 0 where n_b = 0)

        (``S = Sigma|C`` over the live buckets, ``D_b = sigma^2 N_b``: the
        perspective of the noise squares), and for *every* ``W'``

            f(n) >= -W'' S W' - sum_b n_b (v_b/N - (S W')_b)^2 / D_b          (a cut, linear in n)

        with equality at ``n`` when ``W'`` is the minimiser at ``n``
        (``S`` positive semi-definite: ``W'SW >= 2 W''SW - W''SW'``, then the
        minimum over each ``W_b`` is in closed form). The master is::

            min  t / s    s.t.  sum_i z_i = k,  z_{b,m} >= z_{b,m+1},
                                t + s sum_i c_{b(i)} z_i >= s c_0          (every cut generated)

        ``s`` (the inverse of the greedy batch's ``beta``) puts ``t`` in units
        of the objective's size, so SCIP's absolute tolerances act relative
        to it. Cuts are separated at every point SCIP asks about (fractional
        LP solutions too): the tangent at the point's count vector. Because
        any ``W'`` gives a valid cut, an inexact linear solve only weakens a
        cut, never makes it cut off a solution; at a 0/1 point the tangent is
        exact, so the master's optimum is the batch problem's. Two cuts are
        stated up front: at the greedy batch and at the uniform count vector.

        Returns
        -------
        LinearModel
            Blocks ``z`` (selection, one column per copy) and ``t`` (one
            column); rows ``card``, ``order``, ``oa0``; ``lazy`` the cut
            generator.
        """
        d = self.data
        bcol, pos, copy_items = self._copies()
        n = bcol.size
        gb, greedy = d.greedy()
        var_R = max(float(self.var_R), 0.0)
        s = 1.0 / greedy if greedy > 0 else 1.0 / max(var_R, 1e-300)
        b = ModelBuilder("bayes_batch_oa")
        z = b.add_vars("z", n, lb=0, ub=1, integer=True)
        t = b.add_vars("t", 1, lb=-s * var_R * (1.0 + 1e-6) - 1e-9, ub=0.0, cost=1.0 / s)
        b.add_cardinality("card", z, d.k)
        self._order_rows(b, z, pos)
        cuts = _BatchOACuts(d, bcol, z, int(t[0]), s)
        points = [np.bincount(gb, minlength=d.n_buckets).astype(float)]
        m = np.minimum(d.avail, d.k).astype(float)
        points.append(m * (d.k / m.sum()))
        block = cuts.rows_at(points)
        b.add_rows("oa0", rows=block.rows, cols=block.cols, vals=block.vals, lb=block.lb)
        return b.build(selection_block="z", selection_items=copy_items, objective_sign=-1, lazy=cuts,
                       meta={"variant": "oa-counts", "copies": n, "buckets": d.n_buckets, "objective_scale": s})

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {
            "var_R": self.var_R,
            "n_buckets": self.model.B,
            "unique_regime": self.model.buckets.unique_regime(self.N0),
        }
        S = np.asarray(selection)
        if S.size:
            out["information_gain"] = self.information_gain(S)
            out["var_R_after"] = max(self.var_R - self.evaluate(S), 0.0)
        if self._obs is not None:
            p = self.posterior
            total = float(self._obs.sum())
            out["estimate"] = self.model.estimate(p.mean, p.counts, total, self._C.size, self.N0)
        return out

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[Formulation]:
        rng = np.random.default_rng(seed)
        Rb = rng.integers(0, 2, size=(3, 11)).astype(float)  # 3 binary references: repeated buckets
        Rc = rng.uniform(size=(4, 9))
        C1 = np.array([0, 5])
        return [
            cls(Rb, coreset=C1, observed=rng.integers(0, 2, 2).astype(float), k=3),
            cls(Rc, coreset=[2], observed=[0.4], k=2, alpha=0.5, beta=2.0, sigma2=1e-2),
            cls(Rc, k=3, tol=0.25, kernel="matern32"),
        ]
