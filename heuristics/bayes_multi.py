"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.estimation.bayes_multi` and
`benchsel.formulations.estimation.bayes_lmc`."""
from __future__ import annotations

from benchsel.formulations.estimation.bayes_multi import (
    LMCObjective,
    LMCParams,
    MultiTargetResult,
    bayesame_multi_evaluate,
    default_kernels,
    lmc_nll,
)

__all__ = [
    "LMCObjective",
    "LMCParams",
    "MultiTargetResult",
    "bayesame_multi_evaluate",
    "default_kernels",
    "lmc_nll",
]
