"""Formulation objects: validated data, evaluation, feasibility, linear statement.

Classes are imported lazily, so ``import formulations`` stays light.
"""
from __future__ import annotations

import importlib
from typing import Any

from .base import Check, Formulation

_LAZY = {
    "KMedoids": "benchsel.formulations.kmedoids",
    "dissimilarity": "benchsel.formulations.kmedoids",
    "PositionalRepresentation": "benchsel.formulations.positional",
    "PositionalProportionality": "benchsel.formulations.positional",
    "RankingRiskReconstruction": "benchsel.formulations.holocosm",
    "BatchInformationGain": "benchsel.formulations.bayes",
    # estimators (not formulations: formulation_classes() skips them)
    "get_estimator": "benchsel.formulations.estimators",
    "estimator_names": "benchsel.formulations.estimators",
    "list_estimators": "benchsel.formulations.estimators",
    "register_estimator": "benchsel.formulations.estimators",
    "Estimator": "benchsel.formulations.estimators",
    "fit_irt": "benchsel.formulations.irt",
    "IRTModel": "benchsel.formulations.irt",
    # RepCore alignment (not a formulation)
    "RepCoreAligner": "benchsel.formulations.repcore",
    "align_hidden_states": "benchsel.formulations.repcore",
}

__all__ = ["Formulation", "Check", "formulation_classes", *_LAZY]


def formulation_classes() -> list[type]:
    """Every built-in :class:`Formulation` subclass, in declaration order."""
    out = []
    for name, mod in _LAZY.items():
        obj = getattr(importlib.import_module(mod), name)
        if isinstance(obj, type) and issubclass(obj, Formulation):
            out.append(obj)
    return out


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'benchsel.formulations' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
