"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.backends.cpsat`."""
from __future__ import annotations

from benchsel.solvers.backends.cpsat import (
    ScaledModel,
    cp_model_module,
    default_workers,
    scale_model,
    solve_model_cpsat,
)

__all__ = ["ScaledModel", "cp_model_module", "default_workers", "scale_model", "solve_model_cpsat"]
