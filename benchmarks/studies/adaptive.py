"""Adaptive evaluation vs the fixed design: items to a half-width, coverage at the stop, step time.

Usage::

    python -m benchsel.benchmarks.studies.adaptive --out results/adaptive            # ~5-8 min on 2 cores
    python -m benchsel.benchmarks.studies.adaptive --quick                           # one data set, one seed

For each data set, regime (``random``: random targets, the other models the sources; ``strongest``: the
strongest models held out, the weakest as sources, SPEC F9) and seed, and for every target:

* :class:`~benchsel.solvers.adaptive.AdaptiveEvaluation` on ``compress(S, K0)`` (``alpha = 0.1``,
  ``--half-width``, ``--batch``) with each of ``--designs`` (methods ``adaptive`` for the default ``"nested"``,
  ``adaptive-importance`` for ``"importance"``, ``adaptive-difference`` for ``"difference"``): items used,
  covered at the stop, absolute error;
* two lower bounds on design-based estimates (:func:`bound_items`, methods ``bound-difference`` and
  ``bound-neyman``): the items a difference estimate would need at the target's own residual variance, under a
  simple random sample and under these predictions' Neyman allocation;
* the fixed design, the default :func:`~benchsel.compress` at each ``k`` of ``--ks``: the mean half-width of
  its 90 % intervals over the targets; the items it needs for ``--half-width`` are the ``k`` where the
  cell's mean half-width crosses it (linear interpolation between grid points), and its coverage the
  one at the first grid ``k`` that reaches it;
* the peers' sequential evaluators (:mod:`benchsel.formulations.estimation.sequential`: BayesAME, RS-Mean,
  Bayes-AIPW) with their stopping rule at the same standard error (95 % width
  ``eps2 = 2 * 1.96 * half_width / z_0.95``, stability ``eps1 = half_width``): items used and the coverage
  of ``estimate +- z_0.95 sd`` at the stop.

The step part times ``observe`` + ``next_items`` of one evaluation on synthetic 0/1 scores of
``--step-sources`` sources x ``--step-items`` items. Writes ``targets.csv``, ``cells.csv``, ``regimes.csv``
(the ratios and coverages averaged over the data sets) and ``steps.csv`` under ``--out`` and prints the
summary tables. The response files' ``Y`` is read alone (the labels are not used).
"""
from __future__ import annotations

import argparse
import csv
import math
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel import AdaptiveEvaluation, compress
from benchsel.benchmarks._blas import init_worker, one_blas_thread
from benchsel.formulations.estimation.sequential import get_sequential
from benchsel.instances.files import read_npz
from benchsel.instances.splits import extrapolation_split, interpolation_split
from benchsel.solvers.adaptive import DESIGNS
from benchsel.solvers.adaptive_difference import TAU
from benchsel.solvers.adaptive_importance import V_FLOOR, ItemPredictor

from .._data import default_data_dir

DATASETS = ("benchmark_prediction/helm_lite_med_qa", "benchmark_prediction/openllm_v2_musr",
            "benchmark_prediction/helm_lite_mmlu")
PEERS = ("bayesame", "rs-mean", "bayes-aipw")
#: The study's method name of each design.
METHOD = {"nested": "adaptive", "importance": "adaptive-importance", "difference": "adaptive-difference"}
#: Items a design-based estimate would need at the target's own residual variance (:func:`bound_items`).
BOUNDS = ("bound-difference", "bound-neyman")
#: Items after the pilot the bounds' item predictions are fitted on.
BOUND_FIT = 80
KS = (40, 80, 120, 160, 200, 280)
Z90 = 1.6448536269514722


def _split(Y: np.ndarray, regime: str, n_targets: int, seed: int) -> Any:
    if regime == "random":
        return interpolation_split(Y, n_targets=n_targets, ref_fraction=1.0, seed=seed)
    return extrapolation_split(Y, n_targets=n_targets, ref_fraction=1.0, seed=seed)


