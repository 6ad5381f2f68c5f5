"""Searches of BayesAME's batch problem (used by the registered methods and by the sequential evaluators).

* ``"exhaustive"`` (exact): enumerates item sets of ``U`` (tiny cases) or, when
  that is smaller, bucket-count vectors (items of one bucket are exchangeable:
  ``beta`` depends only on how many items are taken per bucket); batched
  ``k x k`` solves. Returns termination ``"optimal"`` with ``bound`` = optimum.
* ``"smc"``: the paper's SMC batch search — a population of batches from warm
  starts (:mod:`.starts`: LARS path of the l1-relaxed QP; k-DPP samples with ``Sigma_U`` as
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

import numpy as np

from ..core.clock import Clock, progress
from ..core.errors import InvalidInputError
from .posterior import BatchData
from .starts import _random_bucket_batch, kdpp_mcmc, kdpp_sample, kmeans_starts, lars_start
from .swap import SwapState, local_search

__all__ = ["count_vectors", "exhaustive_search", "greedy_search", "smc_search"]


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
