"""Sequential evaluation of a target model from a growing coreset (BayesAME, Algorithm 1) and baselines.

:func:`bayesame_evaluate` runs Algorithm 1 of BayesAME:

1. bucket the items by their reference score vectors; the regime is *unique*
   when ``B >= N - N0``;
2. each iteration adds the item of largest single-item information gain
   (unique regime) or a uniformly random item (otherwise, or with
   ``selection="random"``: the BayesAME-RS variant); with ``batch_size = k > 1``
   it adds a whole batch found by the batch search (``"smc"`` by default);
3. the target is evaluated on the new item(s), the posterior updated (Cholesky
   updates), the estimate ``Rhat`` (the unified estimator) recorded;
4. every ``F`` evaluated items ``alpha, beta`` are refitted by L-BFGS-B on the
   marginal likelihood;
5. it stops once ``j >= W``, the range of ``Rhat`` over the last ``W``
   iterations is ``<= eps1`` and the 95 % credible width
   ``2 * 1.96 * sqrt(Var(R | C)) <= eps2``.

Baselines with the same stopping rule: :func:`rs_mean_evaluate` (random
sampling, sample mean, finite-population variance) and
:func:`bayes_aipw_evaluate` (random sampling, Bayesian ridge regression of the
target's scores on the reference scores, AIPW estimate).

The target is an array of scores (shape (N,)) or a callable ``score(item) ->
float`` that evaluates the model on demand.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.clock import progress
from ..core.errors import InvalidInputError
from ..core.validation import as_array, check_choice, check_float, check_int, check_rng
from .model import KERNELS, Z975, BayesModel, bucketize
from .posterior import BatchData, SequentialPosterior
from .search import exhaustive_search, greedy_search, smc_search

__all__ = [
    "BayesianRidge",
    "EvaluationResult",
    "bayes_aipw_evaluate",
    "bayesame_evaluate",
    "rs_mean_evaluate",
    "stopping_point",
]


@dataclass(frozen=True, eq=False)
class EvaluationResult:
    """Outcome of a sequential evaluation.

    Attributes
    ----------
    estimate : float
        Final estimate of the full-benchmark score ``R``.
    interval : (float, float)
        95 % interval: the credible interval ``E[R|C] +- 1.96 sd(R|C)`` for
        BayesAME; ``estimate +- 1.96 sqrt(Var_R)`` for the baselines.
    coreset : ndarray of int64, shape (n,)
        Evaluated items, in evaluation order.
    scores : ndarray, shape (n,)
        Target scores on ``coreset``.
    trace : dict of str -> ndarray, each shape (J,)
        Per iteration ``j = 1..J``: ``n`` (coreset size), ``estimate``,
        ``var`` (``Var(R|C)`` or ``Var_R``), ``width`` (``2 * 1.96 * sqrt(var)``);
        BayesAME adds ``mean_R``, ``alpha``, ``beta``.
    stopped : bool
        The stopping rule was met (False: ran out of items or hit ``max_items``).
    method : str
    info : dict
        Settings and facts (regime, number of buckets, sigma2, W, ...).
    """

    estimate: float
    interval: tuple[float, float]
    coreset: np.ndarray
    scores: np.ndarray
    trace: dict[str, np.ndarray]
    stopped: bool
    method: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.coreset.size)

    @property
    def width(self) -> float:
        return float(self.interval[1] - self.interval[0])


# ------------------------------------------------------------------ helpers
def stopping_point(estimates: Any, widths: Any, eps1: float, eps2: float, W: int) -> int | None:
    """First iteration ``j`` (1-based) at which the stopping rule holds, or None.

    The rule: ``j >= W``, ``max - min`` of ``estimates[j-W:j]`` ``<= eps1`` and
    ``widths[j-1] <= eps2``.

    Parameters
    ----------
    estimates, widths : array_like, shape (J,)
        Per-iteration estimate and 95 % width.
    eps1, eps2 : float
        Positive thresholds.
    W : int
        Window length (iterations).
    """
    eps1 = check_float(eps1, "eps1", low=0.0, low_open=True)
    eps2 = check_float(eps2, "eps2", low=0.0, low_open=True)
    W = check_int(W, "W", low=1)
    e = np.asarray(estimates, dtype=float)
    w = np.asarray(widths, dtype=float)
    if e.shape != w.shape or e.ndim != 1:
        raise InvalidInputError(f"widths: expected the shape of estimates {e.shape}, got {w.shape}")
    if e.size < W:
        return None
    win = np.lib.stride_tricks.sliding_window_view(e, W)
    ok = (win.max(axis=1) - win.min(axis=1) <= eps1) & (w[W - 1:] <= eps2)
    hit = np.flatnonzero(ok)
    return int(hit[0]) + W if hit.size else None


def _target(target: Any, N: int, name: str = "target") -> tuple[Callable[[int], float], np.ndarray | None]:
    """``score(item)`` for an array of ``N`` finite scores or a callable oracle (checked on every call)."""
    if callable(target):
        def score(i: int) -> float:
            v = target(int(i))
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise InvalidInputError(
                    f"{name}: expected the callable to return a number, got {type(v).__name__} for item {i}"
                ) from None
            if not math.isfinite(v):
                raise InvalidInputError(f"{name}: expected a finite score, got {v} for item {i}")
            return v
        return score, None
    t = as_array(target, name, ndim=1, shape_doc=f"(N,) = ({N},)")
    if t.size != N:
        raise InvalidInputError(
            f"{name}: reference and target item counts differ: reference_scores has N = {N} items, "
            f"{name} has {t.size}"
        )
    return (lambda i: float(t[i])), t


def _common(eps1: Any, eps2: Any, W: Any, max_items: Any, N: int, default_W: int | None = None
            ) -> tuple[float, float, int | None, int]:
    eps1 = check_float(eps1, "eps1", low=0.0, low_open=True)
    eps2 = check_float(eps2, "eps2", low=0.0, low_open=True)
    W = default_W if W is None else check_int(W, "W", low=1)
    max_items = N if max_items is None else check_int(max_items, "max_items", low=1, high=N, high_doc=f"N = {N}")
    return eps1, eps2, W, max_items


def _done(trace: dict[str, list], j: int, W: int, eps1: float, eps2: float) -> bool:
    if j < W:
        return False
    last = trace["estimate"][-W:]
    return (max(last) - min(last) <= eps1) and trace["width"][-1] <= eps2


# ================================================================ BayesAME
def bayesame_evaluate(reference_scores: Any, target: Any, *, eps1: float = 0.005, eps2: float = 0.02,
                      W: int | None = None, N0: int = 10, sigma2: float | None = None, alpha0: float = 1.0,
                      beta0: float = 1.0, F: int = 50, tol: float | None = None, kernel: str = "se",
                      selection: str = "auto", batch_size: int = 1, batch_method: str = "smc",
                      batch_options: Mapping[str, Any] | None = None, max_items: int | None = None,
                      stop: bool = True, seed: Any = None, verbose: bool = False) -> EvaluationResult:
    """BayesAME single-target sequential evaluation (Algorithm 1 of the paper).

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        Full scores of the reference models; finite.
    target : array_like of shape (N,), or callable ``item -> score``
        The target model's scores (read only where evaluated) or an oracle.
    eps1 : float
        Stability threshold: range of ``Rhat`` over the last ``W`` iterations (default 0.005).
    eps2 : float
        Maximum 95 % credible width ``2 * 1.96 * sqrt(Var(R|C))`` (default 0.02; the paper varies it).
    W : int, optional
        Window length in iterations (default 30; ``round(30 / batch_size)`` in batch mode).
    N0 : int
        Margin of the unique regime ``B >= N - N0`` (default 10).
    sigma2 : float, optional
        Noise variance (default ``1e-4`` in the unique regime, ``1e-1`` otherwise).
    alpha0, beta0 : float
        Initial hyper-parameters (default 1).
    F : int
        Refit ``alpha, beta`` (L-BFGS-B, lower bound ``1e-5``) every ``F`` evaluated items (default 50),
        from the current values and from ``(alpha0, beta0)``; the better fit wins.
    tol : float, optional
        Bucketing tolerance for continuous scores (default None: exact).
    kernel : {"se", "matern32"}
    selection : {"auto", "active", "random"}
        ``"auto"``: information gain in the unique regime, random otherwise
        (the paper's rule); ``"active"``: always by gain; ``"random"``:
        BayesAME-RS.
    batch_size : int
        Items added per iteration (1: Algorithm 1; ``k > 1``: the batch search
        picks ``k`` items jointly, "Myo" batch mode).
    batch_method : {"smc", "greedy", "exhaustive"}
        Batch search used when ``batch_size > 1`` (active selection only).
    batch_options : dict, optional
        Options for :func:`benchsel.formulations.bayes.search.smc_search`.
    max_items : int, optional
        Stop after this many evaluated items (default N).
    stop : bool
        Apply the stopping rule (False: run to ``max_items``, e.g. to trace RMSE curves).
    seed : int or numpy Generator, optional
        Seed of every random choice (random order, item within the chosen bucket, SMC).
    verbose : bool

    Returns
    -------
    EvaluationResult
        ``estimate``, 95 % credible ``interval``, ``coreset`` (evaluation
        order), ``scores``, ``trace`` (per iteration: ``n``, ``estimate``,
        ``mean_R``, ``var``, ``width``, ``alpha``, ``beta``), ``stopped``, ``info``.

    Notes
    -----
    Within a bucket, items are exchangeable under the model; the evaluator takes
    the next unevaluated item of the chosen bucket in a seeded random order. The
    random order is drawn first in every mode, so in the non-unique regime
    ``selection="auto"`` and ``"random"`` give identical runs for one seed.
    ``Rhat`` at iteration ``j`` is recorded before a hyper-parameter refit;
    ``Var(R|C)`` (and the width) after it.
    """
    cfg = _bayesame_settings(reference_scores, target, eps1=eps1, eps2=eps2, W=W, N0=N0, sigma2=sigma2, F=F,
                             tol=tol, kernel=kernel, selection=selection, batch_size=batch_size,
                             batch_method=batch_method, max_items=max_items)
    return _run_bayesame(cfg, alpha0, beta0, check_rng(seed), dict(batch_options or {}), stop=stop,
                         verbose=verbose).result(selection)


def _run_bayesame(cfg: _Settings, alpha0: float, beta0: float, rng: np.random.Generator,
                  batch_options: dict[str, Any], *, stop: bool, verbose: bool) -> _SingleTargetRun:
    """Algorithm 1's loop on checked settings (``stop``: apply the stopping rule); the finished run."""
    run = _SingleTargetRun(cfg, alpha0, beta0, rng, batch_options)
    j = 0
    while run.post.n < cfg.max_items:
        j += 1
        run.observe(run.choose(min(cfg.batch_size, cfg.max_items - run.post.n)))
        run.record()
        if verbose and (j % 50 == 0):
            progress(True, f"bayesame: n = {run.post.n}, estimate {run.trace['estimate'][-1]:.4f}, "
                           f"width {run.trace['width'][-1]:.4f}")
        if stop and _done(run.trace, j, cfg.W, cfg.eps1, cfg.eps2):
            run.stopped = True
            break
    return run


@dataclass(frozen=True)
class _Settings:
    """Checked settings of :func:`bayesame_evaluate` (defaults resolved)."""

    buckets: Any
    model: BayesModel
    score: Callable[[int], float]
    N: int
    eps1: float
    eps2: float
    W: int
    N0: int
    F: int
    sigma2: float
    batch_size: int
    batch_method: str
    max_items: int
    unique: bool
    active: bool


def _bayesame_settings(reference_scores: Any, target: Any, *, eps1: Any, eps2: Any, W: Any, N0: Any, sigma2: Any,
                       F: Any, tol: Any, kernel: str, selection: str, batch_size: Any, batch_method: str,
                       max_items: Any) -> _Settings:
    """Validate :func:`bayesame_evaluate`'s arguments and resolve its defaults (regime, sigma2, W): the one
    check of its arguments; the run and the model trust the settings."""
    buckets = bucketize(reference_scores, tol)
    N = buckets.n_items
    score, _ = _target(target, N)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N)
    N0 = check_int(N0, "N0", low=0)
    F = check_int(F, "F", low=1)
    check_choice(selection, "selection", ("auto", "active", "random"))
    check_choice(batch_method, "batch_method", ("smc", "greedy", "exhaustive"))
    k_batch = check_int(batch_size, "batch_size", low=1, high=N, high_doc=f"N = {N}")
    if W is None:
        W = 30 if k_batch == 1 else max(1, round(30 / k_batch))
    unique = buckets.unique_regime(N0)
    sigma2 = (1e-4 if unique else 1e-1) if sigma2 is None else check_float(sigma2, "sigma2", low=0.0, low_open=True)
    model = BayesModel._from_checked(buckets, sigma2=sigma2, kernel=check_choice(kernel, "kernel", KERNELS))
    active = selection == "active" or (selection == "auto" and unique)
    return _Settings(buckets, model, score, N, eps1, eps2, W, N0, F, float(model.sigma2), k_batch, batch_method,
                     max_items, unique, active)


