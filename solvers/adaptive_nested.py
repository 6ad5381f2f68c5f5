"""The ``"nested"`` design of :class:`~benchsel.solvers.adaptive.AdaptiveEvaluation` (the default): a fixed
sequence of balanced stratified batches, every prefix estimated by the default estimator.

The first batch is the compression's own selection (the pilot). Every later batch of ``b`` items is a
stratified sample of the items not yet evaluated: those items sorted by difficulty for strong models
(:func:`~benchsel.formulations.estimation.design.difficulty_score`, ties at random) and cut into ``b``
equal-count strata, one item drawn uniformly from each; of ``DRAWS`` such candidate batches, the one after
which the evaluated items' plain mean reproduces the sources' full scores best (least mean squared error over
the sources: a rejective, balanced draw, as the default selection's). Every item of the remainder has the same
chance to be drawn in each batch, so every prefix of the sequence is, up to the balancing, an equal-probability
sample spread over the difficulty range: the design of the default fixed selection, grown batch by batch. The
sequence depends on the sources and the seed only, never on the answers (the same seed gives the same items).

After each answered batch (a *look*) the default estimator (``"auto"``: stacked inside the sources' range,
model-assisted outside it, with its interval that keeps coverage for every kind of model, SPEC F11) is fitted
on the sources' scores of the evaluated items with equal design weights and gives the estimate and interval;
the loop stops at the first look whose half-width is at most the target. The default estimator's interval
always contains its model-assisted part's (:class:`~benchsel.formulations.estimation.design.ModelAssisted`,
fitted in milliseconds), so a look whose model-assisted interval is wider than the target cannot stop and
skips the full fit (done when :meth:`NestedDesign.interval` asks for it): the loop's steps stay fast.

A model stronger than every source gets the model-assisted interval, which does not shrink on the sources'
say-so: it stops later.
"""
from __future__ import annotations

import warnings

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.design import ModelAssisted, difficulty_features, difficulty_score

__all__ = ["DRAWS", "ESTIMATOR", "NestedDesign"]

#: Candidate stratified batches each batch is chosen among (the balancing).
DRAWS = 200
#: The estimator fitted at every look.
ESTIMATOR = "auto"


class NestedDesign:
    """The ``"nested"`` design's state: the balancing sums and the last look's interval.

    Parameters
    ----------
    U : ndarray, shape (S, N)
        Source scores scaled to [0, 1].
    pilot : ndarray of int, shape (k,)
        The first batch (the compression's items).
    alpha : float
    seed : int
    """

    def __init__(self, U: np.ndarray, pilot: np.ndarray, alpha: float, seed: int) -> None:
        self.U = U
        self.N = U.shape[1]
        self.alpha = alpha
        self._rng = np.random.default_rng(seed)
        self._score = difficulty_score(difficulty_features(U))
        self._full = U.mean(axis=1)
        self._sum = U[:, pilot].sum(axis=1)  # (S,): the sources' sums over the items drawn so far
        self._drawn = int(pilot.size)
        self._last: tuple[float, float, float] | None = None
        self._items: np.ndarray | None = None
        self._y = np.zeros((1, 0))

    def look(self, scores: dict[int, float]) -> None:
        """Every asked item is answered: the next interval is of these items (fitted when asked for)."""
        self._items = np.fromiter(scores, dtype=np.int64, count=len(scores))
        self._y = np.asarray([scores[i] for i in self._items.tolist()], dtype=float)[None, :]
        self._last = None

    def narrow(self, scores: dict[int, float], half_width: float) -> bool:
        """Whether the last look's interval has half-width at most ``half_width`` ([0, 1] scale); the full
        fit only when the model-assisted interval (contained in it) is narrow enough."""
        if self._items is None:
            return False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ma = ModelAssisted(weights=self._weights()).fit(self.U, self._items)
                lo, hi = (float(np.ravel(v)[0]) for v in ma.predict_interval(self._y, alpha=self.alpha))
        except (InvalidInputError, np.linalg.LinAlgError, ValueError):
            lo, hi = 0.0, 1.0
        if (hi - lo) / 2 > half_width:
            return False
        got = self.interval(scores)
        return got is not None and (got[2] - got[1]) / 2 <= half_width

    def interval(self, scores: dict[int, float]) -> tuple[float, float, float] | None:
        """The last look's ``(estimate, low, high)`` on the [0, 1] scale (None before the first look)."""
        if self._last is None and self._items is not None:
            self._last = self._fit()
        return self._last

    def _weights(self) -> np.ndarray:
        return np.full(self._y.shape[1], 1.0 / self._y.shape[1])

    def _fit(self) -> tuple[float, float, float]:
        """The default estimator fitted on the evaluated items: its estimate and interval."""
        y = self._y
        est = get_estimator(ESTIMATOR, weights=self._weights())
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # uninformative sources: the estimator says so at compress time
                est.fit(self.U, self._items)
                e = float(np.ravel(est.predict(y))[0])
                lo, hi = (float(np.ravel(v)[0]) for v in est.predict_interval(y, alpha=self.alpha))
        except (InvalidInputError, np.linalg.LinAlgError, ValueError):
            return float(y.mean()), 0.0, 1.0
        return e, min(lo, e), max(hi, e)

    def batch(self, scores: dict[int, float], b: int) -> list[int]:
        """The next ``b`` items: the best balanced of ``DRAWS`` stratified samples of the items not drawn."""
        rest = np.ones(self.N, dtype=bool)
        rest[np.fromiter(scores, dtype=np.int64, count=len(scores))] = False
        idx = np.flatnonzero(rest)
        order = idx[np.lexsort((self._rng.random(idx.size), self._score[idx]))]
        edges = np.round(np.linspace(0, order.size, b + 1)).astype(np.int64)
        cand = order[self._rng.integers(edges[:-1], edges[1:], size=(DRAWS, b))]  # (DRAWS, b)
        sums = self._sum[:, None] + self.U[:, cand].sum(axis=2)  # (S, DRAWS)
        err = ((sums / (self._drawn + b) - self._full[:, None]) ** 2).mean(axis=0)
        pick = cand[int(np.argmin(err))]
        self._sum = self._sum + self.U[:, pick].sum(axis=1)
        self._drawn += b
        return pick.astype(int).tolist()
