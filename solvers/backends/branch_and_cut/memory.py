"""Resident memory of this process (Linux ``/proc``) and the return of freed memory to the system."""
from __future__ import annotations

import os
import sys
from typing import Any

# ------------------------------------------------------------------ helpers
#: Share of the lazy rows' memory budget at which the main thread retires the other search threads.
RETIRE_SHARE = 0.95
_LIBC_TRIM: Any = None


def _peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far (None where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else 1024 * peak  # bytes on macOS, kB on Linux


def _rss_bytes() -> int | None:
    """This process's resident memory now (Linux ``/proc/self/statm``; None where it is missing)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _release_freed_memory() -> None:
    """Hand the heap's freed pages back to the OS (glibc ``malloc_trim``; a no-op where it is missing).

    Deleting LP rows frees HiGHS' old matrix copies, but glibc keeps the
    pages; over hours of row churn the peak RSS creeps up by the fragments.
    """
    global _LIBC_TRIM
    if _LIBC_TRIM is None:
        _LIBC_TRIM = False
        try:
            import ctypes
            import ctypes.util

            name = ctypes.util.find_library("c")
            trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
            if trim is not None:
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
                _LIBC_TRIM = trim
        except OSError:  # pragma: no cover - no C library to load
            pass
    if _LIBC_TRIM:
        _LIBC_TRIM(0)
