"""F1 — ranking-risk constrained reconstruction (HoloCosm).

Given the responses ``X`` of ``M`` *source* models on ``N`` items under ``K``
metrics (shape ``(M, N, K)``, every metric oriented higher-is-better), choose
``B`` items ``S`` so that the source models' means on ``S`` reproduce their
full-benchmark means on every metric (mean risk ``R_mean``) while the pairwise
margins between models are not shrunk or reversed more than a calibrated
threshold allows (ranking risk ``R_rank <= eps``)::

    minimise R_mean(S)  subject to  R_rank(S) <= eps,  |S| = B.

The definitions (on the documentation's HoloCosm page) are implemented here
exactly, with one shortcut that does not change any value: ``|muhat - mu|``
and a pair's shortfall do not depend on the pool, so the per-pool terms of the
leave-one-source-out average are merged into one weight per (model, metric)
and one weight per (ordered model pair, metric). A candidate is then scored in
``O(M*K + pairs)`` from its per-(model, metric) sums, which is what the
exchange search (:mod:`benchsel.heuristics.holocosm`) relies on.

Besides the formulation, this module has the estimator and the fidelity
measures of the paper's protocol: :meth:`RankingRiskReconstruction.estimate`
(source-assisted correction), :func:`weighted_estimate` (plain or
cluster-size-weighted means, for baselines) and :func:`fidelity` (NMAE,
Spearman and Kendall tau-b per metric, with mean and worst metric).
"""
from __future__ import annotations

import itertools
import math
import numbers
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder
from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    as_array,
    check_allocation,
    check_choice,
    check_float,
    check_int,
    check_magnitude,
    check_rng,
)

from .base import Check, Formulation

__all__ = ["FEAS_TOL", "Fidelity", "RankingRiskReconstruction", "RiskTerms", "fidelity", "weighted_estimate"]

#: Absolute tolerance of the ranking constraint: feasible when ``R_rank <= eps + FEAS_TOL``.
FEAS_TOL = 1e-9


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


def _build_terms(X: np.ndarray, mu: np.ndarray, lam: float) -> tuple[RiskTerms, _PoolTerms]:
    """Scales, valid pairs and weights of the paper (X oriented, shape (M, N, K); mu shape (M, K))."""
    M, _, K = X.shape
    mask = _pool_mask(M)
    P = mask.shape[0]
    size = mask.sum(axis=1).astype(float)  # |A_p|
    # --- mean-risk scales with the zero-scale rule
    mu_p = np.where(mask[:, :, None], mu[None, :, :], np.nan)
    scale = np.nanmax(mu_p, axis=1) - np.nanmin(mu_p, axis=1)  # (P, K)
    active = np.ones((P, K), dtype=bool)
    for p, k in zip(*np.nonzero(scale == 0)):
        vals = X[mask[p], :, k]
        if vals.max() == vals.min():  # metric constant on the pool: contributes 0
            active[p, k] = False
            scale[p, k] = 1.0
        else:
            scale[p, k] = float(vals.std())
    mean_w_pool = (mask[:, :, None] & active[:, None, :]) / (P * K * size[:, None, None] * scale[:, None, :])
    # --- valid pairs (ties are not pairs), over all models; validity per pool
    ga, gb, gk = np.nonzero(mu[:, None, :] > mu[None, :, :])
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


