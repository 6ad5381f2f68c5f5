"""k-medoids coresets at real benchmark sizes: proofs, gaps, nodes, cuts and peak memory per run.

Every real binary response matrix of ``<data>/responses/benchmark_prediction``:
items described by their responses over 75 % of the models (a seeded random
split; the other 25 % are held out, as in the benchmark-prediction protocol),
constant items dropped, correlation distance (``1 - Pearson``, AnchorPoints);
``k`` in {10, 25, 50, 100}; plus a synthetic MMLU-sized matrix
(:func:`benchsel.instances.synthetic.make_benchmark_responses`, N = 14 000).
Each run is its own process, so its peak RSS is its own: ``"fasterpam"``
(seed 0) and ``"highs"`` (the Benders branch-and-cut, FasterPAM warm start).

Usage::

    python -m benchsel.benchmarks.studies.coreset_scale --max-n 2100              # N <= 2 100, 60 s each
    python -m benchsel.benchmarks.studies.coreset_scale --matrices glue_qnli      # 600 s (N > 2 100)
    python -m benchsel.benchmarks.studies.coreset_scale --synthetic 14000 --k 100 # 600 s
    python -m benchsel.benchmarks.studies.coreset_scale --matrices glue_rte --k 10 50 --methods highs

``--time-limit`` overrides the default limits (60 s up to N = 2 100, 600 s
above); ``--lock FILE`` holds an exclusive lock on FILE during each run (a
shared machine's benchmark lock), never between runs; ``--out FILE.csv`` saves
the rows. The goals checked in the summary: proven (gap <= 1e-4) within the
limit, and peak RSS at most 3 dense N x N float64 copies + 400 MB.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.instances.synthetic import make_benchmark_responses
from benchsel.solvers import solve

from .._data import default_data_dir
from ..coresets import KS, real_matrices, response_coreset

__all__ = ["main", "run_case"]

SMALL_N = 2100
SMALL_LIMIT, BIG_LIMIT = 60.0, 600.0


def _matrix(name: str, data_dir: Path | None, seed: int) -> np.ndarray:
    if name.startswith("synthetic-"):

        return make_benchmark_responses(100, int(name.split("-", 1)[1]), seed=seed)
    paths = real_matrices(data_dir)
    if name not in paths:
        raise SystemExit(f"error: no matrix {name!r} under {data_dir}; matrices: {', '.join(paths) or '(none)'}")
    with np.load(paths[name]) as z:
        return np.asarray(z["Y"], dtype=float)


def run_case(name: str, k: int, method: str, time_limit: float, *, data_dir: Path | None = None, seed: int = 0,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run in this process; the row (peak RSS is this process's)."""

    t0 = time.perf_counter()
    f, _ = response_coreset(_matrix(name, data_dir, seed), k, seed=seed)
    build = time.perf_counter() - t0
    res = solve(f, method, time_limit=time_limit, seed=0, **(options or {}))
    ex = res.extra
    N = f.n_items
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB -> MB on Linux
    return {
        "matrix": name, "N": N, "k": k, "method": method, "time_limit": time_limit,
        "options": json.dumps(options or {}, sort_keys=True),
        "objective": res.objective, "bound": res.bound, "gap": res.gap, "termination": res.termination.value,
        "proven": bool(res.termination == "optimal" and res.gap is not None and res.gap <= 1e-4),
        "seconds": ex.get("wall_seconds"), "instance_seconds": build,
        "warm_start_seconds": ex.get("warm_start_seconds"), "nodes": ex.get("bnc_nodes"),
        "cuts": ex.get("lazy_cuts"), "lp_rows": ex.get("lp_rows"), "root_bound": ex.get("root_bound"),
        "root_seconds": ex.get("root_seconds"), "root_rounds": ex.get("root_rounds"),
        "root_end": ex.get("root_end"), "root_fixed": ex.get("root_fixed"),
        "lp_nnz_peak": ex.get("lp_nnz_peak"), "strong_lps": ex.get("strong_lps"),
        "strong_iterations": ex.get("strong_iterations"), "columns_removed": ex.get("columns_removed"),
        "simplex_iterations": ex.get("simplex_iterations"), "search_threads": ex.get("search_threads"),
        "helper_nodes": ex.get("helper_nodes"), "strong_fixed": ex.get("strong_fixed"),
        "strong_pruned": ex.get("strong_pruned"), "search_threads_note": ex.get("search_threads_note"),
        "thread_estimate_mb": ex.get("thread_estimate_mb"),
        "threads_retired": ex.get("threads_retired"),
        "peak_rss_mb": rss,
        "rss_goal_mb": 3 * N * N * 8 / 2**20 + 400,
    }


