"""BayesAME's sequential peers (paper section 5.1 and appendix A.2) with the paper's settings.

* :func:`seq_apw_evaluate` -- Seq-APW: AnchorPoints weighted, made sequential. Each step adds the item that
  most improves the covering of the items under the correlation distance ``1 - corr`` of the reference
  models' scores (greedy facility location, lazy evaluation); every item joins its nearest anchor and
  ``Rhat = sum_{i in C} w_i s_i`` with ``w_i`` the share of items in anchor ``i``'s cluster;
  ``Var_R = s^2 (sum w_i^2) (N - n_eff) / N``, ``n_eff = (sum w_i)^2 / sum w_i^2`` (paper Eq. 9).
* :func:`bayes_rs_learn_evaluate` -- Bayes-RS-Learn: random items; a Bayesian ridge regression (evidence
  maximisation, scikit-learn's ``BayesianRidge`` defaults) across the reference models of the full score
  ``R*_r`` on the coreset scores ``s_C^r``; ``Rhat = s_C^T mu_beta + b``,
  ``Var_R = x^T Sigma_beta x + 1/alpha`` with ``x = s_C - xm_C`` (``xm`` the references' mean coreset
  scores: the design is centred, as in scikit-learn's ``predict(return_std=True)``).
* :func:`aipw_evaluate` -- plain AIPW of benchmark-prediction: random items; a ridge regression
  (penalty 10, intercept) of the target's item scores on the items' reference score vectors, fitted on the
  coreset; ``Rhat = mean_C s + (mean_U mu - mean_C mu) / (1 + n/(N - n))``.
* :func:`bayes_cvo_evaluate` -- BayesAME's out-of-sample control-variate estimator ``Rhat_CVO``
  (appendix A.2) on a random coreset: every coreset item is scored against the posterior that leaves it
  out (:func:`cvo_estimate`, closed-form leave-one-out).

All return :class:`~benchsel.formulations.bayes.evaluate.EvaluationResult` with per-step traces.
"""
from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ..core.errors import InvalidInputError
from ..core.validation import as_array, check_float, check_rng
from ..item_distances import selection_distances
from .evaluate import EvaluationResult, _bayesame_settings, _common, _done, _run_bayesame, _target
from .model import Z975, BayesModel

__all__ = [
    "AIPW_ALPHA",
    "aipw_evaluate",
    "apw_variance",
    "bayes_cvo_evaluate",
    "bayes_rs_learn_evaluate",
    "cvo_estimate",
    "seq_apw_evaluate",
]

#: Ridge penalty of benchmark-prediction's AIPW (``sklearn.linear_model.Ridge(alpha=10)``).
AIPW_ALPHA = 10.0


def _references(reference_scores: Any) -> np.ndarray:
    R = as_array(reference_scores, "reference_scores", ndim=2, shape_doc="(Kr, N)")
    if R.shape[1] < 2:
        raise InvalidInputError(f"reference_scores: expected at least 2 items, got shape {R.shape}")
    return R


def _result(trace: dict[str, list], order: np.ndarray, s: np.ndarray, n: int, stopped: bool, method: str,
            info: dict[str, Any]) -> EvaluationResult:
    half = Z975 * math.sqrt(max(trace["var"][-1], 0.0))
    est = trace["estimate"][-1]
    return EvaluationResult(est, (est - half, est + half), np.asarray(order[:n], dtype=np.int64), s[:n].copy(),
                            {k: np.asarray(v) for k, v in trace.items()}, stopped, method, info)


def _record(trace: dict[str, list], n: int, est: float, var: float) -> None:
    trace["n"].append(n)
    trace["estimate"].append(est)
    trace["var"].append(var)
    trace["width"].append(2.0 * Z975 * math.sqrt(max(var, 0.0)))


