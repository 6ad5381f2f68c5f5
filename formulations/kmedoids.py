"""F4 — k-medoids (p-median) coresets: AnchorPoints and RepCore-style clustering.

``min_{S subset of candidates, |S| = k}  sum_i w_i * min_{j in S} D[i, j]``

``D[i, j]`` is the dissimilarity of item ``i`` to medoid ``j`` (it need not be
symmetric).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterator

import numpy as np
from scipy.spatial.distance import cdist

from benchsel.solvers.errors import InvalidInputError
from benchsel.solvers.model import LinearModel, ModelBuilder, RowBlock
from benchsel.solvers.validation import (
    MAX_MAGNITUDE,
    as_array,
    as_index_array,
    check_allocation,
    check_choice,
    check_int,
    check_magnitude,
)

from .base import Check, Formulation

__all__ = ["KMedoids", "dissimilarity"]

METRICS = ("correlation", "cosine", "euclidean")


def dissimilarity(X: Any, metric: str = "correlation") -> np.ndarray:
    """Pairwise dissimilarity of the rows of ``X``.

    Parameters
    ----------
    X : array_like, shape (N, d)
        One row of features per item (e.g. the item's responses from source
        models, or an embedding).
    metric : {"correlation", "cosine", "euclidean"}
        ``"correlation"``: ``1 - Pearson`` (AnchorPoints; constant rows get
        correlation 0 with everything but themselves); ``"cosine"``:
        ``1 - cos`` of L2-normalised rows (RepCore); ``"euclidean"``.

    Returns
    -------
    ndarray, shape (N, N)
        Non-negative, zero diagonal.
    """
    X = as_array(X, "X", ndim=2, shape_doc="(N, d)")
    check_choice(metric, "metric", METRICS)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise InvalidInputError(f"X: expected at least one row and one column, got shape {X.shape}")
    check_allocation(3 * 8.0 * X.shape[0] ** 2, "X", f"the ({X.shape[0]}, {X.shape[0]}) dissimilarity matrix")
    X, unscale = _exact_rescale(X, metric)
    if metric == "euclidean":
        D = cdist(X, X, "euclidean")
    else:
        Z = X - X.mean(axis=1, keepdims=True) if metric == "correlation" else X.copy()
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        safe = np.where(norms > 0, norms, 1.0)
        Z = Z / safe
        D = 1.0 - Z @ Z.T  # zero rows give similarity 0 (distance 1)
    np.clip(D, 0.0, None, out=D)
    np.fill_diagonal(D, 0.0)
    return D if unscale == 0 else np.ldexp(D, unscale)


def _exact_rescale(X: np.ndarray, metric: str) -> tuple[np.ndarray, int]:
    """``X`` scaled by powers of two (exact) so that squares neither overflow nor underflow.

    Correlation and cosine do not depend on a row's scale: each row is scaled
    by ``2**-e`` with ``2**e`` about its largest magnitude. Euclidean distances
    scale with ``X``: one common factor, returned as the exponent to undo
    (``D = ldexp(D_scaled, e)``).
    """
    if metric == "euclidean":
        big = float(np.max(np.abs(X))) if X.size else 0.0
        if big == 0.0 or 2.0**-500 < big < 2.0**500:
            return X, 0
        e = int(np.frexp(big)[1])
        return np.ldexp(X, -e), e
    big = np.max(np.abs(X), axis=1)
    e = np.frexp(big)[1].astype(np.int64)
    e[big == 0] = 0
    if not np.any((big > 0) & ((big < 2.0**-500) | (big > 2.0**500))):
        return X, 0
    return np.ldexp(X, -e[:, None]), 0


def _kmedoids_iv(D: Any, k: Any, weights: Any, candidates: Any, *,
                 D_name: str = "D") -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Checks of :class:`KMedoids`' arguments (pure); returns ``(D, weights, candidates, k)``.

    ``D`` finite, non-negative, square, real; ``N * max(D) * max(weights)``
    (a bound on any objective) below :data:`MAX_MAGNITUDE`; ``candidates`` as
    distinct indices or a boolean mask of length ``N``; ``k`` an integer (not a
    bool) with ``1 <= k <= min(N - 1, C)``.
    """
    D = as_array(D, D_name, ndim=2, shape_doc="(N, N)", nonnegative=True)
    if D.shape[0] != D.shape[1]:
        raise InvalidInputError(f"{D_name}: expected a square array of shape (N, N), got shape {D.shape}")
    N = D.shape[0]
    if N < 2:
        raise InvalidInputError(f"{D_name}: expected at least 2 items, got shape {D.shape}")
    if weights is None:
        w = np.ones(N)
    else:
        w = as_array(weights, "weights", shape=(N,), shape_doc=f"(N,) = ({N},)", nonnegative=True)
        if not w.any():
            raise InvalidInputError("weights: expected at least one positive weight, got all zeros")
    d_max = check_magnitude(D, D_name, scale=N, what=f"a sum of N = {N} distances")
    check_magnitude(w, "weights", scale=N * max(d_max, 1.0),
                    what=f"a sum of N = {N} weighted distances of up to {d_max:.3g}")
    if candidates is None:
        cand = np.arange(N, dtype=np.int64)
    else:
        cand = np.sort(as_index_array(candidates, N, "candidates", allow_empty=False,
                                           range_what="distinct item indices"))
    k = check_int(k, "k", low=1, high=min(N - 1, cand.size), low_doc="1",
                  high_doc=f"min(N - 1, n_candidates) = {min(N - 1, cand.size)}")
    return D, w, cand, k


