"""Selecting a suite's items: the budget split across tasks (SPEC F10), then one selection inside each task.

:func:`~benchsel.solvers.compression.compress` with ``tasks=`` calls :func:`select_suite`; the tasks'
selections are independent draws (or solves) on each task's own columns, so the tasks' estimates are
independent too.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.result import Result, Termination
from benchsel.formulations.estimation.groups import (
    GroupTree,
    check_groups,
    complete_groups,
    group_order,
    infer_weighting,
    leaf_weights,
    leaves,
    missing_members,
    prune_groups,
    restricted_weights,
    roots,
)
from benchsel.formulations.estimation.suite import (
    PROPORTIONAL_SHARE,
    chance_levels,
    check_tasks,
    item_tasks,
    suite_allocation,
    task_weights,
)

from .selections import Selection, SelectionResult, _log, _run_selection

__all__ = ["SuiteSpec", "groups_of", "select_suite", "suite_groups", "suite_spec", "tasks_of"]


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
    group_weights : dict or None
        ``{group: {task: weight}}`` (the estimator's ``groups``), None without groups.
    tree : GroupTree or None
    """

    def __init__(self, labels: list[str], names: list[str], codes: np.ndarray, aggregate: Any, chance: Any,
                 group_weights: dict[str, dict[str, float]] | None = None, tree: GroupTree | None = None) -> None:
        self.labels = labels
        self.names = names
        self.codes = codes
        self.aggregate = aggregate
        self.chance = chance
        self.weights = task_weights(aggregate, names, np.bincount(codes, minlength=len(names)))
        self.group_weights = group_weights
        self.tree = tree


def suite_spec(tasks: Any, n_items: int, aggregate: Any, chance: Any, *, groups: Mapping[str, Any] | None = None,
               report: Mapping[str, Any] | None = None, models: Sequence[str] = ()) -> SuiteSpec:
    """The checked tasks, aggregate, chance levels and groups of a suite of ``n_items`` items (named errors).

    Parameters
    ----------
    tasks : sequence of str, shape (N,)
    n_items : int
    aggregate : {"macro", "micro"}, mapping or None
        None: ``"macro"``, or the weights of the lm-eval groups when ``report`` is given
        (:func:`suite_groups`).
    chance : float, mapping or None
    groups, report, models
        As :func:`groups_of` returns them and the source models (:func:`suite_groups`).
    """
    names, codes = check_tasks(tasks, n_items)
    agg = aggregate
    if isinstance(agg, Mapping):
        agg = {str(k): v for k, v in agg.items()}
    if isinstance(chance, Mapping):
        chance = {str(k): v for k, v in chance.items()}
    chance_levels(chance, names)
    sizes = np.bincount(codes, minlength=len(names))
    agg, group_weights, tree = suite_groups(names, sizes, groups, report, agg, models)
    return SuiteSpec([names[c] for c in codes.tolist()], names, codes, agg, chance, group_weights, tree)


def groups_of(Y: Any, tasks: Any, groups: Any) -> tuple[dict[str, list[str]] | None, dict[str, Any] | None]:
    """The groups :func:`compress` uses and what lm-eval reported for them: ``groups`` when given (a mapping
    ``{group: [members]}``, nothing reported; False: none), else a reader's table's own
    (``Y.attrs["groups"]``, ``Y.attrs["group_report"]``) when its tasks are used."""
    if groups is False:
        return None, None
    if groups is not None:
        return check_groups(groups), None
    attrs = getattr(Y, "attrs", None)
    if tasks is not None or not isinstance(attrs, dict):
        return None, None
    found, report = attrs.get("groups"), attrs.get("group_report")
    hierarchy = check_groups(found, "Y.attrs['groups']") if isinstance(found, Mapping) and found else None
    return hierarchy, (dict(report) if isinstance(report, Mapping) else None)


