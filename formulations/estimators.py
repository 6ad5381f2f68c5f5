"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.estimation.base` and
`benchsel.formulations.estimation.weighted` and `benchsel.formulations.estimation.linear` and
`benchsel.formulations.estimation.baselines`."""
from __future__ import annotations

from benchsel.formulations.estimation.base import (
    Estimator,
    estimator_names,
    get_estimator,
    list_estimators,
    register_estimator,
)
from benchsel.formulations.estimation.baselines import (
    BayesAIPW,
    RSMean,
)
from benchsel.formulations.estimation.linear import (
    RepCoreRidge,
    Ridge,
    Stacked,
    ridge_loo,
    simplex_weights,
)
from benchsel.formulations.estimation.weighted import (
    ClusterWeighted,
    MeanEstimator,
    SourceAssisted,
    selection_distances,
)

__all__ = [
    "BayesAIPW",
    "ClusterWeighted",
    "Estimator",
    "MeanEstimator",
    "RSMean",
    "RepCoreRidge",
    "Ridge",
    "SourceAssisted",
    "Stacked",
    "estimator_names",
    "get_estimator",
    "list_estimators",
    "register_estimator",
    "ridge_loo",
    "selection_distances",
    "simplex_weights",
]
