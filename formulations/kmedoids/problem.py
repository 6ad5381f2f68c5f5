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
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.properties import NumericalProperties, WarmStart
from benchsel.formulations.core.validation import (
    as_array,
    check_choice,
)

from ..base import Check, Formulation
from ..estimation.weighted import ClusterWeighted
from .bounds import SortedRows
from .checks import _features_iv, _graph_distances, _kmedoids_iv
from .data import KMedoidsData
from .distances import dissimilarity
from .greedy import greedy_build
from .lagrangian import lagrangian_bound
from .statements import Statements
from .twins import Twins


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
        self.data = KMedoidsData(D, w, cand, self.k, unit_weights=weights is None or bool(np.all(w == 1.0)),
                                 all_candidates=candidates is None or cand.size == D.shape[0])
        self._twins = Twins(self.data)
        self._twinless: KMedoids | None = None  # _without_twins()
        self._statements = Statements(self.data, self)

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
        return self.data.D

    @property
    def weights(self) -> np.ndarray:
        """Item weights, shape (N,)."""
        return self.data.w

    @property
    def candidates(self) -> np.ndarray:
        """Items allowed as medoids, shape (C,), sorted."""
        return self.data.cand

    @property
    def unit_weights(self) -> bool:
        return self.data.unit_weights

    @property
    def all_candidates(self) -> bool:
        return self.data.all_candidates

    @property
    def n_items(self) -> int:
        return int(self.data.D.shape[0])

    @property
    def dtype(self) -> str:
        """Storage of ``D``: ``"float64"`` or ``"float32"``."""
        return np.dtype(self.data.dtype).name

    def get_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "D": self.data.D,
            "k": self.k,
            "weights": None if self.data.unit_weights else self.data.w,
            "candidates": None if self.data.all_candidates else self.data.cand,
        }
        if self.data.dtype is np.float32:
            params["dtype"] = "float32"
        return params

    def sorted_candidates(self, deadline: float | None = None) -> SortedRows:
        """Per served item, the candidates in increasing distance (computed once, shared by the statements).

        Parameters
        ----------
        deadline : float, optional
            ``time.perf_counter()`` value at which sorting pauses; the rest is
            sorted by later calls (or on demand by the Benders cuts).
        """
        return self.data.sorted_candidates(deadline)

    # ---------------------------------------------------------------- oracle
    def evaluate(self, selection: Any) -> float:
        """``sum_i w_i min_{j in S} D[i, j]`` for a non-empty selection ``S`` (summed in float64)."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return self.data.cost(S)

    def check(self, selection: Any) -> Check:
        S = self.as_selection(selection)
        reasons = []
        if S.size != self.k:
            reasons.append(f"{S.size} medoids selected, k = {self.k} required")
        if not self.data.all_candidates:
            bad = np.setdiff1d(S, self.data.cand)
            if bad.size:
                reasons.append(f"{bad.size} selected items are not candidates (e.g. item {int(bad[0])})")
        return Check.from_reasons(reasons)

    def assign(self, selection: Any) -> np.ndarray:
        """Medoid (item index) serving each item, shape (N,); ties go to the lowest index."""
        S = self.as_selection(selection)
        if S.size == 0:
            raise InvalidInputError("selection: expected at least one medoid, got an empty selection")
        return S[np.argmin(self.data.D[:, S], axis=1)]

    def cluster_weights(self, selection: Any) -> np.ndarray:
        """Share of the total item weight served by each medoid, shape (len(selection),).

        With unit weights this is ``|cluster j| / N`` (AnchorPoints' weights).
        """
        S = self.as_selection(selection)
        lab = np.argmin(self.data.D[:, S], axis=1)
        return np.bincount(lab, weights=self.data.w, minlength=S.size) / self.data.w.sum()

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
        d = self.data
        est = ClusterWeighted(D=d.D, item_weights=None if d.unit_weights else d.w).fit(None, sel).predict(s)
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
        d_max = float(self.data.D.max(initial=0.0))
        w_max = float(self.data.w.max(initial=0.0))
        if d_max == 0.0 or w_max == 0.0:
            return self, 1.0
        lo, hi = self.UNIT_RANGE
        if lo <= math.frexp(d_max * w_max)[1] <= hi:
            return self, 1.0
        e_d, e_w = math.frexp(d_max)[1], math.frexp(w_max)[1]
        D = np.ldexp(self.data.D, -e_d)
        w = None if self.data.unit_weights else np.ldexp(self.data.w, -e_w)
        scaled = KMedoids(D, self.k, weights=w, candidates=None if self.data.all_candidates else self.data.cand,
                          dtype=self.dtype)
        return scaled, math.ldexp(1.0, e_d + (0 if self.data.unit_weights else e_w))

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self.data.cand, size=self.k, replace=False))

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
        return greedy_build(self.data, deadline)

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
        S0 = None if incumbent is None else self.as_selection(incumbent, "incumbent")
        return lagrangian_bound(self.data, time_limit, incumbent=S0, max_iter=max_iter, multipliers=multipliers)

    def quick_bound(self, time_limit: float | None = None, *, incumbent: Any = None) -> float:
        """A valid lower bound within ``time_limit`` seconds (the Lagrangian bound, :meth:`lagrangian_bound`)."""
        return self.lagrangian_bound(time_limit, incumbent=incumbent)[0]

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(self.data.cand.tolist(), self.k):
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
        return math.comb(int(self.data.cand.size), self.k)

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
        return self._statements.size(model)

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
        return self._statements.check_fits(model, time_limit=time_limit, nnz_per_second=nnz_per_second,
                                           check_time=check_time)

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
            d, gd = self.data, g.data
            return replace(out, meta={**out.meta, "merged_candidates": int(d.cand.size - gd.cand.size),
                                      "merged_items": int(d.served().size - gd.served().size)})
        return self._statements.build(model, allow_lazy=allow_lazy, time_limit=time_limit,
                                      nnz_per_second=nnz_per_second)

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
        return self._twins.representatives()[0].copy()

    def client_representatives(self) -> np.ndarray:
        """Representative of each served item: the lowest-index served item with the same distances to
        every candidate (exactly, as stored), which may stand for it with their weights summed.

        Returns
        -------
        ndarray of int64, shape (n_served,)
            Item index of the representative of each served item (in increasing item order).
        """
        return self._twins.representatives()[1].copy()

    def canonical_selection(self, selection: Any) -> np.ndarray:
        """``selection`` with each medoid replaced by its representative (:meth:`candidate_representatives`).

        A medoid whose twin is also selected gives way to the lowest-index
        representative not selected, which can only lower the objective.
        Returns item indices, shape (k,), sorted; a selection holding a
        non-candidate, or of an instance whose statements merge nothing
        (:meth:`_without_twins`), is returned as it is.
        """
        sel = self.as_selection(selection)
        cand = self.data.cand
        pos = np.minimum(np.searchsorted(cand, sel), cand.size - 1)
        if not np.array_equal(cand[pos], sel) or self._without_twins() is self:
            return sel
        return self._twins.canonical(sel)

    def _without_twins(self) -> KMedoids:
        """This problem with one candidate per interchangeable group and one served item per group of
        twin rows (its weight the group's sum; the others weight 0): the same objective for every
        selection. ``self`` when nothing merges or it does not pay: fewer distinct candidates than
        ``k``, or a cost-matrix copy above :attr:`DEDUP_COPY_MAX`."""
        if self._twinless is None:
            merged = self._twins.merged(self.DEDUP_COPY_MAX)
            if merged is None:
                self._twinless = self
            else:
                w, keep = merged
                self._twinless = KMedoids(self.data.D, self.k, weights=w, candidates=keep, dtype=self.dtype)
        return self._twinless
