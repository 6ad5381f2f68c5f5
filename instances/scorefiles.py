"""One entry point for score files: evaluation logs, tables and benchsel response files -> models x items.

:func:`load_scores` reads

* ``"lm-eval"`` -- an lm-evaluation-harness output folder (or one
  ``samples_*.jsonl``), :func:`benchsel.instances.evallogs.read_lm_eval_samples`;
* ``"leaderboard"`` -- a folder of Open LLM Leaderboard details (one
  subfolder per model), :func:`benchsel.instances.leaderboard.read_leaderboard_details`;
* ``"helm"`` -- HELM run folders, :func:`benchsel.instances.helm.read_helm_runs`;
* ``"table"`` -- a ``.csv`` or ``.parquet`` matrix: one row per model, the
  first column the model names, the header the item labels, empty cells
  missing;
* ``"npz"`` -- a benchsel response file (``Y``, ``models``, ``item_ids``,
  ``metrics``; see :func:`benchsel.instances.responses.load_responses`).

``format="auto"`` picks by the path: a folder holding ``samples_*.jsonl``
files is lm-eval, one holding ``per_instance_stats.json`` HELM, one holding
``.parquet`` files leaderboard details; a file by its suffix.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.registry import Registry
from benchsel.formulations.core.untrusted import MB, LimitError, current_limits, file_size, iter_lines
from benchsel.formulations.core.validation import check_unique_labels

from ._itemtable import MISSING, check_choice
from .evallogs import read_lm_eval_samples
from .helm import read_helm_runs
from .leaderboard import read_leaderboard_details, read_parquet
from .responses import load_responses

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMATS", "READERS", "ScoreReader", "detect_format", "load_scores", "read_score_table"]


@dataclass(frozen=True)
class ScoreReader:
    """How :func:`load_scores` reads one format.

    Attributes
    ----------
    read : callable
        ``read(path, *, metric, tasks, filter, missing, duplicates, split) -> DataFrame`` (models x items), each
        option as :func:`load_scores` received it (checked there when the format does not take it).
    tasks : bool
        The format has tasks (``tasks=`` selects some).
    filters : bool
        The format has filters (``filter=`` picks one).
    spread : bool
        The format's folders can be read by several processes or a Dask
        cluster: ``read`` also takes ``jobs``, ``scheduler``, ``progress`` and
        ``min_items`` (see :func:`load_scores`).
    columns : bool
        The format is a table whose column of model names can be named: ``read`` also takes ``model_column``.
    """

    read: Callable[..., pd.DataFrame]
    tasks: bool = False
    filters: bool = False
    spread: bool = False
    columns: bool = False


#: Every score-file format :func:`load_scores` reads, by name (``format=``).
READERS: Registry[ScoreReader] = Registry("score format", argument="format")


def detect_format(path: str | Path) -> str:
    """The format :func:`load_scores` reads ``path`` as when ``format="auto"``."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"path: no such file or folder {str(p)!r}")
    if p.is_dir():
        if next(p.rglob("samples_*.jsonl"), None) is not None:
            return "lm-eval"
        if next(p.rglob("per_instance_stats.json"), None) is not None:
            return "helm"
        if next(p.rglob("*.parquet"), None) is not None:
            return "leaderboard"
        raise InvalidInputError(
            f"path: {str(p)!r} holds no lm-eval sample logs (samples_*.jsonl), HELM runs (per_instance_stats.json) "
            "or leaderboard details (*.parquet)"
        )
    suffix = p.suffix.lower()
    kinds = {".jsonl": "lm-eval", ".csv": "table", ".tsv": "table", ".parquet": "table", ".npz": "npz"}
    if suffix not in kinds:
        raise InvalidInputError(f"path: cannot tell the format of {str(p)!r}: expected a folder of evaluation logs, "
                                "or a .csv, .tsv, .parquet, .npz or samples_*.jsonl file")
    return kinds[suffix]


