"""Instance files: save any formulation as ``.npz`` and load it back.

A benchsel instance file is a NumPy ``.npz`` archive holding

* ``__format__`` — the string ``"benchsel-instance"`` and ``__version__`` (1);
* ``__class__`` — ``"module:ClassName"`` of the formulation;
* ``__params__`` — a JSON string describing every constructor argument of
  ``f.get_params()``: ``None``, a JSON value (numbers, strings, lists, dicts),
  a tuple, an exact fraction, or an array stored beside it under the key
  ``param:<name>`` (dtype kept);

so that ``type(f)(**f.get_params())`` is rebuilt exactly. It is read with
``allow_pickle=False``: loading a file never unpickles code.

:func:`load_instance` also reads OR-Library p-median ``.txt`` files (as a
:class:`~benchsel.formulations.KMedoids`) and benchsel ``.mps`` exports (as an
:class:`MpsInstance`, solved by ``"highs"`` reading the MPS; see
:func:`benchsel.formulations.core.mps.solve_mps`).
"""
from __future__ import annotations

import hashlib
import importlib
import json
import numbers
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from benchsel.formulations.base import Formulation
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.mps import read_name_map
from benchsel.formulations.core.registry import formulation_classes as registered_formulations
from benchsel.formulations.core.untrusted import decode_json, npz_members, read_npz_members

from .orlib import load_pmed

__all__ = ["MpsInstance", "class_path", "decode_params", "encode_params", "fingerprint", "formulation_class",
           "load_instance", "read_npz", "save_instance"]

FORMAT = "benchsel-instance"
VERSION = 1
# Top-level package names of releases before the ``benchsel`` namespace: class
# paths saved by them (``"formulations.kmedoids:KMedoids"``) still load.
_PRE_NAMESPACE = frozenset({"formulations", "solvers", "heuristics", "instances", "benchmarks"})
#: The only modules an instance file's ``__class__`` may name.
_OWN_PREFIX = "benchsel.formulations."


def class_path(cls: type) -> str:
    """``"module:ClassName"`` of a class, with the shortest package path that exports it.

    ``KMedoids`` is defined in ``benchsel.formulations.kmedoids.problem`` and
    exported by ``benchsel.formulations.kmedoids``: the file records the latter,
    so a later split of the package does not break saved files.
    """
    parts = cls.__module__.split(".")
    for depth in range(3, len(parts)):
        parent = sys.modules.get(".".join(parts[:depth]))
        if parent is not None and getattr(parent, cls.__qualname__, None) is cls:
            return f"{parent.__name__}:{cls.__qualname__}"
    return f"{cls.__module__}:{cls.__qualname__}"


def formulation_class(path: str) -> type:
    """The formulation class named by ``"module:ClassName"`` (a subclass of ``Formulation``)."""

    if not isinstance(path, str) or ":" not in path:
        raise InvalidInputError(f"class: expected 'module:ClassName', got {path!r}")
    mod, _, name = path.partition(":")
    if mod.split(".")[0] in _PRE_NAMESPACE:  # files saved before the ``benchsel`` namespace
        mod = f"benchsel.{mod}"
    # checked before anything is imported: only benchsel's own formulation modules may be named
    if not (mod.startswith(_OWN_PREFIX) and all(p.isidentifier() for p in mod.split("."))
            and all(p.isidentifier() for p in name.split("."))):
        raise InvalidInputError(
            f"class: {path!r} is not a benchsel Formulation class; instance files name only the package's own "
            f"formulation classes ('{_OWN_PREFIX}<module>:<Class>')"
        )
    try:
        obj: Any = importlib.import_module(mod)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise InvalidInputError(f"class: cannot import formulation class {path!r} ({type(e).__name__}: {e})") from None
    if not (isinstance(obj, type) and issubclass(obj, Formulation) and obj in registered_formulations()):
        raise InvalidInputError(f"class: {path!r} is not a benchsel Formulation subclass")
    return obj


def _jsonable(v: Any, name: str) -> Any:
    """``v`` with numpy scalars/arrays inside containers turned into JSON values."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if not np.isfinite(f):
            raise InvalidInputError(f"{name}: cannot store the non-finite number {f} in an instance file")
        return f
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            raise InvalidInputError(f"{name}: cannot store an object array in an instance file")
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x, name) for x in v]
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise InvalidInputError(f"{name}: dictionary keys must be strings to be stored, got {type(k).__name__}")
            out[k] = _jsonable(x, f"{name}[{k!r}]")
        return out
    raise InvalidInputError(
        f"{name}: cannot store a parameter of type {type(v).__name__} in an instance file "
        "(expected None, numbers, strings, arrays, lists or dicts of those)"
    )


def encode_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Split constructor parameters into a JSON description and named arrays.

    Returns
    -------
    spec : dict
        ``{name: {"kind": "none" | "json" | "array" | "tuple" | "fraction", ...}}``.
    arrays : dict of str to ndarray
        ``{"param:<name>": array}`` for array parameters.
    """
    spec: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, v in params.items():
        if v is None:
            spec[name] = {"kind": "none"}
        elif isinstance(v, np.ndarray) and v.dtype != object:
            spec[name] = {"kind": "array"}
            arrays[f"param:{name}"] = v
        elif isinstance(v, Fraction):
            spec[name] = {"kind": "fraction", "value": [v.numerator, v.denominator]}
        else:
            spec[name] = {"kind": "tuple" if isinstance(v, tuple) else "json", "value": _jsonable(v, name)}
    return spec, arrays