def suite_groups(names: list[str], sizes: np.ndarray, groups: Mapping[str, Any] | None,
                 report: Mapping[str, Any] | None, aggregate: Any, models: Sequence[str]
                 ) -> tuple[Any, dict[str, dict[str, float]] | None, GroupTree | None]:
    """The suite's aggregate and its groups' task weights.

    With lm-eval's reports (``report``) and no ``aggregate``, each group's weighting is inferred from them
    (:func:`~benchsel.formulations.estimation.groups.infer_weighting`), a group's task weights are the
    products of the level weights below it, and the suite is the plain mean of the roots. Otherwise the
    suite's weights are ``aggregate``'s (default ``"macro"``) and a group's are those restricted to its
    tasks; groups not read whole, or models disagreeing on them, drop the groups.

    Returns
    -------
    aggregate : str or dict
        For :class:`~benchsel.formulations.estimation.suite.Suite` (``{task: weight}`` from the groups).
    group_weights : dict or None
        ``{group: {task: weight}}`` in the order of the group rows.
    tree : GroupTree or None
    """
    conflict = report.get("conflict") if report is not None else None
    if not groups and not conflict:
        return ("macro" if aggregate is None else aggregate), None, None
    decide = ("pass aggregate= (benchsel compress --aggregate macro, micro or TASK=WEIGHT) to weight the tasks "
              "yourself, or drop the groups (groups=False, benchsel compress --no-groups)")
    if report is not None and aggregate is None:
        if conflict:
            raise InvalidInputError(f"aggregate: {conflict}, so the groups' weights cannot be read from the logs; "
                                    f"{decide}, or read the tasks of one hierarchy (tasks=, --tasks)")
        tree = prune_groups(groups or {}, names)
        if not tree:
            return "macro", None, None
        miss = missing_members(tree, names)
        if miss:
            g, ms = next(iter(miss.items()))
            raise InvalidInputError(
                f"aggregate: group {g!r} was not read whole: {len(ms)} of its {len(tree[g])} members "
                f"({', '.join(map(repr, ms[:4]))}{' ...' if len(ms) > 4 else ''}) are not among the tasks read "
                f"(tasks=/--tasks, or dropped by missing=); lm-eval's score of the group weights every member: read "
                f"them all, or {decide}")
        weighting = infer_weighting(tree, report.get("values", {}), report.get("sizes", {}),
                                    [m for m in models if m in report.get("values", {})],
                                    problems=report.get("problems"))
        size_of = dict(zip(names, sizes.tolist()))
        order = group_order(tree, names)
        per = {g: leaf_weights(tree, weighting, size_of, g) for g in order}
        top = roots(tree, names)
        suite = dict.fromkeys(names, 0.0)
        for r in top:
            for t, v in leaf_weights(tree, weighting, size_of, r).items():
                suite[t] += v / len(top)
        return suite, per, GroupTree({g: tree[g] for g in order}, {g: weighting[g] for g in order}, "groups",
                                     "lm-eval")
    agg = "macro" if aggregate is None else aggregate
    unknown = missing_members(groups or {}, names) if report is None else {}
    if unknown:  # groups given by the user: a member that is neither a task nor a group is a typo
        g, ms = next(iter(unknown.items()))
        raise InvalidInputError(f"groups: group {g!r} names members that are neither tasks nor groups: "
                                f"{', '.join(map(repr, ms[:5]))} (tasks: {', '.join(map(repr, names[:8]))}"
                                f"{' ...' if len(names) > 8 else ''})")
    if conflict:
        warnings.warn(f"groups: {conflict}; the suite has no group rows (the tasks are weighted by aggregate="
                      f"{agg!r})", stacklevel=4)
        return agg, None, None
    pruned = prune_groups(groups or {}, names)
    tree = complete_groups(pruned, names)
    if len(tree) < len(pruned):
        dropped = [g for g in pruned if g not in tree]
        warnings.warn(f"groups: {len(dropped)} group(s) not read whole get no row: "
                      f"{', '.join(map(repr, dropped[:5]))}{' ...' if len(dropped) > 5 else ''}", stacklevel=4)
    w = dict(zip(names, task_weights(agg, names, sizes).tolist()))
    kept = {g: rw for g in group_order(tree, names) if (rw := restricted_weights(w, leaves(tree, g))) is not None}
    if not kept:
        return agg, None, None
    return agg, kept, GroupTree({g: tree[g] for g in kept}, dict.fromkeys(kept, "aggregate"), "aggregate",
                                "given" if report is None else "lm-eval")


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
