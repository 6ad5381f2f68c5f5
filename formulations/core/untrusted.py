"""Reading files from outside: bounded memory, typed decoding, named errors.

Every reader of a file benchsel did not write in this process (score files,
lm-eval logs, HELM stats, saved compressions, instance files, MPS name maps,
the results store) goes through this module:

* **Lines** (``.jsonl``, ``.csv``) are streamed by :func:`iter_lines` with a cap
  on one line's length (:attr:`Limits.max_line_bytes`): a file without a
  newline is never read whole.
* **JSON documents** are size-checked before they are read
  (:attr:`Limits.max_json_bytes`) and decoded by :func:`decode_json` with
  ``msgspec`` against a typed schema, so a wrong type, a number out of range
  (``1e999``), non-UTF-8 bytes or deep nesting is one
  :class:`~benchsel.formulations.core.errors.InvalidInputError` naming the
  file, the field, what was expected and what was found.
* **``.npz`` members** are read by name by :func:`read_npz_members`: the zip
  header's declared uncompressed size and the ``.npy`` header's shape are
  checked against :attr:`Limits.max_array_bytes` before anything is
  decompressed, only the members asked for are read, and object arrays
  (which would need unpickling) are refused.

A cap that is hit raises :class:`LimitError`, which names the option that
raises it (``--max-line-mb``, ``--max-json-mb``, ``--max-array-mb`` on the
command line; ``Limits(...)`` with :func:`use_limits` in Python).
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import msgspec
import numpy as np

from .errors import InvalidInputError

__all__ = ["MB", "LimitError", "Limits", "capped_lines", "convert", "current_limits", "decode_json", "file_size",
           "iter_lines", "npz_members", "read_json", "read_npz_members", "text_lines", "use_limits"]

MB = 1 << 20
T = TypeVar("T")


class LimitError(InvalidInputError):
    """A file (a line, a JSON document, an array) is larger than its cap; the message names the option."""


@dataclass(frozen=True)
class Limits:
    """Caps on what one read of an untrusted file may hold in memory.

    Attributes
    ----------
    max_line_bytes : int
        Longest line of a ``.jsonl`` / ``.csv`` file (default 64 MiB;
        ``--max-line-mb``).
    max_json_bytes : int
        Largest JSON document (``compression.json``, HELM stats, name maps,
        lm-eval results; default 128 MiB; ``--max-json-mb``).
    max_array_bytes : int
        Largest uncompressed ``.npz`` member (default 1 GiB; ``--max-array-mb``).
    """

    max_line_bytes: int = 64 * MB
    max_json_bytes: int = 128 * MB
    max_array_bytes: int = 1024 * MB

    def __post_init__(self) -> None:
        for name in ("max_line_bytes", "max_json_bytes", "max_array_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InvalidInputError(f"{name}: expected a whole number of bytes >= 1, got {v!r}")
            object.__setattr__(self, name, int(v))

    @classmethod
    def from_mb(cls, line_mb: float | None = None, json_mb: float | None = None,
                array_mb: float | None = None) -> Limits:
        """Limits from megabyte figures (the command line's ``--max-*-mb``); None keeps a default."""
        d = cls()
        out = {}
        for opt, attr, v in (("--max-line-mb", "max_line_bytes", line_mb), ("--max-json-mb", "max_json_bytes", json_mb),
                             ("--max-array-mb", "max_array_bytes", array_mb)):
            if v is None:
                out[attr] = getattr(d, attr)
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InvalidInputError(f"{opt}: expected a finite number of megabytes > 0, got {v!r}")
            out[attr] = max(1, int(v * MB))
        return cls(**out)


#: The option that raises each cap, by attribute.
OPTION = {"max_line_bytes": "--max-line-mb (Limits.max_line_bytes)",
          "max_json_bytes": "--max-json-mb (Limits.max_json_bytes)",
          "max_array_bytes": "--max-array-mb (Limits.max_array_bytes)"}

_DEFAULT = Limits()
_LIMITS: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("benchsel_limits", default=None)


def current_limits(limits: Limits | None = None) -> Limits:
    """``limits`` when given, else those set by :func:`use_limits` (the defaults outside one)."""
    if limits is None:
        return _LIMITS.get() or _DEFAULT
    if not isinstance(limits, Limits):
        raise InvalidInputError(f"limits: expected a benchsel Limits, got {type(limits).__name__}")
    return limits


@contextlib.contextmanager
def use_limits(limits: Limits) -> Iterator[Limits]:
    """Use ``limits`` for every reader called inside the ``with`` block (this thread / task)."""
    token = _LIMITS.set(current_limits(limits))
    try:
        yield limits
    finally:
        _LIMITS.reset(token)


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n} bytes"


