"""F4 — k-medoids (p-median) coresets: AnchorPoints and RepCore-style clustering.

``min_{S subset of candidates, |S| = k}  sum_i w_i * min_{j in S} D[i, j]``

``D[i, j]`` is the dissimilarity of item ``i`` to medoid ``j`` (it need not be
symmetric).

Memory: a :class:`KMedoids` holds one dense ``N x N`` matrix (float64, or
float32 on request). The exact statements share one table of per-item sorted
candidate lists (int32, half a float64 copy), computed once per instance, and
build nothing else of size ``N x N``; :func:`dissimilarity` works block by
block.
"""
from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from scipy.spatial.distance import cdist

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder, RowBlock
from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    as_array,
    as_index_array,
    check_allocation,
    check_choice,
    check_int,
    check_magnitude,
)

from .base import Check, Formulation

__all__ = ["BendersCuts", "KMedoids", "ModelTooLargeError", "SortedRows", "SwapState", "dissimilarity"]

METRICS = ("correlation", "cosine", "euclidean")
DTYPES = ("float64", "float32")
#: Entries handled per block by the blockwise kernels (rows x columns).
_BLOCK = 1 << 22


class ModelTooLargeError(InvalidInputError):
    """A static statement of a k-medoids instance would not fit the memory or the time limit.

    Attributes
    ----------
    size : dict
        The estimate (``columns``, ``rows``, ``nnz``, ``bytes``, ``seconds``).
    requested : str
        The ``model=`` value asked for (``"auto"`` or an explicit statement).
    """

    def __init__(self, message: str, size: dict[str, Any], requested: str) -> None:
        super().__init__(message)
        self.size = size
        self.requested = requested


