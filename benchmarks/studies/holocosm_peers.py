"""HoloCosm against its peers on the shared multi-metric data: the paper's headline comparison, its cross-metric
diagnostics and its weak-to-strong split.

Usage::

    python -m benchsel.benchmarks.studies.holocosm_peers                 # headline: paper split, 20 %, 5 seeds
    python -m benchsel.benchmarks.studies.holocosm_peers --split weak2strong --retentions 0.1 0.2 0.3 0.4 0.5 \\
        --methods holocosm random
    python -m benchsel.benchmarks.studies.holocosm_peers --figure docs/results/holocosm_diagnostics.png
    python -m benchsel.benchmarks.studies.holocosm_peers --synthetic --seeds 3  # 6 sources, 200 targets
    python -m benchsel.benchmarks.studies.holocosm_peers --out peers.json   # also every row as JSON

Data: the real multi-metric sets of :mod:`benchsel.benchmarks.studies.holocosm_fidelity` (WMT TED MQM en-de and
zh-en, 6 sources; UniEval Topical-Chat, 3 sources), oriented higher-is-better. Methods are the registered
comparison methods (:func:`benchsel.heuristics.holocosm.holocosm_baselines`). Single-metric methods
(``anchorpoints``, ``mrmr_ridge``, ``tinybenchmarks``, ``tinybenchmarks_gpirt``) select with every metric in
turn and with the AverageMetric; the headline keeps, per data set, the metric target of lowest mean NMAE (the paper's
reporting rule, which looks at the targets).

Outputs:

* the headline table: per data set and macro over data sets, mean / worst-metric NMAE and mean Spearman
  (mean +- SE over seeds), HoloCosm's reduction of mean and worst NMAE against Random (per seed, mean +- SE)
  beside the paper's 35.3 % and 39.5 %, and against K-means and Random with the source-assisted correction;
* the diagnostics: the metric-ranking Spearman table of each set (all models) and its share of pairs
  >= 0.85, the cross-metric worse-than-Random share of every single-metric method, and the union-size
  inflation of per-metric selection;
* ``--figure PATH``: a PNG of the diagnostics (written only when asked).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.holocosm import (
    cross_metric_worse_share,
    high_agreement_share,
    metric_rank_correlation,
    union_cost,
)
from benchsel.heuristics.holocosm import get_baseline, holocosm_baselines

from .holocosm import write_report
from .holocosm_fidelity import SPLITS, baseline_rows, many_target_sets, real_sets

DEFAULT_METHODS = ("holocosm", "random", "random_sac", "swap_unconstrained", "kmeans", "vote", "anchorpoints",
                   "mrmr_ridge", "tinybenchmarks", "tinybenchmarks_gpirt")
#: The paper's numbers (15 configurations, 20 % retention), keyed as the summary's comparisons.
PAPER = {"vs_random_mean_nmae": 0.353, "vs_random_worst_nmae": 0.395, "vs_kmeans_mean_nmae": 0.271,
         "vs_kmeans_worst_nmae": 0.231, "vs_random_sac_mean_nmae": 1 - 0.2362 / 0.2812,
         "cross_metric_worse_share": (0.705, 0.977)}


# --------------------------------------------------------------------------- runs
def run(sets: list[dict], retentions: tuple[float, ...] = (0.2,), seeds: int = 5,
        methods: tuple[str, ...] = DEFAULT_METHODS, quiet: bool = False) -> list[dict]:
    """:func:`benchsel.benchmarks.studies.holocosm_fidelity.baseline_rows` of ``methods`` (default: all)."""
    return baseline_rows(sets, retentions, seeds, methods, quiet=quiet)


# --------------------------------------------------------------------------- summaries
def _mse(v: list[float]) -> dict[str, float]:
    a = np.asarray([x for x in v if np.isfinite(x)], dtype=float)
    if a.size == 0:
        return {"mean": math.nan, "se": math.nan, "n": 0}
    return {"mean": float(a.mean()), "se": float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0.0,
            "n": int(a.size)}


def _per_seed(rows: list[dict], ds: str, rho: float, method: str, target: Any) -> dict[int, dict]:
    return {r["seed"]: r for r in rows if r["dataset"] == ds and r["retention"] == rho and r["method"] == method
            and r["target"] == target}


def _best_target(rows: list[dict], ds: str, rho: float, method: str) -> Any:
    """The metric target (an index; not the AverageMetric) of lowest seed-mean mean NMAE."""
    tg = sorted({r["target"] for r in rows if r["dataset"] == ds and r["retention"] == rho
                 and r["method"] == method and isinstance(r["target"], int)})
    return min(tg, key=lambda t: float(np.mean([r["mean_nmae"] for r in
                                                 _per_seed(rows, ds, rho, method, t).values()])))


def entries(rows: list[dict], rho: float) -> dict[str, dict[str, dict[int, dict]]]:
    """``{entry: {dataset: {seed: row}}}`` at ``rho``: whole-set methods by name, single-metric ones as
    ``<method>_best`` (the best metric target per data set) and ``<method>_avg`` (the AverageMetric)."""
    out: dict[str, dict[str, dict[int, dict]]] = {}
    dsets = list(dict.fromkeys(r["dataset"] for r in rows))
    for m in dict.fromkeys(r["method"] for r in rows):
        per_metric = get_baseline(m).per_metric
        for ds in dsets:
            if per_metric:
                out.setdefault(f"{m}_best", {})[ds] = _per_seed(rows, ds, rho, m, _best_target(rows, ds, rho, m))
                out.setdefault(f"{m}_avg", {})[ds] = _per_seed(rows, ds, rho, m, "average")
            else:
                out.setdefault(m, {})[ds] = _per_seed(rows, ds, rho, m, None)
    return out


def _reduction(ent: dict, a: str, b: str, key: str) -> dict[str, float]:
    """Per seed: ``1 - macro(a) / macro(b)`` of ``key`` over data sets; mean +- SE over seeds."""
    dsets = list(ent[a])
    seeds = sorted(set.intersection(*(set(ent[a][d]) & set(ent[b][d]) for d in dsets)))
    vals = [1 - np.mean([ent[a][d][s][key] for d in dsets]) / np.mean([ent[b][d][s][key] for d in dsets])
            for s in seeds]
    return _mse(vals)


def headline(rows: list[dict], rho: float = 0.2) -> dict[str, Any]:
    """Per entry and data set (and the macro average): mean / worst NMAE and mean SP, mean +- SE over seeds;
    HoloCosm's reductions against Random, K-means and Random with the correction; wins against Random."""
    ent = entries(rows, rho)
    dsets = list(dict.fromkeys(r["dataset"] for r in rows))
    table: dict[str, Any] = {}
    for e, by in ent.items():
        for ds in dsets:
            table[f"{ds}|{e}"] = {k: _mse([r[k] for r in by[ds].values()]) for k in ("mean_nmae", "worst_nmae",
                                                                                     "mean_sp")}
        seeds = sorted(set.intersection(*(set(by[d]) for d in dsets)))
        table[f"macro|{e}"] = {k: _mse([float(np.mean([by[d][s][k] for d in dsets])) for s in seeds])
                               for k in ("mean_nmae", "worst_nmae", "mean_sp")}
    out: dict[str, Any] = {"retention": rho, "datasets": dsets, "table": table, "comparisons": {}}
    if "holocosm" in ent:
        for ref in ("random", "kmeans", "random_sac"):
            if ref in ent:
                for key in ("mean_nmae", "worst_nmae"):
                    out["comparisons"][f"vs_{ref}_{key}"] = _reduction(ent, "holocosm", ref, key)
        if "random" in ent:
            pairs = [(table[f"{d}|holocosm"], table[f"{d}|random"]) for d in dsets]
            out["wins_vs_random"] = {
                "mean_nmae": sum(a["mean_nmae"]["mean"] < b["mean_nmae"]["mean"] for a, b in pairs),
                "mean_sp": sum(a["mean_sp"]["mean"] > b["mean_sp"]["mean"] for a, b in pairs), "of": len(dsets)}
    return out