def _too_big(what: str, got: int, cap_attr: str, cap: int) -> LimitError:
    return LimitError(f"{what}: {_size(got)} is more than the cap of {_size(cap)}; raise it with "
                      f"{OPTION[cap_attr]} if the file is trusted")


def file_size(path: Path, what: str) -> int:
    """The size of a regular file, or a named error (missing, a folder, unreadable)."""
    try:
        st = path.stat()
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {what} {str(path)!r}: {e.strerror or e}") from None
    if not path.is_file():
        raise InvalidInputError(f"path: {what} {str(path)!r} is not a regular file")
    return int(st.st_size)


# ---------------------------------------------------------------- lines
#: Bytes read at a time by :func:`iter_lines`.
CHUNK = 1 << 20


def iter_lines(path: str | Path, *, limits: Limits | None = None, what: str = "the file",
               skip_long: bool = False) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line bytes without its newline)`` of a file, one line in memory at a time.

    A line longer than ``max_line_bytes`` raises :class:`LimitError` naming
    the file and line, or with ``skip_long`` is yielded as ``None`` (its
    bytes are skipped, never held). A last line without newline is yielded
    as it is.
    """
    lim = current_limits(limits)
    cap = lim.max_line_bytes
    path = Path(path)
    size = file_size(path, what)
    try:
        fh = path.open("rb")
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {what} {str(path)!r}: {e.strerror or e}") from None
    if size <= cap:  # no line can pass the cap: read the file at once (at most the cap in memory), split it
        with fh:
            data = fh.read(size + 1)  # (read(n) allocates n bytes: the size, not the cap)
        if len(data) <= size:  # (the file may have grown since)
            lines = data.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            for lineno, line in enumerate(lines, start=1):
                yield lineno, line[:-1] if line.endswith(b"\r") else line
            return
        fh = path.open("rb")
    with fh:
        for lineno, (body, _, _) in enumerate(capped_lines(fh, cap), start=1):
            if body is None and not skip_long:
                raise _long_line(path, lineno, what, lim)
            yield lineno, body


def capped_lines(fh: BinaryIO, cap: int) -> Iterator[tuple[bytes | None, int, bool]]:
    """``(line without its newline or None when longer than cap, bytes consumed, ended by a newline)`` of an
    open binary file, from its current position; never more than ``cap`` bytes of a line in memory."""
    while True:
        line = fh.readline(cap + 2)  # at most the cap, a "\r" and the newline
        if not line:
            return
        n = len(line)
        body = line[:-1] if line.endswith(b"\n") else line
        body = body[:-1] if body.endswith(b"\r") else body
        if len(body) <= cap:
            yield body, n, line.endswith(b"\n")
            continue
        while not line.endswith(b"\n"):  # skip the rest of the line, a piece at a time
            line = fh.readline(CHUNK)
            if not line:
                break
            n += len(line)
        yield None, n, line.endswith(b"\n")


def _long_line(path: Path, lineno: int, what: str, lim: Limits) -> LimitError:
    return LimitError(f"path: line {lineno} of {what} {str(path)!r} is longer than the cap of "
                      f"{_size(lim.max_line_bytes)} (a file without newlines, or not line-oriented?); raise it "
                      f"with {OPTION['max_line_bytes']} if the file is trusted")


def text_lines(path: str | Path, *, limits: Limits | None = None, what: str = "the file") -> Iterator[str]:
    """The lines of a UTF-8 text file (``\\n`` kept off), line-capped; non-UTF-8 bytes are a named error."""
    for lineno, raw in iter_lines(path, limits=limits, what=what):
        assert raw is not None
        try:
            yield raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInputError(f"path: line {lineno} of {what} {str(path)!r} is not UTF-8 text "
                                    f"(byte {e.start}: {raw[e.start:e.start + 1]!r})") from None


# ---------------------------------------------------------------- JSON
def _decode_error(e: Exception, where: str, data: bytes | str | None = None) -> InvalidInputError:
    """A msgspec error as a named error: ``where``, the field (``$.a.b``), what was expected and got."""
    if isinstance(e, RecursionError):
        return InvalidInputError(f"{where}: nested too deeply to be read (expected the documented layout)")
    msg = str(e)
    field = ""
    if " - at `" in msg:
        msg, _, tail = msg.partition(" - at `")
        field = tail.rstrip("`")
    if isinstance(e, msgspec.ValidationError):
        at = f" field {field}" if field else ""
        return InvalidInputError(f"{where}:{at} {msg[:1].lower() + msg[1:]}")
    bad_text = _not_utf8(data) if data is not None else ""
    if bad_text:
        return InvalidInputError(f"{where}: {bad_text}")
    return InvalidInputError(f"{where}: not valid JSON ({msg[:200]})")


def _not_utf8(data: bytes | str) -> str:
    """Where ``data`` is not UTF-8 (``""`` when it is)."""
    if isinstance(data, str):
        return ""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})"
    return ""


def decode_json(data: bytes | str, type: Any = Any, *, where: str, allow_nan: bool = False,
                schema: Any = None) -> Any:
    """``data`` decoded as JSON of ``type`` (a ``msgspec`` type: a Struct, ``dict[str, float]``, ``Any``...).

    ``schema`` (a Struct) names the field of a value out of range when ``type`` is untyped (``Any``).

    Raises
    ------
    InvalidInputError
        Not JSON, not UTF-8, nested too deeply, or not of ``type``: the
        message starts with ``where`` and names the field (``$.selection.seconds``),
        what was expected and what was found.
    """
    try:
        return msgspec.json.decode(data, type=type, strict=True)
    except (msgspec.DecodeError, RecursionError) as e:
        if allow_nan and isinstance(e, msgspec.DecodeError) and not isinstance(e, msgspec.ValidationError):
            return _decode_with_nan(data, type, where, e)
        if schema is not None and isinstance(e, msgspec.ValidationError):  # name the field: decode by the schema
            try:
                msgspec.json.decode(data, type=schema, strict=True)
            except (msgspec.DecodeError, RecursionError) as e2:
                raise _decode_error(e2, where, data) from None
        raise _decode_error(e, where, data) from None


def _decode_with_nan(data: bytes | str, type: Any, where: str, first: Exception) -> Any:
    """The standard library's decoder, which reads ``NaN`` / ``Infinity`` (Python's ``json.dumps`` writes them:
    lm-eval's logs hold them), then the type check; errors named as :func:`decode_json`."""
    import json

    try:
        obj = json.loads(data)
    except RecursionError as e:
        raise _decode_error(e, where) from None
    except (ValueError, UnicodeDecodeError):
        raise _decode_error(first, where, data) from None
    return obj if type is Any else convert(obj, type, where=where)


