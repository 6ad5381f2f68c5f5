"""Benchmark suites, each defined in one place.

A suite is a list of :class:`InstanceSpec`: a name, a builder of the
formulation, the methods run on it by default and, for compression
formulations, an optional *fidelity* function scoring a selection on held-out
data (e.g. how well target models' benchmark scores are recovered).

* ``quick`` (default) — small seeded synthetic instances of every formulation
  present in this build; embedded, no data needed. Each formulation adds its
  part with the :func:`quick_part` decorator (a few lines each).
* ``orlib-pmed`` — OR-Library ``pmed1..40`` from ``<data-dir>/orlib/pmed``
  (KMedoids, known optima).
* ``positional`` — real leaderboards from ``<data-dir>/positional``
  (PositionalRepresentation, PositionalProportionality).
* ``holocosm`` — real multi-metric response sets from ``<data-dir>/responses``
  (RankingRiskReconstruction, with fidelity on held-out target models).
* ``bayes`` — real binary response sets from ``<data-dir>/responses``
  (BatchInformationGain).
* ``fidelity`` — selections x estimators on real binary response sets from
  ``<data-dir>/responses/benchmark_prediction`` (interpolation and
  extrapolation protocols; its own driver, :mod:`benchsel.benchmarks.fidelity`).
* ``repcore`` — RepCore on synthetic hidden states (KMedoids on the
  consensus embedding, the 0/1 K-means ablation, AnchorPoints; fidelity of
  held-out targets through the estimators) and, with data, the 0/1 ablation
  on ARC-Challenge.

A suite whose formulation module is not part of the build is not offered.
Add a suite by decorating a function ``(data_dir) -> list[InstanceSpec]`` with
:func:`suite`.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchsel import formulations
from benchsel.formulations.bayes import BatchInformationGain
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.registry import Registry
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.holocosm import RankingRiskReconstruction, fidelity
from benchsel.formulations.kmedoids import KMedoids
from benchsel.formulations.repcore import align_hidden_states
from benchsel.heuristics.holocosm import PEER_BY_METHOD, run_baseline
from benchsel.instances.hidden import make_hidden_states
from benchsel.instances.orlib import load_pmed, load_pmed_optima
from benchsel.instances.responses import load_responses, make_multimetric, paper_split
from benchsel.instances.scores import load_score_table, mallows_profile
from benchsel.instances.synthetic import make_benchmark_responses, make_kmedoids
from benchsel.solvers.selections import irt_kmedoids

from .coresets import KS, real_matrices, response_coreset
from .fidelity import rank_correlations, run_suite

__all__ = [
    "SUITES",
    "InstanceSpec",
    "Suite",
    "anchor_fidelity",
    "available_suites",
    "estimator_fidelity",
    "get_suite",
    "holocosm_fidelity",
    "irt_responses",
    "quick_part",
    "suite",
    "suite_instances",
]


@dataclass(frozen=True)
class InstanceSpec:
    """One instance of a suite.

    Attributes
    ----------
    name : str
        Unique within the suite (used in tables, results and file names).
    make : callable
        ``make() -> Formulation``; called in the main process (the instance is
        shipped to workers as ``(class, get_params())``).
    methods : tuple of str or None
        Methods run by default (at least one exact and one heuristic); None:
        :func:`default_methods` (``"highs"`` or else every exact method that
        accepts the instance, plus every heuristic that accepts it).
    fidelity : (callable, dict) or None
        ``fn(f, selection, **kwargs) -> dict[str, float]``, evaluated in the
        worker after the run; ``fn`` must be a module-level function and the
        kwargs picklable. Stored as ``fidelity.<key>`` columns.
    meta : dict
        Scalars stored with every row as ``meta.<key>`` (e.g. a known optimum).
    """

    name: str
    make: Callable[[], Any]
    methods: tuple[str, ...] | None = None
    fidelity: tuple[Callable[..., Mapping[str, float]], Mapping[str, Any]] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    """A named list of instances.

    Attributes
    ----------
    name, description : str
    build : callable
        ``build(data_dir) -> list[InstanceSpec]``.
    time_limit : float
        Default wall-clock seconds per run (the same for every method).
    needs_data : tuple of str
        Files (relative to the data directory) the suite reads.
    module : str or None
        Formulation module the suite needs; a suite whose module is not part
        of the build is not offered.
    runner : callable or None
        ``runner(args, data_dir) -> exit code``: a suite with its own driver
        (``benchsel run`` hands it the parsed options instead of planning a
        grid of formulation runs); None for the usual grid.
    """

    name: str
    description: str
    build: Callable[[Path | None], list[InstanceSpec]]
    time_limit: float
    needs_data: tuple[str, ...] = ()
    module: str | None = None
    runner: Callable[[Any, Path | None], int] | None = None

    @property
    def available(self) -> bool:
        """Is the suite's formulation module part of this build?"""
        if self.module is None:
            return True
        try:
            importlib.import_module(self.module)
        except ModuleNotFoundError as e:
            if e.name != self.module:
                raise
            return False
        return True


