"""Fidelity benchmark: selections x estimators on real binary response matrices.

For each dataset (models x items, binary), protocol and split the models are
divided into *sources* (scores on every item known) and *targets*; every
registered selection the benchmark runs by default (``selection_names(fidelity=True)``, see
:func:`benchsel.solvers.compression.selection_names`; the others when named)
chooses ``k`` items from the sources' scores, every estimator is fitted on
the sources and predicts the targets' full-benchmark accuracy from their
scores on the ``k`` items. Protocols (the benchmark-prediction paper's):

* ``interpolation`` -- a random 25 % of the models are targets (one draw per split);
* ``extrapolation`` -- the 25 % best models by full score are targets, the rest
  sources (the same models in every split: splits differ only in the
  selections' and estimators' seeds).

Per (dataset, protocol, k, pipeline = selection + estimator) it reports the
mean absolute error in percentage points with a 95 % t-interval over splits,
the Spearman and Kendall tau-b correlations of estimated and true target
scores, and the selection and estimation seconds; one PNG per dataset plots
MAE against ``k``. Results go to ``<out>/fidelity.jsonl`` (one row per
dataset, protocol, split, k, selection, estimator); finished rows are skipped
when the same command runs again::

    python -m benchsel.benchmarks.fidelity [--out results/fidelity] [--splits 10] [--jobs 1]
        [--datasets NAME ...] [--protocols interpolation extrapolation] [--ks 10 25 50 100]
        [--selections random kmedoids ...] [--estimators mean ridge "irt:variant=p-irt" ...]
        [--time-limit 10] [--report-only]

``benchsel run fidelity`` runs the same with the defaults (``--seeds`` sets the
number of splits, ``--methods`` the selections, ``--instances`` dataset
patterns, ``--time-limit`` the selection time limit, ``--out`` the folder).
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import BenchselError, InvalidInputError
from benchsel.formulations.estimation import get_estimator
from benchsel.instances.responses import load_responses
from benchsel.solvers.compression import get_selection, select_items, selection_names
from benchsel.solvers.methods import get_method

from ._blas import init_worker
from ._data import default_data_dir
from .fidelity_groups import coverage_text, small_k_text, target_record
from .tasks import parse_method

__all__ = [
    "DATASETS",
    "DEFAULT_ESTIMATORS",
    "KS",
    "PROTOCOLS",
    "main",
    "parse_spec",
    "plot_dataset",
    "relative_change_interval",
    "render_tables",
    "run",
    "run_unit",
    "split_models",
    "summarise",
]

#: name -> path under ``<data-dir>/responses``
DATASETS = {
    "helm_lite_mmlu": "benchmark_prediction/helm_lite_mmlu.npz",
    "openllm_v2_arc_challenge": "benchmark_prediction/openllm_v2_arc_challenge.npz",
    "openllm_v2_musr": "benchmark_prediction/openllm_v2_musr.npz",
    "glue_sst2": "benchmark_prediction/glue_sst2.npz",
}
#: The nine matrices not used for tuning (the benchmark-prediction paper's others), for ``--paper``.
PAPER_DATASETS = {n: f"benchmark_prediction/{n}.npz" for n in (
    "glue_mrpc", "glue_rte", "helm_lite_commonsense", "helm_lite_gsm", "helm_lite_legalbench", "helm_lite_math",
    "helm_lite_med_qa", "openllm_v2_ifeval", "openllm_v2_math")}
ALL_DATASETS = {**DATASETS, **PAPER_DATASETS}
#: The paper's extrapolation split: the weakest SOURCE share of the models are sources, the strongest
#: TARGET share targets (the middle 20 % unused).
PAPER_SOURCE_SHARE, PAPER_TARGET_SHARE = 0.5, 0.3
#: Pipelines of ``--paper``: the default, its parts, and the methods a user would otherwise pick.
PAPER_PIPELINES = ("stratified+auto", "stratified+model-assisted", "kmedoids+stacked", "random+mean",
                   "random+ridge", "kmedoids+cluster-weighted", "irt-anchor+irt")
#: Miscoverage of the intervals the benchmark checks (90 % intervals).
INTERVAL_ALPHA = 0.1
PROTOCOLS = ("interpolation", "extrapolation", "paper-extrapolation")
KS = (10, 25, 50, 100)
DEFAULT_ESTIMATORS = ("auto", "model-assisted", "mean", "cluster-weighted", "ridge", "ridge:target=unseen",
                      "repcore-ridge", "bayes-aipw", "source-assisted", "irt:variant=p-irt", "irt", "stacked",
                      "stacked:cv=upward")
#: Default seconds per selection solve (HiGHS stops there with its gap).
TIME_LIMIT = 10.0
TARGET_SHARE = 0.25
JSONL = "fidelity.jsonl"
#: Pipelines the docs recommend (compared cell by cell in the report).
RECOMMENDED = {"interpolation": ("stratified+auto", "random+ridge"),
               "extrapolation": ("stratified+auto", "random+mean"),
               "paper-extrapolation": ("stratified+auto", "random+mean")}
#: The default of :func:`benchsel.compress` as a pipeline label.
DEFAULT_PIPELINE = "stratified+auto"
#: Pipelines every plot shows (when measured), besides each dataset's best.
PLOT_ALWAYS = ("random+mean", "random+ridge", "kmedoids+cluster-weighted", "kmedoids+stacked",
               "irt-anchor+repcore-ridge", "random+source-assisted")


def parse_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:key=value,key=value"`` (values read as JSON when they parse)."""

    ms = parse_method(text)
    return ms.name, dict(ms.options)