def _drive(score: Any, pick: Any, update: Any, *, max_items: int, stop: bool, W: int, eps1: float, eps2: float,
           extra: tuple[str, ...] = ()) -> tuple[dict[str, list], np.ndarray, np.ndarray, int, bool]:
    """The common sequential loop: at step ``j`` the item ``pick(j)`` is evaluated, ``update(item, s_C, C)``
    returns ``(estimate, var, {extra key: value})``, the step is recorded and the stopping rule checked.

    Returns
    -------
    trace, items (shape (max_items,)), scores (shape (max_items,)), n (items evaluated), stopped
    """
    trace: dict[str, list] = {k: [] for k in ("n", "estimate", "var", "width", *extra)}
    order = np.empty(max_items, dtype=np.int64)
    s = np.empty(max_items)
    stopped = False
    n = 0
    for j in range(1, max_items + 1):
        i = int(pick(j))
        order[j - 1] = i
        s[j - 1] = score(i)
        n = j
        est, var, more = update(i, s[:n], order[:n])
        _record(trace, n, est, var)
        for k, val in more.items():
            trace[k].append(val)
        if stop and _done(trace, j, W, eps1, eps2):
            stopped = True
            break
    return trace, order, s, n, stopped


# ================================================================= Seq-APW
def apw_variance(weights: np.ndarray, scores: np.ndarray, N: int) -> float:
    """Paper Eq. 9: ``s^2 (sum w_i^2) (N - n_eff) / N`` with ``n_eff = (sum w)^2 / sum w^2``.

    Parameters
    ----------
    weights : ndarray, shape (n,)
        Non-negative weights of the coreset items (any scale; normalised to sum 1 here).
    scores : ndarray, shape (n,)
        The target's coreset scores (``s`` is their sample standard deviation).
    N : int
        Benchmark size.

    Returns
    -------
    float
        ``inf`` while ``n < 2``.
    """
    w = np.asarray(weights, dtype=float)
    if w.size < 2:
        return math.inf
    w = w / w.sum()
    sw2 = float(w @ w)
    n_eff = 1.0 / sw2
    return float(np.var(scores, ddof=1)) * sw2 * max(N - n_eff, 0.0) / N


class _Covering:
    """Greedy facility location on ``D`` (lazy evaluation): ``next()`` is the item of largest gain
    ``sum_j max(d_j - D[c, j], 0)``, ``d_j`` the distance of item ``j`` to its nearest anchor (2, the
    largest correlation distance, before any anchor); ties go to the lowest index."""

    def __init__(self, D: np.ndarray) -> None:
        self.D = D
        N = D.shape[0]
        self.near_d = np.full(N, 2.0)
        self.near = np.full(N, -1, dtype=np.int64)  # position of the nearest anchor in the coreset
        self.counts: list[int] = []
        gains = np.sum(2.0 - D, axis=1)
        self.heap = [(-float(g), int(i)) for i, g in enumerate(gains)]
        heapq.heapify(self.heap)

    def _gain(self, c: int) -> float:
        return float(np.sum(np.maximum(self.near_d - self.D[c], 0.0)))

    def next(self) -> int:
        while True:
            _, c = heapq.heappop(self.heap)
            g = self._gain(c)
            if not self.heap or (-g, c) <= self.heap[0]:
                return c
            heapq.heappush(self.heap, (-g, c))

    def add(self, c: int) -> None:
        """Make ``c`` an anchor: the items strictly nearer to it than to their anchor join its cluster (every
        item joins the first anchor, anti-correlated ones at distance 2 included)."""
        p = len(self.counts)
        moved = (self.D[c] < self.near_d) | (self.near < 0)
        moved[c] = True
        old = self.near[moved]
        old = old[old >= 0]
        self.counts.append(int(moved.sum()))
        for q, k in zip(*np.unique(old, return_counts=True)):
            self.counts[int(q)] -= int(k)
        self.near_d[moved] = self.D[c, moved]
        self.near_d[c] = 0.0
        self.near[moved] = p


