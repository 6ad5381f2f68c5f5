"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.backends.branch_and_cut`."""
from __future__ import annotations

from benchsel.solvers.backends.branch_and_cut import (
    BnCOptions,
    BranchAndCut,
)

__all__ = ["BnCOptions", "BranchAndCut"]
