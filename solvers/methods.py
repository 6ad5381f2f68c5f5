"""Method lookups: the built-in methods are loaded on first use, then the registry is consulted.

The registrations themselves live in :data:`benchsel.formulations.core.registry.METHODS`
(every method registers with :func:`register_method` there, by declaration).
The built-in methods are found, not listed: every module of the
:mod:`benchsel.solvers.backends` package and of the :mod:`benchsel.heuristics`
package is imported the first time a lookup runs, so a new heuristics module
registers its methods without any list being edited.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import benchsel.heuristics as _heuristics_pkg
import benchsel.solvers.backends as _backends_pkg
from benchsel.formulations.core.errors import MethodNotApplicableError, UnknownMethodError
from benchsel.formulations.core.registry import METHODS, Method, combined, register_method

__all__ = [
    "Method",
    "available_methods",
    "builtin_method_modules",
    "get_method",
    "list_methods",
    "register_method",
    "require",
]

_loaded = False


def builtin_method_modules() -> list[str]:
    """Names of the modules that register the built-in methods (backends, then heuristics)."""
    out = []
    for pkg in (_backends_pkg, _heuristics_pkg):
        out += [f"{pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return out


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in builtin_method_modules():
        importlib.import_module(mod)


def list_methods() -> list[Method]:
    """Every registered method, sorted by name."""
    _load_builtins()
    return [combined(list(variants)) for _, variants in sorted(METHODS.items())]


def get_method(name: str) -> Method:
    """The method registered as ``name``; :class:`UnknownMethodError` otherwise."""
    _load_builtins()
    if not isinstance(name, str):
        raise UnknownMethodError(f"method: expected a method name (str), got {type(name).__name__}")
    return combined(list(METHODS.get(name)))


def available_methods(formulation: Any, kind: str | None = None) -> list[str]:
    """Names of the methods that accept ``formulation`` (optionally of one kind)."""
    return [
        m.name
        for m in list_methods()
        if (kind is None or m.kind == kind) and m.accepts(formulation) is None
    ]


def require(method: str, formulation: Any) -> Method:
    """Look ``method`` up and check it accepts ``formulation``."""
    m = get_method(method)
    why = m.accepts(formulation)
    if why is not None:
        can = available_methods(formulation)
        raise MethodNotApplicableError(
            f"method: {method!r} does not accept a {type(formulation).__name__}: {why}. "
            f"Methods that accept it: {', '.join(can) if can else '(none)'}"
        )
    return m
