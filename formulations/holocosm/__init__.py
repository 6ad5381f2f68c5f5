"""Ranking-risk constrained multi-metric reconstruction (HoloCosm).

:mod:`.problem` holds :class:`RankingRiskReconstruction`; :mod:`.terms` its
risk terms and argument checks; :mod:`.fidelity` the estimates and fidelity
measures of the paper's protocol.
"""
from __future__ import annotations

from .fidelity import Fidelity, fidelity, weighted_estimate
from .problem import RankingRiskReconstruction
from .terms import FEAS_TOL, RiskTerms

__all__ = ["FEAS_TOL", "Fidelity", "RankingRiskReconstruction", "RiskTerms", "fidelity", "weighted_estimate"]
