"""Positional proportionality: the minimum eps-proportional metric subset, or the best fixed-size one.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder
from benchsel.formulations.core.properties import NumericalProperties
from benchsel.formulations.core.validation import check_choice, check_int

from .base import Check
from .positional import _check_partition, _cut_structure, _eps_fraction, _PositionalBase, _unique_rows
from .rankings import _rankings_as_scores, count_table, rank_table

__all__ = ["PositionalProportionality"]


# =========================================================== proportionality
class PositionalProportionality(_PositionalBase):
    """Minimum eps-proportional metric subset, or best fixed-size subset.

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
    groups : sequence of sequences of int or str, optional
        A partition of the metrics into groups ``G_1..G_t`` (column positions
        or names; non-empty, disjoint, covering every metric). Generalised
        positional proportionality, the paper's group version (its
        Definition 4.2: groups of metrics that must be represented), stated
        the way the group version of representation is: ``K`` must take at
        least one metric from every group and, within every group,
        ``|C(G, r, a)/|G| - C(K ∩ G, r, a)/|K ∩ G|| <= eps`` for all ``a, r``.
        Minimum-size problem only. The groups do not interact, so the
        optimum is the sum of the groups' optima (see :meth:`group_formulations`).
    include : sequence of int or str, optional
        Metrics every selection must contain (forced inclusion, e.g. an
        existing lite subset to extend); the models fix ``x_i = 1`` for them.
        ``K = N`` contains them and is eps-proportional, so forced inclusion
        never makes the minimum-size problem infeasible; with ``size`` it
        must hold at most ``size`` metrics.
    alternatives, metrics, ties, missing, dropped_alternatives
        Labels and recorded policies.

    Notes
    -----
    Rows come from the distinct top-r sets ``T`` (cuts with ``0 < |T| < n``;
    identical sets merged). Minimum-size models (``model=`` option):

    * ``"direct"`` (the default statement): integer ``k = sum x`` and, per ``T``, with
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
    * ``"auto"``: ``"direct"`` (faster on most of the real tables
      and the only one that scales to 200 metrics; ``"size-indexed"`` wins on
      some hard cases, e.g. HELM bias with ``missing="last"``).

    Fixed size: ``sum x = k``, integer-valued ``u = n k t`` in ``[0, n k]``,
    ``n sum_T x + u >= k c``, ``n sum_T x - u <= k c``, objective ``u / (n k)``.
    Every coefficient is an integer, so an integer-scaled copy of the model is exact.
    """

    model_options: ClassVar[dict[str, tuple[Any, ...]]] = {"model": ("auto", "direct", "size-indexed")}
    #: its rows count metrics per class within intervals set by the size (``size_intervals``)
    numerical_properties: ClassVar[NumericalProperties] = NumericalProperties(counting="proportional")

    def __init__(self, positions: Any, eps: Any = None, *, size: int | None = None,
                 groups: Sequence[Sequence[Any]] | None = None, include: Sequence[Any] | None = None,
                 alternatives: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
                 ties: str | None = None, missing: str | None = None, dropped_alternatives: Sequence[str] = ()) -> None:
        super().__init__(positions, alternatives=alternatives, metrics=metrics, ties=ties, missing=missing,
                         dropped_alternatives=dropped_alternatives, include=include)
        n = self.n_metrics
        if eps is None and size is None:
            raise InvalidInputError("eps: expected a number with 0 < eps < 1 (required unless size is given), got None")
        self._eps = None if eps is None else _eps_fraction(eps)
        self.size = None if size is None else check_int(size, "size", low=1, high=n,
                                                        high_doc=f"n = {n} (the number of metrics)")
        if self.size is not None and self._include.size > self.size:
            raise InvalidInputError(f"include: expected at most size = {self.size} forced metrics (the requested "
                                    f"subset size), got {self._include.size}")
        self._groups: tuple[np.ndarray, ...] | None = None
        if groups is not None:
            if self.size is not None:
                raise InvalidInputError("groups: the fixed-size problem (size=k) has no grouped statement; groups "
                                        "apply to the minimum-size problem (give eps, not size)")
            self._groups = _check_partition(groups, self._mets)

    @classmethod
    def from_scores(cls, table: Any, eps: Any = None, *, size: int | None = None, higher_is_better: Any = None,
                    ties: str = "min", missing: str = "error", groups: Sequence[Sequence[Any]] | None = None,
                    include: Sequence[Any] | None = None) -> PositionalProportionality:
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
        groups, include
            See the class (column positions or column names).
        """
        prof = rank_table(table, higher_is_better=higher_is_better, ties=ties, missing=missing)
        return cls._from_profile(prof, eps=eps, size=size, groups=groups, include=include)

    @classmethod
    def from_rankings(cls, rankings: Any, eps: Any = None, *, size: int | None = None, ties: str = "min",
                      missing: str = "error", groups: Sequence[Sequence[Any]] | None = None,
                      include: Sequence[Any] | None = None) -> PositionalProportionality:
        """Build from rankings (positions, shape (m, n), 1 = best); see
        :meth:`PositionalRepresentation.from_rankings`."""
        scores = _rankings_as_scores(rankings, missing)
        return cls.from_scores(scores, eps, size=size, higher_is_better=True, ties=ties,
                               missing=missing, groups=groups, include=include)

    # ------------------------------------------------------------------ data
    @property
    def eps(self) -> float | None:
        return None if self._eps is None else float(self._eps)

    @property
    def eps_fraction(self) -> Fraction | None:
        return self._eps

    def get_params(self) -> dict[str, Any]:
        return {**self._base_params(), "eps": self._eps, "size": self.size,
                "groups": None if self._groups is None else [G.tolist() for G in self._groups]}

    def _repr_extra(self) -> str:
        e = "" if self._eps is None else f", eps={float(self._eps):g}"
        return (e + ("" if self.size is None else f", size={self.size}")
                + ("" if self._groups is None else f", groups={len(self._groups)}")
                + (f", include={self._include.size}" if self._include.size else ""))

    # ---------------------------------------------------------------- groups
    @property
    def groups(self) -> tuple[np.ndarray, ...] | None:
        """The metric groups (sorted positions), or None (one group of all metrics)."""
        return self._groups

    @cached_property
    def _parts(self) -> tuple[tuple[np.ndarray, PositionalProportionality], ...]:
        if self._groups is None:
            return ((np.arange(self.n_metrics, dtype=np.int64), self),)
        out = []
        for G in self._groups:
            local_inc = np.flatnonzero(np.isin(G, self._include))
            out.append((G, PositionalProportionality(
                self._P[:, G], self._eps, alternatives=self._alts, metrics=[self._mets[i] for i in G],
                ties=self.ties, missing=self.missing, include=local_inc.tolist() or None)))
        return tuple(out)

    def group_formulations(self) -> tuple[tuple[np.ndarray, PositionalProportionality], ...]:
        """Per group: its metrics (positions, shape (n_G,)) and the ungrouped formulation of that group alone
        (its metrics renumbered ``0..n_G-1``, forced metrics carried over). Ungrouped: ``((arange(n), self),)``.

        ``K`` is feasible here iff every ``K ∩ G`` (renumbered) is feasible in its group's formulation.
        """
        return self._parts

    def _ungrouped(self, what: str) -> None:
        if self._groups is not None:
            raise InvalidInputError(f"{what}: not defined for a grouped formulation (the rows differ per group); "
                                    "use group_formulations()")

    @cached_property
    def _cuts(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct top-r sets with ``0 < |T| < n``: (B bool (R, n), c int64 (R,))."""
        self._ungrouped("cut_rows")
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
        self._ungrouped("size_intervals")
        p, q = self._pq()
        _, c = self._cuts
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
        """Sizes ``k >= |include|`` for which every cut's integer interval ``[L_k, U_k]`` is non-empty,
        shape (s,); grouped: the sums of one admissible size per group."""
        if self._groups is not None:
            reach = np.zeros(1, dtype=bool)
            reach[0] = True
            for _, sub in self._parts:
                ok = np.zeros(sub.n_metrics + 1, dtype=bool)
                ok[sub.admissible_sizes()] = True
                reach = np.convolve(reach.astype(np.int64), ok.astype(np.int64)) > 0
            return np.flatnonzero(reach).astype(np.int64)
        ks = np.arange(max(1, int(self._include.size)), self.n_metrics + 1)
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

    def _local(self, K: np.ndarray) -> list[np.ndarray]:
        """``K ∩ G`` renumbered within each group (one array per group)."""
        return [np.flatnonzero(np.isin(G, K)) for G, _ in self._parts]

    def split_selection(self, selection: Any) -> list[np.ndarray]:
        """A selection of all the metrics as one selection per group, each in the numbering of its
        :meth:`group_formulations` formulation (ungrouped: the selection itself, in a list)."""
        return self._local(self.as_selection(selection))

    def is_proportional(self, selection: Any) -> bool:
        """Is ``K`` eps-proportional (grouped: within every group, with ``K ∩ G`` non-empty; exact arithmetic)?
        Forced inclusion is not part of the property (see :meth:`check`)."""
        K = self.as_selection(selection)
        if self._groups is not None:
            return all(sub.is_proportional(L) for (_, sub), L in zip(self._parts, self._local(K)))
        return K.size > 0 and self._violated(K)[0].size == 0

    def check(self, selection: Any) -> Check:
        K = self.as_selection(selection)
        details: dict[str, Any] = {}
        if K.size == 0:
            return Check.from_reasons(["empty selection: at least one metric is required"])
        reasons: list[str] = [] if self._groups is not None else self._include_reasons(K)
        if self.size is not None:
            if K.size != self.size:
                reasons.append(f"{K.size} metrics selected, size = {self.size} required")
            return Check.from_reasons(reasons)
        if self._groups is not None:
            reasons, total = [], 0  # each group's formulation checks its own forced metrics
            for t, ((_, sub), L) in enumerate(zip(self._parts, self._local(K))):
                if L.size == 0:
                    reasons.append(f"group {t}: no metric selected (every group needs at least one)")
                    total += 1
                    continue
                c = sub.check(L)
                total += c.n_violations
                reasons.extend(f"group {t}: {why}" for why in c.reasons)
                if "violated_pairs" in c.details:
                    details[f"violated_pairs_group{t}"] = c.details["violated_pairs"]
            return Check(total == 0, tuple(reasons[:20]), total, details)
        forced = len(reasons)
        a, r, dev = self._violated(K)
        n, k = self.n_metrics, K.size
        CN, CK = self._counts_all, count_table(self._P, K)
        for i in range(min(a.size, 20)):
            reasons.append(
                f"alternative {self._alts[a[i]]!r} at r={r[i] + 1}: |C(N,r,a)/|N| - C(K,r,a)/|K|| = "
                f"|{CN[a[i], r[i]]}/{n} - {CK[a[i], r[i]]}/{k}| = {dev[i] / (n * k):.6g} > eps = {self.eps:g}"
            )
        details["violated_pairs"] = np.stack([a, r + 1], axis=1)
        return Check(a.size + forced == 0, tuple(reasons[:20]), int(a.size) + forced, details)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        """Fixed size: the forced metrics plus metrics drawn uniformly up to ``size``. Minimum size: the
        shortest eps-proportional prefix (at least the forced metrics) of a random order of the metrics with
        the forced ones first, per group when grouped (always feasible)."""
        n = self.n_metrics
        I = self._include
        if self.size is not None:
            rest = np.setdiff1d(np.arange(n), I)
            return np.sort(np.concatenate([I, rng.choice(rest, size=self.size - I.size, replace=False)]))
        if self._groups is not None:
            return np.sort(np.concatenate([G[sub.random_selection(rng)] for G, sub in self._parts]))
        perm = self._include_first(rng)
        B, c = self._cuts
        p, q = self._pq()
        ks = np.arange(1, n + 1)
        cum = np.cumsum(B[:, perm], axis=1, dtype=np.int64)  # (R, n): C(prefix, T)
        ok = (q * np.abs(c[:, None] * ks[None, :] - cum * n) <= p * n * ks[None, :]).all(axis=0)
        ok[: max(I.size - 1, 0)] = False  # the prefix holds every forced metric
        L = int(np.argmax(ok)) + 1 if ok.any() else n
        return np.sort(perm[:L])

    def initial_selection(self) -> np.ndarray:
        """The exact backends' default warm start, always feasible: :meth:`random_selection` with seed 0
        (minimum size: the shortest eps-proportional prefix of a seeded order, all metrics at worst)."""
        return self.random_selection(np.random.default_rng(0))

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        n = self.n_metrics
        sizes = [self.size] if self.size is not None else range(1, n + 1)
        for k in sizes:
            for c in itertools.combinations(range(n), k):
                yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[PositionalProportionality]:
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
            cls.from_scores(t1, eps=0.3, groups=[[0, 2, 4, 6], [1, 3, 5, 7]]),
            cls.from_scores(t1, eps=0.25, include=[0, 5]),
            cls.from_scores(t3, eps=0.34, missing="last", groups=[[0, 1, 2], [3, 4, 5, 6]], include=[4]),
            cls.from_scores(t2, size=3, include=[0, 4]),  # forces a worse optimum (5/12 instead of 1/4)
        ]

    def bounds(self, selection: Any = None) -> dict[str, Any]:
        """Worst-case bounds of the paper beside what was found.

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
            Grouped: ``upper_bound`` and ``sample_size`` are summed over the
            groups (each group capped at its size), the guarantee holding per group.
        """
        m, n = self.n_alternatives, self.n_metrics
        out: dict[str, Any] = {"n_metrics": n, "n_alternatives": m}
        if self._eps is not None:
            e = float(self._eps)
            ub = math.log(2 * m) / e**2
            sizes = [n] if self._groups is None else [G.size for G in self._groups]
            out["upper_bound"] = ub if self._groups is None else float(sum(min(s, ub) for s in sizes))
            out["sample_size"] = int(sum(min(s, math.ceil(ub)) for s in sizes))
            out["worst_case_lower_bound"] = math.log(m) / (288 * e**2) if m > 1 else 0.0
            adm = self.admissible_sizes()
            out["smallest_admissible_size"] = int(adm[0])
        if selection is not None:
            K = self.as_selection(selection)
            out["found"] = int(K.size)
            out["max_deviation"] = self.max_deviation(K) if K.size else math.nan
        return out

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {**self._policy_extras(), "size": self.size,
                               "n_groups": 1 if self._groups is None else len(self._groups)}
        if self._eps is not None:
            out["eps"] = float(self._eps)
            out["eps_rational"] = f"{self._eps.numerator}/{self._eps.denominator}"
        if selection.size:
            K = self.as_selection(selection)
            out["max_deviation"] = self.max_deviation(K)
            if self._groups is not None:
                devs = [sub.max_deviation(L) for (_, sub), L in zip(self._parts, self._local(K)) if L.size]
                out["max_group_deviation"] = max(devs) if len(devs) == len(self._parts) else math.nan
            if self._eps is not None:
                out["proportional"] = self.is_proportional(K)
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
                raise InvalidInputError("model: 'size-indexed' is a minimum-size statement; "
                                        "this formulation has a fixed size")
            return self._fixed_model()
        if model in ("auto", "direct"):
            return self._direct_model()
        if self._groups is not None:
            raise InvalidInputError("model: 'size-indexed' is stated for one group; a grouped formulation "
                                    "uses model='direct' (or 'auto')")
        return self._size_indexed_model()

    def _x_lb(self) -> np.ndarray:
        """Lower bounds of ``x``: 1 for the forced metrics, shape (n,)."""
        lb = np.zeros(self.n_metrics)
        lb[self._include] = 1.0
        return lb

    def _direct_model(self) -> LinearModel:
        """One integer size ``k_G = sum_{i in G} x_i`` per group (one group when ungrouped) and the group's rows
        ``q n_G sum_T x - (q c - p n_G) k_G >= 0``, ``q n_G sum_T x - (q c + p n_G) k_G <= 0``."""
        p, q = self._pq()
        n = self.n_metrics
        parts = self._parts
        adm0 = np.array([int(sub.admissible_sizes()[0]) for _, sub in parts], dtype=np.int64)
        b = ModelBuilder("positional_proportionality")
        x = b.add_vars("x", n, lb=self._x_lb(), ub=1, integer=True)
        k = b.add_vars("size", len(parts), lb=adm0.astype(float), ub=[float(G.size) for G, _ in parts],
                       integer=True, cost=1.0)
        b.add_rows("card", rows=np.concatenate([np.full(G.size, t) for t, (G, _) in enumerate(parts)]
                                               + [np.arange(len(parts))]),
                   cols=np.concatenate([x[G] for G, _ in parts] + [k]),
                   vals=np.concatenate([np.ones(n), -np.ones(len(parts))]), lb=np.zeros(len(parts)),
                   ub=np.zeros(len(parts)))
        n_cuts = 0
        for name in ("lower", "upper"):
            R, C, V = [], [], []
            nrow = 0
            for t, (G, sub) in enumerate(parts):
                B, c = sub._cuts
                nG = G.size
                n_cuts += int(c.size) if name == "lower" else 0
                coef_k = q * c - p * nG if name == "lower" else q * c + p * nG
                keep = coef_k > 0 if name == "lower" else coef_k < q * nG
                Bk, ck = B[keep], coef_k[keep]
                gcd = np.gcd(q * nG, ck)
                r, col = np.nonzero(Bk)
                R += [r + nrow, np.arange(ck.size) + nrow]
                C += [x[G[col]], np.full(ck.size, k[t])]
                V += [(q * nG // gcd)[r].astype(float), -(ck // gcd).astype(float)]
                nrow += ck.size
            rows, cols, vals = (np.concatenate(a) if a else np.zeros(0) for a in (R, C, V))
            if name == "lower":
                b.add_rows(name, rows=rows, cols=cols, vals=vals, lb=np.zeros(nrow), ub=np.full(nrow, np.inf))
            else:
                b.add_rows(name, rows=rows, cols=cols, vals=vals, lb=np.full(nrow, -np.inf), ub=np.zeros(nrow))
        return b.build(selection_block="x", selection_items=np.arange(n),
                       meta={"variant": "direct", "n_cuts": n_cuts, "min_admissible_size": int(adm0.sum()),
                             "eps_rational": f"{p}/{q}", "n_groups": len(parts)})

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
        B, _ = self._cuts
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
        x = b.add_vars("x", n, lb=self._x_lb(), ub=1, integer=True)
        z = b.add_vars("z", s, lb=0, ub=1, integer=True, cost=adm.astype(float))
        b.add_cardinality("one_size", z, 1.0)
        b.add_cardinality("card", np.concatenate([x, z]), 0.0, coefs=np.concatenate([np.ones(n), -adm.astype(float)]))
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
        if self.size is None:  # pragma: no cover - linear_model sends only fixed-size instances here
            raise InvalidInputError("size: the fixed-size statement needs size, got None")
        n, k = self.n_metrics, int(self.size)
        b = ModelBuilder("positional_proportionality_fixed")
        x = b.add_vars("x", n, lb=self._x_lb(), ub=1, integer=True)
        u = b.add_vars("u", 1, lb=0.0, ub=float(n * k), implied_integer=True, cost=1.0 / (n * k))
        b.add_cardinality("card", x, k)
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