def _features_iv(X: Any, metric: Any, weights: Any) -> np.ndarray:
    """Checks of :meth:`KMedoids.from_features`' features (pure): at least 2 rows, and euclidean
    distances whose sum over the items (with the weights) stays below :data:`MAX_MAGNITUDE`."""
    X = as_array(X, "X", ndim=2, shape_doc="(N, d)")
    check_choice(metric, "metric", METRICS)
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise InvalidInputError(f"X: expected at least 2 items (rows) and 1 feature (column), got shape {X.shape}")
    if metric == "euclidean" and X.size:
        lo, hi = np.min(X, axis=0), np.max(X, axis=0)
        with np.errstate(over="ignore"):
            span = float(np.linalg.norm(np.ldexp(hi, -600) - np.ldexp(lo, -600))) * 2.0**600
        w_max = 1.0
        if weights is not None:
            w_max = float(np.max(np.abs(as_array(weights, "weights", ndim=1)), initial=0.0))
        if not (math.isfinite(span) and span * X.shape[0] * max(w_max, 1.0) <= MAX_MAGNITUDE):
            raise InvalidInputError(
                f"X: expected features whose euclidean distances, summed over the N = {X.shape[0]} items, stay below "
                f"{MAX_MAGNITUDE:.3g}; got distances up to {span:.3g} (float64 would overflow); rescale X"
            )
    return X