#: Every registered suite, by name (``quick`` first); see :func:`available_suites`.
SUITES: Registry[Suite] = Registry("suite", argument="suite")


def available_suites() -> dict[str, Suite]:
    """The suites whose formulation module is part of this build."""
    return {k: v for k, v in SUITES.items() if v.available}


def suite(name: str, description: str, *, time_limit: float, needs_data: tuple[str, ...] = (),
          module: str | None = None, runner: Callable[[Any, Path | None], int] | None = None):
    """Register ``build(data_dir) -> list[InstanceSpec]`` as suite ``name``."""

    def deco(fn: Callable[[Path | None], list[InstanceSpec]]):
        SUITES.register(name, Suite(name, description, fn, float(time_limit), tuple(needs_data), module, runner),
                        replace=True)
        return fn

    return deco


def get_suite(name: str) -> Suite:
    """The suite called ``name``; :class:`InvalidInputError` naming the suites otherwise."""
    live = available_suites()
    if name in SUITES and name not in live:
        raise InvalidInputError(f"suite: {name!r} needs {SUITES.get(name).module}, which is not part of this build; "
                                f"suites: {', '.join(live)}")
    if name not in live:
        raise InvalidInputError(f"suite: unknown suite {name!r}; suites: {', '.join(live)}")
    return live[name]


def check_data(s: Suite, data_dir: Path | None) -> None:
    """Raise a one-line error when the suite's data files are missing."""
    if not s.needs_data:
        return
    if data_dir is None:
        raise InvalidInputError(
            f"data-dir: suite {s.name!r} reads real data ({s.needs_data[0]}) and no data directory was found; "
            "pass --data-dir DIR or set BENCHSEL_DATA"
        )
    if not Path(data_dir).is_dir():
        raise InvalidInputError(f"data-dir: {str(data_dir)!r} is not a directory "
                                f"(suite {s.name!r} reads its data there)")
    missing = [p for p in s.needs_data if not (Path(data_dir) / p).exists()]
    if missing:
        raise InvalidInputError(
            f"data-dir: suite {s.name!r} needs {', '.join(missing)} under {str(data_dir)!r}, which is missing; "
            "pass --data-dir pointing at the shared data folder"
        )


def suite_instances(name: str, data_dir: Path | None = None) -> list[InstanceSpec]:
    """The instance specs of suite ``name`` (checks its data first)."""
    s = get_suite(name)
    check_data(s, data_dir)
    specs = s.build(data_dir)
    names = [sp.name for sp in specs]
    if len(set(names)) != len(names):  # pragma: no cover - a suite definition bug
        raise ValueError(f"suite {name!r} has duplicate instance names")
    return specs


# ------------------------------------------------------------------ quick
#: ``formulation module -> builder(seed) -> list[InstanceSpec]``; the quick
#: suite includes a part when its module imports.
QUICK_PARTS: Registry[Callable[[int], list[InstanceSpec]]] = Registry("quick part", argument="module")


