"""RepCore benchmark: alignment speed, planted-group recovery, fidelity, the paper's Table 16.

Usage::

    python -m benchsel.benchmarks.studies.repcore --part speed        # 2 000 items x 10 models x width 1 024
    python -m benchsel.benchmarks.studies.repcore --part clustering   # adjusted Rand index of the planted groups
    python -m benchsel.benchmarks.studies.repcore --part synthetic    # MAE / Spearman, 5, 10, 20 sources
    python -m benchsel.benchmarks.studies.repcore --part arc          # 0/1 K-means + Ridge on ARC-Challenge
    python -m benchsel.benchmarks.studies.repcore --quick             # every part, small (~1 min)
    python -m benchsel.benchmarks.studies.repcore --out rc.json       # also write every row as JSON

Parts:

* ``speed`` — :class:`~benchsel.formulations.repcore.RepCoreAligner` with its
  defaults on :func:`~benchsel.instances.make_hidden_states` data (2 000 items,
  10 models, every hidden state 1 024 wide): seconds of the fit, epochs, test
  AUC; then ``"spherical-kmeans"`` (k = 30) on the consensus embedding.
* ``clustering`` — synthetic hidden states with 8 planted item groups, 5 / 10 /
  20 source models: adjusted Rand index (ARI) between the planted groups and
  8 clusters of (a) the consensus embedding (spherical k-means), (b) the
  items' 0/1 source-correctness vectors (k-means: the discrete ablation),
  (c) the standardised hidden states of all sources, concatenated (spherical
  k-means; no alignment, a reference).
* ``synthetic`` — the same data with 100 target models (correctness only):
  RepCore (consensus embedding, spherical k-means anchors, ``"repcore-ridge"``)
  against 0/1 K-means + Ridge (same estimator), AnchorPoints (k-medoids on the
  sources' correlation distance by FasterPAM, cluster-weighted estimate),
  tinyBenchmarks (k-medoids on the items' fitted 2PL parameters, gp-IRT estimate),
  random items with the coreset mean and with ``"repcore-ridge"``, and the
  concatenated raw hidden states; k = 10 / 30 / 50. MAE of the targets'
  estimated accuracy and Spearman of their ranking, mean and 95 % interval
  over the seeds (each seed a new population, alignment and clustering).
* ``arc`` — the paper's Table 16 pipeline on ``openllm_v2_arc_challenge``
  (218 models x 1 172 items): 10 random draws of 10 source models, every other
  model a target; 0/1 K-means + Ridge at K = 10..50 (with random + mean,
  AnchorPoints and tinyBenchmarks' gp-IRT on the same draws), beside the paper's figures.

BLAS is pinned to one thread (set before numpy is imported): on this shared
2-core machine the small products of the alignment's mini-batches ran 15x
slower with two BLAS threads. Timings depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import comb
from scipy.stats import t as student_t

from benchsel.benchmarks._blas import one_blas_thread
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.kmedoids import KMedoids, dissimilarity
from benchsel.formulations.repcore import RepCoreAligner
from benchsel.instances.hidden import make_hidden_states
from benchsel.instances.responses import load_responses
from benchsel.solvers import solve
from benchsel.solvers.selections import irt_kmedoids

from .._data import default_data_dir
from ..fidelity import rank_correlations

SOURCES = (5, 10, 20)
KS_SYNTHETIC = (10, 30, 50)
KS_ARC = (10, 20, 30, 40, 50)
#: The paper's Table 16, ARC-Challenge, 0/1 K-means + Ridge (K: Spearman, MAE) and RepCore.
PAPER_T16_DISCRETE = {10: (0.685, 0.0719), 20: (0.803, 0.0578), 30: (0.850, 0.0512), 40: (0.874, 0.0485),
                      50: (0.894, 0.0449)}
PAPER_T16_REPCORE = {10: (0.707, 0.0720), 20: (0.820, 0.0500), 30: (0.871, 0.0409), 40: (0.900, 0.0358),
                     50: (0.921, 0.0321)}
#: Synthetic population: items, groups, and the hidden-state generator's settings.
N_ITEMS, N_GROUPS, N_TARGETS = 1000, 8, 100


# --------------------------------------------------------------------------- measures
def adjusted_rand_index(a: Any, b: Any) -> float:
    """Adjusted Rand index of two labelings of the same items (1 = identical partitions, ~0 = chance)."""
    _, a = np.unique(np.asarray(a), return_inverse=True)
    _, b = np.unique(np.asarray(b), return_inverse=True)
    C = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(C, (a, b), 1)
    s = comb(C, 2).sum()
    sa, sb, n = comb(C.sum(axis=1), 2).sum(), comb(C.sum(axis=0), 2).sum(), comb(a.size, 2)
    expected = sa * sb / n
    denom = (sa + sb) / 2 - expected
    return float((s - expected) / denom) if denom > 0 else 1.0


def score(est: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """MAE (accuracy points, 0-1 scale), Spearman and Kendall tau-b of estimated vs true target scores."""
    est = np.asarray(est, dtype=float)
    sp, kt = rank_correlations(est, truth)
    return {"mae": float(np.mean(np.abs(est - truth))), "spearman": sp, "kendall": kt}


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95 % t-interval half-width (NaNs dropped); half-width NaN for one value."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan, 0
    hw = float(student_t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), hw, int(v.size)


def _fmt(m: float, hw: float, digits: int = 3) -> str:
    if not np.isfinite(m):
        return "-"
    return f"{m:.{digits}f}" if not np.isfinite(hw) else f"{m:.{digits}f} ± {hw:.{digits}f}"


# --------------------------------------------------------------------------- selections
def _concat_states(hidden_states: list[np.ndarray]) -> np.ndarray:
    """Standardised hidden states of every source side by side, shape (N, sum d_m)."""
    out = []
    for h in hidden_states:
        sd = h.std(axis=0)
        out.append((h - h.mean(axis=0)) / np.where(sd > 0, sd, 1.0))
    return np.hstack(out)


class _Selector:
    """Coreset selections of one population: distance matrices built once, reused for every k."""

    def __init__(self, Y_src: np.ndarray, E: np.ndarray | None = None, raw: np.ndarray | None = None) -> None:
        self.N = Y_src.shape[1]
        self.D = {"binary": dissimilarity(Y_src.T, "euclidean"), "correlation": dissimilarity(Y_src.T, "correlation")}
        self._Y = Y_src
        if E is not None:
            self.D["consensus"] = dissimilarity(E, "cosine")
        if raw is not None:
            self.D["raw"] = dissimilarity(raw, "cosine")

    @property
    def spaces(self) -> set[str]:
        return set(self.D) | {"irt"}

    def select(self, space: str, method: str, k: int, seed: int) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        if space == "irt" and "irt" not in self.D:  # tinyBenchmarks' anchors (the harness's selection), fitted once
            self.D["irt"] = irt_kmedoids(self._Y, k, seed=0).D
        res = solve(KMedoids(self.D[space], k), method, seed=seed)
        return res.selection, time.perf_counter() - t0

    def labels(self, space: str, method: str, k: int, seed: int) -> np.ndarray:
        f = KMedoids(self.D[space], k)
        return f.assign(solve(f, method, seed=seed).selection)


def _estimate(name: str, Y_src: np.ndarray, sel: np.ndarray, Y_tgt: np.ndarray) -> np.ndarray:
    return np.asarray(get_estimator(name).fit(Y_src, sel).predict(Y_tgt[:, sel]), dtype=float)


# --------------------------------------------------------------------------- speed
def speed(n_items: int = 2000, n_models: int = 10, width: int = 1024, seed: int = 0, quiet: bool = False) -> dict:
    """Alignment seconds on ``n_items x n_models x width`` hidden states (defaults of the aligner)."""
    hs = make_hidden_states(n_items=n_items, n_models=n_models, widths=width, seed=seed)
    t0 = time.perf_counter()
    al = RepCoreAligner(seed=seed).fit(hs.hidden_states, hs.Y)
    fit_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    f = KMedoids.from_features(al.embedding_, 30, metric="cosine")
    res = solve(f, "spherical-kmeans", seed=seed)
    km_s = time.perf_counter() - t1
    row = {"part": "speed", "n_items": n_items, "n_models": n_models, "width": width, "fit_seconds": fit_s,
           "epochs": al.n_epochs_, "best_epoch": al.best_epoch_, "stopped": al.stopped_, "test_auc": al.test_auc_,
           "sizes": list(al.sizes_), "spherical_kmeans_seconds": km_s, "anchors": int(res.selection.size)}
    if not quiet:
        print(f"speed: {n_items} items x {n_models} models x width {width}: alignment {fit_s:.1f} s "
              f"({al.n_epochs_} epochs, best {al.best_epoch_}, {al.stopped_}; network {al.sizes_}), test AUC "
              f"{al.test_auc_:.3f}; spherical-kmeans k=30 {km_s:.2f} s (incl. the cosine matrix)", flush=True)
    return row


# --------------------------------------------------------------------------- synthetic
#: Overrides of the aligner's and the generator's parameters (``--aligner`` / ``--generator``).
ALIGNER: dict[str, Any] = {}
GENERATOR: dict[str, Any] = {}


def _population(seed: int, n_sources: int, n_items: int, n_targets: int) -> Any:
    kw = {"n_groups": N_GROUPS, **GENERATOR}
    return make_hidden_states(n_items=n_items, n_models=n_sources, n_targets=n_targets, seed=10_000 + seed, **kw)


def _align(hs: Any, Y: np.ndarray, seed: int) -> RepCoreAligner:
    return RepCoreAligner(seed=seed, **ALIGNER).fit(hs.hidden_states, Y)


def clustering(seeds: int = 10, sources: tuple[int, ...] = SOURCES, n_items: int = N_ITEMS,
               quiet: bool = False) -> list[dict]:
    """ARI of the planted groups: consensus embedding vs 0/1 vectors vs concatenated raw states."""
    rows = []
    for s in range(seeds):
        for S in sources:
            hs = _population(s, S, n_items, 0)
            Y = hs.Y[:S]
            al = _align(hs, Y, s)
            sel = _Selector(Y, al.embedding_, _concat_states(hs.hidden_states))
            row = {"part": "clustering", "seed": s, "n_sources": S, "test_auc": al.test_auc_,
                   "align_seconds": al.fit_seconds_}
            for name, space, method in (("consensus", "consensus", "spherical-kmeans"),
                                        ("binary", "binary", "kmeans"), ("raw", "raw", "spherical-kmeans")):
                row[f"ari_{name}"] = adjusted_rand_index(sel.labels(space, method, N_GROUPS, s), hs.groups)
            rows.append(row)
            if not quiet:
                print(f"clustering seed {s} |S|={S}: ARI consensus {row['ari_consensus']:.3f}, 0/1 "
                      f"{row['ari_binary']:.3f}, raw {row['ari_raw']:.3f} (test AUC {al.test_auc_:.3f}, "
                      f"{al.fit_seconds_:.1f} s)", flush=True)
    return rows


#: (pipeline, space, method, estimator); "random" draws items uniformly.
PIPELINES = (
    ("RepCore", "consensus", "spherical-kmeans", "repcore-ridge"),
    ("0/1 K-means + Ridge", "binary", "kmeans", "repcore-ridge"),
    ("AnchorPoints", "correlation", "fasterpam", "cluster-weighted"),
    ("tinyBenchmarks gp-IRT", "irt", "fasterpam", "irt"),
    ("Random + mean", "random", "", "mean"),
    ("Random + Ridge", "random", "", "repcore-ridge"),
    ("raw states + Ridge", "raw", "spherical-kmeans", "repcore-ridge"),
)


def _run_pipelines(sel: _Selector, Y_src: np.ndarray, Y_tgt: np.ndarray, ks: tuple[int, ...], seed: int,
                   pipelines: tuple = PIPELINES) -> list[dict]:
    truth = Y_tgt.mean(axis=1)
    out = []
    for k in ks:
        rnd = np.sort(np.random.default_rng([seed, k]).choice(sel.N, size=k, replace=False))
        for name, space, method, est in pipelines:
            if space != "random" and space not in sel.spaces:
                continue
            if space == "random":
                S, sec = rnd, 0.0
            else:
                S, sec = sel.select(space, method, k, seed)
            r = score(_estimate(est, Y_src, S, Y_tgt), truth)
            out.append({"k": k, "pipeline": name, "select_seconds": sec, **r})
    return out


def synthetic(seeds: int = 10, sources: tuple[int, ...] = SOURCES, ks: tuple[int, ...] = KS_SYNTHETIC,
              n_items: int = N_ITEMS, n_targets: int = N_TARGETS, quiet: bool = False) -> list[dict]:
    """Fidelity on held-out targets of every pipeline, per seed x source count x k."""
    rows = []
    for s in range(seeds):
        for S in sources:
            hs = _population(s, S, n_items, n_targets)
            Y_src, Y_tgt = hs.Y[:S], hs.Y[S:]
            al = _align(hs, Y_src, s)
            sel = _Selector(Y_src, al.embedding_, _concat_states(hs.hidden_states))
            for r in _run_pipelines(sel, Y_src, Y_tgt, ks, s):
                rows.append({"part": "synthetic", "seed": s, "n_sources": S, **r})
            if not quiet:
                cur = [r for r in rows if r["seed"] == s and r["n_sources"] == S]
                msg = ", ".join(f"{r['pipeline']} {r['mae']:.4f}" for r in cur if r["k"] == ks[len(ks) // 2])
                print(f"synthetic seed {s} |S|={S} k={ks[len(ks) // 2]} MAE: {msg}", flush=True)
    return rows


# --------------------------------------------------------------------------- ARC (Table 16)
def arc(draws: int = 10, n_sources: int = 10, ks: tuple[int, ...] = KS_ARC, data_dir: Path | None = None,
        quiet: bool = False) -> list[dict]:
    """0/1 K-means + Ridge (and context pipelines) on ``openllm_v2_arc_challenge``, random source draws."""

    data_dir = data_dir or default_data_dir()
    path = None if data_dir is None else Path(data_dir) / "responses" / "benchmark_prediction" / \
        "openllm_v2_arc_challenge.npz"
    if path is None or not path.is_file():
        raise SystemExit(f"arc: {path} not found; pass --data-dir pointing at the shared data folder")
    Y = load_responses(path).matrix(0)
    rows = []
    pipelines = tuple(p for p in PIPELINES if p[1] in ("binary", "correlation", "irt", "random"))
    for d in range(draws):
        rng = np.random.default_rng(d)
        src = np.sort(rng.choice(Y.shape[0], size=n_sources, replace=False))
        tgt = np.setdiff1d(np.arange(Y.shape[0]), src)
        sel = _Selector(Y[src])
        for r in _run_pipelines(sel, Y[src], Y[tgt], ks, d, pipelines):
            rows.append({"part": "arc", "draw": d, "n_sources": n_sources, **r})
        if not quiet:
            cur = [r for r in rows if r["draw"] == d and r["pipeline"] == "0/1 K-means + Ridge"]
            print(f"arc draw {d}: 0/1 K-means + Ridge " + ", ".join(
                f"K={r['k']} rho {r['spearman']:.3f} MAE {r['mae']:.4f}" for r in cur), flush=True)
    return rows


# --------------------------------------------------------------------------- summaries
def _group(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def print_clustering(rows: list[dict]) -> None:
    print("\n| sources | ARI consensus (RepCore) | ARI 0/1 vectors | ARI raw states (concatenated) | test AUC "
          "| seeds |")
    print("|---|---|---|---|---|---|")
    for (S,), g in sorted(_group(rows, ("n_sources",)).items()):
        cells = [_fmt(*interval([r[f"ari_{n}"] for r in g])[:2]) for n in ("consensus", "binary", "raw")]
        auc = _fmt(*interval([r["test_auc"] for r in g])[:2])
        print(f"| {S} | " + " | ".join(cells) + f" | {auc} | {len(g)} |")


def print_fidelity(rows: list[dict], part: str) -> None:
    sub = [r for r in rows if r["part"] == part]
    if not sub:
        return
    names = [p[0] for p in PIPELINES if any(r["pipeline"] == p[0] for r in sub)]
    for metric, digits in (("mae", 4), ("spearman", 3)):
        print(f"\n{part}: {metric} (mean ± 95 % interval over {'draws' if part == 'arc' else 'seeds'})\n")
        print("| sources | k | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        for (S, k), g in sorted(_group(sub, ("n_sources", "k")).items()):
            cells = []
            for n in names:
                m, hw, _ = interval([r[metric] for r in g if r["pipeline"] == n])
                cells.append(_fmt(m, hw, digits))
            print(f"| {S} | {k} | " + " | ".join(cells) + " |")
    if part == "arc":
        print("\nARC-Challenge, 0/1 K-means + Ridge: this run beside the paper's Table 16\n")
        print("| K | Spearman (ours) | Spearman (paper) | MAE (ours) | MAE (paper) "
              "| RepCore in the paper (rho / MAE) |")
        print("|---|---|---|---|---|---|")
        for (_, k), g in sorted(_group(sub, ("n_sources", "k")).items()):
            d = [r for r in g if r["pipeline"] == "0/1 K-means + Ridge"]
            sp, sh, _ = interval([r["spearman"] for r in d])
            ma, mh, _ = interval([r["mae"] for r in d])
            p = PAPER_T16_DISCRETE.get(k, (math.nan, math.nan))
            q = PAPER_T16_REPCORE.get(k, (math.nan, math.nan))
            print(f"| {k} | {_fmt(sp, sh)} | {p[0]:.3f} | {_fmt(ma, mh, 4)} | {p[1]:.4f} | {q[0]:.3f} / {q[1]:.4f} |")


def print_paired(rows: list[dict], base: str = "RepCore",
                 others: tuple[str, ...] = ("0/1 K-means + Ridge", "Random + Ridge")) -> None:
    """MAE of ``base`` minus each of ``others`` on the same seed (negative: ``base`` better), mean ± 95 %."""
    sub = [r for r in rows if r["part"] == "synthetic"]
    names = [o for o in others if any(r["pipeline"] == o for r in sub)]
    if not sub or not names or not any(r["pipeline"] == base for r in sub):
        return
    print(f"\nsynthetic: paired MAE difference, {base} minus each (same seed; negative = {base} better; "
          "wins = seeds where it is lower)\n")
    print("| sources | k | " + " | ".join(f"{base} − {n}" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for (S, k), g in sorted(_group(sub, ("n_sources", "k")).items()):
        mine = {r["seed"]: r["mae"] for r in g if r["pipeline"] == base}
        cells = []
        for n in names:
            theirs = {r["seed"]: r["mae"] for r in g if r["pipeline"] == n}
            d = [mine[s] - theirs[s] for s in mine if s in theirs]
            m, hw, cnt = interval(d)
            cells.append(f"{_fmt(m, hw, 4)} (wins {sum(x < 0 for x in d)}/{cnt})")
        print(f"| {S} | {k} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.repcore",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("all", "speed", "clustering", "synthetic", "arc"), default="all")
    ap.add_argument("--quick", action="store_true", help="small versions of every part")
    ap.add_argument("--seeds", type=int, default=None, help="synthetic seeds / ARC source draws (default 10; quick 2)")
    ap.add_argument("--sources", type=str, default=None, help="source counts, comma-separated (default 5,10,20)")
    ap.add_argument("--speed-shape", type=str, default=None,
                    help="items,models,width of the speed part (default 2000,10,1024; quick 500,10,256)")
    ap.add_argument("--data-dir", type=Path, default=None, help="the shared data folder (default: found)")
    ap.add_argument("--aligner", type=json.loads, default={},
                    help='RepCoreAligner parameters as JSON for the synthetic parts, e.g. \'{"hidden": []}\'')
    ap.add_argument("--generator", type=json.loads, default={},
                    help='make_hidden_states parameters as JSON, e.g. \'{"confidence": 0.0}\'')
    ap.add_argument("--out", type=Path, default=None, help="write every row as JSON")
    ap.add_argument("--from-json", type=Path, default=None,
                    help="print the tables of a file written by --out (no run)")
    args = ap.parse_args(argv)
    if args.from_json is not None:
        return _reprint(json.loads(args.from_json.read_text()))
    ALIGNER.update(args.aligner)
    GENERATOR.update(args.generator)
    seeds = args.seeds or (2 if args.quick else 10)
    sources = tuple(int(s) for s in args.sources.split(",")) if args.sources else ((5,) if args.quick else SOURCES)
    n_items = 300 if args.quick else N_ITEMS
    rows: list[dict] = []
    parts = ("speed", "clustering", "synthetic", "arc") if args.part == "all" else (args.part,)
    if "speed" in parts:
        n, m, w = (int(x) for x in (args.speed_shape or ("500,10,256" if args.quick else "2000,10,1024")).split(","))
        rows.append(speed(n_items=n, n_models=m, width=w))
    if "clustering" in parts:
        cl = clustering(seeds, sources, n_items)
        rows += cl
        print_clustering(cl)
    if "synthetic" in parts:
        rows += synthetic(seeds, sources, (10, 30) if args.quick else KS_SYNTHETIC, n_items,
                          30 if args.quick else N_TARGETS)
        print_fidelity(rows, "synthetic")
        print_paired(rows)
    if "arc" in parts:
        rows += arc(seeds, ks=(10, 30) if args.quick else KS_ARC, data_dir=args.data_dir)
        print_fidelity(rows, "arc")
    if args.out:
        rows.append({"part": "settings", "aligner": ALIGNER, "generator": GENERATOR, "argv": sys.argv[1:]})
        args.out.write_text(json.dumps(rows, indent=1, default=float))
        print(f"\nwrote {len(rows)} rows to {args.out}", file=sys.stderr)
    return 0


def _reprint(rows: list[dict]) -> int:
    """The tables of saved rows (the file of ``--out``), as a run prints them."""
    rows = [r for r in rows if r.get("part") != "settings"]
    for r in rows:
        if r["part"] == "speed":
            print(f"speed: {r['n_items']} items x {r['n_models']} models x width {r['width']}: alignment "
                  f"{r['fit_seconds']:.1f} s ({r['epochs']} epochs, best {r['best_epoch']}, {r['stopped']}; network "
                  f"{r['sizes']}), test AUC {r['test_auc']:.3f}; spherical-kmeans k=30 "
                  f"{r['spherical_kmeans_seconds']:.2f} s")
    cl = [r for r in rows if r["part"] == "clustering"]
    if cl:
        print_clustering(cl)
    print_fidelity(rows, "synthetic")
    print_paired(rows)
    print_fidelity(rows, "arc")
    return 0


if __name__ == "__main__":
    with one_blas_thread():
        raise SystemExit(main())