def convert(obj: Any, type: Any, *, where: str) -> Any:
    """An already-decoded value (e.g. a dict) checked and converted to ``type``, errors named as :func:`decode_json`."""
    try:
        return msgspec.convert(obj, type=type, strict=True)
    except (msgspec.ValidationError, RecursionError) as e:
        raise _decode_error(e, where) from None


def read_json(path: str | Path, type: Any = Any, *, limits: Limits | None = None, what: str = "the JSON file",
              allow_nan: bool = False, schema: Any = None) -> Any:
    """A JSON file of at most ``max_json_bytes``, decoded against ``type`` (see :func:`decode_json`)."""
    lim = current_limits(limits)
    path = Path(path)
    size = file_size(path, what)
    if size > lim.max_json_bytes:
        raise _too_big(f"path: {what} {str(path)!r}", size, "max_json_bytes", lim.max_json_bytes)
    try:
        with path.open("rb") as fh:
            data = fh.read(size + 1)  # read(n) allocates n bytes: the size, not the cap
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {what} {str(path)!r}: {e.strerror or e}") from None
    if len(data) > size:  # it grew between stat and read
        raise _too_big(f"path: {what} {str(path)!r}", len(data), "max_json_bytes", lim.max_json_bytes)
    return decode_json(data, type, where=f"path: {what} {str(path)!r}", allow_nan=allow_nan, schema=schema)


