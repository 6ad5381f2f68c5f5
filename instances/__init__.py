"""Instance generators and loaders (OR-Library, score tables, response matrices).

Names are imported lazily so ``import instances`` stays light.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    # OR-Library p-median
    "load_pmed": "instances.orlib",
    "load_pmed_optima": "instances.orlib",
    "read_pmed_graph": "instances.orlib",
    # seeded generators
    "make_kmedoids": "instances.synthetic",
    # positional (score tables, rankings)
    "load_score_table": "instances.scores",
    "mallows_profile": "instances.scores",
    "swap_pairs_profile": "instances.scores",
    "score_directions": "instances.scores",
    # response tensors
    "load_responses": "instances.responses",
    "make_multimetric": "instances.responses",
    "paper_split": "instances.responses",
    "Responses": "instances.responses",
    # model splits for BayesAME
    "interpolation_split": "instances.splits",
    "extrapolation_split": "instances.splits",
    # instance files
    "save_instance": "instances.files",
    "load_instance": "instances.files",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'instances' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
