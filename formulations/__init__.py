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
    """Every concrete :class:`Formulation` subclass: the built-in ones first, in declaration order, then any
    defined elsewhere (a third party's, a test's) in the order they were defined.

    Found by declaration: every module of this package is imported and each
    concrete subclass of :class:`Formulation` it defines has recorded itself
    (``Formulation.__init_subclass__``); a new formulation module needs no list.
    """
    for m in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if not m.name.rsplit(".", 1)[-1].startswith("_"):
            importlib.import_module(m.name)
    own = f"{__name__}."
    found = registered_formulations()
    return [c for c in found if c.__module__.startswith(own)] + [c for c in found if not c.__module__.startswith(own)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'benchsel.formulations' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
