"""BayesAME's batch problem :class:`BatchInformationGain`: choose the k items whose scores would most reduce
the posterior variance of the full-benchmark score (see :mod:`benchsel.formulations.bayes.model`)."""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ..base import Check, Formulation
from ..core.errors import InvalidInputError
from ..core.model import LazyRowsBase, LinearModel, ModelBuilder, RowBlock
from ..core.validation import (
    MAX_MAGNITUDE,
    as_array,
    as_index_array,
    check_allocation,
    check_choice,
    check_float,
    check_int,
    check_magnitude,
)
from .model import KERNELS, BayesModel, Buckets, _group_items, check_references, check_tol
from .posterior import BatchData

#: Smallest ``sigma2 / alpha`` :class:`BatchInformationGain` accepts. Below it the noise is numerically zero
#: next to the prior variance: the cuts and the quadratic program carry coefficients ``alpha / (sigma2 N_b)``
#: that an exact backend no longer resolves (wrong optima claimed from ``1e-10``, "error in input data" at ``1e-30``).
MIN_NOISE_RATIO = 1e-8


@dataclass(frozen=True)
class _BatchArgs:
    """:class:`BatchInformationGain`'s arguments, checked (by :func:`_batch_iv`)."""

    R: np.ndarray
    tol: float | None
    alpha: float
    beta: float
    sigma2: float
    kernel: str
    coreset: np.ndarray
    observed: np.ndarray | None
    k: int
    N0: int


def _batch_iv(reference_scores: Any, coreset: Any, observed: Any, k: Any, alpha: Any, beta: Any, sigma2: Any,
              tol: Any, kernel: Any, N0: Any) -> _BatchArgs:
    """Every check of :class:`BatchInformationGain`'s arguments, once (pure); its parts trust the result.

    ``sigma2 >= MIN_NOISE_RATIO * alpha``. Magnitudes: squared distances of reference vectors, ``R / tol``, the
    prior variance and noise summed over ``N^2`` pairs and the observed scores
    summed over ``N`` items stay below :data:`MAX_MAGNITUDE`; the ``(B, B)``
    covariance matrices fit in memory; ``coreset`` as item indices or a boolean
    mask of length ``N``, fewer than ``N``; ``observed`` one score per coreset item or per item;
    ``1 <= k <= N - |coreset|``.
    """
    R = check_references(reference_scores)
    Kr, N = R.shape
    big = check_magnitude(R, "reference_scores", scale=2.0 * math.sqrt(Kr), limit=math.sqrt(MAX_MAGNITUDE),
                          what=f"squared distances between reference score vectors of length Kr = {Kr}")
    t = check_tol(tol)
    if t is not None and big / t > MAX_MAGNITUDE:
        raise InvalidInputError(f"tol: expected a tolerance with max|reference_scores| / tol below "
                                f"{MAX_MAGNITUDE:.3g}, got tol = {t:g} for scores up to {big:.3g}")
    checked = {}
    for name, v, scale, what in (("alpha", alpha, float(N) ** 2, f"covariances summed over N^2 = {N}^2 item pairs"),
                                 ("sigma2", sigma2, float(N) ** 3, f"noise N_b sigma2 summed over N^2 = {N}^2 pairs")):
        x = check_float(v, name, low=0.0, low_open=True)
        check_magnitude(np.array([x]), name, scale=scale, what=what)
        checked[name] = x
    if checked["sigma2"] < MIN_NOISE_RATIO * checked["alpha"]:
        raise InvalidInputError(
            f"sigma2: expected sigma2 >= {MIN_NOISE_RATIO:g} * alpha = {MIN_NOISE_RATIO * checked['alpha']:.3g} (a "
            f"smaller noise is numerically zero next to the prior variance: the exact models' coefficients, ratios "
            f"alpha / (sigma2 N_b), then exceed what a solver resolves), got {checked['sigma2']:.3g}")
    obs = None if observed is None else as_array(observed, "observed", ndim=1)
    if obs is not None:
        check_magnitude(obs, "observed", scale=N, what=f"a sum of N = {N} scores")
    nbytes = 6 * 8.0 * N * N
    if nbytes > 2**30:  # count the buckets only when the bound matters
        nbytes = 6 * 8.0 * np.unique(R.T, axis=0).shape[0] ** 2
        check_allocation(nbytes, "reference_scores", f"the (B, B) covariance matrices of the B buckets of {N} items")
    order = np.zeros(0, dtype=np.int64) if coreset is None else as_index_array(coreset, N, "coreset")
    b = check_float(beta, "beta", low=0.0, low_open=True)
    kern = check_choice(kernel, "kernel", KERNELS)
    C = np.unique(order)
    if C.size >= N:
        raise InvalidInputError(
            f"coreset: expected fewer than N = {N} items (some must remain unevaluated), got {C.size}"
        )
    if obs is not None:
        if obs.size == N and C.size != N:
            obs = obs[C]
        elif obs.size == C.size:
            obs = obs[np.argsort(order, kind="stable")] if C.size else obs
        else:
            raise InvalidInputError(f"observed: target scores must match the coreset ({C.size} items) or the "
                                    f"reference item count N = {N}; got {obs.size} scores")
    nU = N - C.size
    k = check_int(k, "k", low=1, high=nU, low_doc="1",
                  high_doc=f"the number of unevaluated items |U| = N - |coreset| = {nU}")
    return _BatchArgs(R, t, checked["alpha"], b, checked["sigma2"], kern, C, obs, k, check_int(N0, "N0", low=0))


