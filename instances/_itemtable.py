"""Shared by the evaluation-log readers: per-(model, task) cells -> one models x items DataFrame.

Every reader (:mod:`benchsel.instances.evallogs`, :mod:`benchsel.instances.leaderboard`,
:mod:`benchsel.instances.helm`) collects, for each model and task, a mapping
``{document id: score}``; :func:`assemble` turns them into a models x items
table with item labels ``task/doc_id`` and applies the missing-cell policy.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchsel.formulations.core.errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DUPLICATES", "MISSING", "assemble", "check_choice", "item_label", "match_tasks", "natural_key"]

#: Missing-cell policies: refuse, keep only the items every model has, keep only the models that have every item.
MISSING = ("error", "drop-items", "drop-models")
#: Two logs of one (model, task): refuse, or keep the latest (by the date in the file name).
DUPLICATES = ("error", "latest")


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else an error naming them."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidInputError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def item_label(task: str, doc_id: Any) -> str:
    """The label of one item: ``"task/doc_id"``."""
    return f"{task}/{doc_id}"


def natural_key(doc_id: Any) -> tuple[int, int, str]:
    """Sort key: whole numbers by value, before any other id (as text)."""
    s = str(doc_id)
    if re.fullmatch(r"-?\d+", s):
        return (0, int(s), "")
    return (1, 0, s)


def match_tasks(found: Iterable[str], patterns: Sequence[str] | None, where: str) -> set[str]:
    """The tasks of ``found`` matching any shell pattern of ``patterns`` (all of them when None).

    A pattern matching no task is an error listing the tasks found.
    """
    import fnmatch

    found = sorted(set(found))
    if patterns is None:
        return set(found)
    if isinstance(patterns, str):
        patterns = [patterns]
    keep: set[str] = set()
    for p in patterns:
        hit = {t for t in found if fnmatch.fnmatchcase(t, str(p))}
        if not hit:
            listed = ", ".join(found[:20]) + (" ..." if len(found) > 20 else "")
            raise InvalidInputError(f"tasks: {p!r} matches no task {where}; tasks: {listed}")
        keep |= hit
    return keep


def _describe_missing(present: Mapping[str, Mapping[str, Mapping[Any, float]]], models: list[str],
                      tasks: dict[str, list[Any]]) -> tuple[int, list[str]]:
    """How many cells are missing and, per (model, task), what (at most 8 lines)."""
    n = 0
    lines: list[str] = []
    for m in models:
        for t, ids in tasks.items():
            have = present.get(m, {}).get(t)
            if have is None:
                n += len(ids)
                lines.append(f"model {m!r} has no log of task {t!r}")
                continue
            lack = [d for d in ids if d not in have]
            if lack:
                n += len(lack)
                lines.append(f"model {m!r} lacks {len(lack)} of the {len(ids)} items of task {t!r} "
                             f"(e.g. {item_label(t, lack[0])})")
    return n, lines


def _check_one_label_each(task: str, doc_ids: list[Any], cells: Mapping[str, Mapping[str, Mapping[Any, float]]],
                          what: str) -> None:
    """Two document ids of one task that would make one item label (``5`` and ``"5"``): a named error."""
    seen: dict[str, Any] = {}
    for d in doc_ids:
        other = seen.setdefault(str(d), d)
        if other is d or (other == d and type(other) is type(d)):
            continue
        pair = sorted((other, d), key=lambda x: isinstance(x, str))
        logged = [f"{x!r} ({type(x).__name__}) by " + ", ".join(
            repr(m) for m in sorted(cells) if any(y == x and type(y) is type(x) for y in cells[m].get(task, {})))
                  for x in pair]
        raise InvalidInputError(
            f"doc_id: task {task!r} of {what} has the document ids {pair[0]!r} and {pair[1]!r}, which would be one "
            f"item {item_label(task, d)!r} counted twice (logged as {'; as '.join(logged)}); log every document "
            "id of a task with one type")


def assemble(cells: Mapping[str, Mapping[str, Mapping[Any, float]]], *, missing: str, what: str) -> pd.DataFrame:
    """A models x items DataFrame from ``cells[model][task][doc_id] = score``.

    Parameters
    ----------
    cells : mapping
        Scores by model, task and document id (a document absent from a
        (model, task) mapping, or a task absent for a model, is a missing cell).
    missing : {"error", "drop-items", "drop-models"}
        ``"error"`` refuses any missing cell (naming the models, tasks and a
        first missing item); ``"drop-items"`` keeps the items every model has;
        ``"drop-models"`` keeps the models that have every item.
    what : str
        The source, for messages (e.g. ``"lm-eval sample logs under 'out'"``).

    Returns
    -------
    pandas.DataFrame, shape (models, items)
        Index: model names (sorted); columns: ``task/doc_id`` labels, tasks
        sorted by name and documents by id. ``df.attrs["tasks"]`` holds each column's task (a list, one
        name per column; :func:`benchsel.formulations.estimation.suite.item_tasks`), ``df.attrs["dropped_items"]`` and
        ``df.attrs["dropped_models"]`` list what the policy dropped.
    """
    import numpy as np
    import pandas as pd

    check_choice(missing, "missing", MISSING)
    models = sorted(cells)
    if not models:
        raise InvalidInputError(f"scores: no model found in {what}")
    ids: dict[str, set[Any]] = {}
    for per_task in cells.values():
        for t, docs in per_task.items():
            ids.setdefault(t, set()).update(docs)
    tasks = {t: sorted(ids[t], key=natural_key) for t in sorted(ids)}
    for t, ds in tasks.items():
        _check_one_label_each(t, ds, cells, what)
    columns = [(t, d) for t, ds in tasks.items() for d in ds]
    if not columns:
        raise InvalidInputError(f"scores: no scored item found in {what}")
    Y = np.full((len(models), len(columns)), np.nan)
    col = {c: j for j, c in enumerate(columns)}
    for i, m in enumerate(models):
        for t, docs in cells[m].items():
            for d, v in docs.items():
                Y[i, col[(t, d)]] = v
    labels = [item_label(t, d) for t, d in columns]
    col_tasks = [t for t, _ in columns]
    hole = np.isnan(Y)
    dropped_items: list[str] = []
    dropped_models: list[str] = []
    if hole.any():
        n, lines = _describe_missing(cells, models, tasks)
        if missing == "error":
            more = f"; and {len(lines) - 8} more (model, task) pairs" if len(lines) > 8 else ""
            raise InvalidInputError(
                f"missing: {n} of the {Y.size} cells ({len(models)} models x {len(columns)} items) of {what} "
                f"are missing: {'; '.join(lines[:8])}{more}. Pass missing='drop-items' (keep the items every "
                "model has) or missing='drop-models' (keep the models that have every item)"
            )
        if missing == "drop-items":
            keep = ~hole.any(axis=0)
            dropped_items = [lab for lab, k in zip(labels, keep) if not k]
            if not keep.any():
                raise InvalidInputError(f"missing: no item of {what} is scored for every one of the {len(models)} "
                                        f"models ({'; '.join(lines[:4])}); try missing='drop-models'")
            Y = Y[:, keep]
            labels = [lab for lab, k in zip(labels, keep) if k]
            col_tasks = [t for t, k in zip(col_tasks, keep) if k]
        else:
            keep = ~hole.any(axis=1)
            dropped_models = [m for m, k in zip(models, keep) if not k]
            if not keep.any():
                raise InvalidInputError(f"missing: no model of {what} has every one of the {len(columns)} items "
                                        f"({'; '.join(lines[:4])}); try missing='drop-items'")
            Y = Y[keep]
            models = [m for m, k in zip(models, keep) if k]
    df = pd.DataFrame(Y, index=pd.Index(models, name="model"), columns=pd.Index(labels, name="item"))
    df.attrs["tasks"] = col_tasks
    df.attrs["dropped_items"] = dropped_items
    df.attrs["dropped_models"] = dropped_models
    return df

