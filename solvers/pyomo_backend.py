"""Deprecated path, kept for one release: the names moved to `benchsel.solvers.backends.pyomo` and
`benchsel.solvers.backends.pyomo_model`."""
from __future__ import annotations

from benchsel.solvers.backends.pyomo import (
    solve_pyomo_model,
    to_pyomo,
)
from benchsel.solvers.backends.pyomo_model import (
    PyomoBuildTimeout,
    pyomo_environ,
    selection_from_pyomo,
)

__all__ = ["PyomoBuildTimeout", "pyomo_environ", "selection_from_pyomo", "solve_pyomo_model", "to_pyomo"]