def seq_apw_evaluate(reference_scores: Any, target: Any, *, eps1: float = 0.005, eps2: float = 0.02,
                     W: int | None = None, max_items: int | None = None, stop: bool = True,
                     seed: Any = None) -> EvaluationResult:
    """Seq-APW: anchor points weighted, sequential (paper section 5.1, baseline 2).

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
    target : array_like of shape (N,), or callable ``item -> score``
    eps1, eps2, W, max_items, stop
        As in :func:`~benchsel.formulations.bayes.evaluate.bayesame_evaluate` (``W`` default 30).
    seed : int or Generator, optional
        Checked for the common interface; the covering order is deterministic (ties: lowest index).

    Notes
    -----
    The distance is ``1 - Pearson`` over the reference models (an item every reference model scored the
    same correlates 0 with every other, as in AnchorPoints' ``corrs[isnan] = 0``). The first anchor is the
    item of largest total correlation (the 1-medoid); each later one the largest covering gain.
    """
    R = _references(reference_scores)
    N = R.shape[1]
    score, _ = _target(target, N)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N, default_W=30)
    assert W is not None
    check_rng(seed)
    cov = _Covering(selection_distances(R.T, np.arange(N), "correlation"))

    def pick(j: int) -> int:
        c = cov.next()
        cov.add(c)
        return c

    def update(i: int, sC: np.ndarray, C: np.ndarray) -> tuple[float, float, dict[str, float]]:
        w = np.asarray(cov.counts, dtype=float) / N
        return float(w @ sC), apw_variance(w, sC, N), {}

    trace, order, s, n, stopped = _drive(score, pick, update, max_items=max_items, stop=stop, W=W, eps1=eps1,
                                         eps2=eps2)
    return _result(trace, order, s, n, stopped, "seq-apw", {"N": N, "W": W, "eps1": eps1, "eps2": eps2})


# ========================================================== Bayes-RS-Learn
def _evidence_dual(ev: np.ndarray, q: np.ndarray, Xc_cols: np.ndarray, U: np.ndarray, yty: float, n: int,
                   max_iter: int = 300, tol: float = 1e-3, a1: float = 1e-6, a2: float = 1e-6, l1: float = 1e-6,
                   l2: float = 1e-6) -> tuple[np.ndarray, float, float]:
    """Bayesian ridge evidence updates (scikit-learn's ``BayesianRidge``) in the dual eigenbasis.

    ``G = Xc Xc^T = U diag(ev) U^T`` (``n`` samples by ``p`` features; ``ev`` zero on dropped directions),
    ``q = U^T yc``. The primal coefficients are ``Xc^T U c`` with ``c = q / (ev + lam/alpha)``.

    Returns
    -------
    c : ndarray, shape (n,)
        Dual coefficients at the final ``alpha, lam``.
    alpha, lam : float
    """
    keep = ev > 0
    alpha = 1.0 / (yty / n + float(np.finfo(float).eps))
    lam = 1.0
    coef_old = None
    for _ in range(max_iter):
        c = np.where(keep, q / (ev + lam / alpha), 0.0)
        rmse = float(np.sum((q - ev * c) ** 2)) + max(yty - float(q @ q), 0.0)
        gamma = float(np.sum(alpha * ev[keep] / (lam + alpha * ev[keep])))
        lam = (gamma + 2 * l1) / (float(np.sum(ev * c * c)) + 2 * l2)
        alpha = (n - gamma + 2 * a1) / (rmse + 2 * a2)
        coef = Xc_cols @ (U @ c)
        if coef_old is not None and float(np.sum(np.abs(coef_old - coef))) < tol:
            break
        coef_old = coef
    return np.where(keep, q / (ev + lam / alpha), 0.0), float(alpha), float(lam)


