"""Saved compressions: ``Compressed.save(path)`` and :func:`load_compressed`, no pickle.

A saved compression is a folder holding two files:

* ``compression.json`` -- ``{"format": "benchsel-compression", "version": 1,
  "benchsel_version", "created", "k", "n_items", "items" (column indices in the
  source matrix, in the estimator's column order), "item_labels" (the
  selected items' labels or null), "seed", "source": {"n_models",
  "n_items", "model_labels", "item_labels", "fingerprint", "reader"},
  "selection": {"name", "method", "time_limit", "options", "seconds",
  "result"}, "estimator": {"name", "params"}, "tasks" (a suite's task names in
  the order of ``c.tasks``, or null), "groups" (a suite's groups:
  ``{"members": {group: [members]}, "weighting": {group: how}, "suite":
  "groups" | "aggregate", "origin": "lm-eval" | "given"}``, or null), "check": {"atol"}}``;
* ``arrays.npz`` -- ``source_scores`` (the source matrix, models x items,
  float64), ``source_predictions`` (the fitted estimator's estimates of the
  source models) and any array-valued estimator parameter
  (``param:<i>``, referred to from the JSON as ``{"array": "param:<i>"}``),
  read with ``allow_pickle=False``.

Estimator parameters are JSON values; a tuple is written ``{"tuple": [...]}``,
a mapping ``{"dict": {...}}`` and a non-finite number ``{"float": "inf"}``.

Loading re-creates the fitted estimator deterministically: it is refitted
on the stored source scores with the stored parameters (seeds included),
and its estimates of the source models must equal the stored ones (within
``check.atol``). The ``fingerprint`` (``sha256:`` of the source matrix's
shape and float64 bytes) is checked too. A file of another format version
is refused by name.

Both files come from outside when loaded: ``compression.json`` is
size-capped and every field is type- and range-checked (:class:`SavedMeta`),
``arrays.npz`` members are read by name (only ``source_scores``,
``source_predictions``, ``items`` and the arrays the parameters name) with
their sizes checked before decompressing, and ``digest`` (``sha256:`` of the
JSON without it and of the arrays read) refuses a save edited by hand
(swapped labels, another estimator setting or tolerance) by name.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
import numpy as np

from benchsel import __version__
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.result import Termination
from benchsel.formulations.core.untrusted import convert, read_json, read_npz_members
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.groups import hierarchy_differences, prune_groups

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ADDED_OPTIONS",
    "FORMAT",
    "VERSION",
    "SavedMeta",
    "SourceScores",
    "align_scores",
    "check_new_groups",
    "check_reader",
    "check_saved_tasks",
    "check_scale",
    "estimate_table",
    "explicit_params",
    "fingerprint_scores",
    "save_compressed",
    "save_digest",
    "saved_params",
    "source_scores",
]

FORMAT = "benchsel-compression"
VERSION = 1
META = "compression.json"
ARRAYS = "arrays.npz"
#: Largest difference allowed between the stored and the refitted estimates of the source models.
ATOL = 1e-6


def fingerprint_scores(Y: np.ndarray) -> str:
    """``"sha256:<hex>"`` of a score matrix's shape and float64 bytes."""
    A = np.ascontiguousarray(np.asarray(Y, dtype=np.float64))
    h = hashlib.sha256(f"{A.shape}".encode())
    h.update(A.tobytes())
    return "sha256:" + h.hexdigest()


# ------------------------------------------------------------------ schema of compression.json
Count = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]


class _Base(msgspec.Struct, forbid_unknown_fields=False):
    """Fields not named here are allowed (kept in the JSON, ignored by this version)."""


class SourceMeta(_Base):
    n_models: Positive
    n_items: Positive
    fingerprint: Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")]
    model_labels: list[str | int] | None = None
    item_labels: list[str | int] | None = None
    reader: dict[str, Any] = {}


class ResultMeta(_Base):
    method: str = ""
    formulation: str = ""
    termination: Termination = Termination.FEASIBLE
    feasible: bool = True
    objective: float | None = None
    bound: float | None = None
    gap: Annotated[float, msgspec.Meta(ge=0)] | None = None
    seed: int | None = None
    n_selected: Count | None = None
    build_seconds: Seconds | None = None
    solve_seconds: Seconds | None = None
    seconds: Seconds | None = None


