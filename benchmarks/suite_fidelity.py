"""Suites on real data: the suite's and each task's estimates of held-out models, and their intervals.

Three real suites from ``<data-dir>/responses/benchmark_prediction`` (binary correctness):

* ``openllm_v2`` -- the Open LLM Leaderboard v2's IFEval, MATH (lvl 5) and MuSR joined on their common
  models (first row of a repeated model name);
* ``helm_lite`` -- HELM Lite's OpenBookQA, GSM8K, MATH, MedQA and MMLU (83 models, rows aligned across
  the files);
* ``glue`` -- GLUE's MRPC, RTE and SST-2 (87 model-prompt pairs).

The truth of a model is the suite's macro average (the mean of its task scores) and each task score.
Regimes: ``interpolation`` (a random 25 % of the models are the targets, seeded) and ``extrapolation``
(the weakest 50 % by macro score are the sources, the strongest 30 % the targets). Methods:

* ``pooled`` -- :func:`benchsel.compress` without tasks (the pooled default, as before suites);
* ``floor`` -- a random sample inside each task, allocated in proportion to the tasks' sizes (at least 2
  each), plain means (t-intervals with the finite-population correction);
* ``suite`` -- :func:`benchsel.compress` with ``tasks=`` (the default allocation and estimator).

Variants of ``suite`` (``--methods``): ``suite-neyman`` and ``suite-proportional`` (other allocations),
``suite-borrow`` (borrowing strength across tasks), ``suite-unbalanced`` (one plain stratified draw per
task instead of the best-balanced of 1000). For every ``suite`` method the rows also keep the coverage
of each task's design-based (model-assisted) interval alone.

Run::

    python -m benchsel.benchmarks.suite_fidelity --out results/suites --seeds 5 --jobs 2

Rows go to ``suite_fidelity.jsonl`` (one per suite, regime, k, seed and method; rerunning skips what is
there); the summary table (means over seeds with 95 % t-intervals) is printed and written as
``suite_fidelity.md``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.suite import PROPORTIONAL_SHARE, allocate
from benchsel.solvers.compression import DEFAULT_ESTIMATOR, DEFAULT_SELECTION, compress
from benchsel.solvers.selections import get_selection
from benchsel.solvers.suite_selection import select_suite, suite_spec

from ._data import default_data_dir
from .fidelity import _t975, split_models

__all__ = ["BAND", "SUITES", "in_band", "load_suite", "main", "run_cell", "seed_interval", "summarise",
           "wilson_interval"]

SUITES: dict[str, dict[str, str]] = {
    "openllm_v2": {"ifeval": "openllm_v2_ifeval", "math": "openllm_v2_math", "musr": "openllm_v2_musr"},
    "helm_lite": {t: f"helm_lite_{t}" for t in ("commonsense", "gsm", "math", "med_qa", "mmlu")},
    "glue": {t: f"glue_{t}" for t in ("mrpc", "rte", "sst2")},
}
REGIMES = {"interpolation": "interpolation", "extrapolation": "paper-extrapolation"}
KS = (30, 60, 150)
METHODS = ("pooled", "floor", "suite")
#: Allocations other than the default's 75 % proportional floor (``--methods``): pure Neyman, pure proportional.
SHARES = {"suite-neyman": 0.0, "suite-proportional": 1.0}
#: The suite estimator borrowing strength across tasks (``borrow=True``; ``--methods suite-borrow``).
BORROW = "suite-borrow"
#: The default suite on one plain stratified draw per task instead of the best-balanced of 1000
#: (``selection_options={"draws": 1}``; ``--methods suite-unbalanced``).
UNBALANCED = "suite-unbalanced"
ALPHA = 0.1
#: the goal's band for the coverage of the 90 % intervals (issue 41)
BAND = (0.85, 0.95)
JSONL = "suite_fidelity.jsonl"


def load_suite(data_dir: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A suite's binary matrix, shape (models, items), and each item's task, shape (items,)."""
    if name not in SUITES:
        raise InvalidInputError(f"suites: unknown suite {name!r}; suites: {', '.join(SUITES)}")
    blocks, tasks, models = [], [], []
    for task, file in SUITES[name].items():
        p = Path(data_dir) / "responses" / "benchmark_prediction" / f"{file}.npz"
        if not p.is_file():
            raise InvalidInputError(f"data-dir: {str(p)!r} is missing (suite {name!r})")
        with np.load(p, allow_pickle=False) as z:
            blocks.append(np.asarray(z["Y"], dtype=float))
            models.append(z["models"].tolist() if "models" in z.files else None)
        tasks += [task] * blocks[-1].shape[1]
    named = [ms for ms in models if ms is not None]
    if len(named) == len(models):  # join on the common model names (first row of a repeated name)
        firsts = [{m: i for i, m in reversed(list(enumerate(ms)))} for ms in named]
        common = [m for m in named[0] if all(m in f for f in firsts)]
        common = list(dict.fromkeys(common))
        blocks = [b[[f[m] for m in common]] for b, f in zip(blocks, firsts)]
    return np.hstack(blocks), np.asarray(tasks)


