"""Multi-target BayesAME against single-target BayesAME on 10 low- or high-correlation targets (paper section 5.2).

Usage::

    python -m benchsel.benchmarks.studies.bayes_multi --out results/bayes_multi  # every job, then the report
    python -m benchsel.benchmarks.studies.bayes_multi --out results/bayes_multi --seeds 0 10  # jobs of seeds 0..9 only
    python -m benchsel.benchmarks.studies.bayes_multi --out results/bayes_multi --report-only  # tables, PNG
    python -m benchsel.benchmarks.studies.bayes_multi --out results/bayes_multi --datasets ifeval --regimes high \
        --seeds 0 4 --no-report                                       # one batch of jobs (e.g. under a lock)
    python -m benchsel.benchmarks.studies.bayes_multi --quick --out /tmp/bm  # 2 seeds, small coresets
    python -m benchsel.benchmarks.studies.bayes_multi --out results/bm_F5 --F 5   # multi-target refits every 5 rounds
    python -m benchsel.benchmarks.studies.bayes_multi --out results/bm_avg --strategy average  # marginalised gain
    python -m benchsel.benchmarks.studies.bayes_multi --out results/bm_flip --datasets ifeval \
        --regimes flip0 flip10 flip20                 # controls: noisy copies of one model as the 10 targets
    python -m benchsel.benchmarks.studies.bayes_multi --random-peer --regimes high low  # random peer only

Design (the paper's, section 5.2, with our data):

* datasets: ``openllm_v2_ifeval`` (binary, 448 models x 541 items) and
  ``newstest2021_ende_mqm`` (continuous MQM penalties of 17 MT systems x 527
  segments, mapped to ``[0, 1]`` by ``1 - penalty / 25``);
* targets: ``high`` — the 10 most correlated models (greedy: the most
  correlated pair, then the model of largest mean correlation with those
  chosen), the same for every seed; ``low`` — 10 models drawn at random per
  seed;
* controls (binary datasets only, not the paper's): ``flipP`` — 10 noisy copies
  of one real model (the first of the ``high`` set), each copy with every
  item's score flipped independently with probability ``P`` % (drawn per
  seed), so that the targets' correlation is set by ``P`` (``flip0``: ten
  identical targets); they show how correlated targets must be for the joint
  model to pay;
* references: 50 % of the remaining models, drawn per seed;
* per seed: one multi-target run over the 10 targets (round-robin, defaults;
  ``--strategy average`` for the paper's alternative)
  and one single-target run per target, all to ``--max-frac`` of the items
  (``stop=False``), estimates recorded at every coreset size;
* RMSE over (seed, target) at each coreset size ``n``; the multi-target curve
  starts at its initial block (10 % of the items on every target);
* item ratio: for the RMSE single-target reaches at ``n_s`` (10 %, 12.5 %,
  15 %, 17.5 %, 20 %, and 30 %, 40 %, 50 % of N where ``--max-frac`` reaches
  them), the smallest ``n_m`` at which multi-target is at
  least as accurate, reported as ``n_m / n_s`` (below 1: multi-target needs
  fewer items; it cannot go below ``init / n_s``, the multi-target curve
  starting at its initial block), with a 95 % interval from a bootstrap over
  seeds (1000 resamples);
* RMSE ratio multi / single at equal ``n``, with the same bootstrap;
* the peer a user would otherwise pick: the mean of a uniform random sample
  of ``n`` items per target, its RMSE exact (the finite-population variance
  of the targets' scores, :func:`random_mean_rmse`), on the same targets
  (rebuilt from the data and each job's seed, and checked against the
  targets and truth stored in the job);
* the stopping rule (``eps1 = 0.005``, ``W = 30``, ``eps2`` in 0.01, 0.02,
  0.03) on every trace: mean coreset size and RMSE at the stop.

Jobs are written to ``<out>/jobs/<dataset>-<regime>-<seed>.npz`` and skipped
when present, so a long study can be run in several commands. BLAS runs on
one thread (set before numpy is imported).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.benchmarks._blas import one_blas_thread
from benchsel.formulations.bayes.evaluate import bayesame_evaluate, stopping_point
from benchsel.formulations.bayes.multi import STRATEGIES, bayesame_multi_evaluate
from benchsel.instances.responses import load_responses

from .._data import default_data_dir
from .bayes import _write_csv

DATASETS = {
    "ifeval": ("benchmark_prediction/openllm_v2_ifeval.npz", "binary"),
    "mqm-ende": ("wmt_mqm/newstest2021_ende_mqm.npz", "continuous"),
}
REGIMES = ("high", "low")
#: Control regimes ``flipP`` (binary datasets): noisy copies of one model, each item flipped with probability P %.
FLIP_PREFIX = "flip"
N_TARGETS = 10
EPS1, W, EPS2 = 0.005, 30, (0.01, 0.02, 0.03)
#: The multi-target refit interval in rounds (the evaluator's default; jobs written before ``--F`` used it).
F_DEFAULT = 50
#: The multi-target item choice (the evaluator's default, the paper's; jobs written before ``--strategy`` used it).
STRATEGY_DEFAULT = STRATEGIES[0]
#: Coreset sizes (share of N) the report compares at; those beyond a job's cap (``--max-frac``) are left out.
LEVELS = (0.1, 0.125, 0.15, 0.175, 0.2, 0.3, 0.4, 0.5)


def scores(name: str, data_dir: Path) -> np.ndarray:
    """The dataset's (models, items) matrix in the study's units (binary as is; MQM as ``1 - penalty / 25``)."""
    rel, kind = DATASETS[name]
    Y = load_responses(data_dir / "responses" / rel).matrix(0)  # oriented: higher is better
    if kind == "continuous":
        Y = 1.0 + Y / 25.0  # -penalty in [-25, 0] -> [0, 1]
    return Y


def most_correlated(Y: np.ndarray, k: int = N_TARGETS) -> np.ndarray:
    """``k`` models of high mutual correlation: the most correlated pair, then greedily the largest mean correlation."""
    C = np.corrcoef(Y)
    C = np.where(np.isfinite(C), C, -1.0)
    np.fill_diagonal(C, -np.inf)
    i, j = np.unravel_index(int(np.argmax(C)), C.shape)
    chosen = [int(i), int(j)]
    while len(chosen) < k:
        rest = np.setdiff1d(np.arange(C.shape[0]), chosen)
        chosen.append(int(rest[np.argmax(C[np.ix_(rest, np.asarray(chosen))].mean(axis=1))]))
    return np.asarray(chosen, dtype=np.int64)


def flip_share(regime: str) -> float | None:
    """The flip probability of a control regime ``flipP`` (``P`` in percent, 0-50), None for the paper's regimes.

    Raises
    ------
    ValueError
        ``regime`` is neither ``high``, ``low`` nor ``flipP`` with an integer ``P`` in 0..50.
    """
    if regime in REGIMES:
        return None
    digits = regime[len(FLIP_PREFIX):]
    if not regime.startswith(FLIP_PREFIX) or not digits.isdigit() or int(digits) > 50:
        raise ValueError(f"regime: expected 'high', 'low' or '{FLIP_PREFIX}P' with P an integer percent in "
                         f"0..50, got {regime!r}")
    return int(digits) / 100.0


def split(Y: np.ndarray, regime: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(targets, references) of one seed (a control regime's targets: the one model its copies are made of)."""
    rng = np.random.default_rng([seed, 17])
    M = Y.shape[0]
    if flip_share(regime) is not None:
        targets = most_correlated(Y)[:1]
    else:
        targets = most_correlated(Y) if regime == "high" else np.sort(rng.choice(M, N_TARGETS, replace=False))
    pool = np.setdiff1d(np.arange(M), targets)
    refs = np.sort(rng.choice(pool, max(1, round(0.5 * pool.size)), replace=False))
    return targets, refs