class _BucketQueues:
    """Items of each bucket in a seeded random order; ``pop(b)`` takes the next one of bucket ``b``.

    Parameters
    ----------
    labels : ndarray of int, shape (N,)
        Bucket of each item.
    n_buckets : int
    order : ndarray of int, shape (n,)
        The items in the queue, in the random order (each item once).
    """

    def __init__(self, labels: np.ndarray, n_buckets: int, order: np.ndarray) -> None:
        lab_order = labels[order]
        srt = np.argsort(lab_order, kind="stable")
        self.starts = np.searchsorted(lab_order[srt], np.arange(n_buckets))
        self.queue = order[srt]
        self.taken = np.zeros(n_buckets, dtype=np.int64)

    def pop(self, b: int) -> int:
        item = int(self.queue[self.starts[b] + self.taken[b]])
        self.taken[b] += 1
        return item


class _SingleTargetRun:
    """The state of one :func:`bayesame_evaluate` run: posterior, queues, hyper-parameters, trace."""

    TRACE = ("n", "estimate", "mean_R", "var", "width", "alpha", "beta")

    def __init__(self, cfg: _Settings, alpha0: float, beta0: float, rng: np.random.Generator,
                 batch_options: dict[str, Any]) -> None:
        self.cfg, self.rng, self.batch_options = cfg, rng, batch_options
        self.alpha0, self.beta0 = float(alpha0), float(beta0)
        self.order = rng.permutation(cfg.N)  # drawn first in every mode (same runs for "auto" and "random")
        self.queues = _BucketQueues(cfg.buckets.labels, cfg.buckets.n_buckets, self.order)
        self.evaluated = np.zeros(cfg.N, bool)
        self.post = SequentialPosterior(cfg.model, alpha0, beta0)
        self.alpha, self.beta = self.alpha0, self.beta0
        self.trace: dict[str, list] = {k: [] for k in self.TRACE}
        self.rand_pos = 0
        self.next_fit = cfg.F
        self.stopped = False

    def _batch_buckets(self, k: int) -> list[int]:
        """Buckets of a batch of ``k`` items chosen jointly by the batch search."""
        cfg, post = self.cfg, self.post
        data = BatchData.from_posterior(cfg.model, post.cov(), post.counts, np.flatnonzero(self.evaluated), k)
        if cfg.batch_method == "smc":
            bb, _, _ = smc_search(data, self.rng, **self.batch_options)
        elif cfg.batch_method == "greedy":
            bb, _ = greedy_search(data)
        else:
            bb, _, _ = exhaustive_search(data, **self.batch_options)
        live = np.flatnonzero(cfg.buckets.sizes - post.counts > 0)
        return [int(live[b]) for b in bb]

    def choose(self, k: int) -> list[int]:
        """The next ``k`` items: by information gain (one or a batch) when active, else the random order."""
        if self.cfg.active:
            bks = [int(np.argmax(self.post.gains()))] if k == 1 else self._batch_buckets(k)
            return [self.queues.pop(b) for b in bks]
        new: list[int] = []
        while len(new) < k:
            item = int(self.order[self.rand_pos])
            self.rand_pos += 1
            if not self.evaluated[item]:
                new.append(item)
        return new

    def observe(self, items: list[int]) -> None:
        for item in items:
            self.evaluated[item] = True
            self.post.add(item, self.cfg.score(item))

    def record(self) -> None:
        """Append the iteration to the trace; refit ``alpha, beta`` when ``F`` more items are in (after ``Rhat``)."""
        post, trace = self.post, self.trace
        trace["n"].append(post.n)
        trace["estimate"].append(post.estimate(self.cfg.N0))
        if post.n >= self.next_fit:
            while self.next_fit <= post.n:
                self.next_fit += self.cfg.F
            self.alpha, self.beta, _ = self.cfg.model.fit(post.items, post.scores, alpha0=self.alpha, beta0=self.beta,
                                                          extra_starts=[(self.alpha0, self.beta0)])
            post.set_hyper(self.alpha, self.beta)
        var = post.var_R()
        trace["mean_R"].append(post.mean_R())
        trace["var"].append(var)
        trace["width"].append(2.0 * Z975 * math.sqrt(var))
        trace["alpha"].append(self.alpha)
        trace["beta"].append(self.beta)

    def result(self, selection: str) -> EvaluationResult:
        cfg, trace = self.cfg, self.trace
        half = Z975 * math.sqrt(trace["var"][-1])
        m = trace["mean_R"][-1]
        return EvaluationResult(
            estimate=float(trace["estimate"][-1]),
            interval=(m - half, m + half),
            coreset=np.asarray(self.post.items, dtype=np.int64),
            scores=np.asarray(self.post.scores, dtype=float),
            trace={k: np.asarray(v) for k, v in trace.items()},
            stopped=self.stopped,
            method="bayesame" if selection != "random" else "bayesame-rs",
            info={"regime": "unique" if cfg.unique else "non-unique", "active": cfg.active,
                  "n_buckets": cfg.buckets.n_buckets, "N": cfg.N, "sigma2": cfg.sigma2, "alpha": self.alpha,
                  "beta": self.beta, "W": cfg.W, "eps1": cfg.eps1, "eps2": cfg.eps2, "batch_size": cfg.batch_size,
                  "N0": cfg.N0, "F": cfg.F},
        )


