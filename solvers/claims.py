"""The one judge of optimality claims.

Every exact backend reports what it saw: a raw termination, the selection it
found (re-evaluated by the formulation, never by the backend), its bound and
the tolerances it solved with (:class:`~benchsel.formulations.core.result.Tolerances`).
:func:`judge` decides what the result may keep:

* ``"optimal"`` without a feasible selection becomes ``"unknown"``;
* an answer the backend found inconsistent with itself (``distrust``: e.g. a reported objective that is not
  its solution's) keeps its selection as ``"feasible"``, without a bound;
* ``"infeasible"`` / ``"unbounded"`` while a feasible selection is known becomes ``"feasible"`` (bound dropped);
* a bound on the wrong side of the objective is clamped to it when the two differ by float noise
  (``1e-9`` relative), and otherwise dropped, an ``"optimal"`` resting on it becoming ``"feasible"``;
* ``"optimal"`` stands when ``objective - bound`` is within :func:`slack`: the backend's relative gap, its
  absolute gap, and what its feasibility tolerance lets a solution's objective move
  (``feasibility * objective_norm``), all in the units of the unit-scaled model the backend solved, times
  ``unit`` (the formulation's units per model unit). A backend that stops at its own gap on a point
  whose rows hold within its feasibility tolerance is called optimal when the formulation re-evaluates
  that point; the same data scaled by any factor give the same verdict.

The exact backends' shared run (:func:`benchsel.solvers.backends.common.run_exact`) judges in model units,
the CP-SAT backend judges its checked incumbent against the bound of its scaled copy (asking :func:`within`
whether a certificate solve is still needed), and
:func:`benchsel.solvers.api.finalize` judges every method's result again in the formulation's units.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from benchsel.formulations.core.result import Termination, Tolerances, mip_gap

__all__ = ["NOISE", "Verdict", "judge", "slack", "within"]

#: Relative float noise: a bound past the objective by less is clamped to it, by more is dropped.
NOISE = 1e-9

_NO_ANSWER = (Termination.INFEASIBLE, Termination.INFEASIBLE_OR_UNBOUNDED, Termination.UNBOUNDED)


@dataclass(frozen=True)
class Verdict:
    """What a result may claim.

    Attributes
    ----------
    termination : Termination
    bound : float or None
        In the units the claim was judged in (minimisation).
    reason : str or None
        Why a claim was refused (recorded as ``extra["claim_rejected"]``); None when none was.
    """

    termination: Termination
    bound: float | None
    reason: str | None = None

    def record(self, extra: dict) -> None:
        """Write the reason (when there is one) to a result's ``extra``."""
        if self.reason is not None:
            extra["claim_rejected"] = self.reason


def slack(value: float, tolerances: Tolerances, unit: float = 1.0) -> float:
    """Largest ``objective - bound`` still called optimal at objective ``value``.

    Parameters
    ----------
    value : float
        The objective (minimisation units).
    tolerances : Tolerances
        The backend's tolerances, in the units of the model it solved.
    unit : float
        Size of one model unit in the units of ``value`` (the factor of the unit-scaled copy, 1 in model units).
    """
    t = tolerances
    gap = max(max(t.mip_rel_gap, NOISE) * abs(value), t.mip_abs_gap * unit)
    norm = 1.0 if t.objective_norm is None else t.objective_norm
    return gap + t.feasibility * norm * unit + 1e-12 * (abs(value) + unit)


def within(value: float, bound: float, tolerances: Tolerances, unit: float = 1.0) -> bool:
    """Is the objective ``value`` within :func:`slack` of ``bound`` (minimisation units)?

    The difference is taken in floats, so a bound set at exactly ``value - slack`` may land an ulp past it:
    a few ulps of ``value`` are allowed for that rounding."""
    return value - bound <= slack(value, tolerances, unit) + 4.0 * math.ulp(abs(value))


def judge(termination: Termination, objective: float | None, bound: float | None, tolerances: Tolerances, *,
          unit: float = 1.0, claimed: float | None = None, distrust: str | None = None) -> Verdict:
    """The termination and bound a method's answer may keep (every value in minimisation units).

    Parameters
    ----------
    termination : Termination
        What the method reported.
    objective : float or None
        The formulation's objective of the kept selection; None when no feasible selection (with a finite
        objective) is known.
    bound : float or None
        The method's bound on the optimum.
    tolerances : Tolerances
        The backend's tolerances (see :func:`slack`).
    unit : float
        Size of one model unit in the units of ``objective`` and ``bound``.
    claimed : float or None
        The formulation's objective of the selection the method itself returned, when another (a warm
        start) was kept instead: a method that calls a selection optimal that the kept one beats beyond
        the slack, with no bound to back it, is not believed.
    distrust : str or None
        Why the backend's own report contradicts itself (its status and bound are then not believed).

    Returns
    -------
    Verdict
    """
    term = Termination(termination)
    if bound is not None and not math.isfinite(bound):
        bound = None
    if objective is None or not math.isfinite(objective):
        if term == Termination.OPTIMAL:
            return Verdict(Termination.UNKNOWN, bound, "the method reported optimal without a feasible selection")
        return Verdict(term, bound)
    if distrust is not None:
        return Verdict(Termination.FEASIBLE if term in (Termination.OPTIMAL, *_NO_ANSWER) else term, None,
                       f"the backend's report contradicts itself ({distrust}); its claim and bound are not used")
    if term in _NO_ANSWER:
        return Verdict(Termination.FEASIBLE, None, f"the method reported {term.value}, but a feasible selection "
                                                   "is known")
    if bound is not None:
        past = bound - objective
        if past > NOISE * abs(objective) + 1e-12 * unit:
            return Verdict(Termination.FEASIBLE if term == Termination.OPTIMAL else term, None,
                           f"the bound {bound:.12g} lies past the objective {objective:.12g} of a feasible "
                           "selection; bound dropped")
        if past > 0.0:
            bound = objective  # float noise: never a bound on the wrong side
    if term != Termination.OPTIMAL:
        return Verdict(term, bound)
    if bound is not None and not within(objective, bound, tolerances, unit):
        return Verdict(Termination.FEASIBLE, bound,
                       f"optimal claimed at a relative gap of {mip_gap(objective, bound):.3g}, beyond the backend's "
                       f"tolerances (mip_rel_gap {tolerances.mip_rel_gap:g}, mip_abs_gap {tolerances.mip_abs_gap:g}, "
                       f"feasibility {tolerances.feasibility:g})")
    if bound is None and claimed is not None and claimed - objective > slack(objective, tolerances, unit):
        return Verdict(Termination.FEASIBLE, bound, "the method called a selection optimal that the warm start beats")
    return Verdict(term, bound)
