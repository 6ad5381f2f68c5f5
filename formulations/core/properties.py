"""What a formulation's statement needs to be solved right, stated without naming a solver.

A formulation declares its :class:`NumericalProperties` (class attribute
``numerical_properties``); every exact backend maps them to its own settings in
the policy that lives beside it (``benchsel.solvers.backends``), and the shared
exact run reads the ones every backend honours alike (the warm start, sized
statements).
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["NumericalProperties", "WarmStart"]


@dataclass(frozen=True)
class WarmStart:
    """The heuristic an exact backend runs first (``warm_start="auto"``) and its share of the time limit.

    Attributes
    ----------
    method : str or None
        A registered heuristic (e.g. ``"fasterpam"``); None: the formulation's
        :meth:`~benchsel.formulations.base.Formulation.initial_selection` only.
    share : float
        Share of the call's time limit the heuristic may use.
    cap : float or None
        At most this many seconds (None: no cap beyond ``share``).
    """

    method: str | None = None
    share: float = 0.2
    cap: float | None = 10.0


@dataclass(frozen=True)
class NumericalProperties:
    """Properties of a formulation's statement that decide how it must be solved.

    Attributes
    ----------
    warm_start : WarmStart
        The heuristic that gives exact backends their default incumbent.
    sized_models : bool
        :meth:`~benchsel.formulations.base.Formulation.linear_model` takes the consumer's ``time_limit`` and
        ``nnz_per_second`` and, with ``model="auto"``, refuses a statement that would not fit the time left
        (an :class:`~benchsel.formulations.core.errors.InvalidInputError` with ``requested == "auto"``); the
        backends then return the warm start with
        :meth:`~benchsel.formulations.base.Formulation.quick_bound`.
    near_ties : bool
        Tied and near-tied data are common and the optimum sits on them (e.g. ranking rows that two
        selections meet within float noise): reductions that are exact only up to a tolerance
        (aggressive presolve, cover cuts derived from rounded rows) can cut the optimum off and must stay off.
    redundant_bounds : bool
        The bounds of the continuous columns hold at every feasible point (they help a solver, they do not
        restrict): a backend that rounds the model may widen them so that rounding never cuts off a point.
    counting : {None, "proportional", "cover"}
        The problem's rows count the selected items of each class, with exact integer bounds:
        ``"proportional"``, each count within an interval set by the selection's size (``size_intervals``);
        ``"cover"``, each count at least a demand (``cover_rows``). A backend may then solve it as a sequence
        of integer feasibility problems. None: not such a problem.
    """

    warm_start: WarmStart = field(default_factory=WarmStart)
    sized_models: bool = False
    near_ties: bool = False
    redundant_bounds: bool = False
    counting: str | None = None