def decode_params(spec: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Inverse of :func:`encode_params`."""
    out: dict[str, Any] = {}
    for name, d in spec.items():
        kind = d.get("kind")
        if kind == "none":
            out[name] = None
        elif kind == "array":
            key = f"param:{name}"
            if key not in arrays:
                raise InvalidInputError(f"path: the instance file lacks the array of parameter {name!r}")
            out[name] = np.asarray(arrays[key])
        elif kind == "json":
            out[name] = d.get("value")
        elif kind == "tuple":
            v = d.get("value")
            if not isinstance(v, list):
                raise InvalidInputError(f"path: parameter {name!r}: expected a JSON list for a tuple, got "
                                        f"{type(v).__name__}")
            out[name] = tuple(v)
        elif kind == "fraction":
            v = d.get("value")
            if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                for x in v) and v[1] != 0):
                raise InvalidInputError(f"path: parameter {name!r}: expected a fraction [numerator, denominator] "
                                        f"of whole numbers with a non-zero denominator, got {str(v)[:60]}")
            out[name] = Fraction(v[0], v[1])
        else:
            raise InvalidInputError(f"path: parameter {name!r} has an unknown kind {kind!r}")
    return out


def fingerprint(f: Any) -> str:
    """A short content hash of a formulation: class and parameters (12 hex digits).

    Two formulations with the same fingerprint are equal instances; used to
    match stored benchmark runs to the instance they were run on.
    """
    spec, arrays = encode_params(f.get_params())
    h = hashlib.sha1(class_path(type(f)).encode())
    h.update(json.dumps(spec, sort_keys=True).encode())
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:12]


def save_instance(f: Any, path: str | Path) -> Path:
    """Save a formulation as a benchsel ``.npz`` instance file.

    Parameters
    ----------
    f : benchsel.formulations.base.Formulation
    path : str or Path
        Output file (``.npz`` is appended when missing); parent folders are created.

    Returns
    -------
    Path
        The file written.
    """

    if not isinstance(f, Formulation):
        raise InvalidInputError(f"f: expected a benchsel Formulation, got {type(f).__name__}")
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    spec, arrays = encode_params(f.get_params())
    path.parent.mkdir(parents=True, exist_ok=True)
    # one dict[str, Any]: a **dict[str, ndarray] could fill savez_compressed's allow_pickle: bool for mypy
    payload: dict[str, Any] = {
        "__format__": np.array(FORMAT),
        "__version__": np.array(VERSION),
        "__class__": np.array(class_path(type(f))),
        "__params__": np.array(json.dumps(spec, sort_keys=True)),
        **arrays,
    }
    np.savez_compressed(path, **payload)
    return path


@dataclass(frozen=True)
class MpsInstance:
    """A benchsel ``.mps`` export with its name map.

    Attributes
    ----------
    path : Path
        The ``.mps`` file.
    name_map : dict
        The ``.mps.json`` side file (see :mod:`benchsel.formulations.core.mps`).
    formulation : Formulation or None
        The instance itself, when its ``.npz`` instance file lies beside the
        MPS (``benchsel export-mps`` writes one); used to re-check a solution.
    """

    path: Path
    name_map: Mapping[str, Any]
    formulation: Any = None

    @property
    def name(self) -> str:
        return self.path.stem


def read_npz(path: str | Path, what: str = "an .npz archive", names: Sequence[str] | None = None,
             optional: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The arrays ``names`` (and those of ``optional`` present; every array when ``names`` is None) of an
    ``.npz`` file, read with their sizes checked before decompressing and without unpickling.

    Any failure to read it (missing, not a zip archive, truncated, a damaged
    member, an object array that would need unpickling, a member above
    ``--max-array-mb``) raises
    :class:`~benchsel.formulations.core.errors.InvalidInputError` naming the path and
    what was wrong (see :func:`benchsel.formulations.core.untrusted.read_npz_members`).
    """
    return read_npz_members(path, names, optional=optional, what=what)


class _Param(msgspec.Struct, forbid_unknown_fields=True):
    """One parameter's description in an instance file's ``__params__``."""

    kind: Literal["none", "json", "array", "tuple", "fraction"]
    value: Any = None


_HEADER = ("__format__", "__version__", "__class__", "__params__")


def _load_npz(path: Path) -> Any:
    keys = set(npz_members(path, what="an .npz archive"))
    if "__format__" not in keys:
        hint = " (it looks like a response file: read it with benchsel.instances.load_responses)" if "Y" in keys else ""
        raise InvalidInputError(f"path: {str(path)!r} is not a benchsel instance file{hint}")
    z = read_npz(path, "a benchsel instance file", _HEADER)
    try:
        fmt = str(z["__format__"])
        version = int(z["__version__"])
        cls_name = str(z["__class__"])
        if z["__params__"].dtype.kind != "U" or z["__params__"].ndim != 0:
            raise ValueError(f"__params__ is not a JSON string (dtype {z['__params__'].dtype})")
    except (KeyError, ValueError, TypeError) as e:
        raise InvalidInputError(f"path: {str(path)!r} is a damaged benchsel instance file ({e})") from None
    spec = decode_json(str(z["__params__"]), dict[str, _Param], where=f"path: {str(path)!r}: __params__")
    spec = {k: {"kind": d.kind, "value": d.value} for k, d in spec.items()}
    arrays = read_npz(path, "a benchsel instance file", [f"param:{k}" for k, d in spec.items()
                                                           if d["kind"] == "array"])
    if fmt != FORMAT or version > VERSION:
        raise InvalidInputError(f"path: {str(path)!r}: unsupported instance format {fmt!r} version {version}")
    cls = formulation_class(cls_name)
    try:
        params = decode_params(spec, arrays)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"path: {str(path)!r} is a damaged benchsel instance file ({e})") from None
    try:
        return cls(**params)
    except InvalidInputError as e:
        raise InvalidInputError(f"path: {str(path)!r} holds an invalid {cls.__name__}: {e}") from None
    except TypeError as e:
        raise InvalidInputError(f"path: {str(path)!r}: its parameters do not fit {cls.__name__} ({e})") from None


