"""Groups of a suite's tasks (SPEC F10): lm-eval's hierarchy, each group's weighting, the leaf weights.

An lm-eval group (``mmlu``) holds tasks and other groups (``mmlu_humanities`` holds
``mmlu_formal_logic``, ...). Its score is the mean of its members' scores, weighted by their sizes
(``weight_by_size: true``: mmlu, bbh, belebele) or not; a subgroup's size is the sum of its members'.
The results file does not reliably say which, but the group's own reported score equals one of the two
means of its members' reported scores: :func:`infer_weighting` matches it, model by model.

A task's weight in a group (or in the suite) is the product of the level weights on its path, summed
over paths (a task may sit in two groups): :func:`leaf_weights`. Size-weighted at every level is the
micro average over the leaves; plain at every level weights each level's members equally.

The suite is the plain mean of its *roots* (the groups in no other group and the tasks in no group):
for one group such as ``mmlu``, that group's score.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError

__all__ = ["WEIGHTINGS", "GroupTree", "check_group_weights", "check_groups", "complete_groups",
           "group_matrix", "group_order", "hierarchy_differences", "infer_weighting", "leaf_weights", "leaves",
           "missing_members", "prune_groups", "restricted_weights", "roots"]

#: How a group's members are weighted: by size, equally, either (the members' sizes are equal), equally
#: because lm-eval reports no score for the group (a tag), or the suite's weights restricted to the group.
WEIGHTINGS = ("size", "plain", "equal-sizes", "unreported", "aggregate")
#: Relative tolerance of the match between a group's reported score and a mean of its members'.
MATCH_RTOL = 1e-6


def check_groups(groups: Any, name: str = "groups") -> dict[str, list[str]]:
    """A hierarchy ``{group: [members]}`` checked: text names, no empty group, no group inside itself.

    Parameters
    ----------
    groups : mapping
        Group name -> its members (task or group names), in order.

    Returns
    -------
    dict
        The same, as plain ``dict`` of ``list``.
    """
    if not isinstance(groups, Mapping):
        raise InvalidInputError(f"{name}: expected a mapping {{group: [member tasks or groups]}}, got "
                                f"{type(groups).__name__}")
    out: dict[str, list[str]] = {}
    for g, ms in groups.items():
        if not isinstance(g, str) or not g:
            raise InvalidInputError(f"{name}: expected non-empty text group names, got {g!r}")
        if isinstance(ms, (str, bytes)) or not isinstance(ms, Sequence) or not ms:
            raise InvalidInputError(f"{name}: expected a non-empty list of member names for group {g!r}, got {ms!r}"
                                    [:200])
        bad = [m for m in ms if not isinstance(m, str) or not m]
        if bad:
            raise InvalidInputError(f"{name}: group {g!r} has members that are not names: {bad[0]!r}")
        if len(set(ms)) != len(ms):
            raise InvalidInputError(f"{name}: group {g!r} lists a member twice")
        out[g] = list(ms)
    _check_acyclic(out, name)
    return out


def _check_acyclic(groups: Mapping[str, Sequence[str]], name: str) -> None:
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(g: str, path: list[str]) -> None:
        state[g] = 1
        for m in groups[g]:
            if m not in groups:
                continue
            if state.get(m) == 1:
                loop = " -> ".join([*path[path.index(m):], m]) if m in path else f"{g} -> {m}"
                raise InvalidInputError(f"{name}: group {m!r} contains itself ({loop})")
            if m not in state:
                visit(m, [*path, m])
        state[g] = 2

    for g in groups:
        if g not in state:
            visit(g, [g])


def leaves(groups: Mapping[str, Sequence[str]], node: str) -> list[str]:
    """The tasks below ``node`` (``node`` itself for a task), each once, in order of first appearance."""
    if node not in groups:
        return [node]
    out: dict[str, None] = {}
    for m in groups[node]:
        out.update(dict.fromkeys(leaves(groups, m)))
    return list(out)


def prune_groups(groups: Mapping[str, Sequence[str]], tasks: Sequence[str]) -> dict[str, list[str]]:
    """The groups with at least one of ``tasks`` below them (members as given, read or not)."""
    have = set(tasks)
    return {g: list(ms) for g, ms in groups.items() if any(t in have for t in leaves(groups, g))}


def complete_groups(groups: Mapping[str, Sequence[str]], tasks: Sequence[str]) -> dict[str, list[str]]:
    """The groups whose every member is one of ``tasks`` or such a group (the others dropped, repeatedly)."""
    have = set(tasks)
    keep = {g: list(ms) for g, ms in groups.items()}
    while True:
        bad = [g for g, ms in keep.items() if any(m not in keep and m not in have for m in ms)]
        if not bad:
            return keep
        for g in bad:
            del keep[g]


def _names(ms: Sequence[str], most: int = 8) -> str:
    shown = list(ms)[:most]
    return (", ".join(shown) or "none") + (f" ... ({len(ms)} in all)" if len(ms) > most else "")


def hierarchy_differences(saved: Mapping[str, Sequence[str]], stated: Mapping[str, Sequence[str]],
                          tasks: Sequence[str]) -> list[str]:
    """How the groups ``stated`` by a model's lm-eval results differ from a compression's groups ``saved``.

    Parameters
    ----------
    saved : mapping
        The compression's groups, ``{group: [members]}`` (every member one of ``tasks`` or a group).
    stated : mapping
        The groups a new model's results files state (``group_subtasks``), ``{group: [members]}``.
    tasks : sequence of str
        The compression's tasks. Every saved group is looked up in ``stated``; a stated group the
        compression lacks counts only when every task below it is one of ``tasks`` (a group that also
        holds other tasks is one the compression could not have kept).

    Returns
    -------
    list of str
        One sentence per group that differs, in the order of ``saved`` then ``stated``: a saved group
        missing from ``stated``, a group whose members differ (both member lists, and what only one
        side has), a stated group the compression does not have. Empty when they agree.
    """
    out: list[str] = []
    for g, ms in saved.items():
        new = stated.get(g)
        if new is None:
            out.append(f"group {g!r} (members: {_names(ms)}) is not among the new results' groups")
        elif set(ms) != set(new):
            only_old = [m for m in ms if m not in set(new)]
            only_new = [m for m in new if m not in set(ms)]
            out.append(f"group {g!r} has members {_names(ms)} in the compression but {_names(new)} in the new "
                       f"results (only in the compression: {_names(only_old, 4)}; only in the new results: "
                       f"{_names(only_new, 4)})")
    for g, ms in complete_groups(prune_groups(stated, tasks), tasks).items():
        if g not in saved:
            out.append(f"the new results have group {g!r} (members: {_names(ms)}), which the compression has not")
    return out


def missing_members(groups: Mapping[str, Sequence[str]], tasks: Sequence[str]) -> dict[str, list[str]]:
    """Each group's members that are neither one of ``tasks`` nor a group: ``{group: [names]}`` (only groups
    with some)."""
    have = set(tasks)
    out = {g: [m for m in ms if m not in have and m not in groups] for g, ms in groups.items()}
    return {g: ms for g, ms in out.items() if ms}


def roots(groups: Mapping[str, Sequence[str]], tasks: Sequence[str]) -> list[str]:
    """The groups in no other group and the tasks in no group, ordered by their first task in ``tasks``."""
    inside = {m for ms in groups.values() for m in ms}
    pos = {t: i for i, t in enumerate(tasks)}
    top = [g for g in groups if g not in inside] + [t for t in tasks if t not in inside]
    return sorted(top, key=lambda n: min((pos.get(t, len(pos)) for t in leaves(groups, n)), default=len(pos)))


def group_order(groups: Mapping[str, Sequence[str]], tasks: Sequence[str]) -> list[str]:
    """The groups from the roots down (each before its subgroups, siblings in member order): the order of
    group rows."""
    out: dict[str, None] = {}

    def visit(n: str) -> None:
        if n in groups and n not in out:
            out[n] = None
            for m in groups[n]:
                visit(m)

    for r in roots(groups, tasks):
        visit(r)
    return list(out)


# ------------------------------------------------------------------ weighting
def _size(groups: Mapping[str, Sequence[str]], sizes: Mapping[str, float], node: str) -> float:
    if node not in groups:
        return float(sizes[node])
    return sum(_size(groups, sizes, m) for m in groups[node])


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= MATCH_RTOL * max(1.0, abs(a))


def infer_weighting(groups: Mapping[str, Sequence[str]], values: Mapping[str, Mapping[str, Any]],
                    sizes: Mapping[str, Mapping[str, float]], models: Sequence[str], *,
                    problems: Mapping[str, str] | None = None, option: str = "aggregate") -> dict[str, str]:
    """Each group's weighting, from the scores lm-eval reported for it and its members.

    Parameters
    ----------
    groups : mapping
        ``{group: [members]}``, every member a task of ``sizes`` or a group.
    values : mapping
        ``values[model][name]``: the score reported for a task or group (None or absent: not reported).
    sizes : mapping
        ``sizes[model][task]``: the task's documents in that model's run.
    models : sequence of str
        The models whose reports are compared (every one must agree).
    problems : mapping, optional
        ``{group: why its score cannot be compared}`` (recorded by the reader): a named error.
    option : str
        The option that decides instead, named in the errors.

    Returns
    -------
    dict
        ``{group: "size" | "plain" | "equal-sizes" | "unreported"}``.

    Raises
    ------
    InvalidInputError
        A reported score that is neither mean, a member without a reported score, both means matching every
        model though the members' sizes differ, or a recorded problem; the message names ``option``.
    """
    decide = (f"pass {option}= to decide the suite's weights yourself (benchsel compress --aggregate macro, "
              "micro or TASK=WEIGHT), or drop the groups (groups=False, benchsel compress --no-groups)")
    out: dict[str, str] = {}
    for g, ms in groups.items():
        if problems and g in problems:
            raise InvalidInputError(f"{option}: {problems[g]}; {decide}")
        plain_ok = size_ok = True
        equal = True
        first: tuple[str, float, float, float] | None = None
        for model in models:
            v = values.get(model, {}).get(g)
            if v is None:
                continue
            mv = [values.get(model, {}).get(m) for m in ms]
            lack = [m for m, x in zip(ms, mv) if x is None]
            if lack:
                raise InvalidInputError(f"{option}: lm-eval reports group {g!r} for model {model!r} but not its "
                                        f"member {lack[0]!r}, so the group's weighting cannot be checked; {decide}")
            unsized = [t for t in leaves(groups, g) if t not in sizes.get(model, {})]
            if unsized:
                raise InvalidInputError(f"{option}: the size of task {unsized[0]!r} in model {model!r}'s run is not "
                                        f"known, so group {g!r}'s weighting cannot be checked; {decide}")
            w = np.array([_size(groups, sizes[model], m) for m in ms], dtype=float)
            x = np.asarray(mv, dtype=float)
            plain, sized = float(x.mean()), float(x @ w / w.sum()) if w.sum() > 0 else math.nan
            plain_ok &= _close(v, plain)
            size_ok &= _close(v, sized)
            equal &= bool(np.all(w == w[0]))
            first = first or (model, float(v), plain, sized)
        if first is None:
            out[g] = "unreported"
        elif plain_ok and size_ok:
            if not equal:
                raise InvalidInputError(
                    f"{option}: group {g!r}'s reported scores equal both the plain and the size-weighted mean of its "
                    f"{len(ms)} members for every model, though the members' sizes differ: the weighting is "
                    f"ambiguous; {decide}")
            out[g] = "equal-sizes"
        elif size_ok:
            out[g] = "size"
        elif plain_ok:
            out[g] = "plain"
        else:
            model, v, plain, sized = first
            raise InvalidInputError(
                f"{option}: lm-eval reports group {g!r} = {v:.6g} for model {model!r}, but the plain mean of its "
                f"{len(ms)} members' reported scores is {plain:.6g} and their size-weighted mean {sized:.6g} (and "
                f"not every model matches one of them): the group's weighting cannot be told; {decide}")
    return out


def leaf_weights(groups: Mapping[str, Sequence[str]], weighting: Mapping[str, str], sizes: Mapping[str, float],
                 node: str) -> dict[str, float]:
    """The weights (summing to 1) of the tasks below ``node``: products of the level weights on each path,
    summed over paths.

    A ``"size"`` group weights its members by their sizes (a subgroup's size is the sum of its tasks'),
    any other by ``1 / members``.
    """
    if node not in groups:
        return {node: 1.0}
    ms = groups[node]
    if weighting.get(node) == "size":
        w = np.array([_size(groups, sizes, m) for m in ms], dtype=float)
        w = w / w.sum() if w.sum() > 0 else np.full(len(ms), 1.0 / len(ms))
    else:
        w = np.full(len(ms), 1.0 / len(ms))
    out: dict[str, float] = {}
    for m, wm in zip(ms, w.tolist()):
        for t, v in leaf_weights(groups, weighting, sizes, m).items():
            out[t] = out.get(t, 0.0) + wm * v
    return out


def restricted_weights(weights: Mapping[str, float], tasks: Sequence[str]) -> dict[str, float] | None:
    """``weights`` kept on ``tasks`` and renormalised (None when they sum to 0 there)."""
    w = {t: float(weights.get(t, 0.0)) for t in tasks}
    total = sum(w.values())
    return None if total <= 0 else {t: v / total for t, v in w.items()}


# ------------------------------------------------------------------ group weights in the estimator
def check_group_weights(groups: Any, name: str = "groups") -> dict[str, dict[str, float]]:
    """``{group: {task: weight}}`` checked: text names, finite non-negative weights, each group's summing to
    a positive number (returned normalised to 1)."""
    if not isinstance(groups, Mapping):
        raise InvalidInputError(f"{name}: expected a mapping {{group: {{task: weight}}}}, got {type(groups).__name__}")
    out: dict[str, dict[str, float]] = {}
    for g, ws in groups.items():
        if not isinstance(g, str) or not g or not isinstance(ws, Mapping) or not ws:
            raise InvalidInputError(f"{name}: expected a non-empty mapping {{task: weight}} for each group name, got "
                                    f"{g!r}: {ws!r}"[:200])
        row: dict[str, float] = {}
        for t, v in ws.items():
            x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
            if not isinstance(t, str) or not (math.isfinite(x) and x >= 0):
                raise InvalidInputError(f"{name}: expected a finite non-negative weight for task {t!r} of group "
                                        f"{g!r}, got {v!r}")
            row[t] = x
        total = sum(row.values())
        if total <= 0:
            raise InvalidInputError(f"{name}: group {g!r} has only zero weights")
        out[g] = {t: v / total for t, v in row.items()}
    return out


def group_matrix(groups: Mapping[str, Mapping[str, float]], tasks: Sequence[str], name: str = "groups"
                 ) -> np.ndarray:
    """The groups' task weights as a matrix, shape (T, G): column ``g`` holds group ``g``'s weights of the
    ``T`` tasks (in the order of ``tasks``); a task the suite does not have is a named error."""
    index = {t: j for j, t in enumerate(tasks)}
    W = np.zeros((len(tasks), len(groups)))
    for c, (g, ws) in enumerate(groups.items()):
        unknown = [t for t in ws if t not in index]
        if unknown:
            raise InvalidInputError(f"{name}: group {g!r} weights tasks the suite does not have: "
                                    f"{', '.join(map(repr, unknown[:5]))} (tasks: "
                                    f"{', '.join(map(repr, list(tasks)[:8]))}{' ...' if len(tasks) > 8 else ''})")
        for t, v in ws.items():
            W[index[t], c] = v
    return W


# ------------------------------------------------------------------ what a compression keeps
@dataclass(frozen=True)
class GroupTree:
    """A suite's groups as a compression keeps them (saved with it).

    Attributes
    ----------
    members : dict
        ``{group: [members]}`` in the order of the group rows (roots first).
    weighting : dict
        ``{group: one of WEIGHTINGS}``.
    suite : {"groups", "aggregate"}
        Whether the suite's task weights come from the groups (the roots' plain mean) or from the
        user's ``aggregate``.
    origin : {"lm-eval", "given"}
        Whether the groups are lm-eval's (read from the source logs' ``group_subtasks``; a new model's
        logs must state the same, :func:`hierarchy_differences`) or the user's own (``groups=``).
        Saves without the field are read as ``"lm-eval"``.
    """

    members: dict[str, list[str]]
    weighting: dict[str, str]
    suite: str
    origin: str = "lm-eval"

    def to_json(self) -> dict[str, Any]:
        return {"members": {g: list(ms) for g, ms in self.members.items()}, "weighting": dict(self.weighting),
                "suite": self.suite, "origin": self.origin}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> GroupTree:
        return cls({str(g): [str(m) for m in ms] for g, ms in obj["members"].items()},
                   {str(g): str(w) for g, w in obj["weighting"].items()}, str(obj["suite"]),
                   str(obj.get("origin", "lm-eval")))

    @property
    def names(self) -> list[str]:
        return list(self.members)
