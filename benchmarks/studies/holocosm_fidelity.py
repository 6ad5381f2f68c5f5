"""HoloCosm fidelity parts of :mod:`benchsel.benchmarks.studies.holocosm`: the real and synthetic multi-metric
sets with their splits, and the held-out fidelity of the selections of HoloCosm and its peers (``realfid``,
``manytargets``, ``fidelity``; run them through that study's ``--part``)."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.holocosm import RankingRiskReconstruction, fidelity
from benchsel.heuristics.holocosm import get_baseline, random_baseline
from benchsel.instances.responses import load_responses, make_multimetric, paper_split, weak_to_strong_split
from benchsel.solvers import solve

from .._data import default_data_dir

RETENTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)


REAL_SETS = (("ted_ende", "wmt_mqm/ted_ende_multimetric.npz", 6), ("ted_zhen", "wmt_mqm/ted_zhen_multimetric.npz", 6),
             ("unieval_topical_chat", "unieval_topical_chat/topical_chat_multimetric.npz", 3))


def _interval(v: list[float]) -> dict[str, float]:
    a = np.asarray([x for x in v if np.isfinite(x)], dtype=float)
    if a.size == 0:
        return {"mean": math.nan, "lo": math.nan, "hi": math.nan, "sd": math.nan, "n": 0}
    return {"mean": float(a.mean()), "lo": float(np.percentile(a, 2.5)), "hi": float(np.percentile(a, 97.5)),
            "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0, "n": int(a.size)}


def compare_fidelity(sets: list[dict], retention: float = 0.2, random_seeds: int = 30, seeds: int = 5,
                     highs_limit: float = 30.0, quiet: bool = False) -> list[dict]:
    """One row per (dataset, method, seed): target NMAE / Spearman of the source-assisted estimate and R_mean."""
    rows = []
    for ds in sets:
        X, Yt = ds["X"], ds["Yt"]
        muY = Yt.mean(axis=1)
        t0 = time.perf_counter()

        def record(method: str, seed: int, f: RankingRiskReconstruction, sel: np.ndarray, ds: dict = ds,
                   Yt: np.ndarray = Yt, muY: np.ndarray = muY) -> None:
            est = f.estimate(sel, Yt[:, sel, :])
            fd = fidelity(est, muY)
            rm, rr = f.risks(sel)
            rows.append({"dataset": ds["name"], "kind": ds["kind"], "retention": retention, "method": method,
                         "seed": seed, "B": f.budget, "R_mean": rm, "R_rank": rr, "feasible": bool(f.is_feasible(sel)),
                         "n_targets": int(Yt.shape[0]), **fd.summary()})

        f0 = RankingRiskReconstruction(X, retention=retention, seed=0)
        for s in range(random_seeds):
            record("random_sac", s, f0, random_baseline(f0, s, correction=True).selection)
        for s in range(seeds):
            f = RankingRiskReconstruction(X, retention=retention, seed=s)
            runs: tuple[tuple[str, dict[str, Any]], ...] = (
                ("swap", {}), ("anneal", {}), ("highs", {"time_limit": highs_limit, "threads": 1}))
            for method, opts in runs:
                r = solve(f, method, seed=s, **opts)
                record(method, s, f, r.selection)
        if not quiet:
            print(f"fidelity {ds['name']} (N={ds['N']}, K={ds['K']}, {ds['n_sources']} sources, {ds['n_targets']} "
                  f"targets): {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def compare_summary(rows: list[dict]) -> dict:
    out: dict[str, Any] = {}
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        for m in dict.fromkeys(r["method"] for r in rows):
            rs = [r for r in rows if r["dataset"] == ds and r["method"] == m]
            if rs:
                out[f"{ds}|{m}"] = {k: _interval([r[k] for r in rs]) for k in ("mean_nmae", "mean_sp", "R_mean")}
                out[f"{ds}|{m}"]["n_targets"] = rs[0]["n_targets"]
    return out


def print_compare(s: dict, title: str) -> None:
    print(f"\n{title}: mean over seeds [95 % interval over seeds]; sd in parentheses")
    print("| set | targets | method | seeds | source R_mean | target mean NMAE | target mean Spearman |")
    print("|---|---|---|---|---|---|---|")
    for k, v in s.items():
        ds, m = k.split("|")
        a, b, c = v["R_mean"], v["mean_nmae"], v["mean_sp"]
        print(f"| {ds} | {v['n_targets']} | {m} | {b['n']} | {a['mean']:.4f} [{a['lo']:.4f}, {a['hi']:.4f}] | "
              f"{b['mean']:.4f} [{b['lo']:.4f}, {b['hi']:.4f}] ({b['sd']:.4f}) | "
              f"{c['mean']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] ({c['sd']:.3f}) |")
    print(flush=True)


def real_sets(data_dir: Path | None = None, split: str = "paper") -> list[dict]:
    """The three real multi-metric sets, split by the paper's protocol or ``split`` (a name of :data:`SPLITS`);
    empty when the data is absent."""
    data_dir = data_dir or default_data_dir()
    out: list[dict] = []
    if data_dir is None or not (data_dir / "responses").is_dir():
        print("holocosm: shared data not found", file=sys.stderr)
        return out
    for name, rel, ns in REAL_SETS:
        R = load_responses(data_dir / "responses" / rel)
        out.append(_split(name, R, ns, "real", split))
    return out


def many_target_sets(n_items: int = 1000, n_targets: int = 200) -> list[dict]:
    """Synthetic sets with 6 sources and many targets: the same generator (``close``: corr 0.6, K = 6,
    2 anti-correlated metrics) and one with more topic structure and noise (``noisy``)."""
    out: list[dict] = []
    sets: tuple[tuple[str, dict[str, Any]], ...] = (
        ("synth_close", dict(corr=0.6, n_negative=2, seed=201)),
        ("synth_noisy", dict(corr=0.3, n_negative=2, topic_strength=1.5, noise=0.1, seed=202)))
    for name, kw in sets:
        R = make_multimetric(6 + n_targets, n_items, 6, **kw)
        out.append(_split(name, R, 6, "synthetic"))
    return out


# --------------------------------------------------------------------------- exact backends on tiny instances
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
    synth: list[tuple[str, dict[str, Any]]] = [("synth_mixed", dict(corr=0.6, n_negative=3, n_metrics=6, seed=102))]
    if not quick:
        synth = [("synth_pos", dict(corr=0.7, n_metrics=6, seed=101)), *synth,
                 ("synth_binary", dict(corr=0.3, n_metrics=4, kind="binary", seed=103))]
    for name, kw in synth:
        R = make_multimetric(20, n_items, **kw)
        out.append(_split(name, R, 6, "synthetic"))
    return out


#: Source/target splits by name: the paper's (evenly spaced sources) and its weak-to-strong one.
SPLITS = {"paper": paper_split, "weak2strong": weak_to_strong_split}


def _split(name: str, R: Any, n_sources: int, kind: str, split: str = "paper") -> dict:
    if split not in SPLITS:
        raise InvalidInputError(f"split: expected one of {', '.join(SPLITS)}, got {split!r}")
    sp = SPLITS[split](R, n_sources)
    T = R.oriented()
    Xs, Yt = sp.take(T)
    return {"name": name, "kind": kind, "X": Xs, "Yt": Yt, "Y_all": T, "metrics": [str(m) for m in R.metrics],
            "n_sources": n_sources, "n_targets": int(sp.targets.size), "N": int(Xs.shape[1]), "K": int(Xs.shape[2]),
            "split": split}


def baseline_rows(sets: list[dict], retentions: tuple[float, ...] = (0.2,), seeds: int = 5,
                  methods: tuple[str, ...] = ("holocosm", "random"), *, quiet: bool = False) -> list[dict]:
    """Registered comparison methods (:func:`benchsel.heuristics.holocosm.get_baseline`) on split sets.

    One row per (data set, retention, seed, method, selection target): ``method`` the registered name,
    ``target`` the selection metric of a single-metric method (each metric index, then ``"average"``;
    None for the others), ``label`` the selection's own name (e.g. ``"anchorpoints_m0"``), the
    selection, its feasibility for the formulation, and the fidelity of the method's own estimate on the
    held-out targets, per metric (``nmae``, ``sp``) and summarised. Formulation and method seeds are ``s``.
    """
    for m in methods:
        get_baseline(m)  # unknown names fail before any run
    rows: list[dict] = []
    for ds in sets:
        X, Yt = ds["X"], ds["Yt"]
        muY = Yt.mean(axis=1)
        t0 = time.perf_counter()
        for rho in retentions:
            for s in range(seeds):
                f = RankingRiskReconstruction(X, retention=rho, seed=s)
                for name in methods:
                    b = get_baseline(name)
                    for tgt in ([*range(f.n_metrics), "average"] if b.per_metric else [None]):
                        t1 = time.perf_counter()
                        sel = b.build(f, seed=s) if tgt is None else b.build(f, metric=tgt, seed=s)
                        secs = time.perf_counter() - t1
                        fd = fidelity(sel.estimate(f, Yt[:, sel.selection, :]), muY)
                        rows.append({"dataset": ds["name"], "kind": ds["kind"], "split": ds["split"],
                                     "retention": rho, "seed": s, "B": f.budget, "method": name, "target": tgt,
                                     "label": sel.method, "seconds": secs, "selection": sel.selection.tolist(),
                                     "feasible": bool(f.check(sel.selection)), "nmae": fd.nmae.tolist(),
                                     "sp": fd.spearman.tolist(), **fd.summary()})
        if not quiet:
            print(f"{ds['name']} ({ds['split']} split, N={ds['N']}, K={ds['K']}, {ds['n_sources']} sources, "
                  f"{ds['n_targets']} targets): {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


#: The methods of the ``fidelity`` part (single-metric AnchorPoints on every metric and the AverageMetric).
FIDELITY_METHODS = ("holocosm", "random", "random_sac", "swap_unconstrained", "anchorpoints", "kmeans")


def fidelity_runs(sets: list[dict], retentions=RETENTIONS, seeds: int = 5, quiet: bool = False) -> list[dict]:
    """One row per (dataset, retention, seed, method), ``method`` the selection's label
    (:func:`baseline_rows` of :data:`FIDELITY_METHODS`)."""
    rows = baseline_rows(sets, tuple(retentions), seeds, FIDELITY_METHODS, quiet=quiet)
    return [{**r, "method": r["label"]} for r in rows]


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
            def reduction(key: str, h: list = h, r: list = r) -> float:
                return float(1 - np.mean([x[key] for x in h]) / np.mean([x[key] for x in r]))

            out["claim"][group] = {
                "datasets": names,
                "mean_nmae_reduction_of_macro": reduction("mean_nmae"),
                "worst_nmae_reduction_of_macro": reduction("worst_nmae"),
                "mean_nmae_reduction_per_dataset": {d: 1 - a["mean_nmae"] / b["mean_nmae"]
                                                    for d, a, b in zip(names, h, r)},
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
        print(f"\nMacro average over {key} datasets (equal weight): "
              "mean NMAE / worst NMAE / mean SP / worst SP / mean tau")
        for rho in rhos:
            print(f"  retention {int(100 * rho)}%")
            for m in REPORTED:
                v = out["macro"].get(f"{key}|{rho}|{m}")
                if v:
                    print(f"    {m:24}{v['mean_nmae']:8.4f}{v['worst_nmae']:8.4f}{v['mean_sp']:8.4f}"
                          f"{v['worst_sp']:8.4f}{v['mean_tau']:8.4f}   feasible share {v['feasible']:.2f}")
    print("\nPaper's claim at 20 %: HoloCosm mean NMAE 35.3 % (worst 39.5 %) lower than Random")
    for g, c in out["claim"].items():
        per = ", ".join(f"{d} {100 * v:+.1f}%" for d, v in c["mean_nmae_reduction_per_dataset"].items())
        print(f"  {g:9}: mean NMAE {100 * c['mean_nmae_reduction_of_macro']:+.1f} %, worst NMAE "
              f"{100 * c['worst_nmae_reduction_of_macro']:+.1f} % (positive = lower than Random); "
              f"better mean NMAE on {c['wins_mean_nmae']}/{len(c['datasets'])}, mean SP on "
              f"{c['wins_mean_sp']}/{len(c['datasets'])}; per dataset: {per}")


# --------------------------------------------------------------------------- main
