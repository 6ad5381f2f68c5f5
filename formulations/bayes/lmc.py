"""The multi-target BayesAME model: a linear model of coregionalisation (LMC) over the targets, its negative
log marginal likelihood and gradient, and the AdamW fit of its parameters."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve
from scipy.linalg.lapack import dpotrf, dpotri

from ..core.validation import check_choice
from .model import (
    _kernel,
    _kernel_dlogbeta,
)

__all__ = ["LMCObjective", "LMCParams", "default_kernels", "lmc_nll"]

#: Lower bound of ``alpha_l``, ``beta_l`` and ``sigma^2`` after each AdamW step (paper Appendix A.4).
LMC_LOWER = 1e-4


def default_kernels(L: int) -> tuple[str, ...]:
    """Half squared-exponential, half Matern-3/2 (the extra one squared-exponential when ``L`` is odd)."""
    n_se = (L + 1) // 2
    return ("se",) * n_se + ("matern32",) * (L - n_se)


# ============================================================= parameters
@dataclass
class LMCParams:
    """Hyper-parameters of the coregionalised prior.

    Attributes
    ----------
    alpha, beta : ndarray, shape (L,)
        Scale and inverse length of each latent kernel.
    W : ndarray, shape (L, Kt)
        Weight of latent vector ``l`` in target ``t``.
    sigma2 : float
        Noise variance (an item of bucket ``b`` has variance ``N_b sigma2``).
    """

    alpha: np.ndarray
    beta: np.ndarray
    W: np.ndarray
    sigma2: float

    def vector(self) -> np.ndarray:
        return np.concatenate([self.alpha, self.beta, self.W.ravel(), [self.sigma2]])

    @classmethod
    def from_vector(cls, x: np.ndarray, L: int, Kt: int) -> LMCParams:
        return cls(x[:L].copy(), x[L:2 * L].copy(), x[2 * L:2 * L + L * Kt].reshape(L, Kt).copy(), float(x[-1]))

    def cross(self) -> np.ndarray:
        """``C[l, t, t'] = W[l, t] W[l, t']``, shape (L, Kt, Kt)."""
        return self.W[:, :, None] * self.W[:, None, :]


def _kernels(sqdist: np.ndarray, p: LMCParams, kernels: Sequence[str], Kr: int) -> np.ndarray:
    """``Sigma_l`` on the given squared distances, shape (L,) + sqdist.shape."""
    return np.stack([_kernel(sqdist, float(p.alpha[l]), float(p.beta[l]), Kr, kernels[l]) for l in range(len(kernels))])


#: The cell form of the likelihood (see :class:`LMCObjective`) is used while its ``Kt^2 u^2`` cells are at most
#: this many times the ``m^2`` observation pairs (below the break-even point of the two forms).
GRID_FACTOR = 12.0


class LMCObjective:
    """Negative log marginal likelihood of fixed observations under the coregionalised prior (the fit's objective).

    ``1/2 r' K^{-1} r + 1/2 log|K|`` (without ``2 pi``) with
    ``K[o, o'] = sum_l W[l, t_o] W[l, t_o'] Sigma_l[b_o, b_o'] + [o = o'] N_{b_o} sigma2`` and
    ``r = s - mu_b``. Everything that depends only on the observations (pair indices) is computed once,
    so that an optimiser can call it many times.

    Two equivalent evaluations (same value and gradient up to rounding):

    * ``"cells"``: the prior covariance of every (target, bucket) cell pair,
      ``sum_l (W_l W_l') (x) Sigma_l``, shape ``(Kt^2, u^2)``, is one matrix
      product ``C (Kt^2, L) @ Sigma (L, u^2)``; ``K`` is one gather from it, and
      the gradient contracts ``K^{-1} - a a'`` summed into the cells (one
      ``bincount``) with ``Sigma_l`` and ``d Sigma_l / d beta_l`` (one more
      product). ``O(m^3 + L Kt^2 u^2)`` per call, mostly in BLAS.
    * ``"pairs"``: per latent vector, the kernel gathered to the ``m x m``
      observation pairs (``O(m^3 + L m^2)`` elementwise work); used when the
      cells would outnumber the pairs by more than :data:`GRID_FACTOR` (many
      buckets with few observations each).

    Parameters
    ----------
    kernels : sequence of str, length L
    Kr : int
        Number of reference models (the squared-exponential kernel divides by it).
    sqdist : ndarray, shape (u, u)
        Squared distances between the bucket vectors that the observations fall in.
    pos : ndarray of int, shape (m,)
        Index of each observation's bucket in ``sqdist``.
    t_obs : ndarray of int, shape (m,)
        Target of each observation, in ``0..Kt-1``.
    size_obs : ndarray, shape (m,)
        ``N_b`` of each observation's bucket.
    resid : ndarray, shape (m,)
        ``s_o - mu_{b_o}``.
    Kt : int
        Number of targets (columns of ``W``).
    form : {"auto", "cells", "pairs"}
    """

    def __init__(self, kernels: Sequence[str], Kr: int, sqdist: np.ndarray, pos: np.ndarray, t_obs: np.ndarray,
                 size_obs: np.ndarray, resid: np.ndarray, Kt: int, form: str = "auto") -> None:
        self.kernels = tuple(kernels)
        self.L = len(self.kernels)
        self.Kr, self.Kt = int(Kr), int(Kt)
        self.sqdist = np.asarray(sqdist, dtype=float)
        self.pos = np.asarray(pos, dtype=np.int64).ravel()
        self.t_obs = np.asarray(t_obs, dtype=np.int64).ravel()
        self.size_obs = np.asarray(size_obs, dtype=float).ravel()
        self.resid = np.asarray(resid, dtype=float).ravel()
        m, u = self.resid.size, self.sqdist.shape[0]
        self.m, self.u = m, u
        if form == "auto":
            form = "cells" if Kt * Kt * u * u <= GRID_FACTOR * m * m else "pairs"
        self.form = form
        if form == "cells":  # (t_o, t_o', b_o, b_o') -> index into (Kt, Kt, u, u)
            c = self.t_obs * (Kt * u * u) + self.pos * u  # row part
            d = self.t_obs * (u * u) + self.pos  # column part
            self.flat = c[:, None] + d[None, :]
        else:  # observation pair -> bucket pair
            self.flat = self.pos[:, None] * u + self.pos[None, :]

    @property
    def n_params(self) -> int:
        return 2 * self.L + self.L * self.Kt + 1

    def _factor(self, K: np.ndarray) -> np.ndarray | None:
        """Lower Cholesky factor of ``K`` (overwritten), or None when ``K`` is not positive definite."""
        c, info = dpotrf(K.T, lower=1, clean=1, overwrite_a=1)  # K is symmetric: K.T is its Fortran-ordered view
        return c if info == 0 else None

    def _inverse(self, c: np.ndarray) -> np.ndarray:
        """``K^{-1}`` (full, symmetric) from the lower Cholesky factor ``c``, shape (m, m)."""
        inv, info = dpotri(c, lower=1, overwrite_c=1)  # the lower triangle; the upper one stays 0 (clean=1)
        if info != 0:  # pragma: no cover - c came from a successful dpotrf
            raise np.linalg.LinAlgError(f"dpotri failed ({info})")
        full = inv + inv.T
        full[np.diag_indices(self.m)] -= np.diagonal(inv)  # 2d - d = d exactly
        return full

    def __call__(self, p: LMCParams, gradient: bool = False) -> float | tuple[float, np.ndarray]:
        """Value, or ``(value, gradient)`` with the gradient in the order of :meth:`LMCParams.vector`."""
        L, Kt, u, m = self.L, self.Kt, self.u, self.m
        Su = _kernels(self.sqdist, p, self.kernels, self.Kr)  # (L, u, u)
        if self.form == "cells":
            Cf = p.cross().reshape(L, Kt * Kt)  # (L, Kt^2)
            Kc = Cf.T @ Su.reshape(L, u * u)  # (Kt^2, u^2): prior covariance of every cell pair
            K = np.take(Kc.ravel(), self.flat)
        else:
            w = p.W[:, self.t_obs]  # (L, m)
            S = np.take(Su.reshape(L, u * u), self.flat.ravel(), axis=1).reshape(L, m, m)
            K = (S * (w[:, :, None] * w[:, None, :])).sum(axis=0)
        K[np.diag_indices(m)] += p.sigma2 * self.size_obs
        c = self._factor(K)
        if c is None or not np.all(np.isfinite(c)):
            return (math.inf, np.zeros(self.n_params)) if gradient else math.inf
        a = cho_solve((c, True), self.resid, check_finite=False)
        val = 0.5 * float(self.resid @ a) + float(np.sum(np.log(np.diag(c))))
        if not gradient:
            return val
        Gm = self._inverse(c)
        Gm -= np.outer(a, a)  # d nll / d K = Gm / 2
        dSu = np.stack([_kernel_dlogbeta(self.sqdist, Su[l], float(p.beta[l]), self.Kr, self.kernels[l])
                        / p.beta[l] for l in range(L)])  # d Sigma_l / d beta_l, (L, u, u)
        if self.form == "cells":
            Mg = np.bincount(self.flat.ravel(), weights=Gm.ravel(), minlength=Kt * Kt * u * u)
            Y = Mg.reshape(Kt * Kt, u * u) @ np.concatenate([Su, dSu]).reshape(2 * L, u * u).T  # (Kt^2, 2L)
            Ya = Y[:, :L].T  # (L, Kt^2): sum_{o: t_o = s, o': t_o' = t} Gm[o, o'] Sigma_l[b_o, b_o']
            Yb = Y[:, L:].T
            g_alpha = 0.5 * np.sum(Cf * Ya, axis=1) / p.alpha  # Sigma_l is proportional to alpha_l
            g_beta = 0.5 * np.sum(Cf * Yb, axis=1)
            g_W = np.einsum("lst,lt->ls", Ya.reshape(L, Kt, Kt), p.W)  # Ya is symmetric in (s, t)
        else:
            g_alpha = np.empty(L)
            g_beta = np.empty(L)
            g_W = np.zeros((L, Kt))
            for l in range(L):
                v = (Gm * S[l]) @ w[l]  # (Gm o Sigma_l) w
                g_alpha[l] = 0.5 * float(w[l] @ v) / p.alpha[l]
                dS = np.take(dSu[l].ravel(), self.flat)
                g_beta[l] = 0.5 * float(w[l] @ ((Gm * dS) @ w[l]))
                g_W[l] = np.bincount(self.t_obs, weights=v, minlength=Kt)  # 1/2 * 2 sum_{o: t_o = t} (G o S w)_o
        g_sigma2 = 0.5 * float(np.sum(np.diag(Gm) * self.size_obs))
        return val, np.concatenate([g_alpha, g_beta, g_W.ravel(), [g_sigma2]])


def lmc_nll(p: LMCParams, kernels: Sequence[str], Kr: int, sqdist: np.ndarray, pos: np.ndarray, t_obs: np.ndarray,
            size_obs: np.ndarray, resid: np.ndarray, *, gradient: bool = False, form: str = "auto"
            ) -> float | tuple[float, np.ndarray]:
    """Negative log marginal likelihood of observations under the coregionalised prior (without ``2 pi``).

    ``1/2 r' K^{-1} r + 1/2 log|K|`` with ``K[o, o'] = sum_l W[l, t_o] W[l, t_o'] Sigma_l[b_o, b_o'] +
    [o = o'] N_{b_o} sigma2`` and ``r = s - mu_b`` (one call of :class:`LMCObjective`).

    Parameters
    ----------
    p : LMCParams
    kernels, Kr, sqdist, pos, t_obs, size_obs, resid
        As for :class:`LMCObjective` (``Kt`` is read from ``p.W``).
    gradient : bool
        Also return the gradient in the order of :meth:`LMCParams.vector`.
    form : {"auto", "cells", "pairs"}
        Evaluation route of :class:`LMCObjective` (same numbers up to rounding).

    Returns
    -------
    float, or (float, ndarray of shape (2L + L Kt + 1,))
    """
    check_choice(form, "form", ("auto", "cells", "pairs"))
    obj = LMCObjective(kernels, Kr, sqdist, pos, t_obs, size_obs, resid, p.W.shape[1], form)
    return obj(p, gradient)


def _adamw(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, lower: np.ndarray, steps: int,
           lr: float, weight_decay: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
           ) -> tuple[np.ndarray, float, float]:
    """AdamW (decoupled weight decay, Loshchilov & Hutter) from ``x0``, clipped below at ``lower`` after each step.

    Returns the best point seen (never worse than ``x0``), its value and the value at ``x0``.
    """
    x = np.maximum(x0.astype(float), lower)
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    f0, g = fun(x)
    best_x, best_f = x.copy(), f0
    b1, b2 = betas
    for t in range(1, steps + 1):
        if not np.all(np.isfinite(g)):
            break
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        vhat = v / (1 - b2 ** t)
        x = x * (1.0 - lr * weight_decay) - lr * mhat / (np.sqrt(vhat) + eps)
        x = np.maximum(x, lower)
        f, g = fun(x)
        if f < best_f:
            best_x, best_f = x.copy(), f
    return best_x, best_f, f0
