"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.backends.highs`."""
from __future__ import annotations

from benchsel.solvers.backends.highs import (
    solve_model_highs,
)

__all__ = ["solve_model_highs"]
