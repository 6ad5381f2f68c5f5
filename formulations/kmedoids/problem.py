"""k-medoids (p-median) coresets: AnchorPoints and RepCore-style clustering.

``min_{S subset of candidates, |S| = k}  sum_i w_i * min_{j in S} D[i, j]``

``D[i, j]`` is the dissimilarity of item ``i`` to medoid ``j`` (it need not be
symmetric).

Memory: a :class:`KMedoids` holds one dense ``N x N`` matrix (float64, or
float32 on request). The exact statements share one table of per-item sorted
candidate lists (int32, half a float64 copy), computed once per instance, and
build nothing else of size ``N x N``; :func:`dissimilarity` works block by
block.
"""
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel, ModelBuilder
from benchsel.formulations.core.properties import NumericalProperties, WarmStart
from benchsel.formulations.core.validation import (
    as_array,
    check_choice,
)

from ..base import Check, Formulation
from ..estimation.weighted import ClusterWeighted
from .benders import BendersCuts
from .bounds import SortedRows, _row_extremes, available_bytes, lagrangian_bound
from .checks import ModelTooLargeError, _features_iv, _graph_distances, _kmedoids_iv
from .distances import _row_block, dissimilarity
from .models import radius_model


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
    dtype : {"float64", "float32"}
        Storage of ``D``. ``"float32"`` halves the memory; the stored (rounded)
        distances then define the problem, and every objective is summed in
        float64.

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
    Benders master when the backend can generate rows, else the radius model
    when it fits (:meth:`model_size`).

    Every statement keeps one ``y`` column per group of *twin* candidates
    (identical distance columns over the served items, so any selection may
    swap one for another at no cost; duplicated items, say), the group's
    lowest-index candidate (:meth:`candidate_representatives`), and one
    served item per group of twin rows, with the group's summed weight
    (:meth:`client_representatives`). The reduced program has the same
    objective for every selection and lacks the symmetry that otherwise
    doubles the search tree at every pair of twin candidates. When the
    reduction would copy a cost matrix larger than :attr:`DEDUP_COPY_MAX`
    bytes (the full matrix is shared, not copied), it is skipped.
    """

    sense = "min"
    model_options: ClassVar[dict[str, tuple[str, ...]]] = {"model": ("auto", "assignment", "radius", "benders")}
    AUTO_ASSIGNMENT_MAX = 10_000
    #: Largest static model (estimated solver bytes) built; larger ones are refused.
    MAX_MODEL_BYTES = 2 * 2**30
    #: Largest ``n_served * C`` whose radius steps are counted exactly (by sorting) before a size check.
    EXACT_COUNT_MAX = 4_000_000
    #: Solver bytes per non-zero of a static model (an estimate of a MIP solver's memory; used by the size guards).
    BYTES_PER_NNZ = 360
    #: Largest cost-matrix copy (bytes) the statements make to merge twin candidates and twin served items.
    DEDUP_COPY_MAX = 2**27
    #: FasterPAM gives the exact backends their default incumbent and may use up to half of their time limit,
    #: with no cap in seconds: the exact incumbent is then never worse than FasterPAM's whenever FasterPAM
    #: converges within that half (at N = 14 000 FasterPAM needs tens of seconds: a cap in seconds would cut
    #: it short). :meth:`linear_model` takes the consumer's ``time_limit`` and ``nnz_per_second`` (size guards).
    numerical_properties: ClassVar[NumericalProperties] = NumericalProperties(
        warm_start=WarmStart("fasterpam", 0.5, None), sized_models=True)

    def __init__(self, D: Any, k: int, *, weights: Any = None, candidates: Any = None, dtype: Any = "float64") -> None:
        D, w, cand, self.k = _kmedoids_iv(D, k, weights, candidates, dtype=dtype)
        self._D = np.ascontiguousarray(D)
        self._D.setflags(write=False)
        self._dtype = self._D.dtype.type
        self._w = w.copy()
        self._w.setflags(write=False)
        self._unit_weights = weights is None or bool(np.all(w == 1.0))
        self._cand = cand
        self._cand.setflags(write=False)
        self._all_candidates = candidates is None or cand.size == self._D.shape[0]
        self._sorted: SortedRows | None = None
        self._twin_reps: tuple[np.ndarray, np.ndarray] | None = None  # _twins(), computed once
        self._twinless: KMedoids | None = None  # _without_twins()

    # --------------------------------------------------------------- builders
    @classmethod
    def from_features(cls, X: Any, k: int, metric: str = "correlation", *, weights: Any = None,
                      candidates: Any = None, dtype: Any = "float64") -> KMedoids:
        """Build from item features (distances computed block by block, see :func:`dissimilarity`).

        Parameters
        ----------
        X : array_like, shape (N, d)
            Item features (e.g. source models' responses per item, or embeddings).
        k : int
        metric : {"correlation", "cosine", "euclidean"}
        weights, candidates, dtype : see :class:`KMedoids`.
        """
        X = _features_iv(X, metric, weights)
        return cls(dissimilarity(X, metric, dtype=dtype), k, weights=weights, candidates=candidates, dtype=dtype)

    @classmethod
    def from_graph(cls, G: Any, k: int, weight: str | None = "weight", *, nodelist: Any = None, weights: Any = None,
                   candidates: Any = None, dtype: Any = "float64") -> KMedoids:
        """A p-median instance on a networkx graph: ``D`` = all-pairs shortest-path lengths.

        Parameters
        ----------
        G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
            Connected (strongly, when directed); on a directed graph
            ``D[i, j]`` is the length of the shortest path from ``i`` to ``j``.
            Parallel edges count with their cheapest weight; self-loops are
            ignored.
        k : int
        weight : str or None
            Edge attribute holding the (non-negative) length; edges without it
            have length 1; None: every edge has length 1.
        nodelist : sequence, optional
            Order of the nodes (item ``i`` is ``nodelist[i]``); default
            ``list(G.nodes)``.
        weights, candidates, dtype : see :class:`KMedoids` (indices refer to
            the node order).
        """
        D, _ = _graph_distances(G, weight, nodelist)
        return cls(D, k, weights=weights, candidates=candidates, dtype=dtype)

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

    @property
    def dtype(self) -> str:
        """Storage of ``D``: ``"float64"`` or ``"float32"``."""
        return np.dtype(self._dtype).name

    def get_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "D": self._D,
            "k": self.k,
            "weights": None if self._unit_weights else self._w,
            "candidates": None if self._all_candidates else self._cand,
        }
        if self._dtype is np.float32:
            params["dtype"] = "float32"
        return params

    def _served(self) -> np.ndarray:
        """Items with positive weight (the only ones the objective sees)."""
        return np.flatnonzero(self._w > 0)

    def _cost_is_D(self) -> bool:
        """Every item is served and a candidate: the cost matrix is ``D`` itself (a view, no copy)."""
        return self._served().size == self.n_items and self._all_candidates

    def _cost_matrix(self) -> np.ndarray:
        """``D`` restricted to served items x candidates, shape (n_served, C): a view when nothing is left out."""
        I = self._served()
        if self._cost_is_D():
            return self._D
        return self._D[np.ix_(I, self._cand)]

    def sorted_candidates(self, deadline: float | None = None) -> SortedRows:
        """Per served item, the candidates in increasing distance (computed once, shared by the statements).

        Parameters
        ----------
        deadline : float, optional
            ``time.perf_counter()`` value at which sorting pauses; the rest is
            sorted by later calls (or on demand by the Benders cuts).
        """
        if self._sorted is None:
            self._sorted = SortedRows(self._cost_matrix())
        self._sorted.extend(deadline)
        return self._sorted

    # ---------------------------------------------------------------- oracle
    def evaluate(self, selection: Any) -> float:
        """``sum_i w_i min_{j in S} D[i, j]`` for a non-empty selection ``S`` (summed in float64)."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return float(self._w @ self._D[:, S].min(axis=1).astype(np.float64))

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
            ``"cluster-weighted"`` estimator of :mod:`benchsel.formulations.estimation`
            on this instance's dissimilarities and weights).
        """
        sel = np.asarray(selection)
        S = self.as_selection(sel)
        s = as_array(scores, "scores", ndim=(1, 2), shape_doc=f"(k,) or (G, k) with k = {S.size}")
        if s.shape[-1] != S.size:
            raise InvalidInputError(
                f"scores: expected last axis of length {S.size} (one per medoid), got shape {s.shape}")
        est = ClusterWeighted(D=self._D, item_weights=None if self._unit_weights else self._w).fit(None, sel).predict(s)
        return float(est[0]) if s.ndim == 1 else est

    #: Cost magnitudes (largest weight times largest dissimilarity) solved as given: outside ``2**UNIT_RANGE``
    #: the exact backends solve a copy rescaled by a power of two (:meth:`unit_scale`).
    UNIT_RANGE = (-3, 24)

    def unit_scale(self) -> tuple[KMedoids, float]:
        """This instance with ``D`` and the weights rescaled by powers of two so that the largest cost is about 1.

        Returned as is (factor 1) when the largest cost ``max(w) * max(D)`` is
        within ``2**UNIT_RANGE``; otherwise a copy whose ``D`` and weights are
        divided by powers of two (exactly), so every objective of this instance
        is ``factor`` times the copy's.
        """
        d_max = float(self._D.max(initial=0.0))
        w_max = float(self._w.max(initial=0.0))
        if d_max == 0.0 or w_max == 0.0:
            return self, 1.0
        lo, hi = self.UNIT_RANGE
        if lo <= math.frexp(d_max * w_max)[1] <= hi:
            return self, 1.0
        e_d, e_w = math.frexp(d_max)[1], math.frexp(w_max)[1]
        D = np.ldexp(self._D, -e_d)
        w = None if self._unit_weights else np.ldexp(self._w, -e_w)
        scaled = KMedoids(D, self.k, weights=w, candidates=None if self._all_candidates else self._cand,
                          dtype=self.dtype)
        return scaled, math.ldexp(1.0, e_d + (0 if self._unit_weights else e_w))

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self._cand, size=self.k, replace=False))

    def greedy_selection(self, deadline: float | None = None) -> np.ndarray:
        """PAM's greedy BUILD: add the candidate that lowers the weighted cost most, ``k`` times.

        Incremental: after a medoid is added only the items it now serves
        change their contribution to the gains, so the work is about
        ``N * C * log(k)`` rather than ``N * C * k``, in blocks of bounded size.

        Parameters
        ----------
        deadline : float, optional
            ``time.perf_counter()`` value: once passed, the medoids still
            missing are the candidates of largest current gain, taken at once.

        Returns
        -------
        ndarray of int, shape (k,)
            Medoids in the order chosen (item indices).
        """
        D, w, cand = self._D, self._w, self._cand
        cols = None if self._all_candidates else cand
        C = cand.size
        B = _row_block(C)

        def rows(idx: np.ndarray) -> np.ndarray:  # a float64 copy of D[idx][:, cand]
            blk = D[idx] if cols is None else D[np.ix_(idx, cols)]
            return blk if blk.dtype == np.float64 else blk.astype(np.float64)

        def change(idx: np.ndarray, old: np.ndarray, new: np.ndarray | None) -> np.ndarray:
            """sum_i w_i (max(old_i - D[i, j], 0) - max(new_i - D[i, j], 0)) over ``idx``, shape (C,)."""
            g = np.zeros(C)
            for a in range(0, idx.size, B):
                sub = idx[a:a + B]
                blk = rows(sub)
                np.subtract(old[a:a + B, None], blk, out=blk)
                if new is None:
                    np.maximum(blk, 0.0, out=blk)
                else:  # new <= old: the difference of the two terms is old - D clipped to [0, old - new]
                    np.clip(blk, 0.0, (old[a:a + B] - new[a:a + B])[:, None], out=blk)
                g += w[sub] @ blk
            return g

        every = np.arange(self.n_items)
        total = np.zeros(C)
        for a in range(0, every.size, B):
            total += w[a:a + B] @ rows(every[a:a + B])
        first = int(np.argmin(total))
        chosen = [first]
        d1 = D[:, cand[first]].astype(np.float64)
        gain = change(every, d1, None)
        gain[first] = -np.inf
        while len(chosen) < self.k:
            if deadline is not None and time.perf_counter() >= deadline:
                rest = np.argsort(-gain, kind="stable")[: self.k - len(chosen)]
                chosen.extend(int(r) for r in rest)
                break
            j = int(np.argmax(gain))
            chosen.append(j)
            dj = D[:, cand[j]].astype(np.float64)
            ch = np.flatnonzero(dj < d1)
            if ch.size:  # their terms max(d1 - D, 0) shrink to max(dj - D, 0)
                gain -= change(ch, d1[ch], dj[ch])
                d1[ch] = dj[ch]
            gain[chosen] = -np.inf
        return cand[np.asarray(chosen)]

    def initial_selection(self) -> np.ndarray:
        """Greedy BUILD medoids (sorted): a cheap feasible selection.

        The exact backends' default warm start is FasterPAM started from it
        (``numerical_properties.warm_start``), run through the method registry.
        """
        return np.sort(self.greedy_selection())

    def lagrangian_bound(self, time_limit: float | None = None, *, incumbent: Any = None, max_iter: int = 300,
                         multipliers: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Lower bound from the Lagrangian relaxation of the assignment rows, raised by subgradient steps.

        For multipliers ``lam`` (one per served item),
        ``L(lam) = sum_i lam_i + (sum of the k smallest rho_j)`` with
        ``rho_j = sum_i min(0, w_i D[i, j] - lam_i)`` is a valid lower bound
        for every ``lam``; its maximum equals the LP bound. Deflected
        subgradient steps (Polyak's rule towards the incumbent's cost, halved
        after 20 steps without progress). With the sorted candidate lists a
        step visits only the pairs ``w_i D[i, j] < lam_i`` (a short prefix per
        item); without them, one blockwise pass over ``D``. It bounds instances
        whose LP is too large to solve.

        Parameters
        ----------
        time_limit : float, optional
            Seconds for the steps (at least one evaluation is made).
        incumbent : array_like of int, optional
            A selection: its cost sets the Polyak step target and its service
            distances the starting multipliers.
        max_iter : int
        multipliers : ndarray, shape (n_served,), optional
            Starting multipliers (overrides the incumbent's).

        Returns
        -------
        bound : float
            The best ``L(lam)`` found.
        multipliers : ndarray, shape (n_served,)
            The multipliers reaching it.
        """
        return lagrangian_bound(self, time_limit, incumbent=incumbent, max_iter=max_iter, multipliers=multipliers)

    def quick_bound(self, time_limit: float | None = None, *, incumbent: Any = None) -> float:
        """A valid lower bound within ``time_limit`` seconds (the Lagrangian bound, :meth:`lagrangian_bound`)."""
        return self.lagrangian_bound(time_limit, incumbent=incumbent)[0]

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(self._cand.tolist(), self.k):
            yield np.asarray(c, dtype=np.int64)

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[KMedoids]:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(9, 2))
        D_asym = rng.integers(0, 20, size=(8, 8)).astype(float)
        np.fill_diagonal(D_asym, 0.0)
        R = rng.integers(0, 2, size=(6, 7)).astype(float)
        R = np.vstack([R, R[[0, 0, 2]]])  # duplicated items: interchangeable candidates, merged by the statements
        return [
            cls.from_features(X, k=3, metric="euclidean"),
            cls.from_features(rng.normal(size=(8, 5)), k=2, metric="correlation", weights=rng.uniform(0.5, 2, 8)),
            cls(D_asym, 3, candidates=[0, 2, 3, 5, 7]),
            cls.from_features(R, k=3, metric="correlation"),
        ]

    def n_selections(self) -> int:
        return math.comb(int(self._cand.size), self.k)

    # ----------------------------------------------------------- linear model
    def model_size(self, model: str) -> dict[str, Any]:
        """Size of a statement, estimated without building it.

        Parameters
        ----------
        model : {"assignment", "radius", "benders"}

        Returns
        -------
        dict
            ``columns``, ``rows``, ``nnz`` (upper bounds for ``"radius"``,
            whose distinct distance steps are counted only when the sorted
            lists exist), ``bytes`` (solver memory at :attr:`BYTES_PER_NNZ`
            per non-zero; for ``"benders"`` the master plus the sorted lists).
        """
        check_choice(model, "model", ("assignment", "radius", "benders"))
        nI, nC = int(self._served().size), int(self._cand.size)
        if model == "assignment":
            cols, rows, nnz = nI * nC + nC, nI + nI * nC + 1, 3 * nI * nC + nC
        elif model == "radius":
            steps = self._radius_steps()
            cols, rows = steps + nC, steps + 1
            nnz = min(nI * nC, steps + nI) + 2 * steps + nC
        else:
            cols, rows, nnz = nI + nC, 1, nC
        size = {"model": model, "columns": int(cols), "rows": int(rows), "nnz": int(nnz),
                "bytes": int(nnz * self.BYTES_PER_NNZ)}
        if model == "benders":
            size["bytes"] = int(4 * nI * nC + 64 * (nI + nC) * 8)  # sorted lists + a master of a few cuts per item
        return size

    def _radius_steps(self) -> int:
        """Kept distance steps of the radius model (exact with the sorted lists, else ``n_served * (C - k)``)."""
        nI, nC, k = int(self._served().size), int(self._cand.size), self.k
        if nI * nC <= self.EXACT_COUNT_MAX:
            self.sorted_candidates()
        s = self._sorted
        if s is None or not s.complete:
            return nI * max(nC - k, 0)
        Dc, total = s.Dc, 0
        B = _row_block(nC)
        for a in range(0, nI, B):
            ds = np.take_along_axis(Dc[a:a + B], s.order[a:a + B], axis=1)
            last = np.ones(ds.shape, dtype=bool)
            last[:, :-1] = ds[:, 1:] > ds[:, :-1]
            total += int(last[:, : max(nC - k, 0)].sum())
        return total

    def check_model_fits(self, model: str, *, time_limit: float | None = None,
                         nnz_per_second: float | None = None, check_time: bool = True) -> dict[str, Any]:
        """Raise :class:`ModelTooLargeError` when a static statement would not fit.

        A statement fits when its estimated solver memory is at most
        :attr:`MAX_MODEL_BYTES` and the memory available, and (with
        ``check_time``, a time limit and the consumer's building rate) when
        building and passing it takes at most half the time limit.

        Returns
        -------
        dict
            The estimate of :meth:`model_size`, with ``seconds`` when a rate is given.
        """
        size = self.model_size(model)
        if model == "benders":
            return size
        budget = min(self.MAX_MODEL_BYTES, available_bytes())
        secs = None if not nnz_per_second else size["nnz"] / float(nnz_per_second)
        size["seconds"] = secs
        what = (f"the {model} model of this instance (N = {self.n_items}, {self._cand.size} candidates, k = {self.k}) "
                f"has about {size['columns']:,} columns and {size['nnz']:,} non-zeros, about "
                f"{size['bytes'] / 2**30:.2f} GiB for the solver")
        if size["bytes"] > budget:
            raise ModelTooLargeError(
                f"model: {what}, more than the {budget / 2**30:.2f} GiB allowed (KMedoids.MAX_MODEL_BYTES or the "
                "memory available); use model='benders' (rows generated on demand), or a heuristic", size, model)
        if check_time and time_limit is not None and secs is not None and secs > 0.5 * time_limit:
            raise ModelTooLargeError(
                f"model: {what}; building it would take about {secs:.0f} s, more than half the time limit of "
                f"{time_limit:g} s; use model='benders' (rows made on demand), raise time_limit, or use a heuristic",
                size, model)
        return size

    def linear_model(self, *, allow_lazy: bool = False, model: str = "auto", time_limit: float | None = None,
                     nnz_per_second: float | None = None) -> LinearModel:
        """MILP statement.

        Parameters
        ----------
        allow_lazy : bool
            The backend generates rows on demand (needed by ``"benders"``).
        model : {"auto", "assignment", "radius", "benders"}
        time_limit, nnz_per_second : float, optional
            The consumer's time limit and building rate (non-zeros per second):
            ``"auto"`` picks no static statement that would take more than
            half the limit to build (:meth:`check_model_fits`); a statement
            too large for the memory is refused whether asked for or not.

        Raises
        ------
        ModelTooLargeError
            An :class:`InvalidInputError` naming ``model`` with the estimated
            columns, non-zeros and bytes.
        """
        check_choice(model, "model", self.model_options["model"])
        g = self._without_twins()
        if g is not self:  # the same problem with one candidate and one served item per group of twins
            out = g.linear_model(allow_lazy=allow_lazy, model=model, time_limit=time_limit,
                                 nnz_per_second=nnz_per_second)
            return replace(out, meta={**out.meta, "merged_candidates": int(self._cand.size - g._cand.size),
                                      "merged_items": int(self._served().size - g._served().size)})
        requested = model
        if model == "auto":
            if self.n_items * self._cand.size <= self.AUTO_ASSIGNMENT_MAX:
                model = "assignment"
            else:
                model = "benders" if allow_lazy else "radius"
        if model == "benders" and not allow_lazy:
            raise InvalidInputError(
                "model: 'benders' generates its cuts on demand, which this static consumer (e.g. MPS export) "
                "cannot do; use model='radius' or model='assignment'"
            )
        if model != "benders":
            try:
                self.check_model_fits(model, time_limit=time_limit, nnz_per_second=nnz_per_second,
                                      check_time=requested == "auto")
            except ModelTooLargeError as e:
                e.requested = requested
                raise
        if model == "assignment":
            return self._assignment_model()
        return self._radius_model() if model == "radius" else self._benders_model()

    def _assignment_model(self) -> LinearModel:
        I = self._served()
        C = self._cand
        nI, nC = I.size, C.size
        b = ModelBuilder("kmedoids_assignment")
        y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
        cost = self._w[I, None] * self._D[np.ix_(I, C)]
        x = b.add_vars("x", (nI, nC), lb=0, ub=1, implied_integer=True, cost=cost)
        b.add_cardinality("card", y, self.k)
        b.add_rows("assign", rows=np.repeat(np.arange(nI), nC), cols=x.ravel(), vals=1.0, lb=np.ones(nI),
                   ub=np.ones(nI))
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
        """Elloumi (2010) radius formulation, vectorised, from the shared sorted lists.

        For item ``i`` let ``u_i^1 < ... < u_i^{K_i}`` be its distinct distances
        to the candidates. ``z_i^h = 1`` when no open medoid lies within
        ``u_i^h``. Cost ``w_i (u_i^1 + sum_h (u_i^{h+1} - u_i^h) z_i^h)``;
        rows ``z_i^1 + sum_{d_ij = u_i^1} y_j >= 1`` and
        ``z_i^h - z_i^{h-1} + sum_{d_ij = u_i^h} y_j >= 0``. Steps where at
        least ``C - k + 1`` candidates lie within ``u_i^h`` always have
        ``z = 0`` and are dropped with their rows.
        """
        return radius_model(self)

    def _benders_model(self) -> LinearModel:
        I = self._served()
        C = self._cand
        Dc = self._cost_matrix()
        lo, hi = _row_extremes(Dc)
        b = ModelBuilder("kmedoids_benders")
        y = b.add_vars("y", C.size, lb=0, ub=1, integer=True)
        theta = b.add_vars("theta", I.size, lb=lo, ub=hi, cost=self._w[I])
        b.add_cardinality("card", y, self.k)
        if self._sorted is None:
            self._sorted = SortedRows(Dc)
        lazy = BendersCuts(self, self._sorted, y, theta, lo, hi)
        return b.build(selection_block="y", selection_items=C, meta={"variant": "benders"}, lazy=lazy,
                       integral_objective=self._integral_costs())

    # ------------------------------------------------------------------ twins
    def candidate_representatives(self) -> np.ndarray:
        """Representative of each candidate: the lowest-index candidate with the same distance column.

        Candidates ``j`` and ``j'`` are interchangeable when ``D[i, j] == D[i, j']``
        for every served item ``i`` (exactly, as stored): every item is then as
        far from one as from the other. Columns are grouped by a random
        projection and each group is checked entry by entry.

        Returns
        -------
        ndarray of int64, shape (C,)
            Item index of the representative of each candidate (itself when it
            has no twin).
        """
        return self._twins()[0].copy()

    def client_representatives(self) -> np.ndarray:
        """Representative of each served item: the lowest-index served item with the same distances to
        every candidate (exactly, as stored), which may stand for it with their weights summed.

        Returns
        -------
        ndarray of int64, shape (n_served,)
            Item index of the representative of each served item (``self._served()`` order).
        """
        return self._twins()[1].copy()

    def _twins(self) -> tuple[np.ndarray, np.ndarray]:
        """Twin columns (candidates) and twin rows (served items) of the cost matrix, as representatives
        (computed once; callers copy)."""
        if self._twin_reps is None:
            self._twin_reps = self._find_twins()
        return self._twin_reps

    def _find_twins(self) -> tuple[np.ndarray, np.ndarray]:
        I, cand, C = self._served(), self._cand, self._cand.size
        whole = self._cost_is_D()
        rng = np.random.default_rng(0)
        r_rows, r_cols = rng.uniform(1.0, 2.0, I.size), rng.uniform(1.0, 2.0, C)
        h_cols, h_rows = np.zeros(C), np.zeros(I.size)
        B = _row_block(C)
        for a in range(0, I.size, B):  # blocks of served rows: no copy of the cost matrix
            blk = np.asarray(self._D[a:a + B] if whole else self._D[np.ix_(I[a:a + B], cand)], dtype=np.float64)
            h_cols += r_rows[a:a + B] @ blk
            h_rows[a:a + B] = blk @ r_cols
        col_rep = _twin_heads(h_cols, lambda m: self._D[I, cand[m]])
        row_rep = _twin_heads(h_rows, lambda m: self._D[I[m], cand])
        return cand[col_rep], I[row_rep]

    def canonical_selection(self, selection: Any) -> np.ndarray:
        """``selection`` with each medoid replaced by its representative (:meth:`candidate_representatives`).

        A medoid whose twin is also selected gives way to the lowest-index
        representative not selected, which can only lower the objective.
        Returns item indices, shape (k,), sorted; a selection holding a
        non-candidate, or of an instance whose statements merge nothing
        (:meth:`_without_twins`), is returned as it is.
        """
        sel = self.as_selection(selection)
        pos = np.minimum(np.searchsorted(self._cand, sel), self._cand.size - 1)
        if not np.array_equal(self._cand[pos], sel) or self._without_twins() is self:
            return sel
        reps = self.candidate_representatives()
        mapped = np.unique(reps[pos])
        if mapped.size < sel.size:
            spare = np.setdiff1d(np.unique(reps), mapped)[: sel.size - mapped.size]
            mapped = np.sort(np.concatenate([mapped, spare]))
        return mapped.astype(np.int64)

    def _without_twins(self) -> KMedoids:
        """This problem with one candidate per interchangeable group and one served item per group of
        twin rows (its weight the group's sum; the others weight 0): the same objective for every
        selection. ``self`` when nothing merges or it does not pay: fewer distinct candidates than
        ``k``, or a cost-matrix copy above :attr:`DEDUP_COPY_MAX`."""
        if self._twinless is None:
            keep = np.unique(self.candidate_representatives())
            crep = self.client_representatives()
            n_clients = np.unique(crep).size
            copy_bytes = n_clients * keep.size * self._D.itemsize
            whole = self._cost_is_D()
            merges = keep.size < self._cand.size or n_clients < crep.size
            if not merges or keep.size < self.k or (whole and copy_bytes > self.DEDUP_COPY_MAX):
                self._twinless = self
            else:
                w = np.zeros(self.n_items)
                np.add.at(w, crep, self._w[self._served()])
                self._twinless = KMedoids(self._D, self.k, weights=w, candidates=keep, dtype=self._D.dtype.name)
        return self._twinless

    def _integral_costs(self) -> bool:
        """Integer distances and weights: every selection has an integer objective."""
        w = self._w[self._served()]
        if not np.all(w == np.round(w)):
            return False
        B = _row_block(self.n_items)
        return all(bool(np.all(self._D[a:a + B] == np.round(self._D[a:a + B]))) for a in range(0, self.n_items, B))


def _twin_heads(h: np.ndarray, vec: Callable[[int], np.ndarray]) -> np.ndarray:
    """Representative (lowest index) of each index whose vector ``vec(m)`` equals another's exactly.

    ``h`` (shape (n,)) is a random projection of each vector: equal vectors have
    (nearly) equal projections, so only runs of near-equal ``h`` are compared entry by
    entry; a hash collision stays apart. Returns indices, shape (n,).
    """
    order = np.argsort(h, kind="stable")
    hs = h[order]
    near = np.abs(np.diff(hs)) <= 1e-9 * np.maximum(1.0, np.abs(hs[1:]))
    rep = np.arange(h.size)
    for run in np.split(order, np.flatnonzero(~near) + 1):  # runs of near-equal projections
        if run.size > 1:
            members = np.sort(run)
            head = vec(int(members[0]))
            for m in members[1:]:
                if np.array_equal(vec(int(m)), head):
                    rep[m] = members[0]
    return rep
