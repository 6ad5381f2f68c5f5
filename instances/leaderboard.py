"""Open LLM Leaderboard "details" parquet files -> a models x items table.

The leaderboard publishes each evaluated model's per-sample results as a
dataset of its own. Two layouts are read (reading parquet needs ``pyarrow``
or ``fastparquet``: ``pip install "benchsel[parquet]"``):

* **v1** (the archived leaderboard, ``open-llm-leaderboard-old/details_<org>__<model>``):
  ``<date>/details_<suite|task|shots>_<date>.parquet``, e.g.
  ``2024-01-06T02-53-50.876104/details_harness|arc:challenge|25_2024-01-06T02-53-50.876104.parquet``,
  one row per document with the columns of lighteval's ``Detail``
  (``example``, ``full_prompt``, ``predictions``, ``gold``, ``choices``,
  ``gold_index``, ...) and the per-sample scores in the struct column
  ``metrics`` (``{"acc": 1.0, "acc_norm": 0.0}``). These files carry no
  document id: an item is the row's position (``0, 1, ...``), as the
  leaderboard's own loaders number them.
* **v2** (``open-llm-leaderboard/<org>__<model>-details``): lm-evaluation-harness
  sample logs (``<org>__<model>/samples_leaderboard_<task>_<date>.jsonl``,
  read by :func:`benchsel.instances.evallogs.read_lm_eval_samples`) and the
  dataset viewer's parquet copy of them, ``<config>/<split>/0000.parquet``
  with ``<config>`` = ``<org>__<model>__leaderboard_<task>`` and ``<split>``
  = ``latest`` or the run's date, whose columns are the sample fields
  (``doc_id``, ``doc``, ``target``, ..., and one column per metric).

:func:`read_leaderboard_details` takes a folder holding one subfolder per
model (the subfolder's name is the model's label, a leading ``details_`` and
a trailing ``-details`` removed), or a mapping ``{model: folder}``.
"""
from __future__ import annotations

import importlib.util
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsel.formulations.core.errors import InvalidInputError, SolverNotInstalledError
from benchsel.formulations.core.untrusted import MB, LimitError, current_limits, file_size

from ._itemtable import DUPLICATES, MISSING, assemble, check_choice, match_tasks
from .evallogs import SAMPLE_FIELDS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DetailsFile", "find_details_files", "read_details_file", "read_leaderboard_details", "read_parquet"]

_V1 = re.compile(r"^details_(?P<task>.+)_(?P<date>[^_]+)\.parquet$")
_V2 = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.parquet$")


def read_parquet(path: str | Path) -> pd.DataFrame:
    """``pandas.read_parquet`` with a named error when neither pyarrow nor fastparquet is installed."""
    import pandas as pd

    if importlib.util.find_spec("pyarrow") is None and importlib.util.find_spec("fastparquet") is None:
        raise SolverNotInstalledError(
            f"path: reading the parquet file {str(path)!r} needs the package 'pyarrow' (or 'fastparquet'), which is "
            "not installed: pip install \"benchsel[parquet]\" (or pip install pyarrow)"
        )
    _check_parquet_size(Path(path))
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"path: cannot read {str(path)!r} as parquet: {type(e).__name__}: {e}") from None
    except Exception as e:  # pyarrow.lib.ArrowInvalid and friends
        raise InvalidInputError(f"path: cannot read {str(path)!r} as parquet: {type(e).__name__}: {e}") from None


def _check_parquet_size(path: Path) -> None:
    """Refuse, from its footer alone, a parquet file whose columns hold more than ``--max-array-mb`` uncompressed."""
    if importlib.util.find_spec("pyarrow") is None:
        return
    import pyarrow.parquet as pq

    cap = current_limits().max_array_bytes
    file_size(path, "the parquet file")
    try:
        meta = pq.ParquetFile(path).metadata
        total = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception as e:  # pyarrow.lib.ArrowInvalid (not parquet), OSError
        raise InvalidInputError(f"path: cannot read {str(path)!r} as parquet: {type(e).__name__}: {e}") from None
    if total > cap:
        raise LimitError(f"path: the parquet file {str(path)!r} holds {total / MB:.1f} MB uncompressed, more than the "
                         f"cap of {cap / MB:g} MB; raise it with --max-array-mb (Limits.max_array_bytes) if the file "
                         "is trusted")


