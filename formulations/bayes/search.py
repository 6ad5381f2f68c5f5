"""Searches of BayesAME's batch problem (used by the registered methods and by the sequential evaluators).

* ``"exhaustive"`` (exact): enumerates item sets of ``U`` (tiny cases) or, when
  that is smaller, bucket-count vectors (items of one bucket are exchangeable:
  ``beta`` depends only on how many items are taken per bucket); batched
  ``k x k`` solves. Returns termination ``"optimal"`` with ``bound`` = optimum.
* ``"smc"``: the paper's SMC batch search — a population of batches from warm
  starts (LARS path of the l1-relaxed QP; k-DPP samples with ``Sigma_U`` as
  kernel; k-means on the reference vectors, one item per cluster), improved by
  single swaps whose values come from a rank-2 Woodbury update of ``M^{-1}``
  (``O(k^2)`` per neighbour), resampled in proportion to fitness ``beta(A)``.
* ``"greedy"``: adds the item with the largest increase of ``beta`` ``k`` times.

The search space is the bucket space of :class:`benchsel.formulations.bayes.BatchData`:
a batch is a multiset of (compact) bucket ids, each bucket used at most as
often as it has unevaluated items; it is mapped back to item indices at the end.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..core.clock import Clock, progress
from ..core.errors import InvalidInputError
from .posterior import BatchData

__all__ = [
    "SwapState",
    "count_vectors",
    "exhaustive_search",
    "greedy_search",
    "kdpp_mcmc",
    "kdpp_sample",
    "kmeans_starts",
    "lars_start",
    "local_search",
    "smc_search",
]


# ================================================================ swap state
class SwapState:
    """A batch with ``M^{-1} = Sigma_U[A, A]^{-1}``; neighbour values by rank-2 Woodbury.

    Parameters
    ----------
    data : BatchData
    buckets : array_like of int, shape (k,)
        The batch as compact bucket ids (repeats allowed up to ``data.avail``).
    refresh_every : int
        Recompute ``M^{-1}`` exactly after this many Woodbury updates (drift control).

    Notes
    -----
    Swapping position ``m`` for bucket ``c`` changes row and column ``m`` of
    ``M``: ``M' = M + U V^T`` with ``U = [e_m, d - d_m e_m / 2]``,
    ``V = [d - d_m e_m / 2, e_m]`` and ``d = (new column) - (old column)``, so
    ``M'^{-1} = M^{-1} - M^{-1} U (I_2 + V^T M^{-1} U)^{-1} V^T M^{-1}`` and
    ``beta' = a'^T M'^{-1} a' / N^2`` cost ``O(k^2)`` (one product ``M^{-1} d``).
    """

    def __init__(self, data: BatchData, buckets: Any, refresh_every: int = 32) -> None:
        self.data = data
        self.b = np.array(buckets, dtype=np.int64)
        self.k = self.b.size
        self.refresh_every = refresh_every
        self._since = 0
        self.refresh()

    def refresh(self) -> None:
        """Exact ``M^{-1}``, ``x = M^{-1} a`` and the value."""
        d = self.data
        M = d.S[np.ix_(self.b, self.b)] + np.diag(d.noise[self.b])
        L = np.linalg.cholesky(M)
        Linv = np.linalg.inv(L)
        self.Minv = Linv.T @ Linv
        self.a = d.v[self.b].copy()
        self.x = self.Minv @ self.a
        self.value = float(self.a @ self.x) / d.N ** 2
        self._since = 0

    def counts(self) -> np.ndarray:
        return np.bincount(self.b, minlength=self.data.n_buckets)

    def candidates(self, m: int) -> np.ndarray:
        """Buckets that may replace position ``m`` (availability respected, not the same bucket)."""
        free = self.counts() < self.data.avail
        free[self.b[m]] = False
        return np.flatnonzero(free)

    def _parts(self, m: int, cands: np.ndarray):
        d = self.data
        b = self.b
        newcol = d.S[np.ix_(cands, b)]  # (P, k): S[c, b_j]
        newcol[:, m] = d.S[cands, cands] + d.noise[cands]
        oldcol = d.S[b, b[m]].copy()
        oldcol[m] += d.noise[b[m]]
        dd = newcol - oldcol[None, :]
        u2 = dd.copy()
        u2[:, m] -= 0.5 * dd[:, m]
        P1 = self.Minv[:, m]  # (k,)
        P2 = u2 @ self.Minv  # (P, k)   <- the O(k^2) step
        Q11 = u2 @ P1
        Q12 = np.einsum("ij,ij->i", u2, P2)
        Q21 = np.full(cands.size, self.Minv[m, m])
        Q22 = P2[:, m]
        return u2, P1, P2, Q11, Q12, Q21, Q22

    def swap_values(self, m: int, cands: np.ndarray) -> np.ndarray:
        """``beta`` after replacing position ``m`` by each bucket of ``cands``, shape (P,)."""
        cands = np.asarray(cands, dtype=np.int64)
        if cands.size == 0:
            return np.zeros(0)
        d = self.data
        u2, P1, _P2, Q11, Q12, Q21, Q22 = self._parts(m, cands)
        da = d.v[cands] - self.a[m]  # a' = a + da e_m
        xp = self.x[None, :] + da[:, None] * P1[None, :]  # x' = M^{-1} a'   (P, k)
        y1 = np.einsum("ij,ij->i", u2, xp)
        y2 = xp[:, m]
        # (I + Q)^{-1} y, Q = [[Q11, Q12], [Q21, Q22]]
        A11, A12, A21, A22 = 1.0 + Q11, Q12, Q21, 1.0 + Q22
        det = A11 * A22 - A12 * A21
        s1 = (A22 * y1 - A12 * y2) / det
        s2 = (-A21 * y1 + A11 * y2) / det
        # a'^T M^{-1} U = (U^T x')^T = [x'_m, u2 . x'] = [y2, y1]
        aa = np.einsum("ij,ij->i", xp, np.broadcast_to(self.a, xp.shape)) + da * xp[:, m]
        val = aa - (y2 * s1 + y1 * s2)
        return val / d.N ** 2

    def det_ratios(self, m: int, cands: np.ndarray) -> np.ndarray:
        """``det(M') / det(M)`` for each swap (matrix determinant lemma), shape (P,)."""
        cands = np.asarray(cands, dtype=np.int64)
        _, _, _, Q11, Q12, Q21, Q22 = self._parts(m, cands)
        return (1.0 + Q11) * (1.0 + Q22) - Q12 * Q21

    def apply(self, m: int, c: int) -> None:
        """Swap position ``m`` to bucket ``c``; ``M^{-1}`` by the rank-2 Woodbury step."""
        c = int(c)
        _u2, P1, P2, Q11, Q12, Q21, Q22 = self._parts(m, np.array([c]))
        IQ = np.array([[1.0 + Q11[0], Q12[0]], [Q21[0], 1.0 + Q22[0]]])
        Pm = np.column_stack([P1, P2[0]])  # M^{-1} U
        VtMinv = np.vstack([P2[0], P1])  # V^T M^{-1}
        self.Minv = self.Minv - Pm @ np.linalg.solve(IQ, VtMinv)
        self.Minv = 0.5 * (self.Minv + self.Minv.T)
        self.b[m] = c
        self._since += 1
        if self._since >= self.refresh_every:
            self.refresh()
            return
        self.a = self.data.v[self.b].copy()
        self.x = self.Minv @ self.a
        self.value = float(self.a @ self.x) / self.data.N ** 2


def local_search(state: SwapState, rng: np.random.Generator, *, max_swaps: int | None = None,
                 clock: Clock | None = None) -> tuple[int, bool]:
    """Single-swap local search: positions in random order, best improving bucket per position.

    Stops at a local optimum (a full pass without improvement), after
    ``max_swaps`` swaps or when the clock expires.

    Returns
    -------
    n_swaps : int
    local_optimum : bool
    """
    swaps = 0
    while True:
        improved = False
        for m in rng.permutation(state.k):
            if clock is not None and clock.expired():
                return swaps, False
            cands = state.candidates(int(m))
            if cands.size == 0:
                continue
            vals = state.swap_values(int(m), cands)
            j = int(np.argmax(vals))
            if vals[j] > state.value * (1.0 + 1e-10) + 1e-300:
                state.apply(int(m), int(cands[j]))
                swaps += 1
                improved = True
                if max_swaps is not None and swaps >= max_swaps:
                    return swaps, False
        if not improved:
            return swaps, True


# ================================================================ warm starts
def _gram_cols(data: BatchData, cols: np.ndarray) -> np.ndarray:
    """Columns ``Sigma_U[:, cols]`` over the items of U, shape (nU, len(cols))."""
    lab = data.labels
    G = data.S[np.ix_(lab, lab[cols])]
    G[cols, np.arange(cols.size)] += data.noise[lab[cols]]
    return G


def lars_start(data: BatchData, k: int, max_steps: int | None = None) -> np.ndarray:
    """The first ``k`` items of the LARS-lasso path of ``min 1/2 w^T Sigma_U w - w^T v + lam ||w||_1``.

    LARS (Efron et al. 2004) in Gram form, with the lasso modification (a
    variable whose coefficient crosses zero leaves the active set). Stops once
    ``k`` items are active; fills up with the largest correlations if the path
    ends early.

    Returns
    -------
    ndarray of int64, shape (k,)
        Positions in ``data.items``.
    """
    nU = data.items.size
    lab = data.labels
    c = data.v[lab].astype(float).copy()  # correlations v - Sigma_U w at w = 0
    w = np.zeros(nU)
    active: list[int] = [int(np.argmax(np.abs(c)))]
    max_steps = max_steps or 8 * k + 8
    for _ in range(max_steps):
        if len(active) >= k or len(active) >= nU:
            break
        A = np.asarray(active)
        s = np.sign(c[A])
        s[s == 0] = 1.0
        GA = _gram_cols(data, A)  # (nU, |A|)
        g = np.linalg.solve(GA[A], s)
        q = float(s @ g)
        if q <= 0:
            break
        Aa = 1.0 / math.sqrt(q)
        u = Aa * g
        a = GA @ u
        Cmax = float(np.max(np.abs(c[A])))
        inact = np.ones(nU, bool)
        inact[A] = False
        with np.errstate(divide="ignore", invalid="ignore"):
            g1 = (Cmax - c) / (Aa - a)
            g2 = (Cmax + c) / (Aa + a)
        cand = np.where(inact[:, None], np.column_stack([g1, g2]), np.inf)
        cand[~np.isfinite(cand) | (cand <= 1e-15)] = np.inf
        gam_add = cand.min(axis=1)
        j = int(np.argmin(gam_add))
        gamma = float(gam_add[j])
        # lasso modification: first active coefficient to hit zero
        with np.errstate(divide="ignore", invalid="ignore"):
            gz = -w[A] / u
        gz[~np.isfinite(gz) | (gz <= 1e-15)] = np.inf
        drop = int(np.argmin(gz)) if gz.size else -1
        if drop >= 0 and gz[drop] < gamma:
            gamma = float(gz[drop])
            w[A] += gamma * u
            c -= gamma * a
            w[A[drop]] = 0.0
            active.pop(drop)
            continue
        if not np.isfinite(gamma):
            break
        w[A] += gamma * u
        c -= gamma * a
        active.append(j)
    if len(active) < k:
        rest = np.argsort(-np.abs(c), kind="stable")
        for j in rest:
            if len(active) >= k:
                break
            if int(j) not in active:
                active.append(int(j))
    return np.asarray(active[:k], dtype=np.int64)


def _elementary_symmetric(lam: np.ndarray, k: int) -> np.ndarray:
    N = lam.size
    E = np.zeros((k + 1, N + 1))
    E[0, :] = 1.0
    for l in range(1, k + 1):
        for n in range(1, N + 1):
            E[l, n] = E[l, n - 1] + lam[n - 1] * E[l - 1, n - 1]
    return E


def kdpp_sample(L: np.ndarray, k: int, rng: np.random.Generator, n_samples: int = 1) -> list[np.ndarray]:
    """Exact k-DPP samples with likelihood kernel ``L`` (Kulesza & Taskar 2011).

    Parameters
    ----------
    L : ndarray, shape (n, n)
        Symmetric positive semi-definite kernel.
    k : int
    rng : numpy.random.Generator
    n_samples : int

    Returns
    -------
    list of ndarray of int64, each of shape (k,)
    """
    lam, V = np.linalg.eigh(L)
    lam = np.clip(lam, 0.0, None)
    top = lam.max() if lam.size else 0.0
    if top <= 0 or np.count_nonzero(lam > 1e-12 * top) < k:
        return [np.sort(rng.choice(L.shape[0], size=k, replace=False)) for _ in range(n_samples)]
    lam = lam / top  # k-DPP probabilities are scale-free; keeps e_l finite
    E = _elementary_symmetric(lam, k)
    out = []
    for _ in range(n_samples):
        sel = []
        l = k
        for n in range(lam.size, 0, -1):
            if l == 0:
                break
            if E[l, n] <= 0:
                continue
            if rng.random() < lam[n - 1] * E[l - 1, n - 1] / E[l, n]:
                sel.append(n - 1)
                l -= 1
        Vs = V[:, sel].copy()
        Y: list[int] = []
        while Vs.shape[1] > 0:
            p = np.sum(Vs ** 2, axis=1)
            p = np.clip(p, 0.0, None)
            p[Y] = 0.0
            tot = p.sum()
            if tot <= 0:
                break
            i = int(rng.choice(p.size, p=p / tot))
            Y.append(i)
            j = int(np.argmax(np.abs(Vs[i, :])))
            Vj = Vs[:, j].copy()
            Vs = Vs - np.outer(Vj, Vs[i, :] / Vj[i])
            Vs = np.delete(Vs, j, axis=1)
            if Vs.shape[1]:
                Vs, _ = np.linalg.qr(Vs)
        if len(Y) < k:  # numerical shortfall: fill at random
            rest = np.setdiff1d(np.arange(L.shape[0]), Y)
            Y.extend(rng.choice(rest, size=k - len(Y), replace=False).tolist())
        out.append(np.sort(np.asarray(Y, dtype=np.int64)))
    return out


def _random_bucket_batch(data: BatchData, k: int, rng: np.random.Generator) -> np.ndarray:
    """Buckets of ``k`` distinct items of U drawn uniformly."""
    pos = rng.choice(data.items.size, size=k, replace=False)
    return data.labels[pos]


def kdpp_mcmc(data: BatchData, k: int, rng: np.random.Generator, n_steps: int | None = None) -> np.ndarray:
    """Approximate k-DPP sample over the items of U with kernel ``Sigma_U`` (exchange Markov chain).

    Each step proposes replacing a random member by a random item of U outside
    the batch and accepts with probability ``min(1, det ratio)`` (Anari,
    Oveis Gharan & Rezaei 2016); determinant ratios come from
    :meth:`SwapState.det_ratios` (``O(k^2)``).

    Returns
    -------
    ndarray of int64, shape (k,)
        Compact bucket ids of the batch.
    """
    st = SwapState(data, _random_bucket_batch(data, k, rng))
    n_steps = n_steps or 10 * k * max(1, int(math.log(max(data.items.size, 2))))
    for _ in range(n_steps):
        m = int(rng.integers(k))
        w = (data.avail - st.counts()).astype(float)  # free items per bucket: a uniform item of U \ A
        w[st.b[m]] = 0.0  # another item of the same bucket is the same batch (no-op proposal)
        tot = w.sum()
        if tot <= 0:
            break
        c = int(rng.choice(w.size, p=w / tot))
        r = float(st.det_ratios(m, np.array([c]))[0])
        if r >= 1.0 or rng.random() < r:
            st.apply(m, c)
    return st.b.copy()


def _weighted_kmeans(X: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator, iters: int = 50) -> np.ndarray:
    """Weighted Lloyd's k-means with k-means++ seeding; returns labels (n,)."""
    n = X.shape[0]
    k = min(k, n)
    first = int(rng.choice(n, p=w / w.sum()))
    centers = [X[first]]
    d2 = np.sum((X - X[first]) ** 2, axis=1)
    for _ in range(1, k):
        p = w * d2
        if p.sum() <= 0:
            break
        j = int(rng.choice(n, p=p / p.sum()))
        centers.append(X[j])
        d2 = np.minimum(d2, np.sum((X - X[j]) ** 2, axis=1))
    C = np.asarray(centers)
    lab = np.zeros(n, dtype=np.int64)
    for it in range(iters):
        D = np.sum(X ** 2, axis=1)[:, None] - 2 * X @ C.T + np.sum(C ** 2, axis=1)[None, :]
        new = np.argmin(D, axis=1)
        if it and np.array_equal(new, lab):
            break
        lab = new
        for j in range(C.shape[0]):
            mask = lab == j
            if mask.any():
                C[j] = (w[mask, None] * X[mask]).sum(0) / w[mask].sum()
    return lab


def kmeans_starts(data: BatchData, k: int, rng: np.random.Generator, n_samples: int) -> list[np.ndarray]:
    """k-means on the reference vectors ``phi`` (weighted by unevaluated items), one item per cluster.

    Returns
    -------
    list of ndarray of int64, each (k,)
        Batches as compact bucket ids; clusters short of ``k`` are filled with random items.
    """
    lab = _weighted_kmeans(data.phi, data.avail.astype(float), k, rng)
    clusters = [np.flatnonzero(lab == j) for j in np.unique(lab)]
    out = []
    for _ in range(n_samples):
        cnt = np.zeros(data.n_buckets, dtype=np.int64)
        sel = []
        for cl in clusters[:k]:
            w = (data.avail[cl] - cnt[cl]).astype(float)
            if w.sum() <= 0:
                continue
            b = int(cl[rng.choice(cl.size, p=w / w.sum())])
            sel.append(b)
            cnt[b] += 1
        while len(sel) < k:
            w = (data.avail - cnt).astype(float)
            b = int(rng.choice(w.size, p=w / w.sum()))
            sel.append(b)
            cnt[b] += 1
        out.append(np.asarray(sel, dtype=np.int64))
    return out


# ====================================================================== SMC
def _fitness(values: np.ndarray, temperature: float | None) -> np.ndarray:
    """Resampling weights: ``beta`` itself, or ``exp((beta / max beta - 1) / temperature)`` when tempered."""
    v = np.clip(values, 0.0, None)
    if temperature is None or v.max() <= 0:
        return v
    return np.exp((v / v.max() - 1.0) / temperature)


def _resample(values: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Systematic resampling in proportion to (non-negative) weights."""
    w = np.clip(values, 0.0, None)
    if not np.isfinite(w).all() or w.sum() <= 0:
        w = np.ones_like(values)
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    u = (rng.random() + np.arange(n)) / n
    return np.searchsorted(cdf, u)


def _mutate(state: SwapState, n: int, rng: np.random.Generator) -> None:
    for _ in range(n):
        m = int(rng.integers(state.k))
        cands = state.candidates(m)
        if cands.size == 0:
            continue
        w = (state.data.avail[cands] - state.counts()[cands]).astype(float)  # uniform over free items
        state.apply(m, int(cands[rng.choice(cands.size, p=w / w.sum())]))


def smc_search(data: BatchData, rng: np.random.Generator, *, n_particles: int = 24, n_generations: int = 30,
               patience: int = 6, starts: Iterable[str] = ("lars", "dpp", "kmeans"), n_mutations: int | None = None,
               max_swaps: int | None = None, dpp_exact_max: int = 400, dpp_mcmc_steps: int | None = None,
               temperature: float | None = None, clock: Clock | None = None,
               verbose: bool = False) -> tuple[np.ndarray, float, dict]:
    """SMC batch search for ``max beta(A)``.

    1. Population of ``n_particles`` batches from the warm starts: the LARS
       path (one batch), k-DPP samples (exact when ``|U| <= dpp_exact_max``,
       else an exchange-chain MCMC sampler) and k-means clusters of ``phi``
       (one item per cluster), alternating between the last two.
    2. Each generation: every particle not yet at a local optimum runs
       single-swap local search (:func:`local_search`, Woodbury neighbours);
       the best batch seen is kept; the population is resampled in proportion
       to its fitness (``beta``, or ``exp((beta / max beta - 1) / temperature)``
       when ``temperature`` is given; systematic resampling); then the move
       step: one slot keeps the best batch, every other resampled particle is
       perturbed by ``n_mutations`` random swaps (default ``ceil(k / 3)``)
       before the next local search, so that copies explore new basins.
    3. Stops after ``n_generations``, after ``patience`` generations without a
       better batch, or when the clock expires.

    Returns
    -------
    best : ndarray of int64, shape (k,)
        Compact bucket ids of the best batch.
    value : float
        Its ``beta``.
    info : dict
        ``generations``, ``swaps``, ``stopped`` ("converged", "iteration_limit" or "time_limit"),
        ``start_values`` (best value per warm-start kind).
    """
    k = data.k
    starts = _check_starts(starts)
    if n_mutations is None:
        n_mutations = max(1, math.ceil(k / 3))
    pop, kinds = _initial_population(data, rng, n_particles, starts, dpp_exact_max, dpp_mcmc_steps)
    states = [SwapState(data, b) for b in pop]
    start_values: dict[str, float] = {}
    for st, kind in zip(states, kinds):
        start_values[kind] = max(start_values.get(kind, -np.inf), st.value)
    at_opt = [False] * len(states)
    best_b = states[int(np.argmax([st.value for st in states]))].b.copy()
    best_v = max(st.value for st in states)
    swaps = 0
    stall = 0
    stopped = "iteration_limit"
    gen = 0
    for gen in range(1, n_generations + 1):
        swaps += _improve(states, at_opt, rng, max_swaps, clock)
        vals = np.array([st.value for st in states])
        j = int(np.argmax(vals))
        if vals[j] > best_v * (1.0 + 1e-12):
            best_v, best_b = float(vals[j]), states[j].b.copy()
            stall = 0
        else:
            stall += 1
        progress(verbose, f"smc generation {gen}: best beta {best_v:.6g}, population mean {vals.mean():.6g}")
        if clock is not None and clock.expired():
            stopped = "time_limit"
            break
        if stall >= patience:
            stopped = "converged"
            break
        if gen == n_generations:
            break
        states, at_opt = _move(data, states, vals, best_b, rng, temperature, n_mutations)
    return best_b, best_v, {"generations": gen, "swaps": swaps, "stopped": stopped, "start_values": start_values}


def _check_starts(starts: Iterable[str]) -> tuple[str, ...]:
    out = tuple(starts)
    for s in out:
        if s not in ("lars", "dpp", "kmeans"):
            raise InvalidInputError(f"starts: expected a subset of 'lars', 'dpp', 'kmeans', got {s!r}")
    return out


def _initial_population(data: BatchData, rng: np.random.Generator, n_particles: int, starts: tuple[str, ...],
                        dpp_exact_max: int, dpp_mcmc_steps: int | None) -> tuple[list[np.ndarray], list[str]]:
    """SMC step 1: batches (compact bucket ids) from the warm starts, topped up at random; and their kinds."""
    k = data.k
    pop: list[np.ndarray] = []
    kinds: list[str] = []
    if "lars" in starts:
        pop.append(data.labels[lars_start(data, k)])
        kinds.append("lars")
    sampled = [s for s in starts if s in ("dpp", "kmeans")]
    need = max(n_particles - len(pop), 0)
    if sampled and need:
        n_dpp = need // len(sampled) + (need % len(sampled) if sampled[0] == "dpp" else 0) if "dpp" in sampled else 0
        n_km = need - n_dpp if "kmeans" in sampled else 0
        if "dpp" in sampled and n_dpp:
            if data.items.size <= dpp_exact_max:
                lab = data.labels
                L = data.S[np.ix_(lab, lab)] + np.diag(data.noise[lab])
                for pos in kdpp_sample(L, k, rng, n_dpp):
                    pop.append(lab[pos])
                    kinds.append("dpp")
            else:
                for _ in range(n_dpp):
                    pop.append(kdpp_mcmc(data, k, rng, dpp_mcmc_steps))
                    kinds.append("dpp")
        if n_km:
            for b in kmeans_starts(data, k, rng, n_km):
                pop.append(b)
                kinds.append("kmeans")
    while len(pop) < max(n_particles, 1):
        pop.append(_random_bucket_batch(data, k, rng))
        kinds.append("random")
    return pop, kinds


def _improve(states: list[SwapState], at_opt: list[bool], rng: np.random.Generator, max_swaps: int | None,
             clock: Clock | None) -> int:
    """SMC step 2a: single-swap local search on every particle not yet at a local optimum; returns the swaps."""
    swaps = 0
    for i, st in enumerate(states):
        if at_opt[i]:
            continue
        n_sw, opt = local_search(st, rng, max_swaps=max_swaps, clock=clock)
        swaps += n_sw
        at_opt[i] = opt
        if clock is not None and clock.expired():
            break
    return swaps


def _move(data: BatchData, states: list[SwapState], vals: np.ndarray, best_b: np.ndarray, rng: np.random.Generator,
          temperature: float | None, n_mutations: int) -> tuple[list[SwapState], list[bool]]:
    """SMC step 2b: resample by fitness; one slot keeps the best batch, the others are perturbed by random swaps."""
    idx = _resample(_fitness(vals, temperature), len(states), rng)
    new_states, new_opt = [SwapState(data, best_b)], [True]
    for i in idx[1:]:
        st = SwapState(data, states[int(i)].b)
        _mutate(st, n_mutations, rng)
        new_states.append(st)
        new_opt.append(False)
    return new_states, new_opt


def greedy_search(data: BatchData) -> tuple[np.ndarray, float]:
    """Add the bucket (item) with the largest increase of ``beta`` ``k`` times (:meth:`BatchData.greedy`).

    Returns
    -------
    buckets : ndarray of int64, shape (k,)
    value : float
    """
    return data.greedy()


# =============================================================== exhaustive
def count_vectors(avail: np.ndarray, k: int) -> int:
    """Number of bucket-count vectors ``c`` with ``sum c = k`` and ``0 <= c_b <= avail_b`` (exact integer)."""
    poly = [1] + [0] * k
    for cap in np.minimum(np.asarray(avail, dtype=np.int64), k).tolist():
        new = [0] * (k + 1)
        for t in range(k + 1):
            if poly[t]:
                for u in range(0, min(cap, k - t) + 1):
                    new[t + u] += poly[t]
        poly = new
    return poly[k]


def _chunks(it: Iterable[tuple[int, ...]], size: int) -> Iterable[np.ndarray]:
    while True:
        block = list(itertools.islice(it, size))
        if not block:
            return
        yield np.asarray(block, dtype=np.int64)


def exhaustive_search(data: BatchData, *, mode: str = "auto", max_candidates: int = 5_000_000, chunk: int = 20_000,
                      clock: Clock | None = None) -> tuple[np.ndarray, float, dict]:
    """Exact maximum of ``beta`` by enumeration.

    Parameters
    ----------
    data : BatchData
    mode : {"auto", "items", "counts"}
        ``"items"``: every k-subset of U; ``"counts"``: every bucket-count
        vector (multisets of buckets within availability); ``"auto"``: the
        smaller of the two.
    max_candidates : int
        Refuse (``InvalidInputError``) enumerations larger than this.
    chunk : int
        Batch size of the vectorised evaluation.

    Returns
    -------
    best : ndarray of int64, shape (k,)
        Compact bucket ids of an optimal batch.
    value : float
    info : dict
        ``mode``, ``n_candidates``, ``evaluated``, ``complete`` (False after a time-out).
    """
    k = data.k
    n_items = math.comb(int(data.items.size), k)
    n_counts = count_vectors(data.avail, k)
    if mode == "auto":
        mode = "counts" if n_counts < n_items else "items"
    n_cand = n_counts if mode == "counts" else n_items
    if n_cand > max_candidates:
        raise InvalidInputError(
            f"max_candidates: exhaustive search would enumerate {n_cand} "
            f"{'count vectors' if mode == 'counts' else 'item sets'} (|U| = {data.items.size}, {data.n_buckets} "
            f"buckets, k = {k}), more than max_candidates = {max_candidates}; "
            "raise max_candidates or use 'smc'"
        )
    if mode == "items":
        gen: Iterable[tuple[int, ...]] = itertools.combinations(range(int(data.items.size)), k)
    else:
        gen = itertools.combinations_with_replacement(range(data.n_buckets), k)
    best_v, best_b = -np.inf, None
    evaluated = 0
    complete = True
    caps = data.avail
    for X in _chunks(gen, chunk):
        if clock is not None and best_b is not None and clock.expired():
            complete = False
            break
        if mode == "items":
            X = data.labels[X]
        else:
            ok = np.ones(X.shape[0], bool)
            for t in range(1, k):  # X rows are sorted: a run of t + 1 equal ids needs cap >= t + 1
                same = X[:, :-t] == X[:, t:]
                ok &= ~np.any(same & (caps[X[:, :-t]] < t + 1), axis=1)
            X = X[ok]
            if X.shape[0] == 0:
                continue
        vals = data.values(X)
        evaluated += X.shape[0]
        j = int(np.argmax(vals))
        if vals[j] > best_v:
            best_v, best_b = float(vals[j]), X[j].copy()
    if best_b is None:  # every candidate broke a bucket's capacity
        raise InvalidInputError(f"k: no batch of k = {k} items fits the items available in the buckets")
    return best_b, best_v, {"mode": mode, "n_candidates": n_cand, "evaluated": evaluated, "complete": complete}


# ================================================================== methods
