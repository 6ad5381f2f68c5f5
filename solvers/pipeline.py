"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.compression`."""
from __future__ import annotations

from benchsel.solvers.compression import (
    DEFAULT_ESTIMATOR,
    Compressed,
    Selection,
    SelectionResult,
    anchor_kmedoids,
    compress,
    get_selection,
    irt_kmedoids,
    register_selection,
    select_items,
    selection_names,
)

__all__ = [
    "DEFAULT_ESTIMATOR",
    "Compressed",
    "Selection",
    "SelectionResult",
    "anchor_kmedoids",
    "compress",
    "get_selection",
    "irt_kmedoids",
    "register_selection",
    "select_items",
    "selection_names",
]