def _apply_missing(df: pd.DataFrame, missing: str, what: str) -> pd.DataFrame:
    hole = df.isna().to_numpy()
    dropped_items: list[Any] = []
    dropped_models: list[Any] = []
    if hole.any():
        rows, cols = hole.nonzero()
        first = f"model {df.index[rows[0]]!r}, item {df.columns[cols[0]]!r}"
        if missing == "error":
            raise InvalidInputError(
                f"missing: {int(hole.sum())} of the {hole.size} cells of {what} are empty ({len(set(rows))} models, "
                f"{len(set(cols))} items; first at {first}). Pass missing='drop-items' or missing='drop-models'"
            )
        if missing == "drop-items":
            keep = ~hole.any(axis=0)
            if not keep.any():
                raise InvalidInputError(f"missing: no item of {what} is scored for every model; try "
                                        "missing='drop-models'")
            dropped_items = list(df.columns[~keep])
            df = df.loc[:, keep]
        else:
            keep = ~hole.any(axis=1)
            if not keep.any():
                raise InvalidInputError(f"missing: no model of {what} has every item; try missing='drop-items'")
            dropped_models = list(df.index[~keep])
            df = df.loc[keep]
    df.attrs["dropped_items"] = dropped_items
    df.attrs["dropped_models"] = dropped_models
    return df


def _check_text_table(p: Path) -> None:
    """Before pandas reads a ``.csv`` / ``.tsv``: the file within ``--max-array-mb`` and every line within
    ``--max-line-mb`` (streamed, one line in memory at a time), so a file without newlines is refused by name."""
    lim = current_limits()
    size = file_size(p, "the score table")
    if size > lim.max_array_bytes:
        raise LimitError(f"path: the score table {str(p)!r} is {size / MB:.1f} MB, more than the cap of "
                         f"{lim.max_array_bytes / MB:g} MB; raise it with --max-array-mb (Limits.max_array_bytes) "
                         "if the file is trusted")
    for _ in iter_lines(p, what="the score table"):
        pass


def _parquet_models(df: pd.DataFrame, p: Path, model_column: str | None) -> pd.DataFrame:
    """A parquet table with its model names as the index: the stored index, ``model_column``, or a first
    column of text; a first column of numbers (model ids or the first item's scores?) is refused by name."""
    import pandas as pd

    if model_column is not None:
        if model_column not in df.columns:
            raise InvalidInputError(f"model_column: {str(p)!r} has no column {model_column!r}; its first columns "
                                    f"are {', '.join(map(repr, list(df.columns)[:6]))}")
        return df.set_index(model_column)
    if not isinstance(df.index, pd.RangeIndex) or not df.shape[1]:
        return df
    first = df.columns[0]
    if not pd.api.types.is_numeric_dtype(df[first]) or pd.api.types.is_bool_dtype(df[first]):
        return df.set_index(first)
    raise InvalidInputError(
        f"model_column: the first column {first!r} of {str(p)!r} holds numbers and the table stores no index, so "
        f"it may be model ids or the first item's scores; pass model_column={first!r} (--model-column "
        f"{first}) to name the models by it, or write the table with a column of model names first")


def read_score_table(path: str | Path, *, missing: str = "error", model_column: str | None = None) -> pd.DataFrame:
    """A ``.csv``/``.tsv``/``.parquet`` matrix: rows are models (first column: names), columns items.

    Empty cells are missing (see ``missing`` in :func:`load_scores`); a cell
    that is not a number is an error naming its model and item. ``model_column`` names the column of model
    names (default: a ``.csv``'s first column; a ``.parquet``'s stored index, else its first column when it
    holds text: a first column of numbers is refused, as it may be ids or scores).
    """
    import pandas as pd

    check_choice(missing, "missing", MISSING)
    if model_column is not None and (not isinstance(model_column, str) or not model_column):
        raise InvalidInputError(f"model_column: expected the name of a column, got {model_column!r}")
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"path: no such file {str(p)!r}")
    if p.suffix.lower() == ".parquet":

        df = _parquet_models(read_parquet(p), p, model_column)
    else:
        import csv

        sep = "\t" if p.suffix.lower() == ".tsv" else ","
        _check_text_table(p)
        try:
            with p.open(newline="", encoding="utf-8") as fh:
                header = next(csv.reader(fh, delimiter=sep), [])
            if model_column is None or model_column in header:
                df = pd.read_csv(p, index_col=0 if model_column is None else model_column, sep=sep)
        except (ValueError, OSError, UnicodeDecodeError, csv.Error) as e:
            raise InvalidInputError(f"path: cannot read {str(p)!r} as a table: {type(e).__name__}: {e}") from None
        if model_column is not None and model_column not in header:
            raise InvalidInputError(f"model_column: {str(p)!r} has no column {model_column!r}; its first columns "
                                    f"are {', '.join(map(repr, header[:6]))}")
        seen: set[str] = set()
        at = 0 if model_column is None else header.index(model_column)
        for h in header[:at] + header[at + 1:]:  # pandas would rename a repeated column 'q1' to 'q1.1'
            if h in seen:
                raise InvalidInputError(f"path: {str(p)!r} names item {h!r} twice")
            seen.add(h)
    if df.shape[0] < 1 or df.shape[1] < 1:
        raise InvalidInputError(f"path: {str(p)!r} holds no scores: expected one row per model (first column: its "
                                f"name) and one column per item, got shape {df.shape}")
    for axis, labels in (("model", df.index), ("item", df.columns)):
        dup = labels[labels.duplicated()]
        if len(dup):
            raise InvalidInputError(f"path: {str(p)!r} names {axis} {dup[0]!r} twice")
    num = df.apply(pd.to_numeric, errors="coerce")
    bad = num.isna().to_numpy() & df.notna().to_numpy()
    if bad.any():
        r, c = (int(x[0]) for x in bad.nonzero())
        raise InvalidInputError(f"path: {str(p)!r}: the score of model {df.index[r]!r} on item {df.columns[c]!r} is "
                                f"not a number: {df.iat[r, c]!r}")
    num = num.astype(float)
    num.index.name = num.index.name or "model"
    num.columns.name = "item"
    return _apply_missing(num, missing, repr(str(p)))


