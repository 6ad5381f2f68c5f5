"""The ``"difference"`` design of :class:`~benchsel.solvers.adaptive.AdaptiveEvaluation`: a random sample of the
items after the pilot, grown batch by batch, and a cross-fitted difference (AIPW) estimate with its design-based
interval (SPEC F9).

The first batch is the compression's own selection (the pilot, ``P``; its scores enter the estimate exactly).
The other ``M = N - |P|`` items (the remainder ``R``) are put in a random order fixed by the seed; every later
batch is the next ``b`` items of that order, so every prefix ``s`` (``n`` items) is a simple random sample of
``R`` without replacement, whatever the answers (the sequence follows from the sources and the seed alone).

At each look the item scores of this model are predicted from the sources and its answers
(:class:`~benchsel.solvers.adaptive_importance.ItemPredictor` with a kernel of the sources like the target,
``TAU``), cross-fitted: the sampled items are cut into ``FOLDS`` folds by their position in the order, and the
prediction ``f_k`` of fold ``k``'s items is fitted on the pilot and the other folds. With ``r`` the cross-fitted
residuals (score minus prediction) of the sampled items and ``f`` the folds' mean prediction,

``T = sum_P y + sum_s y + sum_{R \\ s} f + (M - n) / n * sum_s r``

estimates the benchmark's total: the residuals of a simple random sample estimate the remainder's residual total
without bias whatever the predictions are (a difference estimator), so the estimate stays honest for a model
unlike every source. Its variance is the design's, ``M^2 (1 - n / M) s^2 / n``, with ``s^2`` the residuals'
sample variance shrunk toward the predicted variance ``mean_R f (1 - f)`` (floored at ``V_FLOOR``) by
``PRIOR_ITEMS`` pseudo-items, and at least ``END_FLOOR`` times the score-type variance ``m (1 - m)`` of the
sampled items (``m`` their mean at Wilson's centre, ``(sum_s y + t^2 / 2) / (n + t^2)``): near the ends of the
range, where a model right on every sampled item has residuals near 0, the interval keeps a width of the order
of Wilson's (SPEC F11). The interval is Student's ``t`` (quantile ``t``) with ``n - 1`` degrees of freedom;
the loop may stop once ``MIN_DRAWS`` items after the pilot are answered.
Before two of them are, the compression's own estimate and interval on the pilot stand.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from .adaptive_importance import FOLDS, MIN_DRAWS, V_FLOOR, ItemPredictor

__all__ = ["END_FLOOR", "PRIOR_ITEMS", "TAU", "DifferenceDesign"]

#: Kernel bandwidth of the predictor's neighbour feature (sources weighted by ``exp(-TAU * distance)``).
TAU = 20.0
#: Pseudo-items of the predicted residual variance in the variance.
PRIOR_ITEMS = 4
#: The residual variance is at least this share of a score-type variance ``m (1 - m)`` of the sampled items
#: (``m`` their mean moved toward 1/2 as Wilson's centre): the floor near the ends of the range.
END_FLOOR = 0.3


class DifferenceDesign:
    """The ``"difference"`` design's state: the fixed random order of the remainder and the last look.

    Parameters
    ----------
    U, pilot, fixed, alpha, seed
        Those of :class:`~benchsel.solvers.adaptive_importance.ImportanceDesign`: the source scores on the
        [0, 1] scale, shape (S, N); the first batch, shape (k,); the callable giving the compression's own
        interval on it; the miscoverage; the seed of the order.
    """

    def __init__(self, U: np.ndarray, pilot: np.ndarray, fixed: Any, alpha: float, seed: int) -> None:
        self.pilot = np.asarray(pilot, dtype=np.int64)
        self.alpha = alpha
        self.N = U.shape[1]
        rest = np.ones(self.N, dtype=bool)
        rest[self.pilot] = False
        self._order = np.random.default_rng(seed).permutation(np.flatnonzero(rest))  # (M,)
        self._next = 0
        self._fixed_of = fixed
        self._fixed: tuple[float, float, float] | None = None
        self._predictor = ItemPredictor(U, tau=TAU)
        self._y = np.zeros(0)  # scores of the pilot, then of the sampled items in order, at the last look
        self._last: tuple[float, float, float] | None = None

    @property
    def n_sampled(self) -> int:
        """Items after the pilot answered at the last look."""
        return max(self._y.size - self.pilot.size, 0)

    def look(self, scores: dict[int, float]) -> None:
        """Every asked item is answered: the next interval is of these (computed when asked for)."""
        items = np.concatenate([self.pilot, self._order[: self._next]])
        self._y = np.asarray([scores[i] for i in items.tolist()], dtype=float)
        if self._next == 0:
            self._fixed = self._fixed_of()
        self._last = None

    def narrow(self, scores: dict[int, float], half_width: float) -> bool:
        """``MIN_DRAWS`` items after the pilot are answered and the interval's half-width is at most
        ``half_width`` ([0, 1] scale)."""
        if self.n_sampled < MIN_DRAWS:
            return False
        got = self.interval(scores)
        return got is not None and (got[2] - got[1]) / 2 <= half_width

    def interval(self, scores: dict[int, float]) -> tuple[float, float, float] | None:
        """The last look's ``(estimate, low, high)`` on the [0, 1] scale (the pilot's interval before two items
        after it are answered; None before any look)."""
        if self.n_sampled < 2:
            return self._fixed
        if self._last is None:
            self._last = self._fit()
        return self._last

    def batch(self, scores: dict[int, float], b: int) -> list[int]:
        """The next ``b`` items of the random order."""
        pick = self._order[self._next: self._next + b]
        self._next += pick.size
        return pick.astype(int).tolist()

    def _fit(self) -> tuple[float, float, float]:
        """The cross-fitted difference estimate of the mean and its ``1 - alpha`` interval."""
        k = self.pilot.size
        n = self.n_sampled
        M = self._order.size
        s = self._order[:n]
        y_p, y_s = self._y[:k], self._y[k:]
        folds = np.arange(n) % min(FOLDS, n)
        res = np.empty(n)
        unseen = np.ones(self.N, dtype=bool)
        unseen[self.pilot] = False
        unseen[s] = False
        f_sum = np.zeros(self.N)
        n_folds = int(folds.max()) + 1
        for b in range(n_folds):
            keep = folds != b
            f = self._predictor.predict(np.concatenate([self.pilot, s[keep]]), np.concatenate([y_p, y_s[keep]]))
            res[~keep] = y_s[~keep] - f[s[~keep]]
            f_sum += f
        f_un = f_sum[unseen] / n_folds
        total = float(y_p.sum() + y_s.sum() + f_un.sum() + (M - n) / n * res.sum())
        est = total / self.N
        if n >= M:
            return est, est, est
        v0 = max(float(np.mean(f_un * (1.0 - f_un))), V_FLOOR)
        s2 = (float(np.var(res, ddof=1)) * (n - 1) + PRIOR_ITEMS * v0) / (n - 1 + PRIOR_ITEMS)
        tq = float(student_t.ppf(1.0 - self.alpha / 2.0, n - 1))
        m = (float(y_s.sum()) + tq**2 / 2.0) / (n + tq**2)  # the sampled items' mean, Wilson's centre
        s2 = max(s2, END_FLOOR * m * (1.0 - m))
        var = M**2 * (1.0 - n / M) * s2 / n / self.N**2
        h = tq * math.sqrt(var)
        return est, est - h, est + h