class SelectionMeta(_Base):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    method: str = ""
    time_limit: Annotated[float, msgspec.Meta(gt=0)] | None = None
    options: dict[str, Any] = {}
    seconds: Seconds = 0.0
    result: ResultMeta = msgspec.field(default_factory=ResultMeta)


class EstimatorMeta(_Base):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    params: dict[str, Any] = {}


class CheckMeta(_Base):
    atol: Annotated[float, msgspec.Meta(ge=0)] = ATOL


class GroupsMeta(_Base):
    """A suite's groups (:class:`~benchsel.formulations.estimation.groups.GroupTree`)."""

    members: dict[str, Annotated[list[str], msgspec.Meta(min_length=1)]]
    weighting: dict[str, Literal["size", "plain", "equal-sizes", "unreported", "aggregate"]]
    suite: Literal["groups", "aggregate"]
    origin: Literal["lm-eval", "given"] = "lm-eval"


class SavedMeta(_Base):
    """Every field of ``compression.json`` with its type and range (checked on load)."""

    format: str
    version: int
    k: Positive
    n_items: Positive
    items: list[Count]
    source: SourceMeta
    selection: SelectionMeta
    estimator: EstimatorMeta
    benchsel_version: str = "?"
    created: str = ""
    item_labels: list[str | int] | None = None
    tasks: list[str] | None = None
    groups: GroupsMeta | None = None
    seed: Count = 0
    check: CheckMeta = msgspec.field(default_factory=CheckMeta)
    digest: Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None


def save_digest(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> str:
    """``"sha256:<hex>"`` of ``compression.json``'s content without ``digest`` and of the named arrays."""
    body = {k: v for k, v in meta.items() if k != "digest"}
    h = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"|{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return "sha256:" + h.hexdigest()


def _labels_json(labels: Any, name: str) -> list[Any] | None:
    """Labels as JSON values (str or int), or None."""
    if labels is None:
        return None
    out: list[Any] = []
    for x in np.asarray(labels, dtype=object).tolist():
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, bool) or not isinstance(x, (str, int)):
            raise InvalidInputError(f"{name}: only text or whole-number labels can be saved, got {x!r} "
                                    f"({type(x).__name__})")
        out.append(x)
    return out


@dataclass(frozen=True, eq=False)
class SourceScores:
    """What :func:`~benchsel.solvers.compression.compress` was given, kept for saving.

    Attributes
    ----------
    scores : ndarray, shape (S, N)
        The source matrix (float64).
    model_labels, item_labels : ndarray or None
        Row and column labels when it was a DataFrame.
    fingerprint : str
        :func:`fingerprint_scores` of ``scores`` when compressed.
    selection, estimator : str
    seed : int
    time_limit : float or None
    selection_options : dict
    reader : dict
        How the scores were read (``df.attrs["reader"]`` of
        :func:`benchsel.instances.scorefiles.load_scores`), if known.
    """

    scores: np.ndarray
    model_labels: np.ndarray | None
    item_labels: np.ndarray | None
    fingerprint: str
    selection: str
    estimator: str
    seed: int
    time_limit: float | None
    selection_options: dict[str, Any] = field(default_factory=dict)
    reader: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def score_range(self) -> tuple[float, float, float] | None:
        """``(min, max, mean)`` of the source scores, computed once (None when empty or not all finite)."""
        src = np.asarray(self.scores, dtype=float)
        if not src.size or not np.isfinite(src).all():
            return None
        return float(src.min()), float(src.max()), float(src.mean())


def source_scores(Y: Any, A: np.ndarray, *, selection: str, estimator: str, seed: int, time_limit: float | None,
                  selection_options: Mapping[str, Any] | None = None) -> SourceScores:
    """The :class:`SourceScores` of a :func:`compress` call (``Y`` as given, ``A`` its checked float array)."""
    frame = hasattr(Y, "columns") and hasattr(Y, "index")
    attrs = getattr(Y, "attrs", None)
    reader = dict(attrs.get("reader") or {}) if isinstance(attrs, dict) else {}
    return SourceScores(
        scores=A, model_labels=np.asarray(Y.index) if frame else None,
        item_labels=np.asarray(Y.columns) if frame else None, fingerprint=fingerprint_scores(A),
        selection=selection, estimator=estimator, seed=int(seed), time_limit=time_limit,
        selection_options=dict(selection_options or {}), reader=reader,
    )