def run_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    """One (data set, regime, seed): every target under the adaptive evaluation, the fixed design at
    every ``k`` and the peers. One row per (target, method[, k])."""
    Y = np.asarray(read_npz(job["path"], "a response file", ["Y"])["Y"], dtype=float)  # labels unused
    sp = _split(Y, job["regime"], job["targets"], job["seed"])
    S = Y[sp.references]
    H = job["half_width"]
    base = {"dataset": job["name"], "regime": job["regime"], "seed": job["seed"], "N": Y.shape[1]}
    rows: list[dict[str, Any]] = []
    c0 = compress(S, job["k0"], seed=job["seed"])
    for t in sp.targets.tolist():
        y = Y[t]
        truth = float(y.mean())
        for design in job["designs"]:
            ev = AdaptiveEvaluation(c0, alpha=0.1, half_width=H, batch=job["batch"], seed=job["seed"], design=design)
            while len(it := ev.next_items()):
                ev.observe(it, y[it])
            est, lo, hi = ev.estimate()
            rows.append({**base, "target": t, "method": METHOD[design], "k": "", "items": ev.n_items,
                         "half_width": (hi - lo) / 2, "covered": int(lo <= truth <= hi),
                         "abs_error": abs(est - truth), "state": ev.state})
        for m, n in zip(BOUNDS, bound_items(S, y, c0.items, H, job["seed"])):
            rows.append({**base, "target": t, "method": m, "k": "", "items": n, "half_width": H,
                         "covered": math.nan, "abs_error": math.nan, "state": ""})
        eps2 = 2 * 1.959963984540054 * H / Z90
        for name in job["peers"]:
            r = get_sequential(name)(S, y, eps1=H, eps2=eps2, seed=job["seed"])
            sd = (r.interval[1] - r.interval[0]) / (2 * 1.959963984540054)
            rows.append({**base, "target": t, "method": name, "k": "", "items": r.n, "half_width": Z90 * sd,
                         "covered": int(abs(r.estimate - truth) <= Z90 * sd), "abs_error": abs(r.estimate - truth),
                         "state": "stopped" if r.stopped else "ran out"})
    for k in job["ks"]:
        if k >= Y.shape[1]:
            continue
        c = compress(S, k, seed=job["seed"])
        X = Y[sp.targets][:, c.items]
        pred = np.asarray(c.predict(X), dtype=float)
        low, high = (np.asarray(v, dtype=float) for v in c.predict_interval(X, alpha=0.1))
        for j, t in enumerate(sp.targets.tolist()):
            truth = float(Y[t].mean())
            rows.append({**base, "target": t, "method": "fixed", "k": k, "items": k,
                         "half_width": float(high[j] - low[j]) / 2, "covered": int(low[j] <= truth <= high[j]),
                         "abs_error": abs(float(pred[j]) - truth), "state": ""})
    return rows


def bound_items(S: np.ndarray, y: np.ndarray, pilot: np.ndarray, H: float, seed: int) -> tuple[float, float]:
    """Items (pilot included) a design-based difference estimate needs for a 90 % half-width ``H`` if it knew the
    target's residual variance: ``(uniform, neyman)``.

    The item predictions are the ``"difference"`` design's predictor fitted on the pilot and ``BOUND_FIT`` random
    items of the remainder; the residuals are those of the other items. ``uniform``: a simple random sample of the
    remainder, ``n = n0 / (1 + n0 / M)``, ``n0 = (z M sd / (N H))^2``. ``neyman``: a ``pi ps`` sample with
    ``pi ~ sqrt(max(f (1 - f), V_FLOOR))`` (these predictions' Neyman allocation), variance
    ``sum r^2 (1 - pi) / pi``, the least ``n`` that reaches ``H``. Both ignore the cost of learning the
    predictions, the batches' overshoot and the variance's estimation: lower bounds on such designs' items.

    Parameters
    ----------
    S : ndarray, shape (S, N)
        Source scores (0/1 or [0, 1]).
    y : ndarray, shape (N,)
        The target's scores.
    pilot : ndarray of int, shape (k,)
    H : float
    seed : int
    """
    N = y.size
    rest = np.setdiff1d(np.arange(N), pilot)
    fit = np.random.default_rng(seed).permutation(rest)[:BOUND_FIT]
    seen = np.concatenate([pilot, fit])
    f = ItemPredictor(S, tau=TAU).predict(seen, y[seen])
    other = np.setdiff1d(rest, fit)
    r2 = (y[other] - f[other]) ** 2
    M = rest.size
    n0 = (Z90 * M / (N * H)) ** 2 * float(r2.mean())
    uniform = pilot.size + n0 / (1 + n0 / M)
    w = np.sqrt(np.maximum(f[other] * (1 - f[other]), V_FLOOR))

    def half(n: int) -> float:
        pi = np.minimum(1.0, n * w / w.sum())
        for _ in range(20):  # cap at 1, spread the rest
            full = pi >= 1.0
            if not full.any() or full.all():
                break
            pi = np.where(full, 1.0, np.minimum(1.0, (n - full.sum()) * w / w[~full].sum()))
        # other's residual total estimated from pi ps, scaled from |other| items to the remainder
        return Z90 * math.sqrt(float(np.sum(r2 * (1 - pi) / pi)) * (M / other.size) ** 2) / N

    lo, hi = 1, other.size
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if half(mid) <= H else (mid + 1, hi)
    neyman = pilot.size + lo * M / other.size
    return float(uniform), float(neyman)


