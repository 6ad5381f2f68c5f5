"""lm-eval groups: what ``results_<date>.json`` says about the groups of the tasks read.

lm-eval (0.4.x) writes, beside the sample logs, ``results_<date>.json`` with

* ``"group_subtasks"``: ``{group: [subtasks or subgroups]}``, nested (``mmlu`` -> ``mmlu_humanities`` ->
  ``mmlu_formal_logic``); a task in no group maps to ``[]``;
* ``"results"`` (and, in some versions, ``"groups"``): per task *and* per group, ``{"alias": ...,
  "acc,none": x, "acc_stderr,none": ...}`` (keys ``metric,filter``);
* ``"n-samples"``: ``{task: {"original": N, "effective": n}}``.

:func:`group_report` reads them (every field typed, :class:`ResultsFile`) for the tasks read and returns
the hierarchy every model's results agree on and, per model, the score lm-eval reported for each task
and group under the metric and filter read, and each task's size. The readers record them as
``df.attrs["groups"]`` and ``df.attrs["group_report"]``;
:func:`~benchsel.formulations.estimation.groups.infer_weighting` turns them into each group's weighting
when a suite is compressed. Nothing is refused here that a pooled reading (``--pool``) or the user's own
weights (``--aggregate``) would not need: models that disagree on the groups are recorded as a conflict
and refused when the groups are used.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import msgspec

from benchsel.formulations.estimation.groups import check_groups, leaves, prune_groups

__all__ = ["NSamples", "ResultsFile", "group_report"]


class NSamples(msgspec.Struct):
    """``"n-samples"`` of one task: its documents, and those evaluated (``--limit``)."""

    original: Annotated[int, msgspec.Meta(ge=0)] | None = None
    effective: Annotated[int, msgspec.Meta(ge=0)] | None = None


class ResultsFile(msgspec.Struct):
    """The fields of ``results_<date>.json`` the reader uses (other fields skipped)."""

    model_name: Any = None
    results: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    group_subtasks: dict[str, list[str]] = {}
    n_samples: dict[str, NSamples] = msgspec.field(default_factory=dict, name="n-samples")


#: A run: the folder and the date id of its results file.
Run = tuple[Path, str]


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def _key(entry: Mapping[str, Any] | None, metric: str, filter: str | None) -> str | None:
    """The ``metric,filter`` key a task's scores were read under (the only ``metric,*`` key when the logs
    name no filter), or None."""
    if filter is not None:
        return f"{metric},{filter}"
    keys = [k for k in (entry or {}) if k.startswith(f"{metric},")]
    return keys[0] if len(keys) == 1 else None


def _merged(model: str, runs: Sequence[Run], files: Mapping[Run, ResultsFile]
            ) -> tuple[dict[str, list[str]], dict[str, Run], str | None]:
    """One model's groups over its runs (later runs win), the run reporting each, and a disagreement."""
    merged: dict[str, list[str]] = {}
    where: dict[str, Run] = {}
    conflict = None
    for run in sorted(runs, key=lambda r: r[1]):
        res = files.get(run)
        if res is None:
            continue
        found = check_groups({g: ms for g, ms in res.group_subtasks.items() if ms},
                             f"path: {str(run[0] / f'results_{run[1]}.json')!r}: field $.group_subtasks")
        for g, ms in found.items():
            if g in merged and set(merged[g]) != set(ms) and conflict is None:
                conflict = (f"model {model!r}'s runs {where[g][1]} and {run[1]} disagree on the members of group "
                            f"{g!r}")
            merged[g] = ms
            where[g] = run
    return merged, where, conflict


def _describe(a: str, ga: Mapping[str, Sequence[str]], b: str, gb: Mapping[str, Sequence[str]]) -> str:
    for g in sorted(set(ga) | set(gb)):
        if g not in gb:
            return f"model {a!r} has group {g!r} ({len(ga[g])} members), model {b!r} has not"
        if g not in ga:
            return f"model {b!r} has group {g!r} ({len(gb[g])} members), model {a!r} has not"
        if set(ga[g]) != set(gb[g]):
            only_a = sorted(set(ga[g]) - set(gb[g]))
            only_b = sorted(set(gb[g]) - set(ga[g]))
            return (f"group {g!r} of model {a!r} has {len(ga[g])} members, of model {b!r} {len(gb[g])} (only in "
                    f"{a!r}: {', '.join(only_a[:3]) or 'none'}; only in {b!r}: {', '.join(only_b[:3]) or 'none'})")
    return ""


