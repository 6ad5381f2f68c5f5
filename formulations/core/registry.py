"""Registries: one generic :class:`Registry` of named entries, and the two that live in the vocabulary.

Every registry of benchsel is a :class:`Registry` (methods and formulation classes here; estimators,
sequential evaluators, selections, harness suites, HoloCosm's comparison methods and score-file readers
beside what they hold): ``register`` / ``get`` / ``names`` / ``items``, one error naming the argument
and listing the known names for an unknown key, and an optional loader that imports the built-in
entries on the first lookup (so a new module registers by declaration, no list is edited).

Methods: a method is a name, a kind (``"exact"``, ``"heuristic"`` or ``"baseline"``), a predicate that
says whether it accepts a formulation (and why not), and a runner::

    runner(formulation, *, time_limit, seed, **options) -> MethodOutput

Third parties register their own with :func:`register_method`. One name may
have several *variants*, one per formulation family (``"greedy"`` for
BatchInformationGain and for another formulation, say): each variant says what
it accepts and the first variant that accepts a formulation runs it.
This module only stores the registrations (it imports nothing else of
benchsel): the lookups that load the built-in methods first
(:func:`benchsel.solvers.get_method`, ``list_methods``, ``available_methods``)
are in :mod:`benchsel.solvers.methods`.

Formulation classes are recorded here too (:func:`register_formulation`,
called by ``Formulation.__init_subclass__``), so that instance files and the
conformance suite find every formulation by declaration.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from benchsel.formulations.core.errors import InvalidInputError, MethodNotApplicableError, UnknownMethodError
from benchsel.formulations.core.options import Option, check_options, option_names

__all__ = ["FORMULATIONS", "METHODS", "Method", "Registry", "accepts_types", "combined", "formulation_class",
           "formulation_classes", "register_formulation", "register_method", "registered", "registered_names",
           "unregister_method"]

T = TypeVar("T")
Acceptor = Callable[[Any], "str | None"]


class Registry(Generic[T]):
    """Named entries of one kind, in registration order.

    Parameters
    ----------
    kind : str
        What an entry is, for messages (``"estimator"``, ``"suite"``, ...).
    argument : str
        The argument an unknown name came in as, named first in the error (``"name"``, ``"method"``, ...).
    listing : str, optional
        How the error introduces the known names (default ``kind + "s"``).
    error : type of Exception
        The error an unknown name raises (an :class:`InvalidInputError` unless a subclass of
        :class:`~benchsel.formulations.core.errors.BenchselError` says more).
    load : callable, optional
        Called once, before the first lookup (``get``, ``names``, ``items``, ``in``): imports the modules
        that register the built-in entries.

    Examples
    --------
    >>> colours = Registry("colour", argument="colour")
    >>> colours.register("red", (255, 0, 0))
    (255, 0, 0)
    >>> colours.get("red"), colours.names()
    ((255, 0, 0), ['red'])
    """

    def __init__(self, kind: str, *, argument: str = "name", listing: str | None = None,
                 error: type[Exception] = InvalidInputError, load: Callable[[], object] | None = None) -> None:
        self.kind = kind
        self.argument = argument
        self.listing = listing or f"{kind}s"
        self.error = error
        self._load = load
        self._entries: dict[str, T] = {}

    def _loaded(self) -> dict[str, T]:
        if self._load is not None:
            load, self._load = self._load, None
            load()
        return self._entries

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Record ``entry`` as ``name`` and return it.

        A name already taken by another entry is refused (:class:`InvalidInputError`) unless ``replace``;
        registering the same entry again is a no-op.
        """
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"name: expected a non-empty {self.kind} name (str), got {name!r}")
        old = self._entries.get(name)
        if old is not None and old is not entry and not replace:
            raise InvalidInputError(f"name: {name!r} is already registered ({self.kind} {old!r})")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Forget ``name`` (no error when it is not registered)."""
        self._entries.pop(name, None)

    def get(self, name: str) -> T:
        """The entry registered as ``name``; ``error`` naming :attr:`argument` and listing the names otherwise."""
        entries = self._loaded()
        if not isinstance(name, str) or name not in entries:
            raise self.error(f"{self.argument}: unknown {self.kind} {name!r}; {self.listing}: {', '.join(entries)}")
        return entries[name]

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._loaded())

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs, in registration order."""
        return list(self._loaded().items())

    def values(self) -> list[T]:
        """The entries, in registration order."""
        return list(self._loaded().values())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


#: Every method's variants by name (:func:`register_method`); :mod:`benchsel.solvers.methods` loads the
#: built-in ones before a lookup.
METHODS: Registry[tuple[Method, ...]] = Registry("method", argument="method", listing="registered methods",
                                                 error=UnknownMethodError)
#: Formulation classes by ``module:Class`` (:func:`register_formulation`).
FORMULATIONS: Registry[type] = Registry("formulation class", argument="class")


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
        model = tuple(f.model_options) if self.kind == "exact" else ()
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
                model = tuple(f.model_options) if kind == "exact" else ()
                checked, passed = check_options(given, specs, name, passthrough=model)
                return run(f, time_limit=time_limit, seed=seed, **checked, **passed)

        new = Method(name, kind, call, accepts, description, option_names(options), specs)
        old = [] if replace else [m for m in registered(name) if getattr(m.run, "__wrapped__", m.run) is not run]
        if old and old[0].kind != kind:
            raise ValueError(f"kind: method {name!r} is already registered as {old[0].kind!r}, got {kind!r}")
        METHODS.register(name, (*old, new), replace=True)
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
    return list(METHODS.get(name)) if name in METHODS else []


def registered_names() -> list[str]:
    """Every registered method name, sorted; loads nothing."""
    return sorted(METHODS.names())


def unregister_method(name: str) -> None:
    """Remove every variant of ``name`` (no error when there is none)."""
    METHODS.unregister(name)


def register_formulation(cls: type) -> type:
    """Record a formulation class under its module-qualified name (``module:Class``)."""
    return FORMULATIONS.register(f"{cls.__module__}:{cls.__qualname__}", cls, replace=True)


def formulation_classes() -> list[type]:
    """Every recorded concrete formulation class (of the modules imported so far), in registration order."""
    return [c for c in FORMULATIONS.values() if not inspect.isabstract(c)]


def formulation_class(key: str) -> type | None:
    """The recorded class named ``module:Class`` (None when no such class was recorded)."""
    return FORMULATIONS.get(key) if key in FORMULATIONS else None