def _fixed_items(rows: list[dict[str, Any]], H: float) -> tuple[float, float, int | None]:
    """(items where the mean half-width crosses ``H``, coverage at the first grid k reaching it, that k).

    Stopping each target where its own half-width reaches ``H`` cannot need fewer items on average than this
    unless the half-widths differ across targets: with half-widths ``c_t / sqrt(k)`` it needs
    ``mean(c^2) / mean(c)^2`` times as many (:func:`_spread`)."""
    ks = sorted({int(r["k"]) for r in rows})
    hw = [float(np.mean([r["half_width"] for r in rows if r["k"] == k])) for k in ks]
    for i, (k, h) in enumerate(zip(ks, hw)):
        if h <= H:
            cov = float(np.mean([r["covered"] for r in rows if r["k"] == k]))
            if i == 0:
                return float(k), cov, k
            k1, h1 = ks[i - 1], hw[i - 1]
            return k1 + (h1 - H) / (h1 - h) * (k - k1), cov, k
    return math.nan, math.nan, None


def _spread(rows: list[dict[str, Any]], k: int | None) -> float:
    """``mean(h^2) / mean(h)^2`` of the fixed design's half-widths over the targets at ``k``."""
    h = np.asarray([r["half_width"] for r in rows if r["k"] == k], dtype=float)
    return float(np.mean(h**2) / np.mean(h) ** 2) if h.size else math.nan


def summarise(rows: list[dict[str, Any]], H: float) -> list[dict[str, Any]]:
    """One row per (data set, regime, method): mean items, ratio to the fixed design's, coverage at the stop,
    mean absolute error and mean half-width, with the number of targets."""
    out = []
    cells = sorted({(r["dataset"], r["regime"]) for r in rows})
    for ds, regime in cells:
        cell = [r for r in rows if r["dataset"] == ds and r["regime"] == regime]
        fixed_n, fixed_cov, k_at = _fixed_items([r for r in cell if r["method"] == "fixed"], H)
        out.append({"dataset": ds, "regime": regime, "method": "fixed", "targets": "",
                    "items": fixed_n, "ratio": 1.0, "coverage": fixed_cov, "abs_error": math.nan,
                    "half_width": H, "note": f"coverage at k={k_at}; half-width spread "
                                            f"{_spread([r for r in cell if r['method'] == 'fixed'], k_at):.3f}"})
        for m in [*METHOD.values(), *BOUNDS, *PEERS]:
            rs = [r for r in cell if r["method"] == m]
            if not rs:
                continue
            n = float(np.mean([r["items"] for r in rs]))
            out.append({"dataset": ds, "regime": regime, "method": m, "targets": len(rs), "items": n,
                        "ratio": n / fixed_n if fixed_n == fixed_n else math.nan,
                        "coverage": float(np.mean([r["covered"] for r in rs])),
                        "abs_error": float(np.mean([r["abs_error"] for r in rs])),
                        "half_width": float(np.mean([r["half_width"] for r in rs])), "note": ""})
    return out


