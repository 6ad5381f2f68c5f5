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
  the reference gaps). A run is identified by instance, instance fingerprint,
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

import contextlib
import importlib
import importlib.util
import json
import math
import os
import pickle
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from benchsel.solvers.errors import BenchselError, InvalidInputError

__all__ = [
    "Task",
    "MethodSpec",
    "parse_method",
    "plan",
    "run_isolated",
    "execute_task",
    "execute",
    "ResultStore",
    "reference_gaps",
    "package_versions",
    "CORE_COLUMNS",
    "import_plugin",
]

ROOT = Path(__file__).resolve().parent.parent

#: Columns every row has, in this order (then ``meta.*``, ``fidelity.*``,
#: ``extra.*``, ``version.*`` and ``selection``).
CORE_COLUMNS = (
    "suite", "instance", "formulation", "sense", "n_items", "method", "kind", "options", "seed", "time_limit",
    "objective", "bound", "gap", "reference", "reference_value", "own_gap", "seconds", "wall_seconds", "feasible",
    "termination", "n_selected", "retention", "error", "retry", "fingerprint", "host", "executor", "finished_at",
)

VERSION_PACKAGES = ("benchsel", "numpy", "scipy", "highspy", "ortools", "pyomo", "kmedoids", "pandas")


# gap tolerance: a heuristic may beat a "proven" optimum by the solver's relative gap
GAP_TOL = 1e-5


# ------------------------------------------------------------------ tasks
@dataclass(frozen=True)
class MethodSpec:
    """A method name with options, parsed from ``name`` or ``name:key=value,key=value``."""

    label: str
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


def _parse_value(v: str) -> Any:
    try:
        return json.loads(v)
    except ValueError:
        return v


