"""BayesAME (SPEC F5): the statistical model, the batch problem, its searches and the sequential evaluators.

One home for every BayesAME module of the formulations layer:

* :mod:`.model` -- buckets of items by their reference score vectors, the Gaussian prior over the
  buckets, the marginal-likelihood fit of its hyper-parameters (:class:`BayesModel`);
* :mod:`.posterior` -- the posterior after a coreset, in sequential form (:class:`SequentialPosterior`,
  Cholesky updates) and as the batch problem's data (:class:`BatchData`);
* :mod:`.problem` -- the batch information-gain formulation (:class:`BatchInformationGain`);
* :mod:`.search` -- searches of its bucket space (exhaustive, greedy, SMC), used by the registered
  methods (:mod:`benchsel.heuristics.bayes`) and by the sequential evaluators; :mod:`.swap` (a batch
  under single swaps and the local search) and :mod:`.starts` (the SMC search's warm starts);
* :mod:`.evaluate` -- the single-target sequential evaluator (:func:`bayesame_evaluate`, Algorithm 1)
  and the baselines with its stopping rule (RS-Mean, Bayes-AIPW);
* :mod:`.lmc` and :mod:`.multi` -- several targets at once under a coregionalised prior
  (:func:`bayesame_multi_evaluate`);
* :mod:`.peers` -- the paper's other sequential peers (Seq-APW, Bayes-RS-Learn, AIPW, Bayes-CVO).

The estimation layer builds on this package, never the other way round: the estimator on a fixed
subset is :class:`benchsel.formulations.estimation.bayes_subset.BayesAMEEstimate` and the evaluators are
selectable by name through :mod:`benchsel.formulations.estimation.sequential`. Names are imported
lazily, so ``import benchsel.formulations.bayes`` stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_LAZY: dict[str, str] = {
    "HYPER_LOWER": "model",
    "HYPER_UPPER": "model",
    "KERNELS": "model",
    "Z975": "model",
    "BayesModel": "model",
    "Buckets": "model",
    "PosteriorSummary": "model",
    "bucketize": "model",
    "item_gains": "model",
    "posterior_var_R": "model",
    "unified_estimate": "model",
    "BatchData": "posterior",
    "SequentialPosterior": "posterior",
    "BatchInformationGain": "problem",
    "BayesianRidge": "evaluate",
    "EvaluationResult": "evaluate",
    "bayes_aipw_evaluate": "evaluate",
    "bayesame_evaluate": "evaluate",
    "rs_mean_evaluate": "evaluate",
    "stopping_point": "evaluate",
    "LMCObjective": "lmc",
    "LMCParams": "lmc",
    "default_kernels": "lmc",
    "lmc_nll": "lmc",
    "STRATEGIES": "multi",
    "MultiTargetResult": "multi",
    "bayesame_multi_evaluate": "multi",
    "AIPW_ALPHA": "peers",
    "aipw_evaluate": "peers",
    "apw_variance": "peers",
    "bayes_cvo_evaluate": "peers",
    "bayes_rs_learn_evaluate": "peers",
    "cvo_estimate": "peers",
    "seq_apw_evaluate": "peers",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:
    from .evaluate import (
        BayesianRidge,
        EvaluationResult,
        bayes_aipw_evaluate,
        bayesame_evaluate,
        rs_mean_evaluate,
        stopping_point,
    )
    from .lmc import LMCObjective, LMCParams, default_kernels, lmc_nll
    from .model import (
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
    from .multi import STRATEGIES, MultiTargetResult, bayesame_multi_evaluate
    from .peers import (
        AIPW_ALPHA,
        aipw_evaluate,
        apw_variance,
        bayes_cvo_evaluate,
        bayes_rs_learn_evaluate,
        cvo_estimate,
        seq_apw_evaluate,
    )
    from .posterior import BatchData, SequentialPosterior
    from .problem import BatchInformationGain


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
