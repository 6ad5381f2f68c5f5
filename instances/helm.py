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

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsel.formulations.core.errors import InvalidInputError

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


def _load(p: Path) -> Any:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {str(p)!r}: {e.strerror or e}") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise InvalidInputError(f"path: {str(p)!r} is not a JSON file ({e})") from None


def _run_identity(run: Path) -> tuple[str, str]:
    """(model, task) of a run folder, from its run_spec.json (else from the folder name)."""
    spec_p = run / "run_spec.json"
    name = run.name
    model = None
    if spec_p.is_file():
        spec = _load(spec_p)
        if isinstance(spec, dict):
            name = spec.get("name") or name
            adapter = spec.get("adapter_spec") or {}
            model = adapter.get("model") if isinstance(adapter, dict) else None
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
    data = _load(p)
    if not isinstance(data, list):
        raise InvalidInputError(f"path: {str(p)!r}: expected a JSON list of per-instance stats, got "
                                f"{type(data).__name__}")
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    names: dict[str, None] = {}
    for i, entry in enumerate(data):
        where = f"{p}, entry {i}"
        if not isinstance(entry, dict) or "instance_id" not in entry or not isinstance(entry.get("stats"), list):
            raise InvalidInputError(f"path: {where}: expected {{'instance_id', 'train_trial_index', 'stats'}}, got "
                                    f"{str(entry)[:80]}")
        if entry.get("perturbation") is not None or entry.get("train_trial_index", 0) != train_trial_index:
            continue
        iid = str(entry["instance_id"])
        for s in entry["stats"]:
            nm = s.get("name") if isinstance(s, dict) else None
            if not isinstance(nm, dict) or "name" not in nm:
                raise InvalidInputError(f"path: {where}: a stat without a name: {str(s)[:80]}")
            if nm.get("perturbation") is not None:
                continue
            names[nm["name"]] = None
            if nm["name"] != metric or (split is not None and nm.get("split") != split):
                continue
            if iid in seen:
                raise InvalidInputError(
                    f"path: {where}: instance {iid!r} has {metric!r} twice (entries {seen[iid]} and {i}"
                    f"{'' if split else '; pass split=...'})"
                )
            seen[iid] = i
            v = s.get("mean")
            if v is None and s.get("count"):
                v = s.get("sum", 0.0) / s["count"]
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
                raise InvalidInputError(f"path: {where}: the mean of {metric!r} is not a number: {v!r}")
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