def quick_part(module: str):
    """Register a builder of quick instances for the formulations of ``module``.

    The builder runs only when ``module`` imports, so a formulation missing
    from a build simply contributes nothing.
    """

    def deco(fn: Callable[[int], list[InstanceSpec]]):
        QUICK_PARTS.register(module, fn, replace=True)
        return fn

    return deco


@suite("quick", "small seeded synthetic instances of every formulation (no data needed)", time_limit=20.0)
def _quick(data_dir: Path | None = None, seed: int = 0) -> list[InstanceSpec]:
    out: list[InstanceSpec] = []
    for module, fn in QUICK_PARTS.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
            continue
        out.extend(fn(seed))
    return out


def irt_responses(n_models: int, n_items: int, *, seed: int = 0) -> np.ndarray:
    """Seeded binary responses from a two-parameter IRT model.

    ``P(correct) = sigmoid(a_n (theta_m - b_n))`` with abilities
    ``theta ~ N(0, 1)`` sorted ascending, difficulties ``b ~ N(0, 1)`` and
    discriminations ``a ~ LogNormal(0, 0.5)``; items fall in 4 latent skill
    groups with correlated abilities.

    Returns
    -------
    ndarray of float, shape (n_models, n_items)
        Entries 0 or 1; models ordered from weakest to strongest on average.
    """
    rng = np.random.default_rng(seed)
    g = 4
    base = rng.normal(size=n_models)
    theta = base[:, None] + 0.6 * rng.normal(size=(n_models, g))
    group = rng.integers(g, size=n_items)
    b = rng.normal(size=n_items)
    a = rng.lognormal(0.0, 0.5, size=n_items)
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, group] - b)))
    Y = (rng.uniform(size=p.shape) < p).astype(float)
    return Y[np.argsort(Y.mean(axis=1), kind="stable")]


def anchor_fidelity(f: Any, selection: np.ndarray, *, targets: np.ndarray) -> dict[str, float]:
    """How well AnchorPoints recovers held-out models' scores from the medoids.

    Parameters
    ----------
    f : benchsel.formulations.KMedoids
    selection : ndarray of int, shape (k,)
    targets : ndarray, shape (G, N)
        Target models' responses on all items.

    Returns
    -------
    dict
        ``mae`` (mean absolute error), ``mean_nmae`` (the same over the
        targets' score range), ``mean_sp`` (Spearman) and ``mean_tau``
        (Kendall tau-b) between estimated and true scores (one metric: the
        mean over metrics is the value; named as in :func:`holocosm_fidelity`).
    """
    est = np.asarray(f.estimate(selection, targets[:, selection]), dtype=float)
    return _target_scores(est, targets.mean(axis=1))


def _target_scores(est: np.ndarray, true: np.ndarray) -> dict[str, float]:
    """``mae``, ``mean_nmae`` (over the targets' score range), ``mean_sp`` (Spearman), ``mean_tau`` (Kendall tau-b)."""
    mae = float(np.mean(np.abs(est - true)))
    sp, kt = rank_correlations(est, true)
    return {"mae": mae, "mean_nmae": mae / (float(true.max() - true.min()) or 1.0), "mean_sp": sp, "mean_tau": kt}


def holocosm_fidelity(f: Any, selection: np.ndarray, *, targets: np.ndarray, method: str | None = None,
                      seed: int | None = None) -> dict[str, float]:
    """Fidelity of the source-assisted estimate of held-out targets (and of a peer's own estimate).

    Parameters
    ----------
    f : benchsel.formulations.RankingRiskReconstruction
    selection : ndarray of int, shape (B,)
    targets : ndarray, shape (G, N, K)
        Target models' responses, oriented as ``f.X``.
    method, seed : optional
        The run's method and seed (the harness passes them): for one of HoloCosm's peers
        (``"peer-..."``) the peer is rebuilt with that seed and its own estimator scored too.

    Returns
    -------
    dict
        ``mean_nmae``, ``worst_nmae``, ``mean_sp``, ``worst_sp``, ``mean_tau``,
        ``worst_tau`` (mean and worst metric); for a peer also ``own_mean_nmae`` ... ``own_worst_tau``.
    """

    truth = targets.mean(axis=1)
    out = dict(fidelity(f.estimate(selection, targets[:, selection, :]), truth).summary())
    peer = PEER_BY_METHOD.get(method or "")
    if peer is not None:
        b = run_baseline(peer, f, seed=0 if seed is None else int(seed))
        if np.array_equal(np.sort(b.selection), np.sort(selection)):
            own = fidelity(b.estimate(f, targets[:, b.selection, :]), truth).summary()
            out.update({f"own_{k}": v for k, v in own.items()})
    return out


