"""Ranking profiles from score tables: tie and missing-data policies, orientation,
the ``C(N, r, a)`` count table and scoring vectors (positional formulations' data).
"""
from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_choice

__all__ = ["MISSING", "TIES", "Profile", "count_table", "rank_table", "scoring_vector"]

TIES = ("min", "max", "ordinal")
MISSING = ("error", "last", "drop")
#: Cells read as a missing score besides NaN / None (the leaderboards write ``-``).
MISSING_TOKENS = ("-", "")
#: eps is read as the simplest fraction with a denominator up to this bound.
EPS_MAX_DENOMINATOR = 10**6


def import_pandas() -> Any:
    """The ``pandas`` module, imported on first use (a heavy import, measured by the import-cost study; the
    method registry imports this module whenever any formulation is solved, and only the positional
    formulations' tables need it)."""
    import pandas as pd

    return pd


def is_frame(obj: Any) -> bool:
    """``isinstance(obj, pandas.DataFrame)`` without importing pandas (no DataFrame exists before it is)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def rankdata(a: Any, method: str = "average", *, axis: int | None = None) -> np.ndarray:
    """:func:`scipy.stats.rankdata`, imported on first use (``scipy.stats`` takes about a second to import, and
    the method registry imports this module whenever any formulation is solved)."""
    from scipy.stats import rankdata as _rankdata

    return np.asarray(_rankdata(a, method=method, axis=axis))


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
    pd = import_pandas()  # every table becomes a DataFrame here
    lower_attr = None
    if isinstance(table, pd.DataFrame):
        df = table
        if "lower_is_better" in df.attrs:
            lower_attr = [str(c) for c in df.attrs["lower_is_better"]]
    else:
        if hasattr(table, "to_numpy") and not isinstance(table, np.ndarray):
            raise InvalidInputError("table: expected a DataFrame or a 2-D array (alternatives x metrics), "
                                    f"got {type(table).__name__}")
        try:
            arr = np.asarray(table)
        except Exception:  # pragma: no cover - exotic input
            raise InvalidInputError(
                f"table: expected a 2-D array (alternatives x metrics), got {type(table).__name__}") from None
        if arr.ndim != 2:
            raise InvalidInputError(
                f"table: expected a 2-D array of shape (m alternatives, n metrics), got shape {arr.shape}")
        df = pd.DataFrame(arr)
    if df.ndim != 2 or df.shape[0] < 1 or df.shape[1] < 1:
        raise InvalidInputError(
            f"table: expected at least one alternative (row) and one metric (column), got shape {df.shape}")
    alts = [str(a) for a in df.index]
    mets = [str(c) for c in df.columns]
    if len(set(mets)) != len(mets):
        dup = pd.Index(mets)[pd.Index(mets).duplicated()][0]
        raise InvalidInputError(f"table: expected distinct metric (column) names, got {dup!r} more than once")
    if len(set(alts)) != len(alts):
        dup = pd.Index(alts)[pd.Index(alts).duplicated()][0]
        raise InvalidInputError(f"table: expected distinct alternative (row) names, got {dup!r} more than once")
    values = np.empty(df.shape, dtype=float)
    for j in range(df.shape[1]):
        s = df.iloc[:, j]
        if pd.api.types.is_bool_dtype(s.dtype):
            raise InvalidInputError(f"table: column {mets[j]!r} holds booleans, expected numeric scores")
        if pd.api.types.is_complex_dtype(s.dtype) or (s.dtype == object and any(
                isinstance(c, (complex, np.complexfloating)) for c in s)):
            raise InvalidInputError(f"table: column {mets[j]!r} holds complex numbers, expected real scores")
        if pd.api.types.is_numeric_dtype(s.dtype):
            v = s.to_numpy(dtype=float, na_value=np.nan)
        else:
            miss = (s.isna().to_numpy()
                    | s.map(lambda c: isinstance(c, str) and c.strip() in MISSING_TOKENS).to_numpy(bool))
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
            raise InvalidInputError(
                f"higher_is_better: expected metric (column) names as keys, got unknown {unknown[:5]}")
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
            counts = ", ".join(f"{mets[j]!r}: {int(per_col[j])}" for j in np.flatnonzero(per_col)[:6])
            i, j = (int(t) for t in np.argwhere(miss)[0])
            raise InvalidInputError(
                f"table: {n_missing} missing scores in {int(miss.any(axis=1).sum())} of {len(alts)} alternatives "
                f"(missing='error'); first for alternative {alts[i]!r} in column {mets[j]!r}; per column: {counts}"
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
        raise InvalidInputError(
            f"rules: expected a non-increasing finite scoring vector of length m = {m}, got {rule!r}")
    return "custom", s



def _rankings_iv(rankings: Any, missing: str) -> tuple[np.ndarray, int]:
    """Checks of a rankings table (pure): shape (m, n) with m, n >= 1; every entry an integer position in
    ``1..m`` (booleans, strings, complex, fractions, 0, negatives and positions above m refused by name),
    or a missing one (NaN, None, ``'-'``) where the ``missing`` policy allows it.

    Returns the positions as floats (NaN where missing), shape (m, n), and the number of missing ones.
    """
    check_choice(missing, "missing", MISSING)
    try:
        vals = rankings.to_numpy() if is_frame(rankings) else np.asarray(rankings)
    except (TypeError, ValueError):
        raise InvalidInputError(f"rankings: expected a 2-D array of positions, got {type(rankings).__name__}") from None
    if vals.ndim != 2 or vals.shape[0] < 1 or vals.shape[1] < 1:
        raise InvalidInputError(
            f"rankings: expected a 2-D array of positions, shape (m alternatives, n metrics) with m, n >= 1, "
            f"got shape {vals.shape}"
        )
    m = vals.shape[0]
    if vals.dtype.kind in "bc":
        raise InvalidInputError(f"rankings: expected integer positions 1..m = 1..{m}, got dtype {vals.dtype}")
    if vals.dtype.kind in "OUSV":
        out = np.empty(vals.shape, dtype=float)
        for idx, c in np.ndenumerate(vals):
            if c is None or (isinstance(c, str) and c.strip() in MISSING_TOKENS):
                out[idx] = np.nan
            elif isinstance(c, numbers.Real) and not isinstance(c, (bool, np.bool_)):
                out[idx] = float(c)
            else:
                c = c.item() if isinstance(c, np.generic) else c
                raise InvalidInputError(f"rankings: expected integer positions 1..m = 1..{m}, got {c!r} for "
                                        f"alternative {idx[0]} in column {idx[1]}")
        vals = out
    v = np.asarray(vals, dtype=float)
    miss = np.isnan(v)
    bad = ~miss & ~(np.isfinite(v) & (v == np.round(v)) & (v >= 1) & (v <= m))
    if bad.any():
        i, j = (int(t) for t in np.argwhere(bad)[0])
        raise InvalidInputError(
            f"rankings: expected integer positions 1..m = 1..{m} (1 = best), got {int(bad.sum())} other values, "
            f"first {float(v[i, j]):g} for alternative {i} in column {j}"
        )
    n_missing = int(miss.sum())
    if miss.all(axis=0).any():
        j = int(np.flatnonzero(miss.all(axis=0))[0])
        raise InvalidInputError(f"rankings: column {j} has no position at all (every entry missing)")
    if n_missing and missing == "error":
        i, j = (int(t) for t in np.argwhere(miss)[0])
        raise InvalidInputError(
            f"rankings: {n_missing} missing positions (missing='error'), first for alternative {i} in column {j}; "
            f"pass missing='last' (tied for last) or missing='drop' (drop those alternatives)"
        )
    return v, n_missing


def _rankings_as_scores(rankings: Any, missing: str = "error") -> Any:
    v, _ = _rankings_iv(rankings, missing)
    if is_frame(rankings):
        return import_pandas().DataFrame(-v, index=rankings.index, columns=rankings.columns)
    return -v