# ================================================================= RS-Mean
def rs_mean_evaluate(target: Any, *, n_items: int | None = None, eps1: float = 0.005, eps2: float = 0.02,
                     W: int | None = None, max_items: int | None = None, stop: bool = True,
                     seed: Any = None) -> EvaluationResult:
    """RS-Mean: random items, sample-mean estimate, finite-population variance (paper Eq. 9 with ``w_i = 1/n``).

    ``Var_R = s^2 / n * (N - n) / N`` with ``s`` the sample standard deviation
    (infinite while ``n < 2``).

    Parameters
    ----------
    target : array_like of shape (N,), or callable ``item -> score``
    n_items : int, optional
        ``N``; required when ``target`` is a callable.
    eps1, eps2, W, max_items, stop, seed
        As in :func:`bayesame_evaluate` (``W`` default 30).
    """
    if callable(target):
        if n_items is None:
            raise InvalidInputError("n_items: expected the number of items N when target is a callable, got None")
        N = check_int(n_items, "n_items", low=2)
    else:
        N = int(np.asarray(target).shape[0]) if np.ndim(target) == 1 else -1
        if N < 0:
            raise InvalidInputError(f"target: expected an array of shape (N,), got shape {np.shape(target)}")
        if n_items is not None and n_items != N:
            raise InvalidInputError(
                f"target: reference and target item counts differ: n_items = {n_items}, target has {N}"
            )
    score, _ = _target(target, N)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N, default_W=30)
    assert W is not None  # default_W is given
    rng = check_rng(seed)
    order = rng.permutation(N)
    trace: dict[str, list] = {k: [] for k in ("n", "estimate", "var", "width")}
    s = np.empty(max_items)
    tot = tot2 = 0.0
    stopped = False
    n = 0
    for j in range(1, max_items + 1):
        v = score(order[j - 1])
        s[j - 1] = v
        n = j
        tot += v
        tot2 += v * v
        mean = tot / n
        if n >= 2:
            var_s = max((tot2 - n * mean * mean) / (n - 1), 0.0)
            var = var_s / n * (N - n) / N
        else:
            var = math.inf
        trace["n"].append(n)
        trace["estimate"].append(mean)
        trace["var"].append(var)
        trace["width"].append(2.0 * Z975 * math.sqrt(var))
        if stop and _done(trace, j, W, eps1, eps2):
            stopped = True
            break
    half = Z975 * math.sqrt(trace["var"][-1])
    est = trace["estimate"][-1]
    return EvaluationResult(est, (est - half, est + half), order[:n].astype(np.int64), s[:n].copy(),
                            {k: np.asarray(v) for k, v in trace.items()}, stopped, "rs-mean",
                            {"N": N, "W": W, "eps1": eps1, "eps2": eps2})


