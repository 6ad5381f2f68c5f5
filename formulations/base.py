"""The formulation protocol every selection problem implements.

A formulation holds validated data and can

* ``evaluate(selection)`` — the objective in floating point;
* ``check(selection)`` — feasibility with readable reasons;
* ``linear_model(**options)`` — state itself as a :class:`~benchsel.formulations.core.model.LinearModel`
  (or raise :class:`~benchsel.formulations.core.errors.NotLinearError` with the reason); a
  formulation with ``quadratic_statement = True`` states a model whose objective has a
  quadratic part (``LinearModel.Q``), which only quadratic-capable backends accept;
* ``random_selection(rng)`` — a random feasible-shaped selection;
* ``enumerate_selections()`` — every candidate selection (for brute force on tiny cases);
* ``to_mps(path)`` — export the linear statement (solver-side builders, e.g. a modelling
  language's, read :meth:`linear_model`);
* ``get_params()`` — constructor arguments, so ``type(f)(**f.get_params())`` rebuilds it.
"""
from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .core.errors import InvalidInputError, NotLinearError
from .core.model import LinearModel
from .core.mps import write_mps
from .core.properties import NumericalProperties
from .core.registry import register_formulation
from .core.validation import check_choice, check_selection

__all__ = ["Check", "Formulation"]


@dataclass(frozen=True)
class Check:
    """Feasibility of a selection.

    Attributes
    ----------
    feasible : bool
    reasons : tuple of str
        One line per violated condition (empty when feasible); long lists are
        truncated, ``n_violations`` gives the full count.
    n_violations : int
    details : dict
        Formulation-specific structured details (e.g. violated pairs as arrays).
    """

    feasible: bool
    reasons: tuple[str, ...] = ()
    n_violations: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.feasible

    @classmethod
    def from_reasons(cls, reasons: list[str], details: Mapping[str, Any] | None = None, limit: int = 20) -> Check:
        return cls(not reasons, tuple(reasons[:limit]), len(reasons), dict(details or {}))


class Formulation(abc.ABC):
    """Base class of benchsel's selection problems."""

    #: "min" or "max": direction of :meth:`evaluate`.
    sense: ClassVar[str] = "min"
    #: Options of :meth:`linear_model` and their allowed values (None: any value).
    model_options: ClassVar[Mapping[str, tuple[Any, ...] | None]] = {}
    #: Why there is no linear statement (None when there is one).
    not_linear_reason: ClassVar[str | None] = None
    #: ``linear_model`` states the problem with a quadratic objective (``LinearModel.Q``):
    #: a mixed-integer quadratic program, read by backends that take one.
    quadratic_statement: ClassVar[bool] = False

    #: What the statement needs to be solved right (the warm-start heuristic, sized statements, near ties,
    #: redundant bounds); each exact backend maps it to its own settings.
    numerical_properties: ClassVar[NumericalProperties] = NumericalProperties()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            register_formulation(cls)

    # ------------------------------------------------------------------ data
    @property
    @abc.abstractmethod
    def n_items(self) -> int:
        """Size of the ground set selections are drawn from."""

    @abc.abstractmethod
    def get_params(self) -> dict[str, Any]:
        """Constructor keyword arguments that rebuild this formulation."""

    # -------------------------------------------------------------- oracle
    def as_selection(self, selection: Any, name: str = "selection") -> np.ndarray:
        """Validate ``selection``: sorted distinct int64 indices in ``[0, n_items)``."""
        return check_selection(selection, self.n_items, name)

    @abc.abstractmethod
    def evaluate(self, selection: Any) -> float:
        """Objective value of ``selection`` (array of item indices), in floating point."""

    @abc.abstractmethod
    def check(self, selection: Any) -> Check:
        """Feasibility of ``selection`` with reasons."""

    def is_feasible(self, selection: Any) -> bool:
        return self.check(selection).feasible

    @abc.abstractmethod
    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        """A random selection of the right shape (feasible where that is cheap to ensure)."""

    def initial_selection(self) -> np.ndarray | None:
        """A cheap feasible selection that exact backends use as their default warm start.

        None when the formulation knows none; a time-out then returns whatever
        the solver itself found.
        """
        return None

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        """Every selection that may be optimal (for brute force on tiny instances)."""
        raise NotImplementedError(f"{type(self).__name__} does not enumerate its selections")

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> Sequence[Formulation]:
        """Tiny instances (brute-forceable in well under a second) for the conformance suite."""
        return []

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        """Facts added to ``Result.extra`` for a selection (e.g. calibrated parameters)."""
        return {}

    def quick_bound(self, time_limit: float | None = None, *, incumbent: Any = None) -> float | None:
        """A cheap valid bound on the optimum (None: none known), used when no model fits the time left."""
        return None

    def canonical_selection(self, selection: Any) -> np.ndarray:
        """The form of ``selection`` the linear model expects among interchangeable items (default: as given)."""
        return self.as_selection(selection)

    def unit_scale(self) -> tuple[Formulation, float]:
        """An equivalent formulation whose costs are of magnitude about 1, and the factor back.

        Exact backends solve the returned formulation: the same selections are
        feasible, and every objective value of ``self`` is ``factor`` times the
        returned one's, ``factor`` a power of two (so the rescaling is exact).
        Solvers judge feasibility and optimality with absolute tolerances that
        only mean something at that magnitude. The default is ``(self, 1.0)``,
        right for formulations whose objective does not scale with their data.
        """
        return self, 1.0

    def better(self, a: float, b: float) -> bool:
        """Is objective ``a`` strictly better than ``b`` in this formulation's sense?"""
        return a < b if self.sense == "min" else a > b

    # --------------------------------------------------------- linear model
    @property
    def is_linear(self) -> bool:
        return self.not_linear_reason is None

    def check_model_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Validate options meant for :meth:`linear_model`."""
        out = {}
        for k, v in options.items():
            if k not in self.model_options:
                raise InvalidInputError(
                    f"{k}: not an option of {type(self).__name__}.linear_model; "
                    f"options: {', '.join(self.model_options) or '(none)'}"
                )
            allowed = self.model_options[k]
            out[k] = check_choice(v, k, allowed) if allowed is not None else v
        return out

    def linear_model(self, *, allow_lazy: bool = False) -> LinearModel:
        """The mixed-integer linear statement of the problem.

        Parameters
        ----------
        allow_lazy : bool
            The caller (a backend) can generate rows on demand
            (``LinearModel.lazy``); a formulation may then return a smaller
            master model. Static consumers (MPS, an integer-scaled copy) leave it False.

        Notes
        -----
        Subclasses add their model options (those declared in
        ``model_options``) as keyword parameters with defaults.
        """
        raise NotLinearError(
            f"{type(self).__name__} has no mixed-integer linear statement: "
            f"{self.not_linear_reason or 'not implemented'}"
        )

    def to_mps(self, path: str | Path, **options: Any) -> tuple[Path, Path]:
        """Write the linear statement as MPS (minimisation) plus a JSON name map.

        The file holds ``self.linear_model(**options)`` built for a static consumer (no rows generated
        on demand), the statement an exact backend without lazy rows solves; the map records it
        (``model``, ``meta``) and ``options`` (``model_options``). See docs/solvers.md, "MPS".

        Returns
        -------
        (mps_path, json_path)
        """
        checked = self.check_model_options(options)
        model = self.linear_model(**checked)
        return write_mps(model, path, formulation=self, model_options=checked)

    # ----------------------------------------------------------------- misc
    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_items={self.n_items})"
