"""One registry for every method: exact backends and heuristics alike.

A method is a name, a kind (``"exact"``, ``"heuristic"`` or ``"baseline"``), a predicate that
says whether it accepts a formulation (and why not), and a runner::

    runner(formulation, *, time_limit, seed, **options) -> MethodOutput

Third parties register their own with :func:`register_method`. One name may
have several *variants*, one per formulation family (``"greedy"`` for
BatchInformationGain and for another formulation, say): each variant says what
it accepts and the first variant that accepts a formulation runs it.
This module only stores the registrations (it imports nothing else of
benchsel): the lookups that load the built-in methods first
(:func:`benchsel.solvers.get_method`, ``list_methods``, ``available_methods``)
are in :mod:`benchsel.solvers.registry`.

Formulation classes are recorded here too (:func:`register_formulation`,
called by ``Formulation.__init_subclass__``), so that instance files and the
conformance suite find every formulation by declaration.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from benchsel.formulations.core.errors import MethodNotApplicableError
from benchsel.formulations.core.options import Option, check_options, option_names

__all__ = ["Method", "accepts_types", "combined", "formulation_class", "formulation_classes", "register_formulation",
           "register_method", "registered", "registered_names", "unregister_method"]

Acceptor = Callable[[Any], "str | None"]

_REGISTRY: dict[str, list[Method]] = {}
_FORMULATIONS: dict[str, type] = {}


#: Kinds of methods: exact (proves optima), heuristic (searches for good feasible selections), baseline (a
#: paper's comparison method, run for the comparison; its selection need not be feasible).
KINDS = ("exact", "heuristic", "baseline")


@dataclass(frozen=True)
class Method:
    """A registered method.

    Attributes
    ----------
    name : str
    kind : {"exact", "heuristic", "baseline"}
        ``"baseline"``: a method a paper compares against, which chooses items its own way and may
        ignore the formulation's constraints (the formulation re-evaluates its selection, feasible or not).
    run : callable
        ``run(f, *, time_limit, seed, **options) -> MethodOutput``.
    accepts : callable
        ``accepts(f) -> None`` when ``f`` is accepted, else a one-line reason.
    description : str
    options : tuple of str
        Option names the runner understands (for messages and docs).
    specs : tuple of Option
        The declared options (name, kind, default, bounds); the registry
        checks a call's options against them before the runner runs.
    """

    name: str
    kind: str
    run: Callable[..., Any]
    accepts: Acceptor
    description: str = ""
    options: tuple[str, ...] = ()
    specs: tuple[Option, ...] = ()
    checker: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None  # set on combined variants

    @property
    def exact(self) -> bool:
        return self.kind == "exact"

    def check_options(self, f: Any, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` checked as a call on ``f`` would check them (defaults filled in).

        Exact methods also take the formulation's model options (checked by
        ``f.check_model_options``). Raises :class:`InvalidInputError` naming
        the option.
        """
        if self.checker is not None:
            return self.checker(f, options)
        model = tuple(getattr(f, "model_options", ())) if self.kind == "exact" else ()
        if not self.specs and self.options:  # undeclared third-party options: names only
            extra = sorted(set(options) - set(self.options) - set(model))
            if extra:
                check_options({k: options[k] for k in extra}, (), self.name, passthrough=self.options + model)
            return dict(options)
        checked, passed = check_options(options, self.specs, self.name, passthrough=model)
        if passed:
            f.check_model_options(passed)
        return {**checked, **passed}


def accepts_types(*types: type, reason: str | None = None) -> Acceptor:
    """An acceptor that takes instances of ``types``."""

    def acceptor(f: Any) -> str | None:
        if isinstance(f, types):
            return None
        names = ", ".join(t.__name__ for t in types)
        return reason or f"it works on {names} only"

    return acceptor


