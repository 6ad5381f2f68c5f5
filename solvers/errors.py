"""Deprecated path, kept for one release: the names moved to `benchsel.formulations.core.errors`."""
from __future__ import annotations

from benchsel.formulations.core.errors import (
    BenchselError,
    InvalidInputError,
    MethodNotApplicableError,
    NotLinearError,
    NumericalError,
    SolverNotInstalledError,
    UnknownMethodError,
)

__all__ = [
    "BenchselError",
    "InvalidInputError",
    "MethodNotApplicableError",
    "NotLinearError",
    "NumericalError",
    "SolverNotInstalledError",
    "UnknownMethodError",
]