def _read_npz(path: Path, metric: str | None) -> pd.DataFrame:
    import pandas as pd


    r = load_responses(path)
    if r.Y.ndim == 3:
        names = [str(m) for m in r.metrics]
        if metric is None or metric not in names:
            what = "pass metric=NAME" if metric is None else f"no metric {metric!r}"
            raise InvalidInputError(f"metric: {str(path)!r} holds {len(names)} metrics ({', '.join(names)}); {what}")
        Y = r.matrix(metric, oriented=False)
    else:
        Y = r.Y
    models = [str(m) for m in r.models]
    items = [x.item() if hasattr(x, "item") else x for x in r.item_ids]
    # a table's rows and columns are matched by their labels (an array's are not: load_responses keeps repeats)
    check_unique_labels(models, f"{str(path)!r}: models", "model")
    check_unique_labels(items, f"{str(path)!r}: item_ids", "item")
    return pd.DataFrame(Y.astype(float), index=pd.Index(models, name="model"), columns=pd.Index(items, name="item"))


def load_scores(path: str | Path | Mapping[str, str | Path], *, format: str = "auto",
                metric: str | Mapping[str, str] | None = None, tasks: Sequence[str] | None = None,
                filter: str | Mapping[str, str] | None = None, missing: str = "error", duplicates: str = "error",
                split: str | None = None, jobs: int = 1, scheduler: str | None = None, progress: bool = False,
                min_items: int | None = None, model_column: str | None = None) -> pd.DataFrame:
    """Read scores of any supported kind into a models x items DataFrame.

    Parameters
    ----------
    path : str, Path or mapping
        A file or folder (see the module docs); a mapping ``{model: folder}``
        for leaderboard details.
    format : {"auto", "lm-eval", "leaderboard", "helm", "table", "npz"}
    metric : str or mapping, optional
        The metric (lm-eval, leaderboard: a name or task -> name; HELM: the
        statistic, required; npz: the metric of a 3-D file).
    tasks : sequence of str, optional
        Only these tasks (evaluation logs).
    filter : str or mapping, optional
        lm-eval's filter.
    missing : {"error", "drop-items", "drop-models"}
    duplicates : {"error", "latest"}
    split : str, optional
        HELM's split.
    jobs, scheduler, progress, min_items
        lm-eval logs: model folders read by ``jobs`` processes or on a Dask
        scheduler, a progress bar, and ``k`` refused early (see
        :func:`~benchsel.instances.evallogs.read_lm_eval_samples`).
    model_column : str, optional
        Tables: the column of model names (see :func:`read_score_table`).

    Files are read under the caps of
    :func:`~benchsel.formulations.core.untrusted.current_limits` (lines,
    JSON documents, arrays and tables; ``--max-line-mb``, ``--max-json-mb``,
    ``--max-array-mb``).

    Returns
    -------
    pandas.DataFrame, shape (models, items)
        ``df.attrs["reader"]`` records the format and options used (for
        reading a new model's scores the same way).
    """
    check_choice(format, "format", ("auto", *READERS.names()))
    check_choice(missing, "missing", MISSING)
    if not isinstance(path, (str, os.PathLike, Mapping)) or isinstance(path, bytes):
        raise InvalidInputError(f"path: expected a file or folder path (str or Path) or a mapping model -> folder, "
                                f"got {type(path).__name__} {path!r}"[:200])
    if isinstance(path, Mapping):
        if format not in ("auto", "leaderboard"):
            raise InvalidInputError(f"path: a mapping of model folders is read as leaderboard details, not {format!r}")
        fmt = "leaderboard"
    else:
        fmt = detect_format(path) if format == "auto" else format
    reader = READERS.get(fmt)
    if not reader.filters and filter is not None:
        raise InvalidInputError(f"filter: only lm-eval sample logs have filters; {str(path)!r} is read as {fmt!r}")
    if not reader.tasks and tasks is not None:
        raise InvalidInputError(f"tasks: only evaluation logs have tasks; {str(path)!r} is read as {fmt!r}")
    if not reader.columns and model_column is not None:
        raise InvalidInputError(f"model_column: only .csv/.parquet tables have a column of model names; "
                                f"{str(path)!r} is read as {fmt!r}")
    spread = ({"jobs": jobs, "scheduler": scheduler, "progress": progress, "min_items": min_items}
              if reader.spread else {})
    if reader.columns:
        spread["model_column"] = model_column
    df = reader.read(path, metric=metric, tasks=tasks, filter=filter, missing=missing, duplicates=duplicates,
                     split=split, **spread)
    df.attrs["reader"] = {"format": fmt, "metric": dict(metric) if isinstance(metric, Mapping) else metric,
                          "filter": dict(filter) if isinstance(filter, Mapping) else filter,
                          "tasks": list(tasks) if tasks is not None else None, "split": split,
                          "model_column": model_column}
    return df


