"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.core.model`."""
from __future__ import annotations

from benchsel.formulations.core.model import (
    Block,
    LazyRows,
    LinearModel,
    ModelBuilder,
    RowBlock,
)

__all__ = ["Block", "LazyRows", "LinearModel", "ModelBuilder", "RowBlock"]
