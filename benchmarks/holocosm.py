"""HoloCosm (SPEC F1) benchmark: selection time, optimality gap of the swap search, fidelity.

Usage::

    python -m benchsel.benchmarks.holocosm                   # all three parts (several minutes)
    python -m benchsel.benchmarks.holocosm --quick           # small versions of each part (~1 min)
    python -m benchsel.benchmarks.holocosm --part timing     # or: optimality, fidelity
    python -m benchsel.benchmarks.holocosm --out hc.json     # also save every row as JSON

Parts:

* ``timing`` — ``"swap"`` at N = 8400 items, K = 14 metrics, M = 6 sources,
  20 % retention, on :func:`benchsel.instances.responses.make_multimetric` tensors;
  median and max over seeds of the calibration (building the formulation:
  risk terms and the 128-subset reference bank), the search, and both.
* ``optimality`` — seeded small instances (default N = 30, K = 3, M = 6,
  20 % retention) solved to proven optimality by ``"highs"``; gap of the
  swap search (SPEC settings, and a longer search) to the optimum.
* ``exact`` — ``"highs"`` (both model forms), ``"cpsat"`` (default and with
  ``risk_slack=3e-6``) and ``"swap"`` against brute force on 100 random tiny
  instances (the conformance rules).
* ``fidelity`` — the paper's protocol (orient, normalise, 6 evenly spaced
  sources, the rest targets) on the real multi-metric sets
  (``wmt_mqm/ted_*_multimetric``; ``unieval_topical_chat`` has 6 models, so
  3 sources and 3 targets there) and on synthetic ones, at 10-50 %
  retention, several seeds: mean / worst-metric NMAE, Spearman and Kendall
  tau-b of HoloCosm, Random (plain means, and with the source-assisted
  correction), AnchorPoints (each single metric — best target by NMAE as in
  the paper, and the average over targets — and AverageMetric), K-means and
  the swap search without the ranking constraint; then the paper's claim
  (35 % lower mean NMAE than Random at 20 %).

Timings depend on the machine's load; re-run on a quiet machine for the README.
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

from benchsel.formulations.holocosm import RankingRiskReconstruction, fidelity
from benchsel.heuristics.holocosm import (
    anchorpoints,
    holocosm_selection,
    kmeans_baseline,
    random_baseline,
    swap_unconstrained,
)
from benchsel.instances.responses import load_responses, make_multimetric, paper_split
from benchsel.solvers import solve

from ._data import default_data_dir

RETENTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)


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
def optimality(n_instances: int = 20, N: int = 30, K: int = 3, M: int = 6, retention: float = 0.2,
               time_limit: float = 300.0, threads: int | None = 1, quiet: bool = False) -> list[dict]:
    """Swap search vs the MILP's proven optimum on seeded small instances; one row per instance."""
    rows = []
    for s in range(n_instances):
        X = make_multimetric(M, N, K, corr=0.5, n_negative=1, seed=1000 + s).oriented()
        f = RankingRiskReconstruction(X, retention=retention, seed=s)
        ex = solve(f, "highs", seed=0, time_limit=time_limit, threads=threads)
        row: dict[str, Any] = {"seed": s, "N": N, "K": K, "M": M, "B": f.budget, "eps": f.eps,
                               "milp_termination": ex.termination.value, "milp_objective": ex.objective,
                               "milp_bound": ex.bound, "milp_seconds": ex.seconds}
        for name, opts in (("swap", {}), ("swap_long", {"patience": 10, "max_swaps": 1000}),
                           ("bank_best", {"max_swaps": 0})):
            r = solve(f, "swap", seed=s, **opts)
            row[f"{name}_objective"] = r.objective
            row[f"{name}_feasible"] = r.feasible
            row[f"{name}_seconds"] = r.seconds
            if ex.termination == "optimal":
                row[f"{name}_gap"] = (r.objective - ex.objective) / max(abs(ex.objective), 1e-12)
        rows.append(row)
        if not quiet:
            g = row.get("swap_gap")
            print(f"optimality seed {s}: MILP {ex.termination.value} {ex.objective:.6f} in {ex.seconds:.1f} s; "
                  f"swap {row['swap_objective']:.6f} (gap {'-' if g is None else f'{100 * g:.1f} %'}), "
                  f"long swap {row['swap_long_objective']:.6f}", flush=True)
    return rows


