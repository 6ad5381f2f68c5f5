"""The neutral model as a Pyomo ``ConcreteModel`` (add side constraints, then solve with any Pyomo solver).

One indexed ``Var`` per column block and one indexed ``Constraint`` per row
block, with the same names as the neutral model. Pyomo is imported on first
use (a base dependency, but a heavy import).
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchsel.formulations.core.errors import SolverNotInstalledError
from benchsel.formulations.core.model import Block, LinearModel

__all__ = ["PyomoBuildTimeout", "pyomo_environ", "selection_from_pyomo", "to_pyomo"]


def pyomo_environ():
    try:
        import pyomo.environ as pyo
    except ImportError as e:  # pragma: no cover - pyomo is a base dependency
        raise SolverNotInstalledError(
            f"method 'pyomo' needs the package 'pyomo', which is not installed ({e})") from None
    return pyo


def _index_set(block: Block):
    if len(block.shape) == 1:
        return range(block.shape[0])
    return list(np.ndindex(*block.shape))


class PyomoBuildTimeout(Exception):
    """Raised by :func:`to_pyomo` when its ``deadline`` passes before the model is complete."""


def to_pyomo(model: Any, *, deadline: float | None = None, **options: Any) -> Any:
    """A Pyomo ``ConcreteModel`` equal to ``model`` (a :class:`LinearModel`, or a formulation's linear statement).

    Column block ``b`` becomes ``m.<b>`` (a ``Var`` indexed like the block),
    row block ``r`` becomes ``m.<r>`` (a ``Constraint``), the objective is
    ``m.objective`` (minimise). Add side constraints to the returned model and
    solve it with any Pyomo solver; :func:`selection_from_pyomo` reads the
    selection back.

    Parameters
    ----------
    model : LinearModel or Formulation
        A static model (no lazy rows), or a formulation whose ``linear_model(**options)`` is built.
    deadline : float, optional
        A ``time.perf_counter()`` value; building stops with
        :class:`PyomoBuildTimeout` once it has passed (checked per component
        element, so a large model cannot overrun a time limit by much).
    """
    if not isinstance(model, LinearModel):  # a formulation: its linear statement with these model options
        model = model.linear_model(**model.check_model_options(options))
    elif options:
        raise TypeError(f"to_pyomo: model options ({', '.join(options)}) need a formulation, not a LinearModel")
    pyo = pyomo_environ()
    clock = time.perf_counter

    def check() -> None:
        if deadline is not None and clock() > deadline:
            raise PyomoBuildTimeout("the time limit passed while building the Pyomo model")

    if model.lazy is not None:
        raise ValueError("model: a model with lazy rows cannot be stated in Pyomo; build a static variant")
    if deadline is not None:  # Pyomo logs every failed rule as an ERROR: a time-out is not one
        with _quiet("pyomo.core"):
            return _to_pyomo(model, pyo, check)
    return _to_pyomo(model, pyo, check)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _to_pyomo(model: LinearModel, pyo: Any, check: Callable[[], None]) -> Any:
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pyo.ConcreteModel(name=model.name)
    flat: list[Any] = []
    for blk in model.col_blocks:
        sl = slice(blk.start, blk.stop)
        lb, ub, integ = model.col_lb[sl], model.col_ub[sl], model.integrality[sl]
        binary = integ & (lb == 0) & (ub == 1)
        keys = list(_index_set(blk))
        bounds = {k: (None if np.isneginf(lb[i]) else float(lb[i]), None if np.isposinf(ub[i]) else float(ub[i]))
                  for i, k in enumerate(keys)}
        if integ.all():
            domain = pyo.Binary if binary.all() else pyo.Integers
        elif not integ.any():
            domain = pyo.Reals
        else:  # mixed block: per-element domains
            doms = {k: (pyo.Binary if binary[i] else pyo.Integers if integ[i] else pyo.Reals)
                    for i, k in enumerate(keys)}

            def domain(_m: Any, *k: Any, _d: dict = doms) -> Any:
                return _d[k if len(k) > 1 else k[0]]

        def bound_rule(_m, *k, _b=bounds):
            check()
            return _b[k if len(k) > 1 else k[0]]

        var = pyo.Var(keys, domain=domain, bounds=bound_rule)
        setattr(m, blk.name, var)
        flat.extend(var[k] for k in keys)
    A = model.A.tocsr()
    indptr, indices, data = A.indptr, A.indices, A.data
    for blk in model.row_blocks:
        keys = list(_index_set(blk))
        row_of = dict(zip(keys, range(blk.start, blk.stop)))

        def rule(_m, *k, _keys=row_of):
            check()
            r = _keys[k if len(k) > 1 else k[0]]
            a, b = indptr[r], indptr[r + 1]
            expr = LinearExpression(constant=0.0, linear_coefs=data[a:b].tolist(),
                                    linear_vars=[flat[j] for j in indices[a:b]])
            lo = None if np.isneginf(model.row_lb[r]) else float(model.row_lb[r])
            hi = None if np.isposinf(model.row_ub[r]) else float(model.row_ub[r])
            return (lo, expr, hi)

        setattr(m, blk.name, pyo.Constraint(keys, rule=rule))
    nz = np.flatnonzero(model.c)
    obj = LinearExpression(constant=float(model.c0), linear_coefs=model.c[nz].tolist(),
                           linear_vars=[flat[j] for j in nz])
    if model.Q is not None and model.Q.nnz:  # 1/2 x'Qx from the upper triangle
        U = sp.triu(model.Q, format="coo")
        half = np.where(U.row == U.col, 0.5, 1.0) * U.data
        obj = obj + pyo.quicksum(float(v) * flat[i] * flat[j] for i, j, v in zip(U.row.tolist(), U.col.tolist(),
                                                                               half.tolist()))
    m.objective = pyo.Objective(expr=obj, sense=pyo.minimize)
    m._benchsel_flat = flat  # column order of the neutral model
    m._benchsel_selection = (model.selection_block, model.selection_items)
    return m


def selection_from_pyomo(m: Any) -> np.ndarray:
    """Selected items (sorted int64) from a solved model made by :func:`to_pyomo`."""
    name, items = m._benchsel_selection
    var = getattr(m, name)
    vals = np.array([var[k].value if var[k].value is not None else 0.0 for k in var], dtype=float)
    return np.sort(items[vals > 0.5]).astype(np.int64)