def register_method(
    name: str,
    *,
    kind: str,
    accepts: Acceptor | type | tuple[type, ...],
    description: str = "",
    options: Iterable[Option | str] = (),
    replace: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``run`` under ``name``.

    Parameters
    ----------
    name : str
        Method name used in :func:`benchsel.solvers.solve`.
    kind : {"exact", "heuristic", "baseline"}
    accepts : callable, type or tuple of types
        Formulation classes the method takes, or a predicate returning None
        (accepted) or a reason string (refused).
    description : str
    options : iterable of Option (or of str)
        The runner's options, declared with :class:`~benchsel.formulations.core.options.Option`
        (name, kind, default, bounds). When every option is declared so, the
        registry checks a call's options and fills the defaults in before the
        runner runs: the runner receives every declared option as a keyword.
        Plain names are accepted for third-party methods that check their own.
    replace : bool
        Replace every existing variant of ``name`` instead of adding one.

    Notes
    -----
    Registering an existing name adds a variant (the kinds must agree); the
    variants' acceptors should not overlap — the first registered wins.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected {' or '.join(map(repr, KINDS))}, got {kind!r}")
    if isinstance(accepts, type):
        accepts = accepts_types(accepts)
    elif isinstance(accepts, tuple):
        accepts = accepts_types(*accepts)

    options = tuple(options)
    specs = tuple(o for o in options if isinstance(o, Option))
    declared = len(specs) == len(options)

    def deco(run: Callable[..., Any]) -> Callable[..., Any]:
        run = getattr(run, "__wrapped__", run)  # registering a checked runner again
        call = run
        if declared:
            @functools.wraps(run)
            def call(f: Any, *, time_limit: float | None, seed: int | None, **given: Any) -> Any:
                model = tuple(getattr(f, "model_options", ())) if kind == "exact" else ()
                checked, passed = check_options(given, specs, name, passthrough=model)
                return run(f, time_limit=time_limit, seed=seed, **checked, **passed)

        new = Method(name, kind, call, accepts, description, option_names(options), specs)
        old = [] if replace else [m for m in _REGISTRY.get(name, []) if getattr(m.run, "__wrapped__", m.run) is not run]
        if old and old[0].kind != kind:
            raise ValueError(f"kind: method {name!r} is already registered as {old[0].kind!r}, got {kind!r}")
        _REGISTRY[name] = [*old, new]
        return call  # direct calls are checked (and get the defaults) too

    return deco


def combined(variants: list[Method]) -> Method:
    """One :class:`Method` over several variants: the first that accepts a formulation runs it."""
    if len(variants) == 1:
        return variants[0]

    def accepts(f: Any) -> str | None:
        reasons = []
        for v in variants:
            why = v.accepts(f)
            if why is None:
                return None
            reasons.append(why)
        return "; ".join(dict.fromkeys(reasons))

    def run(f: Any, **kw: Any) -> Any:
        for v in variants:
            if v.accepts(f) is None:
                return v.run(f, **kw)
        raise MethodNotApplicableError(f"method: {variants[0].name!r} has no variant for a {type(f).__name__}")

    def check(f: Any, options: dict[str, Any]) -> dict[str, Any]:
        for v in variants:
            if v.accepts(f) is None:
                return v.check_options(f, options)
        return dict(options)

    return Method(
        variants[0].name,
        variants[0].kind,
        run,
        accepts,
        "; ".join(v.description for v in variants if v.description),
        tuple(dict.fromkeys(o for v in variants for o in v.options)),
        tuple({o.name: o for v in variants for o in v.specs}.values()),
        check,
    )


def registered(name: str) -> list[Method]:
    """The variants registered as ``name`` (empty when none); loads nothing."""
    return list(_REGISTRY.get(name, ()))


def registered_names() -> list[str]:
    """Every registered method name, sorted; loads nothing."""
    return sorted(_REGISTRY)


def unregister_method(name: str) -> None:
    """Remove every variant of ``name`` (no error when there is none)."""
    _REGISTRY.pop(name, None)


def register_formulation(cls: type) -> type:
    """Record a formulation class under its module-qualified name (``module:Class``)."""
    _FORMULATIONS[f"{cls.__module__}:{cls.__qualname__}"] = cls
    return cls


def formulation_classes() -> list[type]:
    """Every recorded concrete formulation class (of the modules imported so far), in registration order."""
    return [c for c in _FORMULATIONS.values() if not inspect.isabstract(c)]


def formulation_class(key: str) -> type | None:
    """The recorded class named ``module:Class`` (None when no such class was recorded)."""
    return _FORMULATIONS.get(key)
