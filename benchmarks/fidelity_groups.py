"""Coverage of the fidelity benchmark's intervals per group of target-runs (SPEC F11), and the small-budget check.

Every row of :mod:`benchsel.benchmarks.fidelity` keeps, per target model, its true score, estimate and 90 %
interval (:func:`target_record`). A *target-run* is one target in one (dataset, protocol, split, k) run.
:func:`group_coverage` pools the target-runs of a pipeline by regime (the protocol) and, within it, by

* position: the true score within :data:`END_BAND` of the ends of the score range (``[0, 1]``) or not;
* metric: binary or continuous scores;
* route: the estimate the ``"auto"`` estimator chose (``"stacked"`` or ``"model-assisted"``);
* dataset (for the default pipeline),

and reports each group's coverage, mean width and MAE. :func:`small_k_text` compares the default with a peer
cell by cell at the smallest ``k``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["END_BAND", "MIN_GROUP", "coverage_text", "group_coverage", "small_k_text", "target_record"]

#: Targets whose true score lies within this distance of 0 or 1 are "near the ends" (SPEC F11: 5 pp).
END_BAND = 0.05
#: Groups with at least this many target-runs are held to the coverage goal (F11; issue 41).
MIN_GROUP = 100
#: Coverage a group of at least :data:`MIN_GROUP` target-runs must reach (90 % intervals).
GROUP_GOAL = 0.8
#: The default pipeline (``benchsel.compress``'s), reported per dataset too.
DEFAULT = "stratified+auto"


def target_record(truth: np.ndarray, pred: np.ndarray, low: np.ndarray, high: np.ndarray,
                  route: np.ndarray | None, *, binary: bool) -> dict[str, Any]:
    """Per-target facts of one row, as JSON-ready lists (rounded to 1e-6).

    Parameters
    ----------
    truth, pred, low, high : ndarray, shape (T,)
        True full score, estimate and interval of each target.
    route : ndarray of str, shape (T,), or None
        The ``"auto"`` estimator's route per target (None for other estimators).
    binary : bool
        Whether the dataset's scores are 0/1.
    """
    def r(v: np.ndarray) -> list[float]:
        return [round(float(x), 6) for x in np.asarray(v, dtype=float).reshape(-1)]

    rec: dict[str, Any] = {"truth": r(truth), "pred": r(pred), "low": r(low), "high": r(high), "binary": binary}
    if route is not None:
        rec["route"] = [str(x) for x in route]
    return rec


def _groups(row: Mapping[str, Any], t: Mapping[str, Any], j: int, per_dataset: bool) -> list[str]:
    truth = t["truth"][j]
    out = ["all", "position: ends (within 5 pp)" if min(truth, 1 - truth) < END_BAND else "position: middle",
           "metric: binary" if t.get("binary", True) else "metric: continuous"]
    if "route" in t:
        out.append(f"route: {t['route'][j]}")
    if per_dataset:
        out.append(f"dataset: {row['dataset']}" + (f", route {t['route'][j]}" if "route" in t else ""))
    return out


def group_coverage(rows: Iterable[Mapping[str, Any]], *, default: str = DEFAULT) -> list[dict[str, Any]]:
    """One entry per (pipeline, protocol, group): target-runs, coverage, mean width (pp) and MAE (pp).

    Rows without per-target records (older runs, errors) are skipped.
    """
    acc: dict[tuple[str, str, str], list[np.ndarray]] = {}
    for row in rows:
        t = row.get("targets")
        if not t or row.get("mae") is None:
            continue
        y, p = np.asarray(t["truth"]), np.asarray(t["pred"])
        lo, hi = np.asarray(t["low"]), np.asarray(t["high"])
        cov = (lo <= y + 1e-9) & (y <= hi + 1e-9)
        for j in range(y.size):
            for g in _groups(row, t, j, row["pipeline"] == default):
                acc.setdefault((row["pipeline"], row["protocol"], g), []).append(
                    np.array([cov[j], hi[j] - lo[j], abs(p[j] - y[j])]))
    out: list[dict[str, Any]] = []
    for (pipe, proto, g), vals in acc.items():
        v = np.array(vals)
        out.append({"pipeline": pipe, "protocol": proto, "group": g, "n": int(v.shape[0]),
                    "coverage": float(v[:, 0].mean()), "width": float(100 * v[:, 1].mean()),
                    "mae": float(100 * v[:, 2].mean())})
    order = {"all": 0, "pos": 1, "met": 2, "rou": 3, "dat": 4}
    out.sort(key=lambda e: (e["pipeline"] != default, e["pipeline"], e["protocol"], order[e["group"][:3]],
                            e["group"]))
    return out


def coverage_text(rows: Iterable[Mapping[str, Any]], *, default: str = DEFAULT) -> str:
    """Markdown: :func:`group_coverage` as tables, one per pipeline; groups of at least :data:`MIN_GROUP`
    target-runs below :data:`GROUP_GOAL` coverage are marked; empty when no row has per-target records."""
    entries = group_coverage(rows, default=default)
    lines: list[str] = []
    for pipe in dict.fromkeys(e["pipeline"] for e in entries):
        mine = [e for e in entries if e["pipeline"] == pipe]
        lines += [f"#### {pipe}", "", "| regime | group | target-runs | 90 % coverage | mean width (pp) | MAE (pp) |",
                  "|---|---|---|---|---|---|"]
        for e in mine:
            flag = " (below 80 %)" if e["n"] >= MIN_GROUP and e["coverage"] < GROUP_GOAL else ""
            lines.append(f"| {e['protocol']} | {e['group']} | {e['n']} | {100 * e['coverage']:.1f} %{flag} | "
                         f"{e['width']:.1f} | {e['mae']:.2f} |")
        big = [e for e in mine if e["n"] >= MIN_GROUP and not e["group"].startswith("dataset")]
        if big:
            worst = min(big, key=lambda e: e["coverage"])
            lines += ["", f"{pipe}: the least covered group of at least {MIN_GROUP} target-runs (datasets aside): "
                          f"{worst['protocol']}, {worst['group']}, {100 * worst['coverage']:.1f} %."]
        lines.append("")
    return "\n".join(lines)


def small_k_text(summary: Sequence[Mapping[str, Any]], *, pipeline: str = DEFAULT, peer: str = "kmedoids+stacked",
                 protocol: str = "interpolation") -> str:
    """Markdown: MAE of ``pipeline`` and ``peer`` per dataset at the smallest ``k`` of ``protocol`` (with
    ``random+mean`` and ``random+ridge`` where measured); empty when either pipeline is missing."""
    ps = [s for s in summary if s["protocol"] == protocol]
    if not ps:
        return ""
    k = min(s["k"] for s in ps)
    by = {(s["dataset"], s["pipeline"]): s["mae"] for s in ps if s["k"] == k}
    pipes = [p for p in (pipeline, peer, "random+ridge", "random+mean") if any(q == p for _, q in by)]
    if pipeline not in pipes or peer not in pipes:
        return ""
    lines = [f"| dataset (k = {k}, {protocol}) | " + " | ".join(pipes) + " |", "|---|" + "---|" * len(pipes)]
    means: dict[str, list[float]] = {p: [] for p in pipes}
    wins = n = 0
    for d in sorted({d for d, _ in by}):
        vals = [by.get((d, p), math.nan) for p in pipes]
        for p, v in zip(pipes, vals):
            means[p].append(v)
        if math.isfinite(vals[0]) and math.isfinite(vals[1]):
            n += 1
            wins += vals[0] <= vals[1]
        lines.append(f"| {d} | " + " | ".join(f"{v:.2f}" for v in vals) + " |")
    lines.append("| mean | " + " | ".join(f"{np.nanmean(means[p]):.2f}" for p in pipes) + " |")
    ratio = np.nanmean(means[pipeline]) / np.nanmean(means[peer])
    lines += ["", f"{pipeline} at most {peer}'s MAE in {wins} of {n} matrices; mean MAE ratio {ratio:.3f}."]
    return "\n".join(lines)
