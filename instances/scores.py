"""Score tables for positional representation / proportionality.

A *score table* has one row per alternative (a model) and one column per
metric (a scenario or task); it is returned as a :class:`pandas.DataFrame`
whose index holds the alternatives' names. The direction of every metric is
kept with the table in ``df.attrs["lower_is_better"]`` (a list of the column
names that are lower-is-better; every other column is higher-is-better), and
:func:`score_directions` turns it into one flag per column.
:meth:`benchsel.formulations.PositionalRepresentation.from_scores` reads that attribute
when it is not given ``higher_is_better``.

* :func:`load_score_table` reads the leaderboard files of
  ``shared/data/positional`` (HELM Classic per-family ``.tsv``, HELM Lite
  ``.csv``, BIG-Bench Hard ``leaderboard.tsv``);
* :func:`mallows_profile` draws seeded Mallows-distributed rankings (scale tests);
* :func:`swap_pairs_profile` draws the random adjacent-swap profile of the
  paper's proportionality lower bound.
"""
from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_float, check_int, check_rng

__all__ = [
    "AGGREGATE_COLUMNS",
    "LOWER_IS_BETTER_PATTERNS",
    "METADATA_COLUMNS",
    "MISSING_TOKEN",
    "load_score_table",
    "mallows_profile",
    "score_directions",
    "swap_pairs_profile",
]

#: Aggregates of the metric columns (not metrics themselves): always skipped.
AGGREGATE_COLUMNS = ("Mean win rate", "helm_lite", "Average")
#: Descriptive columns of the BIG-Bench Hard leaderboard: skipped.
METADATA_COLUMNS = ("Rank", "Company", "Release", "Parameters")
#: Columns holding the alternatives' names, tried in this order (else the first column).
NAME_COLUMNS = ("Model/adapter", "Model", "model")
#: Substrings (case-insensitive) of lower-is-better column names: calibration error,
#: inference time, stereotype / representation bias and toxicity (as benchbench's loader).
LOWER_IS_BETTER_PATTERNS = ("ECE", "inference time", "Stereotypes", "Representation", "Toxic fraction")
#: How a missing score is written in the files.
MISSING_TOKEN = "-"


def _lower_by_name(columns: Sequence[str]) -> list[str]:
    pats = [p.lower() for p in LOWER_IS_BETTER_PATTERNS]
    return [c for c in columns if any(p in str(c).lower() for p in pats)]


def _read_table(path: Path, sep: str) -> pd.DataFrame:
    """The cells of a delimited file as strings (header row first), every row as wide as the header.

    Blank and whitespace-only lines are skipped. A row with more or fewer
    cells than the header, a repeated or empty column name, an undecodable
    byte or a quoting error raises :class:`InvalidInputError` naming the path
    and the line.
    """
    kind = "tab" if sep == "\t" else "comma"
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            lines = [(i + 1, r) for i, r in enumerate(csv.reader(fh, delimiter=sep, strict=True))]
    except (csv.Error, UnicodeDecodeError, OSError) as e:
        raise InvalidInputError(f"path: cannot parse {str(path)!r} as a {kind}-separated table: {e}") from None
    lines = [(i, r) for i, r in lines if any(c.strip() for c in r)]
    if not lines:
        raise InvalidInputError(f"path: {str(path)!r} is empty (no header row)")
    _, header = lines[0]
    header = [c.strip() for c in header]
    seen: dict[str, int] = {}
    for j, c in enumerate(header):
        if not c and j > 0:
            raise InvalidInputError(f"path: {str(path)!r}: column {j + 1} of the header has no name")
        if c in seen:
            raise InvalidInputError(f"path: {str(path)!r}: column name {c!r} appears twice in the header "
                                    f"(columns {seen[c] + 1} and {j + 1}); expected distinct metric names")
        seen[c] = j
    for i, r in lines[1:]:
        if len(r) != len(header):
            raise InvalidInputError(
                f"path: {str(path)!r}: line {i} has {len(r)} {kind}-separated cells, the header has {len(header)} "
                f"(a ragged table: a missing score must be written {MISSING_TOKEN!r}, not left out)"
            )
    return pd.DataFrame([r for _, r in lines[1:]], columns=header, dtype=str)


