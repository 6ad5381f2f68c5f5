"""The ``"importance"`` design of :class:`~benchsel.solvers.adaptive.AdaptiveEvaluation`: items drawn one at a
time with probability growing with their predicted uncertainty, a martingale AIPW estimate.

After the pilot (the compression's own items; until two later draws are answered the compression's own
estimate and interval), every item is drawn at random, one at a time without replacement, from the items not
yet evaluated, with probability

``q_t(j) = (1 - EPS) sqrt(v_t(j)) / sum_{R_t} sqrt(v_t) + EPS / |R_t|``,

``v_t(j) = max(f_t(j) (1 - f_t(j)), V_FLOOR)`` the predicted squared residual of item ``j`` under
``f_t``, the item scores predicted for this model from the sources and its answers so far
(:class:`ItemPredictor`). With ``R_t`` the items not evaluated before draw ``t`` and ``i_t`` the drawn
item, the draw's estimate of the benchmark's total

``Z_t = sum_{evaluated before t} y + sum_{j in R_t} f_t(j) + (y_{i_t} - f_t(i_t)) / q_t(i_t)``

is unbiased for the total given everything before the draw, whatever ``f_t`` and ``q_t`` are, because both
are fixed before the draw (an adaptive importance sampling / AIPW estimate; the pilot's scores enter
exactly). The estimate recomputes the ``Z_t`` with cross-fitted predictions (the draws of batch ``b`` with
predictions fitted on the pilot and the batches of the other ``FOLDS - 1`` folds). The estimate is the
weighted mean of the ``Z_t`` with weights fixed before each batch (``1 / sqrt`` of the draw's predicted
variance), its variance the weighted sum of squared deviations (a martingale central limit theorem), floored
by the predicted variance (:class:`DrawLog`). Before it may stop the loop needs ``MIN_DRAWS`` draws, and the
variance has ``PRIOR_DRAWS`` pseudo-draws of a uniform draw's variance (SPEC F11).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm

__all__ = ["EPS", "MIN_DRAWS", "PRIOR_DRAWS", "V_FLOOR", "DrawLog", "ImportanceDesign", "ItemPredictor"]

#: Uniform share of every draw's probabilities (bounds the importance weights by ``|R_t| / EPS``).
EPS = 0.2
#: Floor of the predicted squared residual of an item (on the [0, 1] scale).
V_FLOOR = 0.01
#: Draws after the pilot before the interval may stop the loop.
MIN_DRAWS = 30
#: Pseudo-draws of a uniform draw's variance added to the variance (a floor near the ends of the range).
PRIOR_DRAWS = 4
#: Neighbours (nearest sources on the evaluated items) behind the third item feature.
NEIGHBOURS = 5
#: Folds of the batches for cross-fitted predictions in the estimate.
FOLDS = 5
#: Ridge of the calibration of the features to the target's answers.
RIDGE = 2.0

_CLIP = 0.02


class ItemPredictor:
    """Item scores predicted for one new model: source features calibrated to its answers.

    Features of item ``j`` (logits of clipped means, the sources' scores scaled to [0, 1]): the mean
    over all sources, over the strongest fifth, and over the ``NEIGHBOURS`` sources closest to the
    target on the items it answered. A logistic regression of the target's answers on them (ridge
    ``RIDGE``, the intercept free) gives ``f(j)``; with few answers it stays close to the target's mean.

    With ``tau`` the third feature is instead the mean of all sources weighted by
    ``exp(-tau * d)``, ``d`` a source's mean absolute distance to the target on the items it answered (a kernel
    of the sources like the target, used by the ``"difference"`` design).

    Parameters
    ----------
    U : ndarray, shape (S, N)
        Source scores scaled to [0, 1].
    tau : float, optional
        Kernel bandwidth of the neighbour feature (default: the ``NEIGHBOURS`` nearest sources, unweighted).
    """

    def __init__(self, U: np.ndarray, tau: float | None = None) -> None:
        self.U = U
        self.tau = tau
        S = U.shape[0]
        top = np.argsort(-U.mean(axis=1), kind="stable")[: min(S, max(2, math.ceil(0.2 * S)))]
        self._base = np.column_stack([np.ones(U.shape[1]), _lg(U.mean(axis=0)), _lg(U[top].mean(axis=0))])

    def predict(self, items: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Predicted scores of every item, shape (N,), given the answers ``y`` (shape (n,)) on ``items``."""
        if not items.size:
            return np.full(self.U.shape[1], 0.5)
        X = self._features(items, y)
        return expit(X @ _logistic(X[items], y))

    def _features(self, items: np.ndarray, y: np.ndarray) -> np.ndarray:
        U = self.U
        dist = np.abs(U[:, items] - y[None, :]).mean(axis=1)
        if self.tau is not None:
            w = np.exp(-self.tau * (dist - dist.min()))
            return np.column_stack([self._base, _lg((w / w.sum()) @ U)])
        near = np.argsort(dist, kind="stable")[: min(U.shape[0], NEIGHBOURS)]
        return np.column_stack([self._base, _lg(U[near].mean(axis=0))])


