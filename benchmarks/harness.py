"""The benchmark harness: a grid of methods x instances x seeds, run fairly.

* **Isolation and watchdog.** Every run is its own process, given the
  instance as ``(class, get_params())``; it calls :func:`benchsel.solvers.solve` with
  the run's time limit and sends one JSON row back. Locally the process is
  forked from a fork server that has the solver modules imported (cheap to
  start); on a Dask worker it is a fresh ``python`` subprocess. The parent
  waits ``time_limit + grace`` seconds of wall clock (process start included)
  and then kills the run's process group: a solver that overruns its limit
  (HiGHS has been seen to) yields a row with termination ``"killed"`` and no
  solution, and the grid goes on.
* **Same budget.** Every method of a grid gets the same ``time_limit``; exact
  backends that take a ``threads`` option get ``threads`` (default 1) and the
  BLAS/OpenMP thread count of the worker is set to match, so ``--jobs`` runs
  share the cores evenly.
* **Scheduling.** A local pool of ``jobs`` concurrent runs by default; with a
  Dask scheduler address the same runs are submitted to that cluster
  (``dask.distributed``), each still in its own process on the worker.
* **Results store.** ``runs.jsonl`` (append-only, one JSON row per finished
  run; the latest row of a run wins) and ``runs.csv`` (re-written from it with
  the reference gaps). Several processes may run grids into one folder at
  once: each run is claimed before it starts and executed once in total (see
  :mod:`benchsel.benchmarks.store`); runs another process holds are waited
  for at the end. A run is identified by instance, instance fingerprint,
  method (with options), seed and time limit; finished runs are skipped when
  the grid is run again, except runs whose worker process died or was lost
  (``retry`` true), which are run again. A method that raised is a result
  (termination ``"error"``, message in ``error``), as is a run the watchdog
  killed.
* **Gaps.** ``gap`` is measured against the instance's *reference*: the best
  proven optimum among exact runs (termination ``"optimal"``) or, when no
  exact run proved optimality, the best proven bound. It is sign-aware
  (``(objective - ref) / max(|objective|, 1e-9)`` for minimisation, the
  mirror for maximisation) and so non-negative. ``own_gap`` keeps each exact
  method's own MIP gap.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from benchsel.formulations.core.errors import InvalidInputError

from .gaps import GAP_TOL, reference_gaps
from .isolation import (
    base_row,
    default_grace,
    execute_task,
    failed_row,
    fork_context,
    kill_all,
    package_versions,
    run_forked,
    run_isolated,
    run_on_dask_worker,
)
from .store import CORE_COLUMNS, ResultStore, ordered_columns, write_rows_csv
from .tasks import MethodSpec, Task, import_plugin, parse_method, plan, row_key, run_key

__all__ = [
    "CORE_COLUMNS",
    "GAP_TOL",
    "MethodSpec",
    "ResultStore",
    "RunSummary",
    "Task",
    "base_row",
    "connect_dask",
    "default_grace",
    "execute",
    "execute_task",
    "failed_row",
    "import_plugin",
    "kill_all",
    "ordered_columns",
    "package_versions",
    "parse_method",
    "plan",
    "reference_gaps",
    "row_key",
    "run_forked",
    "run_isolated",
    "run_key",
    "write_rows_csv",
]


@dataclass
class RunSummary:
    """What :func:`execute` did.

    ``skipped``: runs already finished when it started; ``elsewhere``: runs
    another process (writing into the same folder) executed meanwhile;
    ``ran``: runs this call executed.
    """

    total: int
    skipped: int
    ran: int
    killed: int
    errors: int
    seconds: float
    interrupted: bool = False
    elsewhere: int = 0


#: Seconds between two looks at runs another process holds.
WAIT_POLL_SECONDS = 1.0


def connect_dask(address: str) -> Any:
    """A ``distributed.Client`` connected to ``address`` (one-line error when that fails)."""
    try:
        from distributed import Client
    except ImportError:
        raise InvalidInputError(
            "scheduler: running on a cluster needs dask.distributed; pip install 'dask[distributed]'"
        ) from None
    if address.startswith("ray://"):
        raise InvalidInputError("scheduler: Ray is not supported by this build; give a Dask scheduler address "
                                "(e.g. tcp://host:8786)")
    try:
        return Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise InvalidInputError(f"scheduler: cannot connect to the Dask scheduler at {address!r} ({e})") from None


def execute(tasks: Sequence[Task], store: ResultStore, *, jobs: int = 1, scheduler: Any = None,
            grace: float | None = None, progress: bool = True, on_row: Callable[[dict], None] | None = None,
            isolation: str = "fork") -> RunSummary:
    """Run the tasks not finished in ``store``; append each row as it finishes.

    Parameters
    ----------
    tasks : sequence of Task
    store : ResultStore
    jobs : int
        Concurrent runs of the local pool (ignored with a scheduler: the
        cluster's worker threads set the concurrency).
    scheduler : str or distributed.Client, optional
        Dask scheduler address (``tcp://host:8786``) or a connected client;
        None runs locally.
    grace : float, optional
        Watchdog grace (see :func:`run_isolated`).
    progress : bool
        Show a tqdm progress bar on stderr.
    on_row : callable, optional
        Called with each finished row.
    isolation : {"fork", "subprocess"}
        How local runs get their own process: forked from a pre-warmed fork
        server (fast; falls back to a subprocess where unavailable) or a fresh
        ``python`` subprocess (as on a Dask worker).
    """
    from tqdm import tqdm

    from benchsel.formulations.core.validation import check_int

    jobs = check_int(jobs, "jobs", low=1)
    if grace is not None and (not isinstance(grace, (int, float)) or grace < 0):
        raise InvalidInputError(f"grace: expected a non-negative number of seconds, got {grace!r}")
    done = store.done_keys()
    store._refresh_seen(reset=True)
    todo = [t for t in tasks if t.key not in done]
    # deduplicate (the same run listed twice in a grid)
    seen: set[str] = set()
    unique: list[Task] = []
    for t in todo:
        if t.key not in seen:
            seen.add(t.key)
            unique.append(t)
    todo = unique
    summary = RunSummary(total=len(tasks), skipped=len(tasks) - len(todo), ran=0, killed=0, errors=0, seconds=0.0)
    if not todo:
        store.write_csv()
        return summary
    t0 = time.perf_counter()
    bar = tqdm(total=len(todo), desc="runs", unit="run", file=sys.stderr, disable=not progress, dynamic_ncols=True,
               mininterval=0.5 if sys.stderr.isatty() else 10.0)
    last_csv = 0.0

    def finish(row: dict[str, Any]) -> None:
        nonlocal last_csv
        summary.ran += 1
        summary.killed += row.get("termination") == "killed"
        summary.errors += row.get("termination") == "error"
        bar.set_postfix_str(f"{row.get('instance')} {row.get('method')}", refresh=False)
        bar.update(1)
        if on_row is not None:
            on_row(row)
        if time.perf_counter() - last_csv > 2.0:  # keep runs.csv current during long grids
            store.write_csv()
            last_csv = time.perf_counter()

    stop = threading.Event()

    def claimed_run(runner: Callable[..., dict[str, Any]], t: Task, label: str) -> tuple[str, dict[str, Any] | None]:
        """Claim, run, store, release (in a pool thread): the row is appended before the claim is dropped."""
        if stop.is_set():
            return "stopped", None
        state = store.claim(t.key, label=t.label)
        if state != "claimed":
            return state, None
        try:
            row = runner(t, grace)
            row["executor"] = label
            if stop.is_set():  # interrupted: the killed run is not stored (it is run again on resume)
                return "stopped", None
            store.append(row)
            return "ran", row
        finally:
            store.release(t.key)

    def local_round(batch: list[Task]) -> list[Task]:
        if isolation not in ("fork", "subprocess"):
            raise InvalidInputError(f"isolation: expected 'fork' or 'subprocess', got {isolation!r}")
        runner: Callable[..., dict[str, Any]] = run_isolated
        if isolation == "fork" and fork_context(batch[0].threads) is not None:
            runner = run_forked
        label = "local fork" if runner is run_forked else "local subprocess"
        held: list[Task] = []
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futs = {pool.submit(claimed_run, runner, t, label): t for t in batch}
            try:
                for fut in as_completed(futs):
                    state, row = fut.result()
                    if state == "ran" and row is not None:
                        finish(row)
                    elif state == "held":
                        held.append(futs[fut])
                    elif state == "done":
                        done_elsewhere(futs[fut])
            except BaseException:
                stop.set()
                for f_ in futs:
                    f_.cancel()
                kill_all()
                raise
        return held

    def dask_round(batch: list[Task], client: Any) -> list[Task]:
        from distributed import as_completed as dask_completed

        held: list[Task] = []
        mine: list[Task] = []
        for t in batch:
            state = store.claim(t.key, label=t.label)
            if state == "claimed":
                mine.append(t)
            elif state == "held":
                held.append(t)
            else:
                done_elsewhere(t)
        try:
            futs = {client.submit(run_on_dask_worker, t, grace, pure=False): t for t in mine}
            for fut in dask_completed(list(futs), loop=client.loop):
                t = futs[fut]
                try:
                    row = fut.result()
                except Exception as e:  # a lost worker: the run is retried next time
                    row = failed_row(t, "error", f"dask: {type(e).__name__}: {e}", 0.0, retry=True)
                store.append(row)
                store.release(t.key)
                finish(row)
        finally:
            for t in mine:
                store.release(t.key)
        return held

    def done_elsewhere(t: Task) -> None:
        summary.elsewhere += 1
        bar.update(1)

    try:
        client = None
        own = False
        if scheduler is not None:
            own = isinstance(scheduler, str)
            client = connect_dask(scheduler) if own else scheduler
        try:
            pending = todo
            polls = 0
            while pending:
                pending = dask_round(pending, client) if client is not None else local_round(pending)
                if pending:
                    polls += 1
                    if polls == 2:  # still held after one look: say who holds them
                        who = next((h for h in map(store.holder, (t.key for t in pending)) if h), None)
                        by = f" (pid {who.get('pid')} on {who.get('host')})" if who else ""
                        bar.write(f"benchsel: waiting for {len(pending)} run(s) held by another process{by} "
                                  f"writing into {store.dir}", file=sys.stderr)
                    time.sleep(WAIT_POLL_SECONDS)
        finally:
            if own and client is not None:
                client.close()
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        bar.close()
        store.write_csv()
        summary.seconds = time.perf_counter() - t0
    return summary
