"""HoloCosm's risk terms: the per-(model, metric) and per-(pair, metric) weights of the mean and ranking risks, and the
formulation's argument checks.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    as_array,
    check_allocation,
    check_float,
    check_magnitude,
)

#: Absolute tolerance of the ranking constraint: feasible when ``R_rank <= eps + FEAS_TOL`` (plus the
#: accuracy of ``R_rank`` in floating point, :func:`rank_tolerance`, where the pair weights are large).
FEAS_TOL = 1e-9
#: Multiple of the unit roundoff in :func:`rank_tolerance`'s bound on one model-mean error.
ROUNDOFF_FACTOR = 4.0


def rank_tolerance(pair_w: np.ndarray, lam: float, xmax: float) -> float:
    """The ranking constraint's tolerance: :data:`FEAS_TOL` plus a bound on the floating-point error of
    ``R_rank = sum_g w_g (max(-D_g, 0) + lam max(-(D_g + d_g), 0))``.

    Each ``D_g`` (a difference of two model-mean errors) is computed to about ``ROUNDOFF_FACTOR * u *
    xmax`` (``u`` the unit roundoff, ``xmax`` the largest ``|response|``), so ``R_rank`` to about
    ``ROUNDOFF_FACTOR * u * xmax * (1 + lam) * sum_g w_g``. With pair weights near 1 this is far below
    ``FEAS_TOL``; near-tied models give weights up to 1e9, and then ``R_rank`` is known only to about
    1e-7: a check at ``1e-9`` would decide feasibility by rounding noise (the exact statement and its
    floating-point evaluation disagreed by 3e-8 at an optimum whose risk equals ``eps``).

    Parameters
    ----------
    pair_w : ndarray, shape (G,)
    lam : float
    xmax : float
    """
    u = float(np.finfo(float).eps)
    return FEAS_TOL + ROUNDOFF_FACTOR * u * float(xmax) * (1.0 + float(lam)) * float(np.abs(pair_w).sum())


# --------------------------------------------------------------------------- risk terms
@dataclass(frozen=True, eq=False)
class RiskTerms:
    """The two risks as weighted sums over (model, metric) entries and model pairs.

    With ``E = muhat - mu`` flattened to shape ``(M*K,)`` (index ``m*K + k``)::

        R_mean = sum_i mean_w[i] * |E[i]|
        D_g    = E[pair_a[g]] - E[pair_b[g]]          (= dhat - d)
        R_rank = sum_g pair_w[g] * (max(0, -D_g) + lam * max(0, -(D_g + pair_d[g])))

    Attributes
    ----------
    mean_w : ndarray, shape (M*K,)
        Merged weight of each (model, metric) absolute error (0 for constant metrics).
    pair_a, pair_b : ndarray of int, shape (G,)
        Flat (model, metric) index of the better and the worse model of each pair.
    pair_k : ndarray of int, shape (G,)
        Metric of each pair.
    pair_d : ndarray, shape (G,)
        Full-benchmark margin ``d = mu[a, k] - mu[b, k] > 0``.
    pair_w : ndarray, shape (G,)
        Merged weight of each pair's loss.
    lam : float
        Reversal weight.
    """

    mean_w: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_k: np.ndarray
    pair_d: np.ndarray
    pair_w: np.ndarray
    lam: float

    def risks(self, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R_mean, R_rank)`` for errors ``E`` of shape ``(..., M*K)``; each result has shape ``(...)``."""
        r_mean = np.abs(E) @ self.mean_w
        if self.pair_w.size == 0:
            return r_mean, np.zeros_like(r_mean)
        D = E[..., self.pair_a] - E[..., self.pair_b]
        loss = np.maximum(-D, 0.0)
        if self.lam:
            loss += self.lam * np.maximum(-(D + self.pair_d), 0.0)
        return r_mean, loss @ self.pair_w


