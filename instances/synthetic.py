"""Small seeded generators for tests and benchmarks."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.validation import check_allocation, check_choice, check_int, check_rng
from benchsel.formulations.kmedoids import KMedoids

__all__ = ["make_benchmark_responses", "make_kmedoids"]


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


def make_benchmark_responses(n_models: int = 100, n_items: int = 14_000, *, n_subjects: int = 57,
                             seed: Any = 0) -> np.ndarray:
    """Seeded binary responses of ``n_models`` models on a multi-subject benchmark (MMLU-like shape).

    A two-parameter IRT model with one ability per subject:
    ``P(correct) = sigmoid(a_n (theta_{m, s(n)} - b_n))``, item ``n`` in
    subject ``s(n)`` (subjects of uneven size), abilities
    ``theta_{m, s} = g_m + 0.7 e_{m, s}`` (a general factor plus a subject
    one, standard normal), difficulties ``b ~ N(0, 1)``, discriminations
    ``a ~ LogNormal(0.3, 0.4)``. The default size is full MMLU's (14 042
    items, 57 subjects; 14 000 here).

    Parameters
    ----------
    n_models, n_items, n_subjects : int
    seed : int or Generator

    Returns
    -------
    ndarray of float, shape (n_models, n_items)
        Entries 0 or 1.
    """
    n_models = check_int(n_models, "n_models", low=2)
    n_items = check_int(n_items, "n_items", low=2)
    n_subjects = check_int(n_subjects, "n_subjects", low=1)
    rng = check_rng(seed)
    share = rng.dirichlet(np.full(n_subjects, 2.0))
    subject = rng.choice(n_subjects, size=n_items, p=share)
    theta = rng.normal(size=(n_models, 1)) + 0.7 * rng.normal(size=(n_models, n_subjects))
    b = rng.normal(size=n_items)
    a = rng.lognormal(0.3, 0.4, size=n_items)
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, subject] - b)))
    return (rng.uniform(size=p.shape) < p).astype(float)
