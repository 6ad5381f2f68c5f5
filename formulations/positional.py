"""Positional representation and positional proportionality of metrics.

A *profile* ranks ``m`` alternatives (models) under each of ``n`` metrics:
``positions[a, i] = sigma_i(a)`` in ``1..m`` (1 = best). The items a selection
is drawn from are the **metrics** (the columns of a score table), so
``Result.selection`` holds column positions.

* ``C(N, r, a) = #{i in N : sigma_i(a) <= r}``;
* :class:`~benchsel.formulations.representation.PositionalRepresentation`: ``K`` is g-representative when
  ``C(K, r, a) >= floor(C(N, r, a) / g)`` for every alternative ``a`` and
  cut-off ``r`` (within every metric group in the generalised version);
  minimise ``|K|``;
* :class:`~benchsel.formulations.proportionality.PositionalProportionality`: ``K`` is eps-proportional when
  ``|C(N, r, a)/|N| - C(K, r, a)/|K|| <= eps``; minimise ``|K|``, or, for a
  fixed size ``k``, minimise the largest deviation.

Both are built from a score table (:meth:`~_PositionalBase.from_scores`: tie
and missing-data policies, orientation) or from rankings. Feasibility is
decided in exact integer arithmetic (``eps`` is read as the simplest rational
within ``1e-12``; 0.1 means 1/10), so the exact models, the heuristics and
:meth:`check` agree on boundary cases.

Diagnostics: :meth:`~_PositionalBase.count_table` (the ``C(N, r, a)`` table),
:meth:`~benchsel.formulations.representation.PositionalRepresentation.violations` / :meth:`_PositionalBase.deviations`
(violated or worst ``(alternative, r)`` pairs), :meth:`~_PositionalBase.scoring_rule_check`
(Borda, plurality, top-r approval on ``K`` vs ``N``) and ``bounds()`` (worst-case
bounds beside what was found).

This module holds their shared base (data, exact eps fractions, the cut structure: which alternatives
and cut-offs constrain which metrics, and the diagnostics); the formulations are in
:mod:`benchsel.formulations.representation` and :mod:`benchsel.formulations.proportionality`.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_allocation, check_choice, check_float, check_int

from .base import Formulation
from .rankings import EPS_MAX_DENOMINATOR, MISSING, TIES, Profile, count_table, import_pandas, rankdata, scoring_vector


# ==================================================================== helpers
def _eps_fraction(eps: Any, name: str = "eps") -> Fraction:
    if isinstance(eps, Fraction):
        fr = eps
    else:
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
            raise InvalidInputError(f"{name}: expected a real number with 0 < {name} < 1, got {eps!r}")
        x = check_float(eps, name, low=0.0, high=1.0, low_open=True, high_open=True)
        fr = Fraction(x).limit_denominator(EPS_MAX_DENOMINATOR)
    if not 0 < fr < 1:
        raise InvalidInputError(f"{name}: expected 0 < {name} < 1, got {float(fr):g}")
    return fr


def _unique_rows(B: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct row of the bool matrix B, in original order."""
    if B.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    packed = np.packbits(B, axis=1)
    _, first = np.unique(packed, axis=0, return_index=True)
    return np.sort(first)


