"""RepCore's consensus clustering (RepCore eq. 4-5): spherical k-means, and k-means, on a :class:`KMedoids`.

Spherical k-means partitions unit vectors ``x_i`` into ``k`` clusters ``G_c``
maximising ``sum_c sum_{i in G_c} w_i cos(x_i, mu_c)`` with ``mu_c`` the
normalised (weighted) cluster sum; the anchor of a cluster is its member of
largest cosine to ``mu_c``. It needs only the Gram matrix ``x_i . x_j``,
which a cosine :class:`~benchsel.formulations.KMedoids` holds as ``1 - D``
(``KMedoids.from_features(E, k, metric="cosine")``), so it runs on the same
formulation as the exact p-median methods and the harness reports its
p-median cost beside their proven optimum. With ``metric="correlation"`` it
is spherical k-means of the centred rows.

``"kmeans"`` is plain (Euclidean) k-means the same way, from the squared
distances of a Euclidean ``KMedoids``: RepCore's discrete ablation clusters
the items' 0/1 source-correctness vectors with it ("0/1 K-means").

Each iteration costs ``O(N^2)`` (a sparse cluster-indicator times the Gram or
squared-distance matrix): the same order as one FasterPAM pass.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import Termination
from benchsel.formulations.core.validation import check_rng
from benchsel.formulations.kmedoids import KMedoids

from ._common import Clock, output, progress
from .kmedoids import kmedoids_pp

__all__ = ["anchors_of", "cosine_refusal", "euclidean_refusal", "lloyd"]

#: ``1 - cos`` lies in [0, 2]; asymmetry and range are checked up to this tolerance.
_TOL = 1e-9
_checked: dict[str, weakref.WeakKeyDictionary[KMedoids, str | None]] = {
    "spherical": weakref.WeakKeyDictionary(), "euclidean": weakref.WeakKeyDictionary()}


def _refusal(f: Any, mode: str) -> str | None:
    """Why the kernel ``mode`` cannot be read from ``f.D`` (None: it can); cached per formulation."""
    if not isinstance(f, KMedoids):
        return "it works on KMedoids only"
    cache = _checked[mode]
    if f in cache:
        return cache[f]
    D = f.D
    scale = 1.0 if mode == "spherical" else max(1.0, float(D.max()))
    why = None
    if mode == "spherical" and D.max() > 2.0 + _TOL:
        why = f"its dissimilarities exceed 2 (max {D.max():.6g})"
    elif np.abs(np.diag(D)).max() > _TOL * scale:
        why = "its D has a non-zero diagonal"
    elif not np.allclose(D, D.T, rtol=0.0, atol=_TOL * scale):
        why = "its D is not symmetric"
    if why is not None:
        need = ("spherical k-means needs a cosine (or correlation) dissimilarity, 1 - cos" if mode == "spherical"
                else "k-means reads D as Euclidean distances between item features")
        metric = "cosine" if mode == "spherical" else "euclidean"
        why = f"{need}, but {why}; build it with KMedoids.from_features(X, k, metric='{metric}')"
    cache[f] = why
    return why


def cosine_refusal(f: Any) -> str | None:
    """None when ``f`` is a :class:`KMedoids` whose ``D`` can be a cosine dissimilarity, else why not.

    Checked: symmetric, zero diagonal, entries in ``[0, 2]`` (cached per
    formulation: ``D`` is read-only).
    """
    return _refusal(f, "spherical")


def euclidean_refusal(f: Any) -> str | None:
    """None when ``f`` is a :class:`KMedoids` with a symmetric, zero-diagonal ``D`` (read as Euclidean distances)."""
    return _refusal(f, "euclidean")


class _Geometry:
    """Cluster statistics of weighted k-means from a kernel, for Lloyd iterations.

    ``"spherical"``: ``K = 1 - D`` is the Gram matrix of unit vectors; an
    item's score for cluster ``c`` is its cosine to the normalised cluster
    sum, the objective ``sum_c ||sum_{j in c} w_j x_j||`` (to maximise).
    ``"euclidean"``: ``K = D**2`` holds squared distances; the score is minus
    the squared distance to the weighted centroid,
    ``sum_j w_j K_ij / W_c - sum_{j,l in c} w_j w_l K_jl / (2 W_c^2)``, the
    objective minus the weighted within-cluster sum of squares.
    """

    def __init__(self, f: KMedoids, mode: str) -> None:
        self.mode = mode
        self.K = 1.0 - f.D if mode == "spherical" else f.D ** 2
        self.w = np.asarray(f.weights, dtype=float)
        self.N = f.n_items

    def seeding_distance(self, f: KMedoids) -> np.ndarray:
        """What k-means++ samples in proportion to: ``1 - cos`` (half the squared chord) or squared distance."""
        return f.D if self.mode == "spherical" else self.K

    def stats(self, labels: np.ndarray, k: int) -> tuple[np.ndarray, float]:
        """Score of every item for every cluster, shape (N, k), and the objective.

        A cluster with no direction (spherical) or no weight (Euclidean) scores -inf.
        """
        N, w = self.N, self.w
        Ht = sp.csr_matrix((w, (labels, np.arange(N))), shape=(k, N))  # weighted indicator, (k, N)
        A = np.asarray((Ht @ self.K).T)  # K symmetric: A[i, c] = sum_{j in c} w_j K[i, j]
        within = np.bincount(labels, weights=w * A[np.arange(N), labels], minlength=k)
        if self.mode == "spherical":
            norms = np.sqrt(np.clip(within, 0.0, None))
            ok = norms > 0
            score = A / np.where(ok, norms, 1.0)[None, :]
            objective = float(norms.sum())
        else:
            W = np.bincount(labels, weights=w, minlength=k)
            ok = W > 0
            Ws = np.where(ok, W, 1.0)
            score = -(A / Ws[None, :] - (within / (2.0 * Ws ** 2))[None, :])
            objective = -float((within[ok] / (2.0 * W[ok])).sum())
        score[:, ~ok] = -np.inf
        return score, objective


def lloyd(geo: _Geometry, k: int, start: np.ndarray, *, max_iter: int = 100, tol: float = 1e-10,
          clock: Clock | None = None) -> tuple[np.ndarray, float, int, bool]:
    """Lloyd iterations of weighted (spherical or Euclidean) k-means from a kernel.

    Parameters
    ----------
    geo : _Geometry
    k : int
    start : ndarray of int, shape (k,)
        Items that seed the clusters (every item starts in its best-scoring seed's cluster).
    max_iter : int
    tol : float
        Stop when the objective improves by less than ``tol`` (relative).
    clock : Clock, optional

    Returns
    -------
    labels : ndarray of int, shape (N,)
        Cluster of every item, ``0..k-1``; every cluster non-empty.
    objective : float
        Spherical: the weighted sum of cosines to the centroids; Euclidean:
        minus the weighted within-cluster sum of squares (higher is better).
    n_iter : int
    stopped_early : bool
        The clock or ``max_iter`` ended the iterations before convergence.
    """
    seed_score = geo.K[:, start] if geo.mode == "spherical" else -geo.K[:, start]
    labels = np.argmax(seed_score, axis=1)
    labels[start] = np.arange(k)  # the seeds own their clusters
    score, objective = geo.stats(labels, k)
    it = 0
    converged = timed_out = False
    while it < max_iter:
        if clock is not None and clock.expired():
            timed_out = True
            break
        it += 1
        new = _fill_empty(np.argmax(score, axis=1), score, k)
        if np.array_equal(new, labels):
            converged = True
            break
        score_new, obj_new = geo.stats(new, k)
        if obj_new <= objective + tol * max(1.0, abs(objective)):
            if obj_new > objective:
                labels, objective = new, obj_new
            converged = True
            break
        labels, score, objective = new, score_new, obj_new
    return labels, objective, it, timed_out or not converged


def _fill_empty(labels: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """Give every empty cluster the item worst served by its own cluster (taken from a cluster of >= 2)."""
    counts = np.bincount(labels, minlength=k)
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return labels
    labels = labels.copy()
    own = score[np.arange(labels.size), labels]
    order = np.argsort(own, kind="stable")  # least well served first
    pos = 0
    for c in empty:
        while counts[labels[order[pos]]] < 2:
            pos += 1
        i = order[pos]
        counts[labels[i]] -= 1
        labels[i] = c
        counts[c] = 1
        pos += 1
    return labels


def anchors_of(geo: _Geometry, labels: np.ndarray, k: int, cand: np.ndarray) -> np.ndarray:
    """Per cluster, the candidate member nearest its centroid (RepCore eq. 5), shape (k,).

    A cluster without a candidate member takes the unused candidate nearest its centroid.
    """
    score, _ = geo.stats(labels, k)
    member = labels[:, None] == np.arange(k)[None, :]
    is_cand = np.zeros(geo.N, bool)
    is_cand[cand] = True
    masked = np.where(member & is_cand[:, None], score, -np.inf)
    anchors = np.full(k, -1, dtype=np.int64)
    has = np.isfinite(masked).any(axis=0)
    anchors[has] = np.argmax(masked[:, has], axis=0)
    used = set(anchors[has].tolist())
    for c in np.flatnonzero(~has):
        order = cand[np.argsort(-score[cand, c], kind="stable")]
        anchors[c] = next(int(i) for i in order if int(i) not in used)
        used.add(int(anchors[c]))
    return anchors


def _run(f: KMedoids, mode: str, *, time_limit: float | None, seed: int | None, n_restarts: int, max_iter: int,
         init: str, tol: float, verbose: bool):
    clock = Clock(time_limit)
    rng = check_rng(seed)
    geo = _Geometry(f, mode)
    every = np.arange(f.n_items)
    best_labels, best_obj, best_r = None, -np.inf, 0
    stopped = Termination.CONVERGED
    runs = iters = 0
    name = "spherical-kmeans" if mode == "spherical" else "kmeans"
    for r in range(n_restarts):
        if r and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        if init == "kmeans++":
            start = kmedoids_pp(geo.seeding_distance(f), f.k, geo.w, every, rng)
        else:
            start = rng.choice(f.n_items, f.k, replace=False)
        labels, obj, it, early = lloyd(geo, f.k, np.asarray(start), max_iter=max_iter, tol=tol, clock=clock)
        runs += 1
        iters += it
        progress(verbose, f"{name} restart {r + 1}/{n_restarts}: objective {obj:.6g} after {it} iterations")
        if best_labels is None or obj > best_obj:
            best_labels, best_obj, best_r = labels, obj, r
        if early and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        if early and stopped == Termination.CONVERGED:
            stopped = Termination.ITERATION_LIMIT
    assert best_labels is not None  # the first restart always runs
    anchors = anchors_of(geo, best_labels, f.k, f.candidates)
    key = "within_cosine" if mode == "spherical" else "within_ss"
    return output(np.sort(anchors), clock, stopped=stopped, restarts=runs, iterations=iters, best_restart=best_r,
                  **{key: best_obj if mode == "spherical" else -best_obj})


def _options(restarts: int) -> tuple[Any, ...]:
    return (
        Option("n_restarts", restarts, "int", low=1, doc="restarts; the best clustering objective is kept"),
        Option("max_iter", 100, "int", low=1, doc="Lloyd iterations per restart"),
        Option("init", "kmeans++", "choice", choices=("kmeans++", "random"),
               doc="seeding: k-means++ or k random items"),
        Option("tol", 1e-10, "float", low=0.0, doc="stop a restart when the objective improves by less (relative)"),
        Option("verbose", False, "bool", doc="one progress line per restart"),
    )


@register_method(
    "spherical-kmeans",
    kind="heuristic",
    accepts=cosine_refusal,
    description="RepCore's consensus clustering: spherical k-means with k-means++ restarts on a cosine KMedoids; "
                "anchor = the member nearest each centroid",
    options=_options(10),
)
def run_spherical_kmeans(f: KMedoids, *, time_limit: float | None, seed: int | None, n_restarts: int,
                         max_iter: int, init: str, tol: float, verbose: bool):
    return _run(f, "spherical", time_limit=time_limit, seed=seed, n_restarts=n_restarts, max_iter=max_iter,
                init=init, tol=tol, verbose=verbose)


@register_method(
    "kmeans",
    kind="heuristic",
    accepts=euclidean_refusal,
    description="k-means (Lloyd, k-means++ restarts) on a Euclidean KMedoids, from its distances; anchor = the "
                "member nearest each centroid (RepCore's discrete ablation on 0/1 vectors)",
    options=_options(10),
)
def run_kmeans(f: KMedoids, *, time_limit: float | None, seed: int | None, n_restarts: int, max_iter: int,
               init: str, tol: float, verbose: bool):
    return _run(f, "euclidean", time_limit=time_limit, seed=seed, n_restarts=n_restarts, max_iter=max_iter,
                init=init, tol=tol, verbose=verbose)
