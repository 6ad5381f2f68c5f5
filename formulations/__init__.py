"""Formulation objects: validated data, evaluation, feasibility, linear statement.

Classes are imported lazily, so ``import formulations`` stays light.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from .base import Check, Formulation
from .core.registry import formulation_classes as registered_formulations

_LAZY = {
    "KMedoids": "benchsel.formulations.kmedoids",
    "dissimilarity": "benchsel.formulations.kmedoids",
    "PositionalRepresentation": "benchsel.formulations.representation",
    "PositionalProportionality": "benchsel.formulations.proportionality",
    "RankingRiskReconstruction": "benchsel.formulations.holocosm",
    "BatchInformationGain": "benchsel.formulations.bayes",
    # estimators (not formulations: formulation_classes() skips them)
    "get_estimator": "benchsel.formulations.estimation",
    "estimator_names": "benchsel.formulations.estimation",
    "list_estimators": "benchsel.formulations.estimation",
    "register_estimator": "benchsel.formulations.estimation",
    "Estimator": "benchsel.formulations.estimation",
    "fit_irt": "benchsel.formulations.estimation.irt",
    "IRTModel": "benchsel.formulations.estimation.irt",
    # RepCore alignment (not a formulation)
    "RepCoreAligner": "benchsel.formulations.repcore",
    "align_hidden_states": "benchsel.formulations.repcore",
}

__all__ = ["Formulation", "Check", "formulation_classes", *_LAZY]


def formulation_classes() -> list[type]:
    """Every built-in :class:`Formulation` subclass, in declaration order.

    Found by declaration: every module of this package is imported and each
    concrete subclass of :class:`Formulation` it defines has recorded itself
    (``Formulation.__init_subclass__``); a new formulation module needs no list.
    """
    for m in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if not m.name.rsplit(".", 1)[-1].startswith("_"):
            importlib.import_module(m.name)
    return [c for c in registered_formulations() if c.__module__.startswith(f"{__name__}.")]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'benchsel.formulations' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