def group_report(runs: Mapping[str, Mapping[str, Run]], files: Mapping[Run, ResultsFile],
                 read: Mapping[str, Mapping[str, tuple[str, str | None]]],
                 docs: Mapping[str, Mapping[str, int]]) -> tuple[dict[str, list[str]], dict[str, Any] | None]:
    """The groups of the tasks read and what lm-eval reported for them.

    Parameters
    ----------
    runs : mapping
        ``runs[model][task]``: the run (folder, date) of the sample log read.
    files : mapping
        The parsed results file of each run that has one.
    read : mapping
        ``read[model][task] = (metric, filter)`` the task's scores were read under (filter None: the logs
        name none).
    docs : mapping
        ``docs[model][task]``: documents read (a task's size where ``"n-samples"`` does not give it).

    Returns
    -------
    groups : dict
        ``{group: [members]}``: the groups with a task read below them, as every model's results give them
        (``{}`` when there are none, or when the models disagree).
    report : dict or None
        None without groups; else ``{"values": {model: {name: score or None}}, "sizes": {model: {task: n}},
        "problems": {group: why its score cannot be compared}, "conflict": None or why the models'
        groups disagree, "hierarchies": {model: {group: [members]}}}`` (JSON values, kept in
        ``df.attrs``; ``hierarchies`` holds each model's own groups with a task read below them, ``{}`` for
        a model whose results put no task read in a group).
    """
    tasks = sorted({t for per in runs.values() for t in per})
    per_model: dict[str, dict[str, list[str]]] = {}
    where: dict[str, dict[str, Run]] = {}
    conflict = None
    for model, per in runs.items():
        merged, at, clash = _merged(model, list(set(per.values())), files)
        per_model[model] = prune_groups(merged, tasks)
        where[model] = at
        conflict = conflict or clash
    models = list(per_model)
    if not any(per_model.values()):
        return {}, None
    ref = per_model[models[0]]
    for m in models[1:]:
        diff = _describe(models[0], ref, m, per_model[m])
        if diff and conflict is None:
            conflict = f"the models' lm-eval results disagree on the groups: {diff}"
    groups = {} if conflict else ref
    values: dict[str, dict[str, float | None]] = {}
    sizes: dict[str, dict[str, int]] = {}
    problems: dict[str, str] = {}
    for model in models:
        vals: dict[str, float | None] = {}
        keys: dict[str, str | None] = {}
        sizes[model] = {}
        for task, run in runs[model].items():
            res = files.get(run)
            entry = res.results.get(task) if res is not None else None
            metric, filt = read[model][task]
            keys[task] = _key(entry, metric, filt)
            vals[task] = _number((entry or {}).get(keys[task] or ""))
            ns = res.n_samples.get(task) if res is not None else None
            sizes[model][task] = ns.effective if ns is not None and ns.effective is not None else docs[model][task]
        for g in groups:
            res = files.get(where[model][g])
            entry = None if res is None else res.results.get(g) or res.groups.get(g)
            ks = {keys.get(t) for t in leaves(groups, g) if t in keys}
            found = [k for k in ks if k is not None and _number((entry or {}).get(k)) is not None]
            vals[g] = None
            if len(ks) == 1 and found:
                vals[g] = _number((entry or {})[found[0]])
            elif found and g not in problems:
                problems[g] = (f"the tasks of group {g!r} were read under {len(ks)} metric/filter keys "
                               f"({', '.join(sorted(str(k) for k in ks))}), so lm-eval's score of the group is "
                               "not one of theirs to compare")
        values[model] = vals
    return groups, {"values": values, "sizes": sizes, "problems": problems, "conflict": conflict,
                    "hierarchies": per_model}
