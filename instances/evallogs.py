"""lm-evaluation-harness sample logs in, lm-eval ``--samples`` subsets out.

Reading
-------
``lm_eval ... --log_samples --output_path OUT`` (lm-eval 0.4.3 and later)
writes, per model, a folder ``OUT/<model>/`` holding

* ``results_<date>.json`` -- aggregated results; its ``"model_name"`` field is
  the model's name (the folder name is that name with ``/``, ``:`` and other
  characters a path cannot hold replaced by ``__``);
* ``samples_<task>_<date>.jsonl`` -- one JSON object per line and document,
  with ``"doc_id"`` (the document's position in the task's evaluation split),
  one field per metric (``"acc"``, ``"acc_norm"``, ``"exact_match"``, ...),
  and, from lm-eval 0.4.6 on, ``"filter"`` (e.g. ``"none"``,
  ``"strict-match"``) and ``"metrics"`` (the names of the metric fields).
  A task scored under several filters has one line per document and filter.

``<date>`` is the run's start, ``datetime.isoformat()`` with ``:`` replaced by
``-`` (``2024-05-01T12-34-56.789012``). :func:`read_lm_eval_samples` reads
every such folder under a path into a models x items DataFrame whose columns
are ``task/doc_id``.

Writing
-------
:func:`samples_argument` turns ``task/doc_id`` item labels into the mapping
lm-eval's ``--samples`` option takes (``{"task": [doc ids]}``; a JSON string
or the path of a JSON file; it cannot be combined with ``--limit``), and
:func:`write_samples_json` and :func:`write_items_csv` write the selected
items of a compression as that JSON file and as a plain CSV.
"""
from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.untrusted import Limits, current_limits, decode_json, iter_lines, read_json, use_limits

from ._itemtable import DUPLICATES, assemble, check_choice, item_label, match_tasks
from ._parallel import map_models
from .lm_eval_groups import ResultsFile, group_report

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SampleLog",
    "find_lm_eval_logs",
    "item_label",
    "parse_item_label",
    "read_lm_eval_samples",
    "read_sample_log",
    "samples_argument",
    "write_items_csv",
    "write_samples_json",
]

