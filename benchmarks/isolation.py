"""Running one task: in this process, in a process forked from a warm fork server, or in a fresh
subprocess, each under a wall-clock watchdog; the row every run sends back."""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from typing import Any

from benchsel.instances.files import formulation_class
from benchsel.solvers.api import solve
from benchsel.solvers.methods import builtin_method_modules

from .store import _scalar
from .tasks import Task, import_plugin

__all__ = ["base_row", "default_grace", "execute_task", "failed_row", "fork_context", "kill_all", "package_versions",
           "run_forked", "run_isolated", "run_on_dask_worker"]

VERSION_PACKAGES = ("benchsel", "numpy", "scipy", "highspy", "ortools", "pyomo", "kmedoids", "pandas")


_VERSIONS: dict[str, str] | None = None


def package_versions() -> dict[str, str]:
    """``{"version.python": ..., "version.numpy": ..., ...}`` of this environment."""
    global _VERSIONS
    if _VERSIONS is None:
        from importlib.metadata import PackageNotFoundError, version

        v = {"version.python": platform.python_version()}
        for pkg in VERSION_PACKAGES:
            try:
                v[f"version.{pkg}"] = version(pkg)
            except PackageNotFoundError:
                v[f"version.{pkg}"] = ""
        _VERSIONS = v
    return dict(_VERSIONS)


def base_row(task: Task) -> dict[str, Any]:
    """The task's identifying columns (no outcome yet)."""
    row: dict[str, Any] = {
        "suite": task.suite, "instance": task.instance, "formulation": task.formulation, "sense": task.sense,
        "n_items": task.n_items, "method": task.label, "kind": task.kind,
        "options": json.dumps(dict(task.options), sort_keys=True, default=str), "seed": task.seed,
        "time_limit": task.time_limit, "fingerprint": task.fingerprint, "host": platform.node(),
        "objective": None, "bound": None, "own_gap": None, "feasible": False, "n_selected": 0, "retention": None,
        "error": "", "retry": False, "selection": "",
    }
    for k, v in task.meta.items():
        row[f"meta.{k}"] = _scalar(v)
    row.update(package_versions())
    return row


