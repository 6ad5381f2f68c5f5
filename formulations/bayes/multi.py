"""BayesAME with several target models at once: a linear model of coregionalisation (paper section 3.2).

Targets ``t = 1..Kt`` are evaluated on the same benchmark, bucketed by the
reference models' score vectors as in the single-target model. Their bucket
abilities share ``L`` latent vectors (``L = Kt`` by default)::

    theta^t = mu + sum_l W[l, t] u_l,    u_l ~ N(0, Sigma_l),
    Sigma_l[b, b'] = alpha_l k_l(||phi_b - phi_b'||; beta_l)      (k_l squared-exponential or Matern-3/2),
    s^t_i | theta^t ~ N(theta^t_b(i), N_b sigma^2)

so the prior of the stacked abilities is ``N(mu, sum_l w_l w_l' (x) Sigma_l)``
and a score observed on one target informs every correlated target. The
posterior is kept as ``Cov = K - G'G`` with ``G = chol(K_OO + D_O)^{-1} K_O,:``
over all ``Kt * B`` abilities, one row appended per observation; after a
hyper-parameter fit it is rebuilt.

:func:`bayesame_multi_evaluate`:

1. a random ``init_fraction`` (10 %) of the items is evaluated on every
   target, and ``alpha_l, beta_l, W, sigma^2`` are fitted (AdamW on the
   negative log marginal likelihood: ``fit_steps`` = 500 steps at first,
   fewer later, learning rate 0.01 for binary and 0.001 for continuous
   scores, ``alpha, beta, sigma^2`` clipped at ``1e-4``);
2. ``strategy="round-robin"`` (the paper's): the targets take turns, each
   adding the unevaluated item of largest expected information gain about
   its own score ``R^t``; ``strategy="average"`` (the paper's alternative):
   the item of largest gain averaged over the targets, evaluated on a target
   drawn at random among those that have not evaluated it;
3. the fit is repeated every ``F`` rounds (``F`` items per target);
4. a target stops once the single-target two-condition rule holds on its own
   trace (range of its estimate over its last ``W`` evaluations ``<= eps1``
   and 95 % credible width ``<= eps2``); the run ends when every target has
   stopped (or run out of items, or hit ``max_items``).

The estimate of target ``t`` is the single-target unified estimator with its
own coreset and the joint posterior mean; the interval is the 95 % credible
interval of ``R^t`` under the joint posterior.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from ..core.clock import progress
from ..core.errors import InvalidInputError
from ..core.validation import as_array, check_choice, check_float, check_int, check_rng
from .evaluate import EvaluationResult, _BucketQueues, _common, _done, _target
from .lmc import LMC_LOWER, LMCObjective, LMCParams, _adamw, _kernels, default_kernels
from .model import (
    KERNELS,
    Z975,
    _group_items,
    check_references,
    check_tol,
    item_gains,
    posterior_var_R,
    unified_estimate,
)

__all__ = ["STRATEGIES", "MultiTargetResult", "bayesame_multi_evaluate"]

#: The item choices of :func:`bayesame_multi_evaluate` (the first is its default, the paper's).
STRATEGIES = ("round-robin", "average")


# ================================================================ results
@dataclass(frozen=True, eq=False)
class MultiTargetResult:
    """Outcome of :func:`bayesame_multi_evaluate`: one :class:`EvaluationResult` per target.

    Attributes
    ----------
    results : tuple of EvaluationResult, length Kt
        Per target: ``estimate``, 95 % credible ``interval``, ``coreset``
        (the shared initial items, then its own, in evaluation order),
        ``scores``, ``trace`` (one entry per evaluation of that target: ``n``,
        ``estimate``, ``mean_R``, ``var``, ``width``; the first entry is the
        initial block), ``stopped`` (at its own stopping rule) and ``info``.
    order : ndarray of int64, shape (E, 2)
        ``(target, item)`` of every evaluation after the initial block, in order.
    info : dict
        Settings, the fitted hyper-parameters (``alpha``, ``beta``, ``W``,
        ``sigma2``) and the fit history.
    """

    results: tuple[EvaluationResult, ...]
    order: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, t: int) -> EvaluationResult:
        return self.results[t]

    def __iter__(self) -> Iterator[EvaluationResult]:
        return iter(self.results)

    @property
    def estimates(self) -> np.ndarray:
        """Estimate of each target, shape (Kt,)."""
        return np.array([r.estimate for r in self.results])

    @property
    def intervals(self) -> np.ndarray:
        """95 % credible interval of each target, shape (Kt, 2)."""
        return np.array([r.interval for r in self.results])

    @property
    def n(self) -> np.ndarray:
        """Coreset size of each target, shape (Kt,)."""
        return np.array([r.n for r in self.results], dtype=np.int64)

    @property
    def total_evaluations(self) -> int:
        """Evaluations over all targets (initial block included)."""
        return int(self.n.sum())


# ============================================================== the run
@dataclass(frozen=True)
class _MultiSettings:
    R: np.ndarray
    buckets: Any
    scores: tuple[Callable[[int], float], ...]
    N: int
    Kt: int
    L: int
    kernels: tuple[str, ...]
    strategy: str
    init: int
    eps1: float
    eps2: float
    W: int
    N0: int
    F: int
    sigma2: float
    lr: float
    fit_steps: int
    min_fit_steps: int
    fit_max_obs: int
    weight_decay: float
    max_items: int
    unique: bool
    active: bool
    binary: bool


def _targets(targets: Any, N: int) -> tuple[list[Callable[[int], float]], list[np.ndarray | None]]:
    if callable(targets):
        raise InvalidInputError("targets: expected an array of shape (Kt, N) or a sequence of Kt targets "
                                "(arrays of shape (N,) or callables item -> score), got one callable")
    if isinstance(targets, np.ndarray) or hasattr(targets, "to_numpy"):
        T = as_array(targets, "targets", ndim=2, shape_doc=f"(Kt, N) = (Kt, {N})")
        if T.shape[1] != N:
            raise InvalidInputError(
                f"targets: reference and target item counts differ: reference_scores has N = {N} items, "
                f"targets have {T.shape[1]}"
            )
        items: list[Any] = list(T)
    elif isinstance(targets, Sequence):
        items = list(targets)
    else:
        raise InvalidInputError(f"targets: expected an array of shape (Kt, N) or a sequence of targets, "
                                f"got {type(targets).__name__}")
    if not items:
        raise InvalidInputError("targets: expected at least one target, got none")
    out = [_target(t, N, f"targets[{i}]") for i, t in enumerate(items)]
    return [s for s, _ in out], [a for _, a in out]


def _multi_settings(reference_scores: Any, targets: Any, *, L: Any, kernels: Any, strategy: str, init_fraction: Any,
                    eps1: Any, eps2: Any, W: Any, N0: Any, sigma2: Any, lr: Any, F: Any, fit_steps: Any,
                    min_fit_steps: Any, fit_max_obs: Any, weight_decay: Any, tol: Any, selection: str,
                    max_items: Any) -> _MultiSettings:
    R = check_references(reference_scores)
    buckets = _group_items(R, check_tol(tol))
    N = buckets.n_items
    scores, arrays = _targets(targets, N)
    Kt = len(scores)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N, default_W=30)
    N0 = check_int(N0, "N0", low=0)
    F = check_int(F, "F", low=1)
    L = Kt if L is None else check_int(L, "L", low=1)
    if kernels is None:
        kernels = default_kernels(L)
    elif isinstance(kernels, str) or not isinstance(kernels, Sequence):
        raise InvalidInputError(f"kernels: expected a sequence of L = {L} kernel names, got {kernels!r}")
    else:
        kernels = tuple(kernels)
        if len(kernels) != L:
            raise InvalidInputError(
                f"kernels: expected L = {L} kernel names (one per latent vector), got {len(kernels)}"
            )
        for i, k in enumerate(kernels):
            check_choice(k, f"kernels[{i}]", KERNELS)
    check_choice(strategy, "strategy", STRATEGIES)
    check_choice(selection, "selection", ("auto", "active", "random"))
    frac = check_float(init_fraction, "init_fraction", low=0.0, high=1.0, low_open=True)
    init = min(max(1, round(frac * N)), N)
    if max_items < init:
        raise InvalidInputError(f"max_items: expected at least the initial block of {init} items "
                                f"(init_fraction * N), got {max_items}")
    binary = bool(np.all((R == 0) | (R == 1))) and all(a is None or bool(np.all((a == 0) | (a == 1)))
                                                          for a in arrays)
    sigma2 = (0.1 if binary else 0.01) if sigma2 is None else check_float(sigma2, "sigma2", low=LMC_LOWER)
    lr = (0.01 if binary else 0.001) if lr is None else check_float(lr, "lr", low=0.0, low_open=True)
    unique = buckets.unique_regime(N0)
    return _MultiSettings(
        R=R, buckets=buckets, scores=tuple(scores), N=N, Kt=Kt, L=L, kernels=tuple(kernels), strategy=strategy,
        init=init, eps1=eps1, eps2=eps2, W=int(W), N0=N0, F=F, sigma2=float(sigma2), lr=float(lr),
        fit_steps=check_int(fit_steps, "fit_steps", low=0), min_fit_steps=check_int(min_fit_steps, "min_fit_steps",
                                                                                    low=0),
        fit_max_obs=check_int(fit_max_obs, "fit_max_obs", low=2),
        weight_decay=check_float(weight_decay, "weight_decay", low=0.0), max_items=max_items, unique=unique,
        active=selection == "active" or (selection == "auto" and unique), binary=binary,
    )


class _JointPosterior:
    """Posterior of the ``Kt * B`` bucket abilities under item-level observations (Cholesky, appended rows).

    ``Cov = K - G'G`` with ``K`` the prior covariance, ``G = Lc^{-1} K_{O,:}``
    and ``Lc`` the Cholesky factor of ``K_OO + D_O``; ``z = Lc^{-1}(s_O - mu_O)``
    gives the mean ``mu + G'z``. ``diag`` holds ``diag(Cov)``.
    """

    def __init__(self, cfg: _MultiSettings, p: LMCParams, sqdist: np.ndarray, mu: np.ndarray, cap: int) -> None:
        self.cfg, self.p, self.mu = cfg, p, mu
        self.B = cfg.buckets.n_buckets
        self.KtB = cfg.Kt * self.B
        self.Sig = _kernels(sqdist, p, cfg.kernels, cfg.R.shape[0])  # (L, B, B)
        self.Ctt = np.einsum("lt,lbc->tbc", p.W ** 2, self.Sig)  # prior covariance of each theta^t, (Kt, B, B)
        self.prior_diag = np.repeat((p.W ** 2).T @ p.alpha, self.B)  # sum_l W[l,t]^2 alpha_l per (t, b)
        self.cap = 0
        self.Lc = np.zeros((0, 0))
        self.G = np.zeros((0, self.KtB))
        self.z = np.zeros(0)
        self.idx = np.zeros(0, dtype=np.int64)  # t * B + b of each observation
        self.m = 0
        self.diag = self.prior_diag.copy()
        self._reserve(cap)

    def _reserve(self, cap: int) -> None:
        """Room for ``cap`` observations (arrays grow by doubling)."""
        if cap <= self.cap:
            return
        cap = max(cap, 2 * self.cap)
        m = self.m
        Lc = np.zeros((cap, cap))
        Lc[:m, :m] = self.Lc[:m, :m]
        G = np.zeros((cap, self.KtB))
        G[:m] = self.G[:m]
        z = np.zeros(cap)
        z[:m] = self.z[:m]
        idx = np.zeros(cap, dtype=np.int64)
        idx[:m] = self.idx[:m]
        self.Lc, self.G, self.z, self.idx, self.cap = Lc, G, z, idx, cap

    def krow(self, t: int, b: int) -> np.ndarray:
        """Prior covariance of ``theta^t_b`` with every ability, shape (Kt * B,)."""
        coef = self.p.W[:, t][:, None] * self.p.W  # (L, Kt)
        return np.einsum("lt,lb->tb", coef, self.Sig[:, b, :]).ravel()

    def add(self, t: int, b: int, resid: float, noise: float) -> None:
        m = self.m
        self._reserve(m + 1)
        k = self.krow(t, b)
        kO = k[self.idx[:m]]
        l = solve_triangular(self.Lc[:m, :m], kO, lower=True, check_finite=False) if m else np.zeros(0)
        d = math.sqrt(max(k[t * self.B + b] + noise - float(l @ l), 1e-300))
        self.Lc[m, :m] = l
        self.Lc[m, m] = d
        g = (k - l @ self.G[:m]) / d
        self.G[m] = g
        self.z[m] = (resid - float(l @ self.z[:m])) / d
        self.idx[m] = t * self.B + b
        self.diag -= g * g
        self.m = m + 1

    def rebuild(self, t_obs: np.ndarray, b_obs: np.ndarray, resid: np.ndarray, noise: np.ndarray) -> None:
        """Factor all observations at once (after a hyper-parameter fit)."""
        m = t_obs.size
        self.m = 0
        self.diag = self.prior_diag.copy()
        if m == 0:
            return
        self._reserve(m)
        Kt, B = self.cfg.Kt, self.B
        KO = np.zeros((m, Kt, B))
        for l in range(self.p.W.shape[0]):
            KO += (self.p.W[l, t_obs][:, None, None] * self.p.W[l][None, :, None]) * self.Sig[l][b_obs][:, None, :]
        KO = KO.reshape(m, Kt * B)
        idx = t_obs * B + b_obs
        KOO = KO[:, idx]
        KOO[np.diag_indices(m)] += noise
        Lc = np.linalg.cholesky(KOO)
        self.Lc[:m, :m] = Lc
        self.G[:m] = solve_triangular(Lc, KO, lower=True, check_finite=False)
        self.z[:m] = solve_triangular(Lc, resid, lower=True, check_finite=False)
        self.idx[:m] = idx
        self.diag = self.prior_diag - np.einsum("ij,ij->j", self.G[:m], self.G[:m])
        self.m = m

    # ------------------------------------------------- per-target queries
    def block(self, t: int) -> slice:
        return slice(t * self.B, (t + 1) * self.B)

    def mean(self, t: int) -> np.ndarray:
        """Posterior mean of ``theta^t``, shape (B,)."""
        return self.mu + self.G[:self.m, self.block(t)].T @ self.z[:self.m]

    def cov_times(self, t: int, x: np.ndarray) -> np.ndarray:
        """``Cov(theta^t | D) @ x``, shape (B,)."""
        out = self.Ctt[t] @ x
        if self.m:
            Gt = self.G[:self.m, self.block(t)]
            out -= Gt.T @ (Gt @ x)
        return out

    def cov_diag(self, t: int) -> np.ndarray:
        return self.diag[self.block(t)]


class _MultiTargetRun:
    """State of one multi-target run: data, joint posterior, per-target coresets, queues and traces."""

    TRACE = ("n", "estimate", "mean_R", "var", "width")

    def __init__(self, cfg: _MultiSettings, rng: np.random.Generator, verbose: bool, stop: bool = True) -> None:
        self.cfg, self.rng, self.verbose, self.stop_rule = cfg, rng, verbose, stop
        bk = cfg.buckets
        self.B = bk.n_buckets
        self.mu = bk.phi.mean(axis=1)
        sq = np.einsum("ij,ij->i", bk.phi, bk.phi)
        self.sqdist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (bk.phi @ bk.phi.T), 0.0)
        np.fill_diagonal(self.sqdist, 0.0)
        Kt, L = cfg.Kt, cfg.L
        self.params = LMCParams(np.ones(L), np.ones(L), rng.normal(0.0, 0.1, size=(L, Kt)), cfg.sigma2)
        self.order = rng.permutation(cfg.N)
        self.init_items = np.sort(self.order[:cfg.init])
        rest = self.order[cfg.init:]
        # after the shared block every target draws its own items: an independent random order per target (one
        # shared order would give every target the same items, so no target could learn about items it has not
        # seen from the others' scores)
        self.orders = [rest] + [rng.permutation(rest) for _ in range(Kt - 1)]
        self.queues = [_BucketQueues(bk.labels, self.B, o) for o in self.orders]
        self.rand_pos = np.zeros(Kt, dtype=np.int64)
        self.evaluated = np.zeros((Kt, cfg.N), bool)
        self.counts = np.zeros((Kt, self.B), dtype=np.int64)
        self.totals = np.zeros(Kt)
        self.coresets: list[list[int]] = [[] for _ in range(Kt)]
        self.scores: list[list[float]] = [[] for _ in range(Kt)]
        self.t_obs: list[int] = []
        self.i_obs: list[int] = []
        self.b_obs: list[int] = []
        self.s_obs: list[float] = []
        self.order_log: list[tuple[int, int]] = []
        self.traces: list[dict[str, list]] = [{k: [] for k in self.TRACE} for _ in range(Kt)]
        self.stopped = np.zeros(Kt, bool)
        self.fits: list[dict[str, Any]] = []
        self.post: _JointPosterior | None = None
        self.rounds_since_fit = 0

    # ------------------------------------------------------- observing
    def _evaluate(self, t: int, item: int) -> None:
        s = self.cfg.scores[t](item)
        b = int(self.cfg.buckets.labels[item])
        self.evaluated[t, item] = True
        self.counts[t, b] += 1
        self.totals[t] += s
        self.coresets[t].append(int(item))
        self.scores[t].append(s)
        self.t_obs.append(t)
        self.i_obs.append(int(item))
        self.b_obs.append(b)
        self.s_obs.append(s)
        if self.post is not None:
            self.post.add(t, b, s - float(self.mu[b]), self.params.sigma2 * float(self.cfg.buckets.sizes[b]))

    def initial_block(self) -> None:
        for t in range(self.cfg.Kt):
            for item in self.init_items.tolist():
                self._evaluate(t, item)
        self.fit()
        for t in range(self.cfg.Kt):
            self.record(t)

    # ---------------------------------------------------------- fitting
    def fit(self) -> None:
        """AdamW on the marginal likelihood of (a random subset of) the observations; then rebuild the posterior."""
        cfg = self.cfg
        t_obs, b_obs, s_obs = (np.asarray(v) for v in (self.t_obs, self.b_obs, self.s_obs))
        m = t_obs.size
        sub = self._fit_subset(np.asarray(self.i_obs), cfg.fit_max_obs)
        steps = max(cfg.min_fit_steps, round(cfg.fit_steps / (1 + len(self.fits))))
        L, Kt = cfg.L, cfg.Kt
        Kr = cfg.R.shape[0]
        ub, pos = np.unique(b_obs[sub], return_inverse=True)
        sq = self.sqdist[np.ix_(ub, ub)]
        sizes = cfg.buckets.sizes[b_obs[sub]].astype(float)
        resid = s_obs[sub] - self.mu[b_obs[sub]]

        obj = LMCObjective(cfg.kernels, Kr, sq, pos.ravel(), t_obs[sub], sizes, resid, Kt)

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            out = obj(LMCParams.from_vector(x, L, Kt), gradient=True)
            assert isinstance(out, tuple)
            return out

        lower = np.concatenate([np.full(2 * L, LMC_LOWER), np.full(L * Kt, -np.inf), [LMC_LOWER]])
        x, f, f0 = _adamw(fun, self.params.vector(), lower, steps, cfg.lr, cfg.weight_decay)
        self.params = LMCParams.from_vector(x, L, Kt)
        self.fits.append({"n_obs": int(m), "n_fit_obs": int(sub.size), "steps": steps, "nll_start": f0, "nll": f,
                          "n_fit_buckets": int(ub.size), "form": obj.form})
        progress(self.verbose, f"bayesame-multi: fit {len(self.fits)} on {sub.size} of {m} observations, "
                               f"{steps} AdamW steps, nll {f0:.4g} -> {f:.4g}")
        cap = min(m + cfg.Kt * (cfg.F + 1), cfg.Kt * cfg.max_items)  # to the next fit; grows if needed
        self.post = _JointPosterior(cfg, self.params, self.sqdist, self.mu, cap)
        self.post.rebuild(t_obs, b_obs, s_obs - self.mu[b_obs],
                          self.params.sigma2 * cfg.buckets.sizes[b_obs].astype(float))

    def _fit_subset(self, i_obs: np.ndarray, cap: int) -> np.ndarray:
        """Observations of a random subset of items (all targets' scores of each item kept together), ``<= cap``.

        Keeping an item's observations together keeps the cross-target pairs the
        weights are learned from; items are taken in a seeded random order
        while they fit under the cap.
        """
        m = i_obs.size
        if m <= cap:
            return np.arange(m)
        items, inv, cnt = np.unique(i_obs, return_inverse=True, return_counts=True)
        order = self.rng.permutation(items.size)
        keep = np.zeros(items.size, bool)
        room = cap
        for u in order.tolist():
            if cnt[u] <= room:
                keep[u] = True
                room -= int(cnt[u])
        return np.flatnonzero(keep[inv.ravel()])

    # ------------------------------------------------------- per target
    def _noise(self) -> np.ndarray:
        return self.params.sigma2 * self.cfg.buckets.sizes.astype(float)

    def _r(self, t: int) -> np.ndarray:
        return (self.cfg.buckets.sizes - self.counts[t]).astype(float)

    def gains(self, t: int) -> np.ndarray:
        """Single-item gain about ``R^t`` of an item of each bucket, shape (B,) (``-inf``: none left for ``t``)."""
        assert self.post is not None
        return item_gains(self.cfg.buckets.sizes, self.counts[t], self._noise(), self.post.cov_times(t, self._r(t)),
                          self.post.cov_diag(t))

    def record(self, t: int) -> None:
        assert self.post is not None
        cfg, tr = self.cfg, self.traces[t]
        mean = self.post.mean(t)
        r = self._r(t)
        var = posterior_var_R(cfg.buckets.sizes, self.counts[t], self._noise(), self.post.cov_times(t, r))
        n = len(self.coresets[t])
        tr["n"].append(n)
        tr["estimate"].append(unified_estimate(cfg.buckets.sizes, self.counts[t], mean, self.totals[t], n,
                                               cfg.unique))
        tr["mean_R"].append(float((self.totals[t] + r @ mean) / cfg.N))
        tr["var"].append(var)
        tr["width"].append(2.0 * Z975 * math.sqrt(var))
        if self.stop_rule and _done(tr, len(tr["n"]), cfg.W, cfg.eps1, cfg.eps2):
            self.stopped[t] = True

    def total_n(self) -> int:
        return int(sum(len(c) for c in self.coresets))

    def can_continue(self, t: int) -> bool:
        return (not self.stopped[t]) and len(self.coresets[t]) < self.cfg.max_items

    def _random_item(self, t: int) -> int:
        rest = self.orders[t]
        while self.evaluated[t, rest[self.rand_pos[t]]]:
            self.rand_pos[t] += 1
        item = int(rest[self.rand_pos[t]])
        self.rand_pos[t] += 1
        return item

    def step_round_robin(self) -> bool:
        """One round: every running target adds one item. False when none can."""
        running = [t for t in range(self.cfg.Kt) if self.can_continue(t)]
        for t in running:
            item = self.queues[t].pop(int(np.argmax(self.gains(t)))) if self.cfg.active else self._random_item(t)
            self._evaluate(t, item)
            self.order_log.append((t, item))
            self.record(t)
        return bool(running)

    def step_average(self) -> bool:
        """``Kt`` evaluations, each on the item of largest gain averaged over the running targets."""
        Kt = self.cfg.Kt
        did = False
        for _ in range(Kt):
            running = [t for t in range(Kt) if self.can_continue(t)]
            if not running:
                break
            if self.cfg.active:
                G = np.array([self.gains(t) for t in running])  # (R, B); -inf where t has nothing left
                avail = np.isfinite(G)
                avg = np.where(avail, np.maximum(G, 0.0), 0.0).mean(axis=0)
                avg[~avail.any(axis=0)] = -np.inf
                b = int(np.argmax(avg))
                who = [t for t, ok in zip(running, avail[:, b]) if ok]
                t = int(who[int(self.rng.integers(len(who)))])
                item = self.queues[t].pop(b)
            else:
                t = int(running[int(self.rng.integers(len(running)))])
                item = self._random_item(t)
            self._evaluate(t, item)
            self.order_log.append((t, item))
            self.record(t)
            did = True
        return did

    def result(self) -> MultiTargetResult:
        cfg = self.cfg
        out = []
        p = self.params
        for t in range(cfg.Kt):
            tr = self.traces[t]
            half = Z975 * math.sqrt(tr["var"][-1])
            m = tr["mean_R"][-1]
            out.append(EvaluationResult(
                estimate=float(tr["estimate"][-1]), interval=(m - half, m + half),
                coreset=np.asarray(self.coresets[t], dtype=np.int64), scores=np.asarray(self.scores[t], dtype=float),
                trace={k: np.asarray(v) for k, v in tr.items()}, stopped=bool(self.stopped[t]),
                method="bayesame-multi",
                info={"target": t, "regime": "unique" if cfg.unique else "non-unique", "active": cfg.active,
                      "n_buckets": self.B, "N": cfg.N, "W": cfg.W, "eps1": cfg.eps1, "eps2": cfg.eps2,
                      "init": cfg.init},
            ))
        info = {"Kt": cfg.Kt, "L": cfg.L, "kernels": cfg.kernels, "strategy": cfg.strategy, "init": cfg.init,
                "regime": "unique" if cfg.unique else "non-unique", "active": cfg.active, "binary": cfg.binary,
                "N": cfg.N, "n_buckets": self.B, "F": cfg.F, "lr": cfg.lr, "alpha": p.alpha.copy(),
                "beta": p.beta.copy(), "W_latent": p.W.copy(), "sigma2": p.sigma2, "fits": list(self.fits)}
        order = np.asarray(self.order_log, dtype=np.int64).reshape(-1, 2)
        return MultiTargetResult(tuple(out), order, info)


def bayesame_multi_evaluate(reference_scores: Any, targets: Any, *, L: int | None = None,
                            kernels: Sequence[str] | None = None, strategy: str = "round-robin",
                            init_fraction: float = 0.1, eps1: float = 0.005, eps2: float = 0.02, W: int | None = None,
                            N0: int = 10, sigma2: float | None = None, lr: float | None = None, F: int = 50,
                            fit_steps: int = 500, min_fit_steps: int = 50, fit_max_obs: int = 600,
                            weight_decay: float = 0.01, tol: float | None = None, selection: str = "auto",
                            max_items: int | None = None, stop: bool = True, seed: Any = None,
                            verbose: bool = False, blas_threads: int | None = 1) -> MultiTargetResult:
    """BayesAME multi-target evaluation: a coregionalised prior over every target's bucket abilities.

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        Full scores of the reference models; finite.
    targets : array_like of shape (Kt, N), or sequence of Kt targets
        Each target an array of shape (N,) (read only where evaluated) or a
        callable ``item -> score``.
    L : int, optional
        Number of shared latent vectors (default ``Kt``, the paper's).
    kernels : sequence of str, length L, optional
        Kernel of each latent vector, ``"se"`` or ``"matern32"`` (default half
        and half, :func:`default_kernels`).
    strategy : {"round-robin", "average"}
        The targets take turns, each choosing by its own information gain (the
        paper's method); or the item of largest gain averaged over the targets,
        on a random target (the paper's alternative).
    init_fraction : float
        Share of the items evaluated on every target first (default 0.1).
    eps1, eps2, W : float, float, int
        Each target's stopping rule, on its own evaluations (defaults 0.005,
        0.02, 30).
    N0 : int
        Margin of the unique regime ``B >= N - N0`` (estimator weight, and
        ``selection="auto"``).
    sigma2 : float, optional
        Initial noise variance (learned; default 0.1 for binary scores, 0.01
        otherwise).
    lr : float, optional
        AdamW learning rate (default 0.01 binary, 0.001 continuous).
    F : int
        Refit the hyper-parameters every ``F`` rounds (``F`` items per target;
        ``F * Kt`` evaluations with ``strategy="average"``).
    fit_steps, min_fit_steps : int
        AdamW steps of the first fit; the ``j``-th fit takes
        ``max(min_fit_steps, fit_steps / j)``.
    fit_max_obs : int
        The marginal likelihood of a fit uses at most this many observations:
        every target's scores on a seeded random subset of the items (a fresh
        subset each fit; the project's cap on the ``O(m^3)`` cost per AdamW
        step; the default keeps the whole initial block of 10 targets x 10 % of
        up to 600 items). The posterior always uses every observation.
    weight_decay : float
        AdamW's decoupled weight decay (default 0.01).
    tol : float, optional
        Bucketing tolerance for continuous reference scores.
    selection : {"auto", "active", "random"}
        By information gain in the unique regime (``"auto"``), always, or
        never (random items: each target in its own seeded random order, so
        different targets evaluate different items after the initial block).
    max_items : int, optional
        Largest coreset per target (default N).
    stop : bool
        Apply the stopping rule (False: run every target to ``max_items``).
    seed : int or numpy Generator, optional
        Seed of every random choice (initial block, orders, weights' start, fit subsets).
    verbose : bool
        Progress lines (fits, every 10 rounds).
    blas_threads : int, optional
        BLAS threads during the run when ``threadpoolctl`` is installed (default
        1: the many small factorisations here run several times faster on one
        thread, especially on a shared machine); None leaves BLAS as it is.

    Returns
    -------
    MultiTargetResult
        Per target an :class:`~benchsel.formulations.bayes.evaluate.EvaluationResult`.
    """
    cfg = _multi_settings(reference_scores, targets, L=L, kernels=kernels, strategy=strategy,
                          init_fraction=init_fraction, eps1=eps1, eps2=eps2, W=W, N0=N0, sigma2=sigma2, lr=lr, F=F,
                          fit_steps=fit_steps, min_fit_steps=min_fit_steps, fit_max_obs=fit_max_obs,
                          weight_decay=weight_decay, tol=tol, selection=selection, max_items=max_items)
    if blas_threads is not None:
        blas_threads = check_int(blas_threads, "blas_threads", low=1)
    with _blas_limit(blas_threads):
        return _run(cfg, check_rng(seed), verbose, stop)


@contextlib.contextmanager
def _blas_limit(threads: int | None) -> Iterator[None]:
    """Limit BLAS to ``threads`` threads when threadpoolctl is available (else do nothing)."""
    if threads is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits  # optional (scikit-learn installs it)
    except ImportError:
        yield
        return
    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def _run(cfg: _MultiSettings, rng: np.random.Generator, verbose: bool, stop: bool) -> MultiTargetResult:
    run = _MultiTargetRun(cfg, rng, verbose, stop)
    run.initial_block()
    step = run.step_round_robin if cfg.strategy == "round-robin" else run.step_average
    rounds = 0
    while True:
        if not step():
            break
        rounds += 1
        run.rounds_since_fit += 1
        if run.rounds_since_fit >= cfg.F and any(run.can_continue(t) for t in range(cfg.Kt)):
            run.rounds_since_fit = 0
            run.fit()
        if verbose and rounds % 10 == 0:
            est = ", ".join(f"{tr['estimate'][-1]:.3f}" for tr in run.traces)
            progress(True, f"bayesame-multi: round {rounds}, coresets {run.total_n()} items, estimates {est}")
    return run.result()