def bayes_rs_learn_evaluate(reference_scores: Any, target: Any, *, eps1: float = 0.005, eps2: float = 0.02,
                            W: int | None = None, max_items: int | None = None, stop: bool = True,
                            seed: Any = None) -> EvaluationResult:
    """Bayes-RS-Learn (paper section 5.1, baseline 5): random items, Bayesian ridge across reference models.

    With ``x_r = s_C^{r}`` (reference model ``r``'s coreset scores, shape (n,)) and ``y_r = R*_r`` its full
    score, a Bayesian ridge regression ``y = x^T beta + b + e`` (Gamma(1e-6, 1e-6) hyper-priors, intercept,
    scikit-learn's defaults) is fitted on the ``Kr`` reference models; then
    ``Rhat = s_C^T mu_beta + b`` and ``Var_R = x^T Sigma_beta x + 1/alpha`` for the target's ``s_C``, with
    ``x = s_C - xm_C`` centred by the reference models' mean coreset scores (the paper writes ``s_C``;
    scikit-learn's ``predict(return_std=True)``, which the paper used, centres).

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        At least 2 reference models.
    target, eps1, eps2, W, max_items, stop, seed
        As in :func:`~benchsel.formulations.bayes.evaluate.bayesame_evaluate` (``W`` default 30).

    Notes
    -----
    The regression has ``Kr`` samples and ``n`` features: it is solved in the ``Kr x Kr`` dual (the Gram
    matrix of the centred design, updated by one outer product per item). ``Sigma_beta`` is the full
    posterior covariance ``(alpha Xc^T Xc + lam I)^{-1}``, so directions of ``x`` outside the span of the
    references' coreset scores carry the prior variance ``1/lam`` (scikit-learn's ``sigma_`` keeps only the
    thin-SVD directions). Eigenvalues below ``1e-10`` of the largest are treated as zero. The trace adds the
    noise precision ``alpha`` and the weight precision ``lam`` of each step's fit.
    """
    R = _references(reference_scores)
    Kr, N = R.shape
    if Kr < 2:
        raise InvalidInputError(f"reference_scores: expected at least 2 reference models, got {Kr}")
    score, _ = _target(target, N)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N, default_W=30)
    assert W is not None
    perm = check_rng(seed).permutation(N)
    y = R.mean(axis=1)
    ym = float(y.mean())
    yc = y - ym
    yty = float(yc @ yc)
    Rc = R - R.mean(axis=0)  # centred over the reference models, column by column
    G = np.zeros((Kr, Kr))
    v = np.zeros(Kr)  # Xc (s_C - xm_C) = sum_c (s_c - xm_c) xc_c
    x2 = np.zeros(1)  # ||s_C - xm_C||^2
    xm = R.mean(axis=0)

    def update(i: int, sC: np.ndarray, C: np.ndarray) -> tuple[float, float, dict[str, float]]:
        xc = Rc[:, i]
        G[...] += np.outer(xc, xc)
        v[...] += (sC[-1] - xm[i]) * xc
        x2[0] += (sC[-1] - xm[i]) ** 2
        ev, U = np.linalg.eigh(G)
        ev = np.where(ev > 1e-10 * max(float(ev[-1]), 1e-300), ev, 0.0)
        c, alpha, lam = _evidence_dual(ev, U.T @ yc, Rc[:, C].T, U, yty, Kr)
        uv = U.T @ v
        keep = ev > 0
        proj = uv[keep] ** 2 / ev[keep]  # (Vh (s_C - xm_C))_k^2, Vh = diag(1/S) U^T Xc
        var_w = float(np.sum(proj / (alpha * ev[keep] + lam))) + max(float(x2[0]) - float(proj.sum()), 0.0) / lam
        return ym + float(uv @ c), var_w + 1.0 / alpha, {"alpha": alpha, "lam": lam}

    trace, order, s, n, stopped = _drive(score, lambda j: perm[j - 1], update, max_items=max_items, stop=stop,
                                         W=W, eps1=eps1, eps2=eps2, extra=("alpha", "lam"))
    return _result(trace, order, s, n, stopped, "bayes-rs-learn", {"N": N, "W": W, "eps1": eps1, "eps2": eps2})


