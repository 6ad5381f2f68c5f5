"""OR-Library p-median benchmark: exact and heuristic methods against the known optima.

Usage::

    python -m benchsel.benchmarks.studies.orlib_pmed                      # all 40 instances, highs + fasterpam
    python -m benchsel.benchmarks.studies.orlib_pmed --instances pmed1 pmed2 --methods highs fasterpam
    python -m benchsel.benchmarks.studies.orlib_pmed --build-compare pmed40   # neutral build vs solve, highs and pyomo

Prints one row per (instance, method): objective, known optimum, gap to it,
termination, build and solve seconds; ``--out FILE.csv`` saves the rows.
Each exact run is checked: objective equal to the known optimum and proven.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchsel.instances.orlib import load_pmed, load_pmed_optima
from benchsel.solvers import solve

from .._data import default_data_dir


def _rel(a: float, b: float) -> float:
    return (a - b) / b if b else 0.0


def run(instances: list[str], methods: list[str], time_limit: float, data_dir: Path, seed: int = 0,
        quiet: bool = False) -> list[dict]:
    folder = data_dir / "orlib" / "pmed"
    optima = load_pmed_optima(folder / "pmedopt.txt")
    rows = []
    hdr = (f"{'instance':9} {'N':>4} {'k':>4} {'method':10} {'objective':>10} {'optimum':>8} {'gap%':>7} "
           f"{'bound':>10} {'termination':12} {'build s':>8} {'solve s':>8}")
    if not quiet:
        print(hdr)
    for name in instances:
        f = load_pmed(folder / f"{name}.txt")
        for method in methods:
            res = solve(f, method, time_limit=time_limit, seed=seed)
            opt = optima[name]
            row = {
                "instance": name, "N": f.n_items, "k": f.k, "method": method, "objective": res.objective,
                "optimum": opt, "gap_to_optimum": _rel(res.objective, opt), "bound": res.bound,
                "termination": res.termination.value, "feasible": res.feasible,
                "build_seconds": res.build_seconds, "solve_seconds": res.solve_seconds,
                "proven_optimal": res.termination == "optimal" and abs(res.objective - opt) < 1e-6,
            }
            rows.append(row)
            if not quiet:
                b = "" if res.bound is None else f"{res.bound:.1f}"
                print(f"{name:9} {f.n_items:>4} {f.k:>4} {method:10} {res.objective:>10.1f} {opt:>8.0f} "
                      f"{100 * row['gap_to_optimum']:>7.3f} {b:>10} {res.termination.value:12} "
                      f"{res.build_seconds:>8.3f} {res.solve_seconds:>8.2f}", flush=True)
    return rows


def summary(rows: list[dict]) -> None:
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["method"], []).append(r)
    print()
    for m, rs in by.items():
        gaps = [100 * r["gap_to_optimum"] for r in rs]
        times = [r["build_seconds"] + r["solve_seconds"] for r in rs]
        proven = sum(r["proven_optimal"] for r in rs)
        print(f"{m:10} instances {len(rs):3}  proven optimal {proven:3}  gap% median {statistics.median(gaps):.3f} "
              f"max {max(gaps):.3f}  time median {statistics.median(times):.2f}s max {max(times):.2f}s")


def build_compare(name: str, data_dir: Path, time_limit: float) -> None:
    """Neutral-model build time vs solve time for highs and pyomo on one instance."""
    f = load_pmed(data_dir / "orlib" / "pmed" / f"{name}.txt")
    for variant in ("radius", "benders"):
        t0 = time.perf_counter()
        m = f.linear_model(model=variant, allow_lazy=True)
        dt = time.perf_counter() - t0
        print(f"{name} neutral model {variant:8}: {m.n_cols} cols, {m.n_rows} rows, {m.nnz} nnz, built in {dt:.3f} s")
    runs: tuple[tuple[str, dict[str, Any]], ...] = (("highs", {}), ("highs", {"model": "radius"}), ("pyomo", {}))
    for method, opts in runs:
        res = solve(f, method, time_limit=time_limit, **opts)
        pb = res.extra.get("pyomo_build_seconds")
        nb = res.extra.get("neutral_build_seconds", res.build_seconds)
        variant = res.extra.get("model_variant", "?")
        extra = f", pyomo build {pb:.2f} s" if pb is not None else ""
        print(f"{name} {method:6} model={variant:8}: neutral build {nb:.3f} s{extra}, solve {res.solve_seconds:.2f} s, "
              f"objective {res.objective:.0f}, termination {res.termination.value}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.orlib_pmed",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", nargs="+", default=[f"pmed{i}" for i in range(1, 41)])
    ap.add_argument("--methods", nargs="+", default=["highs", "fasterpam"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="CSV file for the rows")
    ap.add_argument("--build-compare", metavar="INSTANCE", default=None)
    args = ap.parse_args(argv)
    data = args.data_dir or default_data_dir()
    if data is None or not (data / "orlib" / "pmed" / "pmedopt.txt").exists():
        print(f"error: OR-Library p-median data not found under {data or '../shared/data'} "
              "(expected orlib/pmed/pmedopt.txt); pass --data-dir", file=sys.stderr)
        return 2
    if args.build_compare:
        build_compare(args.build_compare, data, args.time_limit)
        return 0
    rows = run(args.instances, args.methods, args.time_limit, data, seed=args.seed)
    summary(rows)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
