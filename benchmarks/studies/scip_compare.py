"""SCIP's branch-and-cut against HiGHS' on the k-medoids Benders master (lazy rows), same limits.

Usage::

    python -m benchsel.benchmarks.studies.scip_compare --part pmed --out results/scip/pmed.csv            # pmed1..40
    python -m benchsel.benchmarks.studies.scip_compare --part pmed --instances pmed1 pmed2 --time-limit 30
    python -m benchsel.benchmarks.studies.scip_compare --part coreset --out results/scip/coreset.csv  # real matrices
    python -m benchsel.benchmarks.studies.scip_compare --summary results/scip/pmed.csv results/scip/coreset.csv

Both methods solve ``KMedoids.linear_model(model="benders")``: one cost column
per item and the cuts ``theta_i >= L - sum_j max(0, L - D[i, j]) y_j``
separated on demand. ``"highs"`` drives its own branch-and-cut over HiGHS
node LPs; ``"scip"`` hands the same ``LazyRows.separate`` to a SCIP
constraint handler (SCIP's branch-and-cut, its presolve, cuts and
heuristics). Same time limit, same default warm start (greedy BUILD), one
thread each, seed 0.

Parts:

``pmed``
    OR-Library pmed1..40 (known optima; a run is *proven* when it terminates
    ``optimal`` at the known optimum).
``coreset``
    AnchorPoints instances on the real binary response matrices of
    ``<data>/responses/benchmark_prediction`` with at most 1200 items: items
    described by their responses from a seeded random 75 % of the models
    (the interpolation protocol's sources), correlation distance, ``k = 50``
    (the data source's coreset size).

Every row records objective, bound, gap, termination and seconds. Run under
the shared lock: ``flock /work/bench.lock python -m ...``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.kmedoids import KMedoids
from benchsel.instances.orlib import load_pmed, load_pmed_optima
from benchsel.instances.responses import load_responses
from benchsel.solvers import solve

from .._data import default_data_dir
from .._rows import add_summary_options, append_rows, print_summary

METHODS = ("highs", "scip")
CORESET_K = 50
CORESET_MAX_ITEMS = 1200


def coreset_instance(path: Path, k: int = CORESET_K, seed: int = 0) -> KMedoids:
    """AnchorPoints k-medoids on the items of a response matrix (sources: a random 75 % of the models)."""
    Y = load_responses(path).matrix(0)
    rng = np.random.default_rng(seed)
    src = np.sort(rng.choice(Y.shape[0], round(0.75 * Y.shape[0]), replace=False))
    return KMedoids.from_features(Y[src].T, k, metric="correlation")


def instances(part: str, data_dir: Path, names: list[str] | None) -> list[tuple[str, Any, float | None]]:
    """(name, builder, known optimum) of the part's instances."""
    out: list[tuple[str, Any, float | None]] = []
    if part == "pmed":
        folder = data_dir / "orlib" / "pmed"
        optima = load_pmed_optima(folder / "pmedopt.txt")
        for i in range(1, 41):
            name = f"pmed{i}"
            if names and name not in names:
                continue
            out.append((name, lambda p=folder / f"{name}.txt": load_pmed(p), optima.get(name)))
    else:
        folder = data_dir / "responses" / "benchmark_prediction"
        for p in sorted(folder.glob("*.npz")):
            if names and p.stem not in names:
                continue
            n_items = load_responses(p).n_items
            if n_items > CORESET_MAX_ITEMS:
                continue
            out.append((p.stem, lambda p=p: coreset_instance(p), None))
    return out