# ==================================================================== AIPW
def aipw_evaluate(reference_scores: Any, target: Any, *, ridge_alpha: float = AIPW_ALPHA, eps1: float = 0.005,
                  eps2: float = 0.02, W: int | None = None, max_items: int | None = None, stop: bool = True,
                  seed: Any = None) -> EvaluationResult:
    """Plain AIPW (benchmark-prediction's ``AIPWPred``), sequential: random items, ridge on the coreset.

    A ridge regression (penalty ``ridge_alpha``, unpenalised intercept) of the target's coreset scores on
    the items' reference score vectors ``phi_i`` gives ``mu_i`` for every item;
    ``Rhat = mean_C s + (mean_U mu - mean_C mu) / (1 + n/(N - n))`` (``= mean_C s`` once ``n = N``).

    The paper defines no variance for plain AIPW; ``Var_R`` here is the design-based variance of the
    difference estimator, ``s_e^2 / n * (N - n) / N`` with ``s_e`` the sample standard deviation of the
    residuals ``s_i - mu_i`` on the coreset (``inf`` while ``n < 2``).

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
    target : array_like of shape (N,), or callable
    ridge_alpha : float
        Ridge penalty (default 10, benchmark-prediction's ``Ridge(alpha=10)``).
    eps1, eps2, W, max_items, stop, seed
        As in :func:`~benchsel.formulations.bayes.evaluate.bayesame_evaluate` (``W`` default 30).
    """
    R = _references(reference_scores)
    Kr, N = R.shape
    lam = check_float(ridge_alpha, "ridge_alpha", low=0.0, low_open=True)
    score, _ = _target(target, N)
    eps1, eps2, W, max_items = _common(eps1, eps2, W, max_items, N, default_W=30)
    assert W is not None
    perm = check_rng(seed).permutation(N)
    Phi = R.T
    phi_all = Phi.sum(axis=0)
    sx, sxy, sxx = np.zeros(Kr), np.zeros(Kr), np.zeros((Kr, Kr))

    def update(i: int, sC: np.ndarray, C: np.ndarray) -> tuple[float, float, dict[str, float]]:
        n = sC.size
        sx[...] += Phi[i]
        sxy[...] += sC[-1] * Phi[i]
        sxx[...] += np.outer(Phi[i], Phi[i])
        ym = float(sC.mean())
        if n == N:
            return ym, 0.0, {}
        xm = sx / n
        coef = cho_solve(cho_factor(sxx - n * np.outer(xm, xm) + lam * np.eye(Kr)), sxy - n * xm * ym)
        mU = (phi_all - sx) / (N - n)
        est = ym + float((mU - xm) @ coef) / (1.0 + n / (N - n))
        if n < 2:
            return est, math.inf, {}
        e = sC - (Phi[C] @ coef + (ym - xm @ coef))
        return est, float(np.var(e, ddof=1)) / n * (N - n) / N, {}

    trace, order, s, n, stopped = _drive(score, lambda j: perm[j - 1], update, max_items=max_items, stop=stop,
                                         W=W, eps1=eps1, eps2=eps2)
    return _result(trace, order, s, n, stopped, "aipw",
                   {"N": N, "W": W, "eps1": eps1, "eps2": eps2, "ridge_alpha": lam})


