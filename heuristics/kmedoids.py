"""Heuristics for :class:`benchsel.formulations.KMedoids`: FasterPAM, greedy BUILD, alternating.

``"fasterpam"`` calls the ``kmedoids`` package (Rust) when weights are unit,
every item is a candidate and ``D`` has a zero diagonal; otherwise it runs
:func:`fasterpam`, the same eager-swap algorithm written here with weights, a
candidate set and any diagonal. (The package takes ``D[j, j] = 0``: with a
positive diagonal its swaps may bring in a medoid already selected.)
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import Termination
from benchsel.formulations.core.validation import check_choice, check_rng
from benchsel.formulations.kmedoids import KMedoids, SwapState

from ._common import Clock, output, progress

__all__ = ["alternate", "fasterpam", "fasterpam_package", "kmedoids_pp"]


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
def _visit_order(cand: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """Candidates in FasterPAM's visiting order: shuffled with ``rng`` (as given without one)."""
    order = np.asarray(cand, dtype=np.int64).copy()
    if rng is not None:
        rng.shuffle(order)
    return order


def fasterpam(D: np.ndarray, medoids: np.ndarray, w: np.ndarray, cand: np.ndarray, *, max_iter: int = 100,
              rng: np.random.Generator | None = None, clock: Clock | None = None,
              block: int = 64) -> tuple[np.ndarray, int, int, bool]:
    """FasterPAM (Schubert & Rousseeuw 2021) with item weights and a candidate set.

    Candidates are visited in a (seeded) shuffled order; the best swap for a
    candidate is taken as soon as it lowers the cost (eager), and the search
    stops after a full pass over the candidates without improvement,
    ``max_iter`` passes, or the clock. The bookkeeping (nearest and second
    nearest medoid, swap deltas scored ``block`` candidates at a time) is
    :class:`~benchsel.formulations.kmedoids.SwapState`'s.

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
    order = _visit_order(cand, rng)
    state = SwapState(D, np.asarray(medoids, dtype=np.int64), w)
    expired = None if clock is None else clock.expired
    n_swaps, evaluated, converged = state.eager_swaps(order, max_evals=max_iter * order.size, block=block,
                                                     expired=expired)
    timed_out = not converged and evaluated < max_iter * order.size
    return np.sort(state.med), -(-evaluated // max(order.size, 1)), n_swaps, timed_out


_EXT_LOCK = threading.Lock()


def _kmedoids_extension() -> Any:
    """The ``kmedoids`` package's compiled module (``kmedoids.kmedoids``), loaded without the package's
    ``__init__`` when the package is not imported yet.

    That ``__init__`` imports scikit-learn whenever it is installed (for an estimator class this module
    does not use), which costs resident memory and time inside the solves that warm start from FasterPAM
    (measured by the import-cost study, docs/formulations/kmedoids.md). The compiled module is registered
    under its own name, so a later ``import kmedoids`` finds it and does not initialise it twice.
    """
    with _EXT_LOCK:
        mod = sys.modules.get("kmedoids.kmedoids")
        if mod is not None:
            return mod
        if "kmedoids" in sys.modules:  # the package is loaded: its compiled module comes with it
            return importlib.import_module("kmedoids.kmedoids")
        pkg = importlib.util.find_spec("kmedoids")  # a top-level spec: nothing is imported
        if pkg is None or not pkg.submodule_search_locations:
            raise ImportError("the kmedoids package is not installed")
        spec = importlib.machinery.PathFinder.find_spec("kmedoids.kmedoids", list(pkg.submodule_search_locations))
        if spec is None or spec.loader is None:
            raise ImportError("the kmedoids package has no compiled module kmedoids.kmedoids")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["kmedoids.kmedoids"] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules["kmedoids.kmedoids"]
            raise
        return mod


def _package_kernel(dtype: np.dtype) -> Callable[..., tuple[Any, ...]] | None:
    """The package's one-thread seeded FasterPAM for ``dtype`` (float32 or float64), or None where this
    version of the package does not have it under the name of the 0.5 series (then the package is
    imported and called as documented)."""
    suffix = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}.get(np.dtype(dtype))
    if suffix is None:
        return None
    try:
        fn = getattr(_kmedoids_extension(), f"_rand_fasterpam_{suffix}", None)
    except ImportError:
        return None
    return fn if callable(fn) else None


def fasterpam_package(D: np.ndarray, medoids: np.ndarray, *, max_iter: int, rng: np.random.Generator,
                      clock: Clock | None = None) -> tuple[np.ndarray, int, int, bool]:
    """FasterPAM of the ``kmedoids`` package (Rust), in calls sized to the clock.

    A call cannot be interrupted, so the first does one pass to time it and
    the next ones as many passes as the time left holds; each call continues
    from the medoids of the last. The search stops when a call converges
    (fewer passes than allowed, or no swap), after ``max_iter`` passes, or on
    the clock. Without a time limit that is two calls: one pass, then the rest.

    Returns
    -------
    medoids : ndarray of int, shape (k,)
    n_iter, n_swaps : int
    timed_out : bool
    """
    kernel = _package_kernel(D.dtype)
    if kernel is None:
        import kmedoids as km
    med = np.sort(np.asarray(medoids, dtype=np.int64))
    n_iter = n_swaps = 0
    per_pass: float | None = None
    while n_iter < max_iter:
        if clock is not None and clock.expired():
            return med, n_iter, n_swaps, True
        m = 1 if per_pass is None else max_iter - n_iter
        if per_pass is not None and clock is not None and clock.left is not None:
            m = max(1, min(m, int(clock.left / max(per_pass, 1e-9))))
        t0 = time.perf_counter()
        seed = int(rng.integers(2**31 - 1))
        if kernel is not None:  # what km.fasterpam(..., n_cpu=1) calls: (loss, labels, medoids, n_iter, n_swap)
            _, _, meds, done, swapped = kernel(D, med.astype(np.uintp), m, seed)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "seed ignored if medoids given": it orders the pass
                res = km.fasterpam(D, med.copy(), max_iter=m, init="build", random_state=seed, n_cpu=1)
            meds, done, swapped = res.medoids, res.n_iter, res.n_swap
        done, swapped = int(done), int(swapped)
        per_pass = (time.perf_counter() - t0) / max(done, 1)
        n_iter += done
        n_swaps += swapped
        med = np.sort(np.asarray(meds, dtype=np.int64))
        if swapped == 0 or done < m:
            break
    return med, n_iter, n_swaps, False


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
def _start(f: KMedoids, init: str, rng: np.random.Generator, clock: Clock | None = None) -> np.ndarray:
    if init == "build":  # BUILD may use half the time limit; the swaps get the rest
        left = None if clock is None else clock.left
        return f.greedy_selection(None if left is None else time.perf_counter() + 0.5 * left)
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
               doc="the kmedoids package (Rust; unit weights, all candidates, zero diagonal) or the built-in "
                   "blocked version (weights, candidates, any diagonal)"),
        _VERBOSE,
    ),
)
def run_fasterpam(f: KMedoids, *, time_limit: float | None, seed: int | None, init: Any, max_iter: int,
                  n_restarts: int, backend: str, verbose: bool):
    init = _init_option(init, f)
    restarts = n_restarts
    rng = check_rng(seed)
    clock = Clock(time_limit)
    n_diag = int(np.count_nonzero(np.diagonal(f.D)))  # the package assumes D[j, j] = 0
    use_pkg = backend == "kmedoids" or (backend == "auto" and f.unit_weights and f.all_candidates and not n_diag)
    if use_pkg and not (f.unit_weights and f.all_candidates):
        raise InvalidInputError(
            "backend: the kmedoids package takes neither item weights nor a candidate set; use 'numpy'")
    if use_pkg and n_diag:
        raise InvalidInputError(
            f"backend: the kmedoids package assumes a zero diagonal (a medoid serves itself at no cost), got D with "
            f"{n_diag} non-zero diagonal entries; use 'numpy' (or 'auto')")
    best, best_cost = None, np.inf
    stopped = Termination.CONVERGED
    total_swaps = 0
    runs = 0
    for r in range(restarts):
        if r and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        mode = init if isinstance(init, str) and (r == 0 or init != "build") else "random"
        start = init if not isinstance(init, str) else _start(f, mode, rng, clock)
        if use_pkg:
            med, n_it, n_sw, timed_out = fasterpam_package(f.D, start, max_iter=max_iter, rng=rng, clock=clock)
        else:
            med, n_it, n_sw, timed_out = fasterpam(f.D, start, f.weights, f.candidates, max_iter=max_iter, rng=rng,
                                                   clock=clock)
        hit = n_it >= max_iter and not timed_out
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
