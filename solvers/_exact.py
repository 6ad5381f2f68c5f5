"""Plumbing shared by the exact backends: option split, model build, time budget."""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import InvalidInputError
from .model import LinearModel
from .options import Option
from .result import MethodOutput, Termination

#: Options every exact backend takes.
COMMON_OPTIONS: tuple[Option, ...] = (
    Option("mip_rel_gap", 1e-6, "float", low=0.0, high=1.0, high_open=True,
           doc="relative gap at which the solver may stop and call the incumbent optimal"),
    Option("threads", None, "int", low=1, doc="solver threads (None: the backend's default)"),
    Option("verbose", False, "bool", doc="stream the solver's log (progress on long runs)"),
    Option("warm_start", "auto", "any",
           doc="a selection (item indices), 'auto' (the formulation's warm_start_method heuristic, else its "
               "initial_selection) or None"),
)

#: Share of the time limit the default warm start may use (``warm_start="auto"``).
WARM_START_SHARE = 0.3


def linear_acceptor(backend: str):
    """Acceptor for backends that read a :class:`LinearModel`."""

    def accepts(f: Any) -> str | None:
        if not getattr(f, "is_linear", False):
            reason = getattr(f, "not_linear_reason", None) or "it has no linear statement"
            return f"{reason} ({backend} reads mixed-integer linear models only)"
        return None

    return accepts


def prepare(f: Any, options: Mapping[str, Any], *, allow_lazy: bool = False, time_limit: float | None = None,
            seed: int | None = 0, nnz_per_second: float | None = None
            ) -> tuple[LinearModel | None, dict[str, Any], float]:
    """Split formulation (model) options from the backend's checked options and build the model.

    Parameters
    ----------
    f : Formulation
    options : mapping
        The call's options (backend and model options together).
    allow_lazy : bool
        The backend generates rows on demand.
    time_limit : float, optional
        The call's time limit: the default warm start gets a share of it
        (``WARM_START_SHARE``), and formulations that size their statements
        (``f.sizes_models``) refuse one that would not fit it.
    seed : int, optional
        Seed of the warm-start heuristic.
    nnz_per_second : float, optional
        The backend's model building rate, for formulations that size their statements.

    Returns
    -------
    model : LinearModel or None
        None when ``model="auto"`` found no statement that fits
        (``opts["model_skipped"]`` says why); the runner then returns the
        warm start (:func:`warm_start_output`).
    opts : dict
        Backend options with defaults filled in; ``opts["_times"]`` holds
        ``neutral_build_seconds`` and ``warm_start_seconds`` for the extras.
    build_seconds : float
        Model build plus warm-start preparation.
    """
    opts = dict(options)
    model_opts = f.check_model_options({k: opts.pop(k) for k in list(opts) if k in f.model_options})
    if getattr(f, "sizes_models", False):
        model_opts.update(time_limit=time_limit, nnz_per_second=nnz_per_second)
    t0 = time.perf_counter()
    model: LinearModel | None
    try:
        model = f.linear_model(allow_lazy=allow_lazy, **model_opts)
    except InvalidInputError as e:
        if getattr(e, "requested", None) != "auto":
            raise
        model = None
        opts["model_skipped"] = str(e)
    build = time.perf_counter() - t0
    ws = opts.get("warm_start")
    opts["_times"] = {"neutral_build_seconds": build, "warm_start_seconds": 0.0}
    if isinstance(ws, str):
        if ws != "auto":
            raise InvalidInputError(f"warm_start: expected a selection, 'auto' or None, got {ws!r}")
        t1 = time.perf_counter()
        opts["warm_start"], opts["_times"]["warm_start_method"] = auto_warm_start(
            f, None if time_limit is None else WARM_START_SHARE * max(time_limit - build, 0.0), seed)
        opts["_times"]["warm_start_seconds"] = time.perf_counter() - t1
        build += opts["_times"]["warm_start_seconds"]
    elif ws is not None:
        opts["warm_start"] = f.as_selection(ws, "warm_start")
    return model, opts, build


def auto_warm_start(f: Any, time_limit: float | None, seed: int | None) -> tuple[Any, str]:
    """The default warm start: the heuristic named by ``f.warm_start_method`` (run through the
    registry, with ``time_limit`` and ``seed``), else ``f.initial_selection()``.

    Returns
    -------
    selection : ndarray of int or None
    source : str
        The method name, or ``"initial_selection"``.
    """
    name = getattr(f, "warm_start_method", None)
    if name:
        from .registry import get_method

        out = get_method(name).run(f, time_limit=time_limit, seed=seed)
        if out.selection is not None and np.asarray(out.selection).size and f.is_feasible(out.selection):
            return f.as_selection(out.selection), str(name)
    return f.initial_selection(), "initial_selection"


def warm_start_output(f: Any, opts: Mapping[str, Any], build: float, time_limit: float | None) -> MethodOutput:
    """The runner's answer when no statement of ``f`` fit (``model=None`` from :func:`prepare`).

    The warm start is the incumbent, with the formulation's quick bound when
    it has one (``f.quick_bound(seconds)``, given half the time left), and termination
    ``"time_limit"``: the solver was not run because its model would not fit.
    """
    t0 = time.perf_counter()
    sel = opts.get("warm_start")
    bound = None
    quick = getattr(f, "quick_bound", None)
    if quick is not None:
        left = remaining(time_limit, build)
        bound = quick(None if left is None else 0.5 * left, incumbent=sel)
    extra = {"model_skipped": opts.get("model_skipped"), **opts["_times"]}
    return MethodOutput(None if sel is None else np.asarray(sel), Termination.TIME_LIMIT, bound, build,
                        time.perf_counter() - t0, extra)


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