# ===================================================== out-of-sample CV (A.2)
class _LooState:
    """``A = (K + D)^{-1}`` over the coreset items (item level), grown by one bordered-inverse step per item
    and rebuilt when ``alpha, beta`` change. ``K[i, j] = Sigma[b(i), b(j)]``, ``D_ii = sigma^2 N_b(i)``."""

    def __init__(self, model: BayesModel) -> None:
        self.model = model
        self.labels = model.buckets.labels
        self.sizes = model.buckets.sizes.astype(float)
        self.hyper: tuple[float, float] | None = None
        self.items: list[int] = []
        self.A = np.zeros((0, 0))

    def _set_hyper(self, alpha: float, beta: float) -> None:
        self.hyper = (alpha, beta)
        self.S = self.model.covariance(alpha, beta)  # (B, B)
        self.g_b = (self.S @ self.sizes) / self.model.N  # Cov(T, theta_b), T = (1/N) sum_b N_b theta_b
        if self.items:
            lab = self.labels[np.asarray(self.items)]
            K = self.S[np.ix_(lab, lab)] + np.diag(self.model.noise[lab])
            self.A = cho_solve(cho_factor(K), np.eye(lab.size))

    def add(self, item: int, alpha: float, beta: float) -> None:
        if self.hyper != (alpha, beta):
            self._set_hyper(alpha, beta)
        b = int(self.labels[item])
        k = self.S[b, self.labels[np.asarray(self.items, dtype=np.int64)]]
        d = float(self.S[b, b] + self.model.noise[b])
        c = self.A @ k
        schur = d - float(k @ c)
        n = len(self.items)
        A = np.empty((n + 1, n + 1))
        A[:n, :n] = self.A + np.outer(c, c) / schur
        A[:n, n] = A[n, :n] = -c / schur
        A[n, n] = 1.0 / schur
        self.A = A
        self.items.append(int(item))

    def estimate(self, scores: np.ndarray) -> float:
        lab = self.labels[np.asarray(self.items)]
        mu0 = self.model.prior_mean
        r = scores - mu0[lab]
        al = self.A @ r
        g = self.g_b[lab]
        t_all = float(self.sizes @ mu0) / self.model.N + float(g @ al)
        loo = al / np.diag(self.A)  # s_i - mu_{i | C \ i}
        return t_all + float(np.mean(loo * (1.0 - self.A @ g)))


def cvo_estimate(model: BayesModel, items: Any, scores: Any, *, alpha: float = 1.0, beta: float = 1.0) -> float:
    """BayesAME's out-of-sample control-variate estimate (appendix A.2)::

        Rhat_CVO = (1/n) sum_{i in C} ( s_i - mu_{i | C \\ i} + (1/N) sum_j mu_{j | C \\ i} )

    with ``mu_{j | C \\ i}`` the posterior mean of item ``j``'s bucket ability given every coreset item but
    ``i``. In closed form (``A = (K + D)^{-1}`` over the coreset, ``a = A (s - m)``, ``g_i = Cov(T, s_i)``,
    ``T = (1/N) sum_j theta_b(j)``): ``Rhat_CVO = E[T | C] + mean_i a_i / A_ii * (1 - (A g)_i)``.

    Parameters
    ----------
    model : BayesModel
    items : array_like of int, shape (n,)
        Coreset items; repeats allowed (independent evaluations, as when sampling with replacement).
    scores : array_like, shape (n,)
    alpha, beta : float
        Covariance hyper-parameters.

    Returns
    -------
    float
        Unbiased for ``R`` over coresets drawn uniformly with replacement (fixed ``alpha, beta``).
    """
    C = np.asarray(items, dtype=np.int64).ravel()
    if C.size == 0 or C.min() < 0 or C.max() >= model.N:
        raise InvalidInputError(f"items: expected a non-empty array of item indices in [0, {model.N}), got "
                                f"{C.size} items" + (f" in {C.min()}..{C.max()}" if C.size else ""))
    s = as_array(scores, "scores", shape=(C.size,), shape_doc=f"(n,) = ({C.size},), one per item")
    alpha = check_float(alpha, "alpha", low=0.0, low_open=True)
    beta = check_float(beta, "beta", low=0.0, low_open=True)
    st = _LooState(model)
    for i in C:
        st.add(int(i), alpha, beta)
    return st.estimate(s)


