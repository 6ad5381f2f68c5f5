"""One clock for every time budget: a wall-clock limit measured from a start, and progress lines."""
from __future__ import annotations

import sys
import time

__all__ = ["Clock", "progress"]


class Clock:
    """Wall-clock budget (``time_limit=None``: no limit), measured from construction.

    Parameters
    ----------
    time_limit : float, optional
        Seconds allowed from now.
    """

    def __init__(self, time_limit: float | None) -> None:
        self.t0 = time.perf_counter()
        self.limit = time_limit

    @property
    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.t0

    def expired(self) -> bool:
        """Whether the limit has passed (never without one)."""
        return self.limit is not None and self.elapsed >= self.limit

    @property
    def left(self) -> float | None:
        """Seconds left (None without a limit; never negative)."""
        return None if self.limit is None else max(self.limit - self.elapsed, 0.0)

    @property
    def deadline(self) -> float | None:
        """The limit as an absolute ``time.perf_counter()`` value (None without a limit)."""
        return None if self.limit is None else self.t0 + self.limit


def progress(verbose: bool, msg: str) -> None:
    """One progress line on stderr when ``verbose``."""
    if verbose:
        print(f"[benchsel] {msg}", file=sys.stderr, flush=True)