def run(part: str, data_dir: Path, names: list[str] | None, methods: list[str], time_limit: float,
        quiet: bool = False, out: Path | None = None) -> list[dict[str, Any]]:
    """Solve every instance with every method; rows are appended to ``out`` instance by instance."""
    rows: list[dict[str, Any]] = []
    if not quiet:
        print(f"{'instance':28} {'N':>5} {'k':>4} {'method':6} {'objective':>12} {'bound':>12} {'gap':>9} "
              f"{'termination':12} {'seconds':>8} {'cuts':>6} {'nodes':>6}", flush=True)
    for name, make, opt in instances(part, data_dir, names):
        f = make()
        first = len(rows)
        for m in methods:
            res = solve(f, m, model="benders", time_limit=time_limit, seed=0, threads=1)
            proven = res.termination == "optimal" and (opt is None or abs(res.objective - opt) < 1e-6 * max(1, opt))
            row = {"part": part, "instance": name, "N": f.n_items, "k": f.k, "method": m,
                   "objective": res.objective, "bound": res.bound, "gap": res.gap,
                   "termination": res.termination.value, "known_optimum": opt, "proven": proven,
                   "seconds": res.seconds, "lazy_cuts": res.extra.get("lazy_cuts"),
                   "nodes": res.extra.get("scip_nodes", res.extra.get("bnc_nodes"))}
            rows.append(row)
            if not quiet:
                b = "" if res.bound is None else f"{res.bound:.6g}"
                g = "" if res.gap is None else f"{res.gap:.2e}"
                print(f"{name:28} {f.n_items:>5} {f.k:>4} {m:6} {res.objective:>12.6g} {b:>12} {g:>9} "
                      f"{res.termination.value:12} {res.seconds:>8.2f} {row['lazy_cuts'] or 0:>6} "
                      f"{row['nodes'] or 0:>6}", flush=True)
        if out is not None:
            append_rows(out, rows[first:])
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[str]:
    """One line per (part, method): proven count, median and max seconds; and agreement of the optima."""
    lines = []
    for part in dict.fromkeys(r["part"] for r in rows):
        rs = [r for r in rows if r["part"] == part]
        names = list(dict.fromkeys(r["instance"] for r in rs))
        for m in dict.fromkeys(r["method"] for r in rs):
            mr = [r for r in rs if r["method"] == m]
            t = [float(r["seconds"]) for r in mr]
            proven = sum(str(r["proven"]) == "True" for r in mr)
            lines.append(f"{part:8} {m:6}: proven {proven}/{len(mr)}, seconds median {statistics.median(t):.2f}, "
                         f"max {max(t):.2f}, total {sum(t):.1f}")
        both = 0
        same = 0
        for n in names:
            pr = {r["method"]: r for r in rs if r["instance"] == n}
            if all(str(pr[m]["proven"]) == "True" for m in pr) and len(pr) > 1:
                both += 1
                objs = [float(pr[m]["objective"]) for m in pr]
                same += max(objs) - min(objs) <= 1e-6 * max(1.0, abs(objs[0]))
        lines.append(f"{part:8} proven by both: {both}, same optimum: {same}")
        faster = {m: 0 for m in dict.fromkeys(r["method"] for r in rs)}
        for n in names:
            pr = {r["method"]: r for r in rs if r["instance"] == n and str(r["proven"]) == "True"}
            if len(pr) > 1:
                faster[min(pr, key=lambda m: float(pr[m]["seconds"]))] += 1
        lines.append(f"{part:8} faster proof (both proven): " + ", ".join(f"{m} {c}" for m, c in faster.items()))
    return lines


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """A Markdown table, one line per instance: N, k, and each method's termination and seconds."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    head = "| part | instance | N | k | " + " | ".join(f"{m} (s) | {m} proven" for m in methods) + " | same objective |"
    lines = [head, "|" + "---|" * (5 + 2 * len(methods))]
    for part, name in dict.fromkeys((r["part"], r["instance"]) for r in rows):
        pr = {r["method"]: r for r in rows if r["part"] == part and r["instance"] == name}
        cells = []
        for m in methods:
            r = pr.get(m)
            if r is None:
                cells += ["", ""]
            else:
                cells += [f"{float(r['seconds']):.2f}", "yes" if str(r["proven"]) == "True" else str(r["termination"])]
        objs = [float(r["objective"]) for r in pr.values()]
        same = max(objs) - min(objs) <= 1e-6 * max(1.0, abs(objs[0]))
        any_row = next(iter(pr.values()))
        lines.append(f"| {part} | {name} | {any_row['N']} | {any_row['k']} | " + " | ".join(cells)
                     + f" | {'yes' if same else 'no'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.scip_compare",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["pmed", "coreset"], default="pmed")
    ap.add_argument("--instances", nargs="+", default=None, help="instance names (pmed<k> or matrix stems)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--data-dir", type=Path, default=None)
    add_summary_options(ap, "CSV file for the rows (appended to when it exists)")
    args = ap.parse_args(argv)
    if args.summary:
        print_summary(args.summary, summarize, markdown if args.markdown else None)
        return 0
    data = args.data_dir or default_data_dir()
    if data is None:
        print("error: data directory not found; pass --data-dir", file=sys.stderr)
        return 2
    rows = run(args.part, data, args.instances, args.methods, args.time_limit, out=args.out)
    print()
    print("\n".join(summarize(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
