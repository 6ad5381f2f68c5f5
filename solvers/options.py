"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.core.options`."""
from __future__ import annotations

from benchsel.formulations.core.options import (
    Option,
    check_options,
    option_names,
)

__all__ = ["Option", "check_options", "option_names"]
