"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.core.validation`."""
from __future__ import annotations

from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    as_array,
    as_index_array,
    available_memory,
    check_allocation,
    check_choice,
    check_float,
    check_int,
    check_magnitude,
    check_rng,
    check_selection,
    check_time_limit,
    format_bytes,
)

__all__ = [
    "MAX_MAGNITUDE",
    "as_array",
    "as_index_array",
    "available_memory",
    "check_allocation",
    "check_choice",
    "check_float",
    "check_int",
    "check_magnitude",
    "check_rng",
    "check_selection",
    "check_time_limit",
    "format_bytes",
]