class KMedoids(Formulation):
    """k-medoids coreset selection (p-median).

    Parameters
    ----------
    D : array_like, shape (N, N)
        Dissimilarities, finite and non-negative; ``D[i, j]`` is the cost of
        serving item ``i`` by medoid ``j``.
    k : int
        Number of medoids, ``1 <= k < N`` (and ``k <= len(candidates)``).
    weights : array_like, shape (N,), optional
        Non-negative item weights (default 1).
    candidates : array_like of int, shape (C,), optional
        Items allowed as medoids (default all).

    Notes
    -----
    Exact statements (``model=`` option of :meth:`linear_model`):
    ``"assignment"`` (``y_j`` open, ``x_ij <= y_j``, ``sum_j x_ij = 1``),
    ``"radius"`` (Elloumi 2010: per item, sorted distinct distances and one
    variable per distance step) and ``"benders"``, the radius formulation
    projected on ``y`` (Benders decomposition, Duran-Mateluna, Ales & Elloumi
    2023): one cost variable per item and the cuts
    ``theta_i >= L - sum_j max(0, L - D[i, j]) y_j`` generated on demand (its
    LP bound equals the radius formulation's). ``"auto"`` picks the assignment
    model when it has at most ``10_000`` assignment variables, else the
    Benders master when the backend can generate rows, else the radius model.
    """

    sense = "min"
    model_options = {"model": ("auto", "assignment", "radius", "benders")}
    AUTO_ASSIGNMENT_MAX = 10_000

    def __init__(self, D: Any, k: int, *, weights: Any = None, candidates: Any = None) -> None:
        D, w, cand, self.k = _kmedoids_iv(D, k, weights, candidates)
        self._D = np.ascontiguousarray(D)
        self._D.setflags(write=False)
        self._w = w.copy()
        self._w.setflags(write=False)
        self._unit_weights = weights is None or bool(np.all(w == 1.0))
        self._cand = cand
        self._cand.setflags(write=False)
        self._all_candidates = candidates is None

    # --------------------------------------------------------------- builders
    @classmethod
    def from_features(cls, X: Any, k: int, metric: str = "correlation", *, weights: Any = None,
                      candidates: Any = None) -> "KMedoids":
        """Build from item features.

        Parameters
        ----------
        X : array_like, shape (N, d)
            Item features (e.g. source models' responses per item, or embeddings).
        k : int
        metric : {"correlation", "cosine", "euclidean"}
        weights, candidates : see :class:`KMedoids`.
        """
        X = _features_iv(X, metric, weights)
        return cls(dissimilarity(X, metric), k, weights=weights, candidates=candidates)

    # ------------------------------------------------------------------ data
    @property
    def D(self) -> np.ndarray:
        """Dissimilarity matrix, shape (N, N) (read-only)."""
        return self._D

    @property
    def weights(self) -> np.ndarray:
        """Item weights, shape (N,)."""
        return self._w

    @property
    def candidates(self) -> np.ndarray:
        """Items allowed as medoids, shape (C,), sorted."""
        return self._cand

    @property
    def unit_weights(self) -> bool:
        return self._unit_weights

    @property
    def all_candidates(self) -> bool:
        return self._all_candidates

    @property
    def n_items(self) -> int:
        return int(self._D.shape[0])

    def get_params(self) -> dict[str, Any]:
        return {
            "D": self._D,
            "k": self.k,
            "weights": None if self._unit_weights else self._w,
            "candidates": None if self._all_candidates else self._cand,
        }

    # ---------------------------------------------------------------- oracle
    def evaluate(self, selection: Any) -> float:
        """``sum_i w_i min_{j in S} D[i, j]`` for a non-empty selection ``S``."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return float(self._w @ self._D[:, S].min(axis=1))

    def check(self, selection: Any) -> Check:
        S = self.as_selection(selection)
        reasons = []
        if S.size != self.k:
            reasons.append(f"{S.size} medoids selected, k = {self.k} required")
        if not self._all_candidates:
            bad = np.setdiff1d(S, self._cand)
            if bad.size:
                reasons.append(f"{bad.size} selected items are not candidates (e.g. item {int(bad[0])})")
        return Check.from_reasons(reasons)

    def assign(self, selection: Any) -> np.ndarray:
        """Medoid (item index) serving each item, shape (N,); ties go to the lowest index."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return S[np.argmin(self._D[:, S], axis=1)]

    def cluster_weights(self, selection: Any) -> np.ndarray:
        """Share of the total item weight served by each medoid, shape (len(selection),).

        With unit weights this is ``|cluster j| / N`` (AnchorPoints' weights).
        """
        S = self.as_selection(selection)
        lab = np.argmin(self._D[:, S], axis=1)
        return np.bincount(lab, weights=self._w, minlength=S.size) / self._w.sum()

    def estimate(self, selection: Any, scores: Any) -> np.ndarray | float:
        """AnchorPoints estimate of full-benchmark scores from scores on the medoids.

        Parameters
        ----------
        selection : array_like of int, shape (k,)
            The medoids, in the order of the last axis of ``scores``
            (any order; it is matched to ``sorted(selection)`` internally).
        scores : array_like, shape (k,) or (G, k)
            Scores of one or ``G`` target models on the medoids, in the order
            given by ``selection``.

        Returns
        -------
        float or ndarray, shape (G,)
            ``sum_j (cluster weight share of j) * score on j`` (the
            ``"cluster-weighted"`` estimator of :mod:`benchsel.formulations.estimators`
            on this instance's dissimilarities and weights).
        """
        from .estimators import ClusterWeighted

        sel = np.asarray(selection)
        S = self.as_selection(sel)
        s = as_array(scores, "scores", ndim=(1, 2), shape_doc=f"(k,) or (G, k) with k = {S.size}")
        if s.shape[-1] != S.size:
            raise InvalidInputError(f"scores: expected last axis of length {S.size} (one per medoid), got shape {s.shape}")
        est = ClusterWeighted(D=self._D, item_weights=None if self._unit_weights else self._w).fit(None, sel).predict(s)
        return float(est[0]) if s.ndim == 1 else est

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self._cand, size=self.k, replace=False))

    def greedy_selection(self) -> np.ndarray:
        """PAM's greedy BUILD: add the candidate that lowers the weighted cost most, ``k`` times.

        Returns
        -------
        ndarray of int, shape (k,)
            Medoids in the order chosen (item indices).
        """
        Dc = self._D[:, self._cand]
        w = self._w
        first = int(np.argmin(w @ Dc))
        chosen = [first]
        d1 = Dc[:, first].copy()
        avail = np.ones(self._cand.size, bool)
        avail[first] = False
        for _ in range(1, self.k):
            gain = w @ np.maximum(d1[:, None] - Dc, 0.0)
            gain[~avail] = -np.inf
            j = int(np.argmax(gain))
            chosen.append(j)
            avail[j] = False
            np.minimum(d1, Dc[:, j], out=d1)
        return self._cand[np.asarray(chosen)]

    def initial_selection(self) -> np.ndarray:
        """Greedy BUILD medoids (sorted): the exact backends' default warm start."""
        return np.sort(self.greedy_selection())

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(self._cand.tolist(), self.k):
            yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list["KMedoids"]:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(9, 2))
        D_asym = rng.integers(0, 20, size=(8, 8)).astype(float)
        np.fill_diagonal(D_asym, 0.0)
        return [
            cls.from_features(X, k=3, metric="euclidean"),
            cls.from_features(rng.normal(size=(8, 5)), k=2, metric="correlation", weights=rng.uniform(0.5, 2, 8)),
            cls(D_asym, 3, candidates=[0, 2, 3, 5, 7]),
        ]

    def n_selections(self) -> int:
        return math.comb(int(self._cand.size), self.k)

    # ----------------------------------------------------------- linear model
    def linear_model(self, *, allow_lazy: bool = False, model: str = "auto") -> LinearModel:
        """MILP statement.

        Parameters
        ----------
        allow_lazy : bool
            The backend generates rows on demand (needed by ``"benders"``).
        model : {"auto", "assignment", "radius", "benders"}
        """
        check_choice(model, "model", self.model_options["model"])
        if model == "auto":
            if self.n_items * self._cand.size <= self.AUTO_ASSIGNMENT_MAX:
                model = "assignment"
            else:
                model = "benders" if allow_lazy else "radius"
        if model == "benders" and not allow_lazy:
            raise InvalidInputError(
                "model: 'benders' generates its cuts on demand, which this consumer (MPS export, CP-SAT or Pyomo) "
                "cannot do; use model='radius' or model='assignment'"
            )
        if model == "assignment":
            return self._assignment_model()
        return self._radius_model() if model == "radius" else self._benders_model()

    def _served(self) -> np.ndarray:
        """Items with positive weight (the only ones the objective sees)."""
        return np.flatnonzero(self._w > 0)

    def _assignment_model(self) -> LinearModel:
        I = self._served()
        C = self._cand
        nI, nC = I.size, C.size
        b = ModelBuilder("kmedoids_assignment")
        y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
        cost = self._w[I, None] * self._D[np.ix_(I, C)]
        x = b.add_vars("x", (nI, nC), lb=0, ub=1, implied_integer=True, cost=cost)
        b.add_cardinality("card", y, self.k)
        b.add_rows("assign", rows=np.repeat(np.arange(nI), nC), cols=x.ravel(), vals=1.0, lb=np.ones(nI), ub=np.ones(nI))
        r = np.arange(nI * nC)
        b.add_rows(
            "link",
            rows=np.concatenate([r, r]),
            cols=np.concatenate([x.ravel(), np.tile(y, nI)]),
            vals=np.concatenate([np.ones(nI * nC), -np.ones(nI * nC)]),
            ub=np.zeros(nI * nC),
            shape=(nI, nC),
        )
        return b.build(selection_block="y", selection_items=C, meta={"variant": "assignment"})

    def _radius_model(self) -> LinearModel:
        """Elloumi (2010) radius formulation, vectorised.

        For item ``i`` let ``u_i^1 < ... < u_i^{K_i}`` be its distinct distances
        to the candidates. ``z_i^h = 1`` when no open medoid lies within
        ``u_i^h``. Cost ``w_i (u_i^1 + sum_h (u_i^{h+1} - u_i^h) z_i^h)``;
        rows ``z_i^1 + sum_{d_ij = u_i^1} y_j >= 1`` and
        ``z_i^h - z_i^{h-1} + sum_{d_ij = u_i^h} y_j >= 0``. Steps where at
        least ``C - k + 1`` candidates lie within ``u_i^h`` always have
        ``z = 0`` and are dropped with their rows.
        """
        I = self._served()
        C = self._cand
        nI, nC = I.size, C.size
        Dc = self._D[np.ix_(I, C)]
        order = np.argsort(Dc, axis=1, kind="stable")
        Ds = np.take_along_axis(Dc, order, axis=1)
        new = np.ones_like(Ds, dtype=bool)
        new[:, 1:] = Ds[:, 1:] > Ds[:, :-1]
        grp = np.cumsum(new, axis=1) - 1  # 0-based distinct-distance group of each sorted entry
        # count of candidates within the group's distance = position of the group's last entry + 1
        last = np.ones_like(new)
        last[:, :-1] = new[:, 1:]
        # a step h (0-based group) is kept when fewer than C - k + 1 candidates lie within u^h
        # and a next distance exists
        within = np.arange(1, nC + 1)[None, :]
        keep_entry = last & (within < nC - self.k + 1)  # one entry per kept group (its last)
        n_keep = keep_entry.sum(axis=1)  # kept steps per item
        # next distinct distance after each kept group: value at position (last index + 1)
        rows_i, pos = np.nonzero(keep_entry)
        nxt = Ds[rows_i, pos + 1]
        cur = Ds[rows_i, pos]
        b = ModelBuilder("kmedoids_radius")
        y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
        nz = int(n_keep.sum())
        z = b.add_vars("z", nz, lb=0, ub=1, implied_integer=True, cost=self._w[I][rows_i] * (nxt - cur))
        b.add_objective_constant(float(self._w[I] @ Ds[:, 0]))
        b.add_cardinality("card", y, self.k)
        # row index of (item, group): offset of item + group
        offs = np.concatenate([[0], np.cumsum(n_keep)[:-1]])
        g_of = grp[rows_i, pos]  # group of each kept step (0..n_keep-1 in order)
        # y entries: candidate at sorted position p of item i belongs to group grp[i, p]; keep if group < n_keep[i]
        in_row = grp < n_keep[:, None]
        ii, pp = np.nonzero(in_row)
        y_rows = offs[ii] + grp[ii, pp]
        y_cols = y[order[ii, pp]]
        # z entries: +1 on own row; -1 of previous step on next row
        z_rows_self = np.arange(nz)
        prev_mask = g_of > 0
        lb = np.where(g_of == 0, 1.0, 0.0)
        b.add_rows(
            "radius",
            rows=np.concatenate([y_rows, z_rows_self, z_rows_self[prev_mask]]),
            cols=np.concatenate([y_cols, z, z[np.flatnonzero(prev_mask) - 1]]),
            vals=np.concatenate([np.ones(y_rows.size), np.ones(nz), -np.ones(int(prev_mask.sum()))]),
            lb=lb,
        )
        return b.build(selection_block="y", selection_items=C,
                       meta={"variant": "radius", "steps": nz})

    def _benders_model(self) -> LinearModel:
        I = self._served()
        C = self._cand
        Dc = self._D[np.ix_(I, C)]
        b = ModelBuilder("kmedoids_benders")
        y = b.add_vars("y", C.size, lb=0, ub=1, integer=True)
        theta = b.add_vars("theta", I.size, lb=Dc.min(axis=1), ub=Dc.max(axis=1), cost=self._w[I])
        b.add_cardinality("card", y, self.k)
        lazy = _BendersCuts(Dc, y, theta, C, self.k)
        return b.build(selection_block="y", selection_items=C, meta={"variant": "benders"}, lazy=lazy,
                       integral_objective=self._integral_costs())

    def _integral_costs(self) -> bool:
        """Integer distances and weights: every selection has an integer objective."""
        I = self._served()
        w = self._w[I]
        return bool(np.all(w == np.round(w)) and np.all(self._D == np.round(self._D)))


