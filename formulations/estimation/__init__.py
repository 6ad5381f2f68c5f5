"""Estimation: from a subset's scores to full-benchmark estimates.

Every estimator (:mod:`.base` for the interface and the registry; :mod:`.weighted`, :mod:`.linear`,
:mod:`.baselines`, :mod:`.irt`, :mod:`.design`, :mod:`.auto`, :mod:`.suite` and :mod:`.bayes_subset` for the built-in
ones) follows ``fit(Y_source, selection)`` then ``predict(Y_target[:, selection])``. The sequential
evaluators (BayesAME and its peers) are selectable by name in :mod:`.sequential`; they, and BayesAME's
statistical model, live in :mod:`benchsel.formulations.bayes`. Names are imported lazily, so
``import benchsel.formulations.estimation`` stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_LAZY: dict[str, str] = {
    "Z975": "base",
    "Estimator": "base",
    "ESTIMATORS": "base",
    "Auto": "auto",
    "check_item_indices": "base",
    "CONFORMAL_FOLDS": "base",
    "check_alpha": "base",
    "conformal_quantile": "base",
    "UninformativeSourcesWarning": "base",
    "ModelAssisted": "design",
    "BALANCE_DRAWS": "design",
    "balanced_stratified_sample": "design",
    "difficulty_features": "design",
    "difficulty_score": "design",
    "difficulty_shares": "design",
    "stratified_sample": "design",
    "check_scores": "base",
    "estimator_names": "base",
    "get_estimator": "base",
    "list_estimators": "base",
    "register_estimator": "base",
    "single_thread": "base",
    "ClusterWeighted": "weighted",
    "MeanEstimator": "weighted",
    "SourceAssisted": "weighted",
    "cluster_shares": "weighted",
    "selection_distances": "benchsel.formulations.item_distances",
    "RIDGE_ALPHAS": "linear",
    "RepCoreRidge": "linear",
    "Ridge": "linear",
    "Stacked": "linear",
    "ridge_loo": "linear",
    "simplex_weights": "linear",
    "AIPW": "baselines",
    "BayesAIPW": "baselines",
    "BayesRSLearn": "baselines",
    "RSMean": "baselines",
    "bayesian_ridge_batch": "baselines",
    "IRTEstimator": "irt",
    "IRTModel": "irt",
    "fit_irt": "irt",
    "irt_objective": "irt",
    "SEQUENTIAL": "sequential",
    "Suite": "suite",
    "GroupTree": "groups",
    "infer_weighting": "groups",
    "leaf_weights": "groups",
    "allocate": "suite",
    "allocation_variance": "suite",
    "check_tasks": "suite",
    "item_tasks": "suite",
    "suite_allocation": "suite",
    "task_variances": "suite",
    "task_weights": "suite",
    "SequentialMethod": "sequential",
    "get_sequential": "sequential",
    "register_sequential": "sequential",
    "sequential_methods": "sequential",
    "sequential_names": "sequential",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:
    from ..item_distances import selection_distances
    from .auto import Auto
    from .base import (
        CONFORMAL_FOLDS,
        ESTIMATORS,
        Z975,
        Estimator,
        check_alpha,
        check_item_indices,
        check_scores,
        conformal_quantile,
        estimator_names,
        get_estimator,
        list_estimators,
        register_estimator,
        single_thread,
    )
    from .baselines import (
        AIPW,
        BayesAIPW,
        BayesRSLearn,
        RSMean,
        bayesian_ridge_batch,
    )
    from .design import (
        BALANCE_DRAWS,
        ModelAssisted,
        balanced_stratified_sample,
        difficulty_features,
        difficulty_score,
        difficulty_shares,
        stratified_sample,
    )
    from .groups import GroupTree, infer_weighting, leaf_weights
    from .irt import (
        IRTEstimator,
        IRTModel,
        fit_irt,
        irt_objective,
    )
    from .linear import (
        RIDGE_ALPHAS,
        RepCoreRidge,
        Ridge,
        Stacked,
        ridge_loo,
        simplex_weights,
    )
    from .sequential import (
        SEQUENTIAL,
        SequentialMethod,
        get_sequential,
        register_sequential,
        sequential_methods,
        sequential_names,
    )
    from .suite import (
        Suite,
        allocate,
        allocation_variance,
        check_tasks,
        item_tasks,
        suite_allocation,
        task_variances,
        task_weights,
    )
    from .weighted import (
        ClusterWeighted,
        MeanEstimator,
        SourceAssisted,
        cluster_shares,
    )


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