# ---------------------------------------------------------------- .npz
def _member(z: zipfile.ZipFile, name: str, path: Path, what: str, lim: Limits) -> np.ndarray:
    info = z.getinfo(name + ".npy")
    cap = lim.max_array_bytes
    where = f"array {name!r} of {what} {str(path)!r}"
    if info.file_size > cap:
        raise _too_big(f"path: {where}", info.file_size, "max_array_bytes", cap)
    fmt = np.lib.format
    with z.open(info) as fh:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise InvalidInputError(f"path: {where}: unsupported .npy format version {version}")
        if dtype.hasobject:
            raise InvalidInputError(f"path: {where} is an object array (reading it would unpickle code); refused")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if nbytes > cap:
            raise _too_big(f"path: {where}", nbytes, "max_array_bytes", cap)
        if nbytes > info.file_size:
            raise InvalidInputError(f"path: {where}: its header declares {nbytes} bytes of data but the member holds "
                                    f"{info.file_size} (a damaged file)")
        arr = np.empty(count, dtype=dtype)
        view = memoryview(arr.reshape(-1).view(np.uint8).data) if nbytes else memoryview(b"")
        done = 0
        while done < nbytes:  # in pieces: never a second copy of the whole member
            piece = fh.read(min(CHUNK * 16, nbytes - done))
            if not piece:
                raise InvalidInputError(f"path: {where} is truncated ({done} of {nbytes} bytes)")
            view[done:done + len(piece)] = piece
            done += len(piece)
    return arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)


@contextlib.contextmanager
def _zip(path: Path, what: str) -> Iterator[zipfile.ZipFile]:
    """An ``.npz`` file open as a zip archive; any failure inside (a bad zip, a damaged member) a named error."""
    file_size(path, what)
    try:
        with path.open("rb") as raw:
            if raw.read(2) != b"PK":
                raise InvalidInputError(f"path: {str(path)!r} is not {what} (not a zip file)")
            raw.seek(0)
            with zipfile.ZipFile(raw) as z:
                yield z
    except InvalidInputError:
        raise
    except OSError as e:
        raise InvalidInputError(f"path: cannot read {what} {str(path)!r}: {e.strerror or e}") from None
    except Exception as e:  # zipfile.BadZipFile, zlib.error, ValueError (a bad .npy header), EOFError, ...
        raise InvalidInputError(f"path: cannot read {what} {str(path)!r}: {type(e).__name__}: {e} "
                                "(is it truncated or damaged?)") from None


def npz_members(path: str | Path, *, what: str = "the .npz archive") -> list[str]:
    """The array names of an ``.npz`` file, from its zip directory (nothing decompressed)."""
    with _zip(Path(path), what) as z:
        return [n[:-4] for n in z.namelist() if n.endswith(".npy")]


def read_npz_members(path: str | Path, names: Iterable[str] | None = None, *, optional: Iterable[str] = (),
                     limits: Limits | None = None, what: str = "the .npz archive") -> dict[str, np.ndarray]:
    """The named arrays of an ``.npz`` file (every member when ``names`` is None), without unpickling.

    Each member's declared sizes (zip header, ``.npy`` header) are checked
    against ``max_array_bytes`` before it is decompressed; members not asked
    for are never read. A missing name raises a named error unless it is in
    ``optional``.

    Returns
    -------
    dict of str to ndarray
        Writable arrays of the members' dtypes and shapes.
    """
    lim = current_limits(limits)
    path = Path(path)
    out: dict[str, np.ndarray] = {}
    with _zip(path, what) as z:
        members = [n[:-4] for n in z.namelist() if n.endswith(".npy")]
        opt = set(optional)
        want = members if names is None else list(dict.fromkeys([*names, *opt]))
        have = set(members)
        lack = [n for n in want if n not in have and n not in opt]
        if lack:
            names_txt = ", ".join(map(repr, lack))
            raise InvalidInputError(f"path: {what} {str(path)!r} lacks the array(s) {names_txt} (it has "
                                    f"{', '.join(map(repr, members[:12]))})")
        for n in want:
            if n in have:
                out[n] = _member(z, n, path, what, lim)
    return out
