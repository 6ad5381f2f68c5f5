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

from tqdm import tqdm

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_float, check_int

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
    jobs = check_int(jobs, "jobs", low=1)
    if grace is not None:
        grace = check_float(grace, "grace", low=0.0)  # NaN and infinity refused here, not in a child process
    if isolation not in ("fork", "subprocess"):
        raise InvalidInputError(f"isolation: expected 'fork' or 'subprocess', got {isolation!r}")
    done = store.done_keys()
    store._refresh_seen(reset=True)
    todo = list({t.key: t for t in tasks if t.key not in done}.values())  # the same run listed twice runs once
    summary = RunSummary(total=len(tasks), skipped=len(tasks) - len(todo), ran=0, killed=0, errors=0, seconds=0.0)
    if not todo:
        store.write_csv()
        return summary
    return _Execution(store, summary, jobs=jobs, grace=grace, isolation=isolation, on_row=on_row,
                      progress=progress, n_todo=len(todo)).run(todo, scheduler)


class _Execution:
    """One :func:`execute` call: claims, runs and stores the tasks, locally or on Dask, with a progress bar."""

    def __init__(self, store: ResultStore, summary: RunSummary, *, jobs: int, grace: float | None, isolation: str,
                 on_row: Callable[[dict], None] | None, progress: bool, n_todo: int) -> None:
        self.store, self.summary, self.jobs, self.grace, self.isolation = store, summary, jobs, grace, isolation
        self.on_row = on_row
        self.stop = threading.Event()
        self.last_csv = 0.0
        self.bar = tqdm(total=n_todo, desc="runs", unit="run", file=sys.stderr, disable=not progress,
                        dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 10.0)

    def finish(self, row: dict[str, Any]) -> None:
        summary = self.summary
        summary.ran += 1
        summary.killed += row.get("termination") == "killed"
        summary.errors += row.get("termination") == "error"
        self.bar.set_postfix_str(f"{row.get('instance')} {row.get('method')}", refresh=False)
        self.bar.update(1)
        if self.on_row is not None:
            self.on_row(row)
        if time.perf_counter() - self.last_csv > 2.0:  # keep runs.csv current during long grids
            self.store.write_csv()
            self.last_csv = time.perf_counter()

    def done_elsewhere(self, t: Task) -> None:
        self.summary.elsewhere += 1
        self.bar.update(1)

    def claimed_run(self, runner: Callable[..., dict[str, Any]], t: Task, label: str
                    ) -> tuple[str, dict[str, Any] | None]:
        """Claim, run, store, release (in a pool thread): the row is appended before the claim is dropped."""
        if self.stop.is_set():
            return "stopped", None
        state = self.store.claim(t.key, label=t.label)
        if state != "claimed":
            return state, None
        try:
            row = runner(t, self.grace)
            row["executor"] = label
            if self.stop.is_set():  # interrupted: the killed run is not stored (it is run again on resume)
                return "stopped", None
            self.store.append(row)
            return "ran", row
        finally:
            self.store.release(t.key)

    def local_round(self, batch: list[Task]) -> list[Task]:
        runner: Callable[..., dict[str, Any]] = run_isolated
        if self.isolation == "fork" and fork_context(batch[0].threads) is not None:
            runner = run_forked
        label = "local fork" if runner is run_forked else "local subprocess"
        held: list[Task] = []
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futs = {pool.submit(self.claimed_run, runner, t, label): t for t in batch}
            try:
                for fut in as_completed(futs):
                    state, row = fut.result()
                    if state == "ran" and row is not None:
                        self.finish(row)
                    elif state == "held":
                        held.append(futs[fut])
                    elif state == "done":
                        self.done_elsewhere(futs[fut])
            except BaseException:
                self.stop.set()
                for f_ in futs:
                    f_.cancel()
                kill_all()
                raise
        return held

    def dask_round(self, batch: list[Task], client: Any) -> list[Task]:
        from distributed import as_completed as dask_completed  # the dask extra, only with a scheduler

        store = self.store
        held: list[Task] = []
        mine: list[Task] = []
        for t in batch:
            state = store.claim(t.key, label=t.label)
            if state == "claimed":
                mine.append(t)
            elif state == "held":
                held.append(t)
            else:
                self.done_elsewhere(t)
        try:
            futs = {client.submit(run_on_dask_worker, t, self.grace, pure=False): t for t in mine}
            for fut in dask_completed(list(futs), loop=client.loop):
                t = futs[fut]
                try:
                    row = fut.result()
                except Exception as e:  # a lost worker: the run is retried next time
                    row = failed_row(t, "error", f"dask: {type(e).__name__}: {e}", 0.0, retry=True)
                store.append(row)
                store.release(t.key)
                self.finish(row)
        finally:
            for t in mine:
                store.release(t.key)
        return held

    def rounds(self, todo: list[Task], client: Any) -> None:
        """Run rounds until no task is left (tasks another process holds are waited for)."""
        pending, polls = todo, 0
        while pending:
            pending = self.dask_round(pending, client) if client is not None else self.local_round(pending)
            if pending:
                polls += 1
                if polls == 2:  # still held after one look: say who holds them
                    who = next((h for h in map(self.store.holder, (t.key for t in pending)) if h), None)
                    by = f" (pid {who.get('pid')} on {who.get('host')})" if who else ""
                    self.bar.write(f"benchsel: waiting for {len(pending)} run(s) held by another process{by} "
                                   f"writing into {self.store.dir}", file=sys.stderr)
                time.sleep(WAIT_POLL_SECONDS)

    def run(self, todo: list[Task], scheduler: Any) -> RunSummary:
        t0 = time.perf_counter()
        try:
            own = isinstance(scheduler, str)
            client = connect_dask(scheduler) if own else scheduler
            try:
                self.rounds(todo, client)
            finally:
                if own and client is not None:
                    client.close()
        except KeyboardInterrupt:
            self.summary.interrupted = True
        finally:
            self.bar.close()
            self.store.write_csv()
            self.summary.seconds = time.perf_counter() - t0
        return self.summary
