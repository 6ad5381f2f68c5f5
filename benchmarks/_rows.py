"""CSV rows of the benchmark scripts that a long study fills in several commands."""
from __future__ import annotations

import argparse
import csv
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["add_summary_options", "append_rows", "print_summary", "read_rows"]


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


def add_summary_options(ap: argparse.ArgumentParser, out_help: str) -> None:
    """The ``--out``, ``--summary`` and ``--markdown`` options of a script that fills a CSV file in several runs."""
    ap.add_argument("--out", type=Path, default=None, help=out_help)
    ap.add_argument("--summary", nargs="+", type=Path, default=None, help="summarise CSV files and exit")
    ap.add_argument("--markdown", action="store_true", help="with --summary: also the Markdown table")


def print_summary(paths: Iterable[Path], summarize: Callable[[list[Any]], list[str]],
                  markdown: Callable[[list[Any]], list[str]] | None = None) -> None:
    """Print ``summarize`` (and ``markdown``) of the rows of the CSV files ``paths``."""
    rows = read_rows(paths)
    print("\n".join(summarize(rows)))
    if markdown is not None:
        print("\n" + "\n".join(markdown(rows)))