def load_score_table(
    path: str | Path,
    *,
    lower_is_better: Sequence[str] | bool | None = None,
    drop_empty: bool = True,
    skip: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read a leaderboard file as a score table (alternatives x metrics).

    The separator is a tab for ``.tsv`` files and a comma otherwise. The column
    of model names (``Model/adapter``, ``Model`` or ``model``, else the first
    column) becomes the index; aggregate columns (:data:`AGGREGATE_COLUMNS`)
    and BIG-Bench metadata (:data:`METADATA_COLUMNS`) are skipped; blank lines
    (some files end with one) are ignored; ``-`` is a missing score (NaN).
    Any other non-numeric cell in a metric column raises.

    Parameters
    ----------
    path : str or Path
        A ``.tsv`` or ``.csv`` file with a header row.
    lower_is_better : sequence of str or bool, optional
        Names of the lower-is-better columns, or one flag for all columns. By
        default a column is lower-is-better when its name contains one of
        :data:`LOWER_IS_BETTER_PATTERNS` (ECE, inference time, Stereotypes,
        Representation, Toxic fraction); every other column (in the
        summarization file also Coverage, Density and Compression, whose
        direction the source does not state) is higher-is-better.
    drop_empty : bool
        Drop metric columns and alternatives with no score at all (bias.tsv has
        18 empty columns; calibration.tsv 19 and efficiency.tsv 41 models with no
        score). Their labels go to ``df.attrs["dropped_empty_columns"]`` and
        ``df.attrs["dropped_empty_rows"]``.
    skip : sequence of str, optional
        Further columns to skip.

    Returns
    -------
    pandas.DataFrame, shape (m alternatives, n metrics)
        Float scores as stored (not oriented), NaN where missing. ``attrs``:
        ``lower_is_better`` (list of column names), ``source`` (the path),
        ``skipped_columns``, ``dropped_empty_columns``, ``dropped_empty_rows``,
        ``n_missing`` (missing cells after dropping empty rows/columns).
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"path: expected an existing score-table file, got {str(path)!r} (not found)")
    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    raw = _read_table(path, sep)
    if raw.shape[0] == 0 or raw.shape[1] < 2:
        raise InvalidInputError(f"path: {str(path)!r} has no data rows or fewer than 2 columns (shape {raw.shape})")
    name_col = next((c for c in NAME_COLUMNS if c in raw.columns), raw.columns[0])
    skip_set = set(AGGREGATE_COLUMNS) | set(METADATA_COLUMNS) | set(skip or ())
    skipped = [c for c in raw.columns if c in skip_set and c != name_col]
    metric_cols = [c for c in raw.columns if c != name_col and c not in skip_set]
    if not metric_cols:
        raise InvalidInputError(f"path: {str(path)!r} has no metric columns after skipping {skipped}")
    index = pd.Index(raw[name_col].str.strip(), name=name_col)
    if index.has_duplicates:
        dup = str(index[index.duplicated()][0])
        rows = [i + 2 for i, v in enumerate(index) if v == dup]
        raise InvalidInputError(f"path: {str(path)!r}: alternative (model) {dup!r} appears more than once, in lines "
                                f"{', '.join(map(str, rows[:5]))}; expected one row per alternative")
    values = np.full((raw.shape[0], len(metric_cols)), np.nan)
    for j, c in enumerate(metric_cols):
        col = raw[c].str.strip()
        miss = col.isin([MISSING_TOKEN, ""])
        num = pd.to_numeric(col.where(~miss), errors="coerce")
        bad = num.isna() & ~miss
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InvalidInputError(
                f"path: {str(path)!r}: column {c!r} has {int(bad.sum())} non-numeric cells, first for "
                f"{index[i]!r}: {col.iloc[i]!r} (a missing score must be written {MISSING_TOKEN!r})"
            )
        values[:, j] = num.to_numpy(dtype=float)
    df = pd.DataFrame(values, index=index, columns=pd.Index(metric_cols))
    dropped_cols: list[str] = []
    dropped_rows: list[str] = []
    if drop_empty:
        empty_c = df.isna().all(axis=0)
        dropped_cols = [str(c) for c in df.columns[empty_c]]
        df = df.loc[:, ~empty_c]
        empty_r = df.isna().all(axis=1)
        dropped_rows = [str(r) for r in df.index[empty_r]]
        df = df.loc[~empty_r]
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise InvalidInputError(f"path: {str(path)!r} has no scores at all")
    if lower_is_better is None:
        lower = _lower_by_name(df.columns)
    elif isinstance(lower_is_better, (bool, np.bool_)):
        lower = list(df.columns) if lower_is_better else []
    else:
        lower = [str(c) for c in lower_is_better]
        unknown = [c for c in lower if c not in df.columns and c not in dropped_cols]
        if unknown:
            raise InvalidInputError(f"lower_is_better: expected column names of {path.name}, got unknown {unknown[:5]}")
        lower = [c for c in lower if c in df.columns]
    df.attrs.update({
        "source": str(path),
        "lower_is_better": list(lower),
        "skipped_columns": skipped,
        "dropped_empty_columns": dropped_cols,
        "dropped_empty_rows": dropped_rows,
        "n_missing": int(df.isna().to_numpy().sum()),
    })
    return df


