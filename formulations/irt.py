"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.estimation.irt`."""
from __future__ import annotations

from benchsel.formulations.estimation.irt import (
    IRTEstimator,
    IRTModel,
    fit_irt,
    irt_objective,
)

__all__ = [
    "IRTEstimator",
    "IRTModel",
    "fit_irt",
    "irt_objective",
]