@dataclass(frozen=True)
class DetailsFile:
    """One task of one model: its parquet file(s) (dataset-viewer shards are read in name order)."""

    model: str
    task: str
    date: str
    paths: tuple[Path, ...]


def _model_label(name: str) -> str:
    name = name[len("details_"):] if name.startswith("details_") else name
    return name[: -len("-details")] if name.endswith("-details") else name


def _task_of(p: Path, model_dir: Path, model: str) -> tuple[str, str, bool]:
    """(task, date, is_shard) of a parquet file under a model's folder."""
    m = _V1.match(p.name) or _V2.match(p.name)
    if m is not None:
        return m.group("task"), m.group("date"), False
    rel = p.relative_to(model_dir).parts
    if len(rel) >= 3 and re.fullmatch(r"\d+(-of-\d+)?\.parquet|[\w.-]*-\d{5}-of-\d{5}\.parquet", p.name):
        config, split = rel[-3], rel[-2]
        for prefix in (model_dir.name, model):
            for sep in ("__", "_"):
                if config.startswith(prefix + sep):
                    config = config[len(prefix) + len(sep):]
        # the "latest" split is the newest run; dated splits use '_' where file names use '-'
        return config, ("9999" if split == "latest" else split.replace("_", "-")), True
    raise InvalidInputError(
        f"path: cannot tell the task of {str(p)!r}: expected details_<task>_<date>.parquet (v1), "
        "samples_<task>_<date>.parquet, or <config>/<split>/0000.parquet (the dataset viewer's copy)"
    )


def _model_folders(path: str | Path | Mapping[str, str | Path]) -> tuple[dict[str, Path], str]:
    """``({model: folder}, where)`` of a folder of model folders or a mapping ``{model: folder}``."""
    if isinstance(path, Mapping):
        return {str(k): Path(v) for k, v in path.items()}, "the given model folders"
    root = Path(path)
    if not root.is_dir():
        raise InvalidInputError(f"path: expected a folder with one subfolder per model, got {str(root)!r}")
    return {_model_label(d.name): d for d in sorted(root.iterdir()) if d.is_dir()}, repr(str(root))


def find_details_files(path: str | Path | Mapping[str, str | Path]) -> list[DetailsFile]:
    """The details parquet files of every model: a folder of model folders, or ``{model: folder}``."""
    folders, where = _model_folders(path)
    out: list[DetailsFile] = []
    for model, d in folders.items():
        if not d.is_dir():
            raise InvalidInputError(f"path: the folder of model {model!r}, {str(d)!r}, does not exist")
        groups: dict[tuple[str, str], list[Path]] = {}
        for p in sorted(d.rglob("*.parquet")):
            if p.name.startswith("results_"):  # the aggregated results beside the details
                continue
            task, date, _ = _task_of(p, d, model)
            groups.setdefault((task, date), []).append(p)
        out += [DetailsFile(model, t, dt, tuple(ps)) for (t, dt), ps in sorted(groups.items())]
    if not out:
        raise InvalidInputError(f"path: no details parquet files under {where}")
    return out


def _metric_columns(df: pd.DataFrame) -> list[str]:

    if "doc_id" in df.columns:
        return [c for c in df.columns if c not in SAMPLE_FIELDS]
    if "metrics" in df.columns:
        names: dict[str, None] = {}
        for v in df["metrics"]:
            if isinstance(v, Mapping):
                names.update(dict.fromkeys(k for k, x in v.items() if x is not None))
        return list(names)
    return [c[len("metrics."):] for c in df.columns if str(c).startswith("metrics.")]


def _value(v: Any, metric: str, where: str) -> float:
    if v is None:
        return math.nan
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        v = v.item()
    if isinstance(v, (bool, int, float)):
        return float(v)
    raise InvalidInputError(f"metric: {metric!r} at {where} is not one number per document (got "
                            f"{type(v).__name__}: {str(v)[:60]})")