def by_regime(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (regime, method): the mean over the data sets of the items ratio and of the coverage at the
    stop (the goal's "on average ... in both regimes")."""
    out = []
    for regime in sorted({r["regime"] for r in summary}):
        for m in dict.fromkeys(r["method"] for r in summary if r["regime"] == regime):
            rs = [r for r in summary if r["regime"] == regime and r["method"] == m]
            out.append({"regime": regime, "method": m, "datasets": len(rs),
                        "ratio": float(np.mean([r["ratio"] for r in rs])),
                        "ratio_range": f"{min(r['ratio'] for r in rs):.2f}-{max(r['ratio'] for r in rs):.2f}",
                        "coverage": float(np.mean([r["coverage"] for r in rs]))})
    return out


def step_times(n_sources: int, n_items: int, batch: int, seed: int = 0, steps: int = 25,
               design: str = DESIGNS[0]) -> tuple[list[float], list[float]]:
    """Seconds of each ``observe`` + ``next_items`` of one evaluation on synthetic 0/1 2PL scores, and of the
    ``estimate()`` after it (the nested design fits the default estimator there, and at a look that may stop)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_sources + 1)
    p = 1 / (1 + np.exp(-rng.uniform(0.5, 2.5, n_items) * (theta[:, None] - rng.normal(size=n_items))))
    Y = (rng.random(p.shape) < p).astype(float)
    c = compress(Y[:-1], 20, seed=seed, selection_options={"draws": 1})
    ev = AdaptiveEvaluation(c, half_width=0.005, batch=batch, seed=seed, design=design)
    it = ev.next_items()
    out, est = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        ev.observe(it, Y[-1, it])
        it = ev.next_items()
        out.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ev.estimate()
        est.append(time.perf_counter() - t0)
        if not it.size:
            break
    return out, est


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "-" if not math.isfinite(v) else f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--regimes", nargs="+", default=["random", "strongest"], choices=["random", "strongest"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--targets", type=int, default=4, help="targets per split")
    ap.add_argument("--half-width", type=float, default=0.05)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--k0", type=int, default=10, help="items of the compression the evaluation starts from")
    ap.add_argument("--ks", type=int, nargs="+", default=list(KS), help="sizes of the fixed design")
    ap.add_argument("--peers", nargs="*", default=list(PEERS))
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    ap.add_argument("--step-sources", type=int, default=100)
    ap.add_argument("--step-items", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="one data set, one seed, no peers")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--data-dir", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.quick:
        a.datasets, a.seeds, a.peers = a.datasets[:1], 1, []
    data = a.data_dir or default_data_dir()
    if data is None:
        sys.exit("no data directory: pass --data-dir or set BENCHSEL_DATA")
    jobs = [{"path": str(data / "responses" / f"{d}.npz"), "name": d.split("/")[-1], "regime": r, "seed": s,
             "targets": a.targets, "half_width": a.half_width, "batch": a.batch, "k0": a.k0, "ks": a.ks,
             "peers": a.peers, "designs": a.designs} for d in a.datasets for r in a.regimes for s in range(a.seeds)]
    t0 = time.perf_counter()
    with one_blas_thread():
        if a.workers > 1:
            with mp.get_context("spawn").Pool(a.workers, initializer=init_worker) as pool:
                parts = pool.map(run_job, jobs, chunksize=1)
        else:
            parts = [run_job(j) for j in jobs]
        steps = {d: step_times(a.step_sources, a.step_items, a.batch * 2, design=d) for d in a.designs}
    rows = [r for p in parts for r in p]
    summary = summarise(rows, a.half_width)
    step = [{"design": d, "sources": a.step_sources, "items": a.step_items, "step": i + 1, "seconds": s,
             "estimate_seconds": e} for d, (ts, es) in steps.items() for i, (s, e) in enumerate(zip(ts, es))]
    regimes = by_regime(summary)
    print(_table(summary, ["dataset", "regime", "method", "targets", "items", "ratio", "coverage", "abs_error",
                           "half_width", "note"]))
    print()
    print(_table(regimes, ["regime", "method", "datasets", "ratio", "ratio_range", "coverage"]))
    for d, (ts, es) in steps.items():
        print(f"\nstep (observe + next_items), design {d!r}, {a.step_sources} sources x {a.step_items} items, "
              f"batch {a.batch * 2}: median {np.median(ts):.3f} s, max {np.max(ts):.3f} s over {len(ts)} steps; "
              f"estimate(): median {np.median(es):.3f} s, max {np.max(es):.3f} s")
    print(f"({time.perf_counter() - t0:.0f} s)")
    if a.out is not None:
        _write(a.out / "targets.csv", rows)
        _write(a.out / "cells.csv", summary)
        _write(a.out / "steps.csv", step)
        _write(a.out / "regimes.csv", regimes)
    return {"rows": rows, "summary": summary, "steps": steps}


if __name__ == "__main__":
    main()
