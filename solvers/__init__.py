"""Solving: the neutral linear model, exact backends, MPS export, ``solve()``.

>>> from solvers import solve, available_methods
"""
from __future__ import annotations

from .api import solve
from .errors import (
    BenchselError,
    InvalidInputError,
    MethodNotApplicableError,
    NotLinearError,
    NumericalError,
    SolverNotInstalledError,
    UnknownMethodError,
)
from .model import Block, LinearModel, ModelBuilder
from .registry import Method, available_methods, get_method, list_methods, register_method
from .result import MethodOutput, Result, Termination

__all__ = [
    "BenchselError",
    "Block",
    "InvalidInputError",
    "LinearModel",
    "Method",
    "MethodNotApplicableError",
    "MethodOutput",
    "ModelBuilder",
    "NotLinearError",
    "NumericalError",
    "Result",
    "SolverNotInstalledError",
    "Termination",
    "UnknownMethodError",
    "available_methods",
    "get_method",
    "list_methods",
    "register_method",
    "solve",
    "write_mps",
]


def __getattr__(name: str):
    if name == "write_mps":
        from .mps import write_mps

        return write_mps
    raise AttributeError(f"module 'benchsel.solvers' has no attribute {name!r}")
