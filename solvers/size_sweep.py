"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.backends.size_sweep`."""
from __future__ import annotations

from benchsel.solvers.backends.size_sweep import (
    AUTO_REPRESENTATION_MAX_METRICS,
    CountFeasibility,
    MetricClasses,
    auto_choice,
    instance_class,
    sweep_min_size,
    sweep_monotone,
)

__all__ = [
    "AUTO_REPRESENTATION_MAX_METRICS",
    "CountFeasibility",
    "MetricClasses",
    "auto_choice",
    "instance_class",
    "sweep_min_size",
    "sweep_monotone",
]
