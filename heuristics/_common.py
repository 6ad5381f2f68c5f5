"""Helpers shared by heuristics: their output (the clock and progress lines are in formulations.core.clock)."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.clock import Clock, progress
from benchsel.formulations.core.result import MethodOutput, Termination

__all__ = ["Clock", "output", "progress"]  # Clock and progress re-exported for the heuristics


def output(selection: np.ndarray | None, clock: Clock, *, stopped: str | Termination = Termination.CONVERGED,
           prep_seconds: float = 0.0, **extra: Any) -> MethodOutput:
    """A heuristic's :class:`MethodOutput` (no bound)."""
    return MethodOutput(
        selection=None if selection is None else np.asarray(selection, dtype=np.int64),
        termination=Termination(stopped),
        bound=None,
        build_seconds=prep_seconds,
        solve_seconds=clock.elapsed - prep_seconds,
        extra=dict(extra),
    )
