"""Methods for :class:`benchsel.formulations.RankingRiskReconstruction` (HoloCosm): the exchange search
(:mod:`.swap`, ``"swap"``), simulated annealing (:mod:`.anneal`, ``"anneal"``) and the baselines of the
paper's comparison (:mod:`.baselines`)."""
from __future__ import annotations

from .anneal import AnnealOutcome, SwapScorer, anneal_search, descent, polish_swaps
from .baselines import (
    BaselineSelection,
    anchorpoints,
    average_metric,
    holocosm_selection,
    kmeans_baseline,
    random_baseline,
    swap_unconstrained,
)
from .swap import SwapOutcome, swap_search

__all__ = [
    "AnnealOutcome",
    "BaselineSelection",
    "SwapOutcome",
    "SwapScorer",
    "anchorpoints",
    "anneal_search",
    "average_metric",
    "descent",
    "holocosm_selection",
    "kmeans_baseline",
    "polish_swaps",
    "random_baseline",
    "swap_search",
    "swap_unconstrained",
]