# --------------------------------------------------------------------------- formulation
class RankingRiskReconstruction(Formulation):
    """Ranking-risk constrained multi-metric reconstruction (HoloCosm).

    Parameters
    ----------
    X : array_like, shape (M, N, K) or (M, N)
        Responses of the ``M >= 2`` source models on ``N`` items under ``K``
        metrics (a 2-D array is one metric). Oriented higher-is-better unless
        ``orientation`` / ``lower_is_better`` say otherwise.
    budget : int, optional
        ``B``, the number of items to select, ``1 <= B < N``.
    retention : float, optional
        Instead of ``budget``: ``B = max(1, round(retention * N))``,
        ``0 < retention < 1``.
    seed : int
        Seed of the reference bank (same seed, same bank, same ``eps``).
    quantile : float
        ``q`` in ``[0, 1]``: ``eps`` is the ``q``-quantile (``inverted_cdf``,
        an attained value) of the bank's ranking risks.
    bank_size : int
        Number of uniform random size-``B`` subsets in the reference bank.
    lam : float
        Reversal weight ``lam >= 0`` of the pair loss.
    eps : float, optional
        Explicit ranking-risk threshold (``>= 0``) instead of the calibrated
        one. If no subset meets it the problem is infeasible: exact methods
        report ``"infeasible"``, the exchange search returns its least
        violating subset with ``feasible=False``.
    orientation : array_like, shape (K,), optional
        ``+1`` for a higher-is-better metric, ``-1`` for a lower-is-better one
        (its values are negated).
    lower_is_better : bool or array_like of bool, shape (K,), optional
        The same as flags (e.g. ``Responses.lower_is_better``).

    Notes
    -----
    ``evaluate(S)`` is ``R_mean(S)``; ``check(S)`` requires ``|S| = B`` and
    ``R_rank(S) <= eps + 1e-9``; ``Result.extra`` gets ``eps``, ``R_rank``,
    ``R_mean`` and ``budget``.

    Linear statement (``linear_model``), a minimisation in normalised units:
    binary ``x`` (``sum x = B``); per (model, metric) term a variable
    ``u >= +-lambda_i (X[m,:,k] @ x / B - mu[m,k])`` with ``lambda_i`` the
    term's weight times the number of terms (so the objective ``mean(u)``
    equals ``R_mean``); per pair term ``s >= c (d - dhat)``, ``t >= -c dhat``
    (``c``: the pair's weight times the number of pair terms) and the risk row
    ``mean(s + lam t) <= eps + 1e-9``, the tolerance of :meth:`check`. Every
    column has finite bounds (the extreme means of ``B`` items). Options:

    * ``pools="merged"`` (default): one term per (model, metric) and per pair,
      with the pool weights summed (equivalent: the absolute error and a
      pair's shortfall are the same in every pool); ``"separate"``: the
      literal statement with one term per (pool, model, metric) and per
      (pool, pair).
    * ``muhat="inline"`` (default): every row carries ``X[m,:,k] / B``;
      ``"aux"``: one free error variable ``e[m,k] = muhat - mu`` per (model,
      metric) defined by an equality row, which the other rows reference
      (``M*K*N`` instead of ``(2 M K + 2 G) N`` non-zeros; a much smaller LP
      for large ``N``).
    * ``symmetry=True`` (default): items with identical responses are
      interchangeable, so only the first ones of each group may be chosen
      (``x[i1] >= x[i2] >= ...`` within a group); every selection has an
      equivalent one that satisfies these rows (same risks), so the optimum
      is unchanged. :meth:`canonical_selection` maps a selection to it.
    * ``lattice=True`` (default): when every response of a (model, metric)
      term is a multiple of a grid ``delta`` (binary or integer scores, say),
      ``B * muhat`` lies on that grid, so ``|muhat - mu| >=
      dist(B mu, delta Z) / B`` for every selection: a proven lower bound on
      the term's column (0 for continuous data).
    * ``risk_slack`` (float >= 0, default 0): added to the risk row's bound
      (kept for compatibility: CP-SAT's copy no longer needs it, see
      :mod:`benchsel.solvers.backends.cpsat`); every answer is still checked
      against ``eps + 1e-9`` by :meth:`check`.
    """

    sense = "min"
    model_options: ClassVar[Mapping[str, tuple[Any, ...] | None]] = {
        "pools": ("merged", "separate"), "muhat": ("inline", "aux"), "risk_slack": None, "symmetry": (True, False),
        "lattice": (True, False)}
    #: The heuristic the exact backends run (on a share of the time limit) for their default warm start.
    warm_start_method: ClassVar[str] = "anneal"

    def __init__(self, X: Any, budget: int | None = None, *, retention: float | None = None, seed: int = 0,
                 quantile: float = 0.25, bank_size: int = 128, lam: float = 1.0, eps: float | None = None,
                 orientation: Any = None, lower_is_better: Any = None) -> None:
        _ranking_risk_iv(X, budget, retention, bank_size, lam)
        Xr = as_array(X, "X", ndim=(2, 3), shape_doc="(M, N, K) or (M, N)")
        self._X_given = Xr
        X3 = Xr[:, :, None] if Xr.ndim == 2 else Xr
        M, N, K = X3.shape
        if M < 2:
            raise InvalidInputError(f"X: expected at least 2 source models (axis 0), got shape {Xr.shape}")
        if N < 2:
            raise InvalidInputError(f"X: expected at least 2 items (axis 1), got shape {Xr.shape}")
        if K < 1:
            raise InvalidInputError(f"X: expected at least 1 metric (axis 2), got shape {Xr.shape}")
        self._orientation_given = orientation
        self._lib_given = lower_is_better
        self.sign = _orientation(orientation, lower_is_better, K)
        self.sign.setflags(write=False)
        Xo = np.ascontiguousarray(X3 * self.sign)
        Xo.setflags(write=False)
        self._X = Xo
        # --- budget
        if (budget is None) == (retention is None):
            raise InvalidInputError(
                f"budget: give exactly one of budget (an int B) or retention (a fraction), got budget={budget!r}, "
                f"retention={retention!r}"
            )
        self._retention = None
        if budget is not None:
            B = check_int(budget, "budget", low=1, high=N - 1, low_doc="1", high_doc=f"N - 1 = {N - 1}")
        else:
            rho = check_float(retention, "retention", low=0.0, high=1.0, low_open=True, high_open=True)
            B = max(1, round(rho * N))
            if B >= N:
                raise InvalidInputError(
                    f"retention: B = max(1, round(retention * N)) = {B} must be below N = {N}; got retention={rho:g}"
                )
            self._retention = rho
        self.budget = B
        self.seed = check_int(seed, "seed", low=0)
        self.quantile = check_float(quantile, "quantile", low=0.0, high=1.0)
        self.bank_size = check_int(bank_size, "bank_size", low=1)
        self.lam = check_float(lam, "lam", low=0.0)
        self._eps_given = None if eps is None else check_float(eps, "eps", low=0.0)
        # --- full-benchmark means and risk terms
        self.mu = Xo.mean(axis=1)  # (M, K)
        self.mu.setflags(write=False)
        self.terms, self._pools = _build_terms(Xo, self.mu, self.lam)
        self._mu_flat = self.mu.ravel()
        self._Xt = np.ascontiguousarray(Xo.transpose(1, 0, 2).reshape(N, M * K))
        self._Xt.setflags(write=False)
        # --- reference bank and calibration
        rng = np.random.default_rng(self.seed)
        bank = np.empty((self.bank_size, B), dtype=np.int64)
        for r in range(self.bank_size):
            bank[r] = np.sort(rng.choice(N, size=B, replace=False))
        Z = np.zeros((self.bank_size, N))
        Z[np.repeat(np.arange(self.bank_size), B), bank.ravel()] = 1.0
        rm, rr = self.terms.risks((Z @ self._Xt) / B - self._mu_flat)
        self.bank = bank
        self.bank_R_mean = rm
        self.bank_R_rank = rr
        for a in (bank, rm, rr):
            a.setflags(write=False)
        if not (np.isfinite(rm).all() and np.isfinite(rr).all()):
            raise InvalidInputError("X: the risk weights of these responses overflow float64 (model means or margins "
                                    "of nearly zero spread); rescale X or drop near-identical models")
        self.calibrated_eps = float(np.quantile(rr, self.quantile, method="inverted_cdf"))
        self.eps = self.calibrated_eps if self._eps_given is None else self._eps_given

    # ------------------------------------------------------------------ data
    @property
    def X(self) -> np.ndarray:
        """Oriented source tensor, shape (M, N, K) (read-only)."""
        return self._X

    @property
    def item_vectors(self) -> np.ndarray:
        """Oriented responses per item, shape (N, M*K), column ``m*K + k`` (read-only)."""
        return self._Xt

    @property
    def n_models(self) -> int:
        return int(self._X.shape[0])

    @property
    def n_items(self) -> int:
        return int(self._X.shape[1])

    @property
    def n_metrics(self) -> int:
        return int(self._X.shape[2])

    @property
    def n_pools(self) -> int:
        return int(self._pools.mask.shape[0])

    @property
    def pools(self) -> np.ndarray:
        """Pool membership, shape (P, M) bool (P = M leave-one-out pools when M >= 4, else 1)."""
        return self._pools.mask

    @property
    def eps_given(self) -> float | None:
        return self._eps_given

    def get_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"X": self._X_given, "seed": self.seed, "quantile": self.quantile,
                               "bank_size": self.bank_size, "lam": self.lam, "eps": self._eps_given,
                               "orientation": self._orientation_given, "lower_is_better": self._lib_given}
        if self._retention is not None:
            out["retention"] = self._retention
        else:
            out["budget"] = self.budget
        return out

    def __repr__(self) -> str:
        M, N, K = self._X.shape
        return f"RankingRiskReconstruction(M={M}, N={N}, K={K}, B={self.budget}, eps={self.eps:.6g})"

    # ---------------------------------------------------------------- oracle
    def errors(self, selection: Any) -> np.ndarray:
        """``muhat(S) - mu`` of the sources, shape (M, K), oriented."""
        S = self._nonempty(selection)
        return (self._Xt[S].sum(axis=0) / S.size - self._mu_flat).reshape(self.mu.shape)

    def risks(self, selection: Any) -> tuple[float, float]:
        """``(R_mean(S), R_rank(S))``."""
        S = self._nonempty(selection)
        rm, rr = self.terms.risks(self._Xt[S].sum(axis=0) / S.size - self._mu_flat)
        return float(rm), float(rr)

    def evaluate(self, selection: Any) -> float:
        """``R_mean(S)`` (the objective)."""
        return self.risks(selection)[0]

    def ranking_risk(self, selection: Any) -> float:
        """``R_rank(S)``."""
        return self.risks(selection)[1]

    def key(self, r_mean: float, r_rank: float, *, constrained: bool = True) -> tuple:
        """Feasibility-first comparison key: ``(0, R_mean)`` if feasible, else ``(1, V, R_mean)``."""
        if not constrained or r_rank <= self.eps + FEAS_TOL:
            return (0, float(r_mean))
        return (1, (r_rank - self.eps) / max(self.eps, 1e-12), float(r_mean))

    def check(self, selection: Any) -> Check:
        S = self.as_selection(selection)
        reasons = []
        details: dict[str, Any] = {"eps": self.eps}
        if S.size != self.budget:
            reasons.append(f"{S.size} items selected, budget B = {self.budget} required")
        if S.size:
            rm, rr = self.risks(S)
            details.update(R_mean=rm, R_rank=rr)
            if rr > self.eps + FEAS_TOL:
                reasons.append(f"ranking risk R_rank = {rr:.9g} exceeds eps = {self.eps:.9g}")
        return Check.from_reasons(reasons, details)

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"eps": self.eps, "calibrated_eps": self.calibrated_eps, "budget": self.budget,
                               "n_pools": self.n_pools}
        S = np.asarray(selection)
        if S.size:
            rm, rr = self.risks(S)
            out.update(R_mean=rm, R_rank=rr)
        return out

    #: Draws of :meth:`random_selection` before it gives up on feasibility.
    MAX_RANDOM_DRAWS = 1000

    def uniform_selection(self, rng: np.random.Generator) -> np.ndarray:
        """A uniform random size-``B`` subset (the Random baseline), shape (B,), sorted."""
        rng = check_rng(rng, "rng")
        return np.sort(rng.choice(self.n_items, size=self.budget, replace=False)).astype(np.int64)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        """A uniform random *feasible* size-``B`` subset, by rejection.

        Draws uniform subsets until one meets ``R_rank <= eps`` (with the
        calibrated ``eps`` about ``1/quantile`` draws are expected); after
        :attr:`MAX_RANDOM_DRAWS` draws it returns the least violating one (an
        ``eps`` no subset meets). For the uniform Random baseline, which
        ignores the constraint, use :meth:`uniform_selection`.
        """
        rng = check_rng(rng, "rng")
        best, best_v = None, np.inf
        for _ in range(self.MAX_RANDOM_DRAWS):
            S = self.uniform_selection(rng)
            v = self.ranking_risk(S) - self.eps
            if v <= FEAS_TOL:
                return S
            if v < best_v:
                best, best_v = S, v
        assert best is not None  # MAX_RANDOM_DRAWS >= 1
        return best

    def initial_selection(self) -> np.ndarray | None:
        """The feasible reference-bank subset with the smallest ``R_mean`` (the exact backends' default
        warm start and the exchange search's start); None when no bank subset meets ``eps``."""
        feas = np.flatnonzero(self.bank_R_rank <= self.eps + FEAS_TOL)
        if feas.size == 0:
            return None
        return self.bank[feas[np.argmin(self.bank_R_mean[feas])]].copy()

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(range(self.n_items), self.budget):
            yield np.asarray(c, dtype=np.int64)

    def n_selections(self) -> int:
        return math.comb(self.n_items, self.budget)

    def _nonempty(self, selection: Any) -> np.ndarray:
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one item, got an empty selection")
        return S

    # ------------------------------------------------------------ estimation
    def estimate(self, selection: Any, Y: Any) -> np.ndarray:
        """Source-assisted estimate of target models' full-benchmark scores.

        ``yhat[g, k] = mean_{n in S} Y[g, n, k] + c[k]`` with
        ``c[k] = (1/M) sum_m (mu[m, k] - muhat[m, k](S))`` (sources), in the
        units of ``X`` as given (a lower-is-better metric stays lower-is-better).

        Parameters
        ----------
        selection : array_like of int, shape (B',)
            The selected items, in the order of axis 1 of ``Y``.
        Y : array_like, shape (G, B', K) or (B', K)
            Target models' responses on the selected items (``(G, B')`` or
            ``(B',)`` when ``K == 1``).

        Returns
        -------
        ndarray, shape (G, K) (or (K,) for a single target)
        """
        sel = np.asarray(selection)
        S = self._nonempty(sel)
        K = self.n_metrics
        Yt = as_array(Y, "Y", ndim=(1, 2, 3), shape_doc=f"(G, {S.size}, {K}) or ({S.size}, {K})")
        single = False
        if K == 1 and Yt.ndim in (1, 2) and Yt.shape[-1] == S.size:
            Yt = Yt[..., None]
        if Yt.ndim == 2:
            single = True
            Yt = Yt[None]
        if Yt.ndim != 3 or Yt.shape[1:] != (S.size, K):
            raise InvalidInputError(
                f"Y: expected target responses of shape (G, {S.size}, {K}) (targets, selected items, metrics), "
                f"got shape {np.shape(Y)}"
            )
        corr = -self.errors(S).mean(axis=0) * self.sign  # (K,), in given units
        est = Yt.mean(axis=1) + corr
        return est[0] if single else est

    def correction(self, selection: Any) -> np.ndarray:
        """Source-assisted correction ``c[k]`` in the units of ``X`` as given, shape (K,)."""
        return -self.errors(selection).mean(axis=0) * self.sign

    # ----------------------------------------------------------- linear model
    def _terms_for_model(self, pools: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(mean term flat index, mean term weight, pair term index into ``terms``, pair term weight)."""
        t = self.terms
        K = self.mu.shape[1]
        if pools == "merged":
            mi = np.flatnonzero(t.mean_w > 0)
            return mi, t.mean_w[mi], np.arange(t.pair_w.size), t.pair_w.copy()
        pt = self._pools
        pm, mm, kk = np.nonzero(pt.mean_w > 0)
        pp, gg = np.nonzero(pt.pair_w > 0)
        return mm * K + kk, pt.mean_w[pm, mm, kk], gg, pt.pair_w[pp, gg]

    # ------------------------------------------------------------- symmetry and lattice
    def identical_groups(self) -> list[np.ndarray]:
        """Groups (of 2 or more, each sorted) of items whose responses are identical on every model and metric."""
        _, inv, cnt = np.unique(self._Xt, axis=0, return_inverse=True, return_counts=True)
        inv = np.asarray(inv).ravel()
        order = np.argsort(inv, kind="stable")
        bounds = np.cumsum(cnt)[:-1]
        return [g for g in np.split(order, bounds) if g.size > 1]

    def canonical_selection(self, selection: Any) -> np.ndarray:
        """The equivalent selection (same risks) that takes the first items of each identical group."""
        S = self.as_selection(selection)
        in_S = np.zeros(self.n_items, dtype=bool)
        in_S[S] = True
        for g in self.identical_groups():
            k = int(in_S[g].sum())
            in_S[g] = False
            in_S[g[:k]] = True
        return np.flatnonzero(in_S).astype(np.int64)

    def term_floors(self) -> np.ndarray:
        """Proven lower bounds of ``|muhat - mu|`` per (model, metric), shape (M*K,) (0 off a lattice).

        When every item's response ``v`` of a term is a multiple of a grid
        ``delta`` (rationals with denominators up to 1000, after removing a
        common offset ``v[0]``), ``B * muhat = B v[0] + delta * z`` with an integer
        ``z``, so ``|muhat - mu| >= dist(B (mu - v[0]), delta Z) / B``.
        """
        from fractions import Fraction

        B = self.budget
        out = np.zeros(self._Xt.shape[1])
        for q in range(self._Xt.shape[1]):
            v = self._Xt[:, q] - self._Xt[0, q]
            u = np.unique(np.abs(v[v != 0]))
            if u.size == 0 or u.size > 2000:
                continue
            fr = [Fraction(float(a)).limit_denominator(1000) for a in u]
            if any(abs(float(a) - b) > 1e-12 * max(1.0, b) for a, b in zip(fr, u)):
                continue
            den = math.lcm(*(a.denominator for a in fr))
            g = math.gcd(*(int(a * den) for a in fr))
            delta = g / den
            target = B * (self._mu_flat[q] - self._Xt[0, q])
            dist = abs(target - delta * round(target / delta))
            out[q] = max(dist - 1e-9 * max(1.0, abs(target)), 0.0) / B
        return out

    def linear_model(self, *, allow_lazy: bool = False, pools: str = "merged", muhat: str = "inline",
                     risk_slack: float = 0.0, symmetry: bool = True, lattice: bool = True) -> LinearModel:
        """The MILP of the problem (see the class notes); all columns have finite bounds.

        Parameters
        ----------
        allow_lazy : bool
            Unused (the model is static).
        pools : {"merged", "separate"}
        muhat : {"inline", "aux"}
        risk_slack : float
            Added to the bound of the risk row (see the class notes).
        symmetry, lattice : bool
            Order identical items; bound each term by its lattice floor (see the class notes).
        """
        risk_slack = check_float(risk_slack, "risk_slack", low=0.0)
        check_choice(symmetry, "symmetry", (True, False))
        check_choice(lattice, "lattice", (True, False))
        check_choice(pools, "pools", ("merged", "separate"))
        check_choice(muhat, "muhat", ("inline", "aux"))
        t = self.terms
        M, N, K = self._X.shape
        B = self.budget
        Xf = self._Xt.T  # (M*K, N)
        mu = self._mu_flat
        # extreme means of B items per (model, metric) and per pair difference
        srt = np.sort(Xf, axis=1)
        lo = srt[:, :B].mean(axis=1) - mu  # min of e = muhat - mu
        hi = srt[:, N - B:].mean(axis=1) - mu
        mi, mw, gi, gw = self._terms_for_model(pools)
        nm, ng = mi.size, gi.size
        lam_m = mw * nm  # u_i = lam_m |e|, objective = mean(u)
        c_g = gw * ng  # s_j = c (d - dhat)_+, t_j = c (-dhat)_+, risk = mean(s + lam t)
        ga, gb, gd = t.pair_a[gi], t.pair_b[gi], t.pair_d[gi]
        # range of D = e_a - e_b = dhat - d over size-B subsets
        uniq_pairs, inv = np.unique(np.stack([ga, gb]), axis=1, return_inverse=True)
        inv = np.asarray(inv).ravel()
        Dsrt = np.sort(Xf[uniq_pairs[0]] - Xf[uniq_pairs[1]], axis=1)
        dhat_lo = Dsrt[:, :B].mean(axis=1)[inv]
        # loosened a little so that a solver's rounding (CP-SAT's grid) never cuts off an extreme subset
        pad = lambda v: v + 1e-5 + 1e-6 * np.abs(v)  # noqa: E731
        s_ub = pad(c_g * np.maximum(gd - dhat_lo, 0.0))
        t_ub = pad(c_g * np.maximum(-dhat_lo, 0.0))
        u_ub = pad(lam_m * np.maximum(np.maximum(hi[mi], -lo[mi]), 0.0))
        lo, hi = -pad(-lo), pad(hi)
        u_lb = lam_m * self.term_floors()[mi] if lattice else np.zeros(nm)
        b = ModelBuilder(f"holocosm_{pools}_{muhat}")
        x = b.add_vars("x", N, lb=0, ub=1, integer=True)
        u = b.add_vars("u", nm, lb=u_lb, ub=np.maximum(u_ub, u_lb), cost=1.0 / max(nm, 1))
        s = b.add_vars("s", ng, lb=0.0, ub=s_ub)
        tv = b.add_vars("t", ng, lb=0.0, ub=t_ub)
        b.add_cardinality("card", x, B)
        if muhat == "aux":
            used = np.unique(np.concatenate([mi, ga, gb]))
            e = b.add_vars("e", used.size, lb=lo[used], ub=hi[used])
            pos = np.full(M * K, -1, np.int64)
            pos[used] = np.arange(used.size)
            # e_i - X_i x / B = -mu_i
            r = np.arange(used.size)
            b.add_rows("mean_def", rows=np.concatenate([r, np.repeat(r, N)]),
                       cols=np.concatenate([e, np.tile(x, used.size)]),
                       vals=np.concatenate([np.ones(used.size), -(Xf[used] / B).ravel()]),
                       lb=-mu[used], ub=-mu[used])
            ei, ea, eb = e[pos[mi]], e[pos[ga]], e[pos[gb]]
            r = np.arange(nm)
            # u - lam e >= 0 ; u + lam e >= 0
            b.add_rows("abs_pos", rows=np.concatenate([r, r]), cols=np.concatenate([u, ei]),
                       vals=np.concatenate([np.ones(nm), -lam_m]), lb=np.zeros(nm))
            b.add_rows("abs_neg", rows=np.concatenate([r, r]), cols=np.concatenate([u, ei]),
                       vals=np.concatenate([np.ones(nm), lam_m]), lb=np.zeros(nm))
            r = np.arange(ng)
            # s >= c (e_b - e_a):  s + c e_a - c e_b >= 0
            b.add_rows("shortfall", rows=np.concatenate([r, r, r]), cols=np.concatenate([s, ea, eb]),
                       vals=np.concatenate([np.ones(ng), c_g, -c_g]), lb=np.zeros(ng))
            # t >= -c dhat = -c (e_a - e_b + d):  t + c e_a - c e_b >= -c d
            b.add_rows("reversal", rows=np.concatenate([r, r, r]), cols=np.concatenate([tv, ea, eb]),
                       vals=np.concatenate([np.ones(ng), c_g, -c_g]), lb=-c_g * gd)
        else:
            r = np.arange(nm)
            rr = np.repeat(r, N)
            coef = (lam_m[:, None] * Xf[mi] / B).ravel()
            xs = np.tile(x, nm)
            # u - lam X x / B >= -lam mu ; u + lam X x / B >= lam mu
            b.add_rows("abs_pos", rows=np.concatenate([r, rr]), cols=np.concatenate([u, xs]),
                       vals=np.concatenate([np.ones(nm), -coef]), lb=-lam_m * mu[mi])
            b.add_rows("abs_neg", rows=np.concatenate([r, rr]), cols=np.concatenate([u, xs]),
                       vals=np.concatenate([np.ones(nm), coef]), lb=lam_m * mu[mi])
            r = np.arange(ng)
            rr = np.repeat(r, N)
            dcoef = (c_g[:, None] * (Xf[ga] - Xf[gb]) / B).ravel()
            xs = np.tile(x, ng)
            # s >= c (d - dhat):  s + c dhat >= c d ;  t >= -c dhat:  t + c dhat >= 0
            b.add_rows("shortfall", rows=np.concatenate([r, rr]), cols=np.concatenate([s, xs]),
                       vals=np.concatenate([np.ones(ng), dcoef]), lb=c_g * gd)
            b.add_rows("reversal", rows=np.concatenate([r, rr]), cols=np.concatenate([tv, xs]),
                       vals=np.concatenate([np.ones(ng), dcoef]), lb=np.zeros(ng))
        n_sym = 0
        if symmetry:
            pairs = [(g[:-1], g[1:]) for g in self.identical_groups()]
            if pairs:
                a_i = np.concatenate([p[0] for p in pairs])
                b_i = np.concatenate([p[1] for p in pairs])
                n_sym = a_i.size
                r = np.arange(n_sym)
                b.add_rows("symmetry", rows=np.concatenate([r, r]), cols=np.concatenate([x[a_i], x[b_i]]),
                           vals=np.concatenate([np.ones(n_sym), -np.ones(n_sym)]), lb=np.zeros(n_sym))
        if ng:
            b.add_rows("risk", rows=np.zeros(2 * ng, np.int64), cols=np.concatenate([s, tv]),
                       vals=np.concatenate([np.full(ng, 1.0 / ng), np.full(ng, self.lam / ng)]),
                       ub=[self.eps + FEAS_TOL + risk_slack])
        return b.build(selection_block="x", selection_items=np.arange(N),
                       meta={"pools": pools, "muhat": muhat, "eps": self.eps, "mean_terms": nm, "pair_terms": ng,
                             "symmetry_rows": n_sym, "lattice_floor": float(u_lb.sum() / max(nm, 1))})

    # ----------------------------------------------------------- conformance
    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[RankingRiskReconstruction]:
        """Tiny instances: leave-one-out pools (M=4, 5), one pool (M=3), a lower-is-better
        metric with a tie and a constant metric, and an explicit infeasible ``eps``."""
        rng = np.random.default_rng(seed)
        out = [
            cls(rng.normal(size=(4, 8, 2)), budget=3, seed=seed),
            cls(rng.uniform(size=(3, 9, 2)), budget=3, seed=seed + 1),
        ]
        X = rng.integers(0, 4, size=(5, 7, 3)).astype(float)
        X[:, :, 2] = 1.0  # constant metric (zero-scale rule: contributes 0)
        X[1] = X[0]  # models 0 and 1 tie on every metric (ties are not pairs)
        X[1, 0, 0] += 1.0
        X[0, 0, 0] += 1.0
        out.append(cls(X, budget=3, seed=seed, orientation=[1, -1, 1]))
        base = cls(rng.normal(size=(4, 7, 2)), budget=3, seed=seed)
        min_rank = min(base.ranking_risk(s) for s in base.enumerate_selections())
        out.append(cls(base.X, budget=3, seed=seed, eps=0.5 * min_rank))
        return out


# --------------------------------------------------------------------------- estimation and fidelity
def weighted_estimate(Y: Any, weights: Any = None) -> np.ndarray:
    """Plain or weighted mean of target responses on selected items.

    Parameters
    ----------
    Y : array_like, shape (G, B, K)
        Target responses on the selected items.
    weights : array_like, shape (B,), optional
        Aggregation weights summing to 1 (e.g. cluster sizes / N); None: uniform.

    Returns
    -------
    ndarray, shape (G, K)
    """
    Yt = as_array(Y, "Y", ndim=3, shape_doc="(G, B, K)")
    if weights is None:
        return Yt.mean(axis=1)
    w = as_array(weights, "weights", shape=(Yt.shape[1],), shape_doc=f"(B,) = ({Yt.shape[1]},)", nonnegative=True)
    if not np.isclose(w.sum(), 1.0):
        raise InvalidInputError(f"weights: expected weights summing to 1, got sum {w.sum():g}")
    return np.einsum("gbk,b->gk", Yt, w)


@dataclass(frozen=True)
class Fidelity:
    """Score and ranking fidelity per metric.

    Attributes
    ----------
    nmae, spearman, kendall : ndarray, shape (K,)
        Per metric; a correlation is nan when one of its vectors is constant.
    """

    nmae: np.ndarray
    spearman: np.ndarray
    kendall: np.ndarray
    metrics: tuple[str, ...] = field(default=())

    @property
    def mean_nmae(self) -> float:
        return float(np.mean(self.nmae))

    @property
    def worst_nmae(self) -> float:
        return float(np.max(self.nmae))

    @property
    def mean_sp(self) -> float:
        return _nanstat(np.nanmean, self.spearman)

    @property
    def worst_sp(self) -> float:
        return _nanstat(np.nanmin, self.spearman)

    @property
    def mean_tau(self) -> float:
        return _nanstat(np.nanmean, self.kendall)

    @property
    def worst_tau(self) -> float:
        return _nanstat(np.nanmin, self.kendall)

    def summary(self) -> dict[str, float]:
        return {"mean_nmae": self.mean_nmae, "worst_nmae": self.worst_nmae, "mean_sp": self.mean_sp,
                "worst_sp": self.worst_sp, "mean_tau": self.mean_tau, "worst_tau": self.worst_tau}


def _nanstat(fn: Any, a: np.ndarray) -> float:
    return float(fn(a)) if np.isfinite(a).any() else math.nan


def fidelity(estimate: Any, truth: Any, metrics: Any = None) -> Fidelity:
    """NMAE, Spearman and Kendall tau-b per metric between estimated and true target scores.

    ``NMAE[k] = mean_g |yhat[g,k] - y[g,k]| / (max_g y[g,k] - min_g y[g,k])``
    (a zero range divides by 1). Correlations between constant vectors are
    undefined (nan) and skipped by the mean and worst summaries.

    Parameters
    ----------
    estimate, truth : array_like, shape (G, K) or (G,)
        Estimated and full-benchmark scores of ``G >= 2`` targets.
    metrics : sequence of str, optional
        Metric names (for reports).
    """
    from scipy.stats import kendalltau, spearmanr

    e = as_array(estimate, "estimate", ndim=(1, 2), shape_doc="(G, K)")
    y = as_array(truth, "truth", ndim=(1, 2), shape_doc="(G, K)")
    if e.ndim == 1:
        e = e[:, None]
    if y.ndim == 1:
        y = y[:, None]
    if e.shape != y.shape:
        raise InvalidInputError(f"estimate: expected the shape of truth {y.shape}, got {e.shape}")
    if y.shape[0] < 2:
        raise InvalidInputError(f"truth: expected at least 2 target models, got shape {y.shape}")
    rng_ = y.max(axis=0) - y.min(axis=0)
    nmae = np.abs(e - y).mean(axis=0) / np.where(rng_ > 0, rng_, 1.0)
    K = y.shape[1]
    sp = np.full(K, np.nan)
    kt = np.full(K, np.nan)
    for k in range(K):
        if np.ptp(e[:, k]) == 0 or np.ptp(y[:, k]) == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sp[k] = spearmanr(e[:, k], y[:, k]).statistic
            kt[k] = kendalltau(e[:, k], y[:, k], variant="b").statistic
    names = tuple(str(m) for m in metrics) if metrics is not None else tuple(f"metric_{k}" for k in range(K))
    return Fidelity(nmae=nmae, spearman=sp, kendall=kt, metrics=names)
