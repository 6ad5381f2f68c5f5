"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.backends.scip`."""
from __future__ import annotations

from benchsel.solvers.backends.scip import (
    scip_available,
    solve_model_scip,
)

__all__ = ["scip_available", "solve_model_scip"]