def failed_row(task: Task, termination: str, error: str, seconds: float, *, retry: bool = False) -> dict[str, Any]:
    """Row of a run that produced no result (killed by the watchdog; ``retry``: the worker died or was lost)."""
    row = base_row(task)
    row.update(termination=termination, error=error, seconds=seconds, wall_seconds=seconds, retry=retry,
               finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    return row


def execute_task(task: Task) -> dict[str, Any]:
    """Run one task in this process and return its row (never raises)."""

    t0 = time.perf_counter()
    row = base_row(task)
    try:
        for p in task.plugins:
            import_plugin(p)
        f = formulation_class(task.cls)(**task.params)
        res = solve(f, task.method, time_limit=task.time_limit, seed=task.seed, capture_errors=True, **task.options)
        d = res.to_dict()
        row.update(
            objective=_scalar(d["objective"]), bound=_scalar(d["bound"]), own_gap=_scalar(d["gap"]),
            feasible=bool(d["feasible"]), termination=d["termination"], n_selected=d["n_selected"],
            seconds=d["seconds"], selection=d["selection"],
            retention=d["n_selected"] / task.n_items if task.n_items else None,
        )
        if res.extra.get("error"):
            row["error"] = str(res.extra["error"]).splitlines()[0][:300]
            if res.extra.get("traceback"):
                row["traceback"] = str(res.extra["traceback"])
        for k, v in d.items():
            if k.startswith("extra.") and k not in ("extra.error", "extra.traceback"):
                row[k] = _scalar(v)
        if task.fidelity is not None and res.has_solution:
            fn, kw = task.fidelity
            if getattr(fn, "wants_method", False):  # fidelity that depends on the method (its own estimator)
                kw = {**kw, "method": task.method, "seed": task.seed}
            try:
                for k, v in fn(f, res.selection, **kw).items():
                    row[f"fidelity.{k}"] = _scalar(float(v))
            except Exception as e:  # fidelity is informative; the run itself stands
                row["error"] = f"fidelity failed: {type(e).__name__}: {e}"[:300]
    except Exception as e:
        row.update(termination="error", error=f"{type(e).__name__}: {e}".splitlines()[0][:300],
                   seconds=time.perf_counter() - t0, traceback=traceback.format_exc(limit=10))
    row["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return row


# ------------------------------------------------------ isolated processes
_LIVE: set[subprocess.Popen] = set()
_LIVE_PIDS: set[int] = set()
_LIVE_LOCK = threading.Lock()
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def _exit_if_orphaned(watcher: int | None = None, interval: float = 1.0) -> None:
    """Start a daemon thread that ends this run's process when its watchdog's process goes away.

    The watchdog lives in the process that started the run (``watcher``,
    default the parent); a run whose watchdog was killed, so that nobody will
    collect its row, must not keep a core busy.
    """
    parent = os.getppid()

    def gone() -> bool:
        if watcher is None:
            return os.getppid() != parent
        try:
            os.kill(watcher, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    def watch() -> None:
        while True:
            time.sleep(interval)
            if gone():
                os._exit(70)

    threading.Thread(target=watch, name="benchsel-orphan-guard", daemon=True).start()


def _child_main() -> None:
    """Entry point of a run's process: task (pickle) on stdin, row (JSON) on stdout."""
    _exit_if_orphaned()
    res_fd = os.dup(1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the result
    sys.stdout = os.fdopen(1, "w", closefd=False)
    task = pickle.load(sys.stdin.buffer)
    row = execute_task(task)
    with os.fdopen(res_fd, "w") as fh:
        fh.write(json.dumps(row, default=str))


def _kill_pid(pid: int | None) -> None:
    """SIGKILL the process group led by ``pid`` (or the process alone)."""
    if pid is None:
        return
    if os.name == "posix":
        try:
            os.killpg(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError, OSError):
            pass
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)


def _kill(proc: subprocess.Popen) -> None:
    _kill_pid(proc.pid)
    with contextlib.suppress(OSError):
        proc.kill()


def kill_all() -> None:
    """Kill every run process this process started that is still alive."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
        pids = list(_LIVE_PIDS)
    for p in procs:
        _kill(p)
    for pid in pids:
        _kill_pid(pid)


# ---- local runs: forked from a pre-warmed fork server (cheap process start)
_FORK_CTX: Any = None
_FORK_LOCK = threading.Lock()


def _preload_modules() -> list[str]:

    return ["benchsel.benchmarks.isolation", "benchsel.benchmarks.suites", "benchsel.instances.files",
            "benchsel.solvers.api", "scipy.stats", *builtin_method_modules()]


def fork_context(threads: int = 1) -> Any:
    """The ``forkserver`` multiprocessing context used for local runs (None where unavailable).

    The fork server is started once per process with the modules of every
    built-in method imported, so each run's process is a cheap fork of it.
    The BLAS/OpenMP thread variables are set (if unset) before it starts.
    """
    global _FORK_CTX
    import multiprocessing as mp

    with _FORK_LOCK:
        if _FORK_CTX is None:
            if "forkserver" not in mp.get_all_start_methods():
                return None
            for var in _THREAD_VARS:
                os.environ.setdefault(var, str(threads))
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(_preload_modules())
            _FORK_CTX = ctx
        return _FORK_CTX


def _forked_main(task: Task, conn: Any, log_path: str, watcher: int) -> None:
    """Body of a forked run: own process group, output to a log file, row back through ``conn``."""
    with contextlib.suppress(OSError):
        os.setsid()  # the watchdog kills the whole group (solver subprocesses included)
    _exit_if_orphaned(watcher)  # the harness process holds the watchdog (the fork server may outlive it)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    row = execute_task(task)
    conn.send_bytes(json.dumps(row, default=str).encode())
    conn.close()


def _tail(path: str, n: int = 30) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 20000))
            text = fh.read().decode(errors="replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()][-n:]


def run_forked(task: Task, grace: float | None = None, ctx: Any = None) -> dict[str, Any]:
    """Like :func:`run_isolated`, but the run's process is forked from the fork server.

    Falls back to :func:`run_isolated` where ``forkserver`` is unavailable.
    """
    import tempfile

    ctx = ctx or fork_context(task.threads)
    if ctx is None:  # pragma: no cover - Windows
        return run_isolated(task, grace)
    grace = default_grace(task.time_limit) if grace is None else float(grace)
    limit = task.time_limit + grace
    fd, log_path = tempfile.mkstemp(prefix="benchsel-run-", suffix=".log")
    os.close(fd)
    recv, send = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_forked_main, args=(task, send, log_path, os.getpid()), daemon=False)
    try:
        proc.start()
        send.close()
        with _LIVE_LOCK:
            _LIVE_PIDS.add(proc.pid)
        try:
            ready = recv.poll(limit)
            data = recv.recv_bytes() if ready else None
        except (EOFError, OSError):
            data = b""
        wall = time.perf_counter() - t0
        if data is None:
            _kill_pid(proc.pid)
            proc.join(5)
            return failed_row(task, "killed", f"killed by the watchdog after {wall:.1f} s "
                              f"(time limit {task.time_limit:g} s + grace {grace:g} s)", wall)
        proc.join(max(1.0, limit - wall))
        if proc.is_alive():  # the row arrived but the process hangs on exit
            _kill_pid(proc.pid)
            proc.join(5)
        if not data:
            tail = _tail(log_path)
            why = tail[-1][:300] if tail else "no output"
            row = failed_row(task, "error", f"worker process exited with code {proc.exitcode}: {why}", wall,
                             retry=True)
            row["traceback"] = "\n".join(tail)
            return row
        row = json.loads(data.decode())
        row["wall_seconds"] = wall
        return row
    finally:
        with _LIVE_LOCK:
            _LIVE_PIDS.discard(proc.pid)
        recv.close()
        with contextlib.suppress(OSError):
            os.unlink(log_path)


def default_grace(time_limit: float) -> float:
    """Seconds a run may overrun its limit before the watchdog kills it: ``5 + 0.25 * time_limit``."""
    return 5.0 + 0.25 * float(time_limit)


def run_isolated(task: Task, grace: float | None = None) -> dict[str, Any]:
    """Run ``task`` in a fresh Python process under a wall-clock watchdog.

    Parameters
    ----------
    task : Task
    grace : float, optional
        Seconds beyond ``task.time_limit`` before the process group is killed
        (default :func:`default_grace`). The wall clock includes the start of
        the process.

    Returns
    -------
    dict
        The run's row; termination ``"killed"`` when the watchdog fired,
        ``"error"`` when the process died.
    """
    grace = default_grace(task.time_limit) if grace is None else float(grace)
    env = os.environ.copy()
    for var in _THREAD_VARS:
        env.setdefault(var, str(task.threads))
    cmd = [sys.executable, "-c", "from benchsel.benchmarks.isolation import _child_main; _child_main()"]
    payload = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
    limit = task.time_limit + grace
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=os.name == "posix")
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        try:
            out, err = proc.communicate(payload, timeout=limit)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            wall = time.perf_counter() - t0
            return failed_row(task, "killed", f"killed by the watchdog after {wall:.1f} s "
                              f"(time limit {task.time_limit:g} s + grace {grace:g} s)", wall)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out.strip():
        tail = [ln for ln in err.decode(errors="replace").strip().splitlines() if ln.strip()]
        why = tail[-1][:300] if tail else "no output"
        row = failed_row(task, "error", f"worker process exited with code {proc.returncode}: {why}", wall,
                         retry=True)
        row["traceback"] = "\n".join(tail[-30:])
        return row
    try:
        row = json.loads(out.decode())
    except ValueError as e:
        return failed_row(task, "error", f"unreadable worker output ({e})", wall, retry=True)
    row["wall_seconds"] = wall
    return row


def run_on_dask_worker(task: Task, grace: float | None = None) -> dict[str, Any]:
    """:func:`run_isolated` as a Dask task; records the worker in ``executor``."""
    row = run_isolated(task, grace)
    try:
        from distributed import get_worker

        row["executor"] = f"dask {get_worker().address}"
    except (ImportError, ValueError):
        row["executor"] = "dask"
    return row