def score_directions(table: Any) -> np.ndarray:
    """One flag per column: True where higher is better.

    Parameters
    ----------
    table : pandas.DataFrame, shape (m, n)
        A score table; its ``attrs["lower_is_better"]`` (column names) is read,
        and every column not named there is higher-is-better.

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    if not isinstance(table, pd.DataFrame):
        raise InvalidInputError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    lower = set(table.attrs.get("lower_is_better", ()))
    return np.array([c not in lower for c in table.columns], dtype=bool)


# ------------------------------------------------------------------ synthetic
def _rim_ranking(m: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    """One Mallows ranking by repeated insertion: order of ``0..m-1`` best first."""
    order: list[int] = []
    for i in range(m):  # insert item i; it lands j places above the bottom with prob ∝ phi**j
        if phi >= 1.0:
            j = int(rng.integers(i + 1))
        else:
            w = phi ** np.arange(i + 1)
            j = int(rng.choice(i + 1, p=w / w.sum()))
        order.insert(i - j, i)
    return np.asarray(order, dtype=np.int64)


def mallows_profile(n_metrics: int, n_alternatives: int, *, phi: float = 0.9, seed: Any = 0,
                    center: Sequence[int] | None = None) -> pd.DataFrame:
    """Seeded synthetic score table whose columns are Mallows-distributed rankings.

    Each metric's ranking is drawn independently from the Mallows model with
    dispersion ``phi`` around ``center`` by repeated insertion (``phi = 1``:
    uniform random rankings; small ``phi``: rankings close to ``center``).

    Parameters
    ----------
    n_metrics : int
        ``n >= 1`` columns.
    n_alternatives : int
        ``m >= 2`` rows.
    phi : float
        Dispersion, ``0 < phi <= 1``.
    seed : int or Generator
    center : sequence of int, optional
        Reference order of the alternatives, best first (default ``0, 1, ...``).

    Returns
    -------
    pandas.DataFrame, shape (n_alternatives, n_metrics)
        Integer scores ``m - position + 1`` (higher is better, no ties); index
        ``alt_0..``, columns ``metric_0..``; ``attrs["lower_is_better"] = []``.
    """
    n = check_int(n_metrics, "n_metrics", low=1)
    m = check_int(n_alternatives, "n_alternatives", low=2)
    phi = check_float(phi, "phi", low=0.0, high=1.0, low_open=True)
    rng = check_rng(seed)
    if center is None:
        ref = np.arange(m)
    else:
        ref = np.asarray(center)
        if ref.shape != (m,) or not np.array_equal(np.sort(ref), np.arange(m)):
            raise InvalidInputError(f"center: expected a permutation of 0..{m - 1}, got {ref!r}")
    scores = np.zeros((m, n), dtype=np.int64)
    for i in range(n):
        order = ref[_rim_ranking(m, phi, rng)]  # alternatives best first
        scores[order, i] = m - np.arange(m)
    df = pd.DataFrame(scores, index=[f"alt_{a}" for a in range(m)], columns=[f"metric_{i}" for i in range(n)])
    df.attrs["lower_is_better"] = []
    df.attrs["source"] = f"mallows(n={n}, m={m}, phi={phi:g})"
    return df


def swap_pairs_profile(n_metrics: int, n_alternatives: int, *, p: float = 0.5, seed: Any = 0) -> pd.DataFrame:
    """The random adjacent-swap profile of the proportionality lower bound.

    Alternatives ``0..m-1`` are paired ``(0, 1), (2, 3), ...``; every metric
    ranks them in index order except that, independently per metric and per
    pair, the two members of a pair swap places with probability ``p``
    (with an odd ``m`` the last alternative is always last). For alternative
    ``2j`` at cut-off ``r = 2j + 1`` the count ``C(N, r, a)`` is then the
    number of metrics that did *not* swap pair ``j``: an eps-proportional
    subset must estimate ``m/2`` independent swap frequencies within ``eps``
    at once, which needs ``Omega(log(m) / eps^2)`` metrics on most draws.

    Parameters
    ----------
    n_metrics : int
        ``n >= 1``.
    n_alternatives : int
        ``m >= 2``.
    p : float
        Swap probability, ``0 <= p <= 1``.
    seed : int or Generator

    Returns
    -------
    pandas.DataFrame, shape (n_alternatives, n_metrics)
        Integer scores ``m - position + 1`` (higher is better).
    """
    n = check_int(n_metrics, "n_metrics", low=1)
    m = check_int(n_alternatives, "n_alternatives", low=2)
    p = check_float(p, "p", low=0.0, high=1.0)
    rng = check_rng(seed)
    pos = np.tile(np.arange(1, m + 1)[:, None], (1, n))  # position of alternative a under metric i
    n_pairs = m // 2
    swap = rng.random((n_pairs, n)) < p
    top, bot = 2 * np.arange(n_pairs), 2 * np.arange(n_pairs) + 1
    pos[top] = np.where(swap, bot[:, None] + 1, top[:, None] + 1)
    pos[bot] = np.where(swap, top[:, None] + 1, bot[:, None] + 1)
    df = pd.DataFrame(m - pos + 1, index=[f"alt_{a}" for a in range(m)], columns=[f"metric_{i}" for i in range(n)])
    df.attrs["lower_is_better"] = []
    df.attrs["source"] = f"swap_pairs(n={n}, m={m}, p={p:g})"
    return df
