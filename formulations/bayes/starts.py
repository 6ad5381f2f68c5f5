"""Warm starts of BayesAME's SMC batch search (:func:`benchsel.formulations.bayes.search.smc_search`): the
LARS path of the l1-relaxed QP (:func:`lars_start`), k-DPP samples with ``Sigma_U`` as kernel, exact
(:func:`kdpp_sample`) or by MCMC (:func:`kdpp_mcmc`), and k-means on the reference vectors, one item per
cluster (:func:`kmeans_starts`). Batches are in the bucket space of :class:`~.posterior.BatchData`."""
from __future__ import annotations

import math

import numpy as np

from .posterior import BatchData
from .swap import SwapState

__all__ = ["kdpp_mcmc", "kdpp_sample", "kmeans_starts", "lars_start"]


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
