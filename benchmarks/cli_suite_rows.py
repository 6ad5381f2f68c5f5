"""The rows ``benchsel estimate`` prints for a suite: each task, each group, the suite.

A suite compressed from lm-eval logs with groups (``mmlu`` -> ``mmlu_humanities`` -> subjects) gets a row
per group beside the tasks' rows: the group's weighted sum of the task estimates, its interval from the
tasks' independent variances (SPEC F10); ``--json`` gives ``groups: {group: {estimate, low, high}}``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SuiteRows", "groups_note", "suite_label"]


def suite_label(c: Any) -> str:
    """How the suite's row is named: by its aggregate, or ``lm-eval groups`` when the groups weight it."""
    tree = c.group_tree
    if tree is not None and tree.suite == "groups":
        return "suite (lm-eval groups)"
    aggregate = c.estimator.params["aggregate"]
    return f"suite ({aggregate if isinstance(aggregate, str) else 'weighted'})"


def groups_note(c: Any) -> str | None:
    """One line on the groups a compression keeps (None without): each group's weighting, the suite's."""
    tree = c.group_tree
    if tree is None:
        return None
    how = ("the suite is the plain mean of the top groups and ungrouped tasks, each group weighting its members "
           "as lm-eval reported it" if tree.suite == "groups" else "each group weights its tasks as the suite "
                                                                    "(--aggregate)")
    return f"{len(tree.members)} groups: " + ", ".join(f"{g} ({w})" for g, w in tree.weighting.items()) + f"; {how}"


class SuiteRows:
    """New models' task and group estimates with their ``1 - alpha`` intervals.

    Parameters
    ----------
    c : Compressed
        A suite's compression.
    X : ndarray, shape (models, k)
        The new models' scores on its items.
    alpha : float
    """

    def __init__(self, c: Any, X: np.ndarray, alpha: float) -> None:
        est = c.estimator
        self.tasks: list[str] = list(c.tasks or [])
        self.groups: list[str] = list(c.groups or [])
        self.task_values = est.predict_tasks_with_interval(X, alpha=alpha)
        self.group_values = est.predict_groups_with_interval(X, alpha=alpha) if self.groups else None
        self.label = suite_label(c)

    def _named(self, i: int) -> list[tuple[str, str, float, float, float]]:
        out = []
        for kind, names, values in (("task", self.tasks, self.task_values), ("group", self.groups, self.group_values)):
            if values is None:
                continue
            P, lo, hi = values
            out += [(kind, n, float(P[i, j]), float(lo[i, j]), float(hi[i, j])) for j, n in enumerate(names)]
        return out

    def json(self, i: int) -> dict[str, Any]:
        """``{"aggregate", "tasks": {task: {estimate, low, high}}}`` and ``"groups"`` for a suite with groups, of
        model ``i``."""
        out: dict[str, Any] = {"aggregate": self.label, "tasks": {}}
        if self.groups:
            out["groups"] = {}
        for kind, name, e, lo, hi in self._named(i):
            out[f"{kind}s"][name] = {"estimate": e, "low": lo, "high": hi}
        return out

    def rows(self, i: int, model: str, suite: tuple[float, float, float], fmt: Any) -> list[list[str]]:
        """Model ``i``'s table rows: ``[model, name, estimate, low, high]`` for each task, group and the suite."""
        body = [[model, name if kind == "task" else f"{name} (group)", fmt(e), fmt(lo), fmt(hi)]
                for kind, name, e, lo, hi in self._named(i)]
        return [*body, [model, self.label, *(fmt(v) for v in suite)]]