holocosm_fidelity.wants_method = True  # type: ignore[attr-defined]


def _anchor_instance(Y_sources: np.ndarray, k: int) -> Any:

    return KMedoids.from_features(Y_sources.T, k, metric="correlation")


@quick_part("benchsel.formulations.kmedoids")
def _quick_kmedoids(seed: int) -> list[InstanceSpec]:

    methods = ("highs", "fasterpam", "alternate", "build", "random")
    out = [
        InstanceSpec("kmedoids-blobs-60", partial(make_kmedoids, 60, 5, seed=seed), methods),
        InstanceSpec("kmedoids-weighted-110", partial(make_kmedoids, 110, 8, dim=3, weighted=True, seed=seed + 1),
                     methods),
    ]
    # AnchorPoints compression: 80 items, 12 source models define the dissimilarity,
    # 12 held-out targets measure fidelity at retention 10 / 20 / 30 %
    Y = irt_responses(24, 80, seed=seed + 2)
    src, tgt = Y[0::2], Y[1::2]
    for pct in (10, 20, 30):
        k = max(1, round(pct / 100 * Y.shape[1]))
        out.append(InstanceSpec(f"kmedoids-anchor-r{pct}", partial(_anchor_instance, src, k), methods,
                                fidelity=(anchor_fidelity, {"targets": tgt}), meta={"retention_target": pct / 100}))
    return out


def _scores_instance(cls_name: str, table: Any, **kw: Any) -> Any:
    return getattr(formulations, cls_name).from_scores(table, **kw)


@quick_part("benchsel.formulations.positional")
def _quick_positional(seed: int) -> list[InstanceSpec]:

    T = mallows_profile(40, 8, phi=0.8, seed=seed)  # 8 models ranked by 40 metrics
    return [
        InstanceSpec("posrep-mallows-40x8-g3", partial(_scores_instance, "PositionalRepresentation", T, g=3)),
        InstanceSpec("posprop-mallows-40x8-eps0.2", partial(_scores_instance, "PositionalProportionality", T,
                                                            eps=0.2)),
        InstanceSpec("posprop-mallows-40x8-size6", partial(_scores_instance, "PositionalProportionality", T,
                                                           size=6)),
    ]


def _holocosm_instance(X: np.ndarray, retention: float, seed: int) -> Any:

    return RankingRiskReconstruction(X, retention=retention, seed=seed)


@quick_part("benchsel.formulations.holocosm")
def _quick_holocosm(seed: int) -> list[InstanceSpec]:

    R = make_multimetric(12, 30, 3, seed=seed)  # 12 models, 30 items, 3 metrics
    src, tgt = paper_split(R, 6).take(R.oriented())  # the paper's 6 evenly spaced sources
    return [InstanceSpec(f"holocosm-30x3-r{round(100 * r)}", partial(_holocosm_instance, src, r, seed),
                         fidelity=(holocosm_fidelity, {"targets": tgt}), meta={"retention_target": r})
            for r in (0.1, 0.2, 0.3)]


def _bayes_instance(R: np.ndarray, **kw: Any) -> Any:

    return BatchInformationGain(R, **kw)


