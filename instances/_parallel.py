"""Readers that scale: one call per model folder, in this process, in ``jobs`` processes or on a Dask cluster.

:func:`map_models` runs ``fn(item)`` for every item (one model's files) and
returns the results in the items' order, whichever way it ran, so the table
built from them is the same. A progress bar (tqdm, on stderr) counts the
bytes read. An error in one call (a named
:class:`~benchsel.formulations.core.errors.InvalidInputError`) is raised as
it is, and the calls not started yet are cancelled.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_int

__all__ = ["map_models"]

T = TypeVar("T")
R = TypeVar("R")


def map_models(fn: Callable[[T], R], items: Sequence[T], *, jobs: int = 1, scheduler: str | None = None,
               progress: bool = False, sizes: Sequence[int] | None = None, desc: str = "reading",
               on_result: Callable[[int, R], None] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, in order, run locally, in ``jobs`` processes, or on a Dask scheduler.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled to the worker processes).
    items : sequence
        One per model.
    jobs : int
        Worker processes (1: in this process).
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``): the calls run on that
        cluster (``dask[distributed]`` must be installed); ``jobs`` is ignored.
    progress : bool
        A tqdm progress bar on stderr, in bytes when ``sizes`` are given.
    sizes : sequence of int, optional
        Bytes each item reads (for the bar).
    on_result : callable, optional
        ``on_result(i, result)`` as each result arrives (e.g. to check it
        early and raise, which cancels the rest).
    """
    from tqdm.auto import tqdm

    jobs = check_int(jobs, "jobs", low=1)
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler):
        raise InvalidInputError(f"scheduler: expected a Dask scheduler address such as 'tcp://host:8786', got "
                                f"{scheduler!r}")
    weights = list(sizes) if sizes is not None else [1] * len(items)
    bar = tqdm(total=sum(weights), desc=desc, file=sys.stderr, disable=not progress, unit="B" if sizes else "it",
               unit_scale=bool(sizes), dynamic_ncols=True, mininterval=0.5)
    out: list[Any] = [None] * len(items)
    try:
        if scheduler is not None:
            _on_dask(fn, items, scheduler, out, bar, weights, on_result)
        elif jobs == 1 or len(items) <= 1:
            for i, x in enumerate(items):
                out[i] = fn(x)
                bar.update(weights[i])
                if on_result is not None:
                    on_result(i, out[i])
        else:
            _in_processes(fn, items, jobs, out, bar, weights, on_result)
    finally:
        bar.close()
    return out


def _in_processes(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int, out: list[Any], bar: Any,
                  weights: list[int], on_result: Callable[[int, Any], None] | None) -> None:
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for f in done:
                    i = futures[f]
                    out[i] = f.result()  # raises the worker's error as it is
                    bar.update(weights[i])
                    if on_result is not None:
                        on_result(i, out[i])
        except BaseException:
            for f in pending:
                f.cancel()
            raise


def _on_dask(fn: Callable[[Any], Any], items: Sequence[Any], address: str, out: list[Any], bar: Any,
             weights: list[int], on_result: Callable[[int, Any], None] | None) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InvalidInputError("scheduler: reading on a Dask cluster needs dask[distributed] (pip install "
                                "'benchsel[dask]')") from None
    try:
        client = Client(address, timeout=30, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise InvalidInputError(f"scheduler: cannot connect to the Dask scheduler {address!r}: {e}") from None
    try:
        futures = client.map(fn, list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for f in as_completed(futures, loop=client.loop):
                i = index[f.key]
                out[i] = f.result()
                bar.update(weights[i])
                if on_result is not None:
                    on_result(i, out[i])
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()
