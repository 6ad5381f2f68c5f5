"""Estimation: from a subset's scores to full-benchmark estimates.

Every estimator (:mod:`.base` for the interface and the registry; :mod:`.weighted`, :mod:`.linear`,
:mod:`.baselines`, :mod:`.irt` for the built-in ones) follows ``fit(Y_source, selection)`` then
``predict(Y_target[:, selection])``; BayesAME's statistical model (:mod:`.bayes_model`,
:mod:`.bayes_posterior`, :mod:`.bayes_lmc`) and its sequential evaluators (:mod:`.bayes_eval`,
:mod:`.bayes_multi`; its peers in :mod:`.bayes_peers`, all by name in :mod:`.sequential`) live here
too. Names are imported lazily, so ``import benchsel.formulations.estimation`` stays light.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY: dict[str, str] = {
    "Z975": "base",
    "Estimator": "base",
    "Auto": "auto",
    "check_item_indices": "base",
    "CONFORMAL_FOLDS": "base",
    "check_alpha": "base",
    "conformal_quantile": "base",
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
    "selection_distances": "weighted",
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
    "HYPER_LOWER": "bayes_model",
    "HYPER_UPPER": "bayes_model",
    "KERNELS": "bayes_model",
    "BayesModel": "bayes_model",
    "Buckets": "bayes_model",
    "PosteriorSummary": "bayes_model",
    "bucketize": "bayes_model",
    "item_gains": "bayes_model",
    "posterior_var_R": "bayes_model",
    "unified_estimate": "bayes_model",
    "BatchData": "bayes_posterior",
    "SequentialPosterior": "bayes_posterior",
    "BayesianRidge": "bayes_eval",
    "EvaluationResult": "bayes_eval",
    "bayes_aipw_evaluate": "bayes_eval",
    "bayesame_evaluate": "bayes_eval",
    "rs_mean_evaluate": "bayes_eval",
    "stopping_point": "bayes_eval",
    "LMCObjective": "bayes_lmc",
    "LMCParams": "bayes_lmc",
    "default_kernels": "bayes_lmc",
    "lmc_nll": "bayes_lmc",
    "MultiTargetResult": "bayes_multi",
    "bayesame_multi_evaluate": "bayes_multi",
    "STRATEGIES": "bayes_multi",
    "AIPW_ALPHA": "bayes_peers",
    "aipw_evaluate": "bayes_peers",
    "apw_variance": "bayes_peers",
    "bayes_cvo_evaluate": "bayes_peers",
    "bayes_rs_learn_evaluate": "bayes_peers",
    "cvo_estimate": "bayes_peers",
    "seq_apw_evaluate": "bayes_peers",
    "SequentialMethod": "sequential",
    "get_sequential": "sequential",
    "register_sequential": "sequential",
    "sequential_methods": "sequential",
    "sequential_names": "sequential",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:
    from .auto import Auto
    from .base import (
        CONFORMAL_FOLDS,
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
    from .bayes_eval import (
        BayesianRidge,
        EvaluationResult,
        bayes_aipw_evaluate,
        bayesame_evaluate,
        rs_mean_evaluate,
        stopping_point,
    )
    from .bayes_lmc import (
        LMCObjective,
        LMCParams,
        default_kernels,
        lmc_nll,
    )
    from .bayes_model import (
        HYPER_LOWER,
        HYPER_UPPER,
        KERNELS,
        BayesModel,
        Buckets,
        PosteriorSummary,
        bucketize,
        item_gains,
        posterior_var_R,
        unified_estimate,
    )
    from .bayes_multi import (
        STRATEGIES,
        MultiTargetResult,
        bayesame_multi_evaluate,
    )
    from .bayes_peers import (
        AIPW_ALPHA,
        aipw_evaluate,
        apw_variance,
        bayes_cvo_evaluate,
        bayes_rs_learn_evaluate,
        cvo_estimate,
        seq_apw_evaluate,
    )
    from .bayes_posterior import (
        BatchData,
        SequentialPosterior,
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
        SequentialMethod,
        get_sequential,
        register_sequential,
        sequential_methods,
        sequential_names,
    )
    from .weighted import (
        ClusterWeighted,
        MeanEstimator,
        SourceAssisted,
        cluster_shares,
        selection_distances,
    )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