@quick_part("benchsel.formulations.bayes")
def _quick_bayes(seed: int) -> list[InstanceSpec]:
    rng = np.random.default_rng(seed + 5)
    Rb = rng.integers(0, 2, size=(4, 40)).astype(float)  # 4 reference models, binary scores: 16 buckets
    Rc = np.round(rng.uniform(size=(5, 30)), 1)  # continuous scores
    return [
        InstanceSpec("bayes-binary-40-k4", partial(_bayes_instance, Rb, coreset=[0, 5], observed=[1.0, 0.0], k=4)),
        InstanceSpec("bayes-continuous-30-k3", partial(_bayes_instance, Rc, k=3, sigma2=1e-2)),
    ]


# ------------------------------------------------------------- orlib-pmed
def _orlib_optima(data_dir: Path) -> dict[str, float]:

    return load_pmed_optima(Path(data_dir) / "orlib" / "pmed" / "pmedopt.txt")


@suite("orlib-pmed", "OR-Library p-median pmed1..pmed40 (known optima) from <data-dir>/orlib/pmed", time_limit=60.0,
       needs_data=("orlib/pmed/pmedopt.txt",), module="benchsel.formulations.kmedoids")
def _orlib_pmed(data_dir: Path | None) -> list[InstanceSpec]:

    folder = Path(data_dir) / "orlib" / "pmed"  # type: ignore[arg-type]
    optima = _orlib_optima(Path(data_dir))  # type: ignore[arg-type]
    out = []
    for i in range(1, 41):
        p = folder / f"pmed{i}.txt"
        if not p.is_file():
            continue
        out.append(InstanceSpec(f"pmed{i}", partial(load_pmed, p), ("highs", "fasterpam", "random"),
                                meta={"known_optimum": optima.get(f"pmed{i}", math.nan)}))
    if not out:
        raise InvalidInputError(f"data-dir: no pmed<k>.txt files under {str(folder)!r}")
    return out


# --------------------------------------------------------------- positional
POSITIONAL_TABLES = (("helm-accuracy", "helm/accuracy.tsv"), ("helm-fairness", "helm/fairness.tsv"),
                     ("helm-robustness", "helm/robustness.tsv"), ("helm-calibration", "helm/calibration.tsv"),
                     ("helm-lite", "helm/helm_lite_240829.csv"), ("bigbench", "bigbench/leaderboard.tsv"))


def _score_table_instance(path: Path, cls_name: str, **kw: Any) -> Any:

    return _scores_instance(cls_name, load_score_table(path), missing="last", **kw)


@suite("positional", "metric subsets of real leaderboards (HELM Classic families, HELM Lite, BIG-bench) from "
       "<data-dir>/positional: g = 2 representation, eps = 0.2 proportionality, best 5 metrics",
       time_limit=60.0, needs_data=("positional/helm/accuracy.tsv",), module="benchsel.formulations.positional")
def _positional(data_dir: Path | None) -> list[InstanceSpec]:
    out = []
    for name, rel in POSITIONAL_TABLES:
        p = Path(data_dir) / "positional" / rel  # type: ignore[arg-type]
        if not p.is_file():
            continue
        meta = {"missing": "last"}  # a missing score ranks tied for last
        out += [
            InstanceSpec(f"{name}-rep-g2", partial(_score_table_instance, p, "PositionalRepresentation", g=2),
                         meta=meta),
            InstanceSpec(f"{name}-prop-eps0.2", partial(_score_table_instance, p, "PositionalProportionality",
                                                        eps=0.2), meta=meta),
            InstanceSpec(f"{name}-prop-size5", partial(_score_table_instance, p, "PositionalProportionality",
                                                       size=5), meta=meta),
        ]
    return out


# ----------------------------------------------------------------- holocosm
HOLOCOSM_SETS = (("ted-ende", "wmt_mqm/ted_ende_multimetric.npz", 6),
                 ("ted-zhen", "wmt_mqm/ted_zhen_multimetric.npz", 6),
                 ("topical-chat", "unieval_topical_chat/topical_chat_multimetric.npz", 3))