def bayes_cvo_evaluate(reference_scores: Any, target: Any, *, eps1: float = 0.005, eps2: float = 0.02,
                       W: int | None = None, max_items: int | None = None, stop: bool = True, seed: Any = None,
                       **bayesame_options: Any) -> EvaluationResult:
    """BayesAME-RS with the out-of-sample control-variate estimate (appendix A.2) as ``Rhat``.

    Items are drawn at random (the estimator's unbiasedness rests on it) and the posterior, its
    hyper-parameter refits and ``Var(R|C)`` (the width, the stopping rule's second condition) are those of
    :func:`~benchsel.formulations.bayes.evaluate.bayesame_evaluate` with ``selection="random"``;
    the estimate at step ``j`` is :func:`cvo_estimate` under the hyper-parameters in force before step
    ``j``'s refit (as BayesAME records ``Rhat``). The stopping rule is applied to the CVO trace.

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
    target : array_like of shape (N,), or callable
    eps1, eps2, W, max_items, stop, seed
        As in :func:`~benchsel.formulations.bayes.evaluate.bayesame_evaluate`.
    **bayesame_options
        ``sigma2``, ``N0``, ``F``, ``tol``, ``kernel``, ``alpha0``, ``beta0`` for the posterior.
    """
    for bad in ("selection", "batch_size", "batch_method", "batch_options", "verbose"):
        if bad in bayesame_options:
            raise InvalidInputError(f"{bad}: not an option of bayes_cvo_evaluate (items are drawn at random, "
                                    f"one at a time)")
    posterior: dict[str, Any] = {"N0": 10, "sigma2": None, "F": 50, "tol": None, "kernel": "se"}
    unknown = sorted(set(bayesame_options) - set(posterior) - {"alpha0", "beta0"})
    if unknown:
        raise InvalidInputError(f"{unknown[0]}: not an option of bayes_cvo_evaluate; the posterior's options: "
                                f"{', '.join([*posterior, 'alpha0', 'beta0'])}")
    posterior.update((k, v) for k, v in bayesame_options.items() if k in posterior)
    a0, b0 = bayesame_options.get("alpha0", 1.0), bayesame_options.get("beta0", 1.0)
    cfg = _bayesame_settings(reference_scores, target, eps1=eps1, eps2=eps2, W=W, max_items=max_items,
                             selection="random", batch_size=1, batch_method="smc", **posterior)
    bayes = _run_bayesame(cfg, a0, b0, check_rng(seed), {}, stop=False, verbose=False)
    run = bayes.result("random")
    info = dict(run.info)
    model = cfg.model
    a0, b0 = bayes.alpha0, bayes.beta0
    alphas = np.concatenate([[a0], run.trace["alpha"][:-1]])
    betas = np.concatenate([[b0], run.trace["beta"][:-1]])
    st = _LooState(model)
    trace: dict[str, list] = {k: [] for k in ("n", "estimate", "var", "width")}
    trace["mean_R"] = []
    stopped = False
    n = 0
    for j in range(1, run.n + 1):
        st.add(int(run.coreset[j - 1]), float(alphas[j - 1]), float(betas[j - 1]))
        n = j
        _record(trace, n, st.estimate(run.scores[:n]), float(run.trace["var"][j - 1]))
        trace["mean_R"].append(float(run.trace["mean_R"][j - 1]))
        if stop and _done(trace, j, info["W"], info["eps1"], info["eps2"]):
            stopped = True
            break
    half = Z975 * math.sqrt(max(trace["var"][-1], 0.0))
    m = trace["mean_R"][-1]
    return EvaluationResult(float(trace["estimate"][-1]), (m - half, m + half), run.coreset[:n].copy(),
                            run.scores[:n].copy(), {k: np.asarray(v) for k, v in trace.items()}, stopped,
                            "bayes-cvo", info)
