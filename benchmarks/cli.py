"""``benchsel``: run benchmark suites, report on them, export them as MPS, solve instance files.

::

    benchsel run SUITE [--methods M ...] [--time-limit S] [--seeds N] [--jobs J] [--out DIR]
                       [--scheduler ADDRESS] [--instances PATTERN ...]
    benchsel report DIR
    benchsel export-mps SUITE --out DIR
    benchsel solve FILE --method M [--time-limit S]
    benchsel list
    benchsel compress SCORES --k K --out DIR [...]    (see benchsel.benchmarks.cli_compress)
    benchsel estimate DIR NEW_SCORES [--json]
    benchsel next DIR NEW_LOGS [--half-width H] [--batch B] [--out FILE]   (see benchsel.benchmarks.cli_next)

Every command takes ``--data-dir DIR`` (real data; default ``$BENCHSEL_DATA``
or ``../shared/data``) and ``--debug`` (tracebacks on errors). Bad input gives
one line on stderr and exit code 2; no traceback unless ``--debug``.

Exit codes: 0 success; 1 internal error (a bug: one line, the traceback with
``--debug``); 2 bad input (arguments, options, files: checked before any run
starts); 3 ``run`` finished but some of its runs ended in an error (their
messages are in the ``error`` column and printed under the tables); 130
interrupted (Ctrl-C or SIGTERM; finished runs are stored, the same command
resumes).
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchsel.formulations.core.errors import BenchselError, InvalidInputError
from benchsel.formulations.core.untrusted import MB, Limits, use_limits
from benchsel.formulations.core.validation import check_float, check_int, check_run_settings, check_time_limit
from benchsel.instances.files import MpsInstance, load_instance, save_instance
from benchsel.solvers.api import solve
from benchsel.solvers.backends.mps import solve_mps
from benchsel.solvers.methods import list_methods

from . import harness, report
from ._data import default_data_dir
from .cli_compress import COMMANDS as _compress_commands
from .cli_compress import add_commands as _add_compress_commands
from .cli_next import COMMANDS as _next_commands
from .cli_next import add_commands as _add_next_commands
from .harness import parse_method
from .suites import available_suites, check_data, get_suite, suite_instances
from .tasks import import_plugin

__all__ = ["build_parser", "main"]

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
EXIT_RUN_ERRORS = 3
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line on stderr (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _common() -> _Parser:
    # a _Parser like the subcommand parsers: the typeshed stub of add_parser(parents=...) wants that parser class
    p = _Parser(add_help=False)
    p.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS,
                   help="folder of the real data (default: $BENCHSEL_DATA or ../shared/data)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
    d = Limits()
    for opt, attr, what in (("--max-line-mb", "max_line_bytes", "longest line of a .jsonl/.csv file read"),
                            ("--max-json-mb", "max_json_bytes", "largest JSON file read"),
                            ("--max-array-mb", "max_array_bytes", "largest array (.npz member, table) read")):
        p.add_argument(opt, type=float, default=argparse.SUPPRESS, metavar="MB",
                       help=f"{what} (default {getattr(d, attr) // MB}; files from outside are capped)")
    return p


def _limits(args: argparse.Namespace) -> Limits:
    """The caps on files read, from ``--max-line-mb`` / ``--max-json-mb`` / ``--max-array-mb``."""
    return Limits.from_mb(getattr(args, "max_line_mb", None), getattr(args, "max_json_mb", None),
                          getattr(args, "max_array_mb", None))


def build_parser() -> argparse.ArgumentParser:

    common = _common()
    ap = _Parser(prog="benchsel", description="Benchmark exact and heuristic methods on benchsel formulations.",
                 parents=[common])
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    suites = ", ".join(available_suites())

    r = sub.add_parser("run", parents=[common], help="run a suite: methods x instances x seeds",
                       description="Run methods x instances x seeds of a suite, each run in its own process under a "
                                   "wall-clock watchdog, and print a table per instance.")
    r.add_argument("suite", metavar="SUITE", help=f"suite name ({suites})")
    r.add_argument("--methods", nargs="+", metavar="M", default=None,
                   help="methods to run instead of each instance's defaults; options as name:key=value,key=value")
    r.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds per run, the same for every method (default: the suite's)")
    r.add_argument("--seeds", type=int, default=1, metavar="N", help="seeds 0..N-1 per (instance, method) (default 1)")
    r.add_argument("--jobs", type=int, default=None, metavar="J", help="concurrent runs (default: CPU count)")
    r.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="results directory (default results/SUITE); finished runs there are skipped")
    r.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="Dask scheduler address (e.g. tcp://host:8786): run the grid on that cluster")
    r.add_argument("--instances", nargs="+", default=None, metavar="PATTERN",
                   help="only instances whose name matches one of these shell patterns")
    r.add_argument("--threads", type=int, default=1, metavar="T",
                   help="threads per run for solvers that take a threads option (default 1)")
    r.add_argument("--grace", type=float, default=None, metavar="S",
                   help="seconds a run may overrun the time limit before the watchdog kills it "
                        "(default 5 + 25%% of the limit)")
    r.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="module or .py file registering extra methods (repeatable)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--quiet", action="store_true", help="no tables (results are still stored)")

    rep = sub.add_parser("report", parents=[common], help="re-render the tables and write PNG plots of a results dir")
    rep.add_argument("dir", type=Path, metavar="DIR")
    rep.add_argument("--no-plots", action="store_true")

    ex = sub.add_parser("export-mps", parents=[common], help="write every instance of a suite as MPS + name map")
    ex.add_argument("suite", metavar="SUITE", help=f"suite name ({suites})")
    ex.add_argument("--out", type=Path, required=True, metavar="DIR")
    ex.add_argument("--instances", nargs="+", default=None, metavar="PATTERN")

    so = sub.add_parser("solve", parents=[common], help="solve one instance file (.npz, OR-Library .txt, .mps)")
    so.add_argument("file", type=Path, metavar="FILE")
    so.add_argument("--method", required=True, metavar="M", help="method name, options as name:key=value,...")
    so.add_argument("--time-limit", type=float, default=60.0, metavar="S")
    so.add_argument("--seed", type=int, default=0)
    so.add_argument("--json", action="store_true", help="print the result as one JSON object")

    sub.add_parser("list", parents=[common], help="list suites and methods")
    _add_compress_commands(sub, common)
    _add_next_commands(sub, common)
    return ap


def _data_dir(args: argparse.Namespace) -> Path | None:

    d = getattr(args, "data_dir", None)
    if d is not None:
        if not d.is_dir():
            raise InvalidInputError(f"data-dir: {str(d)!r} is not a directory")
        return d
    return default_data_dir()


def _filter(specs: list[Any], patterns: Sequence[str] | None, suite: str) -> list[Any]:
    if not patterns:
        return specs
    out = [s for s in specs if any(fnmatch.fnmatchcase(s.name, p) for p in patterns)]
    if not out:
        names = ", ".join(s.name for s in specs[:12]) + (" ..." if len(specs) > 12 else "")
        raise InvalidInputError(f"instances: no instance of suite {suite!r} matches {' '.join(patterns)}; "
                                f"instances: {names}")
    return out


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------- commands
def cmd_run(args: argparse.Namespace) -> int:
    import os


    if args.grace is not None:  # checked before anything is planned or run
        check_float(args.grace, "grace", low=0.0)
    check_int(args.seeds, "seeds", low=1)
    for p in args.plugin:  # a plugin may register the suite itself: import before looking it up
        import_plugin(p)
    s = get_suite(args.suite)
    if s.runner is not None:  # a suite with its own driver (e.g. fidelity)

        data_dir = _data_dir(args)
        check_data(s, data_dir)
        return s.runner(args, data_dir)
    specs = _filter(suite_instances(args.suite, _data_dir(args)), args.instances, args.suite)
    time_limit = args.time_limit if args.time_limit is not None else s.time_limit
    if not (isinstance(time_limit, float) and math.isfinite(time_limit) and time_limit > 0):
        raise InvalidInputError(f"time-limit: expected a positive number of seconds, got {time_limit}")
    check_time_limit(time_limit, "time-limit")  # and at most MAX_TIME_LIMIT
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise InvalidInputError(f"jobs: expected at least 1, got {jobs}")
    tasks, notes = harness.plan(args.suite, specs, methods=args.methods, seeds=args.seeds, time_limit=time_limit,
                                threads=args.threads, plugins=args.plugin)
    client = harness.connect_dask(args.scheduler) if args.scheduler else None
    try:
        return _run_grid(args, tasks, notes, specs, time_limit, jobs, client)
    finally:
        if client is not None:
            client.close()


def _run_grid(args: argparse.Namespace, tasks: list[Any], notes: list[str], specs: list[Any], time_limit: float,
              jobs: int, client: Any) -> int:

    out = args.out if args.out is not None else Path("results") / args.suite
    store = harness.ResultStore(out)
    where = f"Dask scheduler {args.scheduler}" if args.scheduler else f"{jobs} local job{'s' * (jobs > 1)}"
    done = store.done_keys()
    if store.n_bad_lines:  # a resumed run: rows it cannot trust are run again
        _err(f"benchsel: warning: {store.bad_lines.describe(store.jsonl)}")
    n_done = sum(t.key in done for t in tasks)
    _err(f"benchsel: suite {args.suite}: {len(specs)} instances, {len(tasks)} runs ({n_done} already in {out}), "
         f"time limit {time_limit:g} s, {where}")
    for n in notes:
        _err(f"benchsel: note: {n}")
    summary = harness.execute(tasks, store, jobs=jobs, scheduler=client, grace=args.grace,
                              progress=not args.no_progress)
    keys = {t.key for t in tasks}
    rows = harness.reference_gaps(store.rows(), warn=lambda m: _err(f"benchsel: warning: {m}"))
    mine = [r for r in rows if harness.row_key(r) in keys]
    if not args.quiet:
        text, _ = report.render(mine)
        print(text, flush=True)
    elsewhere = f", {summary.elsewhere} run by another process" if summary.elsewhere else ""
    _err(f"benchsel: {summary.ran} runs in {summary.seconds:.1f} s ({summary.skipped} skipped as already done"
         f"{elsewhere}, {summary.killed} killed by the watchdog, {summary.errors} errors); results: {store.csv}")
    if summary.interrupted:
        _err("benchsel: interrupted; finished runs are stored, run the same command again to resume")
        return EXIT_INTERRUPTED
    failed = [r for r in mine if r.get("termination") == "error"]
    if failed:
        first = failed[0]
        _err(f"benchsel: {len(failed)} run(s) ended in an error, e.g. {first.get('method')} on "
             f"{first.get('instance')}: {first.get('error')} (exit code {EXIT_RUN_ERRORS})")
        return EXIT_RUN_ERRORS
    return 0


def cmd_report(args: argparse.Namespace) -> int:

    store = harness.ResultStore(args.dir, create=False)
    rows = harness.reference_gaps(store.rows(), warn=lambda m: _err(f"benchsel: warning: {m}"))
    if store.n_bad_lines:
        _err(f"benchsel: warning: {store.bad_lines.describe(store.jsonl)}")
    if not rows:
        raise InvalidInputError(f"dir: {str(args.dir)!r} holds no finished runs")
    harness.write_rows_csv(rows, store.csv)
    text, written = report.render(rows, args.dir, plots=not args.no_plots)
    print(text, flush=True)
    for p in written:
        _err(f"benchsel: wrote {p}")
    return 0


def cmd_export_mps(args: argparse.Namespace) -> int:


    specs = _filter(suite_instances(args.suite, _data_dir(args)), args.instances, args.suite)
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidInputError(f"out: cannot create {str(out)!r}: {e}") from None
    n = 0
    for spec in specs:
        f = spec.make()
        if not f.is_linear:
            _err(f"benchsel: {spec.name}: skipped, {type(f).__name__} has no linear statement ({f.not_linear_reason})")
            continue
        mps, _ = f.to_mps(out / f"{spec.name}.mps")
        save_instance(f, out / f"{spec.name}.npz")
        print(f"{mps}  ({type(f).__name__}, {f.n_items} items)", flush=True)
        n += 1
    _err(f"benchsel: wrote {n} MPS files (+ .mps.json name maps and .npz instances) under {out}")
    return 0


def _solve_mps(args: argparse.Namespace, inst: Any) -> dict[str, Any]:


    ms = parse_method(args.method)
    if ms.name != "highs":
        raise InvalidInputError(f"method: an .mps file is solved by 'highs' reading the MPS; got {args.method!r}")
    opts = dict(ms.options)
    unknown = sorted(set(opts) - {"threads", "mip_rel_gap"})
    if unknown:
        raise InvalidInputError(f"method: options {unknown} not understood when solving an .mps file "
                                "(threads, mip_rel_gap)")
    row = solve_mps(inst.path, args.time_limit, seed=args.seed, **opts)
    f = inst.formulation
    sel = row["selection"]
    if f is not None and len(sel):
        row["objective_checked"] = float(f.evaluate(sel))
        chk = f.check(sel)
        row["feasible"] = bool(chk.feasible)
        if not chk.feasible:
            row["violations"] = "; ".join(chk.reasons[:3])
    else:
        row["feasible"] = None  # not judged: no instance file beside the MPS
    row["selection"] = " ".join(str(int(i)) for i in sel)
    return row


def cmd_solve(args: argparse.Namespace) -> int:


    check_run_settings(args.seed, args.time_limit, seed_name="seed", time_name="time-limit")
    inst = load_instance(args.file)
    if isinstance(inst, MpsInstance):
        row = _solve_mps(args, inst)
        row["instance"] = inst.name
    else:
        ms = parse_method(args.method)
        res = solve(inst, ms.name, time_limit=args.time_limit, seed=args.seed, **ms.options)
        row = {k: v for k, v in res.to_dict().items() if not k.startswith("extra.") or k in (
            "extra.error", "extra.violations", "extra.model_variant")}
        row["instance"] = args.file.name
    if args.json:
        print(json.dumps(row, default=str))
        return 0
    for k in ("instance", "formulation", "method", "termination", "objective", "bound", "gap", "feasible",
              "seconds", "n_selected", "objective_checked", "violations", "extra.error", "selection"):
        if k in row and row[k] is not None and row[k] != "":
            v = row[k]
            if isinstance(v, float):
                v = f"{v:.10g}"
            print(f"{k:17} {v}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:


    d = getattr(args, "data_dir", None) or default_data_dir()
    print("suites:")
    for s in available_suites().values():
        try:
            check_data(s, d)
            state = ""
        except InvalidInputError:
            state = "  [data not found]"
        print(f"  {s.name:12} {s.description} (time limit {s.time_limit:g} s){state}")
    print("methods:")
    for m in list_methods():
        print(f"  {m.name:12} {m.kind:9} {m.description}")
    return 0


COMMANDS = {"run": cmd_run, "report": cmd_report, "export-mps": cmd_export_mps, "solve": cmd_solve, "list": cmd_list}
COMMANDS.update(_compress_commands)
COMMANDS.update(_next_commands)


def _terminate_as_interrupt() -> Any:
    """SIGTERM stops a run like Ctrl-C (running runs killed, finished ones stored); returns the old handler."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``benchsel`` and ``python -m benchmarks``; returns the exit code."""
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    old_term = _terminate_as_interrupt()
    try:
        with use_limits(_limits(args)):
            return COMMANDS[args.command](args)
    except BenchselError as e:
        if debug:
            raise
        _err(f"benchsel: error: {e}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err("benchsel: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into a command that stopped reading (e.g. head)
        import os

        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        if debug:
            raise
        msg = str(e).splitlines()[0] if str(e) else ""
        _err(f"benchsel: internal error: {type(e).__name__}: {msg} (run again with --debug for the traceback)")
        return EXIT_INTERNAL
    finally:
        if old_term is not None:
            import signal

            signal.signal(signal.SIGTERM, old_term)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
