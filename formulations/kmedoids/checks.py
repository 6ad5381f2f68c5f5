"""Checks of :class:`KMedoids`' arguments (pure functions) and the error a too large statement raises."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    as_array,
    as_index_array,
    check_choice,
    check_int,
    check_magnitude,
)

from .distances import METRICS, _check_float32, _dtype


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