@dataclass(frozen=True, eq=False)
class _PoolTerms:
    """Per-pool quantities (for the literal per-pool MILP and for reports).

    mask : (P, M) bool — pool membership.
    scale : (P, K) — ``a[k](A)`` after the zero-scale rule (1 where inactive).
    active : (P, K) bool — metric not constant on the pool.
    mean_w : (P, M, K) — per-pool weight of ``|muhat - mu|``.
    pair_valid : (P, G) bool.
    pair_scale : (P, K) — median margin ``p[k](A)`` (nan without pairs).
    pair_w : (P, G) — per-pool weight of a pair's loss.
    """

    mask: np.ndarray
    scale: np.ndarray
    active: np.ndarray
    mean_w: np.ndarray
    pair_valid: np.ndarray
    pair_scale: np.ndarray
    pair_w: np.ndarray


def _pool_mask(M: int) -> np.ndarray:
    """Leave-one-source-out pools when ``M >= 4`` (pool ``p`` drops model ``p``), else one pool of all."""
    if M >= 4:
        return ~np.eye(M, dtype=bool)
    return np.ones((1, M), dtype=bool)


#: Model means of a metric closer than this times the metric's largest ``|response|`` are a tie: the
#: difference is the rounding noise of the means (e.g. the means of ``3e-9`` and ``1e-9 + 2e-9``), not a margin.
TIE_RTOL = 1e-12


def _tie_tolerance(X: np.ndarray) -> np.ndarray:
    """Per metric, the largest difference of model means that is a tie, shape (K,) (``X`` shape (M, N, K))."""
    return TIE_RTOL * np.abs(X).max(axis=(0, 1))


def _build_terms(X: np.ndarray, mu: np.ndarray, lam: float) -> tuple[RiskTerms, _PoolTerms]:
    """Scales, valid pairs and weights of the paper (X oriented, shape (M, N, K); mu shape (M, K)).

    Model means that differ by at most :data:`TIE_RTOL` times the metric's largest ``|response|``
    are equal here: such a pair is a tie (not a pair), and a pool whose means all tie gets the
    zero-scale rule. Without it, means equal in exact arithmetic but not in floating point (data
    ``1e-9`` apart, say) give margins of ``1e-25`` and weights of ``1e23``, and the problem would
    change with the unit of ``X``.
    """
    M, _, K = X.shape
    mask = _pool_mask(M)
    P = mask.shape[0]
    size = mask.sum(axis=1).astype(float)  # |A_p|
    # --- mean-risk scales with the zero-scale rule
    tie = _tie_tolerance(X)  # (K,): model means closer than this are equal (rounding noise of the means)
    mu_p = np.where(mask[:, :, None], mu[None, :, :], np.nan)
    scale = np.nanmax(mu_p, axis=1) - np.nanmin(mu_p, axis=1)  # (P, K)
    active = np.ones((P, K), dtype=bool)
    for p, k in zip(*np.nonzero(scale <= tie[None, :])):
        vals = X[mask[p], :, k]
        if vals.max() == vals.min():  # metric constant on the pool: contributes 0
            active[p, k] = False
            scale[p, k] = 1.0
        else:
            scale[p, k] = float(vals.std())
    mean_w_pool = (mask[:, :, None] & active[:, None, :]) / (P * K * size[:, None, None] * scale[:, None, :])
    # --- valid pairs (ties are not pairs), over all models; validity per pool
    ga, gb, gk = np.nonzero(mu[:, None, :] > mu[None, :, :] + tie[None, None, :])
    d = mu[ga, gk] - mu[gb, gk]
    valid = mask[:, ga] & mask[:, gb]  # (P, G)
    pscale = np.full((P, K), np.nan)
    for k in range(K):
        idx = np.flatnonzero(gk == k)
        if idx.size == 0:
            continue
        for p in range(P):
            dk = d[idx][valid[p, idx]]
            if dk.size:
                pscale[p, k] = float(np.median(dk))
    Q = valid.sum(axis=1)  # |Q(A_p)|
    with np.errstate(invalid="ignore", divide="ignore"):
        pw = np.where(valid, 1.0 / (P * np.maximum(Q, 1)[:, None] * pscale[:, gk]), 0.0)
    pair_w = pw.sum(axis=0)
    keep = pair_w > 0
    terms = RiskTerms(
        mean_w=mean_w_pool.sum(axis=0).ravel(),
        pair_a=(ga * K + gk)[keep].astype(np.int64),
        pair_b=(gb * K + gk)[keep].astype(np.int64),
        pair_k=gk[keep].astype(np.int64),
        pair_d=d[keep],
        pair_w=pair_w[keep],
        lam=float(lam),
    )
    pools = _PoolTerms(mask=mask, scale=scale, active=active, mean_w=mean_w_pool, pair_valid=valid[:, keep],
                       pair_scale=pscale, pair_w=pw[:, keep])
    for arr in (*(getattr(terms, n) for n in ("mean_w", "pair_a", "pair_b", "pair_k", "pair_d", "pair_w")),
                pools.mask, pools.scale, pools.active, pools.mean_w, pools.pair_valid, pools.pair_scale, pools.pair_w):
        arr.setflags(write=False)
    return terms, pools


