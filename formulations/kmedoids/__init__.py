"""k-medoids (p-median) coresets: AnchorPoints and RepCore-style clustering.

``min_{S subset of candidates, |S| = k}  sum_i w_i * min_{j in S} D[i, j]``

The package is split along its concerns, each an object or function over the checked data, composed by
:class:`KMedoids` (:mod:`.problem`): :mod:`.distances` (the dissimilarity matrix, block by block),
:mod:`.checks` (argument checks), :mod:`.data` (the validated data, :class:`KMedoidsData`), :mod:`.twins`
(twin candidates and items, :class:`Twins`), :mod:`.statements` (sizes, guards and the choice of a
statement), :mod:`.models` (the assignment, radius and Benders statements), :mod:`.bounds` (sorted
candidate lists), :mod:`.lagrangian` (the Lagrangian bound), :mod:`.greedy` (PAM's BUILD), :mod:`.benders`
(the Benders cuts of the lazy master), :mod:`.swap` (the swap state of the heuristics and of the cut
generator's incumbent improvement).
"""
from __future__ import annotations

from .benders import BendersCuts
from .bounds import SortedRows
from .checks import ModelTooLargeError
from .distances import DTYPES, METRICS, dissimilarity
from .problem import KMedoids
from .swap import SwapState

__all__ = ["DTYPES", "METRICS", "BendersCuts", "KMedoids", "ModelTooLargeError", "SortedRows", "SwapState",
           "dissimilarity"]
