"""Sequential evaluators by name: BayesAME and its peers, selectable as the BayesAME study selects them.

Every evaluator takes ``(reference_scores, target, *, eps1, eps2, W, max_items, stop, seed)`` (shape
(Kr, N) and (N,) or a callable) and returns an
:class:`~benchsel.formulations.bayes.evaluate.EvaluationResult` whose ``trace`` holds, per step,
``estimate``, ``var`` and ``width`` (and ``mean_R``, the interval's centre, where it differs from the
estimate)::

    res = get_sequential("seq-apw")(R, y, stop=False, seed=0)

Built in (:func:`sequential_names`): ``"bayesame"``, ``"bayesame-rs"``, ``"rs-mean"``, ``"bayes-aipw"``,
``"seq-apw"``, ``"bayes-rs-learn"``, ``"aipw"``, ``"bayes-cvo"``. Others register with
:func:`register_sequential`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..bayes.evaluate import EvaluationResult, bayes_aipw_evaluate, bayesame_evaluate, rs_mean_evaluate
from ..bayes.peers import aipw_evaluate, bayes_cvo_evaluate, bayes_rs_learn_evaluate, seq_apw_evaluate
from ..core.errors import InvalidInputError
from ..core.registry import Registry

__all__ = ["SEQUENTIAL", "SequentialMethod", "get_sequential", "register_sequential", "sequential_methods",
           "sequential_names"]


@dataclass(frozen=True)
class SequentialMethod:
    """A named sequential evaluator.

    Attributes
    ----------
    name : str
    description : str
    run : callable
        ``run(reference_scores, target, **options) -> EvaluationResult``.
    needs_references : bool
        False when the evaluator ignores the reference scores (RS-Mean).
    """

    name: str
    description: str
    run: Callable[..., EvaluationResult]
    needs_references: bool = True

    def __call__(self, reference_scores: Any, target: Any, **options: Any) -> EvaluationResult:
        if not self.needs_references:
            return self.run(target, **options)
        return self.run(reference_scores, target, **options)


#: Every sequential evaluator by name.
SEQUENTIAL: Registry[SequentialMethod] = Registry("sequential evaluator", listing="sequential evaluators")


def register_sequential(name: str, run: Callable[..., EvaluationResult], description: str, *,
                        needs_references: bool = True) -> SequentialMethod:
    """Register ``run`` under ``name`` (a new name; re-registering raises)."""
    if not callable(run):
        raise InvalidInputError(f"run: expected a callable, got {type(run).__name__}")
    return SEQUENTIAL.register(name, SequentialMethod(name, description, run, needs_references))


def sequential_names() -> list[str]:
    """Registered names, in registration order."""
    return SEQUENTIAL.names()


def sequential_methods() -> list[SequentialMethod]:
    return SEQUENTIAL.values()


def get_sequential(name: str) -> SequentialMethod:
    """The evaluator registered as ``name``."""
    return SEQUENTIAL.get(name)


register_sequential("bayesame", partial(bayesame_evaluate, selection="auto"),
                    "BayesAME (Algorithm 1): information gain in the unique regime, random otherwise")
register_sequential("bayesame-rs", partial(bayesame_evaluate, selection="random"),
                    "BayesAME-RS: BayesAME's posterior and estimate on random items")
register_sequential("rs-mean", rs_mean_evaluate, "RS-Mean: random items, sample mean, finite-population variance",
                    needs_references=False)
register_sequential("bayes-aipw", bayes_aipw_evaluate,
                    "Bayes-AIPW: random items, Bayesian ridge of item scores on reference scores, AIPW")
register_sequential("seq-apw", seq_apw_evaluate,
                    "Seq-APW: greedy correlation covering, anchor-points weighted mean, Eq. 9 variance")
register_sequential("bayes-rs-learn", bayes_rs_learn_evaluate,
                    "Bayes-RS-Learn: random items, Bayesian ridge of the full score on coreset scores across "
                    "reference models")
register_sequential("aipw", aipw_evaluate, "AIPW (benchmark-prediction): random items, ridge (alpha 10), AIPW")
register_sequential("bayes-cvo", bayes_cvo_evaluate,
                    "BayesAME-RS with the out-of-sample (leave-one-out) control-variate estimate")
