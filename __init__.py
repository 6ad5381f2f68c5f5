"""benchsel: mathematical-programming formulations for benchmark compression.

The repository's top-level folders are the subpackages of this one
(``benchsel.formulations``, ``benchsel.solvers``, ``benchsel.heuristics``,
``benchsel.instances``, ``benchsel.benchmarks``). The public API is also
reachable from here; names are imported lazily, so ``import benchsel`` is
cheap::

    from benchsel import KMedoids, solve
    res = solve(KMedoids.from_features(X, k=10, metric="correlation"), "highs", time_limit=60)

    from benchsel import compress          # models x items matrix -> k items + a fitted estimator
    c = compress(Y, k=50)
    c.predict(Y_new[:, c.items])
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    # solving
    "solve": "benchsel.solvers.api",
    "available_methods": "benchsel.solvers.registry",
    "list_methods": "benchsel.solvers.registry",
    "get_method": "benchsel.solvers.registry",
    "register_method": "benchsel.solvers.registry",
    "Result": "benchsel.formulations.core.result",
    "MethodOutput": "benchsel.formulations.core.result",
    "Termination": "benchsel.formulations.core.result",
    "LinearModel": "benchsel.formulations.core.model",
    "ModelBuilder": "benchsel.formulations.core.model",
    "write_mps": "benchsel.formulations.core.mps",
    # errors
    "BenchselError": "benchsel.formulations.core.errors",
    "InvalidInputError": "benchsel.formulations.core.errors",
    "UnknownMethodError": "benchsel.formulations.core.errors",
    "MethodNotApplicableError": "benchsel.formulations.core.errors",
    "SolverNotInstalledError": "benchsel.formulations.core.errors",
    "NotLinearError": "benchsel.formulations.core.errors",
    "NumericalError": "benchsel.formulations.core.errors",
    # formulations
    "Formulation": "benchsel.formulations.base",
    "KMedoids": "benchsel.formulations.kmedoids",
    "PositionalRepresentation": "benchsel.formulations.positional",
    "PositionalProportionality": "benchsel.formulations.positional",
    "RankingRiskReconstruction": "benchsel.formulations.holocosm",
    "BatchInformationGain": "benchsel.formulations.bayes",
    # sequential evaluation (BayesAME)
    "bayesame_evaluate": "benchsel.formulations.bayes.evaluate",
    "bayesame_multi_evaluate": "benchsel.formulations.bayes.multi",
    "EvaluationResult": "benchsel.formulations.bayes.evaluate",
    "MultiTargetResult": "benchsel.formulations.bayes.multi",
    # estimators and the one-call path
    "compress": "benchsel.solvers.compression",
    "Compressed": "benchsel.solvers.compression",
    "select_items": "benchsel.solvers.compression",
    "AdaptiveEvaluation": "benchsel.solvers.adaptive",
    "load_compressed": "benchsel.solvers.compression",
    "register_selection": "benchsel.solvers.compression",
    "selection_names": "benchsel.solvers.compression",
    "get_estimator": "benchsel.formulations.estimation",
    "estimator_names": "benchsel.formulations.estimation",
    "list_estimators": "benchsel.formulations.estimation",
    "register_estimator": "benchsel.formulations.estimation",
    "Estimator": "benchsel.formulations.estimation",
    "fit_irt": "benchsel.formulations.estimation.irt",
    # RepCore alignment
    "RepCoreAligner": "benchsel.formulations.repcore",
    "align_hidden_states": "benchsel.formulations.repcore",
    # instances
    "load_hidden_states": "benchsel.instances.hidden",
    "make_hidden_states": "benchsel.instances.hidden",
    "load_pmed": "benchsel.instances.orlib",
    "load_score_table": "benchsel.instances.scores",
    "load_responses": "benchsel.instances.responses",
    "load_scores": "benchsel.instances.scorefiles",
    "save_instance": "benchsel.instances.files",
    "load_instance": "benchsel.instances.files",
}

__all__ = ["__version__", *_LAZY]

if TYPE_CHECKING:  # static analysers see the real names
    from benchsel.formulations.base import Formulation
    from benchsel.formulations.bayes import BatchInformationGain
    from benchsel.formulations.bayes.evaluate import EvaluationResult, bayesame_evaluate
    from benchsel.formulations.bayes.multi import MultiTargetResult, bayesame_multi_evaluate
    from benchsel.formulations.core.errors import (
        BenchselError,
        InvalidInputError,
        MethodNotApplicableError,
        NotLinearError,
        NumericalError,
        SolverNotInstalledError,
        UnknownMethodError,
    )
    from benchsel.formulations.core.model import LinearModel, ModelBuilder
    from benchsel.formulations.core.mps import write_mps
    from benchsel.formulations.core.result import MethodOutput, Result, Termination
    from benchsel.formulations.estimation import (
        Estimator,
        estimator_names,
        get_estimator,
        list_estimators,
        register_estimator,
    )
    from benchsel.formulations.estimation.irt import fit_irt
    from benchsel.formulations.holocosm import RankingRiskReconstruction
    from benchsel.formulations.kmedoids import KMedoids
    from benchsel.formulations.positional import PositionalProportionality, PositionalRepresentation
    from benchsel.formulations.repcore import RepCoreAligner, align_hidden_states
    from benchsel.instances.files import load_instance, save_instance
    from benchsel.instances.hidden import load_hidden_states, make_hidden_states
    from benchsel.instances.orlib import load_pmed
    from benchsel.instances.responses import load_responses
    from benchsel.instances.scorefiles import load_scores
    from benchsel.instances.scores import load_score_table
    from benchsel.solvers.adaptive import AdaptiveEvaluation
    from benchsel.solvers.api import solve
    from benchsel.solvers.compression import (
        Compressed,
        compress,
        load_compressed,
        register_selection,
        select_items,
        selection_names,
    )
    from benchsel.solvers.registry import available_methods, get_method, list_methods, register_method


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'benchsel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
