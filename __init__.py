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

from benchsel.formulations import EXPORTS as _FORMULATIONS
from benchsel.formulations.core.lazy import lazy_exports

__version__ = "0.1.0"

#: The root's names and their modules: solving and instances here, the formulations layer's from its
#: :data:`~benchsel.formulations.EXPORTS` (one map: a new formulation is exported in one place).
_LAZY: dict[str, str] = {
    # solving
    "solve": "benchsel.solvers.api",
    "available_methods": "benchsel.solvers.methods",
    "list_methods": "benchsel.solvers.methods",
    "get_method": "benchsel.solvers.methods",
    "register_method": "benchsel.solvers.methods",
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
    # formulations, estimators, BayesAME's evaluators, RepCore's alignment
    **_FORMULATIONS,
    # the one-call path
    "compress": "benchsel.solvers.compression",
    "Compressed": "benchsel.solvers.compression",
    "select_items": "benchsel.solvers.compression",
    "AdaptiveEvaluation": "benchsel.solvers.adaptive",
    "load_compressed": "benchsel.solvers.compression",
    "register_selection": "benchsel.solvers.compression",
    "selection_names": "benchsel.solvers.compression",
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

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, also=("__version__",))
