"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.core.mps` and
`benchsel.solvers.backends.mps`."""
from __future__ import annotations

from benchsel.formulations.core.mps import (
    MAP_FORMAT,
    read_name_map,
    selection_from_values,
    write_mps,
)
from benchsel.solvers.backends.mps import (
    solve_mps,
)

__all__ = ["MAP_FORMAT", "read_name_map", "selection_from_values", "solve_mps", "write_mps"]
