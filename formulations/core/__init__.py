"""The shared vocabulary of benchsel: errors, input checks, options, the neutral model and its MPS form, the
numerical properties a statement declares, results and tolerances, the method and formulation registry, and one
clock.

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
from .properties import NumericalProperties, WarmStart
from .registry import Method, register_formulation, register_method
from .result import MethodOutput, Result, Termination, Tolerances, mip_gap

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
    "NumericalProperties",
    "Option",
    "Result",
    "RowBlock",
    "SolverNotInstalledError",
    "Termination",
    "Tolerances",
    "UnknownMethodError",
    "WarmStart",
    "check_options",
    "mip_gap",
    "progress",
    "register_formulation",
    "register_method",
]
