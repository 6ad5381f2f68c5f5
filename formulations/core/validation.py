"""Pure input checks shared by formulations, solvers and heuristics.

Each check raises :class:`~benchsel.formulations.core.errors.InvalidInputError` whose message names
the argument, what was expected and what was received.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .errors import InvalidInputError

__all__ = [
    "MAX_MAGNITUDE",
    "MAX_TIME_LIMIT",
    "as_array",
    "as_index_array",
    "available_memory",
    "check_allocation",
    "check_choice",
    "check_float",
    "check_int",
    "check_magnitude",
    "check_rng",
    "check_run_settings",
    "check_seed",
    "check_selection",
    "check_time_limit",
    "check_unique_labels",
    "format_bytes",
]


#: Largest absolute value (and largest bound on a sum of them) a formulation accepts in its data:
#: far below float64's 1.8e308, so that sums, squares of differences and solver arithmetic stay finite.
MAX_MAGNITUDE = 1e150

#: Largest time limit in seconds (about 116 days) :func:`check_time_limit` accepts; ``None`` means no limit.
MAX_TIME_LIMIT = 1e7


def describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}" if np.isscalar(x) or x is None else type(x).__name__


def as_array(
    x: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    dtype: Any = float,
    finite: bool = True,
    nonnegative: bool = False,
    shape_doc: str | None = None,
) -> np.ndarray:
    """Convert ``x`` to an array and check it.

    Parameters
    ----------
    x : array_like
    name : str
        Argument name used in messages.
    ndim : int or sequence of int, optional
        Allowed numbers of dimensions.
    shape : sequence of (int or None), optional
        Required shape; None entries are free.
    dtype : dtype
        Target dtype (values that cannot be converted raise).
    finite : bool
        Reject NaN and infinity.
    nonnegative : bool
        Reject negative entries.
    shape_doc : str, optional
        Shape as documented, e.g. ``"(N, N)"``, for messages.
    """
    try:
        if hasattr(x, "to_numpy"):
            x = x.to_numpy()
        raw = x if isinstance(x, np.ndarray) else np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{name}: expected a numeric array, got {describe(x)} ({e})") from None
    if raw.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        raise InvalidInputError(f"{name}: expected real numbers, got a complex array of shape {raw.shape} "
                                f"(take .real explicitly if the imaginary part is meant to be dropped)")
    if raw.dtype.kind in "OUSV" and np.dtype(dtype).kind in "biuf":
        raw = _object_numeric(raw, name)
    try:
        arr = np.asarray(raw, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidInputError(f"{name}: expected a numeric array, got {describe(raw)} ({e})") from None
    want = shape_doc or (str(tuple(shape)) if shape is not None else None)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            exp = want or f"{' or '.join(str(a) for a in allowed)}-D"
            raise InvalidInputError(f"{name}: expected an array of shape {exp}, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            raise InvalidInputError(f"{name}: expected shape {want}, got shape {arr.shape}")
    if finite and np.issubdtype(arr.dtype, np.floating) and arr.size and not np.isfinite(arr).all():
        bad = ~np.isfinite(arr)
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(arr).any() else "infinite"
        raise InvalidInputError(
            f"{name}: expected finite values, got {int(bad.sum())} non-finite ({kind}) entries, first at index {first}"
        )
    if nonnegative and arr.size and (arr < 0).any():
        neg = arr < 0
        first = tuple(int(i) for i in np.argwhere(neg)[0])
        raise InvalidInputError(
            f"{name}: expected non-negative values, got {int(neg.sum())} negative entries "
            f"(smallest {arr.min():g}, first at index {first})"
        )
    return arr


def _object_numeric(raw: np.ndarray, name: str) -> np.ndarray:
    """An object / string array whose every entry is a real number (booleans and complex refused)."""
    if raw.dtype.kind in "USV":
        first = raw.flat[0] if raw.size else ""
        kind = "records" if raw.dtype.kind == "V" else "strings"
        raise InvalidInputError(f"{name}: expected a numeric array, got an array of {kind} of shape {raw.shape} "
                                f"(first {first!r})")
    for i, v in enumerate(raw.flat):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InvalidInputError(f"{name}: expected real numbers, got {describe(v)} at flat index {i}")
    return raw.astype(float)


def check_magnitude(arr: np.ndarray, name: str, *, scale: float = 1.0, limit: float = MAX_MAGNITUDE,
                    what: str = "") -> float:
    """Refuse an array whose largest absolute value, times ``scale``, exceeds ``limit``.

    ``scale`` is how many times the values add up (or multiply another
    quantity) where the formulation uses them, e.g. ``N * max(weights)`` for a
    sum of ``N`` weighted distances; ``what`` says where (for the message).
    Returns the largest absolute value.
    """
    if arr.size == 0:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        big = float(np.max(np.abs(arr)))
        bound = big * float(scale)
    if not (math.isfinite(bound) and bound <= limit):
        where = f" in {what}" if what else ""
        times = f" times {scale:.3g}" if scale != 1.0 else ""
        raise InvalidInputError(
            f"{name}: expected values whose magnitude{times} stays below {limit:.3g}{where}, got values up to "
            f"{big:.3g} (float64 would overflow or lose the result); rescale {name}"
        )
    return big


def format_bytes(n: float) -> str:
    """``1.5 GiB`` and the like."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def available_memory() -> int | None:
    """Bytes of memory this process could still allocate, or None when unknown.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux), capped by a cgroup memory
    limit and the address-space limit (``ulimit -v``) when set; elsewhere the
    physical memory size.
    """
    avail: int | None = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        avail = None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
            if text and text != "max":
                lim = int(text)
                if lim < (1 << 60):
                    avail = lim if avail is None else min(avail, lim)
        except (OSError, ValueError):
            continue
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            avail = soft if avail is None else min(avail, soft)
    except (ImportError, ValueError, OSError):
        pass
    if avail is None:
        try:
            import os

            avail = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (AttributeError, ValueError, OSError):
            return None
    return avail


