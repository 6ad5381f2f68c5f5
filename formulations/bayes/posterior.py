"""BayesAME's posterior quantities: ``Var(R | C)``, the unified estimator, single-item gains, the sequential
posterior with Cholesky updates, and the data of the batch problem (:class:`BatchData`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from ..core.errors import InvalidInputError
from ..core.validation import (
    check_choice,
)
from .model import (
    BayesModel,
)

__all__ = [
    "BatchData",
    "SequentialPosterior",
]


# ============================================================ sequential form
class SequentialPosterior:
    """The bucket posterior under one-item-at-a-time observation, with Cholesky updates.

    While ``n < B`` it keeps the Cholesky factor of the item-level matrix
    ``H_C Sigma H_C^T + D_C`` and appends one row per observation (``O(n^2)``);
    once ``n >= B`` it switches (once) to the bucket-level matrix
    ``Sigma_OO + Delta`` over the observed buckets: a new bucket appends a row,
    another item of an observed bucket lowers ``Delta_bb`` — a rank-1 Cholesky
    downdate (``O(m^2)``). The posterior variances ``diag(Sigma|C)`` are kept up
    to date by the rank-1 conditioning identity; ``Sigma|C r`` and ``mu|C`` are
    computed from the factor in ``O(m^2 + m B)``.

    Parameters
    ----------
    model : BayesModel
    alpha, beta : float
        Hyper-parameters (change them with :meth:`set_hyper`, which rebuilds).
    form : {"auto", "item", "bucket"}
        ``"auto"`` follows the ``n < B`` rule; the others pin one form.
    """

    def __init__(self, model: BayesModel, alpha: float = 1.0, beta: float = 1.0, form: str = "auto") -> None:
        self.model = model
        self.form_rule = check_choice(form, "form", ("auto", "item", "bucket"))
        self.items: list[int] = []
        self.scores: list[float] = []
        self.counts = np.zeros(model.B, dtype=np.int64)
        self.sums = np.zeros(model.B)
        self.total = 0.0
        self._itemset: set[int] = set()
        self.set_hyper(alpha, beta)

    # ---------------------------------------------------------------- state
    @property
    def n(self) -> int:
        return len(self.items)

    def _want_form(self, n: int) -> str:
        if self.form_rule != "auto":
            return self.form_rule
        return "item" if n < self.model.B else "bucket"

    def set_hyper(self, alpha: float, beta: float) -> None:
        """Set ``alpha, beta`` and rebuild the factorisation from scratch."""
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.Sigma = self.model.covariance(self.alpha, self.beta)
        self._rebuild(self._want_form(self.n))

    def _rebuild(self, form: str) -> None:
        m = self.model
        self._cache: dict[str, np.ndarray] = {}
        self.form = form
        if form == "item":
            self.rows = [int(m.buckets.labels[i]) for i in self.items]
            noise = m.noise[self.rows] if self.rows else np.zeros(0)
            resid = (np.asarray(self.scores) - m.prior_mean[self.rows]) if self.rows else np.zeros(0)
        else:
            obs = np.flatnonzero(self.counts)
            self.rows = [int(b) for b in obs]
            noise = m.noise[obs] / self.counts[obs]
            resid = self.sums[obs] / self.counts[obs] - m.prior_mean[obs]
        self.pos = {b: p for p, b in enumerate(self.rows)} if form == "bucket" else {}
        k = len(self.rows)
        cap = max(16, 2 * k)
        self._L = np.zeros((cap, cap))
        self._resid = np.zeros(cap)
        self._z = np.zeros(cap)
        self._m = k
        if k:
            r = np.asarray(self.rows)
            K = self.Sigma[np.ix_(r, r)] + np.diag(noise)
            self._L[:k, :k] = cholesky(K, lower=True, check_finite=False)
            self._resid[:k] = resid
            self._z[:k] = solve_triangular(self._L[:k, :k], resid, lower=True, check_finite=False)
            G = solve_triangular(self._L[:k, :k], self.Sigma[r, :], lower=True, check_finite=False)
            self.cov_diag = np.diag(self.Sigma) - np.einsum("ij,ij->j", G, G)
        else:
            self.cov_diag = np.diag(self.Sigma).copy()
        self._sig_r = self.Sigma @ (self.model.buckets.sizes - self.counts).astype(float)

    def _grow(self) -> None:
        cap = self._L.shape[0]
        if self._m < cap:
            return
        L = np.zeros((2 * cap, 2 * cap))
        L[:cap, :cap] = self._L
        self._L = L
        for name in ("_resid", "_z"):
            v = np.zeros(2 * cap)
            v[:cap] = getattr(self, name)
            setattr(self, name, v)

    def _solve_K(self, rhs: np.ndarray) -> np.ndarray:
        """``K^{-1} rhs`` for the current factor (rhs shape (m,) or (m, p))."""
        m = self._m
        L = self._L[:m, :m]
        y = solve_triangular(L, rhs, lower=True, check_finite=False)
        return solve_triangular(L, y, lower=True, trans="T", check_finite=False)

    # ----------------------------------------------------------- posterior
    def _sig_cols(self, w: np.ndarray) -> np.ndarray:
        """``Sigma[:, rows] @ w`` (shape (B,)), without copying the columns when ``m`` is large."""
        r = self.rows
        if 4 * self._m < self.model.B:
            return self.Sigma[:, r] @ w
        wb = np.bincount(np.asarray(r), weights=w, minlength=self.model.B)
        return self.Sigma @ wb

    @property
    def mean(self) -> np.ndarray:
        """``mu|C``, shape (B,)."""
        if "mean" not in self._cache:
            m = self._m
            if m == 0:
                self._cache["mean"] = self.model.prior_mean.copy()
            else:
                w = solve_triangular(self._L[:m, :m], self._z[:m], lower=True, trans="T", check_finite=False)
                self._cache["mean"] = self.model.prior_mean + self._sig_cols(w)
        return self._cache["mean"]

    def cov_times(self, x: np.ndarray) -> np.ndarray:
        """``Sigma|C @ x`` for x of shape (B,)."""
        out = self.Sigma @ x
        if self._m:
            sx = out[self.rows]  # Sigma[rows, :] @ x (Sigma symmetric)
            out = out - self._sig_cols(self._solve_K(sx))
        return out

    def cov_r(self) -> np.ndarray:
        """``Sigma|C @ r`` with ``r_b = N_b - n_b`` (``Sigma r`` is kept incrementally)."""
        if "cov_r" not in self._cache:
            out = self._sig_r.copy()
            if self._m:
                out -= self._sig_cols(self._solve_K(self._sig_r[self.rows]))
            self._cache["cov_r"] = out
        return self._cache["cov_r"]

    def cov_col(self, b: int) -> np.ndarray:
        """``Sigma|C[:, b]``, shape (B,)."""
        out = self.Sigma[:, b].copy()
        if self._m:
            out -= self._sig_cols(self._solve_K(self.Sigma[b, self.rows]))
        return out

    def cov(self) -> np.ndarray:
        """The full ``Sigma|C``, shape (B, B) (``O(m^2 B + m B^2)``)."""
        if not self._m:
            return self.Sigma.copy()
        G = solve_triangular(self._L[:self._m, :self._m], self.Sigma[self.rows, :], lower=True, check_finite=False)
        return self.Sigma - G.T @ G

    def var_R(self) -> float:
        return self.model.var_R(self.cov_r(), self.counts)

    def estimate(self, N0: int = 10) -> float:
        return self.model.estimate(self.mean, self.counts, self.total, self.n, N0)

    def mean_R(self) -> float:
        return self.model.mean_R(self.mean, self.counts, self.total)

    def gains(self) -> np.ndarray:
        """Single-item gain per bucket, shape (B,) (``-inf`` where no item is left)."""
        return self.model.gains(self.cov_r(), self.cov_diag, self.counts)

    # --------------------------------------------------------------- update
    def add(self, item: int, score: float) -> None:
        """Observe ``score`` on ``item`` and update the posterior."""
        m = self.model
        item = int(item)
        if not 0 <= item < m.N:
            raise InvalidInputError(f"item: expected an item index in [0, {m.N}), got {item}")
        score = float(score)
        if not math.isfinite(score):
            raise InvalidInputError(f"score: expected a finite score, got {score} for item {item}")
        b = int(m.buckets.labels[item])
        if item in self._itemset:
            raise InvalidInputError(f"item: item {item} is already in the coreset")
        # rank-1 conditioning of the variances: Sigma|C' = Sigma|C - w w^T / (w_b + noise_b)
        w = self.cov_col(b)
        self._cache = {}
        self.cov_diag = self.cov_diag - w * w / (w[b] + m.noise[b])
        self.items.append(item)
        self.scores.append(score)
        self._itemset.add(item)
        self.counts[b] += 1
        self.sums[b] += score
        self.total += score
        self._sig_r -= self.Sigma[:, b]
        want = self._want_form(self.n)
        if want != self.form:
            self._rebuild(want)
            return
        if self.form == "item":
            self._append(b, m.noise[b], score - m.prior_mean[b])
        elif self.counts[b] == 1:
            self.pos[b] = self._m
            self._append(b, m.noise[b], score - m.prior_mean[b])
        else:
            p = self.pos[b]
            nb = self.counts[b]
            delta = m.noise[b] / nb - m.noise[b] / (nb - 1)  # < 0
            _chol_downdate_unit(self._L, self._m, p, math.sqrt(-delta))
            self._resid[p] = self.sums[b] / nb - m.prior_mean[b]
            self._z[:self._m] = solve_triangular(self._L[:self._m, :self._m], self._resid[:self._m], lower=True,
                                                 check_finite=False)

    def _append(self, b: int, noise: float, resid: float) -> None:
        self._grow()
        m = self._m
        kvec = self.Sigma[b, self.rows[:m]] if m else np.zeros(0)
        l = solve_triangular(self._L[:m, :m], kvec, lower=True, check_finite=False) if m else np.zeros(0)
        d2 = self.Sigma[b, b] + noise - float(l @ l)
        lnn = math.sqrt(max(d2, 1e-300))
        self._L[m, :m] = l
        self._L[m, m] = lnn
        self._resid[m] = resid
        self._z[m] = (resid - float(l @ self._z[:m])) / lnn
        self.rows.append(b)
        self._m = m + 1


def _chol_downdate_unit(L: np.ndarray, m: int, p: int, x_p: float) -> None:
    """In place: ``L L^T - x x^T`` with ``x = x_p e_p`` on the leading ``m x m`` block."""
    x = np.zeros(m)
    x[p] = x_p
    for k in range(p, m):
        Lkk = L[k, k]
        r2 = Lkk * Lkk - x[k] * x[k]
        if r2 <= 0:
            raise np.linalg.LinAlgError("Cholesky downdate lost positive definiteness")
        r = math.sqrt(r2)
        c = r / Lkk
        s = x[k] / Lkk
        L[k, k] = r
        if k + 1 < m:
            col = L[k + 1:m, k]
            col -= s * x[k + 1:m]
            col /= c
            x[k + 1:m] = c * x[k + 1:m] - s * col


# ============================================================ batch problem
@dataclass(frozen=True, eq=False)
class BatchData:
    """The batch problem in bucket space (what heuristics search).

    Only buckets that still hold unevaluated items appear, re-indexed ``0..Bu-1``.

    Attributes
    ----------
    items : ndarray of int64, shape (nU,)
        Unevaluated items ``U`` (sorted).
    labels : ndarray of int64, shape (nU,)
        Compact bucket of each item of ``U``.
    S : ndarray, shape (Bu, Bu)
        ``Sigma|C`` restricted to those buckets.
    noise : ndarray, shape (Bu,)
        ``sigma^2 N_b``.
    v : ndarray, shape (Bu,)
        ``v_b = (Sigma|C r)_b + sigma^2 N_b`` = ``(Sigma_U 1)_i`` for any item ``i`` of bucket ``b``.
    avail : ndarray of int64, shape (Bu,)
        Unevaluated items per bucket.
    phi : ndarray, shape (Bu, Kr)
    N : int
    k : int
    """

    items: np.ndarray
    labels: np.ndarray
    S: np.ndarray
    noise: np.ndarray
    v: np.ndarray
    avail: np.ndarray
    phi: np.ndarray
    N: int
    k: int

    @property
    def n_buckets(self) -> int:
        return int(self.avail.size)

    @classmethod
    def from_posterior(cls, model: BayesModel, cov: np.ndarray, counts: np.ndarray, evaluated: np.ndarray,
                       k: int) -> BatchData:
        """Build from a posterior ``Sigma|C`` (shape (B, B)), counts ``n_b`` and the evaluated items.

        Parameters
        ----------
        model : BayesModel
        cov : ndarray, shape (B, B)
        counts : ndarray of int, shape (B,)
        evaluated : ndarray of int, shape (n,)
            The coreset ``C``.
        k : int
        """
        N = model.N
        sizes = model.buckets.sizes
        r = (sizes - counts).astype(float)
        cov_r = cov @ r
        inU = np.ones(N, bool)
        inU[np.asarray(evaluated, dtype=np.int64)] = False
        U = np.flatnonzero(inU)
        live = np.flatnonzero(r > 0)
        compact = np.full(model.B, -1, dtype=np.int64)
        compact[live] = np.arange(live.size)
        return cls(
            items=U,
            labels=compact[model.buckets.labels[U]],
            S=np.ascontiguousarray(cov[np.ix_(live, live)]),
            noise=model.noise[live],
            v=cov_r[live] + model.noise[live],
            avail=(sizes - counts)[live].astype(np.int64),
            phi=model.buckets.phi[live],
            N=N,
            k=int(k),
        )

    def value(self, buckets: np.ndarray) -> float:
        """``beta(A)`` of a batch given as compact bucket ids (with repeats), shape (k,)."""
        bA = np.asarray(buckets, dtype=np.int64)
        if bA.size == 0:
            return 0.0
        M = self.S[np.ix_(bA, bA)] + np.diag(self.noise[bA])
        a = self.v[bA]
        L = np.linalg.cholesky(M)
        y = solve_triangular(L, a, lower=True, check_finite=False)
        return float(y @ y) / self.N ** 2

    def values(self, batches: np.ndarray) -> np.ndarray:
        """``beta`` of many batches at once; ``batches`` shape (P, k) of compact bucket ids -> (P,)."""
        X = np.asarray(batches, dtype=np.int64)
        if X.shape[1] == 0:
            return np.zeros(X.shape[0])
        M = self.S[X[:, :, None], X[:, None, :]]
        idx = np.arange(X.shape[1])
        M[:, idx, idx] += self.noise[X]
        a = self.v[X]
        sol = np.linalg.solve(M, a[:, :, None])[:, :, 0]
        return np.einsum("ij,ij->i", a, sol) / self.N ** 2

    def greedy(self) -> tuple[np.ndarray, float]:
        """Add the bucket (item) with the largest increase of ``beta`` ``k`` times.

        The increase of adding bucket ``c`` to ``A`` is
        ``(v_c - m_c^T M^{-1} a)^2 / (N^2 (Sigma_U[c, c] - m_c^T M^{-1} m_c))``
        (Schur complement), with ``m_c = Sigma_U[A, c]``.

        Returns
        -------
        buckets : ndarray of int64, shape (k,)
            Compact bucket ids of the batch.
        value : float
            Its ``beta``.

        Computed once per instance (the data are frozen); each call returns a fresh array.
        """
        buckets, value = self._greedy_batch
        return buckets.copy(), value

    @cached_property
    def _greedy_batch(self) -> tuple[np.ndarray, float]:
        sel: list[int] = []
        cnt = np.zeros(self.n_buckets, dtype=np.int64)
        diag = np.diag(self.S) + self.noise
        for _ in range(self.k):
            cands = np.flatnonzero(cnt < self.avail)
            if sel:
                b = np.asarray(sel)
                M = self.S[np.ix_(b, b)] + np.diag(self.noise[b])
                Minv = np.linalg.inv(M)
                a = self.v[b]
                mc = self.S[np.ix_(cands, b)]  # (P, t); an extra copy of a bucket in A still has its own noise
                t1 = mc @ Minv
                schur = diag[cands] - np.einsum("ij,ij->i", t1, mc)
                inc = (self.v[cands] - t1 @ a) ** 2 / np.maximum(schur, 1e-300)
            else:
                inc = self.v[cands] ** 2 / diag[cands]
            j = int(np.argmax(inc))
            sel.append(int(cands[j]))
            cnt[cands[j]] += 1
        out = np.asarray(sel, dtype=np.int64)
        return out, self.value(out)

    def to_items(self, buckets: np.ndarray) -> np.ndarray:
        """Item indices for a bucket multiset: the lowest-index unevaluated items of each bucket."""
        bA = np.asarray(buckets, dtype=np.int64)
        cnt = np.bincount(bA, minlength=self.n_buckets)
        if np.any(cnt > self.avail):
            raise InvalidInputError("buckets: a bucket is used more often than it has unevaluated items")
        out = []
        for b in np.flatnonzero(cnt):
            out.extend(self.items[self.labels == b][: cnt[b]].tolist())
        return np.sort(np.asarray(out, dtype=np.int64))

    def to_buckets(self, items: np.ndarray) -> np.ndarray:
        """Compact bucket ids of items of ``U`` (shape (k,))."""
        pos = np.searchsorted(self.items, np.asarray(items, dtype=np.int64))
        return self.labels[pos]
