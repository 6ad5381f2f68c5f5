"""Solving: the neutral linear model, exact backends, MPS export, ``solve()``.

>>> from solvers import solve, available_methods
"""
from __future__ import annotations

from benchsel.formulations.core.errors import (
    BenchselError,
    InvalidInputError,
    MethodNotApplicableError,
    NotLinearError,
    NumericalError,
    SolverNotInstalledError,
    UnknownMethodError,
)
from benchsel.formulations.core.model import Block, LinearModel, ModelBuilder
from benchsel.formulations.core.mps import write_mps
from benchsel.formulations.core.result import MethodOutput, Result, Termination

from .api import solve
from .methods import Method, available_methods, get_method, list_methods, register_method

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
