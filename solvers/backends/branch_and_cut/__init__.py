"""Branch-and-cut for models with lazy rows, HiGHS solving every node LP (:class:`BranchAndCut`).

Split along its parts: :mod:`.options`, :mod:`.state` (shared search state,
nodes, cut pool), :mod:`.search` (the search loop and node LPs), :mod:`.cuts`
(separation, ageing, fixing), :mod:`.branching` (pseudo-costs, strong
branching), :mod:`.threads` (further search threads), :mod:`.memory`
(resident memory).
"""
from __future__ import annotations

from benchsel.solvers.backends.branch_and_cut import memory
from benchsel.solvers.backends.branch_and_cut.memory import RETIRE_SHARE
from benchsel.solvers.backends.branch_and_cut.options import BnCOptions
from benchsel.solvers.backends.branch_and_cut.search import BranchAndCut
from benchsel.solvers.backends.branch_and_cut.state import _CutPool

__all__ = ["RETIRE_SHARE", "BnCOptions", "BranchAndCut", "memory"]