@suite("holocosm", "HoloCosm on the real multi-metric response sets (<data-dir>/responses: WMT TED MQM en-de and "
       "zh-en, UniEval Topical-Chat), the paper's source/target split, retention 10-50 %, fidelity on the targets",
       time_limit=60.0, needs_data=("responses/wmt_mqm/ted_ende_multimetric.npz",),
       module="benchsel.formulations.holocosm")
def _holocosm(data_dir: Path | None) -> list[InstanceSpec]:

    out = []
    for name, rel, n_src in HOLOCOSM_SETS:
        p = Path(data_dir) / "responses" / rel  # type: ignore[arg-type]
        if not p.is_file():
            continue
        R = load_responses(p)
        src, tgt = paper_split(R, n_src).take(R.oriented())
        for r in (0.1, 0.2, 0.3, 0.4, 0.5):
            out.append(InstanceSpec(f"{name}-r{round(100 * r)}", partial(_holocosm_instance, src, r, 0),
                                    fidelity=(holocosm_fidelity, {"targets": tgt}),
                                    meta={"retention_target": r, "n_sources": n_src}))
    return out


# -------------------------------------------------------------------- bayes
BAYES_SETS = (("glue-rte", "benchmark_prediction/glue_rte.npz"),
              ("helm-lite-mmlu", "benchmark_prediction/helm_lite_mmlu.npz"),
              ("proeval-gqa", "proeval/gqa.npz"),
              ("opencompass", "psn_irt/opencompass_11bench.npz"))


