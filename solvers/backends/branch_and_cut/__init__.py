"""Branch-and-cut for models with lazy rows, HiGHS solving every node LP (:class:`BranchAndCut`).

Decomposed into objects with their own state, composed by :class:`BranchAndCut` (:mod:`.search`):
:mod:`.options` (the settings), :mod:`.nodes` (nodes and the shared queue), :mod:`.shared` (the clock,
incumbent, global fixings and pseudo-costs every thread shares), :mod:`.pool` (the cut pool), :mod:`.lp`
(a thread's LP relaxation in HiGHS), :mod:`.cuts` (separation), :mod:`.branching` (pseudo-cost and strong
branching), :mod:`.searcher` (one search thread's loop and progress lines), :mod:`.threads` (the search
threads and the memory budget), :mod:`.memory` (resident memory). The imports run one way, in that order.
"""
from __future__ import annotations

from benchsel.solvers.backends.branch_and_cut import memory
from benchsel.solvers.backends.branch_and_cut.memory import RETIRE_SHARE
from benchsel.solvers.backends.branch_and_cut.options import BnCOptions
from benchsel.solvers.backends.branch_and_cut.pool import CutPool
from benchsel.solvers.backends.branch_and_cut.search import BranchAndCut

__all__ = ["RETIRE_SHARE", "BnCOptions", "BranchAndCut", "CutPool", "memory"]
