"""HoloCosm benchmark: search quality, exact solving, time limits, fidelity.

Usage::

    python -m benchsel.benchmarks.studies.holocosm --part optimality      # N = 30: swap, anneal vs the proven optimum
    python -m benchsel.benchmarks.studies.holocosm --part large --n 300   # N = 100 / 300 / 1000: gaps to the best known
    python -m benchsel.benchmarks.studies.holocosm --part timelimits  # wall clock of every exact backend at its limit
    python -m benchsel.benchmarks.studies.holocosm --part realfid         # real sets: random, swap, anneal, highs
    python -m benchsel.benchmarks.studies.holocosm --part manytargets  # synthetic, 200 targets: when the objective pays
    python -m benchsel.benchmarks.studies.holocosm --part timing          # or: exact, fidelity (the paper's protocol)
    python -m benchsel.benchmarks.studies.holocosm --quick                # small versions of the original parts
    python -m benchsel.benchmarks.studies.holocosm --part ... --out hc.json   # also save every row as JSON

Parts:

* ``timing`` — ``"swap"`` at N = 8400 items, K = 14 metrics, M = 6 sources,
  20 % retention, on :func:`benchsel.instances.responses.make_multimetric` tensors;
  median and max over seeds of the calibration, the search, and both.
* ``optimality`` — the README setting (``make_multimetric(6, 30, 3, corr=0.5,
  n_negative=1, seed=1000 + s)``, 20 % retention, formulation seed ``s``),
  solved to proven optimality by ``"highs"``; gap of ``"swap"`` (the paper's
  settings and a longer search) and of ``"anneal"`` (several method seeds)
  to the optimum, hits and seconds.
* ``large`` — the same generator at N = 100, 300, 1000: ``"swap"``,
  ``"anneal"`` (defaults, and a 20 s schedule), ``"highs"``
  (warm-started, time-limited) and a long ``"anneal"`` run; every objective's
  gap to the best known (the best of all runs).
* ``design`` — annealing over swap-local optima (``"anneal"``) against annealing over single swaps
  (vectorised chains), 10 s each on the same instances (N = 100, 300).
* ``timelimits`` — RankingRiskReconstruction N = 300, PositionalProportionality
  200 x 100 (Mallows, eps = 0.1) and KMedoids N = 2000 under every exact
  backend at ``time_limit`` 1, 5 and 20 s: wall clock (model building
  included), termination, incumbent and bound; the goal is
  ``wall <= 1.5 time_limit + 2`` with a feasible incumbent.
* ``exact`` — ``"highs"`` (both model forms), ``"cpsat"`` and ``"swap"``
  against brute force on random tiny instances (the conformance rules); the
  full CP-SAT study over every formulation is
  :mod:`benchsel.benchmarks.studies.cpsat_exactness`.
* ``realfid`` — the real multi-metric sets (WMT TED MQM en-de and zh-en, 6
  sources; UniEval Topical-Chat, 3 sources), the paper's split, 20 %
  retention: held-out target NMAE and Spearman of Random with the
  source-assisted correction (30 seeds), ``"swap"``, ``"anneal"`` and
  ``"highs"`` (warm-started, time-limited; 5 formulation seeds each), with the
  source objective beside them; means with 95 % intervals over seeds.
* ``manytargets`` — synthetic sets with 6 sources and 200 targets drawn from
  the same model (and a harder one whose targets differ more): the same
  methods, to show when a lower source objective lowers target NMAE.
* ``fidelity`` — the paper's protocol on real and synthetic sets at 10-50 %
  retention: HoloCosm, Random, AnchorPoints, K-means, the ablation.

The comparison with the paper's peers (Vote, mRMR + RidgeCV, tinyBenchmarks, ...), its cross-metric
diagnostics and the weak-to-strong split are :mod:`benchsel.benchmarks.studies.holocosm_peers`.

Timed parts should run under the shared lock (``flock /work/bench.lock python -m ...``);
seconds depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations import PositionalProportionality
from benchsel.formulations.holocosm import RankingRiskReconstruction
from benchsel.instances.responses import make_multimetric
from benchsel.instances.scores import mallows_profile
from benchsel.instances.synthetic import make_kmedoids
from benchsel.solvers import solve
from benchsel.solvers.conformance import brute_force, check_method

from .holocosm_fidelity import (
    RETENTIONS,
    compare_fidelity,
    compare_summary,
    datasets,
    fidelity_runs,
    fidelity_summary,
    many_target_sets,
    print_compare,
    real_sets,
)


# --------------------------------------------------------------------------- timing
def timing(seeds: int = 5, N: int = 8400, K: int = 14, M: int = 6, retention: float = 0.2,
           quiet: bool = False) -> list[dict]:
    """Calibration and swap-search seconds at (M, N, K); one row per seed."""
    solve(RankingRiskReconstruction(np.random.default_rng(0).normal(size=(3, 20, 2)), budget=4), "swap")  # warm-up
    rows = []
    for s in range(seeds):
        X = make_multimetric(M, N, K, corr=0.5, n_negative=K // 4, seed=s).oriented()
        t0 = time.perf_counter()
        f = RankingRiskReconstruction(X, retention=retention, seed=s)
        t1 = time.perf_counter()
        res = solve(f, "swap", seed=s)
        t2 = time.perf_counter()
        row = {"seed": s, "N": N, "K": K, "M": M, "B": f.budget, "calibration_s": t1 - t0, "swap_s": t2 - t1,
               "total_s": t2 - t0, "swaps": res.extra["swaps"], "rounds": res.extra["rounds"],
               "feasible": res.feasible, "R_mean": res.objective, "eps": f.eps}
        rows.append(row)
        if not quiet:
            print(f"timing seed {s}: calibration {row['calibration_s']:.3f} s, swap {row['swap_s']:.3f} s "
                  f"({row['swaps']} swaps), total {row['total_s']:.3f} s, feasible {row['feasible']}", flush=True)
    return rows


def timing_summary(rows: list[dict]) -> dict:
    out = {}
    for k in ("calibration_s", "swap_s", "total_s"):
        v = [r[k] for r in rows]
        out[k] = {"median": statistics.median(v), "max": max(v)}
    return out


# --------------------------------------------------------------------------- optimality
def readme_instance(N: int, seed: int, *, M: int = 6, K: int = 3, retention: float = 0.2) -> RankingRiskReconstruction:
    """The README's synthetic setting: ``make_multimetric(M, N, K, corr=0.5, n_negative=1, seed=1000 + seed)``,
    every model a source, ``retention`` 20 %, formulation seed ``seed``."""
    X = make_multimetric(M, N, K, corr=0.5, n_negative=1, seed=1000 + seed).oriented()
    return RankingRiskReconstruction(X, retention=retention, seed=seed)


SEARCHES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("swap", "swap", {}), ("swap_long", "swap", {"patience": 10, "max_swaps": 1000}), ("anneal", "anneal", {}))


def optimality(n_instances: int = 10, N: int = 30, K: int = 3, M: int = 6, retention: float = 0.2,
               time_limit: float = 300.0, threads: int | None = 1, method_seeds: int = 3,
               quiet: bool = False) -> list[dict]:
    """``"swap"`` and ``"anneal"`` vs the MILP's proven optimum on the README's instances; one row per instance.

    ``"anneal"`` runs with ``method_seeds`` seeds (``anneal_s<k>`` columns); ``"highs"`` (1 thread) proves
    the optimum with its default warm start.
    """
    rows = []
    solve(readme_instance(20, 0), "anneal", seed=0)  # warm-up (imports, registry)
    for s in range(n_instances):
        f = readme_instance(N, s, M=M, K=K, retention=retention)
        ex = solve(f, "highs", seed=0, time_limit=time_limit, threads=threads)
        row: dict[str, Any] = {"seed": s, "N": N, "K": K, "M": M, "B": f.budget, "eps": f.eps,
                               "milp_termination": ex.termination.value, "milp_objective": ex.objective,
                               "milp_bound": ex.bound, "milp_seconds": ex.seconds}
        runs = [(name, m, o, s) for name, m, o in SEARCHES if name != "anneal"]
        runs += [(f"anneal_s{k}", "anneal", {}, 1000 * k + s) for k in range(method_seeds)]
        for name, method, opts, seed in runs:
            r = solve(f, method, seed=seed, **opts)
            row[f"{name}_objective"] = r.objective
            row[f"{name}_feasible"] = r.feasible
            row[f"{name}_seconds"] = r.seconds
            if ex.termination == "optimal":
                row[f"{name}_gap"] = (r.objective - ex.objective) / max(abs(ex.objective), 1e-12)
        rows.append(row)
        if not quiet:
            g = [row.get(f"anneal_s{k}_gap") for k in range(method_seeds)]
            print(f"optimality seed {s}: MILP {ex.termination.value} {ex.objective:.6f} in {ex.seconds:.1f} s; "
                  f"swap {row['swap_objective']:.6f}; anneal gaps "
                  + ", ".join("-" if x is None else f"{100 * x:.2f} %" for x in g), flush=True)
    return rows


def optimality_summary(rows: list[dict]) -> dict:
    proven = [r for r in rows if r["milp_termination"] == "optimal"]
    secs = [r["milp_seconds"] for r in rows]
    out: dict[str, Any] = {"instances": len(rows), "proven": len(proven),
                           "milp_seconds_median": statistics.median(secs) if rows else None,
                           "milp_seconds_max": max(secs, default=None)}
    names = sorted({k[: -len("_objective")] for r in rows for k in r
                    if k.endswith("_objective") and k != "milp_objective"})
    for name in names:
        g = [r[f"{name}_gap"] for r in proven if f"{name}_gap" in r]
        t = [r[f"{name}_seconds"] for r in rows if f"{name}_seconds" in r]
        out[name] = {"gap_median": statistics.median(g) if g else None, "gap_max": max(g) if g else None,
                     "feasible": sum(r.get(f"{name}_feasible", False) for r in rows),
                     "optimal_hits": sum(abs(x) <= 1e-9 for x in g),
                     "seconds_median": statistics.median(t) if t else None, "seconds_max": max(t) if t else None}
    return out


def _print_optimality(s: dict, N: int) -> None:
    print(f"\noptimality (README setting, N={N}): {s['proven']}/{s['instances']} proven optimal by HiGHS "
          f"(median {s['milp_seconds_median']:.1f} s, max {s['milp_seconds_max']:.1f} s)")
    print("| method | optimum reached | median gap | max gap | median s | max s |")
    print("|---|---|---|---|---|---|")
    for name, v in s.items():
        if isinstance(v, dict) and v.get("gap_median") is not None:
            print(f"| {name} | {v['optimal_hits']} of {s['proven']} | {100 * v['gap_median']:.1f} % | "
                  f"{100 * v['gap_max']:.1f} % | {v['seconds_median']:.2f} | {v['seconds_max']:.2f} |")
    print(flush=True)


# --------------------------------------------------------------------------- large instances
def large(Ns: tuple[int, ...] = (100, 300, 1000), n_instances: int = 3, highs_limit: float = 60.0,
          long_limit: float = 120.0, runs_kept: tuple[str, ...] | None = None, quiet: bool = False) -> list[dict]:
    """Objectives at N = 100-1000 (README generator); one row per (N, instance, run) with its gap to the best known.

    Runs: ``"swap"``; ``"anneal"`` with defaults and annealing for 20 s (``time_limit=20, max_iter=10**6``);
    ``"highs"`` (1 thread,
    warm-started by its default, ``highs_limit`` s); and ``"anneal"`` for ``long_limit`` s without an
    iteration cap (``max_iter=10**6, patience=10**6``), which with the others defines the best known.
    ``runs_kept`` keeps only the runs so named (the best known is then the best of those).
    """
    rows = []
    solve(readme_instance(20, 0), "anneal", seed=0)
    for N in Ns:
        for s in range(n_instances):
            f = readme_instance(N, s)
            runs: list[tuple[str, str, dict[str, Any], float | None]] = [
                    ("swap", "swap", {}, None), ("anneal", "anneal", {}, None),
                    ("anneal_20s", "anneal", {"max_iter": 10**6}, 20.0),
                    ("highs", "highs", {"threads": 1}, highs_limit),
                    ("anneal_long", "anneal", {"max_iter": 10**6, "patience": 10**6}, long_limit)]
            if runs_kept:
                runs = [r for r in runs if r[0] in runs_kept]
            got: list[dict[str, Any]] = []
            for name, method, opts, tl in runs:
                r = solve(f, method, seed=s, time_limit=tl, **opts)
                got.append({"N": N, "instance": s, "B": f.budget, "run": name, "objective": r.objective,
                            "feasible": r.feasible, "seconds": r.seconds, "termination": r.termination.value,
                            "bound": r.bound})
                if not quiet:
                    print(f"large N={N} seed {s} {name}: {r.objective:.6g} in {r.seconds:.1f} s "
                          f"({r.termination.value})", flush=True)
            best = min(g["objective"] for g in got if g["feasible"])
            swap_obj = next(g["objective"] for g in got if g["run"] == "swap")
            for g in got:
                g["best_known"] = best
                g["gap_to_best"] = (g["objective"] - best) / max(abs(best), 1e-12)
                g["ratio_to_swap"] = g["objective"] / swap_obj
            rows += got
    return rows


def large_summary(rows: list[dict]) -> dict:
    out: dict[str, Any] = {}
    for N in sorted({r["N"] for r in rows}):
        for run in dict.fromkeys(r["run"] for r in rows):
            rs = [r for r in rows if r["N"] == N and r["run"] == run]
            if rs:
                out[f"{N}|{run}"] = {"gap_median": statistics.median(r["gap_to_best"] for r in rs),
                                     "gap_max": max(r["gap_to_best"] for r in rs),
                                     "ratio_to_swap_max": max(r["ratio_to_swap"] for r in rs),
                                     "seconds_median": statistics.median(r["seconds"] for r in rs),
                                     "seconds_max": max(r["seconds"] for r in rs), "instances": len(rs)}
    runs = [r for r in rows if r["run"] == "anneal"]
    if runs:
        out["anneal_median_gap_all"] = statistics.median(r["gap_to_best"] for r in runs)
    return out


def _print_large(s: dict) -> None:
    print("\n| N | run | median gap to best known | max gap | max objective / swap's | median s | max s |")
    print("|---|---|---|---|---|---|---|")
    for k, v in s.items():
        if isinstance(v, dict):
            N, run = k.split("|")
            print(f"| {N} | {run} | {100 * v['gap_median']:.1f} % | {100 * v['gap_max']:.1f} % | "
                  f"{v['ratio_to_swap_max']:.3f} | {v['seconds_median']:.1f} | {v['seconds_max']:.1f} |")
    if "anneal_median_gap_all" in s:
        print(f"anneal (defaults), median gap to the best known over every N: {100 * s['anneal_median_gap_all']:.2f} %")
    print(flush=True)


# --------------------------------------------------------------------------- design: what to anneal over
def design(Ns: tuple[int, ...] = (100, 300), n_instances: int = 3, seconds: float = 10.0,
           quiet: bool = False) -> list[dict]:
    """Equal-time comparison of annealing over swap-local optima (``"anneal"``'s default) and annealing over
    single swaps (16 vectorised chains for the whole budget, then one descent); one row per run."""
    rows = []
    variants = (("local_optima", {"max_iter": 10**6}),
                ("single_swaps", {"max_iter": 1, "chains": 16, "chain_proposals": 10**9, "chain_share": 1.0}))
    solve(readme_instance(20, 0), "anneal", seed=0)
    for N in Ns:
        for s in range(n_instances):
            f = readme_instance(N, s)
            got: list[dict[str, Any]] = []
            for name, opts in variants:
                r = solve(f, "anneal", seed=s, time_limit=seconds, **opts)
                got.append({"N": N, "instance": s, "variant": name, "objective": r.objective, "seconds": r.seconds,
                            "feasible": r.feasible})
            best = min(g["objective"] for g in got)
            for g in got:
                g["gap_to_better"] = (g["objective"] - best) / max(best, 1e-12)
                if not quiet:
                    print(f"design N={N} seed {s} {g['variant']}: {g['objective']:.6g} in {g['seconds']:.1f} s",
                          flush=True)
            rows += got
    return rows


def _print_design(rows: list[dict]) -> None:
    print("\n| N | instance | over local optima | over single swaps | seconds each |")
    print("|---|---|---|---|---|")
    for N in sorted({r["N"] for r in rows}):
        for s in sorted({r["instance"] for r in rows if r["N"] == N}):
            a = next(r for r in rows if r["N"] == N and r["instance"] == s and r["variant"] == "local_optima")
            b = next(r for r in rows if r["N"] == N and r["instance"] == s and r["variant"] == "single_swaps")
            secs = max(a["seconds"], b["seconds"])
            print(f"| {N} | {s} | {a['objective']:.6f} | {b['objective']:.6f} | {secs:.1f} |")
    print(flush=True)


# --------------------------------------------------------------------------- time limits
def time_limit_instances() -> dict[str, Any]:
    """The issue's three time-limit instances (built once; their construction is not timed)."""

    return {
        "RRR N=300": readme_instance(300, 0),
        "proportionality 200x100": PositionalProportionality.from_scores(mallows_profile(200, 100, phi=0.9, seed=0),
                                                                         eps=0.1),
        "k-medoids N=2000": make_kmedoids(2000, 10, seed=0),
    }


def time_limits(limits: tuple[float, ...] = (1.0, 5.0, 20.0), methods: tuple[str, ...] = ("highs", "cpsat", "pyomo"),
                names: tuple[str, ...] | None = None, quiet: bool = False) -> list[dict]:
    """Wall clock of every exact backend at each limit; one row per (instance, method, limit)."""
    insts = time_limit_instances()
    solve(readme_instance(20, 0), "highs", time_limit=5)  # warm-up: imports
    rows = []
    for name, f in insts.items():
        if names and name not in names:
            continue
        for m in methods:
            for tl in limits:
                t0 = time.perf_counter()
                r = solve(f, m, time_limit=tl, seed=0)
                wall = time.perf_counter() - t0
                row = {"instance": name, "method": m, "time_limit": tl, "wall": wall,
                       "target": 1.5 * tl + 2.0, "within": wall <= 1.5 * tl + 2.0,
                       "termination": r.termination.value, "feasible": r.feasible, "objective": r.objective,
                       "bound": r.bound, "incumbent": r.extra.get("incumbent"),
                       "note": r.extra.get("model_build") or r.extra.get("pyomo_build") or r.extra.get("cpsat_build")
                       or (r.extra.get("highs_status") if "abandoned" in str(r.extra.get("highs_status")) else None)}
                rows.append(row)
                if not quiet:
                    print(f"timelimit {name} {m} {tl:g} s: wall {wall:.2f} s (target {row['target']:.1f}), "
                          f"{row['termination']}, feasible {row['feasible']}, objective {row['objective']:.6g}, "
                          f"bound {row['bound']}, incumbent {row['incumbent']}"
                          + (f" [{row['note']}]" if row["note"] else ""), flush=True)
    return rows


def _print_time_limits(rows: list[dict]) -> None:
    print("\n| instance | method | time limit | wall s | <= 1.5 limit + 2 | termination | feasible incumbent | "
          "from | bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = "-" if r["bound"] is None else f"{r['bound']:.4g}"
        print(f"| {r['instance']} | {r['method']} | {r['time_limit']:g} | {r['wall']:.2f} | "
              f"{'yes' if r['within'] else 'NO'} | {r['termination']} | {'yes' if r['feasible'] else 'NO'} | "
              f"{r['incumbent']} | {b} |")
    print(f"within target: {sum(r['within'] for r in rows)}/{len(rows)}; feasible incumbent: "
          f"{sum(r['feasible'] for r in rows)}/{len(rows)}", flush=True)


# --------------------------------------------------------------------------- fidelity: random vs swap/anneal/highs
def exact_check(n_instances: int = 100, quiet: bool = False) -> dict:
    """HiGHS and CP-SAT against brute force on random tiny instances (M 2-5, N 7-9, K 1-3, B = 3).

    Every third instance has integer responses (ties). Returns the number of
    conforming runs per configuration and how many optima sit exactly at ``eps``.
    """

    cfg: dict[str, tuple[str, dict[str, Any]]] = {
        "highs": ("highs", {}), "highs_separate_aux": ("highs", {"pools": "separate", "muhat": "aux"}),
        "cpsat": ("cpsat", {}), "cpsat_separate_aux": ("cpsat", {"pools": "separate", "muhat": "aux"}),
        "swap": ("swap", {}), "anneal": ("anneal", {})}
    ok = {k: 0 for k in cfg}
    tight = 0
    for s in range(n_instances):
        rng = np.random.default_rng(s)
        M, N, K = int(rng.integers(2, 6)), int(rng.integers(7, 10)), int(rng.integers(1, 4))
        X = rng.normal(size=(M, N, K))
        if s % 3 == 0:
            X = np.round(X)
        f = RankingRiskReconstruction(X, budget=3, seed=s)
        opt, sel = brute_force(f)
        tight += sel is not None and abs(f.ranking_risk(sel) - f.eps) < 1e-12
        for name, (method, kw) in cfg.items():
            probs = check_method(f, method, optimum=opt, **kw)
            ok[name] += not probs
            if probs and not quiet:
                print(f"exact seed {s}: {name}: {probs[0][:160]}")
    return {"instances": n_instances, "conforming": ok, "optimum_at_eps": tight}


# --------------------------------------------------------------------------- fidelity
PARTS = ("timing", "optimality", "large", "design", "timelimits", "exact", "realfid", "manytargets", "fidelity")


def write_report(report: dict, path: Path) -> Path:
    """``report`` as indented JSON (numpy scalars as numbers, anything else unknown as its string)."""
    path.write_text(json.dumps(report, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.holocosm",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small versions of the original parts (timing, optimality, "
                                                         "exact, fidelity)")
    ap.add_argument("--part", choices=("all", *PARTS), default="all",
                    help="one part ('all': timing, optimality, exact, fidelity)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds for timing, fidelity, realfid (default 5; quick 2)")
    ap.add_argument("--instances", type=int, default=None, help="optimality (10) / large (3) instances")
    ap.add_argument("--opt-n", type=int, default=None, help="items per optimality instance (default 30; quick 20)")
    ap.add_argument("--n", type=int, nargs="*", default=None, help="large: item counts (default 100 300 1000)")
    ap.add_argument("--limits", type=float, nargs="*", default=None, help="timelimits: limits (default 1 5 20)")
    ap.add_argument("--methods", nargs="*", default=None, help="timelimits: backends (default highs cpsat pyomo)")
    ap.add_argument("--runs", nargs="*", default=None,
                    help="large: keep only these runs (swap anneal anneal_20s highs anneal_long; default all)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="MILP seconds per optimality instance")
    ap.add_argument("--threads", type=int, default=1, help="HiGHS threads for the optimality part")
    ap.add_argument("--out", type=Path, default=None, help="write all rows and summaries as JSON")
    a = ap.parse_args(argv)
    seeds = a.seeds or (2 if a.quick else 5)
    report: dict[str, Any] = {"quick": a.quick, "seeds": seeds}

    def want(p: str) -> bool:
        return a.part == p or (a.part == "all" and p in ("timing", "optimality", "exact", "fidelity"))

    if want("timing"):
        rows = timing(seeds=seeds)
        s = timing_summary(rows)
        report["timing"] = {"rows": rows, "summary": s}
        print(f"\nswap at N=8400, K=14, M=6, 20 % retention, {seeds} seeds: "
              f"search median {s['swap_s']['median']:.3f} s "
              f"(max {s['swap_s']['max']:.3f}); calibration median {s['calibration_s']['median']:.3f} s; "
              f"total median {s['total_s']['median']:.3f} s (max {s['total_s']['max']:.3f})\n", flush=True)
    if want("optimality"):
        n_inst = a.instances or (5 if a.quick else 10)
        N = a.opt_n or (20 if a.quick else 30)
        rows = optimality(n_instances=n_inst, N=N, time_limit=a.time_limit, threads=a.threads,
                          method_seeds=1 if a.quick else 3)
        s = optimality_summary(rows)
        report["optimality"] = {"rows": rows, "summary": s}
        _print_optimality(s, N)
    if want("large"):
        rows = large(tuple(a.n or (100, 300, 1000)), n_instances=a.instances or 3,
                     runs_kept=tuple(a.runs) if a.runs else None)
        s = large_summary(rows)
        report["large"] = {"rows": rows, "summary": s}
        _print_large(s)
    if want("design"):
        rows = design(tuple(a.n or (100, 300)), n_instances=a.instances or 3)
        report["design"] = {"rows": rows}
        _print_design(rows)
    if want("timelimits"):
        rows = time_limits(tuple(a.limits or (1.0, 5.0, 20.0)), tuple(a.methods or ("highs", "cpsat", "pyomo")))
        report["timelimits"] = {"rows": rows}
        _print_time_limits(rows)
    if want("exact"):
        s = exact_check(20 if a.quick else 100)
        report["exact"] = s
        print(f"\nexact backends vs brute force on {s['instances']} tiny instances ({s['optimum_at_eps']} optima at "
              f"R_rank = eps): " + ", ".join(f"{k} {v}/{s['instances']}" for k, v in s["conforming"].items()) + "\n",
              flush=True)
    if want("realfid"):
        rows = compare_fidelity(real_sets(), seeds=seeds)
        s = compare_summary(rows)
        report["realfid"] = {"rows": rows, "summary": s}
        print_compare(s, "Real sets, 20 % retention")
    if want("manytargets"):
        rows = compare_fidelity(many_target_sets(), seeds=seeds, highs_limit=20.0)
        s = compare_summary(rows)
        report["manytargets"] = {"rows": rows, "summary": s}
        print_compare(s, "Synthetic, 6 sources and 200 targets, 20 % retention")
    if want("fidelity"):
        sets = datasets(a.quick)
        rhos = (0.2,) if a.quick else RETENTIONS
        rows = fidelity_runs(sets, rhos, seeds)
        report["fidelity"] = {"rows": rows, "summary": fidelity_summary(rows),
                              "datasets": [{k: v for k, v in d.items() if k not in ("X", "Yt", "Y_all")} for d in sets]}
    if a.out:
        print(f"\nwrote {write_report(report, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