@contextlib.contextmanager
def _locked(path: Path | None) -> Iterator[None]:
    if path is None:
        yield
        return
    import fcntl

    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _child(name: str, k: int, method: str, time_limit: float, data_dir: Path | None, seed: int,
           options: dict[str, Any], lock: Path | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchsel.benchmarks.studies.coreset_scale", "--one", name, str(k), method,
           str(time_limit), "--seed", str(seed), "--options", json.dumps(options)]
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    with _locked(lock):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3 * time_limit + 600)
    if out.returncode != 0:
        return {"matrix": name, "k": k, "method": method, "termination": "error",
                "error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt(v: Any, spec: str) -> str:
    return "" if v is None else format(v, spec)


def _print_row(r: dict[str, Any]) -> None:
    if r.get("termination") == "error":
        print(f"{r['matrix']:28} {r['k']:>4} {r['method']:10} error: {r.get('error')}", flush=True)
        return
    gap = None if r["gap"] is None else 100 * r["gap"]
    print(f"{r['matrix']:28} {r['N']:>6} {r['k']:>4} {r['method']:10} {r['objective']:>12.4f} "
          f"{_fmt(r['bound'], '>12.4f'):>12} {_fmt(gap, '>8.4f'):>8} {r['termination']:11} "
          f"{_fmt(r['seconds'], '>7.1f'):>7} {_fmt(r['nodes'], '>6d'):>6} {_fmt(r['cuts'], '>7d'):>7} "
          f"{r['peak_rss_mb']:>8.0f} {r['rss_goal_mb']:>8.0f}", flush=True)


def summary(rows: list[dict[str, Any]]) -> None:
    """Goal lines: proven share and worst time per size class, memory within its goal."""
    ok = [r for r in rows if r.get("termination") != "error"]
    exact = [r for r in ok if r["method"] == "highs"]
    fp = {(r["matrix"], r["k"]): r["objective"] for r in ok if r["method"] == "fasterpam"}
    print()
    for label, sel in (("N <= 2100", [r for r in exact if r["N"] <= SMALL_N]),
                       ("N > 2100", [r for r in exact if r["N"] > SMALL_N])):
        if not sel:
            continue
        proven = [r for r in sel if r["proven"]]
        gaps = [100 * r["gap"] for r in sel if r["gap"] is not None]
        worse = [r for r in sel if (r["matrix"], r["k"]) in fp and r["objective"] > fp[(r["matrix"], r["k"])] + 1e-9]
        print(f"highs {label}: {len(proven)}/{len(sel)} proven (gap <= 1e-4); "
              f"max time {max(r['seconds'] for r in sel):.1f} s; max gap {max(gaps, default=0):.4f} %; "
              f"median gap {float(np.median(gaps)) if gaps else 0:.4f} %; "
              f"worse than fasterpam: {len(worse)}")
    mem = [r for r in ok if r["peak_rss_mb"] > r["rss_goal_mb"]]
    print(f"peak RSS above 3 N^2 float64 + 400 MB: {len(mem)} of {len(ok)} runs"
          + (": " + ", ".join(f"{r['matrix']} k={r['k']} {r['method']}" for r in mem) if mem else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.coreset_scale",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--matrices", nargs="+", default=None, help="matrix names (default: all real ones)")
    ap.add_argument("--synthetic", type=int, nargs="*", default=None, metavar="N",
                    help="synthetic MMLU-like matrices of N items (default with no matrices given: none)")
    ap.add_argument("--k", type=int, nargs="+", default=list(KS))
    ap.add_argument("--methods", nargs="+", default=["fasterpam", "highs"])
    ap.add_argument("--max-n", type=int, default=None, help="skip matrices with more items")
    ap.add_argument("--min-n", type=int, default=None, help="skip matrices with fewer items")
    ap.add_argument("--time-limit", type=float, default=None,
                    help=f"seconds per run (default {SMALL_LIMIT:g} up to N = {SMALL_N}, {BIG_LIMIT:g} above)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the source/target split")
    ap.add_argument("--options", default="{}", help="JSON options for 'highs' (e.g. '{\"plunge\": 0}')")
    ap.add_argument("--fasterpam-options", default="{}",
                    help="JSON options for 'fasterpam' (e.g. '{\"n_restarts\": 30}')")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--lock", type=Path, default=None, help="hold an exclusive lock on this file during each run")
    ap.add_argument("--out", type=Path, default=None, help="CSV file for the rows")
    ap.add_argument("--one", nargs=4, metavar=("MATRIX", "K", "METHOD", "TIME_LIMIT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    data = args.data_dir or default_data_dir()
    by_method = {"highs": json.loads(args.options), "fasterpam": json.loads(args.fasterpam_options)}
    if args.one:
        name, k, method, tl = args.one
        row = run_case(name, int(k), method, float(tl), data_dir=data, seed=args.seed,
                       options=json.loads(args.options))  # the parent passes the method's own options
        print(json.dumps(row, default=float))
        return 0
    names = list(args.matrices) if args.matrices else ([] if args.synthetic else list(real_matrices(data)))
    names += [f"synthetic-{n}" for n in (args.synthetic or [])]
    if not names:
        print(f"error: no response matrices under {data or '../shared/data'}; pass --data-dir or --synthetic N",
              file=sys.stderr)
        return 2
    sizes = {}
    for name in names:
        if name.startswith("synthetic-"):
            sizes[name] = int(name.split("-", 1)[1])
        else:
            Y = _matrix(name, data, args.seed)
            sizes[name] = int(np.sum(Y.std(axis=0) > 0))  # an upper bound of N before the split
    keep = [n for n in names if (args.max_n is None or sizes[n] <= args.max_n)
            and (args.min_n is None or sizes[n] >= args.min_n)]
    print(f"{'matrix':28} {'N':>6} {'k':>4} {'method':10} {'objective':>12} {'bound':>12} {'gap%':>8} "
          f"{'termination':11} {'secs':>7} {'nodes':>6} {'cuts':>7} {'RSS MB':>8} {'goal MB':>8}", flush=True)
    rows = []
    for name in keep:
        tl = args.time_limit if args.time_limit is not None else (SMALL_LIMIT if sizes[name] <= SMALL_N else BIG_LIMIT)
        for k in args.k:
            for method in args.methods:
                r = _child(name, k, method, tl, data, args.seed, by_method.get(method, {}), args.lock)
                rows.append(r)
                _print_row(r)
    summary(rows)
    if args.out and rows:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with args.out.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