def check_allocation(nbytes: float, name: str, what: str) -> None:
    """Refuse work whose arrays would need more memory than the machine has available.

    Parameters
    ----------
    nbytes : float
        Estimated bytes (a float: products of sizes may exceed int64).
    name : str
        The argument that sets the size (named in the message).
    what : str
        What would be allocated, e.g. ``"the (N, N) distance matrix for N = 10**6"``.
    """
    avail = available_memory()
    if avail is not None and nbytes > avail:
        raise InvalidInputError(
            f"{name}: {what} needs about {format_bytes(nbytes)} of memory, more than the "
            f"{format_bytes(avail)} available on this machine"
        )


def check_int(x: Any, name: str, *, low: int | None = None, high: int | None = None, low_doc: str | None = None,
              high_doc: str | None = None) -> int:
    """An integer in ``[low, high]`` (inclusive)."""
    if isinstance(x, (bool, np.bool_)):
        raise InvalidInputError(f"{name}: expected an integer, got {describe(x)}")
    if not isinstance(x, numbers.Integral):
        if isinstance(x, numbers.Real) and math.isfinite(float(x)) and float(x).is_integer():
            x = int(float(x))
        else:
            raise InvalidInputError(f"{name}: expected an integer, got {describe(x)}")
    x = int(x)
    lo = low_doc or str(low)
    hi = high_doc or str(high)
    if low is not None and high is not None and not low <= x <= high:
        raise InvalidInputError(f"{name}: expected an integer with {lo} <= {name} <= {hi}, got {x}")
    if low is not None and x < low:
        raise InvalidInputError(f"{name}: expected an integer >= {lo}, got {x}")
    if high is not None and x > high:
        raise InvalidInputError(f"{name}: expected an integer <= {hi}, got {x}")
    return x