def _label(text: str) -> str:

    return parse_method(text).label


def split_models(Y: np.ndarray, protocol: str, split: int, share: float = TARGET_SHARE
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) model indices, each sorted.

    ``interpolation``: a random ``share`` of the models (seeded by ``split``);
    ``extrapolation``: the ``share`` best by full score (ties by index);
    ``paper-extrapolation``: the weakest 50 % are sources, the strongest 30 % targets.
    """
    M = Y.shape[0]
    n_t = max(1, round(share * M))
    if protocol == "interpolation":
        perm = np.random.default_rng(10_000 + split).permutation(M)
        tgt = perm[:n_t]
    elif protocol == "extrapolation":
        tgt = np.argsort(-Y.mean(axis=1), kind="stable")[:n_t]
    elif protocol == "paper-extrapolation":
        order = np.argsort(Y.mean(axis=1), kind="stable")  # weakest first, ties by index
        src = np.sort(order[:math.floor(PAPER_SOURCE_SHARE * M)])
        return src, np.sort(order[M - max(1, round(PAPER_TARGET_SHARE * M)):])
    else:
        raise InvalidInputError(f"protocols: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    src = np.setdiff1d(np.arange(M), tgt)
    return src, np.sort(tgt)


def rank_correlations(est: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    import warnings

    from scipy.stats import kendalltau, spearmanr

    if np.ptp(est) == 0 or np.ptp(truth) == 0:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(est, truth).statistic), float(kendalltau(est, truth, variant="b").statistic)


def load_dataset(data_dir: Path, name: str) -> np.ndarray:
    """The binary matrix (models x items) of ``name``; all-zero models dropped (as the source paper's loader)."""

    if name not in ALL_DATASETS:
        raise InvalidInputError(f"datasets: unknown dataset {name!r}; datasets: {', '.join(ALL_DATASETS)}")
    p = Path(data_dir) / "responses" / ALL_DATASETS[name]
    if not p.is_file():
        raise InvalidInputError(f"data-dir: {str(p)!r} is missing (dataset {name!r})")
    Y = np.asarray(load_responses(p).matrix(0), dtype=float)
    return Y[Y.mean(axis=1) > 1e-8]


def run_unit(unit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every (k, selection, estimator) row of one (dataset, protocol, split) not in ``unit["done"]``.

    ``unit`` holds ``data_dir, dataset, protocol, split, ks, selections, estimators, time_limit, done``
    (``done``: set of row keys already stored).
    """

    Y = load_dataset(unit["data_dir"], unit["dataset"])
    src, tgt = split_models(Y, unit["protocol"], unit["split"])
    Ys, Yt = Y[src], Y[tgt]
    truth = Yt.mean(axis=1)
    binary = bool(np.isin(Y, (0.0, 1.0)).all())
    split = int(unit["split"])
    done = unit["done"]
    rows: list[dict[str, Any]] = []
    for k in unit["ks"]:
        for sel_name in unit["selections"]:
            pairs = unit.get("pipelines")
            todo = [e for e in unit["estimators"]
                    if row_key(unit["dataset"], unit["protocol"], split, k, sel_name, e) not in done
                    and (pairs is None or f"{sel_name}+{_label(e)}" in pairs)]
            if not todo:
                continue
            t0 = time.perf_counter()
            err = None
            weights: np.ndarray | None = None
            items: np.ndarray | None = None
            try:
                items, sel_info, weights = _select(Ys, k, sel_name, split, unit["time_limit"])
            except BenchselError as e:
                err = f"{type(e).__name__}: {e}"
                items = weights = None
                sel_info = {"selection_seconds": time.perf_counter() - t0, "termination": "error"}
            for e_spec in todo:
                name, opts = parse_spec(e_spec)
                row: dict[str, Any] = {
                    "dataset": unit["dataset"], "protocol": unit["protocol"], "split": split, "k": int(k),
                    "selection": sel_name, "estimator": _label(e_spec), "pipeline": f"{sel_name}+{_label(e_spec)}",
                    "n_sources": int(src.size), "n_targets": int(tgt.size), "n_items": int(Y.shape[1]), **sel_info,
                }
                if items is None:
                    row.update({"error": err, "mae": None})
                    rows.append(row)
                    continue
                if name in ("irt", "stacked", "auto"):
                    opts.setdefault("seed", split)
                t1 = time.perf_counter()
                try:
                    est = get_estimator(name, **opts)
                    if weights is not None and "weights" in est.get_params() and "weights" not in opts:
                        est.set_params(weights=weights)  # the sampling design's weights, as compress passes them
                    est.fit(Ys, items)
                    pred = est.predict(Yt[:, items])
                    seconds = time.perf_counter() - t1
                    lo, hi = est.predict_interval(Yt[:, items], alpha=INTERVAL_ALPHA)
                except BenchselError as ex:
                    row.update({"error": f"{type(ex).__name__}: {ex}", "mae": None})
                    rows.append(row)
                    continue
                sp, kt = rank_correlations(pred, truth)
                row.update({"estimation_seconds": seconds,
                            "mae": float(100 * np.abs(pred - truth).mean()),
                            "bias": float(100 * (pred - truth).mean()), "spearman": sp, "kendall": kt,
                            "coverage": float(np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12))),
                            "width": float(100 * np.mean(hi - lo))})
                route = est.route(Yt[:, items]) if est.routes else None
                if route is not None:
                    row["share_model_assisted"] = float(np.mean(route == "model-assisted"))
                row["targets"] = target_record(truth, pred, lo, hi, route, binary=binary)
                rows.append(row)
    return rows


_EXACT_CACHE: dict[tuple, tuple[np.ndarray, dict[str, Any]]] = {}


def _select(Ys: np.ndarray, k: int, name: str, split: int, time_limit: float
            ) -> tuple[np.ndarray, dict[str, Any], np.ndarray | None]:
    """Items chosen by selection ``name`` and facts about the solve.

    A proven optimum of an exact method is reused for the same sources and
    ``k`` within the process (extrapolation splits share their sources); its
    stored seconds are those of the solve that proved it.
    """

    sel_name, sel_opts = parse_spec(name)
    sel = get_selection(sel_name)
    exact = sel.draw is None and get_method(sel.method).kind == "exact"
    key = (hashlib.sha1(np.ascontiguousarray(Ys).tobytes()).hexdigest(), Ys.shape, int(k), name, float(time_limit))
    if exact and key in _EXACT_CACHE:
        items, info = _EXACT_CACHE[key]
        return items, {**info, "reused": True}, None
    t0 = time.perf_counter()
    sr = select_items(Ys, k, sel_name, seed=split, time_limit=time_limit, **sel_opts)
    info = {"selection_seconds": time.perf_counter() - t0, "termination": str(sr.result.termination),
            "gap": sr.result.gap, "objective": sr.result.objective}
    if exact and info["termination"] == "optimal":
        _EXACT_CACHE[key] = (sr.items, info)
    return sr.items, info, sr.weights


def row_key(dataset: str, protocol: str, split: int, k: int, selection: str, estimator: str) -> str:
    return f"{dataset}|{protocol}|{int(split)}|{int(k)}|{selection}|{_label(estimator)}"


def _rkey(r: Mapping[str, Any]) -> str:
    return row_key(r["dataset"], r["protocol"], r["split"], r["k"], r["selection"], r["estimator"])


def read_rows(out: Path) -> list[dict[str, Any]]:
    """Stored rows (the latest per key), skipping unreadable lines."""
    p = Path(out) / JSONL
    if not p.is_file():
        return []
    rows: dict[str, dict[str, Any]] = {}
    with p.open() as fh:
        for line in fh:
            try:
                r = json.loads(line)
                rows[_rkey(r)] = r
            except (ValueError, KeyError, TypeError):
                continue
    return list(rows.values())


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, np.generic):
        return _clean(v.item())
    return v


def run(out: Path, data_dir: Path, *, datasets: Sequence[str] = tuple(DATASETS), protocols: Sequence[str] = PROTOCOLS,
        ks: Sequence[int] = KS, splits: int = 10, selections: Sequence[str] | None = None,
        estimators: Sequence[str] | None = None, time_limit: float = TIME_LIMIT, jobs: int = 1,
        progress: bool = True, pipelines: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Run the missing rows of the grid (resumable); returns every stored row of the grid.

    ``pipelines`` (``"selection+estimator"`` labels) restricts the grid to those pairs; selections and
    estimators then default to theirs (otherwise to every registered selection and
    :data:`DEFAULT_ESTIMATORS`).
    """
    if pipelines:
        pipelines = list(pipelines)
        for pl in pipelines:
            if "+" not in pl:
                raise InvalidInputError(f"pipelines: expected 'selection+estimator', got {pl!r}")
        if not selections:
            selections = list(dict.fromkeys(pl.split("+", 1)[0] for pl in pipelines))
        if estimators is None:
            estimators = list(dict.fromkeys(pl.split("+", 1)[1] for pl in pipelines))
    if estimators is None:
        estimators = DEFAULT_ESTIMATORS

    sels = list(selections) if selections else selection_names(fidelity=True)
    for s in sels:  # a name, or "name:option=value" (a sampling design's options, e.g. "stratified:draws=1")
        get_selection(parse_spec(s)[0])
    for e in estimators:  # names and options checked before any work
        n, o = parse_spec(e)
        get_estimator(n, **o)
    for p in protocols:
        if p not in PROTOCOLS:
            raise InvalidInputError(f"protocols: expected some of {', '.join(PROTOCOLS)}, got {p!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = {_rkey(r) for r in read_rows(out)}
    units = []
    for ds in datasets:
        load_dataset(data_dir, ds)  # missing files: an error before anything runs
        for proto in protocols:
            for sp in range(splits):
                keys = {row_key(ds, proto, sp, k, s, e) for k in ks for s in sels for e in estimators
                        if pipelines is None or f"{s}+{_label(e)}" in pipelines}
                if keys <= done:
                    continue
                units.append({"data_dir": str(data_dir), "dataset": ds, "protocol": proto, "split": sp,
                              "ks": list(ks), "selections": sels, "estimators": list(estimators),
                              "time_limit": float(time_limit), "done": done & keys,
                              "pipelines": None if pipelines is None else set(pipelines)})
    total = len(units)
    if progress:
        print(f"benchsel fidelity: {total} units of (dataset, protocol, split) to run, results in {out / JSONL}",
              file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with (out / JSONL).open("a") as fh:
        def store(rows: list[dict[str, Any]], i: int, u: Mapping[str, Any]) -> None:
            for r in rows:
                fh.write(json.dumps({k: _clean(v) for k, v in r.items()}) + "\n")
            fh.flush()
            if progress:
                print(f"benchsel fidelity: [{i}/{total}] {u['dataset']} {u['protocol']} split {u['split']}: "
                      f"{len(rows)} rows ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

        # spawned workers (even for jobs=1), each with BLAS on one thread (init_worker)
        if units:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=max(1, int(jobs)), mp_context=ctx, initializer=init_worker) as pool:
                futs = {pool.submit(run_unit, u): u for u in units}
                for i, fut in enumerate(as_completed(futs), 1):
                    store(fut.result(), i, futs[fut])
    want = {row_key(ds, p, sp, k, s, e) for ds in datasets for p in protocols for sp in range(splits) for k in ks
            for s in sels for e in estimators if pipelines is None or f"{s}+{_label(e)}" in pipelines}
    return [r for r in read_rows(out) if _rkey(r) in want]


# ------------------------------------------------------------------ summaries
def _t975(n: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1)) if n > 1 else math.nan


def summarise(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (dataset, protocol, k, pipeline): means over splits and the MAE's 95 % t-interval half-width."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("mae") is None:
            continue
        groups.setdefault((r["dataset"], r["protocol"], int(r["k"]), r["pipeline"]), []).append(r)
    out = []
    for (ds, p, k, pipe), rs in groups.items():
        mae = np.array([r["mae"] for r in rs], dtype=float)
        n = mae.size
        half = _t975(n) * mae.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan

        def mean_of(key: str, rs: list[Mapping[str, Any]] = rs) -> float:
            v = np.array([_f(r.get(key)) for r in rs])
            v = v[np.isfinite(v)]
            return float(v.mean()) if v.size else math.nan

        out.append({"dataset": ds, "protocol": p, "k": k, "pipeline": pipe, "selection": rs[0]["selection"],
                    "estimator": rs[0]["estimator"], "splits": n, "mae": float(mae.mean()), "mae_ci": half,
                    "spearman": mean_of("spearman"), "kendall": mean_of("kendall"),
                    "coverage": mean_of("coverage"), "width": mean_of("width"),
                    "mae_sd": float(mae.std(ddof=1)) if n > 1 else math.nan,
                    "selection_seconds": mean_of("selection_seconds"),
                    "estimation_seconds": mean_of("estimation_seconds"),
                    "optimal": sum(r.get("termination") == "optimal" for r in rs)})
    out.sort(key=lambda r: (r["protocol"], r["dataset"], r["k"], r["mae"]))
    return out


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _protocol_order(summary: Iterable[Mapping[str, Any]]) -> list[str]:
    seen = {s["protocol"] for s in summary}
    return [p for p in PROTOCOLS if p in seen] + sorted(seen - set(PROTOCOLS))


def _half(s: Mapping[str, Any]) -> float:
    return s["mae_ci"] if math.isfinite(s["mae_ci"]) else 0.0


def _cell(s: Mapping[str, Any]) -> str:
    return f"{s['mae']:.2f} ± {s['mae_ci']:.2f}" if math.isfinite(s["mae_ci"]) else f"{s['mae']:.2f}"


def render_tables(summary: Sequence[Mapping[str, Any]], *, top: int = 6) -> str:
    """Markdown: per protocol, a best-pipelines table per (dataset, k) and a pipelines x cells MAE table."""
    lines: list[str] = []
    protocols = _protocol_order(summary)
    for p in protocols:
        ps = [s for s in summary if s["protocol"] == p]
        datasets = list(dict.fromkeys(s["dataset"] for s in ps))
        ks = sorted({s["k"] for s in ps})
        pipes = sorted({s["pipeline"] for s in ps})
        by = {(s["dataset"], s["k"], s["pipeline"]): s for s in ps}
        lines.append(f"### {p}: MAE (pp), mean ± 95 % interval over splits; k = {' / '.join(map(str, ks))}")
        lines.append("")
        lines.append("| pipeline | " + " | ".join(datasets) + " | mean |")
        lines.append("|---|" + "---|" * (len(datasets) + 1))
        rank = []
        for pipe in pipes:
            cells, vals = [], []
            for d in datasets:
                c = [by.get((d, k, pipe)) for k in ks]
                cells.append(" / ".join(f"{x['mae']:.2f}" if x else "-" for x in c))
                vals += [x["mae"] for x in c if x]
            mean = float(np.mean(vals)) if len(vals) == len(datasets) * len(ks) else math.nan
            rank.append((mean if math.isfinite(mean) else math.inf, pipe, cells, mean))
        rank.sort()
        for _, pipe, cells, mean in rank:
            lines.append(f"| {pipe} | " + " | ".join(cells) + f" | {mean:.2f} |")
        lines.append("")
        lines.append(f"#### {p}: the {top} best pipelines per cell (MAE ± 95 % interval, Spearman, Kendall tau-b, "
                     "selection + estimation seconds)")
        lines.append("")
        lines.append("| dataset | k | pipeline | MAE (pp) | Spearman | Kendall | sel. s | est. s |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for d in datasets:
            for k in ks:
                cell = sorted((s for s in ps if s["dataset"] == d and s["k"] == k), key=lambda s: s["mae"])
                for s in cell[:top]:
                    lines.append(f"| {d} | {k} | {s['pipeline']} | {_cell(s)} | {s['spearman']:.3f} | "
                                 f"{s['kendall']:.3f} | {s['selection_seconds']:.2f} | {s['estimation_seconds']:.3f} |")
        lines.append("")
    return "\n".join(lines)


#: Peer figures quoted in benchsel's issue 10 (interpolation, MAE in pp, mean of 10 splits; gp-IRT 3 splits), k = 10 /
#: 25 / 50 / 100: ``benchpred``'s random + ridge and AnchorPoints predictor, gp-IRT. Not re-measured here (quoted).
QUOTED_PEERS: dict[str, dict[str, tuple[float, ...]]] = {
    "helm_lite_mmlu": {"random + ridge": (5.59, 4.38, 3.40, 2.64), "AnchorPoints predictor": (4.64, 4.16, 3.70, 4.15),
                       "gp-IRT": (7.10, 6.13, 4.16, 2.46)},
    "openllm_v2_arc_challenge": {"random + ridge": (5.72, 4.33, 3.04, 2.06),
                                 "AnchorPoints predictor": (4.36, 3.87, 3.62, 3.51)},
    "openllm_v2_musr": {"random + ridge": (2.69, 2.23, 1.86, 1.54), "AnchorPoints predictor": (2.52, 2.32, 2.25, 2.21)},
    "glue_sst2": {"random + ridge": (4.99, 3.52, 2.87, 1.87), "AnchorPoints predictor": (4.16, 3.24, 2.81, 2.43)},
}


def goal_table(summary: Sequence[Mapping[str, Any]], pipeline: str, baseline: str = "random+ridge",
               protocol: str = "interpolation") -> str:
    """Markdown: per (dataset, k), ``pipeline`` and the best measured pipeline against ``baseline`` (same run)
    and the best quoted peer figure (:data:`QUOTED_PEERS`, interpolation only)."""
    ps = [s for s in summary if s["protocol"] == protocol]
    by = {(s["dataset"], s["k"], s["pipeline"]): s for s in ps}
    lines = [f"| dataset | k | {pipeline} | its Spearman / Kendall | best pipeline (MAE) | {baseline} (same run) | "
             "best quoted peer |", "|---|---|---|---|---|---|---|"]
    wins_base = wins_peer = n = worse = best_base = best_peer = 0
    for d in dict.fromkeys(s["dataset"] for s in ps):
        for i, k in enumerate(sorted({s["k"] for s in ps if s["dataset"] == d})):
            cell = sorted((s for s in ps if s["dataset"] == d and s["k"] == k), key=lambda s: s["mae"])
            p, b = by.get((d, k, pipeline)), by.get((d, k, baseline))
            quoted = QUOTED_PEERS.get(d, {}) if protocol == "interpolation" else {}
            peer = min(((v[i], name) for name, v in quoted.items() if i < len(v)), default=None)
            if p is None or b is None:
                continue
            n += 1
            wins_base += p["mae"] < b["mae"]
            worse += p["mae"] - _half(p) > b["mae"] + _half(b)  # worse beyond both 95 % intervals
            wins_peer += peer is not None and p["mae"] < peer[0]
            best_base += cell[0]["mae"] < b["mae"]
            best_peer += peer is not None and cell[0]["mae"] < peer[0]
            peer_txt = f"{peer[0]:.2f} ({peer[1]})" if peer else "-"
            lines.append(f"| {d} | {k} | {_cell(p)} | {p['spearman']:.3f} / {p['kendall']:.3f} | "
                         f"{cell[0]['pipeline']} ({cell[0]['mae']:.2f}) | {_cell(b)} | {peer_txt} |")
    lines.append("")
    lines.append(f"{pipeline}: lower MAE than {baseline} in {wins_base} of {n} cells, worse beyond the 95 % "
                 f"intervals in {worse}"
                 + (f"; lower than the best quoted peer figure in {wins_peer} of {n}" if protocol == "interpolation"
                    else "") + ".")
    lines.append("")
    lines.append(f"The best measured pipeline of each cell: lower MAE than {baseline} in {best_base} of {n} cells"
                 + (f", lower than the best quoted peer figure in {best_peer} of {n}" if protocol == "interpolation"
                    else "") + ".")
    return "\n".join(lines)


def _se(s: Mapping[str, Any]) -> float:
    v = s.get("mae_sd", math.nan)
    return float(v) / math.sqrt(s["splits"]) if v is not None and math.isfinite(v) and s["splits"] > 1 else 0.0


def acceptance_text(summary: Sequence[Mapping[str, Any]], pipeline: str = DEFAULT_PIPELINE) -> str:
    """Markdown: the issue-30 goals checked on a run (``--paper``): per protocol, every pipeline's mean MAE
    over the cells, its cells against ``random+mean`` (lower; worse by more than random+mean's standard
    error over splits) and against ``random+ridge``, and the mean coverage and width of its 90 % intervals."""
    lines: list[str] = []
    for proto in _protocol_order(summary):
        ps = [s for s in summary if s["protocol"] == proto]
        by = {(s["dataset"], s["k"], s["pipeline"]): s for s in ps}
        cells = sorted({(s["dataset"], s["k"]) for s in ps})
        pipes = sorted({s["pipeline"] for s in ps}, key=lambda p: (p != pipeline, p))
        lines += [f"#### {proto}: {len(cells)} cells (dataset x k)", "",
                  "| pipeline | mean MAE (pp) | vs random+mean | lower than random+mean | worse than random+mean "
                  "beyond 1 SE | lower than random+ridge | 90 % coverage (cell range) | mean width (pp) |",
                  "|---|---|---|---|---|---|---|---|"]
        rm = [by.get((d, k, "random+mean")) for d, k in cells]
        rm_mean = float(np.mean([r["mae"] for r in rm if r is not None])) if all(rm) else math.nan
        for p in pipes:
            mine = [by.get((d, k, p)) for d, k in cells]
            if not all(mine):
                continue
            m = float(np.mean([x["mae"] for x in mine]))  # type: ignore[index]
            low = worse = lr = n_r = 0
            for (d, k), x in zip(cells, mine):
                b, r = by.get((d, k, "random+mean")), by.get((d, k, "random+ridge"))
                if b is not None:
                    low += x["mae"] < b["mae"]  # type: ignore[index]
                    worse += x["mae"] > b["mae"] + _se(b)  # type: ignore[index]
                if r is not None:
                    n_r += 1
                    lr += x["mae"] < r["mae"]  # type: ignore[index]
            cov = np.array([_f(x.get("coverage")) for x in mine])  # type: ignore[union-attr]
            wid = np.array([_f(x.get("width")) for x in mine])  # type: ignore[union-attr]
            cov_txt = (f"{100 * np.nanmean(cov):.1f} % ({100 * np.nanmin(cov):.0f}-{100 * np.nanmax(cov):.0f})"
                       if np.isfinite(cov).any() else "-")
            rel = f"{100 * (m / rm_mean - 1):+.1f} %" if math.isfinite(rm_mean) else "-"
            lines.append(f"| {p} | {m:.2f} | {rel} | {low}/{len(cells)} | {worse} | {lr}/{n_r} | {cov_txt} | "
                         f"{np.nanmean(wid) if np.isfinite(wid).any() else math.nan:.1f} |")
        lines.append("")
    return "\n".join(lines)


def relative_change_interval(rows: Iterable[Mapping[str, Any]], protocol: str, pipeline: str = DEFAULT_PIPELINE,
                             baseline: str = "random+mean", *, n_boot: int = 2000, seed: int = 0
                             ) -> tuple[float, float, float] | None:
    """Change of ``pipeline``'s mean MAE over the cells against ``baseline``'s (percent), with a 95 % paired
    bootstrap interval over the splits: each resample draws the split indices with replacement, the same
    for both pipelines and every cell.

    Returns ``(change, low, high)``, or None when the two pipelines do not share every cell's splits.
    """
    vals: dict[tuple[str, int, str], dict[int, float]] = {}
    for r in rows:
        if r.get("protocol") == protocol and r.get("pipeline") in (pipeline, baseline) and r.get("mae") is not None:
            vals.setdefault((r["dataset"], int(r["k"]), r["pipeline"]), {})[int(r["split"])] = float(r["mae"])
    cells = sorted({(d, k) for d, k, _ in vals})
    if not cells:
        return None
    splits = sorted(vals.get((*cells[0], pipeline), {}))
    if not splits or any(sorted(vals.get((d, k, p), {})) != splits for d, k in cells for p in (pipeline, baseline)):
        return None
    A = np.array([[[vals[(d, k, p)][sp] for sp in splits] for d, k in cells] for p in (pipeline, baseline)])
    change = 100 * (A[0].mean() / A[1].mean() - 1)
    idx = np.random.default_rng(seed).integers(0, len(splits), size=(n_boot, len(splits)))
    boot = 100 * (A[0][:, idx].mean(axis=(0, 2)) / A[1][:, idx].mean(axis=(0, 2)) - 1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(change), float(lo), float(hi)


def plot_dataset(summary: Sequence[Mapping[str, Any]], dataset: str, path: Path,
                 pipelines: Sequence[str] | None = None, n_best: int = 3) -> Path | None:
    """MAE against k, one line per pipeline (error bars: 95 % intervals), one panel per protocol."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = [s for s in summary if s["dataset"] == dataset]
    if not ds:
        return None
    protocols = _protocol_order(ds)
    fig, axes = plt.subplots(1, len(protocols), figsize=(5.2 * len(protocols), 3.8), squeeze=False)
    for ax, p in zip(axes[0], protocols):
        ps = [s for s in ds if s["protocol"] == p]
        mean_by: dict[str, list[float]] = {}
        for s in ps:
            mean_by.setdefault(s["pipeline"], []).append(s["mae"])
        best = sorted(mean_by, key=lambda q: float(np.mean(mean_by[q])))[:n_best]
        show = list(dict.fromkeys([*(pipelines or PLOT_ALWAYS), *best]))
        show = [q for q in show if q in mean_by]
        for q in show:
            pts = sorted((s["k"], s["mae"], s["mae_ci"]) for s in ps if s["pipeline"] == q)
            x, y, e = zip(*pts)
            ax.errorbar(x, y, yerr=[v if math.isfinite(v) else 0 for v in e], marker="o", ms=3, capsize=2,
                        lw=1.6 if q in best else 1.0, ls="-" if q in best else "--", label=q)
        ax.set_xscale("log")
        ks = sorted({s["k"] for s in ps})
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.set_xlabel("k (items kept)")
        ax.set_ylabel("MAE of target accuracy (pp)")
        ax.set_title(f"{dataset}: {p}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(rows: Sequence[Mapping[str, Any]], out: Path, *, plots: bool = True) -> tuple[str, list[Path]]:
    """Markdown tables (also written to ``<out>/fidelity.md``) and one PNG per dataset."""
    summary = summarise(rows)
    text = render_tables(summary)
    pipes = {s["pipeline"] for s in summary}
    for proto in _protocol_order(summary):
        pipe, base = RECOMMENDED.get(proto, ("", ""))
        if pipe in pipes and base in pipes:
            text += f"\n\n### {proto}: {pipe} against {base}" + (" and the quoted peers" if proto == "interpolation"
                                                                 else "") + "\n\n"
            text += goal_table(summary, pipe, baseline=base, protocol=proto)
    small = small_k_text(summary)
    if small:
        text += "\n\n### The smallest budget in interpolation: the default against kmedoids+stacked\n\n" + small
    groups = coverage_text(rows)
    if groups:
        text += "\n\n### Coverage of the 90 % intervals per group of target-runs (SPEC F11)\n\n" + groups
    if any(p in pipes for p in (DEFAULT_PIPELINE,)) and "random+mean" in pipes:
        text += "\n\n### Goals: the default against the peers\n\n" + acceptance_text(summary)
        for proto in _protocol_order(summary):
            ci = relative_change_interval(rows, proto)
            if ci is not None:
                text += (f"\n{proto}: {DEFAULT_PIPELINE}'s mean MAE {ci[0]:+.1f} % against random+mean "
                         f"(95 % paired bootstrap interval over the splits {ci[1]:+.1f} to {ci[2]:+.1f} %)\n")
    out = Path(out)
    (out / "fidelity.md").write_text(text + "\n")
    with (out / "summary.json").open("w") as fh:
        json.dump([{k: _clean(v) for k, v in s.items()} for s in summary], fh, indent=0)
    written = []
    if plots:
        for d in dict.fromkeys(s["dataset"] for s in summary):
            p = plot_dataset(summary, d, out / f"fidelity_{d}.png")
            if p is not None:
                written.append(p)
    return text, written


def run_suite(args: argparse.Namespace, data_dir: Path | None) -> int:
    """``benchsel run fidelity``: the default grid with the run command's common options."""
    if data_dir is None:
        raise InvalidInputError("data-dir: suite 'fidelity' reads real data (responses/benchmark_prediction) and no "
                                "data directory was found; pass --data-dir DIR or set BENCHSEL_DATA")
    datasets = list(DATASETS)
    if args.instances:
        datasets = [d for d in DATASETS if any(fnmatch.fnmatchcase(d, p) for p in args.instances)]
        if not datasets:
            raise InvalidInputError(f"instances: no dataset matches {' '.join(args.instances)}; datasets: "
                                    f"{', '.join(DATASETS)}")
    out = args.out if args.out is not None else Path("results") / "fidelity"
    splits = args.seeds if args.seeds != 1 else 10
    rows = run(out, data_dir, datasets=datasets, splits=splits, selections=args.methods, ks=KS,
               estimators=DEFAULT_ESTIMATORS, time_limit=args.time_limit if args.time_limit is not None else TIME_LIMIT,
               jobs=args.jobs if args.jobs is not None else 1, progress=not args.no_progress)
    text, written = report(rows, out)
    if not args.quiet:
        print(text, flush=True)
    for p in written:
        print(f"benchsel: wrote {p}", file=sys.stderr, flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:

    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.fidelity", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results") / "fidelity")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--datasets", nargs="+", default=None, help=f"default: {' '.join(DATASETS)}")
    ap.add_argument("--protocols", nargs="+", default=None, help=f"default: {' '.join(PROTOCOLS)}")
    ap.add_argument("--ks", nargs="+", type=int, default=list(KS))
    ap.add_argument("--splits", type=int, default=None, help="default 10 (5 with --paper)")
    ap.add_argument("--selections", nargs="+", default=None,
                    help="registered selections, a sampling design optionally with its options "
                         "(\"stratified:draws=1\"); default: selection_names(fidelity=True)")
    ap.add_argument("--estimators", nargs="+", default=None,
                    help="estimators, options as name:key=value,... (default: DEFAULT_ESTIMATORS)")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT, help="seconds per selection solve")
    ap.add_argument("--jobs", type=int, default=1, help="(dataset, protocol, split) units run in parallel")
    ap.add_argument("--pipelines", nargs="+", default=None,
                    help="only these selection+estimator pairs (e.g. stratified+auto random+mean)")
    ap.add_argument("--paper", action="store_true",
                    help="the acceptance grid: the nine other matrices, interpolation and paper-extrapolation, "
                         "the default against the peers (PAPER_PIPELINES), 5 splits unless --splits is given")
    ap.add_argument("--report-only", action="store_true", help="re-render tables and plots from stored rows")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    if args.paper and args.pipelines is None:
        args.pipelines = list(PAPER_PIPELINES)
    datasets = args.datasets or list(PAPER_DATASETS if args.paper else DATASETS)
    protocols = args.protocols or (["interpolation", "paper-extrapolation"] if args.paper else list(PROTOCOLS))
    splits = args.splits if args.splits is not None else (5 if args.paper else 10)
    data_dir = args.data_dir or default_data_dir()
    try:
        if args.report_only:
            rows = read_rows(args.out)
            if not rows:
                raise InvalidInputError(f"out: no rows in {str(args.out / JSONL)!r}")
        else:
            if data_dir is None:
                raise InvalidInputError("data-dir: no data directory found; pass --data-dir or set BENCHSEL_DATA")
            rows = run(args.out, data_dir, datasets=datasets, protocols=protocols, ks=args.ks,
                       splits=splits, selections=args.selections, estimators=args.estimators,
                       time_limit=args.time_limit, jobs=args.jobs, pipelines=args.pipelines)
        text, written = report(rows, args.out, plots=not args.no_plots)
    except BenchselError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
