"""Selecting a suite's items: the budget split across tasks (SPEC F10), then one selection inside each task.

:func:`~benchsel.solvers.compression.compress` with ``tasks=`` calls :func:`select_suite`; the tasks'
selections are independent draws (or solves) on each task's own columns, so the tasks' estimates are
independent too.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.result import Result, Termination
from benchsel.formulations.estimation.suite import (
    PROPORTIONAL_SHARE,
    chance_levels,
    check_tasks,
    item_tasks,
    suite_allocation,
    task_weights,
)

from .selections import Selection, SelectionResult, _log, _run_selection

__all__ = ["SuiteSpec", "select_suite", "suite_spec", "tasks_of"]


class SuiteSpec:
    """A suite's tasks as :func:`compress` was given them, checked once.

    Attributes
    ----------
    labels : list of str, length N
        Each item's task.
    names : list of str, length T
        Task names in order of first appearance.
    codes : ndarray of int64, shape (N,)
    weights : ndarray, shape (T,)
        The tasks' weights in the suite's score.
    aggregate : str or dict
    chance : float, dict or None
    """

    def __init__(self, labels: list[str], names: list[str], codes: np.ndarray, aggregate: Any, chance: Any) -> None:
        self.labels = labels
        self.names = names
        self.codes = codes
        self.aggregate = aggregate
        self.chance = chance
        self.weights = task_weights(aggregate, names, np.bincount(codes, minlength=len(names)))


def suite_spec(tasks: Any, n_items: int, aggregate: Any, chance: Any) -> SuiteSpec:
    """The checked tasks, aggregate and chance levels of a suite of ``n_items`` items (named errors).

    Parameters
    ----------
    tasks : sequence of str, shape (N,)
    n_items : int
    aggregate : {"macro", "micro"}, mapping or None
        None: ``"macro"``.
    chance : float, mapping or None
    """
    names, codes = check_tasks(tasks, n_items)
    agg = "macro" if aggregate is None else aggregate
    if isinstance(agg, Mapping):
        agg = {str(k): v for k, v in agg.items()}
    if isinstance(chance, Mapping):
        chance = {str(k): v for k, v in chance.items()}
    chance_levels(chance, names)
    return SuiteSpec([names[c] for c in codes.tolist()], names, codes, agg, chance)


def select_suite(s: Selection, A: np.ndarray, k: int, spec: SuiteSpec, *, seed: int, time_limit: float | None,
                 verbose: bool, options: Mapping[str, Any], share: float = PROPORTIONAL_SHARE) -> SelectionResult:
    """``k`` items of a suite: :func:`~benchsel.formulations.estimation.suite.suite_allocation` splits
    ``k`` across the tasks, selection ``s`` chooses each task's share on that task's columns.

    Parameters
    ----------
    s : Selection
    A : ndarray, shape (S, N)
        Checked source scores.
    k : int
    spec : SuiteSpec
    seed, time_limit, verbose, options
        As for :func:`~benchsel.solvers.selections.select_items` (the same seed in every task).
    share : float
        Share of ``k`` allocated in proportion to the tasks' sizes (0: pure Neyman allocation).

    Returns
    -------
    SelectionResult
        Sorted items; ``weights`` each selected item's share of its task (when every task's selection
        is a weighted design); ``result.extra["allocation"]`` the items per task.
    """
    if A.ndim != 2:
        raise InvalidInputError(f"tasks: suites take one metric, scores of shape (models, items); got shape {A.shape}")
    alloc = suite_allocation(A, spec.codes, spec.names, k, spec.weights, share=share)
    _log(verbose, "suite allocation: " + ", ".join(f"{t} {int(n)}" for t, n in zip(spec.names, alloc)))
    items: list[np.ndarray] = []
    weights: list[np.ndarray] | None = []
    seconds = 0.0
    methods: set[str] = set()
    for t, kt in enumerate(alloc.tolist()):
        cols = np.flatnonzero(spec.codes == t)
        if kt >= cols.size:  # the whole task
            items.append(cols)
            if weights is not None:
                weights.append(np.full(cols.size, 1.0 / cols.size))
            continue
        r = _run_selection(s, A[:, cols], int(kt), seed=seed, time_limit=time_limit, verbose=verbose,
                           options=options)
        seconds += r.seconds
        methods.add(r.result.method)
        items.append(cols[r.items])
        if weights is not None:
            weights = None if r.weights is None else [*weights, np.asarray(r.weights, dtype=float)]
    all_items = np.concatenate(items)
    order = np.argsort(all_items, kind="stable")
    all_items = all_items[order].astype(np.int64)
    w = None if weights is None else np.concatenate(weights)[order]
    res = Result(selection=all_items, objective=math.nan, bound=None, gap=None, feasible=True,
                 termination=Termination.FEASIBLE, method="+".join(sorted(methods)) or s.method, seed=seed,
                 build_seconds=0.0, solve_seconds=seconds, formulation="suite (per-task selections)",
                 extra={"allocation": {t: int(n) for t, n in zip(spec.names, alloc)}})
    return SelectionResult(all_items, s.name, res, seconds, w)


def tasks_of(Y: Any, tasks: Any) -> Sequence[str] | None:
    """The tasks :func:`compress` uses: ``tasks`` when given (False: none), else a reader's table's own
    (``Y.attrs["tasks"]``) when it has two or more."""
    if tasks is False:
        return None
    if tasks is not None:
        return tasks
    found = item_tasks(Y) if hasattr(Y, "attrs") and hasattr(Y, "columns") else None
    return found if found is not None and len(set(found)) >= 2 else None
