"""BayesAME benchmark: batch search quality and speed, and sequential evaluation on real data.

Usage::

    python -m benchsel.benchmarks.studies.bayes --out results/bayes            # full run (>= 50 seeds; slow)
    python -m benchsel.benchmarks.studies.bayes --quick --out results/bayes    # a minute or two
    python -m benchsel.benchmarks.studies.bayes --parts exact timing           # only the batch-search parts
    python -m benchsel.benchmarks.studies.bayes --workers 2 --split extrapolation
    python -m benchsel.benchmarks.studies.bayes --parts headline --workers 2 --out results/bayes   # Table 1

Parts (``--parts``, default all):

``exact``
    ``"smc"`` vs ``"exhaustive"`` on random instances (|U| <= 40, k in {2, 3, 4}):
    share reaching the exact optimum, worst relative gap, seconds.
``timing``
    Time per neighbour evaluation of the SMC local search (rank-2 Woodbury,
    vectorised over candidates) for k = 5, 10, 20, 40, with the log-log slope,
    beside a direct ``O(k^3)`` re-solve of each neighbour.
``rmse``
    Sequential evaluation on real response matrices (default
    ``openllm_v2_ifeval`` and ``helm_lite_math``) under the paper's
    interpolation split (``--split``): for each seed a split, ``--targets``
    target models, and every method run to the full benchmark
    (``stop=False``); the methods are the registered sequential evaluators
    (:mod:`benchsel.formulations.estimation.sequential`: BayesAME, BayesAME-RS,
    RS-Mean, Bayes-AIPW, Seq-APW, Bayes-RS-Learn, AIPW, BayesAME-CVO; ``--methods``
    picks). Reports RMSE vs coreset size, the Evaluation-Weighted
    Integrated RMSE ``100 * int_0^1 x * (100 RMSE(x)) dx`` with ``x = n / N``
    (our reading of the paper's metric: RMSE in percentage points), and the
    stopping rule (``eps1 = 0.005``, ``W = 30``) for ``eps2`` in {0.01, 0.02, 0.03}:
    mean coreset size, RMSE at the stop and coverage of the 95 % interval.
    Writes ``rmse_curves.csv``, ``rmse_summary.csv``, ``stopping.csv`` and
    ``rmse_vs_coreset.png`` under ``--out``.
``headline``
    The paper's Table 1 on the shared data: the ``rmse`` part in both splits
    (default ``openllm_v2_ifeval`` and ``openllm_v2_musr``, 5 seeds x 2 targets)
    and, per data set, split and method, the EWI-RMSE with a 95 % bootstrap
    interval over the runs, its ratio to RS-Mean's, the paper's value and ratio
    (:data:`PAPER_EWI`), whether the paper's value is inside our interval, and
    the RMSE Gain and Spearman at 5 / 10 / 25 / 50 % of N. Writes
    ``headline/headline.csv`` and each split's ``rmse`` files under ``--out``.

BLAS is pinned to one thread per process (set before numpy is imported): on a
shared machine multithreaded BLAS made the small Cholesky factorisations here
10x slower. Use ``--workers`` to run jobs in parallel processes.
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.benchmarks._blas import init_worker, one_blas_thread
from benchsel.formulations.bayes import BatchData, BatchInformationGain
from benchsel.formulations.bayes.evaluate import stopping_point
from benchsel.formulations.bayes.swap import SwapState
from benchsel.formulations.estimation.sequential import get_sequential, sequential_names
from benchsel.instances.responses import load_responses
from benchsel.instances.splits import extrapolation_split, interpolation_split
from benchsel.solvers import solve

from .._data import default_data_dir
from ..fidelity import rank_correlations

#: Every registered sequential evaluator (:mod:`benchsel.formulations.estimation.sequential`).
METHODS = tuple(sequential_names())
DATASETS = ("benchmark_prediction/openllm_v2_ifeval", "benchmark_prediction/helm_lite_math")
EPS2 = (0.01, 0.02, 0.03)
EPS1 = 0.005
W = 30


# ================================================================ exact part
def random_instance(i: int, rng: np.random.Generator) -> BatchInformationGain:
    """A random batch problem with 10 <= |U| <= 40 and k = 2, 3, 4 in turn.

    Reference scores alternate between binary (repeated buckets), continuous and
    continuous rounded to 0.1; ``beta`` in {0.3, 1, 3, 10}, ``sigma2`` in {1e-4, 1e-2}.
    """
    N = int(rng.integers(20, 60))
    Kr = int(rng.integers(2, 8))
    kind = i % 3
    if kind == 0:
        R = rng.integers(0, 2, (Kr, N)).astype(float)
    elif kind == 1:
        R = rng.uniform(size=(Kr, N))
    else:
        R = np.round(rng.uniform(size=(Kr, N)), 1)
    nU = int(rng.integers(10, min(N, 40) + 1))
    C = rng.choice(N, N - nU, replace=False)
    k = (2, 3, 4)[(i // 3) % 3]
    return BatchInformationGain(R, coreset=C, observed=rng.uniform(size=C.size), k=k,
                                beta=float(rng.choice([0.3, 1.0, 3.0, 10.0])), sigma2=float(rng.choice([1e-4, 1e-2])))


def exact_part(n_instances: int, seed: int = 0, quiet: bool = False) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_instances):
        f = random_instance(i, rng)
        ex = solve(f, "exhaustive")
        sm = solve(f, "smc", seed=i)
        gr = solve(f, "greedy")
        assert ex.termination == "optimal" and sm.feasible and gr.feasible
        gap = (ex.objective - sm.objective) / ex.objective
        rows.append({"instance": i, "N": f.n_items, "U": int(f.unevaluated.size), "k": f.k, "B": f.model.B,
                     "optimum": ex.objective, "smc": sm.objective, "greedy": gr.objective, "smc_gap": gap,
                     "greedy_gap": (ex.objective - gr.objective) / ex.objective,
                     "exhaustive_s": ex.seconds, "smc_s": sm.seconds, "mode": ex.extra.get("mode")})
    gaps = np.array([r["smc_gap"] for r in rows])
    ggaps = np.array([r["greedy_gap"] for r in rows])
    out = {
        "instances": n_instances,
        "smc_share_optimal": float(np.mean(gaps <= 1e-9)),
        "smc_worst_gap": float(max(gaps.max(), 0.0)),
        "greedy_share_optimal": float(np.mean(ggaps <= 1e-9)),
        "greedy_worst_gap": float(max(ggaps.max(), 0.0)),
        "smc_mean_s": float(np.mean([r["smc_s"] for r in rows])),
        "exhaustive_mean_s": float(np.mean([r["exhaustive_s"] for r in rows])),
        "rows": rows,
    }
    if not quiet:
        print(f"\n== smc vs exhaustive: {n_instances} random instances, |U| <= 40, k in {{2, 3, 4}}")
        for k in (2, 3, 4):
            g = np.array([r["smc_gap"] for r in rows if r["k"] == k])
            if g.size == 0:
                continue
            print(f"  k = {k}: {g.size} instances, smc optimal {np.mean(g <= 1e-9):.1%}, "
                  f"worst gap {max(g.max(), 0):.2e}")
        print(f"  all: smc optimal {out['smc_share_optimal']:.1%}, worst relative gap {out['smc_worst_gap']:.2e}; "
              f"greedy optimal {out['greedy_share_optimal']:.1%}, worst gap {out['greedy_worst_gap']:.2e}")
        print(f"  mean seconds: smc {out['smc_mean_s']:.3f}, exhaustive {out['exhaustive_mean_s']:.3f}")
    return out


# =============================================================== timing part
def _timing_data(k: int, n_cand: int, rng: np.random.Generator) -> BatchData:
    Bu = n_cand + k
    phi = rng.uniform(size=(Bu, 6))
    sq = np.sum((phi[:, None, :] - phi[None, :, :]) ** 2, axis=2)
    S = np.exp(-sq / 6.0)
    noise = np.full(Bu, 1e-2)
    return BatchData(items=np.arange(Bu), labels=np.arange(Bu), S=S, noise=noise, v=S.sum(1) + noise,
                     avail=np.ones(Bu, dtype=np.int64), phi=phi, N=Bu, k=k)


def timing_part(ks: tuple[int, ...] = (5, 10, 20, 40, 80, 160), n_cand: int = 2000, reps: int = 5, seed: int = 0,
                quiet: bool = False) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in ks:
        data = _timing_data(k, n_cand, rng)
        st = SwapState(data, np.arange(k))
        cands = [st.candidates(m) for m in range(k)]
        st.swap_values(0, cands[0])  # warm-up
        passes = []
        for _ in range(reps):  # best of reps: robust to a busy machine
            t0 = time.perf_counter()
            for m in range(k):
                st.swap_values(m, cands[m])
            passes.append(time.perf_counter() - t0)
        wood = min(passes) / sum(c.size for c in cands)
        # direct: build each neighbour and solve it (O(k^3) each), on a subset of candidates
        sub = cands[0][: min(400, cands[0].size)]
        X = np.tile(st.b, (sub.size, 1))
        X[:, 0] = sub
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            direct_vals = data.values(X)
            times.append(time.perf_counter() - t0)
        direct = min(times) / sub.size
        err = float(np.max(np.abs(direct_vals - st.swap_values(0, sub))) / max(np.max(np.abs(direct_vals)), 1e-300))
        rows.append({"k": k, "candidates": n_cand, "woodbury_us": 1e6 * wood, "direct_us": 1e6 * direct,
                     "max_rel_diff": err})
    for i in range(1, len(rows)):
        a, b = rows[i - 1], rows[i]
        b["slope_woodbury"] = math.log(b["woodbury_us"] / a["woodbury_us"]) / math.log(b["k"] / a["k"])
        b["slope_direct"] = math.log(b["direct_us"] / a["direct_us"]) / math.log(b["k"] / a["k"])
    if not quiet:
        print(f"\n== time per neighbour evaluation ({n_cand} candidate buckets per position)")
        print(f"  {'k':>3} {'woodbury us':>12} {'slope':>6} {'direct us':>10} {'slope':>6} {'max rel diff':>12}")
        for r in rows:
            print(f"  {r['k']:>3} {r['woodbury_us']:>12.3f} {r.get('slope_woodbury', float('nan')):>6.2f} "
                  f"{r['direct_us']:>10.3f} {r.get('slope_direct', float('nan')):>6.2f} {r['max_rel_diff']:>12.1e}")
    return rows


# ================================================================= rmse part
_CACHE: dict[str, np.ndarray] = {}


def _matrix(path: str) -> np.ndarray:
    if path not in _CACHE:
        _CACHE[path] = load_responses(path).matrix(0)
    return _CACHE[path]


def _job(args: tuple) -> dict[str, Any]:
    path, split_kind, seed, t_index, methods = args
    Y = _matrix(path)
    split = (interpolation_split if split_kind == "interpolation" else extrapolation_split)(Y, seed=seed)
    perm = np.random.default_rng([seed, 7]).permutation(split.targets.size)
    target = int(split.targets[perm[t_index % perm.size]])
    R = Y[split.references]
    y = Y[target]
    truth = float(y.mean())
    run_seed = 1000 * seed + t_index
    out: dict[str, Any] = {"path": path, "seed": seed, "target": target, "truth": truth, "N": y.size,
                           "Kr": int(R.shape[0]), "traces": {}, "seconds": {}}
    for m in methods:
        t0 = time.perf_counter()
        res = get_sequential(m)(R, y, stop=False, seed=run_seed)
        if m == "bayesame":
            out["regime"] = res.info["regime"]
            out["B"] = res.info["n_buckets"]
        centre = res.trace.get("mean_R", res.trace["estimate"])
        out["seconds"][m] = time.perf_counter() - t0
        out["traces"][m] = (res.trace["estimate"], res.trace["width"], centre)
    return out


def ewi_rmse(rmse: np.ndarray) -> float:
    """``100 * int_0^1 x * (100 * RMSE(x)) dx`` with ``x = n / N``, trapezoid rule, RMSE(0) weighted by x = 0."""
    N = rmse.size
    x = np.concatenate([[0.0], np.arange(1, N + 1) / N])
    y = np.concatenate([[0.0], x[1:] * 100.0 * rmse])
    return float(100.0 * np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(x)))


def ewi_interval(err: np.ndarray, reps: int = 400, seed: int = 0) -> tuple[float, float]:
    """95 % percentile bootstrap interval of :func:`ewi_rmse` over the runs (rows of ``err``, resampled).

    Parameters
    ----------
    err : ndarray, shape (runs, N)
        Estimate minus truth after n = 1..N items, per run.
    """
    rng = np.random.default_rng(seed)
    vals = [ewi_rmse(np.sqrt(np.mean(err[rng.integers(0, err.shape[0], err.shape[0])] ** 2, axis=0)))
            for _ in range(reps)]
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return float(lo), float(hi)


#: Coreset sizes (shares of N) the summary reports.
FRACS = (0.05, 0.1, 0.25, 0.5)


def rmse_gain(rmse_baseline: float, rmse_method: float) -> float:
    """BayesAME's RMSE Gain in dB, ``20 log10(RMSE(RS-Mean) / RMSE(method))`` (positive: better than the
    baseline); nan when either RMSE is not positive."""
    if not (rmse_baseline > 0 and rmse_method > 0):
        return math.nan
    return 20.0 * math.log10(rmse_baseline / rmse_method)


def gains_and_spearman(E: dict[str, np.ndarray], truth: np.ndarray, N: int) -> dict[str, dict[str, float]]:
    """Per method, the RMSE Gain over ``"rs-mean"`` (when it ran) and the Spearman correlation of the
    estimates with the true scores over the runs, at each share of :data:`FRACS`.

    Parameters
    ----------
    E : mapping of str to ndarray, shape (runs, N)
        Each method's estimate after n = 1..N items, per run.
    truth : ndarray, shape (runs,)
    N : int
    """
    out: dict[str, dict[str, float]] = {}
    base = E.get("rs-mean")
    for m, Em in E.items():
        row: dict[str, float] = {}
        for frac in FRACS:
            j = max(round(frac * N), 1) - 1
            r_m = float(np.sqrt(np.mean((Em[:, j] - truth) ** 2)))
            if base is not None:
                row[f"gain@{frac:g}"] = rmse_gain(float(np.sqrt(np.mean((base[:, j] - truth) ** 2))), r_m)
            row[f"spearman@{frac:g}"] = rank_correlations(Em[:, j], truth)[0]
        out[m] = row
    return out


def rmse_part(datasets: list[str], split_kind: str, seeds: int, targets: int, methods: tuple[str, ...],
              workers: int, out: Path | None, quiet: bool = False) -> dict[str, Any]:
    data_dir = default_data_dir()
    if data_dir is None:
        raise SystemExit("no data directory: set BENCHSEL_DATA or place ../shared/data beside the repository")
    paths = []
    for d in datasets:
        path = Path(d)
        if not path.suffix:
            path = path.with_suffix(".npz")
        if not path.is_absolute():
            path = data_dir / "responses" / path
        paths.append(str(path))
    jobs = [(p, split_kind, s, t, methods) for p in paths for s in range(seeds) for t in range(targets)]
    t0 = time.perf_counter()
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(workers, initializer=init_worker) as pool:
            results = pool.map(_job, jobs, chunksize=1)
    else:
        results = []
        for i, job in enumerate(jobs):
            results.append(_job(job))
            if not quiet and (i + 1) % max(1, len(jobs) // 10) == 0:
                print(f"  ... {i + 1}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    summary: dict[str, Any] = {"datasets": {}, "wall_seconds": time.perf_counter() - t0}
    curve_rows, sum_rows, stop_rows = [], [], []
    for p in paths:
        rs = [r for r in results if r["path"] == p]
        name = Path(p).stem
        N = rs[0]["N"]
        truth = np.array([r["truth"] for r in rs])
        ds: dict[str, Any] = {"N": N, "Kr": rs[0]["Kr"], "runs": len(rs),
                              "unique_share": float(np.mean([r.get("regime") == "unique" for r in rs])),
                              "mean_B": float(np.mean([r.get("B", np.nan) for r in rs])), "methods": {}}
        estimates: dict[str, np.ndarray] = {}
        for m in methods:
            E = estimates[m] = np.array([r["traces"][m][0] for r in rs])  # (runs, N)
            Wd = np.array([r["traces"][m][1] for r in rs])
            Cc = np.array([r["traces"][m][2] for r in rs])
            err = E - truth[:, None]
            rmse = np.sqrt(np.mean(err ** 2, axis=0))
            md: dict[str, Any] = {"ewi_rmse": ewi_rmse(rmse), "ewi_ci": ewi_interval(err), "rmse": rmse,
                                  "seconds": float(np.mean([r["seconds"][m] for r in rs]))}
            for frac in FRACS:
                md[f"rmse@{frac:g}"] = float(rmse[max(round(frac * N), 1) - 1])
            md["stopping"] = {}
            for e2 in EPS2:
                ns, errs, cover = [], [], []
                for i in range(len(rs)):
                    j = stopping_point(E[i], Wd[i], EPS1, e2, W)
                    j = N if j is None else j
                    ns.append(j)
                    errs.append(err[i, j - 1])
                    half = Wd[i, j - 1] / 2.0
                    cover.append(abs(Cc[i, j - 1] - truth[i]) <= half + 1e-12)
                st = {"mean_n": float(np.mean(ns)), "mean_frac": float(np.mean(ns) / N),
                      "rmse": float(np.sqrt(np.mean(np.square(errs)))), "coverage": float(np.mean(cover))}
                md["stopping"][e2] = st
                stop_rows.append({"dataset": name, "method": m, "eps2": e2, **st})
            ds["methods"][m] = md
            for n in range(1, N + 1):
                curve_rows.append({"dataset": name, "method": m, "n": n, "rmse": float(rmse[n - 1])})
        extra = gains_and_spearman(estimates, truth, N)
        for m in methods:
            md = ds["methods"][m]
            md.update(extra[m])
            sum_rows.append({"dataset": name, "method": m, "runs": len(rs), "N": N, "ewi_rmse": md["ewi_rmse"],
                             **{k: v for k, v in md.items() if k.startswith(("rmse@", "gain@", "spearman@"))},
                             "seconds_per_run": md["seconds"]})
        summary["datasets"][name] = ds
        if not quiet:
            print(f"\n== {name} ({split_kind}): N = {N}, Kr = {ds['Kr']}, {len(rs)} runs "
                  f"({seeds} seeds x {targets} targets), unique regime in {ds['unique_share']:.0%} of runs, "
                  f"mean B = {ds['mean_B']:.0f}")
            print(f"  {'method':12} {'EWI-RMSE':>9} {'RMSE@5%':>8} {'@10%':>7} {'@25%':>7} {'@50%':>7} {'s/run':>6}")
            for m in methods:
                md = ds["methods"][m]
                print(f"  {m:12} {md['ewi_rmse']:>9.2f} {md['rmse@0.05']:>8.4f} {md['rmse@0.1']:>7.4f} "
                      f"{md['rmse@0.25']:>7.4f} {md['rmse@0.5']:>7.4f} {md['seconds']:>6.2f}")
            if "rs-mean" in methods:
                print("  RMSE Gain over RS-Mean, dB (20 log10 RMSE(RS-Mean) / RMSE), and Spearman with the truth, "
                      "at 5 / 10 / 25 / 50 % of N")
                for m in methods:
                    md = ds["methods"][m]
                    g = " / ".join(f"{md[f'gain@{f:g}']:+.2f}" for f in FRACS)
                    sp = " / ".join(f"{md[f'spearman@{f:g}']:.3f}" for f in FRACS)
                    print(f"  {m:12} gain {g}   spearman {sp}")
            print(f"  stopping rule (eps1 = {EPS1}, W = {W}): mean coreset size (share of N), RMSE at stop, coverage")
            for m in methods:
                cells = [f"eps2={e2}: n={st['mean_n']:.0f} ({st['mean_frac']:.0%}) rmse={st['rmse']:.4f} "
                         f"cov={st['coverage']:.0%}" for e2, st in ds["methods"][m]["stopping"].items()]
                print(f"  {m:12} " + " | ".join(cells))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        _write_csv(out / "rmse_curves.csv", curve_rows)
        _write_csv(out / "rmse_summary.csv", sum_rows)
        _write_csv(out / "stopping.csv", stop_rows)
        png = out / "rmse_vs_coreset.png"
        _plot(summary, methods, split_kind, png)
        summary["png"] = str(png)
        if not quiet:
            print(f"\n  wrote {out / 'rmse_curves.csv'}, {out / 'rmse_summary.csv'}, {out / 'stopping.csv'}, {png}")
    return summary


# ============================================================= headline part
#: The paper's Table 1 (Evaluation-Weighted Integrated RMSE, binary scores, 50 % of the reference pool, 200
#: seeds x 10 targets) for the benchmarks the shared data holds: IFEval (the same 448-model matrix, from
#: benchmark-prediction), ARC-Challenge and MuSR (Open LLM Leaderboard v2 matrices of benchmark-prediction:
#: 218 / 448 models here against the paper's own extraction of 125 / 288). AIPW and BayesAME-CVO are not in it.
PAPER_EWI: dict[tuple[str, str], dict[str, float]] = {
    ("openllm_v2_ifeval", "interpolation"): {"bayesame": 49.53, "bayesame-rs": 56.14, "rs-mean": 72.45,
                                             "seq-apw": 1464.91, "bayes-aipw": 56.71, "bayes-rs-learn": 76.22},
    ("openllm_v2_ifeval", "extrapolation"): {"bayesame": 58.08, "bayesame-rs": 58.08, "rs-mean": 64.54,
                                             "seq-apw": 488.54, "bayes-aipw": 60.52, "bayes-rs-learn": 466.45},
    ("openllm_v2_arc_challenge", "interpolation"): {"bayesame": 36.53, "bayesame-rs": 36.53, "rs-mean": 56.09,
                                                    "seq-apw": 1391.22, "bayes-aipw": 36.68,
                                                    "bayes-rs-learn": 70.84},
    ("openllm_v2_arc_challenge", "extrapolation"): {"bayesame": 36.56, "bayesame-rs": 36.56, "rs-mean": 53.21,
                                                    "seq-apw": 768.83, "bayes-aipw": 38.03,
                                                    "bayes-rs-learn": 327.45},
    ("openllm_v2_musr", "interpolation"): {"bayesame": 47.86, "bayesame-rs": 47.86, "rs-mean": 69.27,
                                           "seq-apw": 949.90, "bayes-aipw": 49.18, "bayes-rs-learn": 69.12},
    ("openllm_v2_musr", "extrapolation"): {"bayesame": 54.19, "bayesame-rs": 54.19, "rs-mean": 71.28,
                                           "seq-apw": 719.86, "bayes-aipw": 56.72, "bayes-rs-learn": 289.76},
}
#: The default of ``--parts headline`` (ARC-Challenge, N = 1172, is in :data:`PAPER_EWI` too but takes about
#: four times as long per run; pass it with ``--datasets``).
HEADLINE_DATASETS = ("benchmark_prediction/openllm_v2_ifeval", "benchmark_prediction/openllm_v2_musr")


def headline_rows(summaries: dict[str, dict[str, Any]], methods: tuple[str, ...]) -> list[dict[str, Any]]:
    """Ours beside the paper's Table 1: per data set, split and method, EWI-RMSE with its bootstrap
    interval, its ratio to RS-Mean's, the paper's value and ratio, and whether the paper's value lies in
    our interval; plus the RMSE Gain and Spearman at 5 / 10 / 25 / 50 % of N."""
    rows = []
    for split, summ in summaries.items():
        for name, ds in summ["datasets"].items():
            paper = PAPER_EWI.get((name, split), {})
            base = ds["methods"].get("rs-mean", {}).get("ewi_rmse", math.nan)
            for m in methods:
                md = ds["methods"][m]
                lo, hi = md["ewi_ci"]
                p = paper.get(m, math.nan)
                rows.append({"dataset": name, "split": split, "method": m, "runs": ds["runs"],
                             "ewi": md["ewi_rmse"], "ewi_lo": lo, "ewi_hi": hi, "ratio": md["ewi_rmse"] / base,
                             "paper": p, "paper_ratio": p / paper["rs-mean"] if paper else math.nan,
                             "in_ci": "" if math.isnan(p) else ("yes" if lo <= p <= hi else "no"),
                             **{k: v for k, v in md.items() if k.startswith(("gain@", "spearman@"))}})
    return rows


def headline_part(datasets: list[str], seeds: int, targets: int, methods: tuple[str, ...], workers: int,
                  out: Path | None) -> list[dict[str, Any]]:
    """The paper's headline comparison (Table 1) on the shared data: both splits, every method."""
    summaries = {split: rmse_part(datasets, split, seeds, targets, methods, workers,
                                  None if out is None else out / split, quiet=True)
                 for split in ("interpolation", "extrapolation")}
    rows = headline_rows(summaries, methods)
    print(f"\n== headline: EWI-RMSE [95 % bootstrap over runs] (ratio to RS-Mean) vs the paper's Table 1; "
          f"{seeds} seeds x {targets} targets per split")
    print(f"  {'data':26} {'split':13} {'method':14} {'ours':>8} {'95 % interval':>17} {'ratio':>6} "
          f"{'paper':>8} {'ratio':>6} {'in':>3}  gain dB @5/10/25/50 %   spearman @5/10/25/50 %")
    for r in rows:
        g = "/".join(f"{r[f'gain@{f:g}']:+.1f}" for f in FRACS)
        sp = "/".join(f"{r[f'spearman@{f:g}']:.2f}" for f in FRACS)
        print(f"  {r['dataset']:26} {r['split']:13} {r['method']:14} {r['ewi']:8.1f} "
              f"[{r['ewi_lo']:7.1f}, {r['ewi_hi']:7.1f}] {r['ratio']:6.2f} {r['paper']:8.1f} "
              f"{r['paper_ratio']:6.2f} {r['in_ci']:>3}  {g:22} {sp}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        _write_csv(out / "headline.csv", rows)
        print(f"\n  wrote {out / 'headline.csv'}")
    return rows


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    fields = list(dict.fromkeys(k for r in rows for k in r))  # union of keys, first-seen order
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def _plot(summary: dict[str, Any], methods: tuple[str, ...], split_kind: str, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["datasets"])
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        ds = summary["datasets"][name]
        N = ds["N"]
        x = 100.0 * np.arange(1, N + 1) / N
        for m in methods:
            md = ds["methods"][m]
            ax.plot(x[:-1], 100.0 * md["rmse"][:-1], label=f"{m} (EWI {md['ewi_rmse']:.1f})")
        ax.set_yscale("log")
        ax.set_xlabel("coreset size n (% of N)")
        ax.set_ylabel("RMSE x 100")
        ax.set_title(f"{name} ({split_kind}, {ds['runs']} runs, N = {N}, Kr = {ds['Kr']})", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


# ====================================================================== main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.bayes",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small run: fewer instances, seeds and repetitions")
    ap.add_argument("--parts", nargs="+", default=["exact", "timing", "rmse"],
                    choices=["exact", "timing", "rmse", "headline"])
    ap.add_argument("--out", type=Path, default=None, help="results folder (CSV files and the PNG plot)")
    ap.add_argument("--instances", type=int, default=None, help="random instances for 'exact' (default 60; quick 30)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds for 'rmse' (default 50; quick 3)")
    ap.add_argument("--targets", type=int, default=None, help="target models per seed (default 2; quick 1)")
    ap.add_argument("--datasets", nargs="+", default=None,
                    help=f"response files under <data>/responses (default: {', '.join(DATASETS)}; for "
                         f"'headline' {', '.join(HEADLINE_DATASETS)})")
    ap.add_argument("--split", choices=["interpolation", "extrapolation"], default="interpolation")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--workers", type=int, default=1, help="parallel processes for 'rmse'")
    ap.add_argument("--ks", type=int, nargs="+", default=[5, 10, 20, 40, 80, 160], help="batch sizes for 'timing'")
    ap.add_argument("--candidates", type=int, default=None,
                    help="candidate buckets per position for 'timing' (default 2000; quick 500)")
    args = ap.parse_args(argv)
    q = args.quick
    res: dict[str, Any] = {}
    if "exact" in args.parts:
        res["exact"] = exact_part(args.instances or (30 if q else 60))
    if "timing" in args.parts:
        res["timing"] = timing_part(tuple(args.ks), n_cand=args.candidates or (500 if q else 2000), reps=2 if q else 5)
    if "rmse" in args.parts:
        res["rmse"] = rmse_part(args.datasets or list(DATASETS), args.split, args.seeds or (3 if q else 50),
                                args.targets or (1 if q else 2), tuple(args.methods), args.workers, args.out)
    if "headline" in args.parts:
        res["headline"] = headline_part(args.datasets or list(HEADLINE_DATASETS), args.seeds or (2 if q else 5),
                                        args.targets or (1 if q else 2), tuple(args.methods), args.workers,
                                        None if args.out is None else args.out / "headline")
    if args.out is not None and "exact" in res:
        args.out.mkdir(parents=True, exist_ok=True)
        _write_csv(args.out / "smc_vs_exact.csv", res["exact"]["rows"])
    if args.out is not None and "timing" in res:
        args.out.mkdir(parents=True, exist_ok=True)
        _write_csv(args.out / "neighbour_timing.csv", res["timing"])
    return res


if __name__ == "__main__":
    with one_blas_thread():
        main()