def target_scores(Y: np.ndarray, regime: str, targets: np.ndarray, seed: int) -> np.ndarray:
    """The targets' scores, shape (10, N): the models' own, or for ``flipP`` noisy copies of ``targets[0]``.

    Raises
    ------
    ValueError
        A control regime on scores that are not binary.
    """
    p = flip_share(regime)
    if p is None:
        return Y[targets]
    base = Y[targets[0]]
    if not np.all((base == 0) | (base == 1)):
        raise ValueError(f"regime: {regime!r} flips binary scores; this dataset's scores are not binary")
    flips = np.random.default_rng([seed, 23]).random((N_TARGETS, base.size)) < p
    return np.where(flips, 1.0 - base[None, :], base[None, :])


def mean_pairwise_corr(Y: np.ndarray, rows: np.ndarray) -> float:
    C = np.corrcoef(Y[rows])
    return float(np.nanmean(C[np.triu_indices(rows.size, 1)]))


def run_job(name: str, regime: str, seed: int, data_dir: Path, max_frac: float, out: Path, F: int = F_DEFAULT,
            strategy: str = STRATEGY_DEFAULT) -> Path:
    """One seed of one dataset and regime (the multi-target run refits every ``F`` rounds and chooses items by
    ``strategy``); the job's file."""
    path = _job_path(out, name, regime, seed)
    if path.exists():
        with np.load(path) as z:
            done_F = int(z["F"]) if "F" in z else F_DEFAULT
            done_strategy = str(z["strategy"]) if "strategy" in z else STRATEGY_DEFAULT
        if done_F != F:
            raise SystemExit(f"error: {path} was run with F = {done_F}, not {F}; use another --out")
        if done_strategy != strategy:
            raise SystemExit(f"error: {path} was run with strategy {done_strategy!r}, not {strategy!r}; "
                             "use another --out")
        return path
    Y = scores(name, data_dir)
    targets, refs = split(Y, regime, seed)
    T = target_scores(Y, regime, targets, seed)
    N = Y.shape[1]
    mx = round(max_frac * N)
    t0 = time.perf_counter()
    multi = bayesame_multi_evaluate(Y[refs], T, max_items=mx, stop=False, seed=seed, F=F, strategy=strategy)
    t_multi = time.perf_counter() - t0
    t0 = time.perf_counter()
    singles = [bayesame_evaluate(Y[refs], T[i], max_items=mx, stop=False, seed=1000 * seed + i)
               for i in range(T.shape[0])]
    t_single = time.perf_counter() - t0
    init = multi.info["init"]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path, truth=T.mean(axis=1), targets=targets, refs=refs, init=init, N=N,
        multi_n=np.array([r.trace["n"] for r in multi]), multi_est=np.array([r.trace["estimate"] for r in multi]),
        multi_width=np.array([r.trace["width"] for r in multi]),
        single_est=np.array([r.trace["estimate"] for r in singles]),
        single_width=np.array([r.trace["width"] for r in singles]),
        corr=mean_pairwise_corr(T, np.arange(T.shape[0])), regime_unique=multi.info["regime"] == "unique",
        active=multi.info["active"], n_buckets=multi.info["n_buckets"], seconds=np.array([t_multi, t_single]),
        sigma2=multi.info["sigma2"], F=F, strategy=strategy,
    )
    return path


