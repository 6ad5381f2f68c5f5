"""F2 / F3 — positional representation and positional proportionality of metrics.

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

import itertools
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from benchsel.solvers.errors import InvalidInputError
from benchsel.solvers.model import LinearModel, ModelBuilder
from benchsel.solvers.validation import check_choice, check_float, check_int

from .base import Check, Formulation

__all__ = [
    "PositionalRepresentation",
    "PositionalProportionality",
    "Profile",
    "rank_table",
    "count_table",
    "scoring_vector",
    "TIES",
    "MISSING",
]

TIES = ("min", "max", "ordinal")
MISSING = ("error", "last", "drop")
#: Cells read as a missing score besides NaN / None (the leaderboards write ``-``).
MISSING_TOKENS = ("-", "")
#: eps is read as the simplest fraction with a denominator up to this bound.
EPS_MAX_DENOMINATOR = 10**6


# ====================================================================== ranking
@dataclass(frozen=True)
class Profile:
    """Rankings derived from a score table.

    Attributes
    ----------
    positions : ndarray of int64, shape (m, n)
        ``positions[a, i] = sigma_i(a)``, 1 = best.
    alternatives : tuple of str, length m
    metrics : tuple of str, length n
    ties, missing : str
        Policies used.
    dropped : tuple of str
        Alternatives removed by ``missing="drop"``.
    n_missing : int
        Missing cells in the input table.
    higher_is_better : ndarray of bool, shape (n,)
        Orientation used for each metric.
    """

    positions: np.ndarray
    alternatives: tuple[str, ...]
    metrics: tuple[str, ...]
    ties: str
    missing: str
    dropped: tuple[str, ...]
    n_missing: int
    higher_is_better: np.ndarray


def _table_values(table: Any) -> tuple[np.ndarray, list[str], list[str], list[str] | None]:
    """Float values (NaN where missing), alternative and metric labels, lower-is-better names from attrs."""
    lower_attr = None
    if isinstance(table, pd.DataFrame):
        df = table
        if "lower_is_better" in df.attrs:
            lower_attr = [str(c) for c in df.attrs["lower_is_better"]]
    else:
        if hasattr(table, "to_numpy") and not isinstance(table, np.ndarray):
            raise InvalidInputError(f"table: expected a DataFrame or a 2-D array (alternatives x metrics), got {type(table).__name__}")
        try:
            arr = np.asarray(table)
        except Exception:  # pragma: no cover - exotic input
            raise InvalidInputError(f"table: expected a 2-D array (alternatives x metrics), got {type(table).__name__}") from None
        if arr.ndim != 2:
            raise InvalidInputError(f"table: expected a 2-D array of shape (m alternatives, n metrics), got shape {arr.shape}")
        df = pd.DataFrame(arr)
    if df.ndim != 2 or df.shape[0] < 1 or df.shape[1] < 1:
        raise InvalidInputError(f"table: expected at least one alternative (row) and one metric (column), got shape {df.shape}")
    alts = [str(a) for a in df.index]
    mets = [str(c) for c in df.columns]
    if len(set(mets)) != len(mets):
        dup = pd.Index(mets)[pd.Index(mets).duplicated()][0]
        raise InvalidInputError(f"table: expected distinct metric (column) names, got {dup!r} more than once")
    values = np.empty(df.shape, dtype=float)
    for j in range(df.shape[1]):
        s = df.iloc[:, j]
        if pd.api.types.is_bool_dtype(s.dtype):
            raise InvalidInputError(f"table: column {mets[j]!r} holds booleans, expected numeric scores")
        if pd.api.types.is_numeric_dtype(s.dtype):
            v = s.to_numpy(dtype=float, na_value=np.nan)
        else:
            miss = s.isna().to_numpy() | s.map(lambda c: isinstance(c, str) and c.strip() in MISSING_TOKENS).to_numpy(bool)
            num = pd.to_numeric(s.where(~miss), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            bad = np.isnan(num) & ~miss
            bad |= np.array([isinstance(c, (bool, np.bool_)) for c in s], dtype=bool)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InvalidInputError(
                    f"table: {int(bad.sum())} non-numeric cells in column {mets[j]!r}, first for alternative "
                    f"{alts[i]!r}: {s.iloc[i]!r} (expected numbers; NaN, None or '-' mark a missing score)"
                )
            v = num
        values[:, j] = v
    inf = np.isinf(values)
    if inf.any():
        i, j = (int(t) for t in np.argwhere(inf)[0])
        raise InvalidInputError(
            f"table: expected finite scores, got {int(inf.sum())} infinite cells, first for alternative {alts[i]!r} "
            f"in column {mets[j]!r}"
        )
    return values, alts, mets, lower_attr


def _directions(higher_is_better: Any, mets: list[str], lower_attr: list[str] | None) -> np.ndarray:
    n = len(mets)
    if higher_is_better is None:
        if lower_attr is None:
            return np.ones(n, dtype=bool)
        return np.array([c not in set(lower_attr) for c in mets], dtype=bool)
    if isinstance(higher_is_better, (bool, np.bool_)):
        return np.full(n, bool(higher_is_better))
    if isinstance(higher_is_better, Mapping):
        unknown = [k for k in higher_is_better if str(k) not in mets]
        if unknown:
            raise InvalidInputError(f"higher_is_better: expected metric (column) names as keys, got unknown {unknown[:5]}")
        flags = {str(k): v for k, v in higher_is_better.items()}
        out = np.ones(n, dtype=bool)
        for j, c in enumerate(mets):
            if c in flags:
                if not isinstance(flags[c], (bool, np.bool_)):
                    raise InvalidInputError(f"higher_is_better: expected a bool for column {c!r}, got {flags[c]!r}")
                out[j] = bool(flags[c])
        return out
    arr = np.asarray(higher_is_better)
    if arr.shape != (n,) or arr.dtype != bool:
        raise InvalidInputError(
            f"higher_is_better: expected one bool, a mapping column -> bool, or {n} bools (one per metric column), "
            f"got {arr.dtype} array of shape {arr.shape}"
        )
    return arr.copy()


def rank_table(table: Any, *, higher_is_better: Any = None, ties: str = "min", missing: str = "error") -> Profile:
    """Rank the alternatives (rows) of a score table within every metric (column).

    Parameters
    ----------
    table : pandas.DataFrame or array_like, shape (m alternatives, n metrics)
        Scores; NaN, None or ``'-'`` mark a missing score.
    higher_is_better : bool, sequence of n bools, or mapping column -> bool, optional
        Orientation. Default: the table's ``attrs["lower_is_better"]`` (set by
        :func:`benchsel.instances.load_score_table`) when present, else higher is better
        for every column.
    ties : {"min", "max", "ordinal"}
        ``"min"``: competition ranking (1, 2, 2, 4); ``"max"``: (1, 3, 3, 4);
        ``"ordinal"``: ties broken by alternative (row) index.
    missing : {"error", "last", "drop"}
        ``"error"``: raise, saying how many and where; ``"last"``: a missing
        score ranks tied for last (under the tie policy); ``"drop"``: remove every
        alternative with a missing score.

    Returns
    -------
    Profile
    """
    check_choice(ties, "ties", TIES)
    check_choice(missing, "missing", MISSING)
    values, alts, mets, lower_attr = _table_values(table)
    hib = _directions(higher_is_better, mets, lower_attr)
    miss = np.isnan(values)
    empty = miss.all(axis=0)
    if empty.any():
        cols = [mets[j] for j in np.flatnonzero(empty)]
        raise InvalidInputError(
            f"table: {len(cols)} metric column(s) with no score at all: {cols[:5]}{' ...' if len(cols) > 5 else ''} "
            f"(drop them; benchsel.instances.load_score_table does so by default)"
        )
    n_missing = int(miss.sum())
    dropped: tuple[str, ...] = ()
    if n_missing:
        if missing == "error":
            per_col = miss.sum(axis=0)
            cols = ", ".join(f"{mets[j]!r}: {int(per_col[j])}" for j in np.flatnonzero(per_col)[:6])
            i, j = (int(t) for t in np.argwhere(miss)[0])
            raise InvalidInputError(
                f"table: {n_missing} missing scores in {int(miss.any(axis=1).sum())} of {len(alts)} alternatives "
                f"(missing='error'); first for alternative {alts[i]!r} in column {mets[j]!r}; per column: {cols}"
                f"{' ...' if np.count_nonzero(per_col) > 6 else ''}. Pass missing='last' (tied for last) or "
                f"missing='drop' (drop those alternatives)"
            )
        if missing == "drop":
            keep = ~miss.any(axis=1)
            if not keep.any():
                raise InvalidInputError(
                    f"table: missing='drop' removes all {len(alts)} alternatives (each has a missing score); "
                    f"use missing='last'"
                )
            dropped = tuple(a for a, k in zip(alts, keep) if not k)
            values, alts, miss = values[keep], [a for a, k in zip(alts, keep) if k], miss[keep]
    oriented = np.where(hib[None, :], values, -values)
    oriented[miss] = -np.inf  # only reached under "last"
    pos = rankdata(-oriented, method=ties, axis=0).astype(np.int64)
    return Profile(pos, tuple(alts), tuple(mets), ties, missing, dropped, n_missing, hib)


def count_table(positions: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
    """``C[a, r-1] = #{i in columns : positions[a, i] <= r}`` for ``r = 1..m``.

    Parameters
    ----------
    positions : ndarray of int, shape (m, n)
    columns : ndarray of int, shape (k,), optional
        Metrics counted (default all).

    Returns
    -------
    ndarray of int64, shape (m, m)
    """
    P = positions if columns is None else positions[:, columns]
    m = P.shape[0]
    if P.shape[1] == 0:
        return np.zeros((m, m), dtype=np.int64)
    flat = (np.arange(m)[:, None] * m + (P - 1)).ravel()
    return np.cumsum(np.bincount(flat, minlength=m * m).reshape(m, m), axis=1)


def scoring_vector(rule: Any, m: int) -> tuple[str, np.ndarray]:
    """A positional scoring vector ``s_1 >= ... >= s_m``.

    Parameters
    ----------
    rule : str or array_like
        ``"borda"`` (``s_r = m - r``), ``"plurality"`` (``1, 0, ..., 0``),
        ``"veto"`` (``1, ..., 1, 0``), ``"top-R"`` (approval of the top ``R``:
        ``s_r = 1`` for ``r <= R``), or a non-increasing vector of length ``m``.
    m : int

    Returns
    -------
    (name, s) with s of shape (m,)
    """
    if isinstance(rule, str):
        r = rule.lower()
        if r == "borda":
            return "borda", (m - np.arange(1, m + 1)).astype(float)
        if r == "plurality":
            return "plurality", (np.arange(m) == 0).astype(float)
        if r == "veto":
            return "veto", (np.arange(m) < m - 1).astype(float)
        if r.startswith("top-"):
            try:
                R = int(r[4:])
            except ValueError:
                R = -1
            if not 1 <= R <= m:
                raise InvalidInputError(f"rules: expected 'top-R' with 1 <= R <= m = {m}, got {rule!r}")
            return f"top-{R}", (np.arange(1, m + 1) <= R).astype(float)
        raise InvalidInputError(f"rules: expected 'borda', 'plurality', 'veto', 'top-R' or a vector, got {rule!r}")
    s = np.asarray(rule, dtype=float)
    if s.shape != (m,) or not np.isfinite(s).all() or np.any(np.diff(s) > 0):
        raise InvalidInputError(f"rules: expected a non-increasing finite scoring vector of length m = {m}, got {rule!r}")
    return "custom", s


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
    m, n = P.shape
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
    """

    sense = "min"

    def __init__(self, positions: Any, *, alternatives: Sequence[str] | None = None,
                 metrics: Sequence[str] | None = None, ties: str | None = None, missing: str | None = None,
                 dropped_alternatives: Sequence[str] = ()) -> None:
        try:
            P = np.asarray(positions)
        except Exception:  # pragma: no cover
            raise InvalidInputError(f"positions: expected a 2-D integer array, got {type(positions).__name__}") from None
        if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 1:
            raise InvalidInputError(f"positions: expected shape (m alternatives, n metrics) with m, n >= 1, got shape {P.shape}")
        if not np.issubdtype(P.dtype, np.integer):
            if np.issubdtype(P.dtype, np.floating) and np.isfinite(P).all() and np.all(P == np.round(P)):
                P = P.astype(np.int64)
            else:
                raise InvalidInputError(f"positions: expected integer positions 1..m, got dtype {P.dtype}")
        m, n = P.shape
        if P.min() < 1 or P.max() > m:
            raise InvalidInputError(f"positions: expected values in 1..m = 1..{m}, got {P.min()}..{P.max()}")
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
        }

    def _policy_extras(self) -> dict[str, Any]:
        return {
            "ties": self.ties if self.ties is not None else "given",
            "missing": self.missing if self.missing is not None else "given",
            "n_metrics": self.n_metrics,
            "n_alternatives": self.n_alternatives,
            "n_alternatives_dropped": len(self.dropped_alternatives),
        }

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
        return pd.DataFrame({
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
        eps_v = eps if eps is not None else getattr(self, "eps", None)
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
        return f"{type(self).__name__}(n_metrics={self.n_metrics}, n_alternatives={self.n_alternatives}{self._repr_extra()})"

    def _repr_extra(self) -> str:
        return ""


def _harmonic(d: int) -> float:
    return float(np.sum(1.0 / np.arange(1, d + 1))) if d >= 1 else 0.0


# ============================================================ representation
class PositionalRepresentation(_PositionalBase):
    """Minimum g-representative metric subset (SPEC F2; set multicover).

    ``K`` is g-representative when ``C(K, r, a) >= floor(C(N, r, a) / g)`` for
    every alternative ``a`` and cut-off ``r``; with metric ``groups`` the
    condition holds within every group ``G``:
    ``C(K ∩ G, r, a) >= floor(C(G, r, a) / g)``. Objective ``|K|``.

    Parameters
    ----------
    positions : array_like of int, shape (m alternatives, n metrics)
        ``sigma_i(a)`` (1 = best); see :meth:`from_scores` to rank a score table.
    g : int
        Group size, ``1 <= g <= n``.
    groups : sequence of sequences of int, optional
        Metric groups (column positions; may overlap, need not cover every
        metric). Default: the single group of all metrics.
    alternatives, metrics, ties, missing, dropped_alternatives
        Labels and recorded policies (see :class:`_PositionalBase`).

    Notes
    -----
    Exact model: ``min sum x`` s.t. ``sum_{i in T} x_i >= h`` for the rows
    ``(T, h)`` left by SPEC's presolve: per (group, alternative) only the
    smallest cut-off at which ``h = floor(C/g)`` reaches each value, identical
    rows merged, and rows implied by another row
    (``h_j <= h_i - |T_i \\ T_j|``) dropped. ``linear_model(presolve=False)``
    states one row per (group, alternative, attained cut-off) instead.
    """

    model_options = {"presolve": (True, False)}

    def __init__(self, positions: Any, g: int, *, groups: Sequence[Sequence[int]] | None = None,
                 alternatives: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
                 ties: str | None = None, missing: str | None = None, dropped_alternatives: Sequence[str] = ()) -> None:
        super().__init__(positions, alternatives=alternatives, metrics=metrics, ties=ties, missing=missing,
                         dropped_alternatives=dropped_alternatives)
        n = self.n_metrics
        self.g = check_int(g, "g", low=1, high=n, high_doc=f"n = {n} (the number of metrics)")
        self._groups_given = groups is not None
        self._groups = self._check_groups(groups, n)

    @staticmethod
    def _check_groups(groups: Any, n: int) -> tuple[np.ndarray, ...]:
        if groups is None:
            return (np.arange(n, dtype=np.int64),)
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or len(groups) == 0:
            raise InvalidInputError(f"groups: expected a non-empty list of metric groups (lists of column positions), got {groups!r}")
        out = []
        for t, G in enumerate(groups):
            arr = np.asarray(G)
            if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
                raise InvalidInputError(f"groups[{t}]: expected a non-empty list of metric column positions, got {G!r}")
            if arr.min() < 0 or arr.max() >= n:
                raise InvalidInputError(f"groups[{t}]: expected column positions in [0, {n}), got {arr.min()}..{arr.max()}")
            if np.unique(arr).size != arr.size:
                raise InvalidInputError(f"groups[{t}]: expected distinct column positions, got {arr.size - np.unique(arr).size} repeated")
            out.append(np.sort(arr.astype(np.int64)))
        return tuple(out)

    @classmethod
    def from_scores(cls, table: Any, g: int, *, groups: Sequence[Sequence[Any]] | None = None,
                    higher_is_better: Any = None, ties: str = "min", missing: str = "error") -> "PositionalRepresentation":
        """Build from a score table.

        Parameters
        ----------
        table : pandas.DataFrame or array_like, shape (m alternatives, n metrics)
            One row per alternative, one column per metric; NaN, None or ``'-'``
            mark a missing score. Higher is better unless ``higher_is_better``
            says otherwise (or, by default, the DataFrame's
            ``attrs["lower_is_better"]`` names the column).
        g : int
            Group size, ``1 <= g <= n``.
        groups : sequence of sequences, optional
            Metric groups, as column positions or column names.
        higher_is_better : bool, sequence of n bools, or mapping column -> bool, optional
        ties : {"min", "max", "ordinal"}
        missing : {"error", "last", "drop"}
            See :func:`rank_table`.
        """
        prof = rank_table(table, higher_is_better=higher_is_better, ties=ties, missing=missing)
        return cls._from_profile(prof, g=g, groups=_resolve_groups(groups, prof.metrics))

    @classmethod
    def from_rankings(cls, rankings: Any, g: int, *, groups: Sequence[Sequence[Any]] | None = None,
                      ties: str = "min", missing: str = "error") -> "PositionalRepresentation":
        """Build from rankings: ``rankings[a, i]`` = position of alternative ``a`` under metric ``i``
        (1 = best; equal values tie), shape (m, n); re-ranked under ``ties`` (so dense
        positions 1, 1, 2 become 1, 1, 3 under ``"min"``)."""
        return cls.from_scores(_rankings_as_scores(rankings), g, groups=groups, higher_is_better=True, ties=ties,
                               missing=missing)

    @property
    def groups(self) -> tuple[np.ndarray, ...]:
        return self._groups

    def get_params(self) -> dict[str, Any]:
        return {**self._base_params(), "g": self.g,
                "groups": [G.tolist() for G in self._groups] if self._groups_given else None}

    def _repr_extra(self) -> str:
        return f", g={self.g}" + (f", groups={len(self._groups)}" if self._groups_given else "")

    # ------------------------------------------------------------- rows
    @cached_property
    def _requirements(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per group: (C(G, r, a) table, required floor(C/g) table), each (m, m)."""
        out = []
        for G in self._groups:
            CG = count_table(self._P, G)
            out.append((CG, CG // self.g))
        return out

    def cover_rows(self, presolve: bool = True) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        """The covering rows ``sum_{i in T} x_i >= h``.

        Returns
        -------
        B : ndarray of bool, shape (R, n)
            Row membership.
        h : ndarray of int64, shape (R,)
        stats : dict
            Row counts after each presolve step.
        """
        return self._rows_presolved if presolve else self._rows_raw

    @cached_property
    def _rows_raw(self) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        Bs, hs = [], []
        for G in self._groups:
            _, _, size, B = _cut_structure(self._P, G)
            h = size // self.g
            keep = h > 0
            Bs.append(B[keep])
            hs.append(h[keep])
        B = np.concatenate(Bs) if Bs else np.zeros((0, self.n_metrics), bool)
        h = np.concatenate(hs).astype(np.int64) if hs else np.zeros(0, np.int64)
        return B, h, {"rows_all_cuts": int(h.size)}

    @cached_property
    def _rows_presolved(self) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        Bs, hs = [], []
        n_cuts = 0
        for G in self._groups:
            alt, _, size, B = _cut_structure(self._P, G)
            h = size // self.g
            n_cuts += int((h > 0).sum())
            # first cut-off at which h reaches each value: h strictly above the previous cut of the same alternative
            prev = np.zeros_like(h)
            same = np.zeros(h.size, dtype=bool)
            same[1:] = alt[1:] == alt[:-1]
            prev[1:] = np.where(same[1:], h[:-1], 0)
            keep = (h > 0) & (h > prev)
            Bs.append(B[keep])
            hs.append(h[keep])
        B = np.concatenate(Bs)
        h = np.concatenate(hs).astype(np.int64)
        n_first = int(h.size)
        u = _unique_rows(B)  # h = floor(|T|/g) is a function of T, so equal sets are equal rows
        B, h = B[u], h[u]
        n_unique = int(h.size)
        dom = _dominated(B, h)
        B, h = B[~dom], h[~dom]
        stats = {"rows_all_cuts": n_cuts, "rows_first_cutoff": n_first, "rows_unique": n_unique,
                 "rows_undominated": int(h.size)}
        return B, h, stats

    def colours(self) -> list[np.ndarray]:
        """The colours of the greedy colouring algorithm (SPEC F2).

        For every group and alternative, the group's metrics ordered by
        ``sigma_i(a)`` (ties by metric index) cut into consecutive blocks of
        ``g``; each full block is a colour.

        Returns
        -------
        list of ndarray of int, each shape (n_colours_in_group_alt, g)
            Metric indices of each colour, one array per (group, alternative).
        """
        out = []
        g = self.g
        for G in self._groups:
            Pg = self._P[:, G]
            order = np.lexsort((np.broadcast_to(np.arange(G.size), Pg.shape), Pg), axis=1)
            nb = G.size // g
            blocks = G[order[:, : nb * g]].reshape(self.n_alternatives, nb, g)
            out.extend(blocks[a] for a in range(self.n_alternatives))
        return out

    # ------------------------------------------------------------ oracle
    def evaluate(self, selection: Any) -> float:
        """``|K|``."""
        return float(self.as_selection(selection).size)

    def _violation_arrays(self, K: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        out = []
        for t, (G, (CG, req)) in enumerate(zip(self._groups, self._requirements)):
            CK = count_table(self._P, np.intersect1d(K, G))
            a, r = np.nonzero(CK < req)
            out.append((t, a, r, CG[a, r], CK[a, r], req[a, r]))
        return out

    def violations(self, selection: Any) -> pd.DataFrame:
        """Every violated ``(alternative, r)`` pair (with its group).

        Returns
        -------
        pandas.DataFrame
            Columns ``group, alternative, r, C_N, C_K, required``
            (``required = floor(C_N / g)``; ``C_N`` counts within the group).
        """
        K = self.as_selection(selection)
        rows = []
        for t, a, r, cn, ck, req in self._violation_arrays(K):
            rows.append(pd.DataFrame({"group": t, "alternative": [self._alts[i] for i in a], "r": r + 1,
                                      "C_N": cn, "C_K": ck, "required": req}))
        return pd.concat(rows, ignore_index=True)

    def check(self, selection: Any) -> Check:
        K = self.as_selection(selection)
        reasons: list[str] = []
        details: dict[str, Any] = {}
        total = 0
        for t, a, r, cn, ck, req in self._violation_arrays(K):
            gtxt = f" in group {t}" if self._groups_given else ""
            total += a.size
            for i in range(min(a.size, 20)):
                reasons.append(
                    f"alternative {self._alts[a[i]]!r} at r={r[i] + 1}{gtxt}: C(K,r,a)={ck[i]} < "
                    f"floor(C(N,r,a)/g)={req[i]} (C(N,r,a)={cn[i]}, g={self.g})"
                )
            details[f"violated_pairs{'_group' + str(t) if self._groups_given else ''}"] = np.stack([a, r + 1], axis=1)
        return Check(total == 0, tuple(reasons[:20]), total, details)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        """The shortest feasible prefix of a random order of the metrics (always feasible)."""
        B, h, _ = self.cover_rows()
        perm = rng.permutation(self.n_metrics)
        cum = np.cumsum(B[:, perm], axis=1)  # (R, n): coverage of each prefix
        ok = (cum >= h[:, None]).all(axis=0)
        L = int(np.argmax(ok)) + 1 if ok.any() else self.n_metrics
        return np.sort(perm[:L])

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        n = self.n_metrics
        for k in range(1, n + 1):
            for c in itertools.combinations(range(n), k):
                yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list["PositionalRepresentation"]:
        rng = np.random.default_rng(seed)
        t1 = rng.integers(0, 4, size=(5, 8)).astype(float)  # ties
        t2 = rng.normal(size=(4, 7))
        t3 = rng.integers(0, 3, size=(5, 8)).astype(float)
        t3[1, 2] = np.nan
        t3[3, 5] = np.nan
        return [
            cls.from_scores(t1, g=2),
            cls.from_scores(t2, g=3, ties="ordinal"),
            cls.from_scores(t3, g=2, missing="last", ties="max", groups=[[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]]),
        ]

    def lower_bound(self) -> int:
        """A valid bound ``|K| >= max_G floor(|G|/g)`` (the sum over groups when they are disjoint)."""
        per = [G.size // self.g for G in self._groups]
        allm = np.concatenate(self._groups)
        return int(sum(per) if np.unique(allm).size == allm.size else max(per))

    def bounds(self, selection: Any = None) -> dict[str, Any]:
        """Worst-case bounds beside what was found.

        Returns
        -------
        dict
            ``lower_bound`` (``max_G floor(|G|/g)``), ``greedy_colour_bound``
            (``min(n, H(d) * sum_G |G|/g)``: greedy set cover is within ``H(d)``
            of the fractional optimum, ``x = 1/g`` covers every colour, ``d`` =
            the most colours one metric carries (``<= m`` per group)),
            ``n_colours``, ``n_metrics``, and ``found`` (``|K|``) when a selection is given.
        """
        cols = self.colours()
        n = self.n_metrics
        carried = np.zeros(n, dtype=np.int64)
        for c in cols:
            np.add.at(carried, c.ravel(), 1)
        d = int(carried.max()) if carried.size else 0
        frac = sum(G.size for G in self._groups) / self.g
        out = {
            "lower_bound": self.lower_bound(),
            "greedy_colour_bound": float(min(n, _harmonic(d) * frac)),
            "greedy_colour_bound_formula": f"min(n, H({d}) * {frac:g})",
            "n_colours": int(sum(c.shape[0] for c in cols)),
            "n_metrics": n,
        }
        if selection is not None:
            out["found"] = int(self.as_selection(selection).size)
        return out

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        out = {**self._policy_extras(), "g": self.g, "n_groups": len(self._groups), "lower_bound": self.lower_bound()}
        if selection.size:
            out["n_violations"] = int(sum(v[1].size for v in self._violation_arrays(self.as_selection(selection))))
        return out

    # ------------------------------------------------------- linear model
    def linear_model(self, *, allow_lazy: bool = False, presolve: bool = True) -> LinearModel:
        """Set-multicover ILP ``min sum x`` s.t. ``sum_{i in T} x_i >= h``.

        Parameters
        ----------
        allow_lazy : bool
            Ignored (the model is static).
        presolve : bool
            Apply SPEC's presolve (default) or state every (group, alternative,
            attained cut-off) row.
        """
        check_choice(presolve, "presolve", (True, False))
        B, h, stats = self.cover_rows(presolve=presolve)
        n = self.n_metrics
        b = ModelBuilder("positional_representation")
        x = b.add_vars("x", n, lb=0, ub=1, integer=True, cost=1.0)
        r, c = np.nonzero(B)
        b.add_rows("cover", rows=r, cols=x[c], vals=1.0, lb=h.astype(float), ub=np.full(h.size, np.inf))
        return b.build(selection_block="x", selection_items=np.arange(n),
                       meta={"variant": "presolved" if presolve else "all_cuts", **stats})


# =========================================================== proportionality
class PositionalProportionality(_PositionalBase):
    """Minimum eps-proportional metric subset, or best fixed-size subset (SPEC F3).

    ``K`` is eps-proportional when ``|C(N,r,a)/|N| - C(K,r,a)/|K|| <= eps`` for
    all ``a, r``.

    * ``size=None``: minimise ``|K|`` subject to eps-proportionality;
    * ``size=k``: minimise the largest deviation ``t`` over ``|K| = k``
      (``eps`` then only reports whether ``t <= eps``).

    Parameters
    ----------
    positions : array_like of int, shape (m alternatives, n metrics)
    eps : float or fractions.Fraction, optional
        ``0 < eps < 1``; required unless ``size`` is given. Read as the simplest
        fraction ``p/q`` within ``1e-12`` of it (``q <= 10**6``): 0.1 is 1/10.
        Feasibility is decided exactly: ``q |C_N k - C_K n| <= p n k``.
    size : int, optional
        Fixed subset size ``1 <= k <= n``.
    alternatives, metrics, ties, missing, dropped_alternatives
        Labels and recorded policies.

    Notes
    -----
    Rows come from the distinct top-r sets ``T`` (cuts with ``0 < |T| < n``;
    identical sets merged). Minimum-size models (``model=`` option):

    * ``"direct"`` (SPEC): integer ``k = sum x`` and, per ``T``, with
      ``c = |T|``, ``q n sum_T x - (q c - p n) k >= 0`` and
      ``q n sum_T x - (q c + p n) k <= 0`` (integer coefficients, divided by
      their gcd; trivially satisfied sides dropped), plus ``k >= k_min``, the
      smallest size for which every row's integer interval is non-empty;
    * ``"size-indexed"``: a binary ``z_k`` per admissible size, ``sum z = 1``,
      ``sum x = sum k z_k`` and ``sum_T x >= sum_k L_k(T) z_k``,
      ``sum_T x <= sum_k U_k(T) z_k`` with the exact integer bounds
      ``L_k = max(0, c - n + k, ceil(k (c/n - eps)))``,
      ``U_k = min(k, c, floor(k (c/n + eps)))`` (a tighter statement of the
      same set). Presolve: each upper side is restated as a covering row on
      the complement (``sum_{N\\T} x >= sum_k (k - U_k) z_k``), rows implied by
      ``sum x = k`` alone are dropped and rows on the same set merged (largest
      right-hand side per size);
    * ``"auto"``: ``"direct"`` (faster with HiGHS on most of the real tables
      and the only one that scales to 200 metrics; ``"size-indexed"`` wins on
      some hard cases, e.g. HELM bias with ``missing="last"``).

    Fixed size: ``sum x = k``, integer-valued ``u = n k t`` in ``[0, n k]``,
    ``n sum_T x + u >= k c``, ``n sum_T x - u <= k c``, objective ``u / (n k)``.
    Every coefficient is an integer, so CP-SAT's scaling is exact.
    """

    model_options = {"model": ("auto", "direct", "size-indexed")}

    def __init__(self, positions: Any, eps: Any = None, *, size: int | None = None,
                 alternatives: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
                 ties: str | None = None, missing: str | None = None, dropped_alternatives: Sequence[str] = ()) -> None:
        super().__init__(positions, alternatives=alternatives, metrics=metrics, ties=ties, missing=missing,
                         dropped_alternatives=dropped_alternatives)
        n = self.n_metrics
        if eps is None and size is None:
            raise InvalidInputError("eps: expected a number with 0 < eps < 1 (required unless size is given), got None")
        self._eps = None if eps is None else _eps_fraction(eps)
        self.size = None if size is None else check_int(size, "size", low=1, high=n, high_doc=f"n = {n} (the number of metrics)")

    @classmethod
    def from_scores(cls, table: Any, eps: Any = None, *, size: int | None = None, higher_is_better: Any = None,
                    ties: str = "min", missing: str = "error") -> "PositionalProportionality":
        """Build from a score table (see :meth:`PositionalRepresentation.from_scores`).

        Parameters
        ----------
        table : pandas.DataFrame or array_like, shape (m alternatives, n metrics)
        eps : float, optional
            ``0 < eps < 1`` (required unless ``size`` is given).
        size : int, optional
            Fixed subset size: minimise the largest deviation instead of ``|K|``.
        higher_is_better, ties, missing
            See :func:`rank_table`.
        """
        prof = rank_table(table, higher_is_better=higher_is_better, ties=ties, missing=missing)
        return cls._from_profile(prof, eps=eps, size=size)

    @classmethod
    def from_rankings(cls, rankings: Any, eps: Any = None, *, size: int | None = None, ties: str = "min",
                      missing: str = "error") -> "PositionalProportionality":
        """Build from rankings (positions, shape (m, n), 1 = best); see
        :meth:`PositionalRepresentation.from_rankings`."""
        return cls.from_scores(_rankings_as_scores(rankings), eps, size=size, higher_is_better=True, ties=ties,
                               missing=missing)

    # ------------------------------------------------------------------ data
    @property
    def eps(self) -> float | None:
        return None if self._eps is None else float(self._eps)

    @property
    def eps_fraction(self) -> Fraction | None:
        return self._eps

    def get_params(self) -> dict[str, Any]:
        return {**self._base_params(), "eps": self._eps, "size": self.size}

    def _repr_extra(self) -> str:
        e = "" if self._eps is None else f", eps={float(self._eps):g}"
        return e + ("" if self.size is None else f", size={self.size}")

    @cached_property
    def _cuts(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct top-r sets with ``0 < |T| < n``: (B bool (R, n), c int64 (R,))."""
        _, _, size, B = _cut_structure(self._P, np.arange(self.n_metrics))
        keep = (size > 0) & (size < self.n_metrics)
        B, size = B[keep], size[keep]
        u = _unique_rows(B)
        return B[u], size[u].astype(np.int64)

    def cut_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct non-trivial top-r sets.

        Returns
        -------
        B : ndarray of bool, shape (R, n)
        c : ndarray of int64, shape (R,)
            ``|T|``.
        """
        return self._cuts

    def _pq(self) -> tuple[int, int]:
        if self._eps is None:
            raise InvalidInputError("eps: this fixed-size formulation was built without eps")
        return self._eps.numerator, self._eps.denominator

    def size_intervals(self, k: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact integer bounds on ``C(K, T)`` for ``|K| = k``, per cut.

        Returns
        -------
        L, U : ndarray of int64, shape (R,) or (R, len(k))
            ``L = max(0, c - n + k, ceil(k (c/n - eps)))``,
            ``U = min(k, c, floor(k (c/n + eps)))``.
        """
        p, q = self._pq()
        B, c = self._cuts
        n = self.n_metrics
        kk = np.atleast_1d(np.asarray(k, dtype=np.int64))
        c2 = c[:, None]
        num_lo = kk[None, :] * (q * c2 - p * n)
        num_hi = kk[None, :] * (q * c2 + p * n)
        den = q * n
        L = np.maximum(np.maximum(-(-num_lo // den), 0), c2 - n + kk[None, :])
        U = np.minimum(np.minimum(num_hi // den, kk[None, :]), c2)
        if np.ndim(k) == 0:
            return L[:, 0], U[:, 0]
        return L, U

    def admissible_sizes(self) -> np.ndarray:
        """Sizes ``k`` for which every cut's integer interval ``[L_k, U_k]`` is non-empty, shape (s,)."""
        ks = np.arange(1, self.n_metrics + 1)
        if self._cuts[1].size == 0:
            return ks
        L, U = self.size_intervals(ks)
        return ks[(L <= U).all(axis=0)]

    # ------------------------------------------------------------ oracle
    def evaluate(self, selection: Any) -> float:
        """``|K|`` (minimum-size problem) or the largest deviation (fixed size)."""
        K = self.as_selection(selection)
        if self.size is None:
            return float(K.size)
        if K.size == 0:
            raise InvalidInputError("selection: expected at least one metric, got an empty selection")
        return self.max_deviation(K)

    def _violated(self, K: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p, q = self._pq()
        dev = self._dev_num(K)
        a, r = np.nonzero(q * dev > p * self.n_metrics * K.size)
        return a, r, dev[a, r]

    def is_proportional(self, selection: Any) -> bool:
        """Is ``K`` eps-proportional (exact arithmetic)?"""
        K = self.as_selection(selection)
        return K.size > 0 and self._violated(K)[0].size == 0

    def check(self, selection: Any) -> Check:
        K = self.as_selection(selection)
        reasons: list[str] = []
        details: dict[str, Any] = {}
        if K.size == 0:
            return Check.from_reasons(["empty selection: at least one metric is required"])
        if self.size is not None:
            if K.size != self.size:
                reasons.append(f"{K.size} metrics selected, size = {self.size} required")
            return Check.from_reasons(reasons)
        a, r, dev = self._violated(K)
        n, k = self.n_metrics, K.size
        CN, CK = self._counts_all, count_table(self._P, K)
        for i in range(min(a.size, 20)):
            reasons.append(
                f"alternative {self._alts[a[i]]!r} at r={r[i] + 1}: |C(N,r,a)/|N| - C(K,r,a)/|K|| = "
                f"|{CN[a[i], r[i]]}/{n} - {CK[a[i], r[i]]}/{k}| = {dev[i] / (n * k):.6g} > eps = {float(self._eps):g}"
            )
        details["violated_pairs"] = np.stack([a, r + 1], axis=1)
        return Check(a.size == 0, tuple(reasons), int(a.size), details)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        """Fixed size: ``size`` metrics drawn uniformly. Minimum size: the shortest
        eps-proportional prefix of a random order of the metrics (always feasible)."""
        n = self.n_metrics
        if self.size is not None:
            return np.sort(rng.choice(n, size=self.size, replace=False))
        perm = rng.permutation(n)
        B, c = self._cuts
        p, q = self._pq()
        ks = np.arange(1, n + 1)
        cum = np.cumsum(B[:, perm], axis=1, dtype=np.int64)  # (R, n): C(prefix, T)
        ok = (q * np.abs(c[:, None] * ks[None, :] - cum * n) <= p * n * ks[None, :]).all(axis=0)
        L = int(np.argmax(ok)) + 1 if ok.any() else n
        return np.sort(perm[:L])

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        n = self.n_metrics
        sizes = [self.size] if self.size is not None else range(1, n + 1)
        for k in sizes:
            for c in itertools.combinations(range(n), k):
                yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list["PositionalProportionality"]:
        rng = np.random.default_rng(seed)
        t1 = rng.integers(0, 4, size=(5, 8)).astype(float)
        t2 = rng.normal(size=(4, 8))
        t3 = rng.integers(0, 3, size=(4, 7)).astype(float)
        t3[0, 1] = np.nan
        return [
            cls.from_scores(t1, eps=0.25),
            cls.from_scores(t2, eps=0.3, ties="ordinal"),
            cls.from_scores(t3, eps=0.2, missing="last", ties="max"),
            cls.from_scores(t2, size=3),
        ]

    def bounds(self, selection: Any = None) -> dict[str, Any]:
        """Worst-case bounds of SPEC F3 beside what was found.

        Returns
        -------
        dict
            ``upper_bound`` (``ln(2m)/eps^2``: some eps-proportional subset of at
            most that size always exists), ``sample_size``
            (``min(n, ceil(ln(2m)/eps^2))``), ``worst_case_lower_bound``
            (``ln(m) / (288 eps^2)``, the paper's constant: some profiles need
            that many; an existential bound, not one for this profile),
            ``smallest_admissible_size`` (instance bound from the integer
            intervals), and with a selection ``found`` and ``max_deviation``.
        """
        m, n = self.n_alternatives, self.n_metrics
        out: dict[str, Any] = {"n_metrics": n, "n_alternatives": m}
        if self._eps is not None:
            e = float(self._eps)
            out["upper_bound"] = math.log(2 * m) / e**2
            out["sample_size"] = int(min(n, math.ceil(math.log(2 * m) / e**2)))
            out["worst_case_lower_bound"] = math.log(m) / (288 * e**2) if m > 1 else 0.0
            adm = self.admissible_sizes()
            out["smallest_admissible_size"] = int(adm[0])
        if selection is not None:
            K = self.as_selection(selection)
            out["found"] = int(K.size)
            out["max_deviation"] = self.max_deviation(K) if K.size else math.nan
        return out

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {**self._policy_extras(), "size": self.size}
        if self._eps is not None:
            out["eps"] = float(self._eps)
            out["eps_rational"] = f"{self._eps.numerator}/{self._eps.denominator}"
        if selection.size:
            K = self.as_selection(selection)
            out["max_deviation"] = self.max_deviation(K)
            if self._eps is not None:
                out["proportional"] = bool(self._violated(K)[0].size == 0)
        return out

    # ------------------------------------------------------- linear model
    def linear_model(self, *, allow_lazy: bool = False, model: str = "auto") -> LinearModel:
        """The MILP (see the class notes).

        Parameters
        ----------
        allow_lazy : bool
            Ignored (static model).
        model : {"auto", "direct", "size-indexed"}
            Minimum-size statement; the fixed-size problem has one statement.
        """
        check_choice(model, "model", self.model_options["model"])
        if self.size is not None:
            if model == "size-indexed":
                raise InvalidInputError("model: 'size-indexed' is a minimum-size statement; this formulation has a fixed size")
            return self._fixed_model()
        if model in ("auto", "direct"):
            return self._direct_model()
        return self._size_indexed_model()

    def _direct_model(self) -> LinearModel:
        p, q = self._pq()
        B, c = self._cuts
        n = self.n_metrics
        adm = self.admissible_sizes()
        b = ModelBuilder("positional_proportionality")
        x = b.add_vars("x", n, lb=0, ub=1, integer=True)
        k = b.add_vars("size", 1, lb=float(adm[0]), ub=float(n), integer=True, cost=1.0)
        b.add_rows("card", rows=np.zeros(n + 1, np.int64), cols=np.append(x, k), vals=np.append(np.ones(n), -1.0),
                   lb=[0.0], ub=[0.0])
        for name, coef_k, keep in (("lower", q * c - p * n, q * c - p * n > 0), ("upper", q * c + p * n, q * c + p * n < q * n)):
            Bk, ck = B[keep], coef_k[keep]
            gcd = np.gcd(q * n, ck)
            r, col = np.nonzero(Bk)
            rows = np.concatenate([r, np.arange(ck.size)])
            cols = np.concatenate([x[col], np.full(ck.size, k[0])])
            vals = np.concatenate([(q * n // gcd)[r], -(ck // gcd)]).astype(float)
            if name == "lower":
                b.add_rows(name, rows=rows, cols=cols, vals=vals, lb=np.zeros(ck.size), ub=np.full(ck.size, np.inf))
            else:
                b.add_rows(name, rows=rows, cols=cols, vals=vals, lb=np.full(ck.size, -np.inf), ub=np.zeros(ck.size))
        return b.build(selection_block="x", selection_items=np.arange(n),
                       meta={"variant": "direct", "n_cuts": int(c.size), "min_admissible_size": int(adm[0]),
                             "eps_rational": f"{p}/{q}"})

    @cached_property
    def _size_indexed_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
        """Covering rows ``sum_S x >= H[:, k]`` per admissible size (see :meth:`linear_model`).

        Returns
        -------
        S : ndarray of bool, shape (R', n)
        H : ndarray of int64, shape (R', s)
        sizes : ndarray of int64, shape (s,)
        stats : dict
        """
        B, c = self._cuts
        n = self.n_metrics
        adm = self.admissible_sizes()
        L, U = self.size_intervals(adm)  # (R, s)
        # sum_T x <= U  <=>  sum_{N \ T} x >= k - U  (given sum x = k): every row becomes a covering row
        S = np.concatenate([B, ~B])
        H = np.concatenate([L, adm[None, :] - U]).astype(np.int64)
        triv = np.maximum(S.sum(axis=1)[:, None] - n + adm[None, :], 0)  # implied by sum x = k and x <= 1
        stats = {"rows_two_sided": int(S.shape[0])}
        keep = (H > triv).any(axis=1)
        S, H = S[keep], H[keep]
        stats["rows_nontrivial"] = int(S.shape[0])
        if S.shape[0]:
            packed = np.packbits(S, axis=1)
            _, first, inv = np.unique(packed, axis=0, return_index=True, return_inverse=True)
            inv = inv.ravel()
            Hm = np.zeros((first.size, H.shape[1]), dtype=np.int64)
            np.maximum.at(Hm, inv, H)
            order = np.argsort(first)
            S, H = S[first[order]], Hm[order]
        stats["rows_unique"] = int(S.shape[0])
        return S, H, adm, stats

    def _size_indexed_model(self) -> LinearModel:
        p, q = self._pq()
        n = self.n_metrics
        S, H, adm, stats = self._size_indexed_rows
        s = adm.size
        b = ModelBuilder("positional_proportionality")
        x = b.add_vars("x", n, lb=0, ub=1, integer=True)
        z = b.add_vars("z", s, lb=0, ub=1, integer=True, cost=adm.astype(float))
        b.add_rows("one_size", rows=np.zeros(s, np.int64), cols=z, vals=1.0, lb=[1.0], ub=[1.0])
        b.add_rows("card", rows=np.zeros(n + s, np.int64), cols=np.concatenate([x, z]),
                   vals=np.concatenate([np.ones(n), -adm.astype(float)]), lb=[0.0], ub=[0.0])
        r, col = np.nonzero(S)
        rz, cz = np.nonzero(H)
        R = S.shape[0]
        b.add_rows("cover", rows=np.concatenate([r, rz]), cols=np.concatenate([x[col], z[cz]]),
                   vals=np.concatenate([np.ones(r.size), -H[rz, cz].astype(float)]),
                   lb=np.zeros(R), ub=np.full(R, np.inf))
        return b.build(selection_block="x", selection_items=np.arange(n),
                       meta={"variant": "size-indexed", "n_cuts": int(self._cuts[1].size), "n_admissible_sizes": int(s),
                             "min_admissible_size": int(adm[0]), "eps_rational": f"{p}/{q}", **stats})

    def _fixed_model(self) -> LinearModel:
        B, c = self._cuts
        n, k = self.n_metrics, int(self.size)
        b = ModelBuilder("positional_proportionality_fixed")
        x = b.add_vars("x", n, lb=0, ub=1, integer=True)
        u = b.add_vars("u", 1, lb=0.0, ub=float(n * k), implied_integer=True, cost=1.0 / (n * k))
        b.add_rows("card", rows=np.zeros(n, np.int64), cols=x, vals=1.0, lb=[float(k)], ub=[float(k)])
        R = c.size
        r, col = np.nonzero(B)
        rows = np.concatenate([r, np.arange(R)])
        cols = np.concatenate([x[col], np.full(R, u[0])])
        rhs = (k * c).astype(float)
        b.add_rows("dev_lo", rows=rows, cols=cols, vals=np.concatenate([np.full(r.size, float(n)), np.ones(R)]),
                   lb=rhs, ub=np.full(R, np.inf))
        b.add_rows("dev_hi", rows=rows, cols=cols, vals=np.concatenate([np.full(r.size, float(n)), -np.ones(R)]),
                   lb=np.full(R, -np.inf), ub=rhs)
        return b.build(selection_block="x", selection_items=np.arange(n),
                       meta={"variant": "fixed_size", "n_cuts": int(R), "size": k})


# ================================================================== helpers
def _resolve_groups(groups: Any, metrics: tuple[str, ...]) -> list[list[int]] | None:
    """Column names or positions -> positions."""
    if groups is None:
        return None
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence):
        raise InvalidInputError(f"groups: expected a list of metric groups (lists of column names or positions), got {groups!r}")
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


def _rankings_as_scores(rankings: Any) -> Any:
    if isinstance(rankings, pd.DataFrame):
        vals, alts, mets, _ = _table_values(rankings)
        return pd.DataFrame(-vals, index=rankings.index, columns=rankings.columns)
    vals, _, _, _ = _table_values(rankings)
    return -vals
