"""OR-Library p-median instances (Beasley 1985), ``pmed1`` ... ``pmed40``.

Format: first line ``n m p``; then ``m`` lines ``i j c`` (1-based undirected edge
of cost ``c``). The allocation cost is the all-pairs shortest-path distance,
where an edge listed twice takes its *later* cost. The file is read as a
networkx graph (:func:`pmed_graph`) and the instance built by
``KMedoids.from_graph``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_allocation
from benchsel.formulations.kmedoids import KMedoids

__all__ = ["load_pmed", "load_pmed_optima", "pmed_graph", "read_pmed_graph"]


def _read_ints(path: Path, what: str) -> np.ndarray:
    try:
        text = path.read_text()
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {what} file {str(path)!r}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"path: {str(path)!r} is not a {what} file: not text ({e.reason})") from None
    try:
        return np.array(text.split(), dtype=np.int64)
    except OverflowError:
        raise InvalidInputError(f"path: {str(path)!r}: a number does not fit a 64-bit integer") from None
    except ValueError:
        bad = next(t for t in text.split() if not re.fullmatch(r"[+-]?\d+", t))
        raise InvalidInputError(f"path: {str(path)!r} is not a {what} file: expected integers, found {bad!r}") from None


def _check_header(path: Path, n: int, m: int, p: int) -> None:
    """Sizes of a pmed header ``n m p`` checked before anything is allocated."""
    if n < 2 or m < 0:
        raise InvalidInputError(f"path: {str(path)!r}: header says n={n} vertices and m={m} edges; "
                                "expected n >= 2 and m >= 0")
    if not 1 <= p < n:
        raise InvalidInputError(f"path: {str(path)!r}: header says p={p} medians for n={n} vertices; "
                                "expected 1 <= p < n")
    check_allocation(3 * 8.0 * n * n, "path", f"the ({n}, {n}) shortest-path distance matrix of {str(path)!r}")


def pmed_graph(path: str | Path) -> tuple[Any, int]:
    """Read a ``pmed`` file as a networkx graph.

    Returns
    -------
    G : networkx.Graph
        Nodes ``0..n-1`` (vertex ``v`` of the file is node ``v - 1``); an edge
        listed twice keeps its later cost (attribute ``"weight"``).
    p : int
        Number of medians given in the file.
    """
    import networkx as nx

    path = Path(path)
    v = _read_ints(path, "OR-Library p-median")
    if v.size < 3:
        raise InvalidInputError(f"path: {str(path)!r}: expected a header 'n m p', got {v.size} numbers")
    n, m, p = (int(t) for t in v[:3])
    _check_header(path, n, m, p)
    body = v[3:]
    if n < 2 or m < 0 or body.size != 3 * m:
        raise InvalidInputError(
            f"path: {str(path)!r}: header says n={n}, m={m} edges (expected {3 * m} numbers after it), "
            f"got {body.size}"
        )
    e = body.reshape(m, 3)
    i, j, c = e[:, 0] - 1, e[:, 1] - 1, e[:, 2]
    if m and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
        raise InvalidInputError(f"path: {str(path)!r}: vertex indices must lie in 1..{n}")
    if m and c.min() < 0:
        raise InvalidInputError(f"path: {str(path)!r}: edge costs must be non-negative, got {c.min():g}")
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from(zip(i.tolist(), j.tolist(), c.astype(float).tolist()))  # a later listing overwrites
    return G, p


def read_pmed_graph(path: str | Path) -> tuple[np.ndarray, int]:
    """Read a ``pmed`` file into its shortest-path distance matrix.

    Returns
    -------
    D : ndarray of float, shape (n, n)
        All-pairs shortest-path distances.
    p : int
        Number of medians given in the file.
    """
    f, p = _load(path, None)
    return np.array(f.D), p


def _load(path: str | Path, k: int | None) -> tuple[Any, int]:

    G, p = pmed_graph(path)
    try:
        return KMedoids.from_graph(G, p if k is None else k, nodelist=range(G.number_of_nodes())), p
    except InvalidInputError as e:
        if "not connected" in str(e):
            raise InvalidInputError(
                f"path: {str(path)!r}: the graph is not connected; every vertex must reach every other") from None
        raise


def load_pmed(path: str | Path, *, k: int | None = None) -> Any:
    """Load an OR-Library ``pmed`` instance as a :class:`benchsel.formulations.KMedoids`.

    The file's graph (:func:`pmed_graph`) goes through
    :meth:`KMedoids.from_graph <benchsel.formulations.KMedoids.from_graph>`.

    Parameters
    ----------
    path : str or Path
        The ``pmed<k>.txt`` file.
    k : int, optional
        Number of medoids; defaults to ``p`` from the file.
    """
    return _load(path, k)[0]


def load_pmed_optima(path: str | Path) -> dict[str, float]:
    """Read OR-Library's ``pmedopt`` file: ``{"pmed1": 5819.0, ...}``."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {str(path)!r}: {e.strerror or e}") from None
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[0].lower().startswith("pmed"):
            try:
                out[parts[0].lower()] = float(parts[1])
            except ValueError:
                continue
    if not out:
        raise InvalidInputError(f"path: {str(path)!r}: expected lines 'pmed<k> <value>', found none")
    return out
