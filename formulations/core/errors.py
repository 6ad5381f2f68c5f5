"""Exceptions raised by benchsel.

Every message names the argument, what was expected and what was received.
"""
from __future__ import annotations

__all__ = [
    "BenchselError",
    "InvalidInputError",
    "MethodNotApplicableError",
    "NotLinearError",
    "NumericalError",
    "SolverNotInstalledError",
    "UnknownMethodError",
]


class BenchselError(Exception):
    """Base class of every error benchsel raises on purpose."""


class InvalidInputError(BenchselError, ValueError):
    """An argument has the wrong type, shape or value."""


class UnknownMethodError(BenchselError, KeyError):
    """A method name is not in the registry."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MethodNotApplicableError(BenchselError, TypeError):
    """A registered method does not accept the given formulation."""


class SolverNotInstalledError(BenchselError, ImportError):
    """An optional solver or package a method needs is not installed."""


class NotLinearError(BenchselError, TypeError):
    """The formulation has no mixed-integer *linear* statement."""


class NumericalError(BenchselError, ArithmeticError):
    """A computed value that must be finite is not (overflow, NaN): e.g. a feasible selection's objective."""