def optimality_summary(rows: list[dict]) -> dict:
    proven = [r for r in rows if r["milp_termination"] == "optimal"]
    out: dict[str, Any] = {"instances": len(rows), "proven": len(proven),
                           "milp_seconds_median": statistics.median([r["milp_seconds"] for r in rows]) if rows else None}
    for name in ("swap", "swap_long", "bank_best"):
        g = [r[f"{name}_gap"] for r in proven]
        out[name] = {"gap_median": statistics.median(g) if g else None, "gap_max": max(g) if g else None,
                     "feasible": sum(r[f"{name}_feasible"] for r in rows),
                     "optimal_hits": sum(abs(x) <= 1e-9 for x in g)}
    return out


# --------------------------------------------------------------------------- exact backends on tiny instances
def exact_check(n_instances: int = 100, quiet: bool = False) -> dict:
    """HiGHS and CP-SAT against brute force on random tiny instances (M 2-5, N 7-9, K 1-3, B = 3).

    Every third instance has integer responses (ties). Returns the number of
    conforming runs per configuration and how many optima sit exactly at ``eps``.
    """
    from benchsel.solvers.conformance import brute_force, check_method

    cfg = {"highs": ("highs", {}), "highs_separate_aux": ("highs", {"pools": "separate", "muhat": "aux"}),
           "cpsat": ("cpsat", {}), "cpsat_risk_slack_3e-6": ("cpsat", {"risk_slack": 3e-6}), "swap": ("swap", {})}
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
def datasets(quick: bool = False, data_dir: Path | None = None) -> list[dict]:
    """The real multi-metric sets (when the data is there) and synthetic ones, split by the paper's protocol."""
    out = []
    data_dir = data_dir or default_data_dir()
    real = [("ted_ende", "wmt_mqm/ted_ende_multimetric.npz", 6), ("ted_zhen", "wmt_mqm/ted_zhen_multimetric.npz", 6),
            ("unieval_topical_chat", "unieval_topical_chat/topical_chat_multimetric.npz", 3)]
    if quick:
        real = [real[0], real[2]]
    if data_dir is not None and (data_dir / "responses").is_dir():
        for name, rel, ns in real:
            R = load_responses(data_dir / "responses" / rel)
            out.append(_split(name, R, ns, "real"))
    else:
        print("fidelity: shared data not found; synthetic sets only", file=sys.stderr)
    n_items = 400 if quick else 1000
    synth = [("synth_mixed", dict(corr=0.6, n_negative=3, n_metrics=6, seed=102))]
    if not quick:
        synth = [("synth_pos", dict(corr=0.7, n_metrics=6, seed=101)), *synth,
                 ("synth_binary", dict(corr=0.3, n_metrics=4, kind="binary", seed=103))]
    for name, kw in synth:
        R = make_multimetric(20, n_items, **kw)
        out.append(_split(name, R, 6, "synthetic"))
    return out


def _split(name: str, R: Any, n_sources: int, kind: str) -> dict:
    sp = paper_split(R, n_sources)
    Xs, Yt = sp.take(R.oriented())
    return {"name": name, "kind": kind, "X": Xs, "Yt": Yt, "metrics": list(R.metrics), "n_sources": n_sources,
            "n_targets": int(sp.targets.size), "N": int(Xs.shape[1]), "K": int(Xs.shape[2])}


