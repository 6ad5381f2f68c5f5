"""Ranking-risk constrained reconstruction (HoloCosm).

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
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder
from benchsel.formulations.core.properties import NumericalProperties, WarmStart
from benchsel.formulations.core.validation import (
    as_array,
    check_choice,
    check_float,
    check_int,
    check_rng,
)

from ..base import Check, Formulation
from .terms import _build_terms, _orientation, _ranking_risk_iv, rank_tolerance


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
    ``R_rank(S) <= eps + rank_tol``; ``Result.extra`` gets ``eps``, ``R_rank``,
    ``R_mean`` and ``budget``.

    Linear statement (``linear_model``), a minimisation in normalised units:
    binary ``x`` (``sum x = B``); per (model, metric) term a variable
    ``u >= +-lambda_i (X[m,:,k] - mu[m,k]) @ x / B`` (``= +-lambda_i (muhat - mu)``
    since ``sum x = B``) with ``lambda_i`` the
    term's weight times the number of terms (so the objective ``mean(u)``
    equals ``R_mean``); per pair term ``s >= c (d - dhat)``, ``t >= -c dhat``
    (``c``: the pair's weight times the number of pair terms; ``dhat - d`` is
    written ``(X_a - X_b - d) @ x / B``) and the risk row
    ``mean(s + lam t) <= eps + rank_tol``, the tolerance of :meth:`check` (``1e-9`` plus the
    floating-point accuracy of ``R_rank``, :func:`~benchsel.formulations.holocosm.terms.rank_tolerance`). Every
    column has finite bounds (the extreme means of ``B`` items). The rows carry
    the responses *centred* on the full means: written with ``X`` itself
    (``u - lambda X x / B >= -lambda mu``), responses ``1e-9`` apart around a
    common offset give coefficients that agree to 9 digits and a right-hand
    side of their size, whose difference (the information) drowns in a
    solver's relative feasibility tolerance (``1e-6``). Options:

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
    """

    sense = "min"
    model_options: ClassVar[Mapping[str, tuple[Any, ...] | None]] = {
        "pools": ("merged", "separate"), "muhat": ("inline", "aux"), "symmetry": (True, False),
        "lattice": (True, False)}
    #: The annealer gives the exact backends their default incumbent; the ranking rows' optimum sits on tied
    #: and near-tied data (tolerance-based reductions cut it off: see docs/solvers.md); every continuous
    #: column's bounds are the extreme values of ``B``-item means, met by some selection, never restricting.
    numerical_properties: ClassVar[NumericalProperties] = NumericalProperties(
        warm_start=WarmStart("anneal"), near_ties=True, redundant_bounds=True)

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
        #: feasible when ``R_rank <= eps + rank_tol`` (:func:`~.terms.rank_tolerance`: 1e-9 plus the
        #: floating-point accuracy of ``R_rank``)
        self.rank_tol = rank_tolerance(self.terms.pair_w, self.lam, float(np.abs(Xo).max()) if Xo.size else 0.0)

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
        if not constrained or r_rank <= self.eps + self.rank_tol:
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
            if rr > self.eps + self.rank_tol:
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
            if v <= self.rank_tol:
                return S
            if v < best_v:
                best, best_v = S, v
        assert best is not None  # MAX_RANDOM_DRAWS >= 1
        return best

    def initial_selection(self) -> np.ndarray | None:
        """The feasible reference-bank subset with the smallest ``R_mean`` (the exact backends' default
        warm start and the exchange search's start); None when no bank subset meets ``eps``."""
        feas = np.flatnonzero(self.bank_R_rank <= self.eps + self.rank_tol)
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

        A term whose non-zero responses do not all sit on such a grid gets 0: in
        particular responses that round to the fraction 0 (tiny values such as
        ``1e-200``, below the grid's resolution) and grids too fine for
        ``target / delta`` to be an exact float64 integer.
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
            if any(a == 0 or abs(float(a) - b) > 1e-12 * max(1.0, b) for a, b in zip(fr, u)):
                continue  # off the grid (a non-zero response rounded to 0 is off it: no lattice)
            den = math.lcm(*(a.denominator for a in fr))
            g = math.gcd(*(int(a * den) for a in fr))
            delta = g / den
            target = B * (self._mu_flat[q] - self._Xt[0, q])
            steps = target / delta if delta > 0 else math.inf
            if not abs(steps) < 2.0**52:  # no exact integer multiple: no floor
                continue
            dist = abs(target - delta * round(steps))
            out[q] = max(dist - 1e-9 * max(1.0, abs(target)), 0.0) / B
        return out

    def linear_model(self, *, allow_lazy: bool = False, pools: str = "merged", muhat: str = "inline",
                     symmetry: bool = True, lattice: bool = True) -> LinearModel:
        """The MILP of the problem (see the class notes); all columns have finite bounds.

        Parameters
        ----------
        allow_lazy : bool
            Unused (the model is static).
        pools : {"merged", "separate"}
        muhat : {"inline", "aux"}
        symmetry, lattice : bool
            Order identical items; bound each term by its lattice floor (see the class notes).
        """
        check_choice(symmetry, "symmetry", (True, False))
        check_choice(lattice, "lattice", (True, False))
        check_choice(pools, "pools", ("merged", "separate"))
        check_choice(muhat, "muhat", ("inline", "aux"))
        t = self.terms
        M, N, K = self._X.shape
        B = self.budget
        Xf = self._Xt.T  # (M*K, N)
        mu = self._mu_flat
        # centred responses: with sum x = B, X x / B - mu = (X - mu) x / B, whose coefficients carry the
        # differences between items without a common offset that a solver's tolerances would swamp
        Xc = Xf - mu[:, None]
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
        # every bound is met by an extreme subset and restricts nothing (numerical_properties.redundant_bounds)
        s_ub = c_g * np.maximum(gd - dhat_lo, 0.0)
        t_ub = c_g * np.maximum(-dhat_lo, 0.0)
        u_ub = lam_m * np.maximum(np.maximum(hi[mi], -lo[mi]), 0.0)
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
            # e_i - (X_i - mu_i) x / B = 0  (centred: sum x = B)
            r = np.arange(used.size)
            b.add_rows("mean_def", rows=np.concatenate([r, np.repeat(r, N)]),
                       cols=np.concatenate([e, np.tile(x, used.size)]),
                       vals=np.concatenate([np.ones(used.size), -(Xc[used] / B).ravel()]),
                       lb=np.zeros(used.size), ub=np.zeros(used.size))
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
            coef = (lam_m[:, None] * Xc[mi] / B).ravel()
            xs = np.tile(x, nm)
            # u - lam (X - mu) x / B >= 0 ; u + lam (X - mu) x / B >= 0
            b.add_rows("abs_pos", rows=np.concatenate([r, rr]), cols=np.concatenate([u, xs]),
                       vals=np.concatenate([np.ones(nm), -coef]), lb=np.zeros(nm))
            b.add_rows("abs_neg", rows=np.concatenate([r, rr]), cols=np.concatenate([u, xs]),
                       vals=np.concatenate([np.ones(nm), coef]), lb=np.zeros(nm))
            r = np.arange(ng)
            rr = np.repeat(r, N)
            # (Xa - Xb - d) x / B = dhat - d
            dcoef = (c_g[:, None] * (Xf[ga] - Xf[gb] - gd[:, None]) / B).ravel()
            xs = np.tile(x, ng)
            # s >= c (d - dhat):  s + c (dhat - d) >= 0 ;  t >= -c dhat:  t + c (dhat - d) >= -c d
            b.add_rows("shortfall", rows=np.concatenate([r, rr]), cols=np.concatenate([s, xs]),
                       vals=np.concatenate([np.ones(ng), dcoef]), lb=np.zeros(ng))
            b.add_rows("reversal", rows=np.concatenate([r, rr]), cols=np.concatenate([tv, xs]),
                       vals=np.concatenate([np.ones(ng), dcoef]), lb=-c_g * gd)
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
                       ub=[self.eps + self.rank_tol])
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
