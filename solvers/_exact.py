"""Plumbing shared by the exact backends: option split, model build, time budget."""
from __future__ import annotations

import importlib.util
import time
from typing import Any, Callable, Mapping

import numpy as np

from .errors import InvalidInputError
from .model import LinearModel
from .options import Option

#: Options every exact backend takes.
COMMON_OPTIONS: tuple[Option, ...] = (
    Option("mip_rel_gap", 1e-6, "float", low=0.0, high=1.0, high_open=True,
           doc="relative gap at which the solver may stop and call the incumbent optimal"),
    Option("threads", None, "int", low=1, doc="solver threads (None: the backend's default)"),
    Option("verbose", False, "bool", doc="stream the solver's log (progress on long runs)"),
    Option("warm_start", "auto", "any",
           doc="a selection (item indices), 'auto' (the formulation's initial_selection) or None"),
)


#: Backends that read a model with a quadratic objective: method name -> (label, "usable here?")
_QUADRATIC_BACKENDS: dict[str, tuple[str, Callable[[], bool]]] = {}


def module_available(name: str) -> bool:
    """Is the module ``name`` importable (without importing it)?"""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def quadratic_backends() -> list[str]:
    """The backends that take a quadratic objective and are usable on this machine (labels for messages)."""
    return [label for label, usable in _QUADRATIC_BACKENDS.values() if usable()]


def _takers() -> str:
    takers = quadratic_backends()
    return ", ".join(takers) if takers else "(none installed: pip install pyscipopt, or benchsel[scip])"


def linear_acceptor(backend: str):
    """Acceptor for backends that read a :class:`LinearModel` without a quadratic objective."""

    def accepts(f: Any) -> str | None:
        if not getattr(f, "is_linear", False):
            if getattr(f, "quadratic_statement", False):
                return (f"{type(f).__name__} is stated with a quadratic objective (a mixed-integer quadratic "
                        f"program) and {backend} reads mixed-integer linear models only; backends that take it: "
                        f"{_takers()}")
            reason = getattr(f, "not_linear_reason", None) or "it has no linear statement"
            return f"{reason} ({backend} reads mixed-integer linear models only)"
        return None

    return accepts


def quadratic_acceptor(backend: str, method: str, *, label: str | None = None,
                       usable: Callable[[], bool] = lambda: True, missing: str = "",
                       quadratic_usable: Callable[[], bool] | None = None, quadratic_missing: str = ""):
    """Acceptor for backends that read linear models and models with a quadratic objective.

    Parameters
    ----------
    backend : str
        Display name (for reasons).
    method : str
        Registered method name.
    label : str, optional
        How linear-only backends' refusals name this one (default ``method``).
    usable : callable
        ``usable() -> bool``: the backend's package is installed.
    missing : str
        Reason given when it is not (how to install it).
    quadratic_usable, quadratic_missing
        The same for quadratic models only (default: as ``usable``).
    """
    q_usable = quadratic_usable or usable
    _QUADRATIC_BACKENDS[method] = (label or method, lambda: usable() and q_usable())

    def accepts(f: Any) -> str | None:
        if not usable():
            return missing or f"{backend} is not installed"
        if getattr(f, "is_linear", False):
            return None
        if getattr(f, "quadratic_statement", False):
            if not q_usable():
                return quadratic_missing or f"{backend} has no solver for mixed-integer quadratic programs here"
            return None
        reason = getattr(f, "not_linear_reason", None) or "it has no linear or quadratic statement"
        return f"{reason} ({backend} reads mixed-integer linear and quadratic models only)"

    return accepts


def refuse_quadratic(model: LinearModel, backend: str) -> None:
    """Raise :class:`InvalidInputError` when ``model`` has a quadratic objective (linear-only backends)."""
    if model.Q is not None and model.Q.nnz:
        raise InvalidInputError(
            f"model: {model.name!r} has a quadratic objective (Q with {model.Q.nnz} non-zeros) and {backend} "
            f"reads mixed-integer linear models only; backends that take it: {_takers()}"
        )


def prepare(f: Any, options: Mapping[str, Any], *, allow_lazy: bool = False
            ) -> tuple[LinearModel, dict[str, Any], float]:
    """Split formulation (model) options from the backend's checked options and build the model.

    Returns
    -------
    model : LinearModel
    opts : dict
        Backend options with defaults filled in; ``opts["_times"]`` holds
        ``neutral_build_seconds`` and ``warm_start_seconds`` for the extras.
    build_seconds : float
        Model build plus warm-start preparation.
    """
    opts = dict(options)
    model_opts = {k: opts.pop(k) for k in list(opts) if k in f.model_options}
    t0 = time.perf_counter()
    model = f.linear_model(allow_lazy=allow_lazy, **f.check_model_options(model_opts))
    build = time.perf_counter() - t0
    ws = opts.get("warm_start")
    opts["_times"] = {"neutral_build_seconds": build, "warm_start_seconds": 0.0}
    if isinstance(ws, str):
        if ws != "auto":
            raise InvalidInputError(f"warm_start: expected a selection, 'auto' or None, got {ws!r}")
        t1 = time.perf_counter()
        opts["warm_start"] = f.initial_selection()
        opts["_times"]["warm_start_seconds"] = time.perf_counter() - t1
        build += opts["_times"]["warm_start_seconds"]
    elif ws is not None:
        opts["warm_start"] = f.as_selection(ws, "warm_start")
    return model, opts, build


def remaining(time_limit: float | None, spent: float, floor: float = 0.05) -> float | None:
    """Seconds left of ``time_limit`` after ``spent`` (at least ``floor``)."""
    if time_limit is None:
        return None
    return max(time_limit - spent, floor)


def formulation_bound(model: LinearModel, bound: float | None) -> float | None:
    """Convert a bound on the (minimised) model objective to the formulation's units."""
    if bound is None or not np.isfinite(bound):
        return None
    return float(model.objective_sign * bound)


def true_key(f: Any, model: LinearModel):
    """``key(selection)``: the formulation's objective in model (minimisation) units, None if infeasible."""

    def key(sel: np.ndarray) -> float | None:
        sel = np.asarray(sel)
        if sel.size == 0 or not f.is_feasible(sel):
            return None
        return float(model.objective_sign * f.evaluate(sel))

    return key