class _BendersCuts:
    """Separation of ``theta_i + sum_j max(0, L - D[i, j]) y_j >= L``.

    For a (fractional) ``y``, the most violated level of item ``i`` is the
    distance at which the cumulative open mass of its nearest candidates
    reaches 1; at an integral ``y`` that is the distance to the nearest medoid,
    and the cut is then tight.
    """

    name = "benders"

    def __init__(self, Dc: np.ndarray, y_cols: np.ndarray, theta_cols: np.ndarray, items: np.ndarray, k: int) -> None:
        self.Dc = Dc  # (n_served, C)
        self.items = items  # item index of each y column
        self.k = k
        self.order = np.argsort(Dc, axis=1, kind="stable")
        self.Ds = np.take_along_axis(Dc, self.order, axis=1)
        self.y_cols = y_cols
        self.theta_cols = theta_cols

    def round(self, x: np.ndarray) -> np.ndarray:
        """The ``k`` candidates with the largest LP value (a primal heuristic)."""
        y = x[self.y_cols]
        return np.sort(self.items[np.argsort(-y, kind="stable")[: self.k]])

    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        y = np.clip(x[self.y_cols], 0.0, 1.0)
        th = x[self.theta_cols]
        cum = np.cumsum(y[self.order], axis=1)
        reach = cum >= 1.0 - 1e-9
        pos = np.where(reach.any(axis=1), np.argmax(reach, axis=1), self.Ds.shape[1] - 1)
        L = self.Ds[np.arange(self.Ds.shape[0]), pos]
        coef = np.maximum(L[:, None] - self.Dc, 0.0)
        viol = L - coef @ y - th
        idx = np.flatnonzero(viol > tol * np.maximum(1.0, np.abs(L)))
        if idx.size == 0:
            return None
        C = coef[idx]
        r, c = np.nonzero(C)
        m = idx.size
        return RowBlock(
            rows=np.concatenate([np.arange(m), r]),
            cols=np.concatenate([self.theta_cols[idx], self.y_cols[c]]),
            vals=np.concatenate([np.ones(m), C[r, c]]),
            lb=L[idx],
            ub=np.full(m, np.inf),
        )