def _bayes_real_instance(path: Path, k: int, n_refs: int, n_coreset: int, seed: int) -> Any:
    """References: ``n_refs`` models evenly spaced by mean score; target: the median other model;
    coreset: ``n_coreset`` seeded random items observed on the target."""

    Y = load_responses(path).matrix(0)
    order = np.argsort(Y.mean(axis=1), kind="stable")
    refs = order[np.round(np.linspace(0, order.size - 1, n_refs)).astype(int)]
    others = np.setdiff1d(order, refs)
    target = others[np.argsort(Y[others].mean(axis=1), kind="stable")[others.size // 2]]
    coreset = np.sort(np.random.default_rng(seed).choice(Y.shape[1], size=n_coreset, replace=False))
    return BatchInformationGain(Y[refs], coreset=coreset, observed=Y[target, coreset], k=k)


@suite("bayes", "BayesAME batch information gain on real binary response sets (<data-dir>/responses: GLUE RTE, "
       "HELM Lite MMLU, ProEval GQA, OpenCompass 11-bench): 6 reference models, 10 observed items, batch k = 4",
       time_limit=60.0, needs_data=("responses/benchmark_prediction/glue_rte.npz",),
       module="benchsel.formulations.bayes")
def _bayes(data_dir: Path | None) -> list[InstanceSpec]:
    out = []
    for name, rel in BAYES_SETS:
        p = Path(data_dir) / "responses" / rel  # type: ignore[arg-type]
        if p.is_file():
            out.append(InstanceSpec(f"{name}-k4", partial(_bayes_real_instance, p, 4, 6, 10, 0)))
    return out


# ------------------------------------------------------------- coreset-scale
def _coreset_instance(path: Path | None, n_items: int, k: int) -> Any:
    """A k-medoids coreset instance: a real matrix (``path``) or the synthetic one of ``n_items`` items."""
    if path is None:

        Y = make_benchmark_responses(100, n_items, seed=0)
    else:
        with np.load(path) as z:
            Y = np.asarray(z["Y"], dtype=float)
    return response_coreset(Y, k, seed=0)[0]


@suite("coreset-scale", "k-medoids coresets at benchmark sizes: every real binary matrix of "
       "<data-dir>/responses/benchmark_prediction (correlation distance over a seeded 75 % of the models, constant "
       "items dropped) x k in {10, 25, 50, 100}, plus a synthetic MMLU-sized matrix (N = 14 000, k = 100; "
       "run it with --time-limit 600)", time_limit=60.0,
       needs_data=("responses/benchmark_prediction/glue_rte.npz",), module="benchsel.formulations.kmedoids")
def _coreset_scale(data_dir: Path | None) -> list[InstanceSpec]:
    out = []
    for name, path in real_matrices(data_dir).items():
        for k in KS:
            out.append(InstanceSpec(f"{name}-k{k}", partial(_coreset_instance, path, 0, k), ("highs", "fasterpam"),
                                    meta={"matrix": name, "k": k}))
    out.append(InstanceSpec("synthetic-14000-k100", partial(_coreset_instance, None, 14_000, 100),
                            ("highs", "fasterpam"), meta={"matrix": "synthetic-14000", "k": 100}))
    return out


# ----------------------------------------------------------------- fidelity
def _fidelity_runner(args: Any, data_dir: Path | None) -> int:
    return run_suite(args, data_dir)


@suite("fidelity", "selections (random, k-medoids FasterPAM / HiGHS, IRT anchors, ...) x estimators (mean, "
       "cluster-weighted, ridge, repcore-ridge, IRT, stacked, ...) on 4 real binary response sets, interpolation and "
       "extrapolation, k = 10/25/50/100, MAE with 95 % intervals over splits (--seeds splits, default 10)",
       time_limit=10.0, needs_data=("responses/benchmark_prediction/glue_sst2.npz",),
       module="benchsel.formulations.estimation", runner=_fidelity_runner)
def _fidelity(data_dir: Path | None) -> list[InstanceSpec]:
    return []  # its own driver (see _fidelity_runner): no formulation grid


# ------------------------------------------------------------------ repcore
REPCORE_SOURCES = (5, 10, 20)
REPCORE_ITEMS = 600
REPCORE_TARGETS = 60
REPCORE_K = 30


def estimator_fidelity(f: Any, selection: np.ndarray, *, Y_source: np.ndarray, targets: np.ndarray,
                       estimator: str = "repcore-ridge") -> dict[str, float]:
    """Fidelity of an estimator fitted on the sources, on held-out targets.

    Parameters
    ----------
    f : Formulation
        Unused (the selection is scored through the estimator).
    selection : ndarray of int, shape (k,)
    Y_source : ndarray, shape (S, N)
    targets : ndarray, shape (G, N)
    estimator : str
        A name for :func:`benchsel.formulations.estimation.get_estimator`.

    Returns
    -------
    dict
        ``mae`` (accuracy points on the 0-1 scale), ``mean_nmae`` (over the
        targets' score range), ``mean_sp`` (Spearman), ``mean_tau`` (Kendall tau-b).
    """

    est = np.asarray(get_estimator(estimator).fit(Y_source, selection).predict(targets[:, selection]), dtype=float)
    return _target_scores(est, targets.mean(axis=1))


def _repcore_population(n_sources: int, seed: int, n_items: int = REPCORE_ITEMS, n_targets: int = REPCORE_TARGETS,
                        widths: Any = None) -> Any:

    return make_hidden_states(n_items=n_items, n_models=n_sources, n_targets=n_targets, widths=widths, seed=seed)


def _repcore_instance(n_sources: int, seed: int, k: int, space: str, **population: Any) -> Any:
    """KMedoids on the consensus embedding (cosine), the 0/1 source vectors (Euclidean), their correlation,
    or the items' 2PL parameters (``"irt"``, tinyBenchmarks' anchors, Euclidean)."""

    hs = _repcore_population(n_sources, seed, **population)
    Y = hs.Y[:n_sources]
    if space == "consensus":
        return KMedoids.from_features(align_hidden_states(hs.hidden_states, Y, seed=seed), k, metric="cosine")
    if space == "irt":
        return irt_kmedoids(Y, k, seed=seed)
    return KMedoids.from_features(Y.T, k, metric="euclidean" if space == "binary" else "correlation")


def _arc_binary_instance(path: Path, sources: np.ndarray, k: int, space: str = "binary") -> Any:

    Y = load_responses(path).matrix(0)[sources]
    if space == "irt":
        return irt_kmedoids(Y, k)
    return KMedoids.from_features(Y.T, k, metric="euclidean")


@quick_part("benchsel.formulations.repcore")
def _quick_repcore(seed: int) -> list[InstanceSpec]:
    pop: dict[str, Any] = {"n_items": 120, "n_targets": 20, "widths": (16, 24, 32, 16)}
    hs = _repcore_population(4, seed + 7, **pop)
    kw = {"Y_source": hs.Y[:4], "targets": hs.Y[4:], "estimator": "repcore-ridge"}
    return [InstanceSpec("repcore-consensus-120-k10", partial(_repcore_instance, 4, seed + 7, 10, "consensus", **pop),
                         ("highs", "spherical-kmeans", "fasterpam", "random"), fidelity=(estimator_fidelity, kw)),
            InstanceSpec("repcore-binary-120-k10", partial(_repcore_instance, 4, seed + 7, 10, "binary", **pop),
                         ("highs", "kmeans", "random"), fidelity=(estimator_fidelity, kw))]


@suite("repcore", "RepCore on synthetic hidden states (600 items, 5 / 10 / 20 sources, 60 targets, k = 30): "
       "consensus embedding (spherical-kmeans vs the p-median optimum), the 0/1 K-means ablation, AnchorPoints and "
       "tinyBenchmarks (IRT anchors, gp-IRT), fidelity of the targets; with <data-dir>, the 0/1 K-means ablation "
       "and tinyBenchmarks on ARC-Challenge (10 sources)",
       time_limit=60.0, module="benchsel.formulations.repcore")
def _repcore(data_dir: Path | None) -> list[InstanceSpec]:
    out = []
    for S in REPCORE_SOURCES:
        seed = 100 + S
        hs = _repcore_population(S, seed)
        kw = {"Y_source": hs.Y[:S], "targets": hs.Y[S:]}
        meta = {"n_sources": S, "n_targets": REPCORE_TARGETS}
        for space, methods, est in (
                ("consensus", ("spherical-kmeans", "highs", "fasterpam", "random"), "repcore-ridge"),
                ("binary", ("kmeans", "highs", "fasterpam", "random"), "repcore-ridge"),
                ("correlation", ("fasterpam", "highs", "random"), "cluster-weighted"),
                ("irt", ("fasterpam", "highs", "random"), "irt")):
            out.append(InstanceSpec(f"repcore-{space}-s{S}-k{REPCORE_K}",
                                    partial(_repcore_instance, S, seed, REPCORE_K, space), methods,
                                    fidelity=(estimator_fidelity, {**kw, "estimator": est}),
                                    meta={**meta, "space": space, "estimator": est}))
    path = None if data_dir is None else Path(data_dir) / "responses" / "benchmark_prediction" / \
        "openllm_v2_arc_challenge.npz"
    if path is not None and path.is_file():

        Y = load_responses(path).matrix(0)
        src = np.sort(np.random.default_rng(0).choice(Y.shape[0], size=10, replace=False))
        tgt = np.setdiff1d(np.arange(Y.shape[0]), src)
        for k in (10, 30, 50):
            out.append(InstanceSpec(f"repcore-arc-binary-k{k}", partial(_arc_binary_instance, path, src, k),
                                    ("kmeans", "highs", "fasterpam", "random"),
                                    fidelity=(estimator_fidelity, {"Y_source": Y[src], "targets": Y[tgt],
                                                                   "estimator": "repcore-ridge"}),
                                    meta={"n_sources": 10, "n_targets": int(tgt.size), "space": "binary"}))
            out.append(InstanceSpec(f"repcore-arc-irt-k{k}", partial(_arc_binary_instance, path, src, k, "irt"),
                                    ("fasterpam", "highs", "random"),
                                    fidelity=(estimator_fidelity, {"Y_source": Y[src], "targets": Y[tgt],
                                                                   "estimator": "irt"}),
                                    meta={"n_sources": 10, "n_targets": int(tgt.size), "space": "irt"}))
    return out