# ============================================================== Bayes-AIPW
class BayesianRidge:
    """Bayesian ridge regression with evidence maximisation (MacKay), from sufficient statistics.

    The model ``y = x^T w + b + e``, ``w ~ N(0, I / lambda)``, ``e ~ N(0, 1 / alpha)``
    with Gamma(1e-6, 1e-6) hyper-priors on ``alpha`` and ``lambda`` and an
    unpenalised intercept (data centred) — the same updates and defaults as
    scikit-learn's ``BayesianRidge``. Observations are added one at a time;
    :meth:`fit` works on ``X^T X``, ``X^T y`` (``O(p^3)`` per fit, independent of ``n``).

    Parameters
    ----------
    p : int
        Number of features.
    """

    def __init__(self, p: int, *, alpha_1: float = 1e-6, alpha_2: float = 1e-6, lambda_1: float = 1e-6,
                 lambda_2: float = 1e-6, max_iter: int = 300, tol: float = 1e-3) -> None:
        self.p = p
        self.a1, self.a2, self.l1, self.l2 = alpha_1, alpha_2, lambda_1, lambda_2
        self.max_iter, self.tol = max_iter, tol
        self.n = 0
        self.sx = np.zeros(p)
        self.sy = 0.0
        self.sxx = np.zeros((p, p))
        self.sxy = np.zeros(p)
        self.syy = 0.0
        self.coef = np.zeros(p)
        self.intercept = 0.0
        self.alpha = 1.0
        self.lam = 1.0
        self.sigma = np.eye(p)

    def add(self, x: np.ndarray, y: float) -> None:
        self.n += 1
        self.sx += x
        self.sy += y
        self.sxx += np.outer(x, x)
        self.sxy += x * y
        self.syy += y * y

    def fit(self) -> None:
        n = self.n
        if n == 0:
            return
        xm = self.sx / n
        ym = self.sy / n
        XtX = self.sxx - n * np.outer(xm, xm)
        Xty = self.sxy - n * xm * ym
        yty = max(self.syy - n * ym * ym, 0.0)
        ev, Q = np.linalg.eigh(0.5 * (XtX + XtX.T))
        ev = np.clip(ev, 0.0, None)
        qy = Q.T @ Xty
        var_y = yty / n
        alpha = 1.0 / (var_y + np.finfo(float).eps)
        lam = 1.0
        coef_old = None
        for _ in range(self.max_iter):
            coef_q = qy / (ev + lam / alpha)
            coef = Q @ coef_q
            rmse = max(yty - 2.0 * coef @ Xty + coef_q @ (ev * coef_q), 0.0)
            gamma = float(np.sum(alpha * ev / (lam + alpha * ev)))
            lam = (gamma + 2 * self.l1) / (float(coef @ coef) + 2 * self.l2)
            alpha = (n - gamma + 2 * self.a1) / (rmse + 2 * self.a2)
            if coef_old is not None and np.sum(np.abs(coef_old - coef)) < self.tol:
                break
            coef_old = coef
        coef_q = qy / (ev + lam / alpha)
        self.coef = Q @ coef_q
        self.intercept = float(ym - xm @ self.coef)
        self.alpha, self.lam = float(alpha), float(lam)
        self.sigma = (Q / (alpha * ev + lam)) @ Q.T

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X @ self.coef + self.intercept