def _dominated(B: np.ndarray, h: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Rows of ``sum_{T_j} x >= h_j`` implied by another row: ``h_j <= h_i - |T_i \\ T_j|``.

    Rows must be distinct; then implication is a strict partial order and
    every dominated row is implied by an undominated one.
    """
    R = B.shape[0]
    out = np.zeros(R, dtype=bool)
    if R < 2:
        return out
    Bf = B.astype(np.float32)
    s = Bf.sum(axis=1)
    base = (h - s).astype(np.float32)  # h_i - |T_i|
    for lo in range(0, R, chunk):
        hi = min(lo + chunk, R)
        inter = Bf @ Bf[lo:hi].T  # (R, hi-lo): |T_i ∩ T_j|
        cond = (base[:, None] + inter) >= h[None, lo:hi]
        cond[np.arange(lo, hi), np.arange(hi - lo)] = False
        out[lo:hi] = cond.any(axis=0)
    return out


def _cut_structure(P: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct top-r set of every alternative, restricted to the metric subset ``cols``.

    Returns
    -------
    alt : ndarray of int, shape (Q,)
        Alternative of each cut.
    r : ndarray of int, shape (Q,)
        Cut-off (an attained position value).
    size : ndarray of int, shape (Q,)
        ``C(cols, r, a)``.
    B : ndarray of bool, shape (Q, n)
        Membership of the cut's metrics (columns outside ``cols`` False).
    """
    n = P.shape[1]
    Pg = P[:, cols]
    s = cols.size
    order = np.lexsort((np.broadcast_to(np.arange(s), Pg.shape), Pg), axis=1)  # by position, then metric index
    sp = np.take_along_axis(Pg, order, axis=1)
    last = np.ones_like(sp, dtype=bool)
    last[:, :-1] = sp[:, 1:] != sp[:, :-1]
    alt, idx = np.nonzero(last)
    size = idx + 1
    r = sp[alt, idx]
    inv = np.empty_like(order)
    np.put_along_axis(inv, order, np.broadcast_to(np.arange(s), order.shape), axis=1)
    Bg = inv[alt] < size[:, None]
    B = np.zeros((alt.size, n), dtype=bool)
    B[:, cols] = Bg
    return alt, r, size, B



# ================================================================== helpers
def _resolve_groups(groups: Any, metrics: tuple[str, ...]) -> list[list[int]] | None:
    """Column names or positions -> positions."""
    if groups is None:
        return None
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence):
        raise InvalidInputError(
            f"groups: expected a list of metric groups (lists of column names or positions), got {groups!r}")
    index = {m: i for i, m in enumerate(metrics)}
    out = []
    for t, G in enumerate(groups):
        if isinstance(G, (str, bytes)) or not isinstance(G, (Sequence, np.ndarray)):
            raise InvalidInputError(f"groups[{t}]: expected a list of column names or positions, got {G!r}")
        row = []
        for v in G:
            if isinstance(v, str):
                if v not in index:
                    raise InvalidInputError(f"groups[{t}]: unknown metric column {v!r}")
                row.append(index[v])
            elif isinstance(v, (numbers.Integral,)) and not isinstance(v, bool):
                row.append(int(v))
            else:
                raise InvalidInputError(f"groups[{t}]: expected column names or integer positions, got {v!r}")
        out.append(row)
    return out