def _row_block(n_cols: int) -> int:
    return max(1, _BLOCK // max(int(n_cols), 1))


def _dtype(dtype: Any) -> type:
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    check_choice(name, "dtype", DTYPES)
    return np.float32 if name == "float32" else np.float64


def _check_float32(maximum: float, what: str) -> None:
    if maximum > float(np.finfo(np.float32).max):
        raise InvalidInputError(
            f"dtype: 'float32' cannot hold the {what} (largest value {maximum:.6g} > {np.finfo(np.float32).max:.6g}, "
            "the float32 maximum); use dtype='float64'"
        )


def dissimilarity(X: Any, metric: str = "correlation", *, dtype: Any = "float64") -> np.ndarray:
    """Pairwise dissimilarity of the rows of ``X``, computed block by block.

    Parameters
    ----------
    X : array_like, shape (N, d)
        One row of features per item (e.g. the item's responses from source
        models, or an embedding).
    metric : {"correlation", "cosine", "euclidean"}
        ``"correlation"``: ``1 - Pearson`` (AnchorPoints; constant rows get
        correlation 0 with everything but themselves); ``"cosine"``:
        ``1 - cos`` of L2-normalised rows (RepCore); ``"euclidean"``.
    dtype : {"float64", "float32"}
        Storage of the result; the arithmetic is float64 either way and only
        the stored values are rounded.

    Returns
    -------
    ndarray, shape (N, N)
        Non-negative, zero diagonal. Items with identical rows of ``X`` are at
        distance exactly 0 and get identical rows and columns (the blockwise
        products would otherwise leave rounding noise of about ``1e-16``
        there). Peak memory is the result plus one block of about 4 M entries.
    """
    X = as_array(X, "X", ndim=2, shape_doc="(N, d)")
    check_choice(metric, "metric", METRICS)
    out_t = _dtype(dtype)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise InvalidInputError(f"X: expected at least one row and one column, got shape {X.shape}")
    N = X.shape[0]
    check_allocation(float(np.dtype(out_t).itemsize) * N * N, "X", f"the ({N}, {N}) dissimilarity matrix")
    X, unscale = _exact_rescale(X, metric)
    D = np.empty((N, N), dtype=out_t)
    B = _row_block(N)
    if metric == "euclidean":
        for a in range(0, N, B):
            blk = cdist(X[a:a + B], X, "euclidean")
            if out_t is np.float32:
                _check_float32(float(np.ldexp(blk.max(initial=0.0), unscale)), "distances")
            D[a:a + B] = blk
    else:
        Z = X - X.mean(axis=1, keepdims=True) if metric == "correlation" else X.copy()
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        Z /= np.where(norms > 0, norms, 1.0)  # zero rows give similarity 0 (distance 1)
        for a in range(0, N, B):
            blk = Z[a:a + B] @ Z.T
            np.subtract(1.0, blk, out=blk)
            D[a:a + B] = blk
    np.clip(D, 0.0, None, out=D)
    np.fill_diagonal(D, 0.0)
    _tie_duplicates(D, X)
    return D if unscale == 0 else np.ldexp(D, unscale)


def _tie_duplicates(D: np.ndarray, X: np.ndarray) -> None:
    """In place: items with identical rows of ``X`` (shape (N, d)) copy the rows and columns of ``D``
    (shape (N, N)) of their group's first item, and are at distance 0 from each other."""
    N = X.shape[0]
    _, first, inv = np.unique(X, axis=0, return_index=True, return_inverse=True)
    rep = first[np.asarray(inv).ravel()]
    dup = np.flatnonzero(rep != np.arange(N))
    if dup.size == 0:
        return
    D[dup, :] = D[rep[dup], :]
    D[:, dup] = D[:, rep[dup]]  # so D[a, b] = D[r, r] = 0 for any two items a, b of the group of r


def _exact_rescale(X: np.ndarray, metric: str) -> tuple[np.ndarray, int]:
    """``X`` scaled by powers of two (exact) so that squares neither overflow nor underflow.

    Correlation and cosine do not depend on a row's scale: each row is scaled
    by ``2**-e`` with ``2**e`` about its largest magnitude. Euclidean distances
    scale with ``X``: one common factor, returned as the exponent to undo
    (``D = ldexp(D_scaled, e)``).
    """
    if metric == "euclidean":
        big = float(np.max(np.abs(X))) if X.size else 0.0
        if big == 0.0 or 2.0**-500 < big < 2.0**500:
            return X, 0
        e = int(np.frexp(big)[1])
        return np.ldexp(X, -e), e
    big = np.max(np.abs(X), axis=1)
    e = np.frexp(big)[1].astype(np.int64)
    e[big == 0] = 0
    if not np.any((big > 0) & ((big < 2.0**-500) | (big > 2.0**500))):
        return X, 0
    return np.ldexp(X, -e[:, None]), 0


def _kmedoids_iv(D: Any, k: Any, weights: Any, candidates: Any, *, D_name: str = "D",
                 dtype: Any = "float64") -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Checks of :class:`KMedoids`' arguments (pure); returns ``(D, weights, candidates, k)``.

    ``D`` finite, non-negative, square, real, stored as ``dtype`` (float32
    only when its values fit; a float32 input is kept without a float64
    copy); ``N * max(D) * max(weights)`` (a bound on any objective) below
    :data:`MAX_MAGNITUDE`; ``candidates`` as distinct indices or a boolean
    mask of length ``N``; ``k`` an integer (not a bool) with
    ``1 <= k <= min(N - 1, C)``.
    """
    t = _dtype(dtype)
    if t is np.float32 and isinstance(D, np.ndarray) and D.dtype == np.float32:
        D = as_array(D, D_name, ndim=2, shape_doc="(N, N)", nonnegative=True, dtype=np.float32)
    else:
        D = as_array(D, D_name, ndim=2, shape_doc="(N, N)", nonnegative=True)
        if t is np.float32:
            _check_float32(float(D.max(initial=0.0)), f"distances in {D_name}")
            D = D.astype(np.float32)
    if D.shape[0] != D.shape[1]:
        raise InvalidInputError(f"{D_name}: expected a square array of shape (N, N), got shape {D.shape}")
    N = D.shape[0]
    if N < 2:
        raise InvalidInputError(f"{D_name}: expected at least 2 items, got shape {D.shape}")
    if weights is None:
        w = np.ones(N)
    else:
        w = as_array(weights, "weights", shape=(N,), shape_doc=f"(N,) = ({N},)", nonnegative=True)
        if not w.any():
            raise InvalidInputError("weights: expected at least one positive weight, got all zeros")
    d_max = check_magnitude(D, D_name, scale=N, what=f"a sum of N = {N} distances")
    check_magnitude(w, "weights", scale=N * max(d_max, 1.0),
                    what=f"a sum of N = {N} weighted distances of up to {d_max:.3g}")
    if candidates is None:
        cand = np.arange(N, dtype=np.int64)
    else:
        cand = np.sort(as_index_array(candidates, N, "candidates", allow_empty=False,
                                           range_what="distinct item indices"))
    k = check_int(k, "k", low=1, high=min(N - 1, cand.size), low_doc="1",
                  high_doc=f"min(N - 1, n_candidates) = {min(N - 1, cand.size)}")
    return D, w, cand, k


def _features_iv(X: Any, metric: Any, weights: Any) -> np.ndarray:
    """Checks of :meth:`KMedoids.from_features`' features (pure): at least 2 rows, and euclidean
    distances whose sum over the items (with the weights) stays below :data:`MAX_MAGNITUDE`."""
    X = as_array(X, "X", ndim=2, shape_doc="(N, d)")
    check_choice(metric, "metric", METRICS)
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise InvalidInputError(f"X: expected at least 2 items (rows) and 1 feature (column), got shape {X.shape}")
    if metric == "euclidean" and X.size:
        lo, hi = np.min(X, axis=0), np.max(X, axis=0)
        with np.errstate(over="ignore"):
            span = float(np.linalg.norm(np.ldexp(hi, -600) - np.ldexp(lo, -600))) * 2.0**600
        w_max = 1.0
        if weights is not None:
            w_max = float(np.max(np.abs(as_array(weights, "weights", ndim=1)), initial=0.0))
        if not (math.isfinite(span) and span * X.shape[0] * max(w_max, 1.0) <= MAX_MAGNITUDE):
            raise InvalidInputError(
                f"X: expected features whose euclidean distances, summed over the N = {X.shape[0]} items, stay below "
                f"{MAX_MAGNITUDE:.3g}; got distances up to {span:.3g} (float64 would overflow); rescale X"
            )
    return X


def _graph_distances(G: Any, weight: str | None, nodelist: Any) -> tuple[np.ndarray, list[Any]]:
    """All-pairs shortest-path lengths of a networkx graph (rows: from, columns: to)."""
    import networkx as nx
    from scipy.sparse.csgraph import shortest_path

    if not isinstance(G, nx.Graph):
        raise InvalidInputError(f"G: expected a networkx Graph or DiGraph, got {type(G).__name__}")
    nodes = list(G.nodes) if nodelist is None else list(nodelist)
    if len(nodes) < 2:
        raise InvalidInputError(f"G: expected a graph of at least 2 nodes, got {len(nodes)}")
    if len(set(nodes)) != len(nodes):
        raise InvalidInputError("nodelist: expected distinct nodes, got repeated ones")
    missing = [v for v in nodes if v not in G]
    if missing or len(nodes) != G.number_of_nodes():
        raise InvalidInputError(
            f"nodelist: expected every node of G once ({G.number_of_nodes()} nodes), got {len(nodes)} entries"
            + (f", e.g. {missing[0]!r} is not in G" if missing else "")
        )
    index = {v: i for i, v in enumerate(nodes)}
    multi = G.is_multigraph()
    edges = G.edges(keys=True, data=True) if multi else G.edges(data=True)
    src, dst, val = [], [], []
    for e in edges:
        u, v, data = e[0], e[1], e[-1]
        if u == v:
            continue
        c = 1.0 if weight is None else data.get(weight, 1.0)
        try:
            c = float(c)
        except (TypeError, ValueError):
            raise InvalidInputError(f"weight: edge ({u!r}, {v!r}) has a non-numeric {weight!r} = {c!r}") from None
        if not math.isfinite(c) or c < 0:
            raise InvalidInputError(f"weight: expected finite non-negative edge weights, edge ({u!r}, {v!r}) has {c!r}")
        src.append(index[u])
        dst.append(index[v])
        val.append(c)
    n = len(nodes)
    a = np.asarray(src, dtype=np.int64)
    b = np.asarray(dst, dtype=np.int64)
    c = np.asarray(val, dtype=float)
    directed = G.is_directed()
    if not directed:  # both directions
        a, b, c = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([c, c])
    # parallel edges: the cheapest counts; zero-cost edges would vanish in a sparse matrix,
    # so they are stored as the smallest positive float and the distances rounded after
    key = a * n + b
    order = np.lexsort((c, key))
    key, a, b, c = key[order], a[order], b[order], c[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    a, b, c = a[first], b[first], c[first]
    tiny = c == 0
    from scipy.sparse import csr_array

    W = csr_array((np.where(tiny, np.finfo(float).tiny, c), (a, b)), shape=(n, n))
    D = shortest_path(W, method="auto", directed=directed)
    if tiny.any():
        D = np.round(D, 9)
    if not np.isfinite(D).all():
        i, j = (int(t) for t in np.argwhere(~np.isfinite(D))[0])
        raise InvalidInputError(
            f"G: the graph is not connected (strongly, when directed); every node must reach every other, but "
            f"{nodes[i]!r} does not reach {nodes[j]!r}"
        )
    return D, nodes


class KMedoids(Formulation):
    """k-medoids coreset selection (p-median).

    Parameters
    ----------
    D : array_like, shape (N, N)
        Dissimilarities, finite and non-negative; ``D[i, j]`` is the cost of
        serving item ``i`` by medoid ``j``.
    k : int
        Number of medoids, ``1 <= k < N`` (and ``k <= len(candidates)``).
    weights : array_like, shape (N,), optional
        Non-negative item weights (default 1).
    candidates : array_like of int, shape (C,), optional
        Items allowed as medoids (default all).
    dtype : {"float64", "float32"}
        Storage of ``D``. ``"float32"`` halves the memory; the stored (rounded)
        distances then define the problem, and every objective is summed in
        float64.

    Notes
    -----
    Exact statements (``model=`` option of :meth:`linear_model`):
    ``"assignment"`` (``y_j`` open, ``x_ij <= y_j``, ``sum_j x_ij = 1``),
    ``"radius"`` (Elloumi 2010: per item, sorted distinct distances and one
    variable per distance step) and ``"benders"``, the radius formulation
    projected on ``y`` (Benders decomposition, Duran-Mateluna, Ales & Elloumi
    2023): one cost variable per item and the cuts
    ``theta_i >= L - sum_j max(0, L - D[i, j]) y_j`` generated on demand (its
    LP bound equals the radius formulation's). ``"auto"`` picks the assignment
    model when it has at most ``10_000`` assignment variables, else the
    Benders master when the backend can generate rows, else the radius model
    when it fits (:meth:`model_size`).

    Every statement keeps one ``y`` column per group of *twin* candidates
    (identical distance columns over the served items, so any selection may
    swap one for another at no cost; duplicated items, say), the group's
    lowest-index candidate (:meth:`candidate_representatives`), and one
    served item per group of twin rows, with the group's summed weight
    (:meth:`client_representatives`). The reduced program has the same
    objective for every selection and lacks the symmetry that otherwise
    doubles the search tree at every pair of twin candidates. When the
    reduction would copy a cost matrix larger than :attr:`DEDUP_COPY_MAX`
    bytes (the full matrix is shared, not copied), it is skipped.
    """

    sense = "min"
    model_options: ClassVar[dict[str, tuple[str, ...]]] = {"model": ("auto", "assignment", "radius", "benders")}
    AUTO_ASSIGNMENT_MAX = 10_000
    #: Largest static model (estimated solver bytes) built; larger ones are refused.
    MAX_MODEL_BYTES = 2 * 2**30
    #: Largest ``n_served * C`` whose radius steps are counted exactly (by sorting) before a size check.
    EXACT_COUNT_MAX = 4_000_000
    #: Solver bytes per non-zero of a static model (measured: HiGHS held 4.2 GB for 11.7 M non-zeros).
    BYTES_PER_NNZ = 360
    #: Largest cost-matrix copy (bytes) the statements make to merge twin candidates and twin served items.
    DEDUP_COPY_MAX = 2**27
    #: Heuristic the exact backends run for their default warm start (by registry name).
    warm_start_method = "fasterpam"
    #: FasterPAM may use up to half of an exact backend's time limit, with no cap in seconds: the exact
    #: incumbent is then never worse than FasterPAM's whenever FasterPAM converges within that half
    #: (about 30 s at N = 14 000 on this machine).
    warm_start_budget = (0.5, None)
    #: :meth:`linear_model` takes the consumer's ``time_limit`` and ``nnz_per_second`` (size guards).
    sizes_models = True

    def __init__(self, D: Any, k: int, *, weights: Any = None, candidates: Any = None, dtype: Any = "float64") -> None:
        D, w, cand, self.k = _kmedoids_iv(D, k, weights, candidates, dtype=dtype)
        self._D = np.ascontiguousarray(D)
        self._D.setflags(write=False)
        self._dtype = self._D.dtype.type
        self._w = w.copy()
        self._w.setflags(write=False)
        self._unit_weights = weights is None or bool(np.all(w == 1.0))
        self._cand = cand
        self._cand.setflags(write=False)
        self._all_candidates = candidates is None or cand.size == self._D.shape[0]
        self._sorted: SortedRows | None = None
        self._twin_reps: tuple[np.ndarray, np.ndarray] | None = None  # _twins(), computed once
        self._twinless: KMedoids | None = None  # _without_twins()

    # --------------------------------------------------------------- builders
    @classmethod
    def from_features(cls, X: Any, k: int, metric: str = "correlation", *, weights: Any = None,
                      candidates: Any = None, dtype: Any = "float64") -> KMedoids:
        """Build from item features (distances computed block by block, see :func:`dissimilarity`).

        Parameters
        ----------
        X : array_like, shape (N, d)
            Item features (e.g. source models' responses per item, or embeddings).
        k : int
        metric : {"correlation", "cosine", "euclidean"}
        weights, candidates, dtype : see :class:`KMedoids`.
        """
        X = _features_iv(X, metric, weights)
        return cls(dissimilarity(X, metric, dtype=dtype), k, weights=weights, candidates=candidates, dtype=dtype)

    @classmethod
    def from_graph(cls, G: Any, k: int, weight: str | None = "weight", *, nodelist: Any = None, weights: Any = None,
                   candidates: Any = None, dtype: Any = "float64") -> KMedoids:
        """A p-median instance on a networkx graph: ``D`` = all-pairs shortest-path lengths.

        Parameters
        ----------
        G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
            Connected (strongly, when directed); on a directed graph
            ``D[i, j]`` is the length of the shortest path from ``i`` to ``j``.
            Parallel edges count with their cheapest weight; self-loops are
            ignored.
        k : int
        weight : str or None
            Edge attribute holding the (non-negative) length; edges without it
            have length 1; None: every edge has length 1.
        nodelist : sequence, optional
            Order of the nodes (item ``i`` is ``nodelist[i]``); default
            ``list(G.nodes)``.
        weights, candidates, dtype : see :class:`KMedoids` (indices refer to
            the node order).
        """
        D, _ = _graph_distances(G, weight, nodelist)
        return cls(D, k, weights=weights, candidates=candidates, dtype=dtype)

    # ------------------------------------------------------------------ data
    @property
    def D(self) -> np.ndarray:
        """Dissimilarity matrix, shape (N, N) (read-only)."""
        return self._D

    @property
    def weights(self) -> np.ndarray:
        """Item weights, shape (N,)."""
        return self._w

    @property
    def candidates(self) -> np.ndarray:
        """Items allowed as medoids, shape (C,), sorted."""
        return self._cand

    @property
    def unit_weights(self) -> bool:
        return self._unit_weights

    @property
    def all_candidates(self) -> bool:
        return self._all_candidates

    @property
    def n_items(self) -> int:
        return int(self._D.shape[0])

    @property
    def dtype(self) -> str:
        """Storage of ``D``: ``"float64"`` or ``"float32"``."""
        return np.dtype(self._dtype).name

    def get_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "D": self._D,
            "k": self.k,
            "weights": None if self._unit_weights else self._w,
            "candidates": None if self._all_candidates else self._cand,
        }
        if self._dtype is np.float32:
            params["dtype"] = "float32"
        return params

    def _served(self) -> np.ndarray:
        """Items with positive weight (the only ones the objective sees)."""
        return np.flatnonzero(self._w > 0)

    def _cost_is_D(self) -> bool:
        """Every item is served and a candidate: the cost matrix is ``D`` itself (a view, no copy)."""
        return self._served().size == self.n_items and self._all_candidates

    def _cost_matrix(self) -> np.ndarray:
        """``D`` restricted to served items x candidates, shape (n_served, C): a view when nothing is left out."""
        I = self._served()
        if self._cost_is_D():
            return self._D
        return self._D[np.ix_(I, self._cand)]

    def sorted_candidates(self, deadline: float | None = None) -> SortedRows:
        """Per served item, the candidates in increasing distance (computed once, shared by the statements).

        Parameters
        ----------
        deadline : float, optional
            ``time.perf_counter()`` value at which sorting pauses; the rest is
            sorted by later calls (or on demand by the Benders cuts).
        """
        if self._sorted is None:
            self._sorted = SortedRows(self._cost_matrix())
        self._sorted.extend(deadline)
        return self._sorted

    # ---------------------------------------------------------------- oracle
    def evaluate(self, selection: Any) -> float:
        """``sum_i w_i min_{j in S} D[i, j]`` for a non-empty selection ``S`` (summed in float64)."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return float(self._w @ self._D[:, S].min(axis=1).astype(np.float64))

    def check(self, selection: Any) -> Check:
        S = self.as_selection(selection)
        reasons = []
        if S.size != self.k:
            reasons.append(f"{S.size} medoids selected, k = {self.k} required")
        if not self._all_candidates:
            bad = np.setdiff1d(S, self._cand)
            if bad.size:
                reasons.append(f"{bad.size} selected items are not candidates (e.g. item {int(bad[0])})")
        return Check.from_reasons(reasons)

    def assign(self, selection: Any) -> np.ndarray:
        """Medoid (item index) serving each item, shape (N,); ties go to the lowest index."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return S[np.argmin(self._D[:, S], axis=1)]

    def cluster_weights(self, selection: Any) -> np.ndarray:
        """Share of the total item weight served by each medoid, shape (len(selection),).

        With unit weights this is ``|cluster j| / N`` (AnchorPoints' weights).
        """
        S = self.as_selection(selection)
        lab = np.argmin(self._D[:, S], axis=1)
        return np.bincount(lab, weights=self._w, minlength=S.size) / self._w.sum()

    def estimate(self, selection: Any, scores: Any) -> np.ndarray | float:
        """AnchorPoints estimate of full-benchmark scores from scores on the medoids.

        Parameters
        ----------
        selection : array_like of int, shape (k,)
            The medoids, in the order of the last axis of ``scores``
            (any order; it is matched to ``sorted(selection)`` internally).
        scores : array_like, shape (k,) or (G, k)
            Scores of one or ``G`` target models on the medoids, in the order
            given by ``selection``.

        Returns
        -------
        float or ndarray, shape (G,)
            ``sum_j (cluster weight share of j) * score on j`` (the
            ``"cluster-weighted"`` estimator of :mod:`benchsel.formulations.estimators`
            on this instance's dissimilarities and weights).
        """
        from .estimators import ClusterWeighted

        sel = np.asarray(selection)
        S = self.as_selection(sel)
        s = as_array(scores, "scores", ndim=(1, 2), shape_doc=f"(k,) or (G, k) with k = {S.size}")
        if s.shape[-1] != S.size:
            raise InvalidInputError(
                f"scores: expected last axis of length {S.size} (one per medoid), got shape {s.shape}")
        est = ClusterWeighted(D=self._D, item_weights=None if self._unit_weights else self._w).fit(None, sel).predict(s)
        return float(est[0]) if s.ndim == 1 else est

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self._cand, size=self.k, replace=False))

    def greedy_selection(self, deadline: float | None = None) -> np.ndarray:
        """PAM's greedy BUILD: add the candidate that lowers the weighted cost most, ``k`` times.

        Incremental: after a medoid is added only the items it now serves
        change their contribution to the gains, so the work is about
        ``N * C * log(k)`` rather than ``N * C * k``, in blocks of bounded size.

        Parameters
        ----------
        deadline : float, optional
            ``time.perf_counter()`` value: once passed, the medoids still
            missing are the candidates of largest current gain, taken at once.

        Returns
        -------
        ndarray of int, shape (k,)
            Medoids in the order chosen (item indices).
        """
        D, w, cand = self._D, self._w, self._cand
        cols = None if self._all_candidates else cand
        C = cand.size
        B = _row_block(C)

        def rows(idx: np.ndarray) -> np.ndarray:  # a float64 copy of D[idx][:, cand]
            blk = D[idx] if cols is None else D[np.ix_(idx, cols)]
            return blk if blk.dtype == np.float64 else blk.astype(np.float64)

        def change(idx: np.ndarray, old: np.ndarray, new: np.ndarray | None) -> np.ndarray:
            """sum_i w_i (max(old_i - D[i, j], 0) - max(new_i - D[i, j], 0)) over ``idx``, shape (C,)."""
            g = np.zeros(C)
            for a in range(0, idx.size, B):
                sub = idx[a:a + B]
                blk = rows(sub)
                np.subtract(old[a:a + B, None], blk, out=blk)
                if new is None:
                    np.maximum(blk, 0.0, out=blk)
                else:  # new <= old: the difference of the two terms is old - D clipped to [0, old - new]
                    np.clip(blk, 0.0, (old[a:a + B] - new[a:a + B])[:, None], out=blk)
                g += w[sub] @ blk
            return g

        every = np.arange(self.n_items)
        total = np.zeros(C)
        for a in range(0, every.size, B):
            total += w[a:a + B] @ rows(every[a:a + B])
        first = int(np.argmin(total))
        chosen = [first]
        d1 = D[:, cand[first]].astype(np.float64)
        gain = change(every, d1, None)
        gain[first] = -np.inf
        while len(chosen) < self.k:
            if deadline is not None and time.perf_counter() >= deadline:
                rest = np.argsort(-gain, kind="stable")[: self.k - len(chosen)]
                chosen.extend(int(r) for r in rest)
                break
            j = int(np.argmax(gain))
            chosen.append(j)
            dj = D[:, cand[j]].astype(np.float64)
            ch = np.flatnonzero(dj < d1)
            if ch.size:  # their terms max(d1 - D, 0) shrink to max(dj - D, 0)
                gain -= change(ch, d1[ch], dj[ch])
                d1[ch] = dj[ch]
            gain[chosen] = -np.inf
        return cand[np.asarray(chosen)]

    def initial_selection(self) -> np.ndarray:
        """Greedy BUILD medoids (sorted): a cheap feasible selection.

        The exact backends' default warm start is FasterPAM started from it
        (``warm_start_method``), run through the method registry.
        """
        return np.sort(self.greedy_selection())

    def lagrangian_bound(self, time_limit: float | None = None, *, incumbent: Any = None, max_iter: int = 300,
                         multipliers: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Lower bound from the Lagrangian relaxation of the assignment rows, raised by subgradient steps.

        For multipliers ``lam`` (one per served item),
        ``L(lam) = sum_i lam_i + (sum of the k smallest rho_j)`` with
        ``rho_j = sum_i min(0, w_i D[i, j] - lam_i)`` is a valid lower bound
        for every ``lam``; its maximum equals the LP bound. Deflected
        subgradient steps (Polyak's rule towards the incumbent's cost, halved
        after 20 steps without progress). With the sorted candidate lists a
        step visits only the pairs ``w_i D[i, j] < lam_i`` (a short prefix per
        item); without them, one blockwise pass over ``D``. It bounds instances
        whose LP is too large to solve.

        Parameters
        ----------
        time_limit : float, optional
            Seconds for the steps (at least one evaluation is made).
        incumbent : array_like of int, optional
            A selection: its cost sets the Polyak step target and its service
            distances the starting multipliers.
        max_iter : int
        multipliers : ndarray, shape (n_served,), optional
            Starting multipliers (overrides the incumbent's).

        Returns
        -------
        bound : float
            The best ``L(lam)`` found.
        multipliers : ndarray, shape (n_served,)
            The multipliers reaching it.
        """
        t0 = time.perf_counter()
        t_end = None if time_limit is None else t0 + float(time_limit)
        I = self._served()
        Dc = self._cost_matrix()
        w = self._w[I]
        nC = self._cand.size
        if incumbent is not None:
            S0 = self.as_selection(incumbent, "incumbent")
            target = self.evaluate(S0)
            d_inc = self._D[np.ix_(I, S0)].min(axis=1).astype(np.float64)
        else:
            target, d_inc = np.inf, None
        if multipliers is not None:
            lam = np.asarray(multipliers, dtype=float).copy()
        elif d_inc is not None:
            lam = w * d_inc
        else:
            lam = w * _row_extremes(Dc)[1] * 0.5
        # with the sorted lists, only the pairs w_i D[i, j] < lam_i are visited (a short prefix per item)
        sort_by = None if t_end is None else t0 + 0.5 * (t_end - t0)
        rows = self.sorted_candidates(sort_by)
        terms = _LagrangeTerms(Dc, w, rows if rows.complete else None)
        best, best_lam = -np.inf, lam.copy()
        mu, stall = 1.0, 0
        g_prev: np.ndarray | None = None
        for _ in range(max(1, int(max_iter))):
            rho = terms.rho(lam)
            S = np.argpartition(rho, self.k - 1)[: self.k] if self.k < nC else np.arange(nC)
            val = float(lam.sum() + rho[S].sum())
            if not np.isfinite(best) or val > best + 1e-12 * max(1.0, abs(best)):
                best, best_lam, stall = val, lam.copy(), 0
            else:
                stall += 1
                if stall >= 20:
                    mu, stall = mu / 2, 0
            if t_end is not None and time.perf_counter() >= t_end:
                break
            g = 1.0 - terms.served(lam, S)  # x_ij = 1 in the subproblem for the open j with w_i D[i, j] < lam_i
            if g_prev is not None:  # deflected subgradient: damps the zig-zag
                g = g + 0.5 * g_prev
            g_prev = g
            gg = float(g @ g)
            if gg == 0 or mu < 1e-6:
                break
            goal = target if np.isfinite(target) else best + 0.01 * abs(best) + 1e-9
            lam = lam + mu * max(goal - val, 1e-12 * max(1.0, abs(val))) / gg * g
        return float(best), best_lam

    def quick_bound(self, time_limit: float | None = None, *, incumbent: Any = None) -> float:
        """A valid lower bound within ``time_limit`` seconds (the Lagrangian bound, :meth:`lagrangian_bound`)."""
        return self.lagrangian_bound(time_limit, incumbent=incumbent)[0]

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(self._cand.tolist(), self.k):
            yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[KMedoids]:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(9, 2))
        D_asym = rng.integers(0, 20, size=(8, 8)).astype(float)
        np.fill_diagonal(D_asym, 0.0)
        R = rng.integers(0, 2, size=(6, 7)).astype(float)
        R = np.vstack([R, R[[0, 0, 2]]])  # duplicated items: interchangeable candidates, merged by the statements
        return [
            cls.from_features(X, k=3, metric="euclidean"),
            cls.from_features(rng.normal(size=(8, 5)), k=2, metric="correlation", weights=rng.uniform(0.5, 2, 8)),
            cls(D_asym, 3, candidates=[0, 2, 3, 5, 7]),
            cls.from_features(R, k=3, metric="correlation"),
        ]

    def n_selections(self) -> int:
        return math.comb(int(self._cand.size), self.k)

    # ----------------------------------------------------------- linear model
    def model_size(self, model: str) -> dict[str, Any]:
        """Size of a statement, estimated without building it.

        Parameters
        ----------
        model : {"assignment", "radius", "benders"}

        Returns
        -------
        dict
            ``columns``, ``rows``, ``nnz`` (upper bounds for ``"radius"``,
            whose distinct distance steps are counted only when the sorted
            lists exist), ``bytes`` (solver memory at :attr:`BYTES_PER_NNZ`
            per non-zero; for ``"benders"`` the master plus the sorted lists).
        """
        check_choice(model, "model", ("assignment", "radius", "benders"))
        nI, nC = int(self._served().size), int(self._cand.size)
        if model == "assignment":
            cols, rows, nnz = nI * nC + nC, nI + nI * nC + 1, 3 * nI * nC + nC
        elif model == "radius":
            steps = self._radius_steps()
            cols, rows = steps + nC, steps + 1
            nnz = min(nI * nC, steps + nI) + 2 * steps + nC
        else:
            cols, rows, nnz = nI + nC, 1, nC
        size = {"model": model, "columns": int(cols), "rows": int(rows), "nnz": int(nnz),
                "bytes": int(nnz * self.BYTES_PER_NNZ)}
        if model == "benders":
            size["bytes"] = int(4 * nI * nC + 64 * (nI + nC) * 8)  # sorted lists + a master of a few cuts per item
        return size

    def _radius_steps(self) -> int:
        """Kept distance steps of the radius model (exact with the sorted lists, else ``n_served * (C - k)``)."""
        nI, nC, k = int(self._served().size), int(self._cand.size), self.k
        if nI * nC <= self.EXACT_COUNT_MAX:
            self.sorted_candidates()
        s = self._sorted
        if s is None or not s.complete:
            return nI * max(nC - k, 0)
        Dc, total = s.Dc, 0
        B = _row_block(nC)
        for a in range(0, nI, B):
            ds = np.take_along_axis(Dc[a:a + B], s.order[a:a + B], axis=1)
            last = np.ones(ds.shape, dtype=bool)
            last[:, :-1] = ds[:, 1:] > ds[:, :-1]
            total += int(last[:, : max(nC - k, 0)].sum())
        return total

    def check_model_fits(self, model: str, *, time_limit: float | None = None,
                         nnz_per_second: float | None = None, check_time: bool = True) -> dict[str, Any]:
        """Raise :class:`ModelTooLargeError` when a static statement would not fit.

        A statement fits when its estimated solver memory is at most
        :attr:`MAX_MODEL_BYTES` and the memory available, and (with
        ``check_time``, a time limit and the consumer's building rate) when
        building and passing it takes at most half the time limit.

        Returns
        -------
        dict
            The estimate of :meth:`model_size`, with ``seconds`` when a rate is given.
        """
        size = self.model_size(model)
        if model == "benders":
            return size
        budget = min(self.MAX_MODEL_BYTES, _available_bytes())
        secs = None if not nnz_per_second else size["nnz"] / float(nnz_per_second)
        size["seconds"] = secs
        what = (f"the {model} model of this instance (N = {self.n_items}, {self._cand.size} candidates, k = {self.k}) "
                f"has about {size['columns']:,} columns and {size['nnz']:,} non-zeros, about "
                f"{size['bytes'] / 2**30:.2f} GiB for the solver")
        if size["bytes"] > budget:
            raise ModelTooLargeError(
                f"model: {what}, more than the {budget / 2**30:.2f} GiB allowed (KMedoids.MAX_MODEL_BYTES or the "
                "memory available); use model='benders' with method 'highs', or a heuristic", size, model)
        if check_time and time_limit is not None and secs is not None and secs > 0.5 * time_limit:
            raise ModelTooLargeError(
                f"model: {what}; building it would take about {secs:.0f} s, more than half the time limit of "
                f"{time_limit:g} s; use model='benders' with method 'highs', raise time_limit, or use a heuristic",
                size, model)
        return size

    def linear_model(self, *, allow_lazy: bool = False, model: str = "auto", time_limit: float | None = None,
                     nnz_per_second: float | None = None) -> LinearModel:
        """MILP statement.

        Parameters
        ----------
        allow_lazy : bool
            The backend generates rows on demand (needed by ``"benders"``).
        model : {"auto", "assignment", "radius", "benders"}
        time_limit, nnz_per_second : float, optional
            The consumer's time limit and building rate (non-zeros per second):
            ``"auto"`` picks no static statement that would take more than
            half the limit to build (:meth:`check_model_fits`); a statement
            too large for the memory is refused whether asked for or not.

        Raises
        ------
        ModelTooLargeError
            An :class:`InvalidInputError` naming ``model`` with the estimated
            columns, non-zeros and bytes.
        """
        check_choice(model, "model", self.model_options["model"])
        g = self._without_twins()
        if g is not self:  # the same problem with one candidate and one served item per group of twins
            out = g.linear_model(allow_lazy=allow_lazy, model=model, time_limit=time_limit,
                                 nnz_per_second=nnz_per_second)
            return replace(out, meta={**out.meta, "merged_candidates": int(self._cand.size - g._cand.size),
                                      "merged_items": int(self._served().size - g._served().size)})
        requested = model
        if model == "auto":
            if self.n_items * self._cand.size <= self.AUTO_ASSIGNMENT_MAX:
                model = "assignment"
            else:
                model = "benders" if allow_lazy else "radius"
        if model == "benders" and not allow_lazy:
            raise InvalidInputError(
                "model: 'benders' generates its cuts on demand, which this consumer (MPS export, CP-SAT or Pyomo) "
                "cannot do; use model='radius' or model='assignment'"
            )
        if model != "benders":
            try:
                self.check_model_fits(model, time_limit=time_limit, nnz_per_second=nnz_per_second,
                                      check_time=requested == "auto")
            except ModelTooLargeError as e:
                e.requested = requested
                raise
        if model == "assignment":
            return self._assignment_model()
        return self._radius_model() if model == "radius" else self._benders_model()

    def _assignment_model(self) -> LinearModel:
        I = self._served()
        C = self._cand
        nI, nC = I.size, C.size
        b = ModelBuilder("kmedoids_assignment")
        y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
        cost = self._w[I, None] * self._D[np.ix_(I, C)]
        x = b.add_vars("x", (nI, nC), lb=0, ub=1, implied_integer=True, cost=cost)
        b.add_cardinality("card", y, self.k)
        b.add_rows("assign", rows=np.repeat(np.arange(nI), nC), cols=x.ravel(), vals=1.0, lb=np.ones(nI),
                   ub=np.ones(nI))
        r = np.arange(nI * nC)
        b.add_rows(
            "link",
            rows=np.concatenate([r, r]),
            cols=np.concatenate([x.ravel(), np.tile(y, nI)]),
            vals=np.concatenate([np.ones(nI * nC), -np.ones(nI * nC)]),
            ub=np.zeros(nI * nC),
            shape=(nI, nC),
        )
        return b.build(selection_block="y", selection_items=C, meta={"variant": "assignment"})

    def _radius_model(self) -> LinearModel:
        """Elloumi (2010) radius formulation, vectorised, from the shared sorted lists.

        For item ``i`` let ``u_i^1 < ... < u_i^{K_i}`` be its distinct distances
        to the candidates. ``z_i^h = 1`` when no open medoid lies within
        ``u_i^h``. Cost ``w_i (u_i^1 + sum_h (u_i^{h+1} - u_i^h) z_i^h)``;
        rows ``z_i^1 + sum_{d_ij = u_i^1} y_j >= 1`` and
        ``z_i^h - z_i^{h-1} + sum_{d_ij = u_i^h} y_j >= 0``. Steps where at
        least ``C - k + 1`` candidates lie within ``u_i^h`` always have
        ``z = 0`` and are dropped with their rows.
        """
        I = self._served()
        C = self._cand
        nC = C.size
        s = self.sorted_candidates()
        order = s.order.astype(np.int64)
        Ds = np.take_along_axis(s.Dc, order, axis=1).astype(np.float64)
        new = np.ones_like(Ds, dtype=bool)
        new[:, 1:] = Ds[:, 1:] > Ds[:, :-1]
        grp = np.cumsum(new, axis=1) - 1  # 0-based distinct-distance group of each sorted entry
        last = np.ones_like(new)
        last[:, :-1] = new[:, 1:]
        # a step (group) is kept when fewer than C - k + 1 candidates lie within its distance
        within = np.arange(1, nC + 1)[None, :]
        keep_entry = last & (within < nC - self.k + 1)  # one entry per kept group (its last)
        n_keep = keep_entry.sum(axis=1)
        rows_i, pos = np.nonzero(keep_entry)
        nxt = Ds[rows_i, pos + 1]
        cur = Ds[rows_i, pos]
        b = ModelBuilder("kmedoids_radius")
        y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
        nz = int(n_keep.sum())
        z = b.add_vars("z", nz, lb=0, ub=1, implied_integer=True, cost=self._w[I][rows_i] * (nxt - cur))
        b.add_objective_constant(float(self._w[I] @ Ds[:, 0]))
        b.add_cardinality("card", y, self.k)
        offs = np.concatenate([[0], np.cumsum(n_keep)[:-1]])
        g_of = grp[rows_i, pos]
        in_row = grp < n_keep[:, None]
        ii, pp = np.nonzero(in_row)
        y_rows = offs[ii] + grp[ii, pp]
        y_cols = y[order[ii, pp]]
        z_rows_self = np.arange(nz)
        prev_mask = g_of > 0
        lb = np.where(g_of == 0, 1.0, 0.0)
        b.add_rows(
            "radius",
            rows=np.concatenate([y_rows, z_rows_self, z_rows_self[prev_mask]]),
            cols=np.concatenate([y_cols, z, z[np.flatnonzero(prev_mask) - 1]]),
            vals=np.concatenate([np.ones(y_rows.size), np.ones(nz), -np.ones(int(prev_mask.sum()))]),
            lb=lb,
        )
        return b.build(selection_block="y", selection_items=C,
                       meta={"variant": "radius", "steps": nz})

    def _benders_model(self) -> LinearModel:
        I = self._served()
        C = self._cand
        Dc = self._cost_matrix()
        lo, hi = _row_extremes(Dc)
        b = ModelBuilder("kmedoids_benders")
        y = b.add_vars("y", C.size, lb=0, ub=1, integer=True)
        theta = b.add_vars("theta", I.size, lb=lo, ub=hi, cost=self._w[I])
        b.add_cardinality("card", y, self.k)
        if self._sorted is None:
            self._sorted = SortedRows(Dc)
        lazy = BendersCuts(self, self._sorted, y, theta, lo, hi)
        return b.build(selection_block="y", selection_items=C, meta={"variant": "benders"}, lazy=lazy,
                       integral_objective=self._integral_costs())

    # ------------------------------------------------------------------ twins
    def candidate_representatives(self) -> np.ndarray:
        """Representative of each candidate: the lowest-index candidate with the same distance column.

        Candidates ``j`` and ``j'`` are interchangeable when ``D[i, j] == D[i, j']``
        for every served item ``i`` (exactly, as stored): every item is then as
        far from one as from the other. Columns are grouped by a random
        projection and each group is checked entry by entry.

        Returns
        -------
        ndarray of int64, shape (C,)
            Item index of the representative of each candidate (itself when it
            has no twin).
        """
        return self._twins()[0].copy()

    def client_representatives(self) -> np.ndarray:
        """Representative of each served item: the lowest-index served item with the same distances to
        every candidate (exactly, as stored), which may stand for it with their weights summed.

        Returns
        -------
        ndarray of int64, shape (n_served,)
            Item index of the representative of each served item (``self._served()`` order).
        """
        return self._twins()[1].copy()

    def _twins(self) -> tuple[np.ndarray, np.ndarray]:
        """Twin columns (candidates) and twin rows (served items) of the cost matrix, as representatives
        (computed once; callers copy)."""
        if self._twin_reps is None:
            self._twin_reps = self._find_twins()
        return self._twin_reps

    def _find_twins(self) -> tuple[np.ndarray, np.ndarray]:
        I, cand, C = self._served(), self._cand, self._cand.size
        whole = self._cost_is_D()
        rng = np.random.default_rng(0)
        r_rows, r_cols = rng.uniform(1.0, 2.0, I.size), rng.uniform(1.0, 2.0, C)
        h_cols, h_rows = np.zeros(C), np.zeros(I.size)
        B = _row_block(C)
        for a in range(0, I.size, B):  # blocks of served rows: no copy of the cost matrix
            blk = np.asarray(self._D[a:a + B] if whole else self._D[np.ix_(I[a:a + B], cand)], dtype=np.float64)
            h_cols += r_rows[a:a + B] @ blk
            h_rows[a:a + B] = blk @ r_cols
        col_rep = _twin_heads(h_cols, lambda m: self._D[I, cand[m]])
        row_rep = _twin_heads(h_rows, lambda m: self._D[I[m], cand])
        return cand[col_rep], I[row_rep]

    def canonical_selection(self, selection: Any) -> np.ndarray:
        """``selection`` with each medoid replaced by its representative (:meth:`candidate_representatives`).

        A medoid whose twin is also selected gives way to the lowest-index
        representative not selected, which can only lower the objective.
        Returns item indices, shape (k,), sorted; a selection holding a
        non-candidate, or of an instance whose statements merge nothing
        (:meth:`_without_twins`), is returned as it is.
        """
        sel = self.as_selection(selection)
        pos = np.minimum(np.searchsorted(self._cand, sel), self._cand.size - 1)
        if not np.array_equal(self._cand[pos], sel) or self._without_twins() is self:
            return sel
        reps = self.candidate_representatives()
        mapped = np.unique(reps[pos])
        if mapped.size < sel.size:
            spare = np.setdiff1d(np.unique(reps), mapped)[: sel.size - mapped.size]
            mapped = np.sort(np.concatenate([mapped, spare]))
        return mapped.astype(np.int64)

    def _without_twins(self) -> KMedoids:
        """This problem with one candidate per interchangeable group and one served item per group of
        twin rows (its weight the group's sum; the others weight 0): the same objective for every
        selection. ``self`` when nothing merges or it does not pay: fewer distinct candidates than
        ``k``, or a cost-matrix copy above :attr:`DEDUP_COPY_MAX`."""
        if self._twinless is None:
            keep = np.unique(self.candidate_representatives())
            crep = self.client_representatives()
            n_clients = np.unique(crep).size
            copy_bytes = n_clients * keep.size * self._D.itemsize
            whole = self._cost_is_D()
            merges = keep.size < self._cand.size or n_clients < crep.size
            if not merges or keep.size < self.k or (whole and copy_bytes > self.DEDUP_COPY_MAX):
                self._twinless = self
            else:
                w = np.zeros(self.n_items)
                np.add.at(w, crep, self._w[self._served()])
                self._twinless = KMedoids(self._D, self.k, weights=w, candidates=keep, dtype=self._D.dtype.name)
        return self._twinless

    def _integral_costs(self) -> bool:
        """Integer distances and weights: every selection has an integer objective."""
        w = self._w[self._served()]
        if not np.all(w == np.round(w)):
            return False
        B = _row_block(self.n_items)
        return all(bool(np.all(self._D[a:a + B] == np.round(self._D[a:a + B]))) for a in range(0, self.n_items, B))


def _twin_heads(h: np.ndarray, vec: Callable[[int], np.ndarray]) -> np.ndarray:
    """Representative (lowest index) of each index whose vector ``vec(m)`` equals another's exactly.

    ``h`` (shape (n,)) is a random projection of each vector: equal vectors have
    (nearly) equal projections, so only runs of near-equal ``h`` are compared entry by
    entry; a hash collision stays apart. Returns indices, shape (n,).
    """
    order = np.argsort(h, kind="stable")
    hs = h[order]
    near = np.abs(np.diff(hs)) <= 1e-9 * np.maximum(1.0, np.abs(hs[1:]))
    rep = np.arange(h.size)
    for run in np.split(order, np.flatnonzero(~near) + 1):  # runs of near-equal projections
        if run.size > 1:
            members = np.sort(run)
            head = vec(int(members[0]))
            for m in members[1:]:
                if np.array_equal(vec(int(m)), head):
                    rep[m] = members[0]
    return rep


def _available_bytes() -> int:
    """Memory the system reports available (``MemAvailable``); a large number when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _row_extremes(Dc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row minima and maxima of a cost matrix as float64, blockwise."""
    n = Dc.shape[0]
    lo, hi = np.empty(n), np.empty(n)
    B = _row_block(Dc.shape[1])
    for a in range(0, n, B):
        lo[a:a + B] = Dc[a:a + B].min(axis=1)
        hi[a:a + B] = Dc[a:a + B].max(axis=1)
    return lo, hi


class _LagrangeTerms:
    """``rho_j = sum_i min(0, w_i D[i, j] - lam_i)`` and the subgradient counts, dense or along sorted lists."""

    def __init__(self, Dc: np.ndarray, w: np.ndarray, rows: SortedRows | None) -> None:
        self.Dc, self.w, self.rows = Dc, w, rows
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None

    def rho(self, lam: np.ndarray) -> np.ndarray:
        n, C = self.Dc.shape
        if self.rows is None:
            rho = np.zeros(C)
            B = _row_block(C)
            for a in range(0, n, B):
                blk = self.w[a:a + B, None] * self.Dc[a:a + B] - lam[a:a + B, None]
                np.minimum(blk, 0.0, out=blk)
                rho += blk.sum(axis=0)
            return rho
        r, c, v = self._prefix_pairs(lam)
        self._pairs = (r, c)
        return -np.bincount(c, weights=v, minlength=C)

    def _prefix_pairs(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs with ``w_i D[i, j] < lam_i`` (row, column, ``lam_i - w_i D[i, j]``), walking each sorted list."""
        assert self.rows is not None
        order, Dc, w = self.rows.order, self.Dc, self.w
        C = Dc.shape[1]
        thr = lam / w
        active = np.flatnonzero(thr > 0)
        d0, width = 0, 16
        rs, cs, vs = [], [], []
        while active.size and d0 < C:
            d1 = min(C, d0 + width)
            cols = order[active, d0:d1]
            dd = Dc[active[:, None], cols].astype(np.float64)
            inside = dd < thr[active, None]
            i, q = np.nonzero(inside)
            rr = active[i]
            rs.append(rr)
            cs.append(cols[i, q].astype(np.int64))
            vs.append(lam[rr] - w[rr] * dd[i, q])
            active = active[inside[:, -1]]
            d0, width = d1, 2 * width
        if not rs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(rs), np.concatenate(cs), np.concatenate(vs)

    def served(self, lam: np.ndarray, S: np.ndarray) -> np.ndarray:
        """Per item, how many of the columns ``S`` have ``w_i D[i, j] < lam_i``."""
        n, C = self.Dc.shape
        if self.rows is None or self._pairs is None:
            out = np.zeros(n)
            B = _row_block(max(S.size, 1))
            for a in range(0, n, B):
                out[a:a + B] = (self.w[a:a + B, None] * self.Dc[a:a + B][:, S] < lam[a:a + B, None]).sum(axis=1)
            return out
        r, c = self._pairs
        chosen = np.zeros(C, dtype=bool)
        chosen[S] = True
        return np.bincount(r, weights=chosen[c].astype(np.float64), minlength=n)


class SortedRows:
    """Per row of a cost matrix, its columns in increasing cost, sorted block by block on demand.

    Attributes
    ----------
    Dc : ndarray, shape (n, C)
        The cost matrix (a view of ``KMedoids.D`` when every item is served
        and every item is a candidate).
    order : ndarray of int32, shape (n, C)
        ``order[i]`` sorts ``Dc[i]`` (stable); valid for rows ``< done``.
    done : int
        Rows sorted so far.
    """

    def __init__(self, Dc: np.ndarray) -> None:
        self.Dc = Dc
        n, C = Dc.shape
        self.order = np.empty((n, C), dtype=np.int32 if C < 2**31 else np.int64)
        self.done = 0
        self._lock = threading.Lock()

    @property
    def complete(self) -> bool:
        return self.done >= self.Dc.shape[0]

    def extend(self, deadline: float | None = None) -> bool:
        """Sort further rows until all are sorted or ``time.perf_counter()`` passes ``deadline``.

        Returns True when every row is sorted.
        """
        n, C = self.Dc.shape
        B = _row_block(C)
        with self._lock:  # search threads may separate at once; `done` only grows, rows below it stay sorted
            while self.done < n:
                if deadline is not None and time.perf_counter() >= deadline:
                    return False
                a, b = self.done, min(n, self.done + B)
                self.order[a:b] = np.argsort(self.Dc[a:b], axis=1, kind="stable")
                self.done = b
        return True


class SwapState:
    """Nearest and second-nearest medoid of every item, and the cost change of swaps.

    FasterPAM's bookkeeping (Schubert & Rousseeuw 2021), shared by the
    ``"fasterpam"`` heuristic and the branch-and-cut's node heuristic.

    Parameters
    ----------
    D : ndarray, shape (N, N)
    medoids : ndarray of int, shape (k,)
        Item indices of the current medoids (distinct).
    w : ndarray, shape (N,)
        Item weights.

    Attributes
    ----------
    med : ndarray of int64, shape (k,)
        Current medoids (in slot order; :meth:`apply` replaces a slot).
    nearest, second : ndarray of int64, shape (N,)
        Slot of each item's nearest and second-nearest medoid.
    d1, d2 : ndarray, shape (N,)
        The corresponding distances (``d2 = inf`` when ``k == 1``).
    """

    def __init__(self, D: np.ndarray, medoids: np.ndarray, w: np.ndarray) -> None:
        self.D, self.w = D, w
        self.med = np.asarray(medoids, dtype=np.int64).copy()
        self.k = self.med.size
        self.is_med = np.zeros(D.shape[0], dtype=bool)
        self.is_med[self.med] = True
        self.nearest, self.d1, self.second, self.d2 = self._nearest_two(np.arange(D.shape[0]))
        self._groups: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def cost(self) -> float:
        return float(self.w @ self.d1)

    def _nearest_two(self, sub: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        Dm = self.D[np.ix_(sub, self.med)].astype(np.float64)
        if self.k == 1:
            z = np.zeros(sub.size, np.int64)
            return z, Dm[:, 0].copy(), z, np.full(sub.size, np.inf)
        part = np.argpartition(Dm, 1, axis=1)[:, :2]
        a = np.take_along_axis(Dm, part, axis=1)
        sw = a[:, 1] < a[:, 0]
        return (np.where(sw, part[:, 1], part[:, 0]), np.where(sw, a[:, 1], a[:, 0]),
                np.where(sw, part[:, 0], part[:, 1]), np.where(sw, a[:, 0], a[:, 1]))

    def _clusters(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Removal loss per slot, items sorted by slot, non-empty slots and their start offsets (cached)."""
        if self._groups is None:
            w = self.w
            removal = np.bincount(self.nearest, weights=w * (self.d2 - self.d1), minlength=self.k)
            perm = np.argsort(self.nearest, kind="stable")
            counts = np.bincount(self.nearest, minlength=self.k)
            filled = np.flatnonzero(counts)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
            self._groups = (removal, perm, filled, starts)
        return self._groups

    def deltas(self, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best slot to give up and the cost change, for swapping in each candidate.

        Parameters
        ----------
        cands : ndarray of int, shape (b,)
            Item indices (non-medoids; medoids get ``+inf``).

        Returns
        -------
        slot : ndarray of int64, shape (b,)
        delta : ndarray, shape (b,)
            Cost after the swap minus the cost now (negative: improving).
        """
        w, d1, d2 = self.w, self.d1, self.d2
        Dc = self.D[:, cands].astype(np.float64)  # (N, b)
        b = cands.size
        if self.k == 1:
            slot = np.zeros(b, np.int64)
            val = w @ Dc - float(w @ d1)
        else:
            removal, perm, filled, starts = self._clusters()
            diff1 = Dc - d1[:, None]
            closer = diff1 < 0
            acc = (w[:, None] * np.where(closer, diff1, 0.0)).sum(axis=0)
            M1 = np.where(closer, (w * (d1 - d2))[:, None],
                          np.where(Dc < d2[:, None], w[:, None] * (Dc - d2[:, None]), 0.0))
            delta = np.repeat(removal[:, None], b, axis=1)
            delta[filled] += np.add.reduceat(M1[perm], starts, axis=0)
            slot = np.argmin(delta, axis=0)
            val = delta[slot, np.arange(b)] + acc
        return slot, np.where(self.is_med[cands], np.inf, val)

    def apply(self, slot: int, c: int) -> None:
        """Swap medoid slot ``slot`` for item ``c``, updating nearest and second nearest incrementally."""
        i = int(slot)
        self.is_med[self.med[i]] = False
        self.med[i] = int(c)
        self.is_med[int(c)] = True
        dc = self.D[:, int(c)].astype(np.float64)
        nearest, second, d1, d2 = self.nearest, self.second, self.d1, self.d2
        redo = (nearest == i) | (second == i)
        keep = ~redo
        closer_c = keep & (dc < d1)
        mid_c = keep & ~closer_c & (dc < d2)
        self.second = np.where(closer_c, nearest, np.where(mid_c, i, second))
        self.d2 = np.where(closer_c, d1, np.where(mid_c, dc, d2))
        self.nearest = np.where(closer_c, i, nearest)
        self.d1 = np.where(closer_c, dc, d1)
        sub = np.flatnonzero(redo)
        if sub.size:
            self.nearest[sub], self.d1[sub], self.second[sub], self.d2[sub] = self._nearest_two(sub)
        self._groups = None

    def eager_swaps(self, cands: np.ndarray, *, max_evals: int | None = None, block: int = 64,
                    tol: float | None = None, expired: Any = None) -> tuple[int, int, bool]:
        """FasterPAM's eager search over ``cands`` (in the given order, cyclically).

        Each improving swap is applied as soon as it is found; the search
        stops after a full cycle without improvement (converged), after
        ``max_evals`` candidate evaluations, or when ``expired()`` is true.
        Candidates are scored ``block`` at a time; the first improving one in
        visiting order is applied, so the swaps are those of the one-by-one
        algorithm.

        Returns
        -------
        swaps : int
        evaluated : int
            Candidate evaluations done (a pass is ``len(cands)``).
        converged : bool
        """
        if tol is None:
            tol = 1e-12 * max(1.0, self.cost)
        total = cands.size
        limit = np.inf if max_evals is None else max_evals
        ptr = since = swaps = evaluated = 0
        while since < total and evaluated < limit:
            if expired is not None and expired():
                break
            take = int(min(block, total - since))
            idx = (ptr + np.arange(take)) % total
            slot, val = self.deltas(cands[idx])
            hits = np.flatnonzero(val < -tol)
            if hits.size:
                t = int(hits[0])
                self.apply(int(slot[t]), int(cands[idx[t]]))
                swaps += 1
                ptr = (ptr + t + 1) % total
                evaluated += t + 1
                since = 0
            else:
                ptr = (ptr + take) % total
                evaluated += take
                since += take
        return swaps, evaluated, since >= total


class BendersCuts:
    """Lazy rows of the Benders master: ``theta_i + sum_j max(0, L - D[i, j]) y_j >= L``.

    For a (fractional) ``y``, the deepest cut of item ``i`` is at the distance
    ``L_i`` where the open mass of its nearest candidates first reaches 1
    (Duran-Mateluna, Ales & Elloumi: the Benders subproblem of the radius
    formulation solved in linear time); at an integral ``y`` it is the
    distance to the nearest medoid and the cut is tight. Items whose sorted
    candidate list exists walk it from the nearest candidate (a few dozen
    entries each); the others (while the lists are still being sorted within a
    time slice per call) sort only the candidates with positive ``y``.
    Nothing of size ``N x N`` is allocated per call.

    Also offers the branch-and-cut a rounding (``round``) and a local search
    (``improve``: eager swaps among the candidates the LP uses).
    """

    name = "benders"

    def __init__(self, f: KMedoids, rows: SortedRows, y_cols: np.ndarray, theta_cols: np.ndarray,
                 lo: np.ndarray, hi: np.ndarray, *, sort_slice: float = 0.25) -> None:
        self.f = f
        self.sorted = rows
        self.Dc = rows.Dc  # (n_served, C)
        self.items = f.candidates  # item index of each y column
        self.k = f.k
        self.y_cols = y_cols
        self.theta_cols = theta_cols
        self.lo, self.hi = lo, hi
        self.sort_slice = sort_slice
        self.stats: dict[str, Any] = {"separations": 0, "separation_seconds": 0.0}
        self.initial_bound: float | None = None  # the Lagrangian bound behind initial_rows
        # the memory the k-medoids solve is designed to stay within (3 dense N x N float64 copies + 400 MB):
        # the branch-and-cut starts further search threads only inside it
        self.memory_budget = 3 * 8 * f.n_items ** 2 + 400 * 2 ** 20

    # ------------------------------------------------------------ separation
    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        """Deepest cut of every item it violates at ``x`` (shape (n_cols,)), or None."""
        t0 = time.perf_counter()
        if not self.sorted.complete:
            self.sorted.extend(t0 + self.sort_slice)
        y = np.clip(x[self.y_cols], 0.0, 1.0)
        L, act, pos = self.levels(y)
        viol = L - act - x[self.theta_cols]
        idx = np.flatnonzero(viol > tol * np.maximum(1.0, np.abs(L)))
        out = self.cuts(idx, L[idx], pos[idx]) if idx.size else None
        self.stats["separations"] += 1
        self.stats["separation_seconds"] += time.perf_counter() - t0
        return out

    def levels(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Deepest level of every item at ``y``.

        Returns
        -------
        L : ndarray, shape (n_served,)
            The level (a distance).
        act : ndarray, shape (n_served,)
            ``sum_j max(0, L - D[i, j]) y_j``.
        pos : ndarray of int64, shape (n_served,)
            Number of sorted candidates at or before the level (-1 for rows
            not sorted yet).
        """
        n = self.Dc.shape[0]
        L, act, pos = np.empty(n), np.empty(n), np.full(n, -1, dtype=np.int64)
        s = self.sorted.done
        B = max(256, _BLOCK // 256)  # rows per walk: bounded temporaries
        for a in range(0, s, B):
            b = min(s, a + B)
            L[a:b], act[a:b], pos[a:b] = self._walk(np.arange(a, b), y)
        if s < n:
            L[s:], act[s:] = self._support_levels(np.arange(s, n), y)
        return L, act, pos

    def _walk(self, R: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walk the sorted lists of rows ``R`` until the open mass reaches 1 (chunks of doubling width)."""
        C = self.Dc.shape[1]
        order, Dc = self.sorted.order, self.Dc
        m = R.size
        L, act, pos = np.empty(m), np.empty(m), np.empty(m, dtype=np.int64)
        cy, cyd = np.zeros(m), np.zeros(m)
        active = np.arange(m)
        d0, width, thr = 0, 16, 1.0 - 1e-9
        while active.size:
            d1 = min(C, d0 + width)
            rr = R[active]
            cols = order[rr, d0:d1]
            yy = y[cols]
            dd = Dc[rr[:, None], cols].astype(np.float64)
            cum = cy[active, None] + np.cumsum(yy, axis=1)
            cumd = cyd[active, None] + np.cumsum(yy * dd, axis=1)
            reach = cum >= thr
            hit = reach[:, -1] if d1 < C else np.ones(active.size, dtype=bool)
            if hit.any():
                h = np.flatnonzero(hit)
                p = np.where(reach[h].any(axis=1), np.argmax(reach[h], axis=1), -1)
                far = p < 0  # the mass never reaches 1 (rounding): the farthest candidate's level
                Lh = np.where(far, self.hi[rr[h]], dd[h, np.maximum(p, 0)])
                q = np.where(far, d1 - d0 - 1, p)
                act[active[h]] = Lh * cum[h, q] - cumd[h, q]
                L[active[h]] = Lh
                pos[active[h]] = np.where(far, C, d0 + q + 1)
            cy[active] = cum[:, -1]
            cyd[active] = cumd[:, -1]
            active = active[~hit]
            d0, width = d1, 2 * width
        return L, act, pos

    def _support_levels(self, R: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Levels of unsorted rows from the candidates with positive ``y`` only."""
        J = np.flatnonzero(y > 0)
        yJ = y[J]
        m = R.size
        if J.size == 0:
            return self.hi[R].copy(), np.zeros(m)
        L, act = np.empty(m), np.empty(m)
        B = _row_block(max(J.size, 1))
        thr = 1.0 - 1e-9
        for a in range(0, m, B):
            rr = R[a:a + B]
            DJ = self.Dc[np.ix_(rr, J)].astype(np.float64)
            o = np.argsort(DJ, axis=1, kind="stable")
            ds = np.take_along_axis(DJ, o, axis=1)
            ys = yJ[o]
            cum = np.cumsum(ys, axis=1)
            cumd = np.cumsum(ys * ds, axis=1)
            reach = cum >= thr
            ok = reach.any(axis=1)
            p = np.where(ok, np.argmax(reach, axis=1), J.size - 1)
            Lb = np.where(ok, ds[np.arange(rr.size), p], self.hi[rr])
            L[a:a + B] = Lb
            act[a:a + B] = Lb * cum[np.arange(rr.size), p] - cumd[np.arange(rr.size), p]
        return L, act

    def cuts(self, rows: np.ndarray, L: np.ndarray, pos: np.ndarray | None = None) -> RowBlock:
        """The cuts of items ``rows`` (indices into the served items) at levels ``L``.

        ``pos`` (from :meth:`levels`) bounds the sorted prefix holding every
        candidate closer than the level; rows without it are scanned.
        """
        if pos is None:
            pos = np.full(rows.size, -1, dtype=np.int64)
        m = rows.size
        srt = np.flatnonzero(pos >= 0)
        scan = np.flatnonzero(pos < 0)
        r_parts, c_parts, v_parts = [], [], []
        if srt.size:
            p = pos[srt]
            rr = np.repeat(srt, p)
            offs = np.repeat(np.cumsum(p) - p, p)
            qq = np.arange(rr.size) - offs
            cols = self.sorted.order[rows[rr], qq].astype(np.int64)
            vals = L[rr] - self.Dc[rows[rr], cols]
            keep = vals > 0
            r_parts.append(rr[keep])
            c_parts.append(cols[keep])
            v_parts.append(vals[keep])
        if scan.size:
            B = _row_block(self.Dc.shape[1])
            for a in range(0, scan.size, B):
                sub = scan[a:a + B]
                vals = L[sub, None] - self.Dc[rows[sub]]
                rr, cols = np.nonzero(vals > 0)
                r_parts.append(sub[rr])
                c_parts.append(cols)
                v_parts.append(vals[rr, cols].astype(np.float64))
        rr = np.concatenate(r_parts) if r_parts else np.zeros(0, np.int64)
        cc = np.concatenate(c_parts) if c_parts else np.zeros(0, np.int64)
        vv = np.concatenate(v_parts) if v_parts else np.zeros(0)
        return RowBlock(
            rows=np.concatenate([np.arange(m), rr]),
            cols=np.concatenate([self.theta_cols[rows], self.y_cols[cc]]),
            vals=np.concatenate([np.ones(m), vv]),
            lb=np.asarray(L, dtype=np.float64),
            ub=np.full(m, np.inf),
        )

    #: Smallest ``n_served * C`` for which :meth:`initial_rows` proposes cuts (below, the plain cut loop is quick).
    INITIAL_ROWS_MIN = 4_000_000

    def initial_rows(self, time_limit: float | None = None, incumbent: np.ndarray | None = None) -> RowBlock | None:
        """One cut per item at the level of near-optimal Lagrangian multipliers (``lam_i / w_i``).

        With these cuts the master LP is at least the Lagrangian bound reached
        (summing them with weights ``w_i`` gives ``L(lam)``), so the root cut
        loop starts near the LP bound instead of from ``theta = 0``; the
        multipliers come from :meth:`KMedoids.lagrangian_bound` within
        ``time_limit`` seconds, and its bound is kept as ``initial_bound``.
        """
        f = self.f
        if self.Dc.size < self.INITIAL_ROWS_MIN:
            return None
        self.initial_bound, lam = f.lagrangian_bound(time_limit, incumbent=incumbent, max_iter=1000)
        w = f.weights[f._served()]
        L = np.clip(lam / w, self.lo, self.hi)
        self.stats["initial_rows"] = int(L.size)
        return self.cuts(np.arange(L.size), L)

    # ----------------------------------------------------- primal heuristics
    def round(self, x: np.ndarray) -> np.ndarray:
        """The ``k`` candidates with the largest LP value (ties: lowest index)."""
        y = x[self.y_cols]
        return np.sort(self.items[np.argsort(-y, kind="stable")[: self.k]])

    def improve(self, selection: np.ndarray, x: np.ndarray | None = None, *, passes: int = 2,
                deadline: float | None = None) -> np.ndarray:
        """A few eager-swap passes from ``selection`` over the candidates with positive LP value.

        Parameters
        ----------
        selection : ndarray of int, shape (k,)
            Item indices.
        x : ndarray, shape (n_cols,), optional
            The LP point; without it every candidate is tried.
        passes : int
        deadline : float, optional
            ``time.perf_counter()`` value after which no further swap is tried.
        """
        f = self.f
        pool = self.items if x is None else self.items[x[self.y_cols] > 1e-6]
        pool = np.setdiff1d(pool, selection)
        if pool.size == 0:
            return np.sort(np.asarray(selection, dtype=np.int64))
        st = SwapState(f.D, np.asarray(selection), f.weights)
        expired = None if deadline is None else (lambda: time.perf_counter() >= deadline)
        st.eager_swaps(pool, max_evals=passes * pool.size, expired=expired)
        return np.sort(st.med)
