"""HoloCosm's comparison methods by name: one name -> builder registry the studies and harness parts use.

``get_baseline("vote").build(f, seed)`` (or :func:`run_baseline`) returns a
:class:`~benchsel.heuristics.holocosm.baselines.BaselineSelection`; a
``per_metric`` baseline also takes ``metric`` (an index or ``"average"``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.registry import Registry, register_method
from benchsel.formulations.holocosm import RankingRiskReconstruction

from .._common import Clock, output
from .baselines import (
    BaselineSelection,
    FittedSelection,
    anchorpoints,
    holocosm_selection,
    kmeans_baseline,
    random_baseline,
    swap_unconstrained,
)
from .mrmr import mrmr_ridge
from .peers import tinybenchmarks, vote

__all__ = ["HOLOCOSM_BASELINES", "PEER_BY_METHOD", "PEER_METHODS", "Baseline", "get_baseline", "holocosm_baselines",
           "run_baseline"]


@dataclass(frozen=True)
class Baseline:
    """A named comparison method.

    Attributes
    ----------
    name : str
    build : callable
        ``build(f, seed=0, **options) -> BaselineSelection`` (``metric=`` too when ``per_metric``).
    per_metric : bool
        Selects with one metric (``metric``: an index or ``"average"``); its evaluation on every metric is
        the cross-metric comparison.
    description : str
    """

    name: str
    build: Callable[..., BaselineSelection]
    per_metric: bool
    description: str


#: Every comparison method by name.
HOLOCOSM_BASELINES: Registry[Baseline] = Registry("comparison method", listing="comparison methods")
for _b in (
    Baseline("holocosm", holocosm_selection, False, "HoloCosm's exchange search, source-assisted estimate"),
    Baseline("swap_unconstrained", swap_unconstrained, False, "the exchange search without the ranking constraint"),
    Baseline("random", random_baseline, False, "uniform random items, plain means"),
    Baseline("random_sac", partial(random_baseline, correction=True), False,
             "uniform random items, source-assisted correction"),
    Baseline("anchorpoints", anchorpoints, True, "AnchorPoints: FasterPAM on 1 - Pearson, cluster-size weights"),
    Baseline("kmeans", kmeans_baseline, False, "Lloyd K-means on concatenated responses scaled per metric"),
    Baseline("vote", vote, False, "per-metric AnchorPoints combined by votes, plain means"),
    Baseline("mrmr_ridge", mrmr_ridge, True, "mRMR (mutual-information quotient), one RidgeCV per metric"),
    Baseline("tinybenchmarks", tinybenchmarks, True, "5-d IRT item parameters, weighted K-means, cluster weights"),
    Baseline("tinybenchmarks_gpirt", partial(tinybenchmarks, estimator="gp-irt"), True,
             "tinyBenchmarks' selection with its gp-IRT estimator per evaluation metric"),
):
    HOLOCOSM_BASELINES.register(_b.name, _b)


def holocosm_baselines() -> list[str]:
    """Names of the registered comparison methods."""
    return HOLOCOSM_BASELINES.names()


def get_baseline(name: str) -> Baseline:
    """The comparison method registered as ``name``."""
    return HOLOCOSM_BASELINES.get(name)


def run_baseline(name: str, f: RankingRiskReconstruction, seed: int = 0, **options: Any) -> BaselineSelection:
    """``get_baseline(name).build(f, seed=seed, **options)``; ``metric`` is refused by whole-set methods."""
    b = get_baseline(name)
    if "metric" in options and not b.per_metric:
        raise InvalidInputError(f"metric: {name!r} selects with all metrics and takes no metric, got "
                                f"{options['metric']!r}")
    return b.build(f, seed=seed, **options)


# ------------------------------------------------------------------ as solve methods (the harness)
#: The paper's peers as baseline methods of :func:`benchsel.solvers.solve` (``"peer-vote"``, ...), so the harness
#: (``benchsel run holocosm``) runs them beside the exchange search: the formulation re-evaluates their
#: selection (``R_mean``, feasibility under the ranking-risk budget) and the suite's fidelity scores it
#: with the source-assisted estimate and with the peer's own estimator (``own_*`` columns).
#: Per-metric peers select on the AverageMetric.
PEER_METHODS = ("vote", "kmeans", "anchorpoints", "mrmr_ridge", "tinybenchmarks", "tinybenchmarks_gpirt")
#: solve method name -> peer name
PEER_BY_METHOD = {f"peer-{n.replace('_', '-')}": n for n in PEER_METHODS}


def _peer_runner(name: str) -> Callable[..., Any]:
    def run(f: RankingRiskReconstruction, *, time_limit: float | None, seed: int | None) -> Any:
        clock = Clock(time_limit)
        used = 0 if seed is None else int(seed)
        out = run_baseline(name, f, seed=used)
        return output(out.selection, clock, baseline=name, own_estimator=_estimator_of(out), seed_used=used)

    run.__name__ = f"run_peer_{name}"
    return run


def _estimator_of(sel: BaselineSelection) -> str:
    if isinstance(sel, FittedSelection):
        return "fitted per metric"
    if sel.correction:
        return "source-assisted"
    return "plain mean" if sel.weights is None else "weighted mean"


for _method, _name in PEER_BY_METHOD.items():
    register_method(_method, kind="baseline", accepts=RankingRiskReconstruction,
                    description=f"HoloCosm's comparison: {HOLOCOSM_BASELINES.get(_name).description}")(
        _peer_runner(_name))
