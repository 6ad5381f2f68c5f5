"""MPS export of the neutral model, with a JSON map of names back to items.

The file is free-format MPS, always a **minimisation** (no ``OBJSENSE``
section, which readers disagree on), with short safe names: columns ``C0``,
``C1``, ..., rows ``R0``, ``R1``, ..., objective ``OBJ``. Every integer column
gets explicit bounds (readers disagree on their defaults). A non-zero objective
constant is written as a column ``CONST`` fixed at 1. A quadratic objective
(``LinearModel.Q``) is written as a ``QUADOBJ`` section: the upper triangle
of ``Q``, one line ``Ci Cj Q[i,j]`` per entry with ``i <= j``, meaning
``c @ x + 1/2 x @ Q @ x`` (the usual convention of MPS readers that take a
quadratic objective); readers that take none cannot read such a file. Output is deterministic: the same model gives the
same bytes.

The JSON side file ``<path>.json`` maps names back: blocks with their first
name and shape, the selection block's item of each column, the objective sign
(``formulation objective = sign * MPS objective``), the statement (``model``,
``meta``) and the options it was built with (``model_options``; ``{}`` in maps
written before that field, read with ``info.get("model_options", {})``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import numpy as np
import scipy.sparse as sp

from .errors import InvalidInputError
from .model import LinearModel
from .untrusted import convert, read_json

__all__ = ["MAP_FORMAT", "NameMap", "read_name_map", "selection_from_values", "write_mps"]

MAP_FORMAT = "benchsel-mps-map"


def _num(v: float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


def _fmt(vals: np.ndarray) -> list[str]:
    return [_num(v) for v in vals.tolist()]


def write_mps(model: LinearModel, path: str | Path, *, formulation: Any = None,
              model_options: Mapping[str, Any] | None = None) -> tuple[Path, Path]:
    """Write ``model`` as MPS at ``path`` and its name map at ``path + '.json'``.

    Parameters
    ----------
    model : LinearModel
        A static model (no lazy rows).
    path : str or Path
        Output file; parent folders are created.
    formulation : Formulation, optional
        Recorded in the map (class name and parameters that are scalars).
    model_options : mapping, optional
        The options ``model`` was built with (``f.linear_model(**model_options)``), recorded in the map
        as ``model_options`` (values that are not JSON scalars as their ``repr``).

    Returns
    -------
    (mps_path, json_path)
    """
    if model.lazy is not None:
        raise InvalidInputError("model: MPS holds static models; this one generates rows on demand (lazy rows)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cname = np.array([f"C{j}" for j in range(model.n_cols)], dtype=object)
    lb, ub = model.row_lb, model.row_ub
    eq = lb == ub
    g = np.isfinite(lb) & ~eq
    types = np.where(eq, "E", np.where(g, "G", "L"))
    lines = [f"NAME {model.name}", "ROWS", " N  OBJ"]
    lines += [f" {t}  R{i}" for i, t in enumerate(types.tolist())]
    lines += _columns(model, cname)
    # right-hand sides and ranges
    rhs = np.where(eq | g, lb, ub)
    nzr = np.flatnonzero(rhs != 0)
    lines.append("RHS")
    lines += [f"    RHS  R{i}  {v}" for i, v in zip(nzr.tolist(), _fmt(rhs[nzr]))]
    ranged = np.flatnonzero(g & np.isfinite(ub))
    if ranged.size:
        lines.append("RANGES")
        lines += [f"    RNG  R{i}  {v}" for i, v in zip(ranged.tolist(), _fmt(ub[ranged] - lb[ranged]))]
    lines += _bounds(model, cname)
    if model.Q is not None and model.Q.nnz:
        lines.append("QUADOBJ")
        U = sp.triu(model.Q, format="coo")
        order = np.lexsort((U.col, U.row))
        r, c, v = U.row[order], U.col[order], U.data[order]
        lines += [f"    {a}  {b}  {val}" for a, b, val in zip(cname[r].tolist(), cname[c].tolist(), _fmt(v))]
    lines.append("ENDATA")
    path.write_text("\n".join(lines) + "\n")
    jpath = path.with_name(path.name + ".json")
    jpath.write_text(json.dumps(_name_map(model, formulation, model_options), indent=1, sort_keys=True) + "\n")
    return path, jpath


def _columns(model: LinearModel, cname: np.ndarray) -> list[str]:
    """The COLUMNS section: entries ordered by column (objective first, then rows), integer markers around
    runs of integer columns, an explicit zero entry for an empty column, the objective constant."""
    n = model.n_cols
    rname = np.array(["OBJ"] + [f"R{i}" for i in range(model.n_rows)], dtype=object)
    A = model.A.tocsc()
    A.sort_indices()
    has_obj = model.c != 0
    counts = np.diff(A.indptr) + has_obj
    col_of = np.repeat(np.arange(n), counts)
    row_idx = np.empty(col_of.size, dtype=np.int64)
    vals = np.empty(col_of.size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    obj_pos = starts[has_obj]
    row_idx[obj_pos] = 0
    vals[obj_pos] = model.c[has_obj]
    mask = np.ones(col_of.size, bool)
    mask[obj_pos] = False
    row_idx[mask] = A.indices + 1
    vals[mask] = A.data
    entry = [f"    {c}  {r}  {v}" for c, r, v in zip(cname[col_of].tolist(), rname[row_idx].tolist(), _fmt(vals))]
    integ = model.integrality
    out = ["COLUMNS"]
    pos = 0
    in_int = False
    marker = 0
    for j in range(n):
        if integ[j] != in_int:
            out.append(f"    M{marker}  'MARKER'  '{'INTORG' if integ[j] else 'INTEND'}'")
            marker += 1
            in_int = bool(integ[j])
        cnt = int(counts[j])
        if cnt == 0:
            out.append(f"    {cname[j]}  OBJ  0")
        else:
            out.extend(entry[pos:pos + cnt])
        pos += cnt
    if in_int:
        out.append(f"    M{marker}  'MARKER'  'INTEND'")
    if model.c0 != 0:
        out.append(f"    CONST  OBJ  {_num(model.c0)}")
    return out


def _bounds(model: LinearModel, cname: np.ndarray) -> list[str]:
    """The BOUNDS section (integer columns get explicit lower and upper bounds; the objective constant's
    column is fixed at 1)."""
    out = ["BOUNDS"]
    clb, cub, integ = model.col_lb, model.col_ub, model.integrality
    for j in range(model.n_cols):
        lo, hi, nm = clb[j], cub[j], cname[j]
        if lo == hi:
            out.append(f" FX BND  {nm}  {_num(lo)}")
            continue
        if np.isneginf(lo) and np.isposinf(hi):
            out.append(f" FR BND  {nm}")
            continue
        if np.isneginf(lo):
            out.append(f" MI BND  {nm}")
        elif lo != 0 or integ[j]:
            out.append(f" LO BND  {nm}  {_num(lo)}")
        if np.isfinite(hi):
            out.append(f" UP BND  {nm}  {_num(hi)}")
        elif integ[j]:
            out.append(f" PL BND  {nm}")
    if model.c0 != 0:
        out.append(" FX BND  CONST  1")
    return out


def _name_map(model: LinearModel, formulation: Any, model_options: Mapping[str, Any] | None) -> dict[str, Any]:
    def blocks(bs, prefix):
        return [{"name": b.name, "first": f"{prefix}{b.start}", "start": b.start, "count": b.size,
                 "shape": list(b.shape)} for b in bs]

    sel = model.col_block(model.selection_block)
    info: dict[str, Any] = {
        "format": MAP_FORMAT,
        "version": 1,
        "model": model.name,
        "sense": "min",
        "objective_sign": model.objective_sign,
        "objective_constant": model.c0,
        "constant_column": "CONST" if model.c0 != 0 else None,
        "quadratic": bool(model.Q is not None and model.Q.nnz),
        "integer_columns": int(model.integrality.sum()),
        "columns": blocks(model.col_blocks, "C"),
        "rows": blocks(model.row_blocks, "R"),
        "selection": {"block": sel.name, "first_column": sel.start, "items": model.selection_items.tolist()},
        "meta": {k: v for k, v in model.meta.items() if isinstance(v, (int, float, str, bool))},
        "model_options": {k: v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)
                          for k, v in (model_options or {}).items()},
    }
    if formulation is not None:
        info["formulation"] = type(formulation).__name__
        params = {}
        for k, v in formulation.get_params().items():
            if isinstance(v, (int, float, str, bool)) or v is None:
                params[k] = v
        info["formulation_params"] = params
    return info


class _Block(msgspec.Struct):
    name: str
    first: str = ""
    start: Annotated[int, msgspec.Meta(ge=0)] = 0
    count: Annotated[int, msgspec.Meta(ge=0)] = 0
    shape: list[Annotated[int, msgspec.Meta(ge=0)]] = []


class _SelectionMap(msgspec.Struct):
    block: str
    first_column: Annotated[int, msgspec.Meta(ge=0)]
    items: list[Annotated[int, msgspec.Meta(ge=0)]]


class NameMap(msgspec.Struct):
    """The fields of a ``.mps.json`` name map with their types (checked when it is read)."""

    format: str
    selection: _SelectionMap
    version: int = 1
    model: str = ""
    sense: Literal["min", "max"] = "min"
    objective_sign: Literal[-1, 1] = 1
    objective_constant: float = 0.0
    constant_column: str | None = None
    quadratic: bool = False
    integer_columns: Annotated[int, msgspec.Meta(ge=0)] = 0
    columns: list[_Block] = []
    rows: list[_Block] = []
    meta: dict[str, str | int | float | bool] = {}
    model_options: dict[str, str | int | float | bool | None] = {}
    formulation: str = ""
    formulation_params: dict[str, str | int | float | bool | None] = {}


def read_name_map(path: str | Path) -> dict[str, Any]:
    """Read a name map written by :func:`write_mps` (give the ``.mps`` or the ``.json`` path).

    The file is size-capped (``--max-json-mb``) and every field is checked against :class:`NameMap`;
    a wrong type is an error naming the file, the field, what was expected and what was found.
    """
    path = Path(path)
    jpath = path if path.suffix == ".json" else path.with_name(path.name + ".json")
    info = read_json(jpath, what="the MPS name map")
    if not isinstance(info, dict) or info.get("format") != MAP_FORMAT:
        got = info.get("format") if isinstance(info, dict) else f"a JSON {type(info).__name__}"
        raise InvalidInputError(f"path: {str(jpath)!r} is not a benchsel MPS name map (format {got!r}, expected "
                                f"{MAP_FORMAT!r})")
    convert(info, NameMap, where=f"path: the MPS name map {str(jpath)!r}")
    return info


def selection_from_values(name_map: Mapping[str, Any], values: Mapping[str, float]) -> np.ndarray:
    """Selected items from column values keyed by MPS column name (``{"C0": 1.0, ...}``)."""
    sel = name_map["selection"]
    items = np.asarray(sel["items"], dtype=np.int64)
    first = int(sel["first_column"])
    x = np.array([values.get(f"C{first + i}", 0.0) for i in range(items.size)], dtype=float)
    return np.sort(items[x > 0.5])
