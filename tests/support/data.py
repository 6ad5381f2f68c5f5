"""Where the shared real data lives for the tests, and the marker of the tests that need it."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from benchsel.benchmarks._data import default_data_dir

F = TypeVar("F", bound=Callable[..., Any])

#: ``$BENCHSEL_DATA``, else the ``shared/data`` folder beside the repository (None when absent).
DATA: Path | None = default_data_dir()


def needs_data(*parts: str) -> Callable[[F], F]:
    """Mark a test ``data`` and skip it when ``DATA / parts`` (a file or folder) is missing."""
    where = None if DATA is None else DATA.joinpath(*parts)
    missing = where is None or not where.exists()
    skip = pytest.mark.skipif(missing, reason=f"shared data not present: {'/'.join(parts) or 'data folder'}")

    def mark(test: F) -> F:
        return pytest.mark.data(skip(test))

    return mark