def diagnostics(sets: list[dict], rows: list[dict], rho: float = 0.2) -> dict[str, Any]:
    """Metric-ranking correlations per set; per single-metric method and set, the cross-metric worse-than-Random
    share (seed-mean cross-metric NMAE table against Random's seed-mean NMAE) and the union inflation."""
    out: dict[str, Any] = {"rank_correlation": {}, "worse_share": {}, "union": {}}
    for ds in sets:
        C = metric_rank_correlation(ds["Y_all"])
        iu = np.triu_indices(C.shape[0], 1)
        v = C[iu][np.isfinite(C[iu])]
        out["rank_correlation"][ds["name"]] = {
            "metrics": ds["metrics"], "table": C.tolist(), "high_share": high_agreement_share(C),
            "min": float(v.min()) if v.size else math.nan, "median": float(np.median(v)) if v.size else math.nan}
    methods = [m for m in dict.fromkeys(r["method"] for r in rows) if get_baseline(m).per_metric]
    for ds in sets:
        d, K = ds["name"], ds["K"]
        rnd = _per_seed(rows, d, rho, "random", None)
        if not rnd:
            continue
        ref = np.mean([r["nmae"] for r in rnd.values()], axis=0)
        for m in methods:
            per_k = [_per_seed(rows, d, rho, m, k) for k in range(K)]
            table = np.array([np.mean([r["nmae"] for r in pk.values()], axis=0) for pk in per_k])  # (K, K)
            out["worse_share"][f"{d}|{m}"] = {"share": cross_metric_worse_share(table, ref),
                                             "cases": K * (K - 1)}
            seeds = sorted(set.intersection(*(set(pk) for pk in per_k)))
            costs = [union_cost([per_k[k][s]["selection"] for k in range(K)], ds["N"]) for s in seeds]
            out["union"][f"{d}|{m}"] = {"B": costs[0].budget, "size": _mse([c.size for c in costs]),
                                        "inflation": _mse([c.inflation for c in costs]), "K": K}
    for m in methods:
        cells = [(v["share"], v["cases"]) for k, v in out["worse_share"].items() if k.endswith(f"|{m}")]
        if cells:
            out["worse_share"][f"pooled|{m}"] = {"share": sum(s * c for s, c in cells) / sum(c for _, c in cells),
                                                 "cases": sum(c for _, c in cells)}
    return out


