"""Formulation objects: validated data, evaluation, feasibility, linear statement.

Classes are imported lazily, so ``import formulations`` stays light.
"""
from __future__ import annotations

import importlib
from typing import Any

from .base import Check, Formulation

_LAZY = {
    "KMedoids": "formulations.kmedoids",
    "dissimilarity": "formulations.kmedoids",
    "PositionalRepresentation": "formulations.positional",
    "PositionalProportionality": "formulations.positional",
    "RankingRiskReconstruction": "formulations.holocosm",
    "BatchInformationGain": "formulations.bayes",
}

__all__ = ["Formulation", "Check", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'formulations' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
