"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.core.result`."""
from __future__ import annotations

from benchsel.formulations.core.result import (
    MethodOutput,
    ReadOnlyDict,
    Result,
    Termination,
    mip_gap,
)

__all__ = ["MethodOutput", "ReadOnlyDict", "Result", "Termination", "mip_gap"]
