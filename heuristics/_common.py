"""Helpers shared by heuristics: time budget, progress, output."""
from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from benchsel.solvers.result import MethodOutput, Termination

__all__ = ["Clock", "output", "progress"]


class Clock:
    """Wall-clock budget of a heuristic (``time_limit=None``: no limit)."""

    def __init__(self, time_limit: float | None) -> None:
        self.t0 = time.perf_counter()
        self.limit = time_limit

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def expired(self) -> bool:
        return self.limit is not None and self.elapsed >= self.limit

    @property
    def left(self) -> float | None:
        return None if self.limit is None else max(self.limit - self.elapsed, 0.0)


def progress(verbose: bool, msg: str) -> None:
    """One progress line on stderr when ``verbose``."""
    if verbose:
        print(f"[benchsel] {msg}", file=sys.stderr, flush=True)


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
