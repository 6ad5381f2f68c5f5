"""Where the shared real data lives."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_data_dir"]


def default_data_dir() -> Path | None:
    """``$BENCHSEL_DATA``, else ``../shared/data`` beside the repository or the working directory."""
    env = os.environ.get("BENCHSEL_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    for base in (here, Path.cwd()):
        cand = base.parent / "shared" / "data"
        if cand.is_dir():
            return cand
    return None
