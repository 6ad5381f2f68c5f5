"""The exact methods that give a formulation's reference optimum (what the harness runs by default).

The choice is the solvers' side's: the first of :data:`PREFERENCE` that accepts the formulation (a
method made for one family of problems, e.g. ``"auto"`` for the positional formulations, before the
general ``"highs"``), else every exact method that accepts it (``"pyomo"`` left out when ``"scip"``
takes the formulation: Pyomo would hand the same model to SCIP).
"""
from __future__ import annotations

from typing import Any

from .methods import available_methods

__all__ = ["PREFERENCE", "reference_methods"]

#: Exact methods in order of preference for a reference optimum: ``"auto"`` (the positional formulations'
#: fastest method to proof per instance class), then HiGHS.
PREFERENCE: tuple[str, ...] = ("auto", "highs")


def reference_methods(f: Any) -> tuple[str, ...]:
    """The exact methods the harness runs on ``f`` for its reference optimum (see the module notes)."""
    exact = available_methods(f, "exact")
    for name in PREFERENCE:
        if name in exact:
            return (name,)
    if "scip" in exact:
        exact = [m for m in exact if m != "pyomo"]
    return tuple(exact)
