"""BayesAME's batch problem and its searches.

:mod:`.problem` holds :class:`BatchInformationGain`; :mod:`.search` the
searches of its bucket space (exhaustive, greedy, SMC) used by the registered
methods (:mod:`benchsel.heuristics.bayes`) and by the sequential evaluators.
The statistical model (buckets, prior, posterior) is in
:mod:`benchsel.formulations.estimation.bayes_model` and
:mod:`benchsel.formulations.estimation.bayes_posterior`; its names are
re-exported here, where they were before.
"""
from __future__ import annotations

from ..estimation.bayes_model import (
    HYPER_LOWER,
    HYPER_UPPER,
    KERNELS,
    Z975,
    BayesModel,
    Buckets,
    PosteriorSummary,
    bucketize,
    item_gains,
    posterior_var_R,
    unified_estimate,
)
from ..estimation.bayes_posterior import BatchData, SequentialPosterior
from .problem import BatchInformationGain

__all__ = [
    "HYPER_LOWER",
    "HYPER_UPPER",
    "KERNELS",
    "Z975",
    "BatchData",
    "BatchInformationGain",
    "BayesModel",
    "Buckets",
    "PosteriorSummary",
    "SequentialPosterior",
    "bucketize",
    "item_gains",
    "posterior_var_R",
    "unified_estimate",
]
