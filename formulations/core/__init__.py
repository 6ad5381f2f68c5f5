"""The shared vocabulary of benchsel: errors, input checks, options, the neutral model and its MPS and Pyomo
forms, results, the method and formulation registry, and one clock.

This package imports nothing else of benchsel; every other folder builds on it.
"""
from __future__ import annotations

from .clock import Clock, progress
from .errors import (
    BenchselError,
    InvalidInputError,
    MethodNotApplicableError,
    NotLinearError,
    NumericalError,
    SolverNotInstalledError,
    UnknownMethodError,
)
from .model import Block, LazyRows, LinearModel, ModelBuilder, RowBlock
from .options import Option, check_options
from .registry import Method, register_formulation, register_method
from .result import MethodOutput, Result, Termination, mip_gap

__all__ = [
    "BenchselError",
    "Block",
    "Clock",
    "InvalidInputError",
    "LazyRows",
    "LinearModel",
    "Method",
    "MethodNotApplicableError",
    "MethodOutput",
    "ModelBuilder",
    "NotLinearError",
    "NumericalError",
    "Option",
    "Result",
    "RowBlock",
    "SolverNotInstalledError",
    "Termination",
    "UnknownMethodError",
    "check_options",
    "mip_gap",
    "progress",
    "register_formulation",
    "register_method",
]
