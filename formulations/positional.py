"""Positional representation and positional proportionality of metrics.

A *profile* ranks ``m`` alternatives (models) under each of ``n`` metrics:
``positions[a, i] = sigma_i(a)`` in ``1..m`` (1 = best). The items a selection
is drawn from are the **metrics** (the columns of a score table), so
``Result.selection`` holds column positions.

* ``C(N, r, a) = #{i in N : sigma_i(a) <= r}``;
* :class:`PositionalRepresentation`: ``K`` is g-representative when
  ``C(K, r, a) >= floor(C(N, r, a) / g)`` for every alternative ``a`` and
  cut-off ``r`` (within every metric group in the generalised version);
  minimise ``|K|``;
* :class:`PositionalProportionality`: ``K`` is eps-proportional when
  ``|C(N, r, a)/|N| - C(K, r, a)/|K|| <= eps``; minimise ``|K|``, or, for a
  fixed size ``k``, minimise the largest deviation.

Both are built from a score table (:meth:`~_PositionalBase.from_scores`: tie
and missing-data policies, orientation) or from rankings. Feasibility is
decided in exact integer arithmetic (``eps`` is read as the simplest rational
within ``1e-12``; 0.1 means 1/10), so the exact models, the heuristics and
:meth:`check` agree on boundary cases.

Diagnostics: :meth:`~_PositionalBase.count_table` (the ``C(N, r, a)`` table),
:meth:`PositionalRepresentation.violations` / :meth:`_PositionalBase.deviations`
(violated or worst ``(alternative, r)`` pairs), :meth:`~_PositionalBase.scoring_rule_check`
(Borda, plurality, top-r approval on ``K`` vs ``N``) and ``bounds()`` (worst-case
bounds beside what was found).
"""
from __future__ import annotations

from .proportionality import PositionalProportionality
from .rankings import MISSING, TIES, Profile, count_table, rank_table, scoring_vector
from .representation import PositionalRepresentation

__all__ = [
    "MISSING",
    "TIES",
    "PositionalProportionality",
    "PositionalRepresentation",
    "Profile",
    "count_table",
    "rank_table",
    "scoring_vector",
]