# ------------------------------------------------------------------ report
def _rmse(err: np.ndarray) -> np.ndarray:
    """RMSE over the first axes (seeds, targets) of ``err`` (..., n)."""
    return np.sqrt(np.mean(err.reshape(-1, err.shape[-1]) ** 2, axis=0))


def random_mean_rmse(var: np.ndarray, N: int, n: int) -> float:
    """RMSE of the mean of ``n`` of ``N`` items drawn uniformly without replacement, over targets.

    Parameters
    ----------
    var : ndarray, shape (n_targets,)
        Each target's population variance of its item scores (``ddof = 0``).
    N, n : int
        Items in the benchmark and in the sample, ``1 <= n <= N``.

    Returns
    -------
    float
        ``sqrt(mean_t var_t (N - n) / ((N - 1) n))`` (0 when ``N = 1``), the exact expectation.
    """
    if N <= 1:
        return 0.0
    return float(np.sqrt(np.mean(np.asarray(var, dtype=float) * (N - n) / ((N - 1) * n))))


def _job_path(out: Path, name: str, regime: str, seed: int) -> Path:
    """The file of one job (dataset, regime, seed) under ``out``; :func:`_job_seed` reads the seed back."""
    return out / "jobs" / f"{name}-{regime}-{seed}.npz"