def parse_method(text: str) -> MethodSpec:
    """Parse ``"highs"`` or ``"highs:model=radius,mip_rel_gap=0.01"``.

    Values are read as JSON when they parse (numbers, true/false, null, lists),
    else kept as strings.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"methods: expected a method name, got {text!r}")
    name, sep, rest = text.strip().partition(":")
    opts: dict[str, Any] = {}
    if sep:
        for part in rest.split(","):
            if not part.strip():
                continue
            k, eq, v = part.partition("=")
            if not eq or not k.strip():
                raise InvalidInputError(f"methods: expected 'name:key=value,...', got {text!r}")
            opts[k.strip()] = _parse_value(v.strip())
    label = name if not opts else name + ":" + ",".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                                                          for k, v in opts.items())
    return MethodSpec(label, name.strip(), opts)


@dataclass(frozen=True)
class Task:
    """One run: what a worker process needs (all picklable)."""

    suite: str
    instance: str
    cls: str  # "module:ClassName"
    params: Mapping[str, Any]
    formulation: str
    sense: str
    n_items: int
    fingerprint: str
    method: str  # registry name
    label: str  # method with options, as shown in tables
    kind: str
    options: Mapping[str, Any]
    seed: int
    time_limit: float
    threads: int = 1
    fidelity: tuple[Callable[..., Mapping[str, float]], Mapping[str, Any]] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return run_key(self.instance, self.fingerprint, self.label, self.seed, self.time_limit)


def run_key(instance: str, fingerprint: str, label: str, seed: Any, time_limit: Any) -> str:
    """Identity of a run in the results store."""
    return f"{instance}|{fingerprint}|{label}|{int(seed)}|{float(time_limit):g}"


def row_key(row: Mapping[str, Any]) -> str:
    return run_key(row["instance"], row["fingerprint"], row["method"], row["seed"], row["time_limit"])


def import_plugin(spec: str) -> None:
    """Import a module that registers methods: a module name or a ``.py`` file path."""
    try:
        if spec.endswith(".py") or os.sep in spec:
            p = Path(spec).resolve()
            if not p.is_file():
                raise InvalidInputError(f"plugin: no such file {spec!r}")
            name = f"benchsel_plugin_{abs(hash(str(p)))}"
            if name in sys.modules:
                return
            s = importlib.util.spec_from_file_location(name, p)
            if s is None or s.loader is None:
                raise InvalidInputError(f"plugin: cannot import {spec!r}")
            mod = importlib.util.module_from_spec(s)
            sys.modules[name] = mod
            s.loader.exec_module(mod)
        else:
            importlib.import_module(spec)
    except BenchselError:
        raise
    except Exception as e:
        raise InvalidInputError(f"plugin: importing {spec!r} failed ({type(e).__name__}: {e})") from None


def plan(suite: str, specs: Sequence[Any], *, methods: Sequence[str] | None = None, seeds: int = 1,
         time_limit: float, threads: int = 1, plugins: Sequence[str] = ()) -> tuple[list[Task], list[str]]:
    """Expand instance specs into the grid of runs.

    Parameters
    ----------
    suite : str
        Suite name (stored with each row).
    specs : sequence of benchsel.benchmarks.suites.InstanceSpec
    methods : sequence of str, optional
        Methods (``name`` or ``name:key=value,...``) replacing each instance's
        defaults; a method that refuses an instance is skipped there (noted),
        one that accepts none of them is an error.
    seeds : int
        Seeds ``0 .. seeds-1`` for every (instance, method).
    time_limit : float
        Seconds per run, the same for every method.
    threads : int
        Passed as ``threads`` to methods that take that option.
    plugins : sequence of str
        Modules or ``.py`` files registering extra methods (imported here and in
        every worker).

    Returns
    -------
    tasks : list of Task
    notes : list of str
        Skipped (instance, method) pairs with the reason.
    """
    from benchsel.instances.files import class_path, fingerprint
    from benchsel.solvers.registry import get_method
    from benchsel.solvers.validation import check_float, check_int

    from .suites import default_methods

    seeds = check_int(seeds, "seeds", low=1)
    time_limit = check_float(time_limit, "time-limit", low=0.0, low_open=True)
    threads = check_int(threads, "threads", low=1)
    for p in plugins:
        import_plugin(p)
    wanted = [parse_method(m) for m in methods] if methods else None
    for ms in wanted or ():
        get_method(ms.name)  # unknown method: a clear error before anything runs
    accepted: dict[str, int] = {ms.label: 0 for ms in wanted or ()}
    tasks: list[Task] = []
    notes: list[str] = []
    for spec in specs:
        f = spec.make()
        fp = fingerprint(f)
        cls = class_path(type(f))
        params = f.get_params()
        defaults = spec.methods if spec.methods is not None else default_methods(f)
        for ms in wanted or [parse_method(m) for m in defaults]:
            m = get_method(ms.name)
            why = m.accepts(f)
            if why is not None:
                notes.append(f"{ms.label} skipped on {spec.name} ({type(f).__name__}): {why}")
                continue
            allowed = set(m.options) | (set(f.model_options) if m.kind == "exact" else set())
            unknown = sorted(set(ms.options) - allowed)
            if unknown:
                raise InvalidInputError(
                    f"methods: option {', '.join(map(repr, unknown))} not understood by {ms.name!r} on "
                    f"{type(f).__name__}; its options: {', '.join(sorted(allowed)) or '(none)'}"
                )
            accepted[ms.label] = accepted.get(ms.label, 0) + 1
            opts = dict(ms.options)
            if "threads" in m.options and "threads" not in opts:
                opts["threads"] = threads
            for seed in range(seeds):
                tasks.append(Task(
                    suite=suite, instance=spec.name, cls=cls, params=params, formulation=type(f).__name__,
                    sense=f.sense, n_items=int(f.n_items), fingerprint=fp, method=ms.name, label=ms.label,
                    kind=m.kind, options=opts, seed=seed, time_limit=time_limit, threads=threads,
                    fidelity=spec.fidelity, meta=dict(spec.meta), plugins=tuple(str(p) for p in plugins),
                ))
    if wanted:
        none = [lab for lab, n in accepted.items() if n == 0]
        if none:
            raise InvalidInputError(
                f"methods: {', '.join(map(repr, none))} accepts none of the {len(specs)} instances of suite {suite!r}"
            )
    return tasks, notes


# ------------------------------------------------------------------- rows
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


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


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
    from benchsel.instances.files import formulation_class
    from benchsel.solvers.api import solve

    t0 = time.perf_counter()
    row = base_row(task)
    try:
        for p in task.plugins:
            import_plugin(p)
        f = formulation_class(task.cls)(**task.params)
        res = solve(f, task.method, time_limit=task.time_limit, seed=task.seed, **task.options)
        d = res.to_dict()
        row.update(
            objective=_scalar(d["objective"]), bound=_scalar(d["bound"]), own_gap=_scalar(d["gap"]),
            feasible=bool(d["feasible"]), termination=d["termination"], n_selected=d["n_selected"],
            seconds=d["seconds"], selection=d["selection"],
            retention=d["n_selected"] / task.n_items if task.n_items else None,
        )
        if res.extra.get("error"):
            row["error"] = str(res.extra["error"]).splitlines()[0][:300]
        for k, v in d.items():
            if k.startswith("extra.") and k not in ("extra.error", "extra.traceback"):
                row[k] = _scalar(v)
        if task.fidelity is not None and res.has_solution:
            fn, kw = task.fidelity
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
    from benchsel.solvers.registry import _BUILTIN_MODULES

    return ["benchsel.benchmarks.harness", "benchsel.benchmarks.suites", "benchsel.instances.files", "benchsel.solvers.api", "scipy.stats",
            *_BUILTIN_MODULES]


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


def _forked_main(task: "Task", conn: Any, log_path: str, watcher: int) -> None:
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


def run_forked(task: "Task", grace: float | None = None, ctx: Any = None) -> dict[str, Any]:
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
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for var in _THREAD_VARS:
        env.setdefault(var, str(task.threads))
    cmd = [sys.executable, "-c", "from benchsel.benchmarks.harness import _child_main; _child_main()"]
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


# ----------------------------------------------------------------- store
class ResultStore:
    """Results of a directory: ``runs.jsonl`` (source of truth) and ``runs.csv``.

    Parameters
    ----------
    directory : str or Path
        Created when missing.
    """

    JSONL = "runs.jsonl"
    CSV = "runs.csv"

    def __init__(self, directory: str | Path, *, create: bool = True) -> None:
        self.dir = Path(directory)
        if create:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise InvalidInputError(f"out: cannot create the results directory {str(self.dir)!r}: {e}") from None
        elif not (self.dir / self.JSONL).is_file():
            raise InvalidInputError(
                f"dir: {str(self.dir)!r} holds no benchsel results ({self.JSONL} missing); run 'benchsel run' first"
            )
        self._lock = threading.Lock()
        self.n_bad_lines = 0

    @property
    def jsonl(self) -> Path:
        return self.dir / self.JSONL

    @property
    def csv(self) -> Path:
        return self.dir / self.CSV

    def rows(self) -> list[dict[str, Any]]:
        """Every stored row, the latest per run, in first-seen order."""
        out: dict[str, dict[str, Any]] = {}
        self.n_bad_lines = 0
        if not self.jsonl.is_file():
            return []
        with self.jsonl.open() as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    key = row_key(row)
                except (ValueError, KeyError, TypeError):
                    self.n_bad_lines += 1  # e.g. a line cut short by a crash
                    continue
                out[key] = row
        return list(out.values())

    def done_keys(self) -> set[str]:
        """Keys of finished runs: every stored run except those whose worker died or was lost (``retry``)."""
        return {row_key(r) for r in self.rows() if not r.get("retry")}

    def append(self, row: Mapping[str, Any]) -> None:
        line = json.dumps({k: _scalar(v) for k, v in row.items()}, default=str)
        with self._lock, self.jsonl.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()

    def write_csv(self, rows: list[dict[str, Any]] | None = None) -> Path:
        """Re-write ``runs.csv`` from all rows, with reference gaps."""
        rows = reference_gaps(self.rows() if rows is None else rows)
        write_rows_csv(rows, self.csv)
        return self.csv


def ordered_columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    rest = [k for k in seen if k not in CORE_COLUMNS and k not in ("selection", "traceback")]
    order = {"meta.": 0, "fidelity.": 1, "extra.": 2, "version.": 3}
    rest.sort(key=lambda k: (next((v for p, v in order.items() if k.startswith(p)), 4), k))
    return list(CORE_COLUMNS) + rest + ["selection"]


def write_rows_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """Tidy CSV: one row per run, booleans as ``true``/``false``, missing as empty."""
    import csv

    cols = ordered_columns(rows)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            out = []
            for c in cols:
                v = r.get(c)
                if isinstance(v, bool):
                    v = "true" if v else "false"
                elif v is None or (isinstance(v, float) and not math.isfinite(v)):
                    v = ""
                elif isinstance(v, float):
                    v = repr(v)
                out.append(v)
            w.writerow(out)
    os.replace(tmp, path)


# ------------------------------------------------------------------- gaps
def _num(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def reference_gaps(rows: Iterable[Mapping[str, Any]], *, warn: Callable[[str], None] | None = None
                   ) -> list[dict[str, Any]]:
    """Rows with ``gap``, ``reference`` and ``reference_value`` filled in.

    Per instance (name and fingerprint) the reference is the best objective of
    the exact runs that proved optimality (``reference = "optimum"``); failing
    that, the best bound any exact run proved (``"bound"``); failing that none
    (gap left empty). The gap of a feasible run is
    ``(objective - ref) / max(|objective|, 1e-9)`` for minimisation and
    ``(ref - objective) / max(|objective|, 1e-9)`` for maximisation; values
    within ``-1e-5`` of 0 (a heuristic matching an optimum proven to the
    solver's relative tolerance) are set to 0. A larger negative gap would mean
    a wrong "proven" optimum or bound: it is kept and reported through ``warn``.
    """
    rows = [dict(r) for r in rows]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((str(r.get("instance")), str(r.get("fingerprint"))), []).append(r)
    for (inst, _), rs in groups.items():
        sense = rs[0].get("sense", "min")
        best = min if sense == "min" else max
        exact = [r for r in rs if r.get("kind") == "exact"]
        opt = [_num(r["objective"]) for r in exact
               if r.get("termination") == "optimal" and r.get("feasible") is True and math.isfinite(_num(r["objective"]))]
        # the best proven bound: the largest lower bound (min) / smallest upper bound (max)
        bounds = [_num(r.get("bound")) for r in exact if math.isfinite(_num(r.get("bound")))]
        if opt:
            ref, kind = best(opt), "optimum"
        elif bounds:
            ref, kind = (max(bounds) if sense == "min" else min(bounds)), "bound"
        else:
            ref, kind = math.nan, ""
        for r in rs:
            r["reference"] = kind
            r["reference_value"] = ref if math.isfinite(ref) else None
            obj = _num(r.get("objective"))
            if not (kind and r.get("feasible") is True and math.isfinite(obj)):
                r["gap"] = None
                continue
            g = ((obj - ref) if sense == "min" else (ref - obj)) / max(abs(obj), 1e-9)
            if -GAP_TOL <= g < 0:
                g = 0.0
            elif g < 0 and warn is not None:
                warn(f"instance {inst}: {r.get('method')} (seed {r.get('seed')}) has objective {obj:.10g}, better "
                     f"than the proven {kind} {ref:.10g}")
            r["gap"] = g
    return rows


# -------------------------------------------------------------- execution
@dataclass
class RunSummary:
    """What :func:`execute` did."""

    total: int
    skipped: int
    ran: int
    killed: int
    errors: int
    seconds: float
    interrupted: bool = False


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

    from benchsel.solvers.validation import check_int

    jobs = check_int(jobs, "jobs", low=1)
    if grace is not None and (not isinstance(grace, (int, float)) or grace < 0):
        raise InvalidInputError(f"grace: expected a non-negative number of seconds, got {grace!r}")
    done = store.done_keys()
    todo = [t for t in tasks if t.key not in done]
    # deduplicate (the same run listed twice in a grid)
    seen: set[str] = set()
    todo = [t for t in todo if not (t.key in seen or seen.add(t.key))]
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
        store.append(row)
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

    try:
        if scheduler is not None:
            own = isinstance(scheduler, str)
            client = connect_dask(scheduler) if own else scheduler
            try:
                from distributed import as_completed as dask_completed

                futs = {client.submit(run_on_dask_worker, t, grace, pure=False): t for t in todo}
                for fut in dask_completed(list(futs), loop=client.loop):
                    try:
                        row = fut.result()
                    except Exception as e:  # a lost worker: the run is retried next time
                        row = failed_row(futs[fut], "error", f"dask: {type(e).__name__}: {e}", 0.0, retry=True)
                    finish(row)
            finally:
                if own:
                    client.close()
        else:
            if isolation not in ("fork", "subprocess"):
                raise InvalidInputError(f"isolation: expected 'fork' or 'subprocess', got {isolation!r}")
            runner: Callable[..., dict[str, Any]] = run_isolated
            if isolation == "fork" and fork_context(todo[0].threads) is not None:
                runner = run_forked
            label = "local fork" if runner is run_forked else "local subprocess"
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futs = {pool.submit(runner, t, grace): t for t in todo}
                try:
                    for fut in as_completed(futs):
                        row = fut.result()
                        row["executor"] = label
                        finish(row)
                except BaseException:
                    for f_ in futs:
                        f_.cancel()
                    kill_all()
                    raise
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        bar.close()
        store.write_csv()
        summary.seconds = time.perf_counter() - t0
    return summary
