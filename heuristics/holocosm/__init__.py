"""Methods for :class:`benchsel.formulations.RankingRiskReconstruction` (HoloCosm): the exchange search
(:mod:`.swap`, ``"swap"``), simulated annealing (:mod:`.anneal`, ``"anneal"``) and the baselines of the
paper's comparison (:mod:`.baselines`, :mod:`.peers`, :mod:`.mrmr`), selectable by name (:mod:`.comparisons`)."""
from __future__ import annotations

from .anneal import AnnealOutcome, SwapScorer, anneal_search, descent, polish_swaps
from .baselines import (
    BaselineSelection,
    FittedSelection,
    anchorpoints,
    average_metric,
    holocosm_selection,
    kmeans_baseline,
    random_baseline,
    selection_target,
    swap_unconstrained,
)
from .comparisons import (
    HOLOCOSM_BASELINES,
    PEER_BY_METHOD,
    PEER_METHODS,
    Baseline,
    get_baseline,
    holocosm_baselines,
    run_baseline,
)
from .mrmr import mrmr_order, mrmr_ridge
from .peers import tinybenchmarks, vote, vote_counts, weighted_kmeans
from .swap import SwapOutcome, swap_search

__all__ = [
    "HOLOCOSM_BASELINES",
    "PEER_BY_METHOD",
    "PEER_METHODS",
    "AnnealOutcome",
    "Baseline",
    "BaselineSelection",
    "FittedSelection",
    "SwapOutcome",
    "SwapScorer",
    "anchorpoints",
    "anneal_search",
    "average_metric",
    "descent",
    "get_baseline",
    "holocosm_baselines",
    "holocosm_selection",
    "kmeans_baseline",
    "mrmr_order",
    "mrmr_ridge",
    "polish_swaps",
    "random_baseline",
    "run_baseline",
    "selection_target",
    "swap_search",
    "swap_unconstrained",
    "tinybenchmarks",
    "vote",
    "vote_counts",
    "weighted_kmeans",
]