def _job_seed(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _rebuilt_targets(Y: np.ndarray, regime: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(targets, their scores of shape (10, N)) of one seed, rebuilt from ``Y`` as :func:`run_job` builds them."""
    targets = split(Y, regime, seed)[0]
    return targets, target_scores(Y, regime, targets, seed)


def _target_var(Y: np.ndarray, regime: str, seeds: list[int]) -> np.ndarray:
    """The targets' score variances (``ddof = 0``) of each seed, rebuilt from ``Y``, shape (seeds, 10)."""
    return np.stack([_rebuilt_targets(Y, regime, s)[1].var(axis=1) for s in seeds])


def _checked_target_var(Y: np.ndarray, regime: str, files: list[Path], jobs: list[dict[str, Any]]) -> np.ndarray:
    """:func:`_target_var` of the jobs' seeds (read from ``files``), each checked against its job.

    Parameters
    ----------
    Y : ndarray, shape (models, N)
        The dataset's scores (:func:`scores`).
    regime : str
        ``high``, ``low`` or ``flipP``.
    files, jobs : list
        The job files and their contents, in the same order; a job's ``targets`` (model rows) and ``truth``
        (mean scores, shape (10,)) must be the ones rebuilt from ``Y`` and its seed, so that the random-sample
        peer is never computed for other targets than the job's.

    Returns
    -------
    ndarray, shape (jobs, 10)

    Raises
    ------
    ValueError
        A job's stored targets or truth differ from the rebuilt ones (the data or the target rule changed
        after the job ran).
    """
    out = []
    for path, job in zip(files, jobs):
        s = _job_seed(path)
        targets, T = _rebuilt_targets(Y, regime, s)
        stored_t, stored_truth = np.asarray(job["targets"]), np.asarray(job["truth"], dtype=float)
        if not np.array_equal(stored_t, targets) or stored_truth.shape != (T.shape[0],) \
                or not np.allclose(stored_truth, T.mean(axis=1), rtol=0.0, atol=1e-12):
            raise ValueError(
                f"{path}: its targets (models {stored_t.tolist()}, mean scores {np.round(stored_truth, 4).tolist()}) "
                f"are not the ones rebuilt from the data and seed {s} (models {targets.tolist()}, mean scores "
                f"{np.round(T.mean(axis=1), 4).tolist()}); the data or the target rule changed after the job ran: "
                "rerun it, or report without the data (no random-sample column)")
        out.append(T.var(axis=1))
    return np.stack(out)


def random_peer(names: list[str], regimes: list[str], seeds: list[int], data_dir: Path) -> list[str]:
    """The random-sample peer alone (no jobs needed): its RMSE at the study's levels on the seeds' targets.

    Returns
    -------
    list of str
        One line per dataset and regime: ``n`` per target and the RMSE at each of :data:`LEVELS`.
    """
    lines = []
    for name in names:
        Y = scores(name, data_dir)
        N = Y.shape[1]
        for regime in regimes:
            var = _target_var(Y, regime, seeds).ravel()
            cells = ", ".join(f"{round(f * N)}: {random_mean_rmse(var, N, round(f * N)):.4f}" for f in LEVELS)
            lines.append(f"{name}/{regime} ({len(seeds)} seeds) RMSE random sample at n = {cells}")
    return lines


def _curves(jobs: list[dict[str, Any]], idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RMSE curves over the jobs ``idx``: single (n = 1..mx) and multi (n = init..mx)."""
    es = np.stack([jobs[i]["single_est"] - jobs[i]["truth"][:, None] for i in idx])
    em = np.stack([jobs[i]["multi_est"] - jobs[i]["truth"][:, None] for i in idx])
    return _rmse(es), _rmse(em)


def _ratio(rs: np.ndarray, rm: np.ndarray, init: int, n_s: int) -> float:
    """Smallest n_m >= init with rm <= rs[n_s], over n_s (inf when not reached)."""
    target = rs[n_s - 1]
    ok = np.flatnonzero(rm <= target)
    return float((init + ok[0]) / n_s) if ok.size else float("inf")


def _interval(values: np.ndarray) -> tuple[float, float]:
    """95 % percentile interval of bootstrap values that may be ``inf`` (never reached): ``inf`` stays ``inf``."""
    big = np.finfo(float).max
    lo, hi = np.percentile(np.where(np.isinf(values), big, values), [2.5, 97.5], method="nearest")
    return (math.inf if lo >= big else float(lo)), (math.inf if hi >= big else float(hi))


def report(out: Path, names: list[str], regimes: list[str], n_boot: int = 1000, quiet: bool = False,
           data_dir: Path | None = None) -> dict[str, Any]:
    """Aggregate the jobs under ``out``: tables, CSV files and the PNG (``data_dir``: the response data, for
    the random-sample peer's RMSE; without it that column is left out)."""
    summary: dict[str, Any] = {}
    rows, curve_rows, stop_rows = [], [], []
    for name in names:
        Y = None if data_dir is None else scores(name, data_dir)
        for regime in regimes:
            files = sorted((out / "jobs").glob(f"{name}-{regime}-*.npz"))
            if not files:
                continue
            jobs = [dict(np.load(f)) for f in files]
            tvar = None if Y is None else _checked_target_var(Y, regime, files, jobs)
            N = int(jobs[0]["N"])
            init = int(jobs[0]["init"])
            mx = jobs[0]["single_est"].shape[1]
            rs, rm = _curves(jobs, np.arange(len(jobs)))
            rng = np.random.default_rng(0)
            boots = [_curves(jobs, rng.integers(0, len(jobs), len(jobs))) for _ in range(n_boot)]
            key = f"{name}/{regime}"
            entry: dict[str, Any] = {"seeds": len(jobs), "N": N, "init": init, "max_items": mx,
                                     "corr": float(np.mean([j["corr"] for j in jobs])),
                                     "unique": bool(jobs[0]["regime_unique"]), "active": bool(jobs[0]["active"]),
                                     "rs": rs, "rm": rm, "levels": {}}
            for frac in LEVELS:
                n_s = round(frac * N)
                if n_s > mx or n_s < init:
                    continue
                ratio = _ratio(rs, rm, init, n_s)
                br = np.array([_ratio(a, b, init, n_s) for a, b in boots])
                rr = float(rm[n_s - init] / rs[n_s - 1])
                brr = np.array([b[n_s - init] / a[n_s - 1] for a, b in boots])
                lo, hi = _interval(br)
                rlo, rhi = _interval(brr)
                rnd = None if tvar is None else random_mean_rmse(tvar.ravel(), N, n_s)
                entry["levels"][frac] = {"n_single": n_s, "rmse_single": float(rs[n_s - 1]), "rmse_random": rnd,
                                         "rmse_multi": float(rm[n_s - init]), "item_ratio": ratio,
                                         "item_ratio_ci": (float(lo), float(hi)), "rmse_ratio": rr,
                                         "rmse_ratio_ci": (float(rlo), float(rhi))}
                rows.append({"dataset": name, "regime": regime, "seeds": len(jobs), "n_frac": frac, "n_single": n_s,
                             "rmse_single": rs[n_s - 1], "rmse_multi_same_n": rm[n_s - init],
                             "rmse_random_sample": "" if rnd is None else rnd,
                             "rmse_ratio": rr, "rmse_ratio_lo": rlo, "rmse_ratio_hi": rhi,
                             "item_ratio": ratio, "item_ratio_lo": lo, "item_ratio_hi": hi})
            for n in range(1, mx + 1):
                curve_rows.append({"dataset": name, "regime": regime, "n": n, "rmse_single": rs[n - 1],
                                   "rmse_multi": rm[n - init] if n >= init else ""})
            for method, est, wid, start in (("single", "single_est", "single_width", 1),
                                            ("multi", "multi_est", "multi_width", init)):
                for e2 in EPS2:
                    ns, errs = [], []
                    for j in jobs:
                        for t in range(j[est].shape[0]):
                            k = stopping_point(j[est][t], j[wid][t], EPS1, e2, W)
                            k = j[est].shape[1] if k is None else k
                            ns.append(start + k - 1)
                            errs.append(j[est][t, k - 1] - j["truth"][t])
                    stop_rows.append({"dataset": name, "regime": regime, "method": method, "eps2": e2,
                                      "mean_n": float(np.mean(ns)), "rmse": float(np.sqrt(np.mean(np.square(errs)))),
                                      "stopped_before_max": float(np.mean(np.array(ns) < mx))})
            summary[key] = entry
    if out is not None and rows:
        _write_csv(out / "multi_vs_single.csv", rows)
        _write_csv(out / "rmse_curves.csv", curve_rows)
        _write_csv(out / "stopping.csv", stop_rows)
        _plot(summary, out / "multi_vs_single.png")
    if not quiet:
        for key, e in summary.items():
            print(f"\n== {key}: {e['seeds']} seeds x 10 targets, N = {e['N']}, initial block {e['init']} items, "
                  f"mean target correlation {e['corr']:.2f}, {'unique' if e['unique'] else 'non-unique'} buckets "
                  f"({'active' if e['active'] else 'random'} selection)")
            print(f"  {'n (share)':>12} {'RMSE single':>12} {'RMSE multi':>11} {'multi/single [95% CI]':>24} "
                  f"{'items multi/single [95% CI]':>30} {'RMSE random sample':>19}")
            for frac, lv in e["levels"].items():
                ci = lv["rmse_ratio_ci"]
                ic = lv["item_ratio_ci"]
                print(f"  {lv['n_single']:>5} ({frac:>5.1%}) {lv['rmse_single']:>12.4f} {lv['rmse_multi']:>11.4f} "
                      f"{lv['rmse_ratio']:>8.2f} [{ci[0]:.2f}, {ci[1]:.2f}] "
                      f"{lv['item_ratio']:>12.2f} [{ic[0]:.2f}, {ic[1]:.2f}] {_fmt_rmse(lv['rmse_random']):>19}")
        if stop_rows:
            print("\n  stopping rule (eps1 = 0.005, W = 30): mean coreset size and RMSE at the stop")
            for r in stop_rows:
                print(f"  {r['dataset']:9} {r['regime']:6} {r['method']:6} eps2={r['eps2']}: n = {r['mean_n']:.1f}, "
                      f"RMSE {r['rmse']:.4f}, stopped before the cap {r['stopped_before_max']:.0%}")
    return summary


def _fmt_rmse(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _fmt_ratio(x: float) -> str:
    return "not reached" if math.isinf(x) else f"{x:.2f}"


def markdown(summary: dict[str, Any]) -> list[str]:
    """The study's table (one row per dataset / regime and coreset level) as Markdown lines."""
    lines = ["| dataset / regime | seeds | n per target (share of N) | RMSE single | RMSE multi | "
             "multi / single [95 % CI] | items multi / single [95 % CI] | RMSE random sample |",
             "|---|---|---|---|---|---|---|---|"]
    for key, e in summary.items():
        first = True
        for frac, lv in e["levels"].items():
            head = f"{key} (mean corr {e['corr']:.2f}) | {e['seeds']}" if first else " | "
            first = False
            rc, ic = lv["rmse_ratio_ci"], lv["item_ratio_ci"]
            lines.append(f"| {head} | {lv['n_single']} ({frac:.1%}) | {lv['rmse_single']:.4f} | "
                         f"{lv['rmse_multi']:.4f} | {lv['rmse_ratio']:.2f} [{rc[0]:.2f}, {rc[1]:.2f}] | "
                         f"{_fmt_ratio(lv['item_ratio'])} [{_fmt_ratio(ic[0])}, {_fmt_ratio(ic[1])}] | "
                         f"{_fmt_rmse(lv['rmse_random'])} |")
    return lines


def _plot(summary: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(summary)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.6 * len(keys), 3.8), squeeze=False)
    for ax, key in zip(axes[0], keys):
        e = summary[key]
        N, init = e["N"], e["init"]
        x = 100.0 * np.arange(1, e["rs"].size + 1) / N
        ax.plot(x, 100 * e["rs"], label="single-target")
        ax.plot(100.0 * np.arange(init, init + e["rm"].size) / N, 100 * e["rm"], label="multi-target")
        ax.set_yscale("log")
        ax.set_xlim(5, x[-1])
        ax.set_xlabel("coreset size per target (% of N)")
        ax.set_ylabel("RMSE x 100")
        ax.set_title(f"{key} (corr {e['corr']:.2f}, {e['seeds']} seeds)", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.bayes_multi",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="results folder (jobs, CSV files, PNG); required "
                    "except with --random-peer")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--regimes", nargs="+", default=list(REGIMES), metavar="REGIME",
                    help="high, low (default: both), or controls flipP (P in 0..50: noisy copies of one model "
                         "as the targets, each item flipped with probability P %%; binary datasets only)")
    ap.add_argument("--seeds", nargs=2, type=int, default=None, metavar=("FIRST", "STOP"),
                    help="run the seeds FIRST..STOP-1 (default 0..19; quick 0..1)")
    ap.add_argument("--max-frac", type=float, default=None, help="coreset cap per target, share of N (default 0.2)")
    ap.add_argument("--F", type=int, default=F_DEFAULT, metavar="ROUNDS",
                    help="multi-target runs refit their hyper-parameters every ROUNDS rounds (default 50, the "
                         "paper's F read as items per target; 5 reads it as evaluations over the 10 targets)")
    ap.add_argument("--strategy", default=STRATEGY_DEFAULT, choices=STRATEGIES,
                    help="multi-target item choice: round-robin (default, the paper's: each target in turn takes "
                         "the item of largest gain for its own score) or average (the item of largest gain "
                         "averaged over the targets, evaluated on one target that has not seen it)")
    ap.add_argument("--quick", action="store_true", help="2 seeds, coresets to 12 %% of N")
    ap.add_argument("--report-only", action="store_true", help="aggregate the jobs present, run none")
    ap.add_argument("--no-report", action="store_true", help="run the jobs only (aggregate later with --report-only)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    ap.add_argument("--random-peer", action="store_true",
                    help="print only the random-sample peer's RMSE on the seeds' targets (no jobs run or read)")
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.out is None and not args.random_peer:
        ap.error("--out: expected a results folder (required unless --random-peer)")
    if args.F < 1:
        ap.error(f"--F: expected a positive number of rounds, got {args.F}")
    for regime in args.regimes:
        try:
            p = flip_share(regime)
        except ValueError as e:
            ap.error(f"--regimes: {e}")
        continuous = [n for n in args.datasets if DATASETS[n][1] != "binary"]
        if p is not None and continuous:
            ap.error(f"--regimes: {regime!r} flips binary scores; drop the continuous dataset(s) "
                     f"{', '.join(continuous)} (--datasets)")
    data = args.data_dir or default_data_dir()
    if data is None or not (data / "responses").is_dir():
        print("error: response data not found (expected <data>/responses); pass --data-dir", file=sys.stderr)
        return 2
    first, stop = args.seeds or ((0, 2) if args.quick else (0, 20))
    max_frac = args.max_frac or (0.12 if args.quick else 0.2)
    if args.random_peer:
        print("\n".join(random_peer(args.datasets, args.regimes, list(range(first, stop)), data)))
        return 0
    if not args.report_only:
        for name in args.datasets:
            for regime in args.regimes:
                for seed in range(first, stop):
                    t0 = time.perf_counter()
                    run_job(name, regime, seed, data, max_frac, args.out, F=args.F, strategy=args.strategy)
                    print(f"  job {name}-{regime}-{seed}: {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                          flush=True)
    if args.no_report:
        return 0
    try:
        summary = report(args.out, args.datasets, args.regimes, n_boot=200 if args.quick else 1000, data_dir=data)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.markdown:
        print("\n" + "\n".join(markdown(summary)))
    return 0


if __name__ == "__main__":
    with one_blas_thread():
        sys.exit(main())