def read_details_file(f: DetailsFile, metric: str | Mapping[str, str] | None = None) -> dict[Any, float]:
    """``{doc_id: score}`` of one model's details for one task (``doc_id`` the row position in v1 files)."""
    return _read_details(f, metric)[0]


def _row_hashes(df: pd.DataFrame) -> list[Any] | None:
    """The documents' hashes of a v1 details file, row by row (lighteval's ``hashes.example``), or None."""
    if "hashes" in df.columns:
        col = [v.get("example") if isinstance(v, Mapping) else None for v in df["hashes"]]
    elif "hashes.example" in df.columns:
        col = df["hashes.example"].tolist()
    else:
        return None
    return col if all(isinstance(h, str) and h for h in col) else None


def _read_details(f: DetailsFile, metric: str | Mapping[str, str] | None
                  ) -> tuple[dict[Any, float], tuple[int, list[Any]] | None]:
    """``({doc_id: score}, None)`` of a file with document ids; of a v1 file (items by row position)
    ``({row: score}, (rows, hashes))`` with its rows' document hashes (``[]`` when it has none)."""
    import pandas as pd

    df = pd.concat([read_parquet(p) for p in f.paths], ignore_index=True) if len(f.paths) > 1 else \
        read_parquet(f.paths[0])
    name = str(f.paths[0]) + (f" (+{len(f.paths) - 1} shards)" if len(f.paths) > 1 else "")
    present = _metric_columns(df)
    m = metric.get(f.task) if isinstance(metric, Mapping) else metric
    if isinstance(metric, Mapping) and m is None:
        raise InvalidInputError(f"metric: the mapping names no metric for task {f.task!r}")
    if m is None:
        if len(present) != 1:
            raise InvalidInputError(f"metric: task {f.task!r} ({name}) has {len(present)} metrics "
                                    f"({', '.join(present) or 'none'}); pass metric=NAME")
        m = present[0]
    elif m not in present:
        raise InvalidInputError(f"metric: no metric {m!r} in {name} (task {f.task!r}); metrics there: "
                                f"{', '.join(present) or 'none'}")
    out: dict[Any, float] = {}
    positions: tuple[int, list[Any]] | None = None
    if "doc_id" in df.columns:
        if "filter" in df.columns and df["filter"].nunique(dropna=False) > 1:
            raise InvalidInputError(f"filter: {name} scores task {f.task!r} under several filters "
                                    f"({', '.join(map(str, df['filter'].unique()))}); read its lm-eval sample logs "
                                    "with read_lm_eval_samples(..., filter=NAME)")
        ids = df["doc_id"].tolist()
        values = df[m].tolist()
    else:
        ids = list(range(len(df)))
        values = ([v.get(m) if isinstance(v, Mapping) else None for v in df["metrics"]] if "metrics" in df.columns
                  else df[f"metrics.{m}"].tolist())
        positions = (len(df), _row_hashes(df) or [])
    for row, (d, v) in enumerate(zip(ids, values)):
        d = d.item() if hasattr(d, "item") else d
        if d in out:
            raise InvalidInputError(f"path: {name}: doc_id {d!r} appears twice (row {row})")
        x = _value(v, m, f"{name}, row {row}")
        if not math.isnan(x):
            out[d] = x
    return out, positions