def bayes_aipw_evaluate(reference_scores: Any, target: Any, *, eps1: float = 0.005, eps2: float = 0.02,
                        W: int | None = None, max_items: int | None = None, stop: bool = True,
                        seed: Any = None) -> EvaluationResult:
    """Bayes-AIPW: random items, Bayesian ridge of the target score on the reference scores, AIPW estimate.

    With ``mu_i = phi_i^T w + b`` (posterior mean; ``phi_i`` = reference scores of item ``i``)::

        Rhat  = mean_C s + 1/(1 + n/(N-n)) * (mean_U mu - mean_C mu)
        Var_R = [d^T Sigma_w d + (1/alpha)(1/n + 1/(N-n))] / (1 + n/(N-n))^2,   d = mean_U phi - mean_C phi

    (``Rhat = mean_C s`` and ``Var_R = 0`` once every item is evaluated).

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
    target : array_like of shape (N,), or callable
    eps1, eps2, W, max_items, stop, seed
        As in :func:`bayesame_evaluate` (``W`` default 30).
    """
    R = as_array(reference_scores, "reference_scores", ndim=2, shape_doc="(Kr, N)")
    Kr, N = R.shape
    if N < 2:
        raise InvalidInputError(f"reference_scores: expected at least 2 items, got shape {R.shape}")
    score, _ = _target(target, N)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N, default_W=30)
    assert W is not None  # default_W is given
    rng = check_rng(seed)
    order = rng.permutation(N)
    Phi = R.T  # (N, Kr)
    phi_all = Phi.sum(axis=0)
    br = BayesianRidge(Kr)
    trace: dict[str, list] = {k: [] for k in ("n", "estimate", "var", "width")}
    s = np.empty(max_items)
    phi_C = np.zeros(Kr)
    tot = 0.0
    stopped = False
    n = 0
    for j in range(1, max_items + 1):
        i = int(order[j - 1])
        v = score(i)
        s[j - 1] = v
        n = j
        tot += v
        phi_C += Phi[i]
        br.add(Phi[i], v)
        if n == N:
            est, var = tot / n, 0.0
        else:
            br.fit()
            mC = phi_C / n
            mU = (phi_all - phi_C) / (N - n)
            muU = float(mU @ br.coef + br.intercept)
            muC = float(mC @ br.coef + br.intercept)
            f = 1.0 + n / (N - n)
            est = tot / n + (muU - muC) / f
            d = mU - mC
            var = (float(d @ br.sigma @ d) + (1.0 / br.alpha) * (1.0 / n + 1.0 / (N - n))) / f ** 2
        trace["n"].append(n)
        trace["estimate"].append(est)
        trace["var"].append(var)
        trace["width"].append(2.0 * Z975 * math.sqrt(max(var, 0.0)))
        if stop and _done(trace, j, W, eps1, eps2):
            stopped = True
            break
    half = Z975 * math.sqrt(max(trace["var"][-1], 0.0))
    est = trace["estimate"][-1]
    return EvaluationResult(est, (est - half, est + half), order[:n].astype(np.int64), s[:n].copy(),
                            {k: np.asarray(v) for k, v in trace.items()}, stopped, "bayes-aipw",
                            {"N": N, "W": W, "eps1": eps1, "eps2": eps2})
