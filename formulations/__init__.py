"""Formulation objects: validated data, evaluation, feasibility, linear statement.

:data:`EXPORTS` names every public name of the formulations layer and the module that defines it; both
``benchsel.formulations.X`` and the root package's ``benchsel.X`` are read from it, and each name is
imported on first use, so ``import benchsel.formulations`` stays light.
"""
from __future__ import annotations

import importlib
import pkgutil

from .core.lazy import lazy_exports

#: Public name -> defining module (a new formulation adds its line here and nowhere else).
EXPORTS: dict[str, str] = {
    "Formulation": "benchsel.formulations.base",
    "Check": "benchsel.formulations.base",
    "KMedoids": "benchsel.formulations.kmedoids",
    "dissimilarity": "benchsel.formulations.kmedoids",
    "PositionalRepresentation": "benchsel.formulations.representation",
    "PositionalProportionality": "benchsel.formulations.proportionality",
    "RankingRiskReconstruction": "benchsel.formulations.holocosm",
    "BatchInformationGain": "benchsel.formulations.bayes",
    # sequential evaluation (BayesAME)
    "bayesame_evaluate": "benchsel.formulations.bayes.evaluate",
    "bayesame_multi_evaluate": "benchsel.formulations.bayes.multi",
    "EvaluationResult": "benchsel.formulations.bayes.evaluate",
    "MultiTargetResult": "benchsel.formulations.bayes.multi",
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

__all__ = ["EXPORTS", "formulation_classes", *EXPORTS]


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
    found = importlib.import_module(f"{__name__}.core.registry").formulation_classes()
    own = f"{__name__}."
    return [c for c in found if c.__module__.startswith(own)] + [c for c in found if not c.__module__.startswith(own)]


__getattr__, __dir__ = lazy_exports(__name__, EXPORTS, also=("EXPORTS", "formulation_classes"))
