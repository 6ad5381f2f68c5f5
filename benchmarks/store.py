"""The results store: ``runs.jsonl`` (append-only, the source of truth) and ``runs.csv``.

Several processes may write into one results folder at once (two ``benchsel
run`` into the same ``--out``, on one machine or on several sharing the
folder): every run is executed once in total.

* **Appends** take an exclusive lock on ``runs.lock`` (``fcntl.flock``) and
  write each row, a complete line, with one ``write`` to the file opened in
  append mode, then ``fsync`` it, so rows never interleave; readers take the
  shared lock.
* **Torn lines.** A writer killed in the middle of its ``write`` (or a full
  disk) can leave a last line without its newline. Under the lock no writer is
  writing, so such a tail is torn for good: the next append cuts it off and
  keeps it in ``runs.jsonl.torn`` (one line per tail) before writing its own
  row, which therefore starts a line of its own instead of completing the
  torn one (and being lost with it).
* **Claims.** Before a run starts, its writer *claims* it: under an exclusive
  lock on ``.claims/lock`` it re-reads the rows appended since it last looked
  (a run another writer finished is not run again) and, when nobody holds the
  run, writes ``.claims/<hash>.json`` with its host, pid, process start time
  and a token. A writer appends the run's row *before* it drops the claim, so
  whoever claims next sees the row. A claim held by another live writer is
  skipped (and waited for at the end of the grid, so the tables are complete).
* **Stale claims.** A claim is stale when its writer's process is gone (same
  host: the pid is not alive, or is alive but started at another time) or,
  for another host, when its file has not been refreshed for
  :attr:`ResultStore.STALE_SECONDS` (live writers touch their claims every
  :attr:`ResultStore.HEARTBEAT_SECONDS`). A stale claim is taken over: a
  writer killed with SIGKILL does not block the grid. The kernel drops
  ``flock`` locks of a dead process by itself.

The guarantee needs ``fcntl`` locks (POSIX; on NFS, a server with lock
support). Without ``fcntl`` (Windows) one writer per folder is assumed.

**Reading** treats ``runs.jsonl`` as a file from outside: lines are read with
a cap on their length (``--max-line-mb``), each row is decoded and checked
against :class:`RowSchema` (types and ranges of the fields the harness and the
reports use; every other field a scalar). A row that cannot be read (not
UTF-8, not JSON, nested, a number out of range, longer than the cap) or is
invalid (``"objective": "abc"``, a feasible run without a finite objective)
is skipped and counted, never fatal and never counted as a result:
:attr:`ResultStore.bad_lines` says how many and where (line numbers and the
reason, never the line itself).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.untrusted import capped_lines, convert, current_limits, decode_json

from .gaps import reference_gaps
from .tasks import row_key

__all__ = ["CORE_COLUMNS", "BadLines", "ResultStore", "RowSchema", "ordered_columns", "parse_row", "write_rows_csv"]

try:  # POSIX
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: one writer per folder
    _fcntl = None  # type: ignore[assignment]

#: Outcomes of :meth:`ResultStore.claim`.
CLAIMED, DONE, HELD = "claimed", "done", "held"

#: Columns every row has, in this order (then ``meta.*``, ``fidelity.*``,
#: ``extra.*``, ``version.*`` and ``selection``).
CORE_COLUMNS = (
    "suite", "instance", "formulation", "sense", "n_items", "method", "kind", "options", "seed", "time_limit",
    "objective", "bound", "gap", "reference", "reference_value", "own_gap", "seconds", "wall_seconds", "feasible",
    "termination", "n_selected", "retention", "error", "retry", "fingerprint", "host", "executor", "finished_at",
)


Seconds = Annotated[float, msgspec.Meta(ge=0)]


class RowSchema(msgspec.Struct, forbid_unknown_fields=False):
    """The fields of a ``runs.jsonl`` row that the harness and the reports rely on, with types and ranges."""

    instance: str
    method: str
    fingerprint: str
    seed: Annotated[int, msgspec.Meta(ge=0)]
    time_limit: Annotated[float, msgspec.Meta(gt=0)] | None
    suite: str = ""
    formulation: str = ""
    sense: str | None = None
    kind: str | None = None
    options: str | None = None
    n_items: Annotated[int, msgspec.Meta(ge=0)] | None = None
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    own_gap: float | None = None
    reference_value: float | None = None
    seconds: Seconds | None = None
    wall_seconds: Seconds | None = None
    feasible: bool | None = None
    termination: str | None = None
    n_selected: Annotated[int, msgspec.Meta(ge=0)] | None = None
    retention: float | None = None
    error: str | None = None
    retry: bool = False
    selection: str | None = None


def parse_row(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """One ``runs.jsonl`` line as a checked row, or ``(None, why)`` (the reason names the field, never the line)."""
    try:
        row = decode_json(raw, dict[str, Any], where="row", schema=RowSchema)
        r = convert(row, RowSchema, where="row")
    except InvalidInputError as e:
        return None, str(e)[:200]
    for k, v in row.items():
        if isinstance(v, (dict, list)):
            return None, f"row: field $.{k[:40]}: expected a scalar, got a {type(v).__name__}"
    if r.feasible and (r.objective is None or not math.isfinite(r.objective)):
        return None, "row: field $.objective: a feasible run needs a finite objective, got null"
    return row, ""


class BadLines:
    """Unreadable or invalid lines of ``runs.jsonl`` met by the last read: how many, and the first few (line, why)."""

    KEEP = 5

    def __init__(self) -> None:
        self.count = 0
        self.first: list[tuple[int, str]] = []

    def add(self, lineno: int, why: str) -> None:
        self.count += 1
        if len(self.first) < self.KEEP:
            self.first.append((lineno, why))

    def describe(self, path: Path) -> str:
        """``"3 unreadable or invalid rows of runs.jsonl skipped (line 4: ...; line 9: ...)"``, or ``""``."""
        if not self.count:
            return ""
        where = "; ".join(f"line {n}: {why}" for n, why in self.first)
        more = ", ..." if self.count > len(self.first) else ""
        return (f"{self.count} unreadable or invalid row{'s' * (self.count > 1)} of {str(path)!r} skipped, not "
                f"counted as results ({where}{more})")


def _scalar(v: Any) -> Any:
    """A JSON-safe scalar: numpy scalars as Python ones, non-finite floats as None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _proc_start(pid: int) -> str | None:
    """Start time of process ``pid`` (Linux clock ticks since boot), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class ResultStore:
    """Results of a directory: ``runs.jsonl`` (source of truth) and ``runs.csv``, safe for concurrent writers.

    Parameters
    ----------
    directory : str or Path
        Created when missing.
    create : bool
        False: the directory must already hold results (for reports).
    """

    JSONL = "runs.jsonl"
    CSV = "runs.csv"
    LOCK = "runs.lock"
    CLAIMS = ".claims"
    #: A claim from another host not refreshed for this many seconds is stale.
    STALE_SECONDS = 300.0
    #: How often a writer refreshes the claims it holds.
    HEARTBEAT_SECONDS = 30.0

    def __init__(self, directory: str | Path, *, create: bool = True) -> None:
        self.dir = Path(directory)
        if create:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise InvalidInputError(f"out: cannot create the results directory {str(self.dir)!r}: {e}") from None
        elif not (self.dir / self.JSONL).is_file():
            raise InvalidInputError(
                f"dir: {str(self.dir)!r} holds no benchsel results ({self.JSONL} missing); run 'benchsel run' first"
            )
        self._lock = threading.RLock()
        self.bad_lines = BadLines()
        self.owner = {"host": platform.node(), "pid": os.getpid(), "start": _proc_start(os.getpid()),
                      "token": uuid.uuid4().hex}
        self._held: dict[str, Path] = {}
        self._heartbeat: threading.Thread | None = None
        self._seen: dict[str, bool] = {}  # run key -> retry flag of its latest row (incremental view)
        self._seen_pos = 0
        self._seen_id: tuple[int, int] | None = None

    @property
    def jsonl(self) -> Path:
        return self.dir / self.JSONL

    @property
    def csv(self) -> Path:
        return self.dir / self.CSV

    # ------------------------------------------------------------- locking
    @contextlib.contextmanager
    def _flock(self, path: Path, shared: bool = False) -> Iterator[None]:
        """An inter-process lock on ``path`` (created when missing); a no-op without ``fcntl``."""
        if _fcntl is None:  # pragma: no cover
            yield
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            _fcntl.flock(fd, _fcntl.LOCK_SH if shared else _fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    # ---------------------------------------------------------------- rows
    @property
    def n_bad_lines(self) -> int:
        """How many lines the last :meth:`rows` skipped (unreadable or invalid)."""
        return self.bad_lines.count

    def rows(self) -> list[dict[str, Any]]:
        """Every valid stored row, the latest per run, in first-seen order; bad lines counted in :attr:`bad_lines`."""
        out: dict[str, dict[str, Any]] = {}
        self.bad_lines = bad = BadLines()
        if not self.jsonl.is_file():
            return []
        cap = current_limits().max_line_bytes
        with self._flock(self.dir / self.LOCK, shared=True), self.jsonl.open("rb") as fh:
            for lineno, (raw, _, _) in enumerate(capped_lines(fh, cap), start=1):
                if raw is None:
                    bad.add(lineno, f"longer than the cap of {cap} bytes (--max-line-mb)")
                    continue
                if not raw.strip():
                    continue
                row, why = parse_row(raw)
                if row is None:  # e.g. a line cut short by a crash, or edited by hand
                    bad.add(lineno, why)
                    continue
                out[row_key(row)] = row
        return list(out.values())

    def done_keys(self) -> set[str]:
        """Keys of finished runs: every stored run except those whose worker died or was lost (``retry``)."""
        return {row_key(r) for r in self.rows() if not r.get("retry")}

    def append(self, row: Mapping[str, Any]) -> None:
        """Append one row: one ``write`` of a complete line under the store's lock, then ``fsync``.

        Rows of concurrent writers never interleave. A torn last line left by a writer that died mid-write
        is first cut off and set aside (:meth:`_set_aside_torn_tail`).
        """
        data = (json.dumps({k: _scalar(v) for k, v in row.items()}, default=str) + "\n").encode()
        with self._lock, self._flock(self.dir / self.LOCK):
            fd = os.open(self.jsonl, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                self._set_aside_torn_tail(fd)
                view = memoryview(data)
                while view:  # one write in practice; a short write (a signal, a full disk) is continued
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)

    def _set_aside_torn_tail(self, fd: int) -> None:
        """Cut a last line that lacks its newline off ``runs.jsonl`` (open as ``fd``, under the exclusive lock)
        and append it, with a newline, to ``runs.jsonl.torn``."""
        size = os.fstat(fd).st_size
        if size == 0:
            return
        os.lseek(fd, size - 1, os.SEEK_SET)
        if os.read(fd, 1) == b"\n":
            return
        start, pos = 0, size  # the byte after the last newline
        while pos > 0:
            lo = max(0, pos - (1 << 16))
            os.lseek(fd, lo, os.SEEK_SET)
            block = os.read(fd, pos - lo)
            i = block.rfind(b"\n")
            if i >= 0:
                start = lo + i + 1
                break
            pos = lo
        os.lseek(fd, start, os.SEEK_SET)
        torn = b""
        while len(torn) < size - start:
            chunk = os.read(fd, size - start - len(torn))
            if not chunk:
                break
            torn += chunk
        with open(self.dir / f"{self.JSONL}.torn", "ab") as fh:
            fh.write(torn + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.ftruncate(fd, start)

    def _refresh_seen(self, reset: bool = False) -> dict[str, bool]:
        """Read the rows appended since the last call (the whole file when it was replaced, cut or ``reset``)."""
        if reset:
            self._seen_id = None
        try:
            st = os.stat(self.jsonl)
        except FileNotFoundError:
            self._seen, self._seen_pos, self._seen_id = {}, 0, None
            return self._seen
        ident = (st.st_dev, st.st_ino)
        if ident != self._seen_id or st.st_size < self._seen_pos:
            self._seen, self._seen_pos, self._seen_id = {}, 0, ident
        cap = current_limits().max_line_bytes
        with self._flock(self.dir / self.LOCK, shared=True), open(self.jsonl, "rb") as fh:
            fh.seek(self._seen_pos)
            for raw, n, complete in capped_lines(fh, cap):
                if not complete:  # a line still being written (or torn): read again next time
                    break
                self._seen_pos += n
                row = parse_row(raw)[0] if raw is not None else None
                if row is not None:
                    self._seen[row_key(row)] = bool(row.get("retry"))
        return self._seen

    # -------------------------------------------------------------- claims
    def _claim_path(self, key: str) -> Path:
        return self.dir / self.CLAIMS / f"{hashlib.sha1(key.encode()).hexdigest()[:24]}.json"

    def _read_claim(self, path: Path) -> dict[str, Any] | None:
        try:
            info = json.loads(path.read_text())
            return info if isinstance(info, dict) else {}
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # unreadable: treated as stale

    def _stale(self, info: Mapping[str, Any], path: Path) -> bool:
        if info.get("token") == self.owner["token"]:
            return False
        if info.get("host") == self.owner["host"] and isinstance(info.get("pid"), int):
            pid = int(info["pid"])
            if not _pid_alive(pid):
                return True
            start = _proc_start(pid)
            return bool(info.get("start") and start and start != info["start"])  # the pid was reused
        if not info.get("host"):
            return True
        try:
            return time.time() - path.stat().st_mtime > self.STALE_SECONDS
        except FileNotFoundError:
            return True

    def claim(self, key: str, *, label: str = "") -> str:
        """Claim run ``key`` before executing it.

        Returns
        -------
        {"claimed", "done", "held"}
            ``"claimed"``: this store now holds it (run it, :meth:`append` its
            row, then :meth:`release`); ``"done"``: a finished row is stored
            (by any writer); ``"held"``: another live writer runs it.
        """
        with self._lock, self._flock(self.dir / self.CLAIMS / "lock"):
            seen = self._refresh_seen()
            if key in seen and not seen[key]:
                return DONE
            path = self._claim_path(key)
            info = self._read_claim(path)
            if info is not None and not self._stale(info, path):
                if info.get("token") == self.owner["token"]:
                    return CLAIMED
                return HELD
            tmp = path.with_name(f"{path.name}.{self.owner['token']}.tmp")
            tmp.write_text(json.dumps({**self.owner, "key": key, "label": label,
                                       "claimed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
            os.replace(tmp, path)
            self._held[key] = path
        self._start_heartbeat()
        return CLAIMED

    def release(self, key: str) -> None:
        """Drop the claim on ``key`` (after its row was appended, or when it was not run)."""
        with self._lock, self._flock(self.dir / self.CLAIMS / "lock"):
            path = self._held.pop(key, None)
            if path is None:
                return
            info = self._read_claim(path)
            if info and info.get("token") == self.owner["token"]:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def holder(self, key: str) -> dict[str, Any] | None:
        """The live claim on ``key`` of another writer (host, pid, ...), or None."""
        path = self._claim_path(key)
        info = self._read_claim(path)
        if info is None or self._stale(info, path) or info.get("token") == self.owner["token"]:
            return None
        return info

    def release_all(self) -> None:
        for key in list(self._held):
            self.release(key)

    def _start_heartbeat(self) -> None:
        with self._lock:
            if self._heartbeat is not None and self._heartbeat.is_alive():
                return

            def beat() -> None:
                while True:
                    time.sleep(self.HEARTBEAT_SECONDS)
                    with self._lock:
                        paths = list(self._held.values())
                    for p in paths:
                        with contextlib.suppress(OSError):
                            os.utime(p)

            self._heartbeat = threading.Thread(target=beat, name="benchsel-claims-heartbeat", daemon=True)
            self._heartbeat.start()

    def write_csv(self, rows: list[dict[str, Any]] | None = None) -> Path:
        """Re-write ``runs.csv`` from all rows, with reference gaps."""
        rows = reference_gaps(self.rows() if rows is None else rows)
        write_rows_csv(rows, self.csv)
        return self.csv


def ordered_columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    rest = [k for k in seen if k not in CORE_COLUMNS and k not in ("selection", "traceback")]
    order = {"meta.": 0, "fidelity.": 1, "extra.": 2, "version.": 3}
    rest.sort(key=lambda k: (next((v for p, v in order.items() if k.startswith(p)), 4), k))
    return list(CORE_COLUMNS) + rest + ["selection"]


def write_rows_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """Tidy CSV: one row per run, booleans as ``true``/``false``, missing as empty."""
    import csv

    cols = ordered_columns(rows)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # concurrent writers
    with tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            out = []
            for c in cols:
                v = r.get(c)
                if isinstance(v, bool):
                    v = "true" if v else "false"
                elif v is None or (isinstance(v, float) and not math.isfinite(v)):
                    v = ""
                elif isinstance(v, float):
                    v = repr(v)
                out.append(v)
            w.writerow(out)
    os.replace(tmp, path)