# --------------------------------------------------------------------------- printing
def _md_head(*columns: str) -> None:
    """Print a markdown table's header and separator lines."""
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")


def _cell(v: dict[str, float], digits: int = 4) -> str:
    return f"{v['mean']:.{digits}f} ± {v['se']:.{digits}f}"


def print_headline(h: dict[str, Any]) -> None:
    rho = h["retention"]
    print(f"\nHeadline at {round(100 * rho)} % retention: mean ± SE over seeds "
          "(single-metric methods: the metric target of lowest mean NMAE per set, '_best'; the AverageMetric, '_avg')")
    _md_head("set", "method", "mean NMAE", "worst NMAE", "mean SP")
    for k, v in h["table"].items():
        ds, e = k.split("|")
        print(f"| {ds} | {e} | {_cell(v['mean_nmae'])} | {_cell(v['worst_nmae'])} | {_cell(v['mean_sp'], 3)} |")
    if h["comparisons"]:
        print("\nHoloCosm's NMAE reduction (1 - macro HoloCosm / macro other, per seed; positive = HoloCosm lower)")
        _md_head("against", "ours (mean ± SE over seeds)", "the paper (15 configurations)")
        for k, v in h["comparisons"].items():
            paper = PAPER.get(k)
            print(f"| {k.removeprefix('vs_')} | {100 * v['mean']:+.1f} % ± {100 * v['se']:.1f} | "
                  + (f"{100 * paper:+.1f} % |" if isinstance(paper, float) else "- |"))
    if "wins_vs_random" in h:
        w = h["wins_vs_random"]
        print(f"HoloCosm better than Random on mean NMAE in {w['mean_nmae']} of {w['of']} sets, on mean SP in "
              f"{w['mean_sp']} of {w['of']} (the paper: 14 of 15 and 11 of 15)")
    print(flush=True)