def fidelity_runs(sets: list[dict], retentions=RETENTIONS, seeds: int = 5, quiet: bool = False) -> list[dict]:
    """One row per (dataset, retention, seed, method)."""
    rows = []
    for ds in sets:
        X, Yt = ds["X"], ds["Yt"]
        muY = Yt.mean(axis=1)
        t0 = time.perf_counter()
        for rho in retentions:
            for s in range(seeds):
                f = RankingRiskReconstruction(X, retention=rho, seed=s)
                sels = [holocosm_selection(f, s), random_baseline(f, s), random_baseline(f, s, correction=True),
                        swap_unconstrained(f, s), anchorpoints(f, "average", s), kmeans_baseline(f, s)]
                sels += [anchorpoints(f, k, s) for k in range(f.n_metrics)]
                for b in sels:
                    est = b.estimate(f, Yt[:, b.selection, :])
                    fd = fidelity(est, muY)
                    rows.append({"dataset": ds["name"], "kind": ds["kind"], "retention": rho, "seed": s,
                                 "B": f.budget, "method": b.method, "feasible": bool(f.check(b.selection)),
                                 **fd.summary()})
        if not quiet:
            print(f"fidelity {ds['name']} (N={ds['N']}, K={ds['K']}, {ds['n_sources']} sources, "
                  f"{ds['n_targets']} targets): {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


MEASURES = ("mean_nmae", "worst_nmae", "mean_sp", "worst_sp", "mean_tau")


def _aggregate(rows: list[dict]) -> dict:
    """{(dataset, retention, method): {measure: mean over seeds}} with derived AnchorPoints rows.

    ``anchorpoints_best``: the single-metric target with the lowest mean NMAE
    (the paper's reporting rule; it looks at the targets), ``anchorpoints_metric_avg``:
    the average over single-metric targets.
    """
    acc: dict[tuple, list[dict]] = {}
    for r in rows:
        acc.setdefault((r["dataset"], r["retention"], r["method"]), []).append(r)
    agg = {k: {m: float(np.nanmean([r[m] for r in v])) for m in (*MEASURES, "feasible")} for k, v in acc.items()}
    for ds, rho in {(k[0], k[1]) for k in agg}:
        single = {k[2]: v for k, v in agg.items() if k[0] == ds and k[1] == rho and k[2].startswith("anchorpoints_m")}
        if single:
            best = min(single, key=lambda m: single[m]["mean_nmae"])
            agg[(ds, rho, "anchorpoints_best")] = dict(single[best], target=best)
            agg[(ds, rho, "anchorpoints_metric_avg")] = {
                m: float(np.mean([v[m] for v in single.values()])) for m in (*MEASURES, "feasible")}
    return agg


REPORTED = ("holocosm", "random", "random_sac", "swap_unconstrained", "anchorpoints_best", "anchorpoints_metric_avg",
            "anchorpoints_avg", "kmeans")


def fidelity_summary(rows: list[dict], quiet: bool = False) -> dict:
    agg = _aggregate(rows)
    dsets = sorted({k[0] for k in agg})
    kinds = {r["dataset"]: r["kind"] for r in rows}
    rhos = sorted({k[1] for k in agg})
    out: dict[str, Any] = {"macro": {}, "claim": {}}
    for group, names in (("all", dsets), ("real", [d for d in dsets if kinds[d] == "real"]),
                         ("synthetic", [d for d in dsets if kinds[d] == "synthetic"])):
        if not names:
            continue
        for rho in rhos:
            for m in REPORTED:
                vals = [agg[(d, rho, m)] for d in names if (d, rho, m) in agg]
                if vals:
                    out["macro"][f"{group}|{rho}|{m}"] = {k: float(np.mean([v[k] for v in vals]))
                                                          for k in (*MEASURES, "feasible")}
        if 0.2 in rhos:
            h = [agg[(d, 0.2, "holocosm")] for d in names]
            r = [agg[(d, 0.2, "random")] for d in names]
            out["claim"][group] = {
                "datasets": names,
                "mean_nmae_reduction_of_macro": 1 - np.mean([x["mean_nmae"] for x in h]) / np.mean([x["mean_nmae"] for x in r]),
                "worst_nmae_reduction_of_macro": 1 - np.mean([x["worst_nmae"] for x in h]) / np.mean([x["worst_nmae"] for x in r]),
                "mean_nmae_reduction_per_dataset": {d: 1 - a["mean_nmae"] / b["mean_nmae"] for d, a, b in zip(names, h, r)},
                "wins_mean_nmae": sum(a["mean_nmae"] < b["mean_nmae"] for a, b in zip(h, r)),
                "wins_mean_sp": sum(a["mean_sp"] > b["mean_sp"] for a, b in zip(h, r)),
            }
    if not quiet:
        _print_tables(agg, out, dsets, rhos)
    return out


def _print_tables(agg: dict, out: dict, dsets: list[str], rhos: list[float]) -> None:
    print("\nPer dataset (means over seeds): mean NMAE / worst NMAE / mean SP / worst SP")
    for d in dsets:
        print(f"\n{d}")
        print(f"  {'method':24}" + "".join(f"{f'{int(100 * r)}%':>30}" for r in rhos))
        for m in REPORTED:
            cells = []
            for rho in rhos:
                v = agg.get((d, rho, m))
                cells.append(" " * 30 if v is None else
                             f"{v['mean_nmae']:7.3f}{v['worst_nmae']:7.3f}{v['mean_sp']:8.3f}{v['worst_sp']:8.3f}")
            print(f"  {m:24}" + "".join(cells))
    for key in sorted({k.split("|")[0] for k in out["macro"]}):
        print(f"\nMacro average over {key} datasets (equal weight): mean NMAE / worst NMAE / mean SP / worst SP / mean tau")
        for rho in rhos:
            print(f"  retention {int(100 * rho)}%")
            for m in REPORTED:
                v = out["macro"].get(f"{key}|{rho}|{m}")
                if v:
                    print(f"    {m:24}{v['mean_nmae']:8.4f}{v['worst_nmae']:8.4f}{v['mean_sp']:8.4f}{v['worst_sp']:8.4f}"
                          f"{v['mean_tau']:8.4f}   feasible share {v['feasible']:.2f}")
    print("\nPaper's claim at 20 %: HoloCosm mean NMAE 35.3 % (worst 39.5 %) lower than Random")
    for g, c in out["claim"].items():
        per = ", ".join(f"{d} {100 * v:+.1f}%" for d, v in c["mean_nmae_reduction_per_dataset"].items())
        print(f"  {g:9}: mean NMAE {100 * c['mean_nmae_reduction_of_macro']:+.1f} %, worst NMAE "
              f"{100 * c['worst_nmae_reduction_of_macro']:+.1f} % (positive = lower than Random); "
              f"better mean NMAE on {c['wins_mean_nmae']}/{len(c['datasets'])}, mean SP on "
              f"{c['wins_mean_sp']}/{len(c['datasets'])}; per dataset: {per}")


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.holocosm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small versions of every part")
    ap.add_argument("--part", choices=("all", "timing", "optimality", "exact", "fidelity"), default="all")
    ap.add_argument("--seeds", type=int, default=None, help="seeds for timing and fidelity (default 5; quick 2)")
    ap.add_argument("--instances", type=int, default=None, help="optimality instances (default 20; quick 5)")
    ap.add_argument("--opt-n", type=int, default=None, help="items per optimality instance (default 30; quick 20)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="MILP seconds per optimality instance")
    ap.add_argument("--threads", type=int, default=1, help="HiGHS threads for the optimality part")
    ap.add_argument("--out", type=Path, default=None, help="write all rows and summaries as JSON")
    a = ap.parse_args(argv)
    seeds = a.seeds or (2 if a.quick else 5)
    report: dict[str, Any] = {"quick": a.quick, "seeds": seeds}
    if a.part in ("all", "timing"):
        rows = timing(seeds=seeds)
        s = timing_summary(rows)
        report["timing"] = {"rows": rows, "summary": s}
        print(f"\nswap at N=8400, K=14, M=6, 20 % retention, {seeds} seeds: search median {s['swap_s']['median']:.3f} s "
              f"(max {s['swap_s']['max']:.3f}); calibration median {s['calibration_s']['median']:.3f} s; "
              f"total median {s['total_s']['median']:.3f} s (max {s['total_s']['max']:.3f})\n", flush=True)
    if a.part in ("all", "optimality"):
        n_inst = a.instances or (5 if a.quick else 20)
        N = a.opt_n or (20 if a.quick else 30)
        rows = optimality(n_instances=n_inst, N=N, time_limit=a.time_limit, threads=a.threads)
        s = optimality_summary(rows)
        report["optimality"] = {"rows": rows, "summary": s}
        print(f"\noptimality (N={N}, K=3, M=6, 20 % retention): {s['proven']}/{s['instances']} proven optimal by HiGHS "
              f"(median {s['milp_seconds_median']:.1f} s)")
        for name in ("swap", "swap_long", "bank_best"):
            v = s[name]
            if v["gap_median"] is not None:
                print(f"  {name:10} gap to optimum: median {100 * v['gap_median']:.1f} %, max {100 * v['gap_max']:.1f} %; "
                      f"optimum hit {v['optimal_hits']}/{s['proven']}; feasible {v['feasible']}/{s['instances']}")
        print(flush=True)
    if a.part in ("all", "exact"):
        s = exact_check(20 if a.quick else 100)
        report["exact"] = s
        print(f"\nexact backends vs brute force on {s['instances']} tiny instances ({s['optimum_at_eps']} optima at "
              f"R_rank = eps): " + ", ".join(f"{k} {v}/{s['instances']}" for k, v in s["conforming"].items()) + "\n",
              flush=True)
    if a.part in ("all", "fidelity"):
        sets = datasets(a.quick)
        rhos = (0.2,) if a.quick else RETENTIONS
        rows = fidelity_runs(sets, rhos, seeds)
        report["fidelity"] = {"rows": rows, "summary": fidelity_summary(rows),
                              "datasets": [{k: v for k, v in d.items() if k not in ("X", "Yt")} for d in sets]}
    if a.out:
        a.out.write_text(json.dumps(report, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
        print(f"\nwrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