# ------------------------------------------------------------------ parameters
def _encode(v: Any, name: str, arrays: dict[str, np.ndarray]) -> Any:
    """An estimator parameter as JSON: ``{"tuple": [...]}``, ``{"array": key}``, lists, dicts, scalars."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            return {"float": repr(v)}
        return v
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            raise InvalidInputError(f"estimator: parameter {name} is an object array, which cannot be saved")
        key = f"param:{len(arrays)}"
        arrays[key] = v
        return {"array": key}
    if isinstance(v, tuple):
        return {"tuple": [_encode(x, name, arrays) for x in v]}
    if isinstance(v, list):
        return [_encode(x, name, arrays) for x in v]
    if isinstance(v, Mapping):
        if not all(isinstance(k, str) for k in v):
            raise InvalidInputError(f"estimator: parameter {name} has non-text keys, which cannot be saved")
        return {"dict": {k: _encode(x, f"{name}[{k!r}]", arrays) for k, x in v.items()}}
    raise InvalidInputError(f"estimator: parameter {name} of type {type(v).__name__} cannot be saved")


def _decode(v: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    if isinstance(v, list):
        return [_decode(x, arrays) for x in v]
    if isinstance(v, dict):
        if set(v) == {"tuple"}:
            return tuple(_decode(x, arrays) for x in v["tuple"])
        if set(v) == {"dict"}:
            return {k: _decode(x, arrays) for k, x in v["dict"].items()}
        if set(v) == {"array"}:
            return np.asarray(arrays[v["array"]])
        if set(v) == {"float"}:
            return float(v["float"])
        raise ValueError(f"parameter value {v!r}")
    return v


# ------------------------------------------------------------------ save
#: Estimator options added after saves of this format version were first written, with the behaviour those
#: saves had: a save whose parameters lack one loads with this value, so its intervals stay as they were saved.
ADDED_OPTIONS: dict[str, dict[str, Any]] = {"auto": {"sure": False}, "model-assisted": {"sure": False}}


def explicit_params(est: Any) -> dict[str, Any]:
    """``est.get_params()`` with a suite's inner estimator's added options (:data:`ADDED_OPTIONS`) written out,
    so that a later load tells this save from an older one."""
    params = dict(est.get_params())
    inner = str(params.get("estimator"))
    if est.name == "suite" and inner in ADDED_OPTIONS:
        opts = dict(params.get("estimator_options") or {})
        resolved = get_estimator(inner, **opts).get_params()
        params["estimator_options"] = {**{k: resolved[k] for k in ADDED_OPTIONS[inner]}, **opts}
    return params


def saved_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A saved estimator's parameters with the options the save lacks set as its version had them
    (:data:`ADDED_OPTIONS`; a suite's inner estimator's as well)."""
    out = {**ADDED_OPTIONS.get(name, {}), **params}
    if name == "suite":
        inner = str(out.get("estimator", "auto"))
        if inner in ADDED_OPTIONS:
            out["estimator_options"] = {**ADDED_OPTIONS[inner], **dict(out.get("estimator_options") or {})}
    return out


