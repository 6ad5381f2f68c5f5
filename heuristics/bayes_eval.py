"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.estimation.bayes_eval`."""
from __future__ import annotations

from benchsel.formulations.estimation.bayes_eval import (
    BayesianRidge,
    EvaluationResult,
    bayes_aipw_evaluate,
    bayesame_evaluate,
    rs_mean_evaluate,
    stopping_point,
)

__all__ = [
    "BayesianRidge",
    "EvaluationResult",
    "bayes_aipw_evaluate",
    "bayesame_evaluate",
    "rs_mean_evaluate",
    "stopping_point",
]