class _BatchOACuts(LazyRowsBase):
    """Tangent cuts of the batch problem's perspective function (:meth:`BatchInformationGain._oa_model`).

    Parameters
    ----------
    data : BatchData
    bcol : ndarray of int, shape (n,)
        Bucket of each copy column.
    z : ndarray of int, shape (n,)
        Global columns of the copies.
    t : int
        Global column of the scaled objective ``t``.
    scale : float
        ``s`` of the master.
    """

    name = "batch_oa"

    def __init__(self, data: BatchData, bcol: np.ndarray, z: np.ndarray, t: int, scale: float) -> None:
        self.S = 0.5 * (data.S + data.S.T)
        self.D = np.asarray(data.noise, dtype=float)
        self.u = np.asarray(data.v, dtype=float) / data.N
        self.bcol, self.z, self.t, self.s = bcol, np.asarray(z), int(t), float(scale)
        self.B = int(data.n_buckets)
        self.stats: dict[str, int] = {"oa_cuts": 0, "oa_separations": 0}

    def tangent(self, n: np.ndarray) -> tuple[float, float, np.ndarray]:
        """``f(n)``, and the cut ``f >= c0 - c @ n`` touching it at ``n`` (shapes: (B,) in, (B,) out)."""
        n = np.clip(np.asarray(n, dtype=float), 0.0, None)
        sup = np.flatnonzero(n > 1e-12)
        W = np.zeros(self.B)
        if sup.size:
            M = self.S[np.ix_(sup, sup)] + np.diag(self.D[sup] / n[sup])
            try:
                W[sup] = cho_solve(cho_factor(M, lower=True, check_finite=False), self.u[sup], check_finite=False)
            except np.linalg.LinAlgError:
                W[sup] = np.linalg.lstsq(M, self.u[sup], rcond=None)[0]
        SW = self.S @ W
        c0 = -float(W @ SW)
        c = (self.u - SW) ** 2 / self.D
        value = float(-c0 + np.sum(self.D[sup] * W[sup] ** 2 / n[sup]) - 2.0 * self.u @ W)
        return value, c0, c

    def rows_at(self, points: list[np.ndarray]) -> RowBlock:
        """The tangent cut at each count vector of ``points`` (each shape (B,)), as rows of the master."""
        return self._rows([self.tangent(n)[1:] for n in points])

    def _rows(self, cuts: list[tuple[float, np.ndarray]]) -> RowBlock:
        """Rows ``t + s c[bcol] @ z >= s c0`` of cuts ``(c0, c)`` (``c`` shape (B,))."""
        width = self.z.size + 1
        cols = np.tile(np.concatenate([[self.t], self.z]), len(cuts))
        vals = np.concatenate([np.concatenate([[1.0], self.s * c[self.bcol]]) for _, c in cuts])
        lb = np.asarray([self.s * c0 for c0, _ in cuts], dtype=float)
        return RowBlock(np.repeat(np.arange(len(cuts)), width), cols, vals, lb, np.full(len(cuts), np.inf))

    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        """The tangent at ``x``'s count vector when ``x``'s ``t`` lies below ``s f(n)`` by more than ``tol``."""
        self.stats["oa_separations"] += 1
        n = np.bincount(self.bcol, weights=np.asarray(x, dtype=float)[self.z], minlength=self.B)
        value, c0, c = self.tangent(n)
        if float(x[self.t]) >= self.s * value - tol:
            return None
        self.stats["oa_cuts"] += 1
        return self._rows([(c0, c)])