def save_compressed(c: Any, path: str | Path) -> Path:
    """Save a compression made by :func:`~benchsel.solvers.compression.compress` into the folder ``path``.

    Parameters
    ----------
    c : Compressed
        Made by ``compress`` (it keeps the source scores needed to refit).
    path : str or Path
        Folder to write ``compression.json`` and ``arrays.npz`` into
        (created; files of an earlier save there are replaced).

    Returns
    -------
    Path
        The folder.
    """

    src = c.source
    if not isinstance(src, SourceScores):
        raise InvalidInputError("c: this compression does not carry its source scores (make it with "
                                "benchsel.compress, which keeps them for saving)")
    if fingerprint_scores(src.scores) != src.fingerprint:
        raise InvalidInputError("c: the source matrix given to compress was changed in place since; compress again")
    est = c.estimator
    arrays: dict[str, np.ndarray] = {}
    spec = {k: _encode(v, repr(k), arrays) for k, v in explicit_params(est).items()}
    pred = np.asarray(est.predict(src.scores[:, c.items]), dtype=float)
    res = c.selection.result
    result = {k: v for k, v in res.to_dict().items() if not k.startswith("extra.") and k != "selection"}
    for k, v in list(result.items()):
        if isinstance(v, float) and not math.isfinite(v):
            result[k] = None
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "benchsel_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "k": int(c.items.size),
        "n_items": int(c.n_items),
        "items": [int(i) for i in c.items],
        "item_labels": _labels_json(c.item_labels, "item_labels"),
        "seed": src.seed,
        "source": {
            "n_models": int(src.scores.shape[0]),
            "n_items": int(src.scores.shape[1]),
            "model_labels": _labels_json(src.model_labels, "model labels"),
            "item_labels": _labels_json(src.item_labels, "item labels"),
            "fingerprint": src.fingerprint,
            "reader": src.reader,
        },
        "selection": {"name": c.selection.selection, "method": res.method, "time_limit": src.time_limit,
                      "options": src.selection_options, "seconds": float(c.selection.seconds), "result": result},
        "estimator": {"name": est.name, "params": spec},
        "tasks": None if getattr(c, "tasks", None) is None else [str(t) for t in c.tasks],
        "groups": None if getattr(c, "group_tree", None) is None else c.group_tree.to_json(),
        "check": {"atol": ATOL},
    }
    payload: dict[str, Any] = {"source_scores": src.scores.astype(np.float64), "source_predictions": pred,
                               "items": np.asarray(c.items, dtype=np.int64), **arrays}
    try:
        meta["digest"] = save_digest(meta, payload)
        text = json.dumps(meta, indent=1, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"c: cannot save this compression as JSON ({e})") from None
    out = Path(path)
    check_out_folder(out, "path")
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / ARRAYS, **payload)
    (out / META).write_text(text + "\n", encoding="utf-8")
    return out


# ------------------------------------------------------------------ load
def check_out_folder(out: Path, name: str) -> None:
    """Refuse, before any work, a save folder that cannot be written: a file, a folder whose ``compression.json``
    or ``arrays.npz`` is a folder, a symlink loop, or no write permission on it or its nearest existing parent."""
    try:
        if out.is_symlink():
            out.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        raise InvalidInputError(f"{name}: {str(out)!r} is a broken or looping symbolic link ({e})") from None
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"{name}: {str(out)!r} is a file; a saved compression is a folder")
    for f in (META, ARRAYS):
        if (out / f).is_dir() or ((out / f).is_symlink() and not (out / f).exists()):
            raise InvalidInputError(f"{name}: {str(out / f)!r} is a folder or a broken link; a saved compression "
                                    f"writes a file there (remove it, or choose another folder)")
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise InvalidInputError(f"{name}: {str(probe)!r} is not a folder, so {str(out)!r} cannot be created")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{name}: cannot write into {str(probe)!r} (permission denied)")