def _metric_ids(values: Any, metrics: tuple[str, ...], name: str) -> np.ndarray:
    """Metric column names or positions -> positions (int64, shape (len(values),), order kept).

    Unknown names and positions outside ``[0, n)`` are named in the error.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise InvalidInputError(f"{name}: expected a list of metric column names or positions, got {values!r}")
    n = len(metrics)
    index = {m: i for i, m in enumerate(metrics)}
    out, unknown = [], []
    for v in values:
        if isinstance(v, str):
            if v in index:
                out.append(index[v])
            else:
                unknown.append(repr(v))
        elif isinstance(v, numbers.Integral) and not isinstance(v, bool):
            if 0 <= int(v) < n:
                out.append(int(v))
            else:
                unknown.append(str(int(v)))
        else:
            raise InvalidInputError(f"{name}: expected metric column names or integer positions, got {v!r}")
    if unknown:
        raise InvalidInputError(f"{name}: expected metric column names or positions in [0, {n}), got unknown "
                                f"metric(s) {', '.join(unknown[:10])}{' ...' if len(unknown) > 10 else ''}")
    return np.asarray(out, dtype=np.int64)


def _check_include(include: Any, metrics: tuple[str, ...]) -> np.ndarray:
    """``include``: distinct known metrics -> sorted positions, int64 shape (s,) (empty when None)."""
    if include is None:
        return np.zeros(0, dtype=np.int64)
    ids = _metric_ids(include, metrics, "include")
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        dup = [metrics[i] for i in uniq[counts > 1]]
        raise InvalidInputError(f"include: expected distinct metrics, got {', '.join(map(repr, dup[:10]))} "
                                "more than once")
    return uniq


def _check_partition(groups: Any, metrics: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """``groups`` must partition the metrics: non-empty, disjoint, covering every metric.

    Returns the groups as sorted int64 position arrays; the error names the
    offending group and metrics.
    """
    if isinstance(groups, (str, bytes)) or not isinstance(groups, (Sequence, np.ndarray)) or len(groups) == 0:
        raise InvalidInputError("groups: expected a non-empty list of metric groups (lists of column names or "
                                f"positions) partitioning the metrics, got {groups!r}")
    out: list[np.ndarray] = []
    owner: dict[int, int] = {}
    for t, G in enumerate(groups):
        ids = _metric_ids(G, metrics, f"groups[{t}]")
        if ids.size == 0:
            raise InvalidInputError(f"groups[{t}]: expected a non-empty group of metrics, got an empty one")
        for i in ids.tolist():
            if i in owner:
                where = "twice in that group" if owner[i] == t else f"also in groups[{owner[i]}]"
                raise InvalidInputError(f"groups[{t}]: groups must not overlap, got metric {metrics[i]!r} "
                                        f"(position {i}) {where}")
            owner[i] = t
        out.append(np.sort(ids))
    left = [i for i in range(len(metrics)) if i not in owner]
    if left:
        names = ", ".join(repr(metrics[i]) for i in left[:10])
        raise InvalidInputError(f"groups: expected every metric in exactly one group, got {len(left)} left out: "
                                f"{names}{' ...' if len(left) > 10 else ''}")
    return tuple(out)


def _positional_iv(positions: Any, ties: Any, alternatives: Any) -> np.ndarray:
    """Checks of the positional formulations' ``positions`` (pure); returns them as int64, shape (m, n).

    Every column must be a ranking of the ``m`` alternatives with ties: a
    permutation of ``1..m``, or competition ranks (``ties="min"``: tied
    alternatives share the best of their places, 1, 2, 2, 4) or their mirror
    (``ties="max"``: 1, 3, 3, 4); with ``ties`` given, the column must follow
    it. The ``(m, m)`` count tables must fit in memory; alternative labels
    must be distinct.
    """
    try:
        P = np.asarray(positions)
    except Exception:  # pragma: no cover
        raise InvalidInputError(f"positions: expected a 2-D integer array, got {type(positions).__name__}") from None
    if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 1:
        raise InvalidInputError(
            f"positions: expected shape (m alternatives, n metrics) with m, n >= 1, got shape {P.shape}")
    if P.dtype.kind == "b" or not np.issubdtype(P.dtype, np.number):
        raise InvalidInputError(f"positions: expected integer positions 1..m, got dtype {P.dtype}")
    if not np.issubdtype(P.dtype, np.integer):
        if np.issubdtype(P.dtype, np.floating) and np.isfinite(P).all() and np.all(P == np.round(P)):
            P = P.astype(np.int64)
        else:
            raise InvalidInputError(f"positions: expected integer positions 1..m, got dtype {P.dtype}")
    m, n = P.shape
    if P.min() < 1 or P.max() > m:
        raise InvalidInputError(f"positions: expected values in 1..m = 1..{m}, got {P.min()}..{P.max()}")
    check_allocation(6 * 8.0 * m * m + float(m) * n * n, "positions",
                     f"the (m, m) count tables and cut sets of m = {m} alternatives x n = {n} metrics")
    P = P.astype(np.int64)
    lo = rankdata(P, method="min", axis=0) == P
    hi = rankdata(P, method="max", axis=0) == P
    rule = {"min": lo, "max": hi, "ordinal": lo & hi}.get(ties) if ties in TIES else lo | hi
    ok = rule.all(axis=0) if rule is not None else np.ones(n, bool)
    if not ok.all():
        j = int(np.flatnonzero(~ok)[0])
        col = P[:, j].tolist()
        want = {"min": "competition ranks (ties share the best place: 1, 2, 2, 4)",
                "max": "ranks whose ties share the worst place (1, 3, 3, 4)",
                "ordinal": "a permutation of 1..m"}.get(ties, "a permutation of 1..m or ranks with ties "
                                                           "(1, 2, 2, 4 or 1, 3, 3, 4)")
        raise InvalidInputError(
            f"positions: column {j} is not a ranking of the m = {m} alternatives: expected {want}, got "
            f"{col[:12]}{' ...' if m > 12 else ''} ({int((~ok).sum())} such columns)"
        )
    if alternatives is not None and not isinstance(alternatives, str):
        labels = [str(a) for a in alternatives]
        if len(set(labels)) != len(labels):
            dup = next(a for i, a in enumerate(labels) if a in labels[:i])
            raise InvalidInputError(f"alternatives: expected distinct labels, got {dup!r} more than once")
    return P


# ============================================================ the base class
class _PositionalBase(Formulation):
    """Shared data, ranking and diagnostics of the two positional formulations.

    Parameters
    ----------
    positions : array_like of int, shape (m alternatives, n metrics)
        ``positions[a, i] = sigma_i(a)`` in ``1..m`` (1 = best; equal values are ties).
    alternatives, metrics : sequence of str, optional
        Labels (default ``"0", "1", ...``).
    ties, missing : str, optional
        The policies that produced ``positions`` (recorded in results).
    dropped_alternatives : sequence of str
        Alternatives removed by ``missing="drop"`` (recorded).
    include : sequence of int or str, optional
        Metrics (positions or column names) every selection must contain, e.g.
        an existing lite subset to start from (forced inclusion).
    """

    sense = "min"

    def __init__(self, positions: Any, *, alternatives: Sequence[str] | None = None,
                 metrics: Sequence[str] | None = None, ties: str | None = None, missing: str | None = None,
                 dropped_alternatives: Sequence[str] = (), include: Sequence[Any] | None = None) -> None:
        P = _positional_iv(positions, ties, alternatives)
        m, n = P.shape
        self._P = np.ascontiguousarray(P, dtype=np.int64)
        self._P.setflags(write=False)
        self._alts = self._labels(alternatives, m, "alternatives")
        self._mets = self._labels(metrics, n, "metrics")
        if ties is not None:
            check_choice(ties, "ties", TIES)
        if missing is not None:
            check_choice(missing, "missing", MISSING)
        self.ties = ties
        self.missing = missing
        self.dropped_alternatives = tuple(str(a) for a in dropped_alternatives)
        self._include = _check_include(include, self._mets)
        self._include.setflags(write=False)

    @staticmethod
    def _labels(labels: Sequence[str] | None, size: int, name: str) -> tuple[str, ...]:
        if labels is None:
            return tuple(str(i) for i in range(size))
        out = tuple(str(x) for x in labels)
        if len(out) != size:
            raise InvalidInputError(f"{name}: expected {size} labels, got {len(out)}")
        return out

    # ------------------------------------------------------------ builders
    @classmethod
    def _from_profile(cls, prof: Profile, **kw: Any) -> Any:
        return cls(prof.positions, alternatives=prof.alternatives, metrics=prof.metrics, ties=prof.ties,
                   missing=prof.missing, dropped_alternatives=prof.dropped, **kw)

    # ------------------------------------------------------------------ data
    @property
    def positions(self) -> np.ndarray:
        """``sigma_i(a)``, shape (m alternatives, n metrics), read-only."""
        return self._P

    @property
    def eps(self) -> float | None:
        """The proportionality tolerance ``eps`` (None: a formulation without one, such as representation)."""
        return None

    @property
    def alternatives(self) -> tuple[str, ...]:
        return self._alts

    @property
    def metrics(self) -> tuple[str, ...]:
        return self._mets

    @property
    def n_items(self) -> int:
        return int(self._P.shape[1])

    @property
    def n_metrics(self) -> int:
        return int(self._P.shape[1])

    @property
    def n_alternatives(self) -> int:
        return int(self._P.shape[0])

    def _base_params(self) -> dict[str, Any]:
        return {
            "positions": self._P,
            "alternatives": self._alts,
            "metrics": self._mets,
            "ties": self.ties,
            "missing": self.missing,
            "dropped_alternatives": self.dropped_alternatives,
            "include": self._include.tolist() if self._include.size else None,
        }

    def _policy_extras(self) -> dict[str, Any]:
        return {
            "ties": self.ties if self.ties is not None else "given",
            "missing": self.missing if self.missing is not None else "given",
            "n_metrics": self.n_metrics,
            "n_alternatives": self.n_alternatives,
            "n_alternatives_dropped": len(self.dropped_alternatives),
            "n_included": int(self._include.size),
        }

    # ------------------------------------------------------ forced inclusion
    @property
    def include(self) -> np.ndarray:
        """Metrics every selection must contain, sorted positions, shape (s,) (read-only)."""
        return self._include

    def _include_reasons(self, K: np.ndarray) -> list[str]:
        """Why ``K`` misses forced metrics (empty: it contains every one of ``include``)."""
        miss = np.setdiff1d(self._include, K)
        if miss.size == 0:
            return []
        names = ", ".join(repr(self._mets[i]) for i in miss[:10])
        return [f"include: {miss.size} forced metric(s) not selected: {names}{' ...' if miss.size > 10 else ''}"]

    def _include_first(self, rng: np.random.Generator) -> np.ndarray:
        """A random order of the metrics with the forced ones first, shape (n,)."""
        rest = np.setdiff1d(np.arange(self.n_metrics), self._include)
        first = rng.permutation(self._include.copy()) if self._include.size else self._include
        return np.concatenate([first, rng.permutation(rest)]).astype(np.int64)

    # ---------------------------------------------------------- diagnostics
    def counts(self, selection: Any = None) -> np.ndarray:
        """``C(K, r, a)`` for every alternative and cut-off.

        Parameters
        ----------
        selection : array_like of int, optional
            Metrics ``K`` (default all, ``K = N``).

        Returns
        -------
        ndarray of int64, shape (m, m)
            ``[a, r - 1]``.
        """
        cols = None if selection is None else self.as_selection(selection)
        return count_table(self._P, cols)

    def count_table(self, selection: Any = None) -> pd.DataFrame:
        """The ``C(K, r, a)`` table as a DataFrame (rows alternatives, columns ``r = 1..m``)."""
        pd = import_pandas()
        return pd.DataFrame(self.counts(selection), index=pd.Index(self._alts, name="alternative"),
                            columns=pd.Index(np.arange(1, self.n_alternatives + 1), name="r"))

    def max_deviation(self, selection: Any) -> float:
        """``max_{a, r} |C(N, r, a)/|N| - C(K, r, a)/|K||`` for a non-empty ``K``."""
        K = self.as_selection(selection)
        if K.size == 0:
            raise InvalidInputError("selection: expected at least one metric, got an empty selection")
        return float(self._dev_num(K).max()) / (self.n_metrics * K.size)

    def _dev_num(self, K: np.ndarray) -> np.ndarray:
        """``|C_N k - C_K n|`` as integers, shape (m, m)."""
        return np.abs(self._counts_all * K.size - count_table(self._P, K) * self.n_metrics)

    @cached_property
    def _counts_all(self) -> np.ndarray:
        return count_table(self._P)

    def deviations(self, selection: Any, top: int | None = 20) -> pd.DataFrame:
        """The ``(alternative, r)`` pairs with the largest ``|C(N,r,a)/|N| - C(K,r,a)/|K||``.

        Only cut-offs ``r`` that are an attained position of ``a`` are listed
        (between two attained positions the counts do not change).

        Returns
        -------
        pandas.DataFrame
            Columns ``alternative, r, share_N, share_K, deviation``, sorted by
            decreasing deviation (``top`` rows; None: all).
        """
        K = self.as_selection(selection)
        if K.size == 0:
            raise InvalidInputError("selection: expected at least one metric, got an empty selection")
        n, k, m = self.n_metrics, K.size, self.n_alternatives
        CN, CK = self._counts_all, count_table(self._P, K)
        attained = np.zeros((m, m), dtype=bool)
        attained[np.repeat(np.arange(m), n), (self._P - 1).ravel()] = True
        a, r = np.nonzero(attained)
        dev = np.abs(CN[a, r] / n - CK[a, r] / k)
        order = np.lexsort((r, a, -dev))
        if top is not None:
            order = order[: check_int(top, "top", low=1)]
        return import_pandas().DataFrame({
            "alternative": [self._alts[i] for i in a[order]],
            "r": r[order] + 1,
            "share_N": CN[a, r][order] / n,
            "share_K": CK[a, r][order] / k,
            "deviation": dev[order],
        })

    def scoring_rule_check(self, selection: Any, rules: Sequence[Any] = ("borda", "plurality", "top-3"),
                           eps: float | None = None) -> pd.DataFrame:
        """Normalised positional scores of every alternative on ``K`` vs on ``N``.

        For a scoring vector ``s_1 >= ... >= s_m`` (``s_{m+1} = 0``),
        ``f_s(a, sigma) = sum_r C(sigma, r, a) (s_r - s_{r+1})`` and the normalised
        score is ``f_s / |sigma|``. Since the ``r = m`` term is the same on both
        sides, ``|f_s(a, K)/|K| - f_s(a, N)/|N|| <= maxdev(K) * (s_1 - s_m)``,
        which is at most ``eps * (s_1 - s_m)`` for an eps-proportional ``K``.

        Parameters
        ----------
        selection : array_like of int
            Metrics ``K`` (non-empty).
        rules : sequence
            Rule names or vectors (see :func:`scoring_vector`); ``top-R`` with
            ``R > m`` is clipped to ``m``.
        eps : float, optional
            Show ``eps * (s_1 - s_m)`` as well (defaults to the formulation's eps, if any).

        Returns
        -------
        pandas.DataFrame
            One row per (rule, alternative): ``rule, alternative, score_N,
            score_K, abs_diff, bound`` (``maxdev(K) * (s_1 - s_m)``),
            ``eps_bound``, ``within_bound``.
        """
        K = self.as_selection(selection)
        if K.size == 0:
            raise InvalidInputError("selection: expected at least one metric, got an empty selection")
        m, n, k = self.n_alternatives, self.n_metrics, K.size
        CN, CK = self._counts_all, count_table(self._P, K)
        maxdev = float(self._dev_num(K).max()) / (n * k)
        eps_v = eps if eps is not None else self.eps
        pd = import_pandas()
        frames = []
        for rule in rules:
            if isinstance(rule, str) and rule.lower().startswith("top-"):
                try:
                    R = min(int(rule[4:]), m)
                    rule = f"top-{R}"
                except ValueError:
                    pass
            name, s = scoring_vector(rule, m)
            ds = s - np.append(s[1:], 0.0)
            fN, fK = CN @ ds / n, CK @ ds / k
            span = float(s[0] - s[-1])
            diff = np.abs(fK - fN)
            bound = maxdev * span
            frames.append(pd.DataFrame({
                "rule": name, "alternative": list(self._alts), "score_N": fN, "score_K": fK, "abs_diff": diff,
                "bound": bound, "eps_bound": np.nan if eps_v is None else float(eps_v) * span,
                "within_bound": diff <= bound + 1e-12 * max(1.0, span),
            }))
        return pd.concat(frames, ignore_index=True)

    # ---------------------------------------------------------------- misc
    def _label_K(self, K: np.ndarray) -> list[str]:
        return [self._mets[i] for i in K]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_metrics={self.n_metrics}, n_alternatives={self.n_alternatives}"
                f"{self._repr_extra()})")

    def _repr_extra(self) -> str:
        return ""


def _harmonic(d: int) -> float:
    return float(np.sum(1.0 / np.arange(1, d + 1))) if d >= 1 else 0.0
