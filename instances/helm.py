"""HELM per-instance statistics -> a models x items table.

``helm-run --suite SUITE ...`` writes one folder per run,
``benchmark_output/runs/<suite>/<run name>/``, holding (among others)

* ``run_spec.json`` -- the run's ``RunSpec``: ``name`` (e.g.
  ``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``) and
  ``adapter_spec.model`` (``openai/gpt2``);
* ``per_instance_stats.json`` -- a list of ``PerInstanceStats``:
  ``{"instance_id": "id12", "train_trial_index": 0, "perturbation": {...}
  (perturbed copies only), "stats": [Stat, ...]}`` with each ``Stat``
  ``{"name": {"name": "exact_match", "split": "test", "sub_split": ...,
  "perturbation": ...}, "count": 1, "sum": 1.0, ..., "mean": 1.0}``.

:func:`read_helm_runs` reads the unperturbed instances of every run under a
folder: the task is the run name without its ``model=`` (and
``model_deployment=``) argument, the item ``task/instance_id``, the model
``adapter_spec.model`` and the value the chosen statistic's ``mean``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.untrusted import read_json

from ._itemtable import assemble, match_tasks

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["helm_task", "read_helm_run", "read_helm_runs"]

_MODEL_ARGS = ("model", "model_deployment")


def helm_task(run_name: str) -> str:
    """The scenario part of a HELM run name: its ``model=`` and ``model_deployment=`` arguments removed."""
    head, sep, args = run_name.partition(":")
    if not sep:
        return run_name
    kept = [a for a in args.split(",") if a.partition("=")[0] not in _MODEL_ARGS]
    return f"{head}:{','.join(kept)}" if kept else head


class _Model(msgspec.Struct):
    model: str | None = None


class _RunSpec(msgspec.Struct):
    """The fields of ``run_spec.json`` the reader uses (others skipped)."""

    name: str | None = None
    adapter_spec: _Model | None = None


class _StatName(msgspec.Struct):
    name: str
    split: str | None = None
    perturbation: Any = None


class _Stat(msgspec.Struct):
    name: _StatName
    count: Annotated[int, msgspec.Meta(ge=0)] | None = None
    sum: float | None = None
    mean: float | None = None


class _Entry(msgspec.Struct):
    instance_id: str | int
    stats: list[_Stat]
    train_trial_index: Annotated[int, msgspec.Meta(ge=0)] = 0
    perturbation: Any = None


def _load(p: Path, type: Any) -> Any:
    """A HELM JSON file of the given schema, size-capped (``--max-json-mb``); errors name the file and field."""
    return read_json(p, type, what="the HELM file", allow_nan=True)


def _run_identity(run: Path) -> tuple[str, str]:
    """(model, task) of a run folder, from its run_spec.json (else from the folder name)."""
    spec_p = run / "run_spec.json"
    name = run.name
    model = None
    if spec_p.is_file():
        spec = _load(spec_p, _RunSpec)
        name = spec.name or name
        model = spec.adapter_spec.model if spec.adapter_spec is not None else None
    if not model:
        args = dict(a.partition("=")[::2] for a in name.partition(":")[2].split(",") if "=" in a)
        model = args.get("model")
    if not model:
        raise InvalidInputError(f"path: cannot tell the model of the HELM run {str(run)!r}: no run_spec.json with "
                                "adapter_spec.model and no 'model=' in its name")
    return str(model), helm_task(str(name))


def read_helm_run(run: str | Path, metric: str, *, split: str | None = None, train_trial_index: int = 0
                  ) -> dict[str, float]:
    """``{instance_id: value}`` of one run folder's ``per_instance_stats.json`` (unperturbed instances)."""
    p = Path(run) / "per_instance_stats.json"
    data = _load(p, list[_Entry])
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    names: dict[str, None] = {}
    for i, entry in enumerate(data):
        where = f"{p}, entry {i}"
        if entry.perturbation is not None or entry.train_trial_index != train_trial_index:
            continue
        iid = str(entry.instance_id)
        for st in entry.stats:
            nm = st.name
            if nm.perturbation is not None:
                continue
            names[nm.name] = None
            if nm.name != metric or (split is not None and nm.split != split):
                continue
            if iid in seen:
                raise InvalidInputError(
                    f"path: {where}: instance {iid!r} has {metric!r} twice (entries {seen[iid]} and {i}"
                    f"{'' if split else '; pass split=...'})"
                )
            seen[iid] = i
            v = st.mean
            if v is None and st.count:
                v = (st.sum or 0.0) / st.count
            if v is not None and math.isfinite(v):
                out[iid] = float(v)
    if not seen:
        raise InvalidInputError(f"metric: no per-instance {metric!r}{f' on split {split!r}' if split else ''} in "
                                f"{str(p)!r}; statistics there: {', '.join(list(names)[:30]) or 'none'}")
    return out


def read_helm_runs(path: str | Path, metric: str, *, tasks: Sequence[str] | None = None, split: str | None = None,
                   train_trial_index: int = 0, missing: str = "error") -> pd.DataFrame:
    """Read HELM run folders into a models x items table.

    Parameters
    ----------
    path : str or Path
        A folder searched recursively for run folders (those holding a
        ``per_instance_stats.json``), e.g. ``benchmark_output/runs/v1.0.0``.
    metric : str
        The per-instance statistic (``"exact_match"``,
        ``"quasi_exact_match"``, ``"f1_score"``, ...); its ``mean`` is read.
    tasks : sequence of str, optional
        Only these tasks (shell patterns on the run name without the model).
    split : str, optional
        Only the statistic on this split (``"test"``, ``"valid"``); needed
        when an instance has it on several.
    train_trial_index : int
        The replication to read (HELM's ``train_trial_index``).
    missing : {"error", "drop-items", "drop-models"}

    Returns
    -------
    pandas.DataFrame, shape (models, items)
        Columns ``task/instance_id``.
    """
    root = Path(path)
    if not root.exists():
        raise InvalidInputError(f"path: no such folder {str(root)!r}")
    runs = sorted(p.parent for p in root.rglob("per_instance_stats.json"))
    if not runs:
        raise InvalidInputError(f"path: no HELM run (a folder with per_instance_stats.json) under {str(root)!r}")
    ident = {r: _run_identity(r) for r in runs}
    keep = match_tasks((t for _, t in ident.values()), tasks, f"under {str(root)!r}")
    cells: dict[str, dict[str, dict[Any, float]]] = {}
    where: dict[tuple[str, str], Path] = {}
    for r in runs:
        model, task = ident[r]
        if task not in keep:
            continue
        if (model, task) in where:
            raise InvalidInputError(f"duplicates: two HELM runs of task {task!r} for model {model!r}: "
                                    f"{str(where[(model, task)])!r} and {str(r)!r}; pass the folder of one suite")
        where[(model, task)] = r
        cells.setdefault(model, {})[task] = read_helm_run(r, metric, split=split, train_trial_index=train_trial_index)
    return assemble(cells, missing=missing, what=f"the HELM runs under {str(root)!r}")
