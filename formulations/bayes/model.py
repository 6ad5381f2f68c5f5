"""BayesAME's bucket model: buckets of identical reference vectors, the Gaussian-process prior over them, the
posterior and the marginal-likelihood fit of its hyper-parameters (the statistical model behind
:class:`benchsel.formulations.bayes.BatchInformationGain` and the sequential evaluators).

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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular
from scipy.linalg.lapack import dpotri
from scipy.optimize import minimize

from ..core.errors import InvalidInputError
from ..core.validation import (
    as_array,
    check_choice,
    check_float,
)

__all__ = [
    "HYPER_LOWER",
    "HYPER_UPPER",
    "KERNELS",
    "Z975",
    "BayesModel",
    "Buckets",
    "PosteriorSummary",
    "bucketize",
    "check_references",
    "check_tol",
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


def check_references(reference_scores: Any) -> np.ndarray:
    """The reference scores as a finite float array of at least 1 reference model and 2 items, shape (Kr, N)
    (the one check of every BayesAME entry point that takes them)."""
    R = as_array(reference_scores, "reference_scores", ndim=2, shape_doc="(Kr, N)")
    if R.shape[0] < 1 or R.shape[1] < 2:
        raise InvalidInputError(
            f"reference_scores: expected at least 1 reference model and 2 items, shape (Kr, N), got shape {R.shape}"
        )
    return R


def check_tol(tol: Any) -> float | None:
    """The bucketing tolerance: None or a float ``> 0``."""
    return None if tol is None else check_float(tol, "tol", low=0.0, low_open=True)


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
    return _group_items(check_references(reference_scores), check_tol(tol))


def _group_items(R: np.ndarray, tol: float | None) -> Buckets:
    """:func:`bucketize` of arguments already checked (:func:`check_references`, :func:`check_tol`).

    Parameters
    ----------
    R : ndarray of float, shape (Kr, N)
    tol : float or None
    """
    if tol is not None:
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
        self._setup(bucketize(reference_scores, tol), check_float(sigma2, "sigma2", low=0.0, low_open=True),
                    check_choice(kernel, "kernel", KERNELS))

    @classmethod
    def _from_checked(cls, buckets: Buckets, *, sigma2: float, kernel: str) -> BayesModel:
        """The model of buckets formed by :func:`bucketize`, ``sigma2 > 0`` and ``kernel`` in :data:`KERNELS`
        checked by the caller's own entry point (an evaluator's settings, a formulation's or an estimator's
        options): nothing is checked again."""
        model = cls.__new__(cls)
        model._setup(buckets, float(sigma2), kernel)
        return model

    def _setup(self, buckets: Buckets, sigma2: float, kernel: str) -> None:
        self.buckets = buckets
        self.sigma2 = sigma2
        self.kernel = kernel
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