def _lg(p: np.ndarray) -> np.ndarray:
    return logit(np.clip(p, _CLIP, 1.0 - _CLIP))


def _logistic(X: np.ndarray, y: np.ndarray, iters: int = 25) -> np.ndarray:
    """Ridge-penalised logistic regression (fractional outcomes allowed; the intercept, column 0, nearly
    free), shape (p,)."""
    pen = RIDGE * np.ones(X.shape[1])
    pen[0] *= 1e-3
    b = np.zeros(X.shape[1])
    for _ in range(iters):
        p = expit(X @ b)
        g = X.T @ (y - p) - pen * b
        H = (X * (p * (1 - p))[:, None]).T @ X + np.diag(pen)
        step = np.linalg.solve(H, g)
        b = b + step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return b


@dataclass
class DrawLog:
    """The draws after the pilot (on the [0, 1] scale).

    Per draw ``t``: ``item``, its probability ``q`` at the draw, its ``fold`` (batch number modulo
    ``FOLDS``), the batch's weight ``w`` and ``pv``, the draw's predicted variance of ``Z_t`` when its
    batch was drawn.
    """

    item: list[int] = field(default_factory=list)
    q: list[float] = field(default_factory=list)
    fold: list[int] = field(default_factory=list)
    w: list[float] = field(default_factory=list)
    pv: list[float] = field(default_factory=list)

    def add(self, item: int, q: float, fold: int, w: float, pv: float) -> None:
        self.item.append(item)
        self.q.append(q)
        self.fold.append(fold)
        self.w.append(w)
        self.pv.append(pv)

    def __len__(self) -> int:
        return len(self.item)

    def totals(self, F: np.ndarray, before: np.ndarray, res: np.ndarray) -> np.ndarray:
        """``Z_t`` of the answered draws, shape (n,): ``F`` (shape (n,)) each draw's sum of predictions over
        all items, ``before`` (shape (n,)) its sum of residuals over the items evaluated before it,
        ``res`` (shape (n,)) its own residual (score minus prediction)."""
        return F + before + res / np.asarray(self.q[: res.size])

    def interval(self, Z: np.ndarray, N: int, prior_var: float) -> tuple[float, float]:
        """(mean estimate, its variance) from ``Z`` (totals), both on the [0, 1] scale of the mean."""
        w = np.asarray(self.w[: Z.size])
        est = float(w @ Z / w.sum())
        ss = float(w**2 @ (Z - est) ** 2) * Z.size / max(Z.size - 1, 1)
        ss = max(ss, float(w**2 @ np.asarray(self.pv[: Z.size])))
        var = (ss + PRIOR_DRAWS * float(np.mean(w)) ** 2 * prior_var) / float(w.sum()) ** 2
        return est / N, var / N**2



