"""Positional representation: the minimum g-representative metric subset, a set multicover.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder
from benchsel.formulations.core.properties import NumericalProperties
from benchsel.formulations.core.validation import check_choice, check_int

from .base import Check
from .positional import _cut_structure, _dominated, _harmonic, _PositionalBase, _resolve_groups, _unique_rows
from .rankings import _rankings_as_scores, count_table, import_pandas, rank_table

__all__ = ["PositionalRepresentation"]


# ============================================================ representation
class PositionalRepresentation(_PositionalBase):
    """Minimum g-representative metric subset (set multicover).

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
        metric: the generalised property takes any user-given groups).
        Default: the single group of all metrics.
    include : sequence of int or str, optional
        Metrics every selection must contain (forced inclusion, e.g. an
        existing lite subset to extend); the model fixes ``x_i = 1`` for them.
        ``K = N`` contains them and is always g-representative, so forced
        inclusion never makes the problem infeasible.
    alternatives, metrics, ties, missing, dropped_alternatives
        Labels and recorded policies (see :class:`_PositionalBase`).

    Notes
    -----
    Exact model: ``min sum x`` s.t. ``sum_{i in T} x_i >= h`` for the rows
    ``(T, h)`` left by the presolve: per (group, alternative) only the
    smallest cut-off at which ``h = floor(C/g)`` reaches each value, identical
    rows merged, and rows implied by another row
    (``h_j <= h_i - |T_i \\ T_j|``) dropped. ``linear_model(presolve=False)``
    states one row per (group, alternative, attained cut-off) instead.
    """

    model_options: ClassVar[dict[str, tuple[Any, ...]]] = {"presolve": (True, False)}
    #: its rows count metrics per class against integer demands (``cover_rows``)
    numerical_properties: ClassVar[NumericalProperties] = NumericalProperties(counting="cover")

    def __init__(self, positions: Any, g: int, *, groups: Sequence[Sequence[int]] | None = None,
                 alternatives: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
                 ties: str | None = None, missing: str | None = None, dropped_alternatives: Sequence[str] = (),
                 include: Sequence[Any] | None = None) -> None:
        super().__init__(positions, alternatives=alternatives, metrics=metrics, ties=ties, missing=missing,
                         dropped_alternatives=dropped_alternatives, include=include)
        n = self.n_metrics
        self.g = check_int(g, "g", low=1, high=n, high_doc=f"n = {n} (the number of metrics)")
        self._groups_given = groups is not None
        self._groups = self._check_groups(groups, n)

    @staticmethod
    def _check_groups(groups: Any, n: int) -> tuple[np.ndarray, ...]:
        if groups is None:
            return (np.arange(n, dtype=np.int64),)
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or len(groups) == 0:
            raise InvalidInputError("groups: expected a non-empty list of metric groups (lists of column positions), "
                                    f"got {groups!r}")
        out = []
        for t, G in enumerate(groups):
            arr = np.asarray(G)
            if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
                raise InvalidInputError(f"groups[{t}]: expected a non-empty list of metric column positions, got {G!r}")
            if arr.min() < 0 or arr.max() >= n:
                raise InvalidInputError(f"groups[{t}]: expected column positions in [0, {n}), "
                                        f"got {arr.min()}..{arr.max()}")
            if np.unique(arr).size != arr.size:
                raise InvalidInputError(f"groups[{t}]: expected distinct column positions, "
                                        f"got {arr.size - np.unique(arr).size} repeated")
            out.append(np.sort(arr.astype(np.int64)))
        return tuple(out)

    @classmethod
    def from_scores(cls, table: Any, g: int, *, groups: Sequence[Sequence[Any]] | None = None,
                    higher_is_better: Any = None, ties: str = "min",
                    missing: str = "error", include: Sequence[Any] | None = None) -> PositionalRepresentation:
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
        include : sequence of int or str, optional
            Forced metrics, as column positions or column names.
        """
        prof = rank_table(table, higher_is_better=higher_is_better, ties=ties, missing=missing)
        return cls._from_profile(prof, g=g, groups=_resolve_groups(groups, prof.metrics), include=include)

    @classmethod
    def from_rankings(cls, rankings: Any, g: int, *, groups: Sequence[Sequence[Any]] | None = None,
                      ties: str = "min", missing: str = "error",
                      include: Sequence[Any] | None = None) -> PositionalRepresentation:
        """Build from rankings: ``rankings[a, i]`` = position of alternative ``a`` under metric ``i``
        (1 = best; equal values tie), shape (m, n); re-ranked under ``ties`` (so dense
        positions 1, 1, 2 become 1, 1, 3 under ``"min"``)."""
        scores = _rankings_as_scores(rankings, missing)
        return cls.from_scores(scores, g, groups=groups, higher_is_better=True, ties=ties,
                               missing=missing, include=include)

    @property
    def groups(self) -> tuple[np.ndarray, ...]:
        return self._groups

    def get_params(self) -> dict[str, Any]:
        return {**self._base_params(), "g": self.g,
                "groups": [G.tolist() for G in self._groups] if self._groups_given else None}

    def _repr_extra(self) -> str:
        return (f", g={self.g}" + (f", groups={len(self._groups)}" if self._groups_given else "")
                + (f", include={self._include.size}" if self._include.size else ""))

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
        """The colours of the greedy colouring algorithm.

        For every group and alternative, the group's metrics ordered by
        ``sigma_i(a)`` (ties by metric index) cut into consecutive blocks of
        ``g``; each full block is a colour.

        Returns
        -------
        list of ndarray of int, each shape (n_colours_in_group_alt, g)
            Metric indices of each colour, one array per (group, alternative).
        """
        out: list[np.ndarray] = []
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

    def _violation_arrays(self, K: np.ndarray
                          ) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        out: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
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
        pd = import_pandas()
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
        forced = self._include_reasons(K)
        return Check(total == 0 and not forced, tuple((forced + reasons)[:20]), total + len(forced), details)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        """The shortest feasible prefix of a random order of the metrics, the forced ones first (always feasible)."""
        B, h, _ = self.cover_rows()
        perm = self._include_first(rng)
        cum = np.cumsum(B[:, perm], axis=1)  # (R, n): coverage of each prefix
        ok = np.asarray((cum >= h[:, None]).all(axis=0), dtype=bool)
        ok[: max(self._include.size - 1, 0)] = False  # every forced metric in the prefix
        L = int(np.argmax(ok)) + 1 if ok.any() else self.n_metrics
        return np.sort(perm[:L])

    def initial_selection(self) -> np.ndarray:
        """The exact backends' default warm start, always feasible: the shortest g-representative prefix of
        a seeded order of the metrics (:meth:`random_selection` with seed 0; all metrics at worst)."""
        return self.random_selection(np.random.default_rng(0))

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        n = self.n_metrics
        for k in range(0, n + 1):  # the empty selection too: feasible when no group can hold g top positions
            for c in itertools.combinations(range(n), k):
                yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[PositionalRepresentation]:
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
            cls.from_scores(t1, g=2, include=[2, 4]),  # forces a larger optimum (5 instead of 4)
            cls.from_scores(t3, g=2, missing="last", groups=[[0, 2, 4, 6], [1, 3, 5, 7]], include=[0]),
        ]

    def lower_bound(self) -> int:
        """A valid bound ``|K| >= max_G floor(|G|/g)`` (the sum over groups when they are disjoint; at least
        the number of forced metrics)."""
        per = [G.size // self.g for G in self._groups]
        allm = np.concatenate(self._groups)
        return max(int(sum(per) if np.unique(allm).size == allm.size else max(per)), int(self._include.size))

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
            Apply the presolve (default) or state every (group, alternative,
            attained cut-off) row.
        """
        check_choice(presolve, "presolve", (True, False))
        B, h, stats = self.cover_rows(presolve=presolve)
        n = self.n_metrics
        b = ModelBuilder("positional_representation")
        lb = np.zeros(n)
        lb[self._include] = 1.0  # forced metrics
        x = b.add_vars("x", n, lb=lb, ub=1, integer=True, cost=1.0)
        r, c = np.nonzero(B)
        b.add_rows("cover", rows=r, cols=x[c], vals=1.0, lb=h.astype(float), ub=np.full(h.size, np.inf))
        return b.build(selection_block="x", selection_items=np.arange(n),
                       meta={"variant": "presolved" if presolve else "all_cuts", **stats})
