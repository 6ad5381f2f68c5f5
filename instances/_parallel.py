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


def _chunks(n: int, workers: int) -> list[range]:
    """Consecutive index ranges, about 4 per worker: fewer, larger tasks (less inter-process traffic)."""
    size = max(1, -(-n // (4 * workers)))
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


def _apply(fn: Callable[[Any], Any], chunk: list[Any]) -> list[Any]:
    """``[fn(x) for x in chunk]`` (one worker task)."""
    return [fn(x) for x in chunk]


def _collect(rng: range, results: list[Any], out: list[Any], bar: Any, weights: list[int],
             on_result: Callable[[int, Any], None] | None) -> None:
    for i, r in zip(rng, results):
        out[i] = r
        bar.update(weights[i])
        if on_result is not None:
            on_result(i, r)


def _in_processes(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int, out: list[Any], bar: Any,
                  weights: list[int], on_result: Callable[[int, Any], None] | None) -> None:
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        futures = {pool.submit(_apply, fn, [items[i] for i in rng]): rng for rng in _chunks(len(items), jobs)}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for f in done:
                    _collect(futures[f], f.result(), out, bar, weights, on_result)  # a worker's error as it is
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
        workers = max(1, sum(client.nthreads().values()))
        ranges = _chunks(len(items), workers)
        futures = [client.submit(_apply, fn, [items[i] for i in rng], pure=False) for rng in ranges]
        index = {f.key: rng for f, rng in zip(futures, ranges)}
        try:
            for f in as_completed(futures, loop=client.loop):
                _collect(index[f.key], f.result(), out, bar, weights, on_result)
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()
