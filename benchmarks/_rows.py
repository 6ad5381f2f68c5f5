"""CSV rows of the benchmark scripts that a long study fills in several commands."""
from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["append_rows", "read_rows"]


def append_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append ``rows`` to the CSV file ``path`` (its header written when the file is new)."""
    if not rows:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        if new:
            w.writeheader()
        w.writerows(rows)


def read_rows(paths: Iterable[Path]) -> list[dict[str, str]]:
    """Every row of the CSV files ``paths``, in order."""
    rows: list[dict[str, str]] = []
    for p in paths:
        with open(p) as fh:
            rows += list(csv.DictReader(fh))
    return rows
