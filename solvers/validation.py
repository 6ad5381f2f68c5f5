"""Pure input checks shared by formulations, solvers and heuristics.

Each check raises :class:`~benchsel.solvers.errors.InvalidInputError` whose message names
the argument, what was expected and what was received.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Sequence

import numpy as np

from .errors import InvalidInputError

__all__ = [
    "as_array",
    "check_int",
    "check_float",
    "check_choice",
    "check_rng",
    "check_selection",
    "check_time_limit",
]


def _describe(x: Any) -> str:
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
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{name}: expected a numeric array, got {_describe(x)} ({e})") from None
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


def check_int(x: Any, name: str, *, low: int | None = None, high: int | None = None, low_doc: str | None = None,
              high_doc: str | None = None) -> int:
    """An integer in ``[low, high]`` (inclusive)."""
    if isinstance(x, (bool, np.bool_)):
        raise InvalidInputError(f"{name}: expected an integer, got {_describe(x)}")
    if not isinstance(x, numbers.Integral):
        if isinstance(x, numbers.Real) and math.isfinite(float(x)) and float(x).is_integer():
            x = int(x)
        else:
            raise InvalidInputError(f"{name}: expected an integer, got {_describe(x)}")
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
        raise InvalidInputError(f"{name}: expected a real number, got {_describe(x)}")
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
        raise InvalidInputError(f"{name}: expected a non-negative int, None or numpy Generator, got {_describe(seed)}")
    return np.random.default_rng(int(seed))


def check_time_limit(t: Any, name: str = "time_limit") -> float | None:
    """None (no limit) or a positive number of seconds."""
    if t is None:
        return None
    return check_float(t, name, low=0.0, low_open=True)


def check_selection(selection: Any, n_items: int, name: str = "selection") -> np.ndarray:
    """Sorted, distinct int64 item indices in ``[0, n_items)``; shape (n_selected,)."""
    try:
        arr = np.asarray(selection)
    except Exception:  # pragma: no cover - exotic input
        raise InvalidInputError(f"{name}: expected a 1-D array of item indices, got {_describe(selection)}") from None
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