#: Bytes :func:`_check_mps` reads at a time while looking for the section headers.
_MPS_CHUNK = 1 << 16


def _check_mps(path: Path) -> None:
    """Refuse a file that is not MPS text (before looking for its name map).

    The file is streamed in chunks of :data:`_MPS_CHUNK` bytes until both the ``ROWS`` and the
    ``COLUMNS`` section headers are seen (a header is a line that starts with no blank; ``COLUMNS``
    follows every row, so in a large model it lies megabytes in): the whole file is read only when a
    header is missing, never held in memory at once.
    """
    need = {"ROWS", "COLUMNS"}
    tail = b""
    n_read = 0
    try:
        with path.open("rb") as fh:
            while need:
                chunk = fh.read(_MPS_CHUNK)
                if not chunk:
                    break
                n_read += len(chunk)
                if not chunk.isascii():
                    raise InvalidInputError(f"path: {str(path)!r} is not an MPS file (it is not plain text)")
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()  # an unfinished line: completed by the next chunk
                if len(tail) > _MPS_CHUNK:  # a header is short: only its start matters
                    tail = tail[:64]
                need.difference_update(_headers(lines))
            need.difference_update(_headers([tail]))
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {str(path)!r}: {e.strerror or e}") from None
    if need:
        missing = [sec for sec in ("ROWS", "COLUMNS") if sec in need]
        raise InvalidInputError(f"path: {str(path)!r} is not an MPS file: no {' or '.join(missing)} section "
                                f"in its {n_read} bytes")


def _headers(lines: list[bytes]) -> set[str]:
    """The section names among MPS lines: a line's first word when it starts with no blank and is no comment."""
    out = set()
    for ln in lines:
        if ln.strip() and not ln.startswith((b"*", b" ", b"\t")):
            out.add(ln.split()[0].decode("ascii").upper())
    return out


def load_instance(path: str | Path) -> Any:
    """Load an instance file.

    Parameters
    ----------
    path : str or Path
        ``.npz`` (written by :func:`save_instance`), OR-Library p-median
        ``.txt`` (``pmed<k>.txt``), or ``.mps`` written by benchsel (with its
        ``.mps.json`` name map beside it).

    Returns
    -------
    Formulation or MpsInstance
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"path: no such instance file {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return _load_npz(path)
    if suffix == ".txt":

        return load_pmed(path)
    if suffix == ".mps":

        _check_mps(path)
        info = read_name_map(path)
        side = path.with_suffix(".npz")
        f = _load_npz(side) if side.is_file() else None
        return MpsInstance(path, info, f)
    raise InvalidInputError(
        f"path: expected an instance file ending in .npz, .txt (OR-Library p-median) or .mps, got {str(path)!r}"
    )