def _orientation(orientation: Any, lower_is_better: Any, K: int) -> np.ndarray:
    """Sign per metric (+1 higher-is-better, -1 lower-is-better), shape (K,)."""
    if orientation is not None and lower_is_better is not None:
        raise InvalidInputError("orientation: give either orientation or lower_is_better, not both")
    if orientation is None and lower_is_better is None:
        return np.ones(K)
    if orientation is not None:
        o = as_array(orientation, "orientation", ndim=1, shape_doc=f"(K,) = ({K},)")
        if o.shape != (K,):
            raise InvalidInputError(f"orientation: expected one sign per metric, shape ({K},), got shape {o.shape}")
        if not np.isin(o, (-1.0, 1.0)).all():
            raise InvalidInputError(f"orientation: expected entries +1 (higher is better) or -1 (lower is better), "
                                    f"got values {np.unique(o)[:5].tolist()}")
        return o.astype(float)
    lib = np.asarray(lower_is_better)
    if lib.ndim == 0:
        lib = np.full(K, bool(lib))
    if lib.shape != (K,):
        raise InvalidInputError(f"lower_is_better: expected one flag per metric, shape ({K},), got shape {lib.shape}")
    if lib.dtype != bool and not np.isin(lib, (0, 1)).all():
        raise InvalidInputError(f"lower_is_better: expected booleans, got dtype {lib.dtype}")
    return np.where(lib.astype(bool), -1.0, 1.0)


def _ranking_risk_iv(X: Any, budget: Any, retention: Any, bank_size: Any, lam: Any) -> None:
    """Checks of :class:`RankingRiskReconstruction`'s arguments that its constructor does not make (pure).

    ``X`` real with magnitudes whose squares stay below :data:`MAX_MAGNITUDE`;
    ``retention * N`` at least a tenth of an item (``B = max(1, round(retention * N))``
    rounds a small fraction up to one item, but not one that asks for next to
    nothing, e.g. ``retention=1e-9``); the reference bank and the per-pool pair weights fit
    in memory; ``lam`` below :data:`MAX_MAGNITUDE`.
    """
    Xr = as_array(X, "X", ndim=(2, 3), shape_doc="(M, N, K) or (M, N)")
    M, N = Xr.shape[:2]
    K = Xr.shape[2] if Xr.ndim == 3 else 1
    check_magnitude(Xr, "X", limit=math.sqrt(MAX_MAGNITUDE), what="squared deviations of the responses")
    if budget is None and retention is not None:
        rho = check_float(retention, "retention", low=0.0, high=1.0, low_open=True, high_open=True)
        if rho * N < 0.1:
            raise InvalidInputError(
                f"retention: retention * N = {rho * N:.3g} items for N = {N}, which B = max(1, round(retention * N)) "
                f"would silently make 1 item; expected retention >= 0.1 / N = {0.1 / max(N, 1):.3g} (or give budget=1)"
            )
    if isinstance(bank_size, numbers.Integral) and not isinstance(bank_size, (bool, np.bool_)):
        B = min(abs(int(budget)), N) if isinstance(budget, numbers.Integral) else N
        check_allocation(8.0 * int(bank_size) * (B + 2 * N + 2 * M * K), "bank_size",
                         f"a reference bank of {int(bank_size)} subsets of N = {N} items")
    check_allocation(17.0 * M * M * (M - 1) / 2 * K, "X",
                     f"the per-pool pair weights of M = {M} models x K = {K} metrics")
    if lam is not None and isinstance(lam, numbers.Real) and not isinstance(lam, (bool, np.bool_)):
        check_magnitude(np.array([float(lam)]), "lam", what="the reversal weight of every pair loss")