def _read_lm_eval(path: Any, *, metric: Any, tasks: Any, filter: Any, missing: str, duplicates: str,
                  split: str | None, jobs: int, scheduler: str | None, progress: bool,
                  min_items: int | None) -> pd.DataFrame:
    return read_lm_eval_samples(path, metric, tasks=tasks, filter=filter, missing=missing, duplicates=duplicates,
                                jobs=jobs, scheduler=scheduler, progress=progress, min_items=min_items)


def _read_leaderboard(path: Any, *, metric: Any, tasks: Any, filter: Any, missing: str, duplicates: str,
                      split: str | None) -> pd.DataFrame:
    return read_leaderboard_details(path, metric, tasks=tasks, missing=missing, duplicates=duplicates)


def _read_helm(path: Any, *, metric: Any, tasks: Any, filter: Any, missing: str, duplicates: str,
               split: str | None) -> pd.DataFrame:
    if not isinstance(metric, str):
        raise InvalidInputError("metric: HELM runs need the per-instance statistic to read (e.g. "
                                f"metric='exact_match'), got {metric!r}")
    return read_helm_runs(path, metric, tasks=tasks, split=split, missing=missing)


def _read_table(path: Any, *, metric: Any, tasks: Any, filter: Any, missing: str, duplicates: str,
                split: str | None, model_column: str | None) -> pd.DataFrame:
    return read_score_table(path, missing=missing, model_column=model_column)


def _read_benchsel_npz(path: Any, *, metric: Any, tasks: Any, filter: Any, missing: str, duplicates: str,
                       split: str | None) -> pd.DataFrame:
    if metric is not None and not isinstance(metric, str):
        raise InvalidInputError(f"metric: expected a metric name for an .npz file, got {metric!r}")
    return _apply_missing(_read_npz(Path(path), metric), missing, repr(str(path)))


READERS.register("lm-eval", ScoreReader(_read_lm_eval, tasks=True, filters=True, spread=True))
READERS.register("leaderboard", ScoreReader(_read_leaderboard, tasks=True))
READERS.register("helm", ScoreReader(_read_helm, tasks=True))
READERS.register("table", ScoreReader(_read_table, columns=True))
READERS.register("npz", ScoreReader(_read_benchsel_npz))
#: The formats ``load_scores`` reads out of the box (``"auto"``: by the path, :func:`detect_format`).
FORMATS = ("auto", *READERS.names())
