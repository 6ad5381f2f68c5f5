"""The results store: ``runs.jsonl`` (append-only, the source of truth) and ``runs.csv``."""
from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from benchsel.solvers.errors import InvalidInputError

from .gaps import reference_gaps
from .tasks import row_key

__all__ = ["CORE_COLUMNS", "ResultStore", "ordered_columns", "write_rows_csv"]

#: Columns every row has, in this order (then ``meta.*``, ``fidelity.*``,
#: ``extra.*``, ``version.*`` and ``selection``).
CORE_COLUMNS = (
    "suite", "instance", "formulation", "sense", "n_items", "method", "kind", "options", "seed", "time_limit",
    "objective", "bound", "gap", "reference", "reference_value", "own_gap", "seconds", "wall_seconds", "feasible",
    "termination", "n_selected", "retention", "error", "retry", "fingerprint", "host", "executor", "finished_at",
)


def _scalar(v: Any) -> Any:
    """A JSON-safe scalar: numpy scalars as Python ones, non-finite floats as None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class ResultStore:
    """Results of a directory: ``runs.jsonl`` (source of truth) and ``runs.csv``.

    Parameters
    ----------
    directory : str or Path
        Created when missing.
    """

    JSONL = "runs.jsonl"
    CSV = "runs.csv"

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
        self._lock = threading.Lock()
        self.n_bad_lines = 0

    @property
    def jsonl(self) -> Path:
        return self.dir / self.JSONL

    @property
    def csv(self) -> Path:
        return self.dir / self.CSV

    def rows(self) -> list[dict[str, Any]]:
        """Every stored row, the latest per run, in first-seen order."""
        out: dict[str, dict[str, Any]] = {}
        self.n_bad_lines = 0
        if not self.jsonl.is_file():
            return []
        with self.jsonl.open() as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    key = row_key(row)
                except (ValueError, KeyError, TypeError):
                    self.n_bad_lines += 1  # e.g. a line cut short by a crash
                    continue
                out[key] = row
        return list(out.values())

    def done_keys(self) -> set[str]:
        """Keys of finished runs: every stored run except those whose worker died or was lost (``retry``)."""
        return {row_key(r) for r in self.rows() if not r.get("retry")}

    def append(self, row: Mapping[str, Any]) -> None:
        line = json.dumps({k: _scalar(v) for k, v in row.items()}, default=str)
        with self._lock, self.jsonl.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()

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
    tmp = path.with_name(path.name + ".tmp")
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
