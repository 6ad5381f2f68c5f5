"""The shared vocabulary of benchsel: errors, input checks, options, the neutral model and its MPS form, the
numerical properties a statement declares, results and tolerances, the method and formulation registry, and one
clock.

This package imports nothing else of benchsel; every other folder builds on it.
"""
from __future__ import annotations

from .lazy import lazy_exports

#: Each name and its module: imported on first use, so the package (and :mod:`.lazy`, which the other packages'
#: ``__init__`` use) imports light.
_LAZY: dict[str, str] = {
    "Clock": "clock",
    "progress": "clock",
    "BenchselError": "errors",
    "InvalidInputError": "errors",
    "MethodNotApplicableError": "errors",
    "NotLinearError": "errors",
    "NumericalError": "errors",
    "SolverNotInstalledError": "errors",
    "UnknownMethodError": "errors",
    "Block": "model",
    "LazyRows": "model",
    "LinearModel": "model",
    "ModelBuilder": "model",
    "RowBlock": "model",
    "Option": "options",
    "check_options": "options",
    "NumericalProperties": "properties",
    "WarmStart": "properties",
    "Method": "registry",
    "Registry": "registry",
    "register_formulation": "registry",
    "register_method": "registry",
    "MethodOutput": "result",
    "Result": "result",
    "Termination": "result",
    "Tolerances": "result",
    "mip_gap": "result",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
