"""Ranking-risk constrained multi-metric reconstruction (HoloCosm).

:mod:`.problem` holds :class:`RankingRiskReconstruction`; :mod:`.terms` its
risk terms and argument checks; :mod:`.fidelity` the estimates and fidelity
measures of the paper's protocol; :mod:`.diagnostics` the cross-metric diagnostics
(metric-ranking correlations, the cross-metric worse-than-Random share, the union-size cost).
"""
from __future__ import annotations

from .diagnostics import (
    UnionCost,
    cross_metric_worse_share,
    high_agreement_share,
    metric_rank_correlation,
    union_cost,
)
from .fidelity import Fidelity, fidelity, weighted_estimate
from .problem import RankingRiskReconstruction
from .terms import FEAS_TOL, RiskTerms

__all__ = ["FEAS_TOL", "Fidelity", "RankingRiskReconstruction", "RiskTerms", "UnionCost", "cross_metric_worse_share",
           "fidelity", "high_agreement_share", "metric_rank_correlation", "union_cost", "weighted_estimate"]