def print_diagnostics(d: dict[str, Any]) -> None:
    print("\nMetric-ranking Spearman correlations (all models' full-benchmark means)")
    for ds, v in d["rank_correlation"].items():
        print(f"\n{ds}: share of pairs >= 0.85: {100 * v['high_share']:.0f} %, min {v['min']:.2f}, "
              f"median {v['median']:.2f}")
        names = [m[:8] for m in v["metrics"]]
        print("| | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for m, row in zip(names, v["table"]):
            print(f"| {m} | " + " | ".join("-" if not np.isfinite(x) else f"{x:.2f}" for x in row) + " |")
    print("\nCross-metric cases worse than Random (select with metric a, evaluate on b != a; seed-mean NMAE against "
          "Random's seed-mean NMAE; the paper: 70.5-97.7 % across five baselines at 80 % compression)")
    _md_head("set", "method", "worse than Random", "cases")
    for k, v in d["worse_share"].items():
        ds, m = k.split("|")
        print(f"| {ds} | {m} | {100 * v['share']:.1f} % | {v['cases']} |")
    print("\nUnion of the K per-metric selections (mean ± SE over seeds)")
    _md_head("set", "method", "K", "B", "union size", "inflation |union| / B")
    for k, v in d["union"].items():
        ds, m = k.split("|")
        print(f"| {ds} | {m} | {v['K']} | {v['B']} | {_cell(v['size'], 1)} | {_cell(v['inflation'], 2)} |")
    print(flush=True)


def print_curve(rows: list[dict], retentions: tuple[float, ...]) -> None:
    """Mean SP and mean NMAE against retention for every whole-set method (the weak-to-strong figure)."""
    methods = [m for m in dict.fromkeys(r["method"] for r in rows) if not get_baseline(m).per_metric]
    print("\nBy retention: mean SP / mean NMAE (mean ± SE over seeds)")
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        print(f"\n{ds}\n| method | " + " | ".join(f"{round(100 * x)} %" for x in retentions) + " |")
        print("|---" * (len(retentions) + 1) + "|")
        for m in methods:
            cells = []
            for rho in retentions:
                rs = list(_per_seed(rows, ds, rho, m, None).values())
                cells.append(f"{_cell(_mse([r['mean_sp'] for r in rs]), 3)} / "
                             f"{_cell(_mse([r['mean_nmae'] for r in rs]), 3)}")
            print(f"| {m} | " + " | ".join(cells) + " |")
    print(flush=True)


# --------------------------------------------------------------------------- figure
def write_figure(d: dict[str, Any], path: Path) -> Path:
    """The diagnostics as one PNG: metric-ranking correlation heatmaps, worse-than-Random shares, union inflation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(d["rank_correlation"])
    fig, axes = plt.subplots(1, len(sets) + 2, figsize=(4.2 * (len(sets) + 2), 4.2))
    for ax, ds in zip(axes, sets):
        v = d["rank_correlation"][ds]
        im = ax.imshow(np.asarray(v["table"], dtype=float), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(v["metrics"])), [m[:6] for m in v["metrics"]], rotation=90, fontsize=7)
        ax.set_yticks(range(len(v["metrics"])), [m[:6] for m in v["metrics"]], fontsize=7)
        ax.set_title(f"{ds}\nmetric-ranking Spearman", fontsize=9)
    fig.colorbar(im, ax=axes[len(sets) - 1], fraction=0.046)
    methods = list(dict.fromkeys(k.split("|")[1] for k in d["worse_share"]))
    per_set = [s for s in sets if any(k.startswith(f"{s}|") for k in d["worse_share"])]
    width = 0.8 / max(len(per_set), 1)
    for j, ds in enumerate(per_set):
        xs = np.arange(len(methods)) + j * width
        axes[-2].bar(xs, [100 * d["worse_share"].get(f"{ds}|{m}", {"share": np.nan})["share"] for m in methods],
                     width, label=ds)
        axes[-1].bar(xs, [d["union"].get(f"{ds}|{m}", {"inflation": {"mean": np.nan}})["inflation"]["mean"]
                          for m in methods], width, label=ds)
    for ax, title in ((axes[-2], "cross-metric cases worse than Random (%)"),
                      (axes[-1], "union of per-metric selections / B")):
        ax.set_xticks(np.arange(len(methods)) + 0.4 - width / 2, methods, rotation=30, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # room for the legend above the bars
        ax.legend(fontsize=7, loc="upper left", ncol=2)
    axes[-2].axhline(50, color="grey", lw=0.8, ls=":")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.holocosm_peers",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=tuple(SPLITS), default="paper",
                    help="paper: 6 evenly spaced sources (3 on Topical-Chat); weak2strong: the weakest as sources")
    ap.add_argument("--retentions", type=float, nargs="*", default=[0.2], help="retention ratios (default 0.2)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per retention (default 5)")
    ap.add_argument("--methods", nargs="*", default=list(DEFAULT_METHODS),
                    help=f"registered methods (default all: {' '.join(holocosm_baselines())})")
    ap.add_argument("--synthetic", action="store_true",
                    help="the synthetic many-target sets instead (6 sources, 200 targets; paper split only)")
    ap.add_argument("--figure", type=Path, default=None, help="write the diagnostics figure (PNG) here")
    ap.add_argument("--out", type=Path, default=None, help="write all rows and summaries as JSON")
    a = ap.parse_args(argv)
    if a.synthetic and a.split != "paper":
        ap.error("--synthetic: the synthetic sets use the paper split only")
    sets = many_target_sets() if a.synthetic else real_sets(split=a.split)
    if not sets:
        return 1
    rhos = tuple(a.retentions)
    rows = run(sets, rhos, a.seeds, tuple(a.methods))
    report: dict[str, Any] = {"split": a.split, "seeds": a.seeds, "retentions": list(rhos), "rows": rows,
                              "headline": {}, "paper": PAPER}
    for rho in rhos:
        h = headline(rows, rho)
        report["headline"][str(rho)] = h
        print_headline(h)
    if len(rhos) > 1:
        print_curve(rows, rhos)
    main_rho = 0.2 if 0.2 in rhos else rhos[0]
    diag = diagnostics(sets, rows, main_rho)
    report["diagnostics"] = diag
    print_diagnostics(diag)
    if a.figure:
        print(f"wrote {write_figure(diag, a.figure)}")
    if a.out:
        print(f"wrote {write_report(report, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
