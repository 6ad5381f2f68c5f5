"""Method options, declared once: name, type, default and bounds, checked by one pure function.

Every built-in method declares its options as a tuple of :class:`Option`
when it registers (:func:`benchsel.solvers.register_method`); the registry
checks a call's options with :func:`check_options` before the runner sees
them, and the harness checks a grid's options the same way before any run.
A runner therefore receives every declared option, checked and with its
default filled in::

    @register_method("my-search", kind="heuristic", accepts=KMedoids,
                     options=(Option("max_iter", 100, "int", low=1, doc="passes over the items"),))
    def run(f, *, time_limit, seed, max_iter):
        ...
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInputError
from .validation import check_float, check_int, describe

__all__ = ["Option", "check_options", "option_names"]

_KINDS = ("int", "float", "bool", "choice", "str", "mapping", "any")


@dataclass(frozen=True)
class Option:
    """One declared method option.

    Parameters
    ----------
    name : str
    default : object
        Value used when the option is not given (not checked against the type:
        ``None`` defaults mean "not set", e.g. "the solver's own default").
    kind : {"int", "float", "bool", "choice", "str", "mapping", "any"}
        ``"choice"`` takes one of ``choices``; ``"mapping"`` a dict (of solver
        parameters, say); ``"any"`` is checked by the runner (a selection, a
        callable, ...).
    low, high : float, optional
        Bounds of ``"int"`` and ``"float"`` options (inclusive unless
        ``low_open`` / ``high_open``).
    choices : tuple, optional
        Allowed values of a ``"choice"`` option.
    none_ok : bool
        Whether ``None`` is accepted as a value (always true when the default
        is ``None``).
    doc : str
        One line for docs and ``benchsel list``.
    """

    name: str
    default: Any
    kind: str = "any"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] = ()
    none_ok: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind: expected one of {', '.join(_KINDS)}, got {self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"choices: option {self.name!r} of kind 'choice' needs its choices")

    def check(self, value: Any) -> Any:
        """``value`` checked (and normalised: ints as ``int``, floats as ``float``)."""
        if value is None and (self.none_ok or self.default is None):
            return None
        n = self.name
        if self.kind == "int":
            return check_int(value, n, low=None if self.low is None else int(self.low),
                             high=None if self.high is None else int(self.high))
        if self.kind == "float":
            return check_float(value, n, low=self.low, high=self.high, low_open=self.low_open,
                               high_open=self.high_open)
        if self.kind == "bool":
            if not isinstance(value, bool) and not (hasattr(value, "dtype") and value.dtype == bool):
                raise InvalidInputError(f"{n}: expected true or false, got {describe(value)}")
            return bool(value)
        if self.kind == "choice":
            for c in self.choices:
                if value == c and type(value) is type(c):
                    return c
            raise InvalidInputError(f"{n}: expected one of {', '.join(map(repr, self.choices))}, got {value!r}")
        if self.kind == "str":
            if not isinstance(value, str):
                raise InvalidInputError(f"{n}: expected a string, got {describe(value)}")
            return value
        if self.kind == "mapping":
            if not isinstance(value, Mapping):
                raise InvalidInputError(f"{n}: expected a mapping of names to values, got {describe(value)}")
            return dict(value)
        return value

    def describe(self) -> str:
        """``name=default (kind, bounds): doc`` for listings."""
        bits = [self.kind]
        if self.kind in ("int", "float") and (self.low is not None or self.high is not None):
            lo = "" if self.low is None else f"{'(' if self.low_open else '['}{self.low:g}"
            hi = "" if self.high is None else f"{self.high:g}{')' if self.high_open else ']'}"
            bits.append(f"{lo or '(-inf'}, {hi or 'inf)'}")
        if self.kind == "choice":
            bits.append("|".join(map(str, self.choices)))
        return f"{self.name}={self.default!r} ({', '.join(bits)})" + (f": {self.doc}" if self.doc else "")


def option_names(options: Iterable[Option | str]) -> tuple[str, ...]:
    """Names of declared options (strings pass through: undeclared third-party options)."""
    return tuple(o.name if isinstance(o, Option) else str(o) for o in options)


def check_options(options: Mapping[str, Any], declared: Sequence[Option], method: str, *,
                  passthrough: Iterable[str] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check ``options`` against the method's declared options.

    Parameters
    ----------
    options : mapping
        Options as given by the caller.
    declared : sequence of Option
        The method's declaration.
    method : str
        Method name, for messages.
    passthrough : iterable of str
        Further names accepted unchecked (e.g. a formulation's model options,
        which exact backends hand to ``linear_model``).

    Returns
    -------
    checked : dict
        Every declared option, checked, defaults filled in.
    passed : dict
        The given ``passthrough`` options.

    Raises
    ------
    InvalidInputError
        An unknown name (the known ones are listed) or a bad value (named).
    """
    if not isinstance(options, Mapping):
        raise InvalidInputError(f"options: expected a mapping of option names to values, got {describe(options)}")
    spec = {o.name: o for o in declared}
    extra = set(passthrough)
    unknown = sorted(k for k in options if k not in spec and k not in extra)
    if unknown:
        known = sorted(spec) + sorted(extra - set(spec))
        raise InvalidInputError(
            f"options: {', '.join(repr(u) for u in unknown)} not understood by method {method!r}; "
            f"its options: {', '.join(known) or '(none)'}"
        )
    checked = {name: o.check(options[name]) if name in options else o.default for name, o in spec.items()}
    passed = {k: v for k, v in options.items() if k not in spec}
    return checked, passed
