"""Heuristics for :class:`benchsel.formulations.KMedoids`: FasterPAM, greedy BUILD, alternating.

``"fasterpam"`` calls the ``kmedoids`` package (Rust) when weights are unit and
every item is a candidate; otherwise it runs :func:`fasterpam`, the same
eager-swap algorithm written here with weights and a candidate set.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from benchsel.formulations.kmedoids import KMedoids
from benchsel.solvers.errors import InvalidInputError
from benchsel.solvers.options import Option
from benchsel.solvers.registry import register_method
from benchsel.solvers.result import Termination
from benchsel.solvers.validation import check_choice, check_rng

from ._common import Clock, output, progress

__all__ = ["fasterpam", "alternate", "kmedoids_pp"]


# ---------------------------------------------------------------- starts
def kmedoids_pp(D: np.ndarray, k: int, w: np.ndarray, cand: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """k-medoids++ seeding: each next medoid drawn with probability proportional to w_i * d1(i) among candidates."""
    Dc = D[:, cand]
    chosen = [int(rng.integers(cand.size))]
    d1 = Dc[:, chosen[0]].copy()
    for _ in range(1, k):
        p = (w * d1)[cand].astype(float)
        p[chosen] = 0.0
        s = p.sum()
        if s <= 0:
            rest = np.setdiff1d(np.arange(cand.size), chosen)
            j = int(rng.choice(rest))
        else:
            j = int(rng.choice(cand.size, p=p / s))
        chosen.append(j)
        np.minimum(d1, Dc[:, j], out=d1)
    return cand[np.asarray(chosen)]


# ------------------------------------------------------------ FasterPAM
def fasterpam(D: np.ndarray, medoids: np.ndarray, w: np.ndarray, cand: np.ndarray, *, max_iter: int = 100,
              rng: np.random.Generator | None = None, clock: Clock | None = None,
              block: int = 64) -> tuple[np.ndarray, int, int, bool]:
    """FasterPAM (Schubert & Rousseeuw 2021) with item weights and a candidate set.

    Candidates are visited in a (seeded) shuffled order; the best swap for a
    candidate is taken as soon as it lowers the cost (eager), and the search
    stops after a full pass over the candidates without improvement,
    ``max_iter`` passes, or the clock. Candidates are scored ``block`` at a time
    with array operations; the first improving one in visiting order is
    applied, so the sequence of swaps is that of the one-by-one algorithm.

    Parameters
    ----------
    D : ndarray, shape (N, N)
    medoids : ndarray of int, shape (k,)
        Start.
    w : ndarray, shape (N,)
    cand : ndarray of int, shape (C,)

    Returns
    -------
    medoids : ndarray of int, shape (k,)
    n_iter : int
        Passes over the candidates (fractional passes rounded up).
    n_swaps : int
    timed_out : bool
    """
    med = np.asarray(medoids, dtype=np.int64).copy()
    k = med.size
    N = D.shape[0]
    is_med = np.zeros(N, bool)
    is_med[med] = True
    order = cand.copy()
    if rng is not None:
        rng.shuffle(order)
    total = order.size
    tol = 1e-12 * max(1.0, float(w @ D[:, med].min(axis=1)))

    def nearest_two(sub: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        Dm = D[np.ix_(sub, med)]
        if k == 1:
            z = np.zeros(sub.size, np.int64)
            return z, Dm[:, 0].copy(), z, np.full(sub.size, np.inf)
        part = np.argpartition(Dm, 1, axis=1)[:, :2]
        a = np.take_along_axis(Dm, part, axis=1)
        sw = a[:, 1] < a[:, 0]
        return (np.where(sw, part[:, 1], part[:, 0]), np.where(sw, a[:, 1], a[:, 0]),
                np.where(sw, part[:, 0], part[:, 1]), np.where(sw, a[:, 0], a[:, 1]))

    nearest, d1, second, d2 = nearest_two(np.arange(N))
    evaluated = since = n_swaps = 0
    ptr = 0
    timed_out = False
    while since < total and evaluated < max_iter * total:
        if clock is not None and clock.expired():
            timed_out = True
            break
        take = min(block, total - since)
        idx = (ptr + np.arange(take)) % total
        cands = order[idx]
        Dc = D[:, cands]  # (N, b)
        if k == 1:
            val = w @ Dc - float(w @ d1)
        else:
            removal = np.bincount(nearest, weights=w * (d2 - d1), minlength=k)
            diff1 = Dc - d1[:, None]
            closer = diff1 < 0
            acc = (w[:, None] * np.where(closer, diff1, 0.0)).sum(axis=0)
            M1 = np.where(closer, (w * (d1 - d2))[:, None],
                          np.where(Dc < d2[:, None], w[:, None] * (Dc - d2[:, None]), 0.0))
            perm = np.argsort(nearest, kind="stable")
            counts = np.bincount(nearest, minlength=k)
            filled = np.flatnonzero(counts)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
            delta = np.repeat(removal[:, None], take, axis=1)
            delta[filled] += np.add.reduceat(M1[perm], starts, axis=0)
            best_i = np.argmin(delta, axis=0)
            val = delta[best_i, np.arange(take)] + acc
        val = np.where(is_med[cands], np.inf, val)
        hits = np.flatnonzero(val < -tol)
        if hits.size:
            t = int(hits[0])
            c = int(cands[t])
            i = 0 if k == 1 else int(best_i[t])
            is_med[med[i]] = False
            med[i] = c
            is_med[c] = True
            # incremental update of nearest / second nearest (FasterPAM's bookkeeping)
            dc = D[:, c]
            redo = (nearest == i) | (second == i)
            keep = ~redo
            closer_c = keep & (dc < d1)
            mid_c = keep & ~closer_c & (dc < d2)
            second = np.where(closer_c, nearest, np.where(mid_c, i, second))
            d2 = np.where(closer_c, d1, np.where(mid_c, dc, d2))
            nearest = np.where(closer_c, i, nearest)
            d1 = np.where(closer_c, dc, d1)
            sub = np.flatnonzero(redo)
            if sub.size:
                nearest[sub], d1[sub], second[sub], d2[sub] = nearest_two(sub)
            n_swaps += 1
            ptr = (ptr + t + 1) % total
            evaluated += t + 1
            since = 0
        else:
            ptr = (ptr + take) % total
            evaluated += take
            since += take
    return np.sort(med), -(-evaluated // max(total, 1)), n_swaps, timed_out


def alternate(D: np.ndarray, medoids: np.ndarray, w: np.ndarray, cand: np.ndarray, *, max_iter: int = 100,
              clock: Clock | None = None) -> tuple[np.ndarray, int, bool]:
    """Alternating (Voronoi) iteration: assign to nearest medoid, re-centre each cluster, repeat.

    Each cluster's new medoid is the candidate (among its members, or any
    candidate if it has none) minimising the weighted cost of serving the
    cluster.

    Returns
    -------
    medoids : ndarray of int, shape (k,)
    n_iter : int
    timed_out : bool
    """
    med = np.asarray(medoids, dtype=np.int64).copy()
    is_cand = np.zeros(D.shape[0], bool)
    is_cand[cand] = True
    timed_out = False
    it = 0
    while it < max_iter:
        it += 1
        if clock is not None and clock.expired():
            timed_out = True
            break
        lab = np.argmin(D[:, med], axis=1)
        new = med.copy()
        for i in range(med.size):
            members = np.flatnonzero(lab == i)
            if members.size == 0:
                continue
            pool = members[is_cand[members]]
            if pool.size == 0:
                pool = cand
            cost = w[members] @ D[np.ix_(members, pool)]
            # keep the current medoid on ties
            best = pool[int(np.argmin(cost))]
            if best != med[i] and cost.min() < w[members] @ D[members, med[i]] - 1e-12:
                new[i] = best
        if len(set(new.tolist())) < new.size:  # two clusters picked the same medoid: stop there
            break
        if np.array_equal(new, med):
            break
        med = new
    return np.sort(med), it, timed_out


# --------------------------------------------------------------- methods
def _start(f: KMedoids, init: str, rng: np.random.Generator) -> np.ndarray:
    if init == "build":
        return f.greedy_selection()
    if init == "kmedoids++":
        return kmedoids_pp(f.D, f.k, f.weights, f.candidates, rng)
    return rng.choice(f.candidates, size=f.k, replace=False)


def _INIT(default: str) -> Option:
    return Option("init", default, "any", doc="'build', 'random', 'kmedoids++' or k medoids (item indices)")


_MAX_ITER = Option("max_iter", 100, "int", low=1, doc="passes over the items per restart")
_RESTARTS = Option("n_restarts", 1, "int", low=1, doc="restarts (the first from init, the others random)")
_VERBOSE = Option("verbose", False, "bool", doc="one progress line per restart")


def _init_option(init: Any, f: KMedoids) -> str | np.ndarray:
    if isinstance(init, str):
        return check_choice(init, "init", ("build", "random", "kmedoids++"))
    sel = f.as_selection(init, "init")
    if sel.size != f.k:
        raise InvalidInputError(f"init: expected {f.k} medoids, got {sel.size}")
    return sel


@register_method(
    "fasterpam",
    kind="heuristic",
    accepts=KMedoids,
    description="FasterPAM eager swaps (kmedoids package; weighted/candidate version built in)",
    options=(
        _INIT("build"),
        _MAX_ITER,
        _RESTARTS,
        Option("backend", "auto", "choice", choices=("auto", "kmedoids", "numpy"),
               doc="the kmedoids package (Rust) or the built-in blocked version (weights, candidates)"),
        _VERBOSE,
    ),
)
def run_fasterpam(f: KMedoids, *, time_limit: float | None, seed: int | None, init: Any, max_iter: int,
                  n_restarts: int, backend: str, verbose: bool):
    init = _init_option(init, f)
    restarts = n_restarts
    rng = check_rng(seed)
    clock = Clock(time_limit)
    use_pkg = backend == "kmedoids" or (backend == "auto" and f.unit_weights and f.all_candidates)
    if use_pkg and not (f.unit_weights and f.all_candidates):
        raise InvalidInputError("backend: the kmedoids package takes neither item weights nor a candidate set; use 'numpy'")
    best, best_cost = None, np.inf
    stopped = Termination.CONVERGED
    total_swaps = 0
    runs = 0
    for r in range(restarts):
        if r and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        mode = init if isinstance(init, str) and (r == 0 or init != "build") else "random"
        if use_pkg:
            import kmedoids as km

            # the package's own (Rust) BUILD or random start, or the given / k-medoids++ medoids
            pkg_start = mode if isinstance(init, str) and mode in ("build", "random") else (
                init if not isinstance(init, str) else _start(f, mode, rng))
            given = not isinstance(pkg_start, str)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "seed ignored if medoids given": we seed the order
                res = km.fasterpam(f.D, np.asarray(pkg_start, dtype=np.int64) if given else f.k, max_iter=max_iter,
                                   init="build" if given else pkg_start,
                                   random_state=int(rng.integers(2**31 - 1)), n_cpu=1)
            med, n_sw = np.sort(np.asarray(res.medoids, dtype=np.int64)), int(res.n_swap)
            hit = int(res.n_iter) >= max_iter
        else:
            start = init if not isinstance(init, str) else _start(f, mode, rng)
            med, n_it, n_sw, timed_out = fasterpam(f.D, start, f.weights, f.candidates, max_iter=max_iter, rng=rng,
                                                   clock=clock)
            hit = n_it >= max_iter
            if timed_out:
                stopped = Termination.TIME_LIMIT
        runs += 1
        total_swaps += n_sw
        cost = f.evaluate(med)
        progress(verbose, f"fasterpam restart {r + 1}/{restarts}: cost {cost:.6g} after {n_sw} swaps")
        if cost < best_cost:
            best, best_cost = med, cost
        if hit and stopped == Termination.CONVERGED:
            stopped = Termination.ITERATION_LIMIT
        if stopped == Termination.TIME_LIMIT:
            break
    return output(best, clock, stopped=stopped, swaps=total_swaps, restarts=runs,
                  implementation="kmedoids" if use_pkg else "numpy")


@register_method(
    "build",
    kind="heuristic",
    accepts=KMedoids,
    description="PAM's greedy BUILD",
    options=(),
)
def run_build(f: KMedoids, *, time_limit: float | None, seed: int | None):
    clock = Clock(time_limit)
    return output(np.sort(f.greedy_selection()), clock)


@register_method(
    "alternate",
    kind="heuristic",
    accepts=KMedoids,
    description="alternating (Voronoi) iteration from BUILD, random or k-medoids++ starts",
    options=(_INIT("kmedoids++"), _MAX_ITER, _RESTARTS, _VERBOSE),
)
def run_alternate(f: KMedoids, *, time_limit: float | None, seed: int | None, init: Any, max_iter: int,
                  n_restarts: int, verbose: bool):
    init = _init_option(init, f)
    restarts = n_restarts
    rng = check_rng(seed)
    clock = Clock(time_limit)
    best, best_cost = None, np.inf
    stopped = Termination.CONVERGED
    for r in range(restarts):
        if r and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        start = init if not isinstance(init, str) else _start(f, init, rng)
        med, n_it, timed_out = alternate(f.D, start, f.weights, f.candidates, max_iter=max_iter, clock=clock)
        cost = f.evaluate(med)
        progress(verbose, f"alternate restart {r + 1}/{restarts}: cost {cost:.6g} after {n_it} iterations")
        if cost < best_cost:
            best, best_cost = med, cost
        if timed_out:
            stopped = Termination.TIME_LIMIT
            break
        if n_it >= max_iter:
            stopped = Termination.ITERATION_LIMIT
    return output(best, clock, stopped=stopped)