def _read_meta(folder: Path) -> dict[str, Any]:
    """``compression.json`` of a saved compression, every field type- and range-checked (:class:`SavedMeta`)."""
    p = folder / META
    if not folder.is_dir():
        raise InvalidInputError(f"path: no saved compression at {str(folder)!r} (expected a folder with {META} and "
                                f"{ARRAYS})")
    if not p.is_file():
        raise InvalidInputError(f"path: {str(folder)!r} is not a saved compression: it has no {META}")
    try:
        meta = read_json(p, what="the saved compression", schema=SavedMeta)
    except InvalidInputError as e:
        raise type(e)(f"{e} (cannot read it)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise InvalidInputError(f"path: {str(p)!r} is not a saved benchsel compression (format {got!r}, expected "
                                f"{FORMAT!r})")
    version = meta.get("version")
    if version != VERSION:
        newer = isinstance(version, int) and version > VERSION
        raise InvalidInputError(
            f"path: {str(p)!r} is a saved compression of format version {version!r} (written by benchsel "
            f"{str(meta.get('benchsel_version', '?'))[:40]}); this benchsel reads version {VERSION} only"
            + ("; upgrade benchsel to load it" if newer else "")
        )
    m = convert(meta, SavedMeta, where=f"path: {str(p)!r}")
    bad = _inconsistent(m)
    if bad:
        raise InvalidInputError(f"path: {str(p)!r}: {bad} (a damaged or hand-edited save)")
    return meta


def _inconsistent(m: SavedMeta) -> str:
    """What disagrees inside a checked ``compression.json``, or ``""``."""
    if len(m.items) != m.k or len(set(m.items)) != m.k:
        return f"field $.items: expected {m.k} distinct item indices (k), got {len(m.items)}"
    if max(m.items) >= m.n_items:
        return f"field $.items: expected indices below n_items={m.n_items}, got {max(m.items)}"
    if m.source.n_items != m.n_items:
        return f"field $.source.n_items: expected n_items={m.n_items}, got {m.source.n_items}"
    for name, labels, n in (("item_labels", m.item_labels, m.k), ("source.item_labels", m.source.item_labels,
                                                                   m.n_items),
                            ("source.model_labels", m.source.model_labels, m.source.n_models)):
        if labels is not None and len(labels) != n:
            return f"field $.{name}: expected {n} labels, got {len(labels)}"
    if m.groups is not None and set(m.groups.weighting) != set(m.groups.members):
        return "field $.groups.weighting: expected a weighting for each group of $.groups.members"
    return ""


def _array_names(v: Any, out: list[str]) -> list[str]:
    """The ``.npz`` members an estimator parameter refers to (``{"array": key}``), in order."""
    if isinstance(v, list):
        for x in v:
            _array_names(x, out)
    elif isinstance(v, dict):
        if set(v) == {"array"} and isinstance(v["array"], str):
            out.append(v["array"])
        else:
            for x in v.values():
                _array_names(x, out)
    return out


def read_saved(folder: Path, check: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The checked ``compression.json`` and the arrays it uses, digest compared (required with ``check``).

    Raises
    ------
    InvalidInputError
        A missing or damaged file, a field of the wrong type or range, an
        array above its cap, or a ``digest`` that does not match (the save
        was edited after it was written).
    """
    meta = _read_meta(folder)
    try:
        names = _array_names(meta["estimator"].get("params", {}), [])
    except RecursionError:
        raise InvalidInputError(f"path: {str(folder / META)!r}: field $.estimator.params is nested too "
                                "deeply") from None
    arrays = read_npz_members(folder / ARRAYS, ["source_scores", "source_predictions", "items", *names],
                              what="the saved compression's arrays")
    digest = meta.get("digest")
    if digest is None and check:
        raise InvalidInputError(f"path: {str(folder / META)!r}: field $.digest is missing (a save by an older benchsel,"
                                " or edited by hand); pass check=False to load it unchecked")
    if digest is not None and save_digest(meta, arrays) != digest:
        raise InvalidInputError(
            f"path: {str(folder)!r}: field $.digest: the saved compression does not match its digest (expected "
            f"{str(digest)[:20]}..., got {save_digest(meta, arrays)[:20]}...): {META} or {ARRAYS} was edited after "
            "it was saved (labels, estimator parameters, tolerance, arrays); save the compression again"
        )
    return meta, arrays


def check_saved_tasks(meta: Mapping[str, Any], est: Any, where: str) -> None:
    """The saved suite's task and group names (``meta["tasks"]``, ``meta["groups"]``) are those of the refitted
    estimator (a named error)."""
    saved = meta.get("tasks")
    got = getattr(est, "tasks_", None)
    if (saved is not None or got is not None) and (saved is None or got is None or list(saved) != list(got)):
        raise InvalidInputError(f"path: {where} says the tasks are {saved!r} but its estimator's parameters give "
                                f"{got!r} (damaged save)")
    groups = meta.get("groups")
    saved_groups = list(groups["members"]) if isinstance(groups, Mapping) else []
    got_groups = list(getattr(est, "groups_", None) or [])
    if saved_groups != got_groups:
        raise InvalidInputError(f"path: {where} says the groups are {saved_groups!r} but its estimator's parameters "
                                f"give {got_groups!r} (damaged save)")


def _num(v: Any) -> float:
    return math.nan if v is None else float(v)


def _arr(v: Any) -> np.ndarray | None:
    return None if v is None else np.asarray(v, dtype=object)


# ------------------------------------------------------------------ new scores
def align_scores(c: Any, scores: Any, name: str = "scores") -> tuple[np.ndarray, list[Any]]:
    """New models' scores on the compression's items, shape (models, k), and the models' labels.

    Parameters
    ----------
    c : Compressed
    scores : pandas.DataFrame or array_like
        A DataFrame is matched by item label when the compression has
        labels: its columns must include every selected item's label (other
        columns, e.g. the rest of the benchmark, are ignored). An array (or a
        DataFrame when the compression has no labels) must have ``k`` columns
        (the selected items in the order of ``c.items``) or ``n_items`` (the
        full benchmark).
    """
    frame = hasattr(scores, "columns") and hasattr(scores, "index")
    labels = c.item_labels
    k, n = int(c.items.size), int(c.n_items)
    if frame:
        check_reader(c, getattr(scores, "attrs", None), name)
        check_new_groups(c, getattr(scores, "attrs", None), list(scores.index), name)
    if frame and labels is not None:
        cols = list(scores.columns)
        have = set(cols)
        want = [x.item() if isinstance(x, np.generic) else x for x in np.asarray(labels, dtype=object).tolist()]
        lack = [lab for lab in want if lab not in have]
        if lack and not [lab for lab in want if lab not in set(scores.index)]:
            raise InvalidInputError(
                f"{name}: the compression's {k} items label the new scores' rows, not their columns: the table looks "
                f"transposed (items as rows, models as columns); transpose it (scores.T, or write one row per "
                "model) and read it again")
        if lack:
            raise InvalidInputError(
                f"{name}: {len(lack)} of the {k} items of the compression are not among the new scores' "
                f"{len(cols)} columns (missing e.g. {', '.join(map(repr, lack[:4]))}; the new scores have e.g. "
                f"{', '.join(map(repr, cols[:4]))}): score the new models on exactly the saved items"
            )
        X = scores[want].to_numpy(dtype=float)
        models = list(scores.index)
    else:
        X = np.asarray(scores.to_numpy() if frame else scores, dtype=float)
        if X.ndim == 1:
            X = X[None]
        models = list(scores.index) if frame else list(range(X.shape[0]))
        if X.ndim != 2 or X.shape[1] not in (k, n):
            raise InvalidInputError(f"{name}: expected one row per new model and {k} columns (the selected items, "
                                    f"in the order of c.items) or {n} (the full benchmark), got shape {X.shape}")
        if X.shape[1] == n and n != k:
            X = X[:, c.items]
    bad = ~np.isfinite(X)
    if bad.any():
        r, j = (int(v[0]) for v in bad.nonzero())
        item = labels[j] if labels is not None else int(c.items[j])
        raise InvalidInputError(f"{name}: {int(bad.sum())} scores on the selected items are missing or not finite "
                                f"(first: model {models[r]!r}, item {item!r}); every new model needs all {k}")
    check_scale(c, X, name)
    return X, models


#: Options of ``df.attrs["reader"]`` that decide which number a score is.
_READER_OPTIONS = ("metric", "filter", "split")


def check_reader(c: Any, attrs: Any, name: str = "scores") -> None:
    """New scores read with another metric, filter or split than the compression's sources: a named error.

    ``attrs`` is the new scores' ``DataFrame.attrs`` (``attrs["reader"]`` as
    :func:`~benchsel.instances.scorefiles.load_scores` records it); an option
    either side left unset (a file's only metric) is not compared.
    """
    new = attrs.get("reader") if isinstance(attrs, Mapping) else None
    old = c.source.reader if c.source is not None else None
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return
    for opt in _READER_OPTIONS:
        a, b = old.get(opt), new.get(opt)
        if a is not None and b is not None and a != b:
            flag = (f"--{opt} {a}" if isinstance(a, str) else
                    " ".join(f"--{opt} {t}={v}" for t, v in a.items()) if isinstance(a, Mapping) else f"--{opt}")
            raise InvalidInputError(
                f"{opt}: the new scores were read with {opt} {b!r}, the compression's sources with {opt} {a!r}; "
                f"the estimates would mix two kinds of score: read the new scores with {flag} ({opt}={a!r}) or "
                f"compress again with {opt} {b!r}")


def check_new_groups(c: Any, attrs: Any, models: Any = None, name: str = "scores") -> None:
    """New models whose lm-eval results state other groups than the compression's: a named error.

    Parameters
    ----------
    c : Compressed
        A compression; only groups read from lm-eval logs (``c.group_tree.origin == "lm-eval"``) are
        compared, a compression without groups or with the user's own (``groups=``) takes any new scores.
    attrs : mapping
        The new scores' ``DataFrame.attrs``: ``attrs["group_report"]["hierarchies"]`` (each model's own
        groups, as :func:`~benchsel.instances.evallogs.read_lm_eval_samples` records them). Scores without
        it (a table, leaderboard or HELM logs, lm-eval logs without results files) are not compared.
    models : sequence, optional
        The new scores' models (rows); models the table does not hold (``missing="drop-models"``) are
        not compared. Default: every model of the report.
    name : str
        The argument named in the error.

    A model whose results put none of the compression's tasks in a group (lm-eval run on the tasks by
    name, ``--tasks mmlu_anatomy,...``) states no hierarchy and is not compared: its group rows are the
    compression's groups. Otherwise every saved group must be stated with the same members (in any
    order), and no other group over the compression's tasks may be
    (:func:`~benchsel.formulations.estimation.groups.hierarchy_differences`).
    """
    tree = getattr(c, "group_tree", None)
    report = attrs.get("group_report") if isinstance(attrs, Mapping) else None
    stated = report.get("hierarchies") if isinstance(report, Mapping) else None
    if tree is None or tree.origin != "lm-eval" or not isinstance(stated, Mapping) or c.tasks is None:
        return
    rows = None if models is None else {str(m) for m in models}
    tasks = list(c.tasks)
    bad: dict[str, list[str]] = {}
    for model, groups in stated.items():
        if (rows is not None and str(model) not in rows) or not isinstance(groups, Mapping):
            continue
        if not prune_groups(groups, tasks):  # no group over the compression's tasks: nothing stated
            continue
        diff = hierarchy_differences(tree.members, groups, tasks)
        if diff:
            bad[str(model)] = diff
    if not bad:
        return
    model, diff = next(iter(bad.items()))
    more = f" ({len(bad) - 1} other new model(s) differ too)" if len(bad) > 1 else ""
    raise InvalidInputError(
        f"{name}: the lm-eval groups in the results of model {model!r} differ from the compression's{more}: "
        f"{'; '.join(diff[:3])}{f'; and {len(diff) - 3} more' if len(diff) > 3 else ''}. The compression's "
        f"group rows (and, unless compressed with --aggregate, its suite weights) follow its source logs' "
        f"groups; estimate with logs of the same lm-eval task configuration, or compress again with --no-groups "
        f"(groups=False: no group rows, the suite weighted by --aggregate, default macro) or --pool "
        f"(tasks=False); --aggregate alone keeps the groups")


def check_scale(c: Any, X: np.ndarray, name: str = "scores") -> None:
    """New scores on another scale than the sources' (percents against fractions, either way): a named error.

    Sources inside [0, 1] and new scores above 1 (up to 100), or sources inside [0, 100] with a mean above 5
    and new scores (not all 0) inside [0, 1].
    """
    stats = None if c.source is None else c.source.score_range
    if stats is None or not X.size or not np.isfinite(X).all():
        return
    lo, hi, mean = stats
    new_lo, new_hi = float(X.min()), float(X.max())
    if lo < 0 or new_lo < 0:
        return
    if hi <= 1 < new_hi <= 100:
        raise InvalidInputError(
            f"{name}: range mismatch: the new scores lie in [{new_lo:g}, {new_hi:g}] (percents?) but the "
            f"compression's source scores in [{lo:g}, {hi:g}] (fractions of 1); put both on one scale (divide the "
            "new scores by 100)")
    if hi <= 100 and mean > 5 and 0 < new_hi <= 1:
        raise InvalidInputError(
            f"{name}: range mismatch: the new scores lie in [{new_lo:g}, {new_hi:g}] (fractions of 1?) but the "
            f"compression's source scores in [{lo:g}, {hi:g}] (percents, mean {mean:.3g}); put "
            "both on one scale (multiply the new scores by 100)")


def estimate_table(c: Any, scores: Any, alpha: float = 0.1) -> pd.DataFrame:
    """Each new model's estimated full-benchmark score, its ``1 - alpha`` interval and which estimate it got.

    Returns
    -------
    pandas.DataFrame
        Index: model; columns ``estimate``, ``low``, ``high``, ``interval`` (what the interval is) and
        ``method`` (for the default estimator ``"stacked"`` inside the sources' range,
        ``"model-assisted"`` outside it).
    """
    import pandas as pd

    X, models = align_scores(c, scores)
    est = c.estimator
    pred, lo, hi = est.predict_with_interval(X, alpha=alpha)
    route = est.route(X)
    note = f"{100 * (1 - alpha):g}% ({est.name})"
    return pd.DataFrame({"estimate": pred, "low": np.asarray(lo, dtype=float), "high": np.asarray(hi, dtype=float),
                         "interval": note, "method": np.asarray(route, dtype=object)},
                        index=pd.Index(models, name="model"))
