"""Names a package exports lazily (PEP 562): each is imported on first use, so importing the package stays light."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, names: Mapping[str, str], also: Iterable[str] = ()
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``, whose name ``n`` lives in ``names[n]``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : mapping of str to str
        Each exported name's module: a module of the package (``"model"``) or a full module path
        (``"benchsel.formulations.item_distances"``).
    also : iterable of str
        Names the package defines itself, listed by ``dir()`` beside the lazy ones.

    Examples
    --------
    ``__getattr__, __dir__ = lazy_exports(__name__, _LAZY)`` at the end of a package's ``__init__``.
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            where = names[name]
            return getattr(importlib.import_module(where if "." in where else f"{package}.{where}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    listed = sorted({*names, *also})

    def __dir__() -> list[str]:
        return listed

    return __getattr__, __dir__
