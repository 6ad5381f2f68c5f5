"""Result types shared by every method."""
from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MethodOutput", "ReadOnlyDict", "Result", "Termination", "Tolerances", "mip_gap"]


class Termination(str, enum.Enum):
    """Why a method stopped. Kept apart from whether a solution exists.

    Compares equal to its string value: ``res.termination == "optimal"``.
    """

    OPTIMAL = "optimal"  #: proven optimal (within the requested gap; see ``Result.gap``)
    TIME_LIMIT = "time_limit"  #: stopped by the time limit
    ITERATION_LIMIT = "iteration_limit"  #: stopped by an iteration/node/swap limit
    SOLUTION_LIMIT = "solution_limit"  #: stopped after the requested number of solutions
    OBJECTIVE_LIMIT = "objective_limit"  #: stopped by an objective target or bound
    CONVERGED = "converged"  #: a heuristic finished normally (local optimum or pass complete)
    FEASIBLE = "feasible"  #: an exact method stopped with a feasible selection it cannot prove optimal (no limit hit)
    INFEASIBLE = "infeasible"  #: proven infeasible
    UNBOUNDED = "unbounded"  #: proven unbounded
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    INTERRUPTED = "interrupted"  #: interrupted by the user or a callback
    ERROR = "error"  #: the backend failed
    UNKNOWN = "unknown"

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


def mip_gap(objective: float | None, bound: float | None) -> float | None:
    """``|objective - bound| / max(|objective|, |bound|)`` (0 when they are equal); None when either is missing.

    Purely relative: the same instance at any cost scale has the same gap.
    """
    if objective is None or bound is None or not math.isfinite(objective) or not math.isfinite(bound):
        return None
    if objective == bound:
        return 0.0
    return abs(objective - bound) / max(abs(objective), abs(bound))


class ReadOnlyDict(Mapping[str, Any]):
    """A read-only mapping (``Result.extra``): reads like a dict, refuses item assignment; picklable.

    ``dict(res.extra)`` gives a mutable copy.
    """

    __slots__ = ("_data",)
    _data: dict[str, Any]

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_data", dict(data or {}))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("Result.extra is read-only; copy it with dict(res.extra) to change it")

    def __delitem__(self, key: str) -> None:
        raise TypeError("Result.extra is read-only; copy it with dict(res.extra) to change it")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Result.extra is read-only; copy it with dict(res.extra) to change it")

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyDict, (self._data,))

    def __repr__(self) -> str:
        return repr(self._data)

    def __eq__(self, other: object) -> bool:
        return dict(self._data) == (dict(other) if isinstance(other, Mapping) else other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Tolerances:
    """The tolerances a backend solved with, as it reports them (in the units of the model it solved).

    The judge of optimality claims (:func:`benchsel.solvers.claims.judge`) derives from them how far the
    formulation's re-evaluated objective may lie from the backend's bound and still be called optimal.

    Attributes
    ----------
    mip_rel_gap : float
        Relative gap at which the backend stops and calls its incumbent optimal.
    mip_abs_gap : float
        Absolute gap, in units of the model's objective (0: the relative gap alone decides).
    feasibility : float
        Largest violation of a row or of integrality the backend accepts in a solution (0: the backend's
        answers hold exactly, e.g. an integer copy whose points are re-checked).
    objective_norm : float or None
        ``sum |c|`` of the model's objective (None: not reported, read as 1; the exact backends' shared run
        fills it from the model): how far the objective of a point may move when its columns
        and rows are off by ``feasibility``. With ``feasibility`` it gives the slack ``feasibility *
        objective_norm`` in objective units. Models are solved unit-scaled (costs of magnitude about 1),
        so the slack is relative to the data's scale.
    """

    mip_rel_gap: float = 1e-6
    mip_abs_gap: float = 0.0
    feasibility: float = 0.0
    objective_norm: float | None = None


@dataclass
class MethodOutput:
    """What a method's runner hands back to :func:`benchsel.solvers.solve`.

    Attributes
    ----------
    selection : ndarray of int or None
        The best selection found (item indices), or None if there is none.
    termination : Termination
    bound : float or None
        Proven bound on the formulation's optimum, in the formulation's units
        (lower bound for minimisation, upper bound for maximisation).
    build_seconds, solve_seconds : float
    extra : dict
        Backend details (status strings, node counts, scaling, ...).
    tolerances : Tolerances or None
        The tolerances an exact backend solved with (None: a heuristic, judged at the method's relative
        gap alone).
    """

    selection: np.ndarray | None
    termination: Termination
    bound: float | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    tolerances: Tolerances | None = None


@dataclass(frozen=True, eq=False)
class Result:
    """The outcome of :func:`benchsel.solvers.solve`.

    Attributes
    ----------
    selection : ndarray of int64, shape (n_selected,)
        Sorted item indices (empty when no solution was found).
    objective : float
        The formulation's objective at ``selection``, re-evaluated in floating
        point by the formulation (``nan`` without a solution).
    bound : float or None
        Proven bound (None for heuristics or when none is known).
    gap : float or None
        ``|objective - bound| / max(|objective|, 1e-9)``.
    feasible : bool
        Feasibility of ``selection`` as checked by the formulation.
    termination : Termination
    method : str
    seed : int or None
    build_seconds, solve_seconds : float
        Time to state the model (or prepare) and to solve it.
    formulation : str
        Class name of the formulation.
    extra : mapping
        Backend and formulation details (read-only; ``dict(res.extra)`` copies
        it). A run whose method raised under ``solve(..., capture_errors=True)``
        has ``extra["error"]`` (``"Type: message"``) and ``extra["traceback"]``.
    """

    selection: np.ndarray
    objective: float
    bound: float | None
    gap: float | None
    feasible: bool
    termination: Termination
    method: str
    seed: int | None
    build_seconds: float
    solve_seconds: float
    formulation: str = ""
    extra: Mapping[str, Any] = field(default_factory=ReadOnlyDict)

    def __post_init__(self) -> None:
        if not isinstance(self.extra, ReadOnlyDict):
            object.__setattr__(self, "extra", ReadOnlyDict(self.extra))

    @property
    def has_solution(self) -> bool:
        return self.selection.size > 0 and math.isfinite(self.objective)

    @property
    def seconds(self) -> float:
        return self.build_seconds + self.solve_seconds

    def to_dict(self) -> dict[str, Any]:
        """A flat row: scalars only; ``extra`` keys are prefixed ``extra.``."""
        row: dict[str, Any] = {
            "formulation": self.formulation,
            "method": self.method,
            "seed": self.seed,
            "termination": self.termination.value,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "feasible": self.feasible,
            "n_selected": int(self.selection.size),
            "build_seconds": self.build_seconds,
            "solve_seconds": self.solve_seconds,
            "seconds": self.seconds,
            "selection": " ".join(str(int(i)) for i in self.selection),
        }
        for k, v in self.extra.items():
            if isinstance(v, (np.generic,)):
                v = v.item()
            if v is None or isinstance(v, (bool, int, float, str)):
                row[f"extra.{k}"] = v
        return row

    def __repr__(self) -> str:
        b = "None" if self.bound is None else f"{self.bound:.6g}"
        g = "None" if self.gap is None else f"{self.gap:.3g}"
        return (
            f"Result(method={self.method!r}, termination={self.termination.value!r}, objective={self.objective:.6g}, "
            f"bound={b}, gap={g}, feasible={self.feasible}, n_selected={self.selection.size}, "
            f"seconds={self.seconds:.3f})"
        )