def _check_rows(files: list[DetailsFile], rows: Mapping[tuple[str, str], tuple[int, list[Any]]]) -> None:
    """v1 details (items by row position) of one task must hold the same documents in the same rows for every
    model: one missing row would shift the rest. Compared by the rows' document hashes when the files have them,
    else by their number of rows; a named error otherwise."""
    first: dict[str, tuple[str, int, list[Any]]] = {}
    for f in files:
        if (f.model, f.task) not in rows:
            continue
        n, h = rows[(f.model, f.task)]
        ref = first.setdefault(f.task, (f.model, n, h))
        model0, n0, h0 = ref
        if n != n0:
            raise InvalidInputError(
                f"path: the v1 details of task {f.task!r} hold {n0} rows for model {model0!r} and {n} for model "
                f"{f.model!r} ({str(f.paths[0])!r}); v1 files carry no document id, so items are row positions and "
                "a missing row would shift every later one: keep only models with complete details of the task "
                "(or drop the task with tasks=)")
        if h and h0:
            bad = next((i for i, (x, y) in enumerate(zip(h0, h)) if x != y), None)
            if bad is not None:
                raise InvalidInputError(
                    f"path: row {bad} of the v1 details of task {f.task!r} is another document for model "
                    f"{f.model!r} ({str(f.paths[0])!r}) than for model {model0!r} (hashes.example {h[bad][:12]}... "
                    f"and {h0[bad][:12]}...); v1 items are row positions, so the rows must hold the same documents")


def _pick(files: list[DetailsFile], duplicates: str) -> list[DetailsFile]:
    by: dict[tuple[str, str], list[DetailsFile]] = {}
    for f in files:
        by.setdefault((f.model, f.task), []).append(f)
    out = []
    for (model, task), group in by.items():
        if len(group) > 1:
            names = ", ".join(repr(str(g.paths[0])) for g in group)
            if duplicates == "error":
                raise InvalidInputError(f"duplicates: {len(group)} details of task {task!r} for model {model!r}: "
                                        f"{names}; keep one, or pass duplicates='latest'")
            group = [max(group, key=lambda g: g.date)]
        out.append(group[0])
    return out


def read_leaderboard_details(path: str | Path | Mapping[str, str | Path], metric: str | Mapping[str, str] | None = None,
                             *, tasks: Sequence[str] | None = None, missing: str = "error",
                             duplicates: str = "error") -> pd.DataFrame:
    """Read Open LLM Leaderboard details parquet files into a models x items table.

    Parameters
    ----------
    path : str, Path or mapping
        A folder with one subfolder per model (a downloaded details dataset
        each), or a mapping ``{model name: folder}``.
    metric : str or mapping, optional
        The per-sample metric (``"acc_norm"``, ``"acc"``, ``"exact_match"``,
        ``"mc1"``, ...), or a mapping task -> metric; by default the task's
        only one.
    tasks : sequence of str, optional
        Only these tasks (shell patterns, e.g. ``"harness|hendrycksTest-*"``).
    missing : {"error", "drop-items", "drop-models"}
    duplicates : {"error", "latest"}
        Several runs of one task for one model (dated folders or splits):
        an error (default), or the latest (``latest`` splits count as newest).

    Returns
    -------
    pandas.DataFrame, shape (models, items)
        Columns ``task/doc_id`` (v1: ``task/row``).
    """
    check_choice(duplicates, "duplicates", DUPLICATES)
    check_choice(missing, "missing", MISSING)
    files = find_details_files(path)
    folders, where_ = _model_folders(path)
    empty = [m for m in folders if m not in {f.model for f in files}]
    if empty:
        msg = (f"{len(empty)} model folder(s) under {where_} hold no details parquet file: "
               f"{', '.join(f'{m!r} ({str(folders[m])!r})' for m in empty[:5])}{' ...' if len(empty) > 5 else ''}")
        if missing == "error":
            raise InvalidInputError(f"missing: {msg}; remove them, or pass missing='drop-models' to skip them")
        warnings.warn(f"{msg}: skipped (missing={missing!r})", stacklevel=2)
    keep = match_tasks((f.task for f in files), tasks, "in the details files")
    files = _pick([f for f in files if f.task in keep], duplicates)
    cells: dict[str, dict[str, dict[Any, float]]] = {}
    rows: dict[tuple[str, str], tuple[int, list[Any]]] = {}
    for f in files:
        scores, positions = _read_details(f, metric)
        cells.setdefault(f.model, {})[f.task] = scores
        if positions is not None:
            rows[(f.model, f.task)] = positions
    _check_rows(files, rows)
    where = path if not isinstance(path, Mapping) else "the given folders"
    return assemble(cells, missing=missing, what=f"the leaderboard details under {str(where)!r}")