class BatchInformationGain(Formulation):
    """Batch information gain of BayesAME: ``max_{A subset U, |A| = k} beta(A)``.

    ``beta(A) = (1/N^2) v_A^T Sigma_U[A, A]^{-1} v_A`` with
    ``Sigma_U = H Sigma|C H^T + D`` the posterior covariance of the scores of
    the unevaluated items ``U`` and ``v = Sigma_U 1``. It is the variance of
    ``R`` removed by evaluating ``A`` (``Var(R|C) - Var(R|C, s_A)``); the
    expected information gain ``-1/2 log(1 - beta(A) / Var(R|C))`` is monotone
    in it.

    Parameters
    ----------
    reference_scores : array_like, shape (Kr, N)
        Full scores of the reference models; finite.
    coreset : array_like of int, shape (n,), optional
        Items already evaluated on the target model (default none).
    observed : array_like, shape (n,) or (N,), optional
        Target scores on ``coreset`` (in the order given), or a full target
        score vector of length ``N`` from which the coreset entries are read.
        ``beta`` does not depend on them; they give the posterior estimate in
        ``Result.extra``.
    k : int
        Batch size, ``1 <= k <= |U|``.
    alpha, beta : float
        Prior hyper-parameters (``> 0``).
    sigma2 : float
        Noise variance, at least :data:`MIN_NOISE_RATIO` (``1e-8``) times ``alpha``.
    tol : float, optional
        Bucketing tolerance (default None: only identical reference vectors share a bucket).
    kernel : {"se", "matern32"}
    N0 : int
        Margin of the unique regime (for the reported estimate).

    Notes
    -----
    ``beta`` depends on ``A`` only through the count vector ``c_b`` of items
    taken per bucket, so exact search may enumerate count vectors, and the
    mixed-integer statement (:meth:`linear_model`, a quadratic objective) keeps
    only ``min(k, unevaluated items)`` interchangeable copies per bucket.
    """

    sense = "max"
    quadratic_statement: ClassVar[bool] = True
    not_linear_reason: ClassVar[str | None] = (
        "beta(A) = (1/N^2) v_A^T Sigma_U[A,A]^{-1} v_A is a ratio of quadratic forms; its mixed-integer statement "
        "is the l0-constrained QP min w^T Sigma_U w - 2 w^T v / N s.t. ||w||_0 <= k (a quadratic objective), "
        "not a linear program"
    )

    def __init__(self, reference_scores: Any, *, coreset: Any = None, observed: Any = None, k: int,
                 alpha: float = 1.0, beta: float = 1.0, sigma2: float = 1e-4, tol: float | None = None,
                 kernel: str = "se", N0: int = 10) -> None:
        a = _batch_iv(reference_scores, coreset, observed, k, alpha, beta, sigma2, tol, kernel, N0)
        self.alpha, self.beta, self.k, self.N0 = a.alpha, a.beta, a.k, a.N0
        self.model = BayesModel._from_checked(_group_items(a.R, a.tol), sigma2=a.sigma2, kernel=a.kernel)
        self._R = np.ascontiguousarray(a.R)
        self._R.setflags(write=False)
        N = self.model.N
        C = self._C = a.coreset
        self._C.setflags(write=False)
        obs = self._obs = a.observed
        post = self.model.posterior(C, obs, alpha=self.alpha, beta=self.beta)
        self.posterior = post
        sizes = self.model.buckets.sizes
        r = (sizes - post.counts).astype(float)
        self.var_R = self.model.var_R(post.cov @ r, post.counts)
        self.data = BatchData.from_posterior(self.model, post.cov, post.counts, C, self.k)
        self._inU = np.ones(N, bool)
        self._inU[C] = False

    # ------------------------------------------------------------------ data
    @property
    def n_items(self) -> int:
        return self.model.N

    @property
    def reference_scores(self) -> np.ndarray:
        return self._R

    @property
    def coreset(self) -> np.ndarray:
        return self._C

    @property
    def unevaluated(self) -> np.ndarray:
        return self.data.items

    @property
    def buckets(self) -> Buckets:
        return self.model.buckets

    def get_params(self) -> dict[str, Any]:
        return {
            "reference_scores": self._R,
            "coreset": self._C,
            "observed": self._obs,
            "k": self.k,
            "alpha": self.alpha,
            "beta": self.beta,
            "sigma2": self.model.sigma2,
            "tol": self.model.buckets.tol,
            "kernel": self.model.kernel,
            "N0": self.N0,
        }

    def unit_scale(self) -> tuple[BatchInformationGain, float]:
        """This problem with the prior variance ``alpha`` and the noise ``sigma2`` divided by one power of two, so
        that ``alpha`` is about 1, and the factor back (returned as is when ``alpha`` is within ``2**[-3, 24]``).

        ``beta(A)`` is a variance reduction: scaling ``alpha`` and ``sigma2`` by ``c`` scales the covariances,
        their inverse and so every objective value by ``c`` exactly (a power of two), the reference scores and
        ``beta`` unchanged.
        """
        e = math.frexp(self.alpha)[1]
        if -3 <= e <= 24:
            return self, 1.0
        p = self.get_params()
        scaled = BatchInformationGain(**{**p, "alpha": math.ldexp(self.alpha, -e),
                                         "sigma2": math.ldexp(self.model.sigma2, -e)})
        return scaled, math.ldexp(1.0, e)

    # ---------------------------------------------------------------- oracle
    def _bucket_ids(self, S: np.ndarray) -> np.ndarray:
        """Full-model bucket labels of the selected items."""
        return self.model.buckets.labels[S]

    def sigma_U(self, items: Any) -> np.ndarray:
        """Posterior covariance of the scores of ``items``: ``(H Sigma|C H^T + D)[items, items]``, shape (k, k)."""
        S = np.asarray(items, dtype=np.int64)
        b = self._bucket_ids(S)
        M = self.posterior.cov[np.ix_(b, b)] + np.diag(self.model.noise[b])
        return M

    def v(self, items: Any) -> np.ndarray:
        """``v_i = sum_{j in U} Sigma_U[i, j]`` of ``items``, shape (k,)."""
        S = np.asarray(items, dtype=np.int64)
        b = self._bucket_ids(S)
        sizes = self.model.buckets.sizes
        r = (sizes - self.posterior.counts).astype(float)
        return (self.posterior.cov[b] @ r) + self.model.noise[b]

    def evaluate(self, selection: Any) -> float:
        """``beta(A) = (1/N^2) v_A^T Sigma_U[A, A]^{-1} v_A`` (0 for an empty selection).

        Items of the coreset enter the same formula (their posterior predictive
        covariance); :meth:`check` marks such a selection infeasible.
        """
        S = self.as_selection(selection)
        if S.size == 0:
            return 0.0
        M = self.sigma_U(S)
        a = self.v(S)
        L = np.linalg.cholesky(M)
        y = solve_triangular(L, a, lower=True, check_finite=False)
        return float(y @ y) / self.model.N ** 2

    def information_gain(self, selection: Any) -> float:
        """Expected information gain ``-1/2 log(1 - beta(A) / Var(R|C))``."""
        b = self.evaluate(selection)
        if self.var_R <= 0:
            return 0.0
        return float(-0.5 * math.log1p(-min(b / self.var_R, 1.0 - 1e-15)))

    def check(self, selection: Any) -> Check:
        S = self.as_selection(selection)
        reasons = []
        if S.size != self.k:
            reasons.append(f"{S.size} items selected, k = {self.k} required")
        inC = S[~self._inU[S]]
        if inC.size:
            reasons.append(f"{inC.size} selected items are already in the coreset (e.g. item {int(inC[0])})")
        return Check.from_reasons(reasons)

    def random_selection(self, rng: np.random.Generator) -> np.ndarray:
        return np.sort(rng.choice(self.data.items, size=self.k, replace=False))

    def enumerate_selections(self) -> Iterator[np.ndarray]:
        for c in itertools.combinations(self.data.items.tolist(), self.k):
            yield np.asarray(c, dtype=np.int64)

    def n_selections(self) -> int:
        return math.comb(int(self.data.items.size), self.k)

    def initial_selection(self) -> np.ndarray:
        """The greedy batch (:meth:`BatchData.greedy`): the exact backends' default warm start."""
        return self.data.to_items(self.data.greedy()[0])

    # ------------------------------------------------------ quadratic model
    #: ``linear_model(model=...)``: ``"miqp"`` (the quadratic statement), ``"oa"`` (its perspective
    #: outer approximation, lazy rows) or ``"auto"`` (``"oa"`` for consumers of lazy rows, else ``"miqp"``).
    model_options: ClassVar[dict[str, tuple[str, ...]]] = {"model": ("auto", "miqp", "oa")}

    def linear_model(self, *, allow_lazy: bool = False, model: str = "auto", **options: Any) -> LinearModel:
        """The batch problem as a mixed-integer program over the bucket copies.

        Two statements of the same problem (both exact; see :meth:`_miqp_model`
        and :meth:`_oa_model`):

        ``"miqp"``
            A mixed-integer quadratic program (``LinearModel.Q`` set): what MPS
            export and other static consumers get.
        ``"oa"``
            Its perspective reformulation's outer approximation: a linear
            master (selection binaries and one objective column) whose cuts
            are generated on demand (``LinearModel.lazy``): what a backend that
            generates rows gets (``"auto"`` with a consumer of lazy rows).

        Parameters
        ----------
        allow_lazy : bool
            The consumer separates lazy rows (``"oa"`` needs it).
        model : {"auto", "miqp", "oa"}
        **options
            None other are defined; any is refused.

        Returns
        -------
        LinearModel
        """
        self.check_model_options({"model": model, **options})
        if model == "auto":
            model = "oa" if allow_lazy else "miqp"
        if model == "oa" and not allow_lazy:
            raise InvalidInputError(
                "model: 'oa' generates its cuts on demand, which this static consumer (e.g. MPS export) cannot do; "
                "use model='miqp'"
            )
        return self._oa_model() if model == "oa" else self._miqp_model()

    def _copies(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bucket copies: bucket of each copy, its rank within the bucket and its item, each shape (n,).

        Bucket ``b`` keeps ``min(k, avail_b)`` copies, its lowest-index unevaluated items.
        """
        d = self.data
        copies = np.minimum(d.avail, d.k)
        bcol = np.repeat(np.arange(d.n_buckets), copies)
        first = np.concatenate([[0], np.cumsum(copies)[:-1]])
        pos = np.arange(bcol.size) - first[bcol]
        order = np.lexsort((d.items, d.labels))
        bucket_start = np.searchsorted(d.labels[order], np.arange(d.n_buckets))
        return bcol, pos, d.items[order[bucket_start[bcol] + pos]]

    @staticmethod
    def _order_rows(b: ModelBuilder, z: np.ndarray, pos: np.ndarray) -> None:
        """``z_{b,m} >= z_{b,m+1}``: a bucket's copies are taken in order (no symmetric duplicates)."""
        later = np.flatnonzero(pos > 0)
        if later.size:
            rows = np.arange(later.size)
            b.add_rows("order", rows=np.concatenate([rows, rows]), cols=np.concatenate([z[later - 1], z[later]]),
                       vals=np.concatenate([np.ones(later.size), -np.ones(later.size)]), lb=np.zeros(later.size))

    def _miqp_model(self) -> LinearModel:
        """The batch problem as a mixed-integer quadratic program (count-vector form).

        Items of one bucket are interchangeable, so each live bucket ``b`` keeps
        ``m_b = min(k, avail_b)`` copies (its lowest-index unevaluated items).
        With ``z`` the selection binaries of the copies and ``w`` their weights
        in the linear predictor of ``R`` (``w = N^{-1} Sigma_AA^{-1} v_A`` at the
        optimum)::

            min  sum_j g_j^2 + sum_i D_i w_i^2 - (2/N) sum_i v_i w_i       (= -beta(A) at the optimum)
            s.t. sum_i z_i = k,   z_{b,m} >= z_{b,m+1}                     (copies taken in order)
                 -M_i z_i <= w_i <= M_i z_i                                 (w_i = 0 unless selected)
                 g = G H^T w,   |g_j| <= sqrt(Var(R|C))

        where ``Sigma|C = G^T G`` over the live buckets (eigen-decomposition,
        null directions dropped), ``H`` maps copies to buckets and ``D_i`` is
        the copy's noise ``sigma^2 N_b``: ``w^T Sigma_U w = ||G H^T w||^2 + sum D_i w_i^2``.
        For a fixed support ``A`` the minimum over ``w`` is ``-beta(A)``, so the
        optimum of the program is ``-max beta`` (``objective_sign = -1``). The
        quadratic part is diagonal, and the noise squares ``D_i w_i^2`` belong to
        columns switched off by binaries (perspective-ready).

        The bounds are valid at every support's optimum, so no optimum is cut
        off: ``w^T Sigma_AA w = beta(A) <= Var(R|C)`` gives
        ``|g_j| <= sqrt(Var(R|C))`` and ``w_i^2 <= beta(A) (Sigma_AA^{-1})_ii
        <= Var(R|C) (Sigma_U^{-1})_ii`` (conditioning on more items lowers a
        conditional variance), with ``(Sigma_U^{-1})_ii = (d_b - Pi_bb) / d_b^2``,
        ``d_b = sigma^2 N_b`` and ``Pi`` the posterior covariance of the bucket
        abilities given every unevaluated item.

        Returns
        -------
        LinearModel
            Blocks ``z`` (selection, one column per copy), ``w``, ``g``; rows
            ``card``, ``order``, ``on_upper``, ``on_lower``, ``factor``;
            ``Q`` diagonal.
        """
        d = self.data
        Bu, k, N = d.n_buckets, d.k, d.N
        bcol, pos, copy_items = self._copies()
        n = bcol.size
        var_R = max(float(self.var_R), 1e-300)
        # w bounds: sqrt(Var(R|C) (Sigma_U^{-1})_ii)
        noise = d.noise
        Pi = d.S - d.S @ np.linalg.solve(d.S + np.diag(noise / d.avail), d.S)
        inv_diag = (noise - np.diag(Pi)) / noise ** 2
        inv_diag = np.clip(inv_diag, 1.0 / (np.diag(d.S) + noise), 1.0 / noise)
        M = np.sqrt(var_R * inv_diag) * (1.0 + 1e-6) + 1e-12
        # Sigma|C = G^T G
        lam, V = np.linalg.eigh(0.5 * (d.S + d.S.T))
        keep = lam > 1e-13 * max(float(lam.max()), 1e-300)
        G = (V[:, keep] * np.sqrt(lam[keep])).T  # (r, Bu)
        r = G.shape[0]
        gmax = math.sqrt(var_R) * (1.0 + 1e-6) + 1e-12
        b = ModelBuilder("bayes_batch_miqp")
        z = b.add_vars("z", n, lb=0, ub=1, integer=True)
        w = b.add_vars("w", n, lb=-M[bcol], ub=M[bcol], cost=-(2.0 / N) * d.v[bcol])
        g = b.add_vars("g", r, lb=-gmax, ub=gmax)
        b.add_cardinality("card", z, k)
        self._order_rows(b, z, pos)
        rows = np.arange(n)
        b.add_rows("on_upper", rows=np.concatenate([rows, rows]), cols=np.concatenate([w, z]),
                   vals=np.concatenate([np.ones(n), -M[bcol]]), ub=np.zeros(n))
        b.add_rows("on_lower", rows=np.concatenate([rows, rows]), cols=np.concatenate([w, z]),
                   vals=np.concatenate([np.ones(n), M[bcol]]), lb=np.zeros(n))
        GH = G[:, bcol]  # (r, n)
        jj, ii = np.nonzero(GH)
        b.add_rows("factor", rows=np.concatenate([np.arange(r), jj]), cols=np.concatenate([g, w[ii]]),
                   vals=np.concatenate([np.ones(r), -GH[jj, ii]]), lb=np.zeros(r), ub=np.zeros(r))
        b.add_quadratic_objective(g, g, 2.0)
        b.add_quadratic_objective(w, w, 2.0 * noise[bcol])
        return b.build(selection_block="z", selection_items=copy_items, objective_sign=-1,
                       meta={"variant": "miqp-counts", "copies": n, "rank": r, "buckets": Bu})

    def _oa_model(self) -> LinearModel:
        """The perspective outer approximation of the batch problem: a linear master with lazy cuts.

        With ``n_b`` the copies taken from bucket ``b`` (a sum of selection
        binaries), ``-beta`` is the value of the convex function

            f(n) = min_W  W' S W + sum_b D_b W_b^2 / n_b - (2/N) v' W     (W_b = 0 where n_b = 0)

        (``S = Sigma|C`` over the live buckets, ``D_b = sigma^2 N_b``: the
        perspective of the noise squares), and for *every* ``W'``

            f(n) >= -W'' S W' - sum_b n_b (v_b/N - (S W')_b)^2 / D_b          (a cut, linear in n)

        with equality at ``n`` when ``W'`` is the minimiser at ``n``
        (``S`` positive semi-definite: ``W'SW >= 2 W''SW - W''SW'``, then the
        minimum over each ``W_b`` is in closed form). The master is::

            min  t / s    s.t.  sum_i z_i = k,  z_{b,m} >= z_{b,m+1},
                                t + s sum_i c_{b(i)} z_i >= s c_0          (every cut generated)

        ``s`` (the inverse of the greedy batch's ``beta``) puts ``t`` in units
        of the objective's size, so a solver's absolute tolerances act relative
        to it. Cuts are separated at every point the solver asks about (fractional
        LP solutions too): the tangent at the point's count vector. Because
        any ``W'`` gives a valid cut, an inexact linear solve only weakens a
        cut, never makes it cut off a solution; at a 0/1 point the tangent is
        exact, so the master's optimum is the batch problem's. Two cuts are
        stated up front: at the greedy batch and at the uniform count vector.

        Returns
        -------
        LinearModel
            Blocks ``z`` (selection, one column per copy) and ``t`` (one
            column); rows ``card``, ``order``, ``oa0``; ``lazy`` the cut
            generator.
        """
        d = self.data
        bcol, pos, copy_items = self._copies()
        n = bcol.size
        gb, greedy = d.greedy()
        var_R = max(float(self.var_R), 0.0)
        s = 1.0 / greedy if greedy > 0 else 1.0 / max(var_R, 1e-300)
        b = ModelBuilder("bayes_batch_oa")
        z = b.add_vars("z", n, lb=0, ub=1, integer=True)
        t = b.add_vars("t", 1, lb=-s * var_R * (1.0 + 1e-6) - 1e-9, ub=0.0, cost=1.0 / s)
        b.add_cardinality("card", z, d.k)
        self._order_rows(b, z, pos)
        cuts = _BatchOACuts(d, bcol, z, int(t[0]), s)
        points = [np.bincount(gb, minlength=d.n_buckets).astype(float)]
        m = np.minimum(d.avail, d.k).astype(float)
        points.append(m * (d.k / m.sum()))
        block = cuts.rows_at(points)
        b.add_rows("oa0", rows=block.rows, cols=block.cols, vals=block.vals, lb=block.lb)
        return b.build(selection_block="z", selection_items=copy_items, objective_sign=-1, lazy=cuts,
                       meta={"variant": "oa-counts", "copies": n, "buckets": d.n_buckets, "objective_scale": s})

    def result_extras(self, selection: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {
            "var_R": self.var_R,
            "n_buckets": self.model.B,
            "unique_regime": self.model.buckets.unique_regime(self.N0),
        }
        S = np.asarray(selection)
        if S.size:
            out["information_gain"] = self.information_gain(S)
            out["var_R_after"] = max(self.var_R - self.evaluate(S), 0.0)
        if self._obs is not None:
            p = self.posterior
            total = float(self._obs.sum())
            out["estimate"] = self.model.estimate(p.mean, p.counts, total, self._C.size, self.N0)
        return out

    @classmethod
    def conformance_instances(cls, seed: int = 0) -> list[Formulation]:
        rng = np.random.default_rng(seed)
        Rb = rng.integers(0, 2, size=(3, 11)).astype(float)  # 3 binary references: repeated buckets
        Rc = rng.uniform(size=(4, 9))
        C1 = np.array([0, 5])
        return [
            cls(Rb, coreset=C1, observed=rng.integers(0, 2, 2).astype(float), k=3),
            cls(Rc, coreset=[2], observed=[0.4], k=2, alpha=0.5, beta=2.0, sigma2=1e-2),
            cls(Rc, k=3, tol=0.25, kernel="matern32"),
        ]