#: ``samples_<task>_<date>.jsonl``: the task is everything between the first and the last ``_`` (as lm-eval parses it).
SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl$")
#: Fields of a logged sample that are not metrics.
SAMPLE_FIELDS = frozenset({"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                           "doc_hash", "prompt_hash", "target_hash", "task_name", "task"})


@dataclass(frozen=True)
class SampleLog:
    """One ``samples_<task>_<date>.jsonl`` file.

    Attributes
    ----------
    path : Path
    model : str
        From the ``results_<date>.json`` beside it (``"model_name"``), else
        the name of its folder.
    task : str
    date : str
        The run's date id as in the file name.
    """

    path: Path
    model: str
    task: str
    date: str


def _results_files(folder: Path, cache: dict[Path, dict[str, ResultsFile]]) -> dict[str, ResultsFile]:
    """The results files of a folder by date id (read once; a ``results_*.json`` that is not one: an error)."""
    if folder not in cache:
        found: dict[str, ResultsFile] = {}
        for p in sorted(folder.glob("*.json")):
            m = re.match(r"^.*_(?P<date>[^_]+)\.json$", p.name)
            if m is None:
                continue
            try:
                found[m.group("date")] = read_json(p, ResultsFile, what="the lm-eval results file", allow_nan=True)
            except InvalidInputError:
                if p.name.startswith("results_"):
                    raise
        cache[folder] = found
    return cache[folder]


def _model_name(folder: Path, date: str, cache: dict[Path, dict[str, ResultsFile]]) -> str:
    """The model of a run: ``model_name`` of the results file of the same date beside the sample logs."""
    names = {d: r.model_name for d, r in _results_files(folder, cache).items()
             if isinstance(r.model_name, str) and r.model_name}
    if date in names:
        return names[date]
    if names:  # results of other runs only: the folder's name would make this log a model of its own
        raise InvalidInputError(
            f"path: {str(folder / f'samples_*_{date}.jsonl')!r} has no results_{date}.json beside it to name its "
            f"model (the results there are of the runs {', '.join(sorted(names))}, models "
            f"{', '.join(sorted(map(repr, set(names.values()))))}): restore that results file, or move the "
            "log into a folder of its own (named after its model)")
    return folder.name


def find_lm_eval_logs(path: str | Path) -> list[SampleLog]:
    """Every lm-eval sample log under ``path`` (searched recursively), sorted by model, task and date."""
    return _find_logs(path, {})


def _find_logs(path: str | Path, cache: dict[Path, dict[str, ResultsFile]]) -> list[SampleLog]:
    """:func:`find_lm_eval_logs`, the results files read kept in ``cache`` (folder -> date -> file)."""
    root = Path(path)
    if not root.exists():
        raise InvalidInputError(f"path: no such file or folder {str(root)!r}")
    files = [root] if root.is_file() else sorted(root.rglob("samples_*.jsonl"))
    logs = []
    for f in files:
        m = SAMPLES_FILE.match(f.name)
        if m is None:
            raise InvalidInputError(f"path: {str(f)!r} is not an lm-eval sample log (samples_<task>_<date>.jsonl)")
        logs.append(SampleLog(f, _model_name(f.parent, m.group("date"), cache), m.group("task"), m.group("date")))
    if not logs:
        raise InvalidInputError(
            f"path: no lm-eval sample logs (samples_<task>_<date>.jsonl) under {str(root)!r}; lm_eval writes them "
            "with --log_samples --output_path DIR"
        )
    return sorted(logs, key=lambda s: (s.model, s.task, s.date))


def _pick_logs(logs: list[SampleLog], duplicates: str) -> list[SampleLog]:
    """One log per (model, task): refuse two, or keep the latest."""
    by: dict[tuple[str, str], list[SampleLog]] = {}
    for s in logs:
        by.setdefault((s.model, s.task), []).append(s)
    out = []
    for (model, task), group in by.items():
        if len(group) > 1:
            names = ", ".join(repr(str(s.path)) for s in group)
            if duplicates == "error":
                raise InvalidInputError(
                    f"duplicates: {len(group)} logs of task {task!r} for model {model!r}: {names}; keep one, or pass "
                    "duplicates='latest' to use the newest run"
                )
            latest = max(s.date for s in group)
            group = [s for s in group if s.date == latest]
            if len(group) > 1:
                raise InvalidInputError(f"duplicates: {len(group)} logs of task {task!r} for model {model!r} share "
                                        f"the date {latest}: {', '.join(repr(str(s.path)) for s in group)}")
        out.append(group[0])
    return out


def _number(v: Any, metric: str, where: str) -> float:
    """A per-document metric value as a float (None and NaN: missing, returned as NaN)."""
    if v is None:
        return math.nan
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            raise InvalidInputError(f"metric: {metric!r} at {where} is a number too large for a float (a "
                                    f"{len(str(v))}-digit integer)") from None
    kind = type(v).__name__
    raise InvalidInputError(
        f"metric: {metric!r} at {where} is not one number per document (got a {kind}: {str(v)[:60]}); "
        "metrics that lm-eval aggregates over the whole corpus (bleu, perplexity, ...) have no per-item score"
    )


def _metrics_of(obj: Mapping[str, Any]) -> list[str]:
    names = obj.get("metrics")
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return list(names)
    return [k for k in obj if k not in SAMPLE_FIELDS]


@functools.lru_cache(maxsize=256)
def _line_type(metrics: tuple[str, ...]) -> Any:
    """A msgspec Struct decoding the fields of a logged document the reader uses, skipping the rest (the
    prompt, the responses): ``doc_id``, ``filter``, ``metrics`` and the metric fields ``metrics`` names."""
    fields: list[Any] = [("doc_id", Any, msgspec.UNSET), ("filter", Any, None), ("metrics", Any, None)]
    fields += [(f"m{i}", Any, msgspec.UNSET) for i in range(len(metrics))]
    rename = {f"m{i}": m for i, m in enumerate(metrics)}
    return msgspec.defstruct("LoggedDocument", fields, rename=rename)


def _as_dict(doc: Any, metrics: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if doc.doc_id is not msgspec.UNSET:
        out["doc_id"] = doc.doc_id
    out["filter"] = doc.filter
    if doc.metrics is not None:
        out["metrics"] = doc.metrics
    for i, m in enumerate(metrics):
        v = getattr(doc, f"m{i}")
        if v is not msgspec.UNSET:
            out[m] = v
    return out


def _read_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The logged documents of a sample log as small dicts (``doc_id``, ``filter``, ``metrics``, the metrics).

    Lines are read with the line cap of :func:`~benchsel.formulations.core.untrusted.current_limits`. The
    first line is decoded whole; when it names its metrics (lm-eval 0.4.6 on), the others are decoded into
    a Struct of the fields used only (several times faster; a line naming other metrics is decoded whole).
    """
    lines = [(n, raw) for n, raw in iter_lines(path, what="the lm-eval sample log")
             if raw and (raw[0] not in b" \t\r" or raw.strip())]  # blank lines skipped (no copy of the others)
    fast = _read_all(lines, path)
    if fast is not None:
        return fast
    rows = []
    known: tuple[str, ...] | None = None
    for lineno, raw in lines:
        assert raw is not None
        if not raw.strip():
            continue
        where = f"path: {path}:{lineno}"
        obj: Any = None
        if known is not None:
            doc = (decode_json(raw, _line_type(known), where=where, allow_nan=True)
                   if raw.lstrip().startswith(b"{") else None)
            if doc is not None and (not isinstance(doc.metrics, list) or set(map(str, doc.metrics)) <= set(known)):
                obj = _as_dict(doc, known)
        if obj is None:
            obj = decode_json(raw, where=where, allow_nan=True)
            if not isinstance(obj, dict):
                raise InvalidInputError(f"{where}: expected a JSON object (one logged document), got a "
                                        f"{type(obj).__name__}")
            names = obj.get("metrics")
            if known is None and isinstance(names, list) and all(isinstance(n, str) for n in names):
                known = tuple(names)
            obj = {k: v for k, v in obj.items() if k not in _SKIPPED}
        if "doc_id" not in obj:
            raise InvalidInputError(f"{where}: the logged document has no 'doc_id' (keys: "
                                    f"{', '.join(list(obj)[:12])})")
        rows.append((lineno, obj))
    if not rows:
        raise InvalidInputError(f"path: {str(path)!r} holds no logged document (an empty sample log)")
    return rows


def _read_all(lines: list[tuple[int, bytes]], path: Path) -> list[tuple[int, dict[str, Any]]] | None:
    """The fast way: every line after the first decoded in one call as a JSON array of the first line's
    Struct; None (then each line is decoded on its own, naming a bad one) when anything does not fit."""
    if len(lines) < 2:
        return None
    try:
        first = msgspec.json.decode(lines[0][1])
        names = first.get("metrics") if isinstance(first, dict) else None
        if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
            return None
        known = tuple(names)
        many: Any = list[_line_type(known)]  # type: ignore[misc]  # a Struct made at run time
        docs = msgspec.json.decode(b"[" + b",".join(raw for _, raw in lines[1:]) + b"]", type=many)
    except (msgspec.DecodeError, RecursionError):
        return None
    if "doc_id" not in first:
        return None
    rows = [(lines[0][0], {k: v for k, v in first.items() if k not in _SKIPPED})]
    for (n, _), doc in zip(lines[1:], docs):
        if doc.doc_id is msgspec.UNSET or (doc.metrics is not None and doc.metrics != names
                                           and not set(map(str, doc.metrics)) <= set(known)):
            return None
        rows.append((n, _as_dict(doc, known)))
    return rows


#: Large fields of a logged document the reader drops as soon as a line is decoded.
_SKIPPED = frozenset({"doc", "arguments", "resps", "filtered_resps", "target"})


def _choose(value: str | Mapping[str, str] | None, task: str, name: str, *, required: bool = True) -> str | None:
    """The ``name`` (metric or filter) for ``task``: ``value`` itself, or its entry for the task."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if task not in value:
            if not required:
                return None
            raise InvalidInputError(f"{name}: the mapping names no {name} for task {task!r} (it names "
                                    f"{', '.join(map(repr, value)) or 'none'})")
        return value[task]
    raise InvalidInputError(f"{name}: expected a {name} name or a mapping task -> {name}, got {value!r}")


def read_sample_log(log: SampleLog, metric: str | Mapping[str, str] | None = None,
                    filter: str | Mapping[str, str] | None = None) -> dict[Any, float]:
    """``{doc_id: score}`` of one sample log (see :func:`read_lm_eval_samples` for ``metric`` and ``filter``)."""
    return _read_log(log, metric, filter)[0]


def _read_log(log: SampleLog, metric: str | Mapping[str, str] | None,
              filter: str | Mapping[str, str] | None) -> tuple[dict[Any, float], str, str | None]:
    """:func:`read_sample_log` and the metric and filter read (None: the lines name no filter)."""
    rows = _read_lines(log.path)
    want_filter = _choose(filter, log.task, "filter", required=False)  # a task it does not name: its only filter
    filters = {obj.get("filter") for _, obj in rows}
    if want_filter is None:
        if len(filters) > 1:
            raise InvalidInputError(
                f"filter: {str(log.path)!r} scores task {log.task!r} under {len(filters)} filters "
                f"({', '.join(sorted(map(str, filters)))}); pass filter=NAME (or a mapping task -> filter)"
            )
    else:
        if filters == {None}:
            raise InvalidInputError(f"filter: the lines of {str(log.path)!r} name no filter (lm-eval before 0.4.6 "
                                    f"did not log it); drop filter={want_filter!r} for this log")
        if want_filter not in filters:
            raise InvalidInputError(f"filter: {str(log.path)!r} has no line with filter {want_filter!r}; filters "
                                    f"there: {', '.join(sorted(map(str, filters)))}")
        rows = [(n, obj) for n, obj in rows if obj.get("filter") == want_filter]
    present: dict[str, None] = {}
    for _, obj in rows:
        present.update(dict.fromkeys(_metrics_of(obj)))
    m = _choose(metric, log.task, "metric")
    if m is None:
        if len(present) != 1:
            raise InvalidInputError(
                f"metric: task {log.task!r} ({str(log.path)!r}) has {len(present)} metrics "
                f"({', '.join(present) or 'none'}); pass metric=NAME (or a mapping task -> metric)"
            )
        m = next(iter(present))
    elif m not in present:
        raise InvalidInputError(f"metric: no metric {m!r} in {str(log.path)!r} (task {log.task!r}); metrics "
                                f"there: {', '.join(present) or 'none'}")
    out: dict[Any, float] = {}
    first: dict[str, tuple[int, Any]] = {}
    for lineno, obj in rows:
        where = f"{log.path}:{lineno}"
        if m not in obj:
            raise InvalidInputError(f"metric: the document at {where} has no {m!r}; metrics there: "
                                    f"{', '.join(_metrics_of(obj)) or 'none'}")
        d = obj["doc_id"]
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            raise InvalidInputError(f"path: {where}: doc_id must be a whole number or a string, got {d!r}")
        if isinstance(d, str) and "/" in d:
            raise InvalidInputError(f"doc_id: {where}: doc_id {d!r} holds a '/', which item labels 'task/doc_id' "
                                    f"use to split the task from the document: it would read as task "
                                    f"{item_label(log.task, d).rpartition('/')[0]!r}")
        if str(d) in first:
            line, was = first[str(d)]
            raise InvalidInputError(f"path: {where}: doc_id {d!r} is logged twice (lines {line} and {lineno}"
                                    f"{', under one filter' if want_filter is not None else ''}"
                                    f"{f', first as {was!r}' if was != d else ''})")
        first[str(d)] = (lineno, d)
        v = _number(obj[m], m, where)
        if not math.isnan(v):
            out[d] = v
    used = want_filter if want_filter is not None else next(iter(filters))
    return out, m, None if used is None else str(used)


#: One model's logs read: ``{task: {doc_id: score}}`` and ``{task: (metric, filter)}``.
ModelScores = tuple[dict[str, dict[Any, float]], dict[str, tuple[str, str | None]]]


def _read_model(job: tuple[list[SampleLog], Any, Any, Limits]) -> ModelScores:
    """One model's logs read (a worker process's or Dask task's unit of work)."""
    logs, metric, filter, limits = job
    scores: dict[str, dict[Any, float]] = {}
    used: dict[str, tuple[str, str | None]] = {}
    with use_limits(limits):
        for s in logs:
            scores[s.task], m, f = _read_log(s, metric, filter)
            used[s.task] = (m, f)
    return scores, used


def read_lm_eval_samples(path: str | Path, metric: str | Mapping[str, str] | None = None, *,
                         tasks: Sequence[str] | None = None, filter: str | Mapping[str, str] | None = None,
                         missing: str = "error", duplicates: str = "error", jobs: int = 1,
                         scheduler: str | None = None, progress: bool = False,
                         min_items: int | None = None) -> pd.DataFrame:
    """Read lm-evaluation-harness sample logs into a models x items table.

    Parameters
    ----------
    path : str or Path
        An lm-eval ``--output_path`` folder (one subfolder per model), one
        model's folder, or one ``samples_<task>_<date>.jsonl`` file.
    metric : str or mapping, optional
        The metric field to read (``"acc"``, ``"acc_norm"``, ``"exact_match"``,
        ...), or a mapping task -> metric. By default the task's only metric;
        a task with several is an error listing them. Values are kept as
        floats (non-binary metrics stay as they are); booleans become 0/1.
    tasks : sequence of str, optional
        Only these tasks (shell patterns such as ``"mmlu_*"``).
    filter : str or mapping, optional
        lm-eval's filter (``"none"``, ``"strict-match"``, ...) for tasks
        logged under several, or a mapping task -> filter (a task it does
        not name must have one filter); by default a task must have one.
    missing : {"error", "drop-items", "drop-models"}
        A document or task logged for some models only: an error naming them
        (default), or drop the items, or the models, that are not complete.
        A ``null`` or NaN metric value counts as missing.
    duplicates : {"error", "latest"}
        Two logs of one task for one model (two runs): an error naming the
        files (default), or keep the latest by the date in its name.
    jobs : int
        Model folders read in parallel by this many processes (1: in this
        process); the table is the same.
    scheduler : str, optional
        A Dask scheduler address: the model folders are read on that cluster
        (same table).
    progress : bool
        A progress bar (bytes read) on stderr.
    min_items : int, optional
        Refuse, as soon as the first model is read, a table that cannot have
        this many items (``compress --k K`` passes ``K + 1``), instead of
        after every log was read. Not applied with ``missing="drop-models"``.

    Lines are read under the line cap of
    :func:`~benchsel.formulations.core.untrusted.current_limits`
    (``--max-line-mb``).

    Returns
    -------
    pandas.DataFrame, shape (models, items)
        Index: model names; columns: ``task/doc_id`` labels, tasks sorted by
        name and documents by id; float64 scores.
    """
    check_choice(duplicates, "duplicates", DUPLICATES)
    files: dict[Path, dict[str, ResultsFile]] = {}
    logs = _find_logs(path, files)
    keep = match_tasks((s.task for s in logs), tasks, f"under {str(path)!r}")
    logs = _pick_logs([s for s in logs if s.task in keep], duplicates)
    by_model: dict[str, list[SampleLog]] = {}
    for s in logs:
        by_model.setdefault(s.model, []).append(s)
    models = list(by_model)
    limits = current_limits()
    sizes = [sum(_size(s.path) for s in by_model[m]) for m in models]

    def early(i: int, result: ModelScores) -> None:
        n = sum(len(v) for v in result[0].values())
        if min_items is not None and missing != "drop-models" and n < min_items:
            raise InvalidInputError(
                f"k: expected 1 <= k < {n}, the number of items, got k = {min_items - 1} (model {models[i]!r} has "
                f"{n} scored items under {str(path)!r} and with missing={missing!r} the table has no more; refused "
                f"as soon as it was read, before the rest of the {len(models)} models)")

    read = map_models(_read_model, [(by_model[m], metric, filter, limits) for m in models], jobs=jobs,
                      scheduler=scheduler, progress=progress, sizes=sizes, desc="lm-eval logs", on_result=early)
    cells = {m: r[0] for m, r in zip(models, read)}
    df = assemble(cells, missing=missing, what=f"the lm-eval sample logs under {str(path)!r}")
    runs = {m: {s.task: (s.path.parent, s.date) for s in by_model[m]} for m in models}
    results = {(folder, d): r for folder, per in files.items() for d, r in per.items()}
    groups, report = group_report(runs, results, {m: r[1] for m, r in zip(models, read)},
                                  {m: {t: len(v) for t, v in cells[m].items()} for m in models})
    df.attrs["groups"] = groups
    df.attrs["group_report"] = report
    return df


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


# ------------------------------------------------------------------ writers
def parse_item_label(label: Any) -> tuple[str, int]:
    """``"task/doc_id"`` -> ``(task, doc_id)`` with ``doc_id`` a whole number ``>= 0``."""
    task, sep, doc = str(label).rpartition("/")
    if not sep or not task or not re.fullmatch(r"\d+", doc):
        raise InvalidInputError(
            f"item_labels: expected labels 'task/doc_id' with doc_id a whole number (as read_lm_eval_samples "
            f"makes them) to write lm-eval --samples, got {label!r}"
        )
    return task, int(doc)


def _labels_of(items: Any) -> list[Any]:
    labels = getattr(items, "item_labels", items)
    if labels is None:
        raise InvalidInputError("item_labels: the compression has no item labels (it was made from an array); "
                                "compress a DataFrame whose columns are 'task/doc_id' labels")
    if isinstance(labels, (str, bytes)):
        raise InvalidInputError(f"item_labels: expected a sequence of labels, got the string {labels!r}")
    return list(labels)


def samples_argument(items: Any) -> dict[str, list[int]]:
    """The value of lm-eval's ``--samples`` for the selected items: ``{"task": [doc ids]}``.

    Parameters
    ----------
    items : Compressed or sequence of str
        A compression (its ``item_labels``) or ``task/doc_id`` labels.

    Returns
    -------
    dict
        Tasks in first-seen order, each with its document ids in increasing
        order (lm-eval evaluates the listed documents in the order of its
        split and maps them back to this list position by position, so the
        list must be sorted for the logged ``doc_id`` to be right).
    """
    out: dict[str, list[int]] = {}
    for lab in _labels_of(items):
        task, doc = parse_item_label(lab)
        out.setdefault(task, []).append(doc)
    for task, docs in out.items():
        if len(set(docs)) != len(docs):
            raise InvalidInputError(f"item_labels: task {task!r} lists a document twice")
        docs.sort()
    return out


def write_samples_json(items: Any, path: str | Path) -> Path:
    """Write :func:`samples_argument` as a JSON file for ``lm_eval --samples FILE`` (not with ``--limit``)."""
    arg = samples_argument(items)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(arg, indent=1) + "\n", encoding="utf-8")
    return p


def write_items_csv(items: Any, path: str | Path) -> Path:
    """Write the selected items as a CSV with a header and one row per item: ``index,label``.

    ``index`` is the item's column in the matrix the compression was made
    from (when ``items`` is a compression; else its position), ``label`` its
    label (empty when the compression has none).
    """
    import csv

    idx = getattr(items, "items", None)
    labels = getattr(items, "item_labels", items)
    if idx is None:
        labels = _labels_of(items)
        idx = list(range(len(labels)))
    if labels is None:
        labels = [""] * len(idx)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["index", "label"])
        for i, lab in zip(idx, labels):
            w.writerow([int(i), lab])
    return p
