"""LazyRows: required members, the defaults of the optional ones, filled once when a model is built."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LazyRowsBase, ModelBuilder, RowBlock, lazy_rows
from benchsel.solvers.backends.highs import solve_model_highs


class _Cap:
    """A duck-typed generator (no base class): ``x0 + x1 <= 1``, separated on demand."""

    name = "cap"

    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        if x[0] + x[1] <= 1 + tol:
            return None
        return RowBlock(np.array([0, 0]), np.array([0, 1]), np.ones(2), np.array([-np.inf]), np.array([1.0]))


def _model(lazy):
    b = ModelBuilder("toy")
    x = b.add_vars("x", 3, lb=0, ub=1, integer=True, cost=[-3.0, -2.0, -1.0])
    b.add_cardinality("card", x, 2)
    return b.build(selection_block="x", selection_items=np.arange(3), lazy=lazy)


def test_a_duck_typed_generator_gets_the_defaults_once():
    m = _model(_Cap())
    lazy = m.lazy
    assert isinstance(lazy, LazyRowsBase) and lazy.name == "cap"
    assert lazy.round(np.zeros(3)) is None and lazy.initial_rows() is None and lazy.branch_scores(np.zeros(3)) is None
    sel = np.array([0, 2])
    assert lazy.improve(sel, np.zeros(3)) is sel and lazy.memory_budget is None and not lazy.stats
    assert lazy_rows(lazy) is lazy  # checked once: a checked generator passes through
    # the branch-and-cut reads every member directly: the cap row holds at the optimum
    sel, term, bound, _ = solve_model_highs(m, key=lambda s: float(-(3.0 * (0 in s) + 2.0 * (1 in s) + (2 in s))))
    assert term == "optimal" and list(sel) == [0, 2] and bound == pytest.approx(-4.0)


def test_an_object_without_separate_is_refused_by_name():
    with pytest.raises(InvalidInputError, match=r"lazy: expected a LazyRows object with a separate"):
        _model(object())