class ImportanceDesign:
    """The ``"importance"`` design's state: the predictor, the draws and the pilot's fixed interval.

    Parameters
    ----------
    U : ndarray, shape (S, N)
        Source scores scaled to [0, 1].
    pilot : ndarray of int, shape (k,)
        The first batch (the compression's items).
    fixed : callable
        Returns the compression's own ``(estimate, low, high)`` on the pilot, scaled to [0, 1], or None.
    alpha : float
    seed : int
    """

    def __init__(self, U: np.ndarray, pilot: np.ndarray, fixed: Any, alpha: float, seed: int) -> None:
        self.N = U.shape[1]
        self.pilot = pilot
        self._fixed_of = fixed
        self._z = float(norm.ppf(1.0 - alpha / 2.0))
        self._rng = np.random.default_rng(seed)
        self._predictor = ItemPredictor(U)
        self._log = DrawLog()
        self._fixed: tuple[float, float, float] | None = None
        self._batches = 0

    def look(self, scores: dict[int, float]) -> None:
        """Every asked item is answered: after the pilot, keep the compression's own interval."""
        if len(self._log) == 0:
            self._fixed = self._fixed_of()

    def narrow(self, scores: dict[int, float], half_width: float) -> bool:
        """``MIN_DRAWS`` draws were made after the pilot and the interval's half-width is at most
        ``half_width`` ([0, 1] scale)."""
        if len(self._log) < MIN_DRAWS:
            return False
        got = self.interval(scores)
        return got is not None and (got[2] - got[1]) / 2 <= half_width

    def interval(self, scores: dict[int, float]) -> tuple[float, float, float] | None:
        """``(estimate, low, high)`` on the [0, 1] scale from the answered draws (None before any answer)."""
        y = self._answered_draws(scores)
        if y.size >= 2:
            Z = self._totals(y, scores)
            m = float(np.clip(np.mean(list(scores.values())), 0.02, 0.98))
            est, var = self._log.interval(Z, self.N, self.N**2 * m * (1 - m))
            h = self._z * math.sqrt(var)
            return est, est - h, est + h
        return self._fixed

    def batch(self, scores: dict[int, float], b: int) -> list[int]:
        """The next ``b`` items, drawn one at a time from the items not evaluated."""
        done = np.fromiter(scores, dtype=np.int64, count=len(scores))
        y = np.asarray([scores[i] for i in done.tolist()], dtype=float)
        f = self._predictor.predict(done, y)
        rest = np.ones(self.N, dtype=bool)
        rest[done] = False
        r = np.sqrt(np.maximum(f * (1.0 - f), V_FLOOR))
        v = np.maximum(f * (1.0 - f), V_FLOOR)
        idx = np.flatnonzero(rest)
        q = (1.0 - EPS) * r[idx] / r[idx].sum() + EPS / idx.size
        pv = float(np.sum(v[idx] / q))  # predicted variance of the batch's first draw's Z
        w = 1.0 / math.sqrt(pv)
        picks: list[int] = []
        fold = self._batches % FOLDS
        self._batches += 1
        for _ in range(b):
            j = int(self._rng.choice(idx.size, p=q / q.sum()))
            i = int(idx[j])
            self._log.add(i, float(q[j] / q.sum()), fold, w, pv)
            picks.append(i)
            idx = np.delete(idx, j)
            if idx.size:
                q = np.delete(q, j)
        return picks

    def _answered_draws(self, scores: dict[int, float]) -> np.ndarray:
        """Scaled scores of the longest answered prefix of the draws, in draw order."""
        out = []
        for i in self._log.item:
            if i not in scores:
                break
            out.append(scores[i])
        return np.asarray(out, dtype=float)

    def _totals(self, y: np.ndarray, scores: dict[int, float]) -> np.ndarray:
        """``Z_t`` of the answered draws (scores ``y``, draw order) with cross-fitted predictions: the
        residuals of the draws of fold ``b`` (batches ``b``, ``b + FOLDS``, ...) come from predictions fitted
        on the pilot and the other folds."""
        n = y.size
        log = self._log
        items = np.asarray(log.item[:n], dtype=np.int64)
        fold = np.asarray(log.fold[:n])
        py = np.asarray([scores[i] for i in self.pilot.tolist()], dtype=float)
        F, before, res = np.empty(n), np.empty(n), np.empty(n)
        for b in np.unique(fold).tolist():
            keep = fold != b
            fit_items = np.concatenate([self.pilot, items[keep]])
            f = self._predictor.predict(fit_items, np.concatenate([py, y[keep]]))
            r_all = np.concatenate([py - f[self.pilot], y - f[items]])  # pilot, then draws in order
            cum = np.cumsum(r_all)
            sel = np.flatnonzero(fold == b)
            F[sel] = f.sum()
            before[sel] = cum[self.pilot.size + sel - 1]
            res[sel] = r_all[self.pilot.size + sel]
        return log.totals(F, before, res)
