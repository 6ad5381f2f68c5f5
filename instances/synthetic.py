"""Small seeded generators for tests and benchmarks."""
from __future__ import annotations

from typing import Any

from benchsel.solvers.validation import check_allocation, check_choice, check_int, check_rng

__all__ = ["make_kmedoids"]


def make_kmedoids(n: int = 60, k: int = 5, *, dim: int = 2, n_clusters: int | None = None, metric: str = "euclidean",
                  weighted: bool = False, seed: Any = 0) -> Any:
    """A :class:`benchsel.formulations.KMedoids` on points drawn around ``n_clusters`` Gaussian centres.

    Parameters
    ----------
    n : int
        Items.
    k : int
        Medoids.
    dim : int
        Feature dimension.
    n_clusters : int, optional
        Number of centres (default ``k``).
    metric : {"euclidean", "cosine", "correlation"}
    weighted : bool
        Draw item weights uniformly from [0.5, 2].
    seed : int or Generator
    """
    from benchsel.formulations.kmedoids import KMedoids

    n = check_int(n, "n", low=2)
    dim = check_int(dim, "dim", low=1)
    check_allocation(8.0 * (4 * n * n + 2 * n * dim), "n", f"the ({n}, {n}) dissimilarity matrix of {n} points")
    check_choice(metric, "metric", ("euclidean", "cosine", "correlation"))
    rng = check_rng(seed)
    c = check_int(n_clusters if n_clusters is not None else k, "n_clusters", low=1)
    centres = rng.normal(scale=4.0, size=(c, dim))
    X = centres[rng.integers(c, size=n)] + rng.normal(size=(n, dim))
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    return KMedoids.from_features(X, k, metric=metric, weights=w)