def _truth(Y: np.ndarray, codes: np.ndarray, T: int) -> np.ndarray:
    return np.stack([Y[:, codes == t].mean(axis=1) for t in range(T)], axis=1)


def _floor(Ys: np.ndarray, Yt: np.ndarray, codes: np.ndarray, T: int, k: int, seed: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-task random samples in proportion to the tasks' sizes, plain means: (estimates, lows, highs) of
    the tasks, each (targets, T); the suite's are their macro averages."""
    from scipy.stats import t as student

    N = np.bincount(codes, minlength=T)
    # Neyman with sigma_t proportional to N_t and equal weights is the proportional allocation
    kt = allocate(N, (N / N.sum()) ** 2, k)
    rng = np.random.default_rng(seed)
    est = np.empty((Yt.shape[0], T))
    half = np.empty_like(est)
    for j in range(T):
        items = rng.choice(np.flatnonzero(codes == j), int(kt[j]), replace=False)
        y = Yt[:, items]
        est[:, j] = y.mean(axis=1)
        se = np.sqrt(y.var(axis=1, ddof=1) / kt[j] * (1 - kt[j] / N[j]))
        half[:, j] = student.ppf(1 - ALPHA / 2, kt[j] - 1) * se
    return est, est - half, est + half


def _suite_interval(est: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T = est.shape[1]
    s = est.mean(axis=1)
    return (s, s - np.sqrt(np.square(est - lo).sum(axis=1)) / T, s + np.sqrt(np.square(hi - est).sum(axis=1)) / T)


def _suite_fit(Ys: np.ndarray, k: int, seed: int, tasks: np.ndarray, share: float, borrow: bool = False,
               options: Mapping[str, Any] | None = None, estimator_options: Mapping[str, Any] | None = None) -> Any:
    """What ``compress(Ys, k, seed=seed, tasks=tasks)`` fits (default selection and estimator), with the
    allocation's proportional ``share``, the suite estimator's ``borrow``, the selection's ``options`` and the
    tasks' estimator's ``estimator_options`` as given."""
    spec = suite_spec(tasks, Ys.shape[1], None, None)
    sel = select_suite(get_selection(DEFAULT_SELECTION), Ys, k, spec, seed=seed, time_limit=None, verbose=False,
                       options=dict(options or {}), share=share)
    est = get_estimator("suite", tasks=spec.labels, estimator=DEFAULT_ESTIMATOR, weights=sel.weights, borrow=borrow,
                        estimator_options=dict(estimator_options) if estimator_options else None)
    return est.fit(Ys, sel.items)


def _task_routes(est: Any, X: np.ndarray) -> np.ndarray:
    """The estimate each task of a fitted suite estimator gives each target (the inner estimator's route;
    ``"exact"`` for a fully selected task, ``"borrow"`` for a borrowed one); shape (targets, T)."""
    out = np.empty((X.shape[0], len(est.tasks_)), dtype=object)
    for j, (m, cols) in enumerate(zip(est.members_, est.columns_)):
        if m is None:
            out[:, j] = "exact"
        elif hasattr(m, "route"):
            out[:, j] = m.route(X[:, cols])
        else:
            out[:, j] = "borrow"
    return out


def _design_hits(est: Any, X: np.ndarray, truth: np.ndarray) -> dict[int, np.ndarray]:
    """Per task (column index), whether each target's design-based (model-assisted) ``1 - ALPHA`` t-interval
    alone covers its true task score, shape (targets,); tasks without a design-based estimate are left out."""
    from scipy.stats import t as student

    out: dict[int, np.ndarray] = {}
    for j, (m, cols) in enumerate(zip(est.members_, est.columns_)):
        d = m._design_se(X[:, cols]) if m is not None and hasattr(m, "_design_se") else None
        if d is None:
            continue
        e, se, dof = d
        half = student.ppf(1 - ALPHA / 2, dof) * se
        out[j] = (e - half <= truth[:, j] + 1e-12) & (truth[:, j] <= e + half + 1e-12)
    return out


def run_cell(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows of one (suite, regime, k, seed): one per method."""
    Y, tasks = load_suite(Path(cell["data_dir"]), cell["suite"])
    names = list(dict.fromkeys(tasks.tolist()))
    codes = np.array([names.index(t) for t in tasks])
    T = len(names)
    truth = _truth(Y, codes, T)
    macro = truth.mean(axis=1)
    seed, k = int(cell["seed"]), int(cell["k"])
    src, tgt = split_models(macro[:, None], REGIMES[cell["regime"]], seed)
    Ys, Yt = Y[src], Y[tgt]
    tt, mt = truth[tgt], macro[tgt]
    rows = []
    for method in cell.get("methods", METHODS):
        task_est = task_lo = task_hi = routes = None
        if method == "pooled":
            c = compress(Ys, k, seed=seed)
            s, slo, shi = c.estimator.predict_with_interval(Yt[:, c.items], alpha=ALPHA)
        elif method == "floor":
            task_est, task_lo, task_hi = _floor(Ys, Yt, codes, T, k, seed)
            s, slo, shi = _suite_interval(task_est, task_lo, task_hi)
        else:
            est = _suite_fit(Ys, k, seed, tasks, SHARES.get(method, PROPORTIONAL_SHARE), borrow=method == BORROW,
                             options={"draws": 1} if method == UNBALANCED else None)
            X = Yt[:, est.selection_]
            design = _design_hits(est, X, tt)
            s, slo, shi = est.predict_with_interval(X, alpha=ALPHA)
            task_est, task_lo, task_hi = est.predict_tasks_with_interval(X, alpha=ALPHA)
            routes = _task_routes(est, X)
        row: dict[str, Any] = {"suite": cell["suite"], "regime": cell["regime"], "k": k, "seed": seed,
                               "method": method, "targets": int(tgt.size), "mae": float(np.abs(s - mt).mean()),
                               "cover": float(np.mean((slo <= mt + 1e-12) & (mt <= shi + 1e-12)))}
        if task_est is not None:
            assert task_lo is not None and task_hi is not None
            row["task_mae"] = {t: float(np.abs(task_est[:, j] - tt[:, j]).mean()) for j, t in enumerate(names)}
            row["task_cover"] = {t: float(np.mean((task_lo[:, j] <= tt[:, j] + 1e-12) & (tt[:, j] <= task_hi[:, j] +
                                                                                          1e-12)))
                                 for j, t in enumerate(names)}
        if routes is not None:
            row["task_design_cover"] = {names[j]: float(np.mean(h)) for j, h in design.items()}
            assert task_lo is not None and task_hi is not None
            hit = (task_lo <= tt + 1e-12) & (tt <= task_hi + 1e-12)
            row["task_route_cover"] = {r: [int(hit[routes == r].sum()), int((routes == r).sum())]
                                       for r in sorted(set(routes.ravel().tolist()))}
        rows.append(row)
    return rows


# ------------------------------------------------------------------ summary
def _mean_half(v: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    if a.size < 2:
        return float(a.mean()), math.nan
    return float(a.mean()), _t975(a.size) * float(a.std(ddof=1)) / math.sqrt(a.size)


def wilson_interval(hits: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a coverage of ``hits`` out of ``n`` target-runs (``n >= 1``)."""
    from scipy.stats import binomtest

    ci = binomtest(int(hits), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def in_band(hits: int, n: int) -> tuple[bool, bool]:
    """Whether a coverage of ``hits`` of ``n`` lies in :data:`BAND` (strict), and whether its 95 % Wilson
    interval meets the band (the miss, if any, is within sampling noise)."""
    low, high = wilson_interval(hits, n)
    return BAND[0] <= hits / n <= BAND[1], high >= BAND[0] and low <= BAND[1]


def seed_interval(covers: Sequence[float]) -> tuple[float, float]:
    """The 95 % t-interval of the mean of per-seed coverages (one per seed, each over the same number of
    targets), clipped to [0, 1]. The targets of one seed share its split and its sample, so their hits are
    not independent: the seed is the unit of this interval (the Wilson interval of :func:`in_band` takes
    the target-runs as independent and is narrower). ``(c, c)`` for a single seed."""
    mean, half = _mean_half(covers)
    half = half if math.isfinite(half) else 0.0
    return max(0.0, mean - half), min(1.0, mean + half)


def _meets_band(interval: tuple[float, float]) -> bool:
    return interval[1] >= BAND[0] and interval[0] <= BAND[1]


def summarise(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (suite, regime, k): each method's suite MAE (mean over seeds, 95 % t half-width), the
    suite / floor ratio of the MAEs, the largest per-task ratio of mean MAEs, and coverage: of the suite and
    of each task (``task_hits``: hits and target-runs pooled over the seeds), each judged against
    :data:`BAND` strictly and allowing sampling noise (:func:`in_band`: ``suite_in_band``, ``tasks_in_band``),
    and allowing the noise between seeds (:func:`seed_interval`: ``suite_in_band_seeds``,
    ``tasks_in_band_seeds``, ``task_seed_intervals``)."""
    groups: dict[tuple[str, str, int], dict[str, list[Mapping[str, Any]]]] = {}
    for r in rows:
        groups.setdefault((r["suite"], r["regime"], int(r["k"])), {}).setdefault(r["method"], []).append(r)
    out = []
    for (suite, regime, k), by in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if not all(m in by for m in METHODS):
            continue
        seeds = sorted({r["seed"] for r in by["suite"]} & {r["seed"] for r in by["floor"]})
        pick = {m: {r["seed"]: r for r in by[m]} for m in METHODS}
        s: dict[str, Any] = {"suite": suite, "regime": regime, "k": k, "seeds": len(seeds)}
        for m in METHODS:
            s[f"{m}_mae"] = _mean_half([pick[m][sd]["mae"] * 100 for sd in seeds if sd in pick[m]])
            s[f"{m}_cover"] = float(np.mean([pick[m][sd]["cover"] for sd in seeds if sd in pick[m]]))
        s["ratio"] = _mean_half([pick["suite"][sd]["mae"] / pick["floor"][sd]["mae"] for sd in seeds])
        tasks = list(pick["suite"][seeds[0]]["task_mae"])
        for m in ("suite", *SHARES, BORROW, UNBALANCED):
            if m in by and all(sd in {r["seed"] for r in by[m]} for sd in seeds):
                got = {r["seed"]: r for r in by[m]}
                s[f"{m}_task_ratio_max"] = max(np.mean([got[sd]["task_mae"][t] for sd in seeds])
                                               / np.mean([pick["floor"][sd]["task_mae"][t] for sd in seeds])
                                               for t in tasks)
                s[f"{m}_ratio"] = _mean_half([got[sd]["mae"] / pick["floor"][sd]["mae"] for sd in seeds])
                tc = [np.mean([got[sd]["task_cover"][t] for sd in seeds]) for t in tasks]
                s[f"{m}_covers"] = (float(np.mean([got[sd]["cover"] for sd in seeds])), float(min(tc)),
                                    float(max(tc)))
                dc = [np.mean([got[sd]["task_design_cover"][t] for sd in seeds]) for t in tasks
                      if all(t in got[sd].get("task_design_cover", {}) for sd in seeds)]
                if dc:
                    s[f"{m}_design_covers"] = (float(min(dc)), float(max(dc)))
        s["task_ratio_max"] = s["suite_task_ratio_max"]
        by_route: dict[str, list[int]] = {}
        for sd in seeds:
            for r, (hit, n) in pick["suite"][sd].get("task_route_cover", {}).items():
                acc = by_route.setdefault(r, [0, 0])
                acc[0] += hit
                acc[1] += n
        s["task_route_cover"] = {r: (h / n, n) for r, (h, n) in by_route.items() if n}
        covers = [np.mean([pick["suite"][sd]["task_cover"][t] for sd in seeds]) for t in tasks]
        s["task_cover_range"] = (float(min(covers)), float(max(covers)))
        runs = sum(int(pick["suite"][sd]["targets"]) for sd in seeds)
        hits = {t: round(sum(pick["suite"][sd]["task_cover"][t] * pick["suite"][sd]["targets"] for sd in seeds))
                for t in tasks}
        s["task_hits"] = {t: (h, runs) for t, h in hits.items()}
        judged = [in_band(h, runs) for h in hits.values()]
        s["tasks_in_band"] = (all(j[0] for j in judged), all(j[1] for j in judged))
        suite_hits = round(sum(pick["suite"][sd]["cover"] * pick["suite"][sd]["targets"] for sd in seeds))
        s["suite_in_band"] = in_band(suite_hits, runs)
        s["task_seed_intervals"] = {t: seed_interval([pick["suite"][sd]["task_cover"][t] for sd in seeds])
                                    for t in tasks}
        s["tasks_in_band_seeds"] = all(_meets_band(iv) for iv in s["task_seed_intervals"].values())
        s["suite_in_band_seeds"] = _meets_band(seed_interval([pick["suite"][sd]["cover"] for sd in seeds]))
        out.append(s)
    return out


def render(summary: Sequence[Mapping[str, Any]]) -> str:
    """A markdown table of :func:`summarise`'s rows (MAE in points of the score)."""
    head = ("| suite | regime | k | pooled MAE | floor MAE | suite MAE | suite / floor | worst task ratio "
            "| 90 % cover: suite | tasks |")
    lines = [head, "|" + "---|" * 10]

    def pm(v: tuple[float, float]) -> str:
        return f"{v[0]:.2f} ± {v[1]:.2f}" if math.isfinite(v[1]) else f"{v[0]:.2f}"

    for s in summary:
        lines.append(f"| {s['suite']} | {s['regime']} | {s['k']} | {pm(s['pooled_mae'])} | {pm(s['floor_mae'])} | "
                     f"{pm(s['suite_mae'])} | {s['ratio'][0]:.2f} ± {s['ratio'][1]:.2f} | "
                     f"{s['task_ratio_max']:.2f} | {s['suite_cover']:.2f} | "
                     f"{s['task_cover_range'][0]:.2f}-{s['task_cover_range'][1]:.2f} |")
    n = len(summary)
    good = sum(s["ratio"][0] <= 0.85 for s in summary)
    lines.append("")
    lines.append(f"Suite / floor ratio of the suite's MAE at most 0.85 in {good} of {n} cells; largest per-task "
                 f"ratio {max((s['task_ratio_max'] for s in summary), default=math.nan):.2f}.")
    if n:
        lo, hi = (f"{100 * b:.0f} %" for b in BAND)
        strict = [sum(s[key][0] for s in summary) for key in ("suite_in_band", "tasks_in_band")]
        noise = [sum(s[key][1] for s in summary) for key in ("suite_in_band", "tasks_in_band")]
        lines.append("")
        lines.append(f"90 % intervals within {lo}-{hi}: the suite's in {strict[0]} of {n} cells ({noise[0]} allowing "
                     f"sampling noise: the 95 % Wilson interval of the coverage meets the band); every task's in "
                     f"{strict[1]} of {n} ({noise[1]} allowing noise).")
        seeded = [sum(s[key] for s in summary) for key in ("suite_in_band_seeds", "tasks_in_band_seeds")]
        lines.append(f"Allowing the noise between seeds (the targets of a seed share its split and sample, so the "
                     f"95 % t-interval over the seeds' coverages, wider than the Wilson interval of independent "
                     f"target-runs, meets the band): the suite's in {seeded[0]} of {n}, every task's in "
                     f"{seeded[1]} of {n}.")
        beyond = [(s, t, h, m) for s in summary for t, (h, m) in s["task_hits"].items() if not in_band(h, m)[1]]
        if beyond:
            lines.append("Tasks out of the band beyond sampling noise (coverage, 95 % Wilson interval, "
                         "target-runs): " + "; ".join(
                             f"{s['suite']} {s['regime']} k = {s['k']} {t} {h / m:.3f} "
                             f"[{wilson_interval(h, m)[0]:.3f}, {wilson_interval(h, m)[1]:.3f}] ({m})"
                             for s, t, h, m in beyond) + ".")
        past = [(s, t, iv) for s in summary for t, iv in s["task_seed_intervals"].items() if not _meets_band(iv)]
        if past:
            lines.append("Tasks out of the band beyond the noise between seeds (95 % t-interval over the seeds): " +
                         "; ".join(f"{s['suite']} {s['regime']} k = {s['k']} {t} [{iv[0]:.3f}, {iv[1]:.3f}]"
                                   for s, t, iv in past) + ".")
    routed = [s for s in summary if s.get("task_route_cover")]
    if routed:
        names = sorted({r for s in routed for r in s["task_route_cover"]})
        lines += ["", "Coverage of the tasks' 90 % intervals by the route each task's estimate took (target-runs "
                  "pooled over the tasks and seeds; in brackets their number):", "",
                  "| suite | regime | k | " + " | ".join(names) + " |", "|" + "---|" * (3 + len(names))]
        for s in routed:
            rc = s["task_route_cover"]
            cells = [f"{rc[r][0]:.2f} ({rc[r][1]})" if r in rc else "" for r in names]
            lines.append(f"| {s['suite']} | {s['regime']} | {s['k']} | " + " | ".join(cells) + " |")
    borrowed = [s for s in summary if f"{BORROW}_ratio" in s]
    if borrowed:
        lines += ["", "Borrowing strength across tasks (suite / floor MAE ratio of the suite; largest per-task "
                  "ratio; 90 % coverage of the suite and, in brackets, the tasks' range):", "",
                  "| suite | regime | k | default | borrow | default coverage | borrow coverage |", "|" + "---|" * 7]
        for s in borrowed:
            cov = []
            for m in ("suite", BORROW):
                c = s[f"{m}_covers"]
                cov.append(f"{c[0]:.2f} ({c[1]:.2f}-{c[2]:.2f})")
            lines.append(f"| {s['suite']} | {s['regime']} | {s['k']} | {s['suite_ratio'][0]:.2f} "
                         f"({s['suite_task_ratio_max']:.2f}) | {s[f'{BORROW}_ratio'][0]:.2f} "
                         f"({s[f'{BORROW}_task_ratio_max']:.2f}) | {cov[0]} | {cov[1]} |")
    balance = [s for s in summary if f"{UNBALANCED}_design_covers" in s and "suite_design_covers" in s]
    if balance:
        lines += ["", "The balanced draw (default, best of 1000) against one plain stratified draw per task: suite / "
                  "floor MAE ratio of the suite (largest per-task ratio); the range over the tasks of the 90 % "
                  "coverage of the tasks' intervals and of their design-based (model-assisted) intervals alone:",
                  "", "| suite | regime | k | balanced | one draw | tasks, balanced | one draw | design-based, "
                  "balanced | one draw |", "|" + "---|" * 9]
        for s in balance:
            cells = [f"{s[f'{m}_ratio'][0]:.2f} ({s[f'{m}_task_ratio_max']:.2f})" for m in ("suite", UNBALANCED)]
            cells += [f"{s[f'{m}_covers'][1]:.2f}-{s[f'{m}_covers'][2]:.2f}" for m in ("suite", UNBALANCED)]
            cells += [f"{s[f'{m}_design_covers'][0]:.2f}-{s[f'{m}_design_covers'][1]:.2f}"
                      for m in ("suite", UNBALANCED)]
            lines.append(f"| {s['suite']} | {s['regime']} | {s['k']} | " + " | ".join(cells) + " |")
    alloc = [s for s in summary if all(f"{m}_ratio" in s for m in SHARES)]
    if alloc:
        lines += ["", "Allocations (suite / floor MAE ratio of the suite; largest per-task ratio):", "",
                  "| suite | regime | k | 75 % proportional + Neyman (default) | Neyman | proportional |",
                  "|" + "---|" * 6]
        for s in alloc:
            cells = [f"{s[f'{m}_ratio'][0]:.2f} ({s[f'{m}_task_ratio_max']:.2f})" for m in ("suite", *SHARES)]
            lines.append(f"| {s['suite']} | {s['regime']} | {s['k']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.suite_fidelity",
                                 description="Suites on real data: suite and per-task estimates and intervals.")
    ap.add_argument("--out", type=Path, required=True, help="folder for suite_fidelity.jsonl and .md")
    ap.add_argument("--data-dir", type=Path, default=None, help="the shared data (default: ../shared/data)")
    ap.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    ap.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=list(REGIMES))
    ap.add_argument("--ks", nargs="+", type=int, default=list(KS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=[*METHODS, *SHARES, BORROW, UNBALANCED],
                    help="methods to run (the summary compares pooled, floor and suite; the others are the "
                         "suite with another allocation, borrowing across tasks, or one plain draw per task)")
    args = ap.parse_args(argv)
    data_dir = args.data_dir or default_data_dir()
    if data_dir is None:
        print("suite_fidelity: no data directory (pass --data-dir)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / JSONL
    rows = _read(path)
    done = {(r["suite"], r["regime"], r["k"], r["seed"], r["method"]) for r in rows}
    cells = []
    for s in args.suites:
        for g in args.regimes:
            for k in args.ks:
                for sd in range(args.seeds):
                    todo = [m for m in args.methods if (s, g, k, sd, m) not in done]
                    if todo:
                        cells.append({"data_dir": str(data_dir), "suite": s, "regime": g, "k": k, "seed": sd,
                                      "methods": todo})
    with path.open("a") as fh:
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs) as ex:
                results: Iterable[list[dict[str, Any]]] = ex.map(run_cell, cells)
                for new in results:
                    fh.writelines(json.dumps(r) + "\n" for r in new)
                    fh.flush()
                    rows += new
        else:
            for cell in cells:
                new = run_cell(cell)
                fh.writelines(json.dumps(r) + "\n" for r in new)
                fh.flush()
                rows += new
    want = {(s, g, k) for s in args.suites for g in args.regimes for k in args.ks}
    text = render(summarise(r for r in rows if (r["suite"], r["regime"], r["k"]) in want and r["seed"] < args.seeds))
    (args.out / "suite_fidelity.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