def check_float(x: Any, name: str, *, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> float:
    """A finite real in the given (open or closed) interval."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise InvalidInputError(f"{name}: expected a real number, got {describe(x)}")
    x = float(x)
    if not np.isfinite(x):
        raise InvalidInputError(f"{name}: expected a finite number, got {x}")
    lo_ok = low is None or (x > low if low_open else x >= low)
    hi_ok = high is None or (x < high if high_open else x <= high)
    if not (lo_ok and hi_ok):
        left = "" if low is None else f"{low} {'<' if low_open else '<='} "
        right = "" if high is None else f" {'<' if high_open else '<='} {high}"
        raise InvalidInputError(f"{name}: expected {left}{name}{right}, got {x:g}")
    return x


def check_choice(x: Any, name: str, choices: Iterable[Any]) -> Any:
    """One of ``choices``."""
    choices = tuple(choices)
    if x not in choices:
        raise InvalidInputError(f"{name}: expected one of {', '.join(repr(c) for c in choices)}, got {x!r}")
    return x


def check_rng(seed: Any, name: str = "seed") -> np.random.Generator:
    """A ``numpy.random.Generator`` from an int, None, SeedSequence or Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidInputError(f"{name}: expected a non-negative int, None or numpy Generator, got {describe(seed)}")
    return np.random.default_rng(int(seed))


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed: a whole number ``0 <= seed < 2**63`` (an int or numpy integer; not a bool, float or string)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise InvalidInputError(f"{name}: expected a whole number >= 0 (an int), got {describe(seed)}")
    if not 0 <= int(seed) < 2**63:
        raise InvalidInputError(f"{name}: expected a whole number with 0 <= {name} < 2**63, got {int(seed)}")
    return int(seed)


def check_run_settings(seed: Any, time_limit: Any, *, seed_name: str = "seed",
                       time_name: str = "time_limit") -> tuple[int, float | None]:
    """The one check of a run's ``seed`` and ``time_limit`` (pure; ``compress``, ``estimate``, ``run`` and
    ``solve`` call it before reading data or solving): ``(seed, time_limit)`` or a named error."""
    return check_seed(seed, seed_name), check_time_limit(time_limit, time_name)


def check_time_limit(t: Any, name: str = "time_limit") -> float | None:
    """None (no limit) or a positive number of seconds, at most :data:`MAX_TIME_LIMIT`.

    A larger limit is refused rather than capped (a cap would change what the caller asked for
    without saying so): waits longer than about 9.2e9 s overflow the platform's timers
    (``threading`` raises OverflowError), and a limit of centuries means no limit, which is ``None``.
    """
    if t is None:
        return None
    x = check_float(t, name, low=0.0, low_open=True)
    if x > MAX_TIME_LIMIT:
        raise InvalidInputError(f"{name}: expected at most {MAX_TIME_LIMIT:.0e} seconds (about 116 days; None for no "
                                f"limit), got {x:g}")
    return x


def as_index_array(x: Any, n: int, name: str, *, what: str = "item indices", allow_empty: bool = True,
                   distinct: bool = True, range_what: str | None = None) -> np.ndarray:
    """Integer indices in ``[0, n)`` (or a boolean mask of length ``n``), shape (k,), int64, order kept.

    A boolean array is read as a mask only when its length is ``n``; any other
    boolean array, floats that are not whole numbers, strings, complex and
    nested input are refused by name.
    """
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name}: expected a 1-D array of {what}, got {describe(x)}") from None
    if arr.dtype == bool:
        if arr.ndim != 1 or arr.size != n:
            raise InvalidInputError(
                f"{name}: a boolean mask must have one entry per item, shape ({n},), got shape {arr.shape}; "
                f"or give {what}")
        arr = np.flatnonzero(arr)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array of {what}, got shape {arr.shape}")
    if arr.size == 0:
        if not allow_empty:
            raise InvalidInputError(f"{name}: expected at least one of the {what}, got none")
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "O" and all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                                     for v in arr):
        arr = arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.isfinite(arr).all() and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidInputError(f"{name}: expected integer {what} (or a boolean mask of length {n}), "
                                    f"got dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= n:
        raise InvalidInputError(f"{name}: expected {range_what or what} in [0, {n}), got values from {lo} to {hi}")
    arr = arr.astype(np.int64)
    if distinct:
        n_distinct = np.unique(arr).size
        if n_distinct != arr.size:
            raise InvalidInputError(f"{name}: expected distinct {what}, got {arr.size - n_distinct} repeated")
    return arr


def check_selection(selection: Any, n_items: int, name: str = "selection") -> np.ndarray:
    """Sorted, distinct int64 item indices in ``[0, n_items)``; shape (n_selected,)."""
    try:
        arr = np.asarray(selection)
    except Exception:  # pragma: no cover - exotic input
        raise InvalidInputError(f"{name}: expected a 1-D array of item indices, got {describe(selection)}") from None
    if arr.dtype == bool and arr.ndim == 1 and arr.size == n_items:
        arr = np.flatnonzero(arr)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array of item indices, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidInputError(f"{name}: expected integer item indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n_items:
        raise InvalidInputError(
            f"{name}: expected item indices in [0, {n_items}), got values from {arr.min()} to {arr.max()}"
        )
    out = np.unique(arr)
    if out.size != arr.size:
        raise InvalidInputError(f"{name}: expected distinct item indices, got {arr.size - out.size} repeated")
    return out


def check_unique_labels(labels: Any, name: str, axis: str) -> None:
    """Refuse repeated labels along one axis (``axis``: ``"model"``, ``"item"``, ...), naming the first repeat.

    ``labels`` is a 1-D sequence of hashable labels (a pandas Index, an array or a list).
    """
    seen: dict[Any, int] = {}
    values = np.asarray(labels, dtype=object).ravel().tolist() if not isinstance(labels, list) else labels
    for i, lab in enumerate(values):
        try:
            j = seen.setdefault(lab, i)
        except TypeError:  # an unhashable label: compared by its text
            j = seen.setdefault(repr(lab), i)
        if j != i:
            raise InvalidInputError(f"{name}: expected distinct {axis} labels, got {lab!r} twice (at positions {j} "
                                    f"and {i} of {len(values)} {axis}s)")
