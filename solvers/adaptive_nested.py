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
the loop stops at the first look whose half-width is at most the target. A model stronger than every source
gets the model-assisted interval, which does not shrink on the sources' say-so: it stops later.
"""
from __future__ import annotations

import warnings

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.design import difficulty_features, difficulty_score

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

    def may_stop(self) -> bool:
        """Every look may stop the loop."""
        return True

    def interval(self, scores: dict[int, float]) -> tuple[float, float, float] | None:
        """The last look's ``(estimate, low, high)`` on the [0, 1] scale (None before the first look)."""
        return self._last

    def look(self, scores: dict[int, float]) -> None:
        """Every asked item is answered: fit the default estimator on the evaluated items, keep its interval."""
        items = np.fromiter(scores, dtype=np.int64, count=len(scores))
        y = np.asarray([scores[i] for i in items.tolist()], dtype=float)[None, :]
        est = get_estimator(ESTIMATOR, weights=np.full(items.size, 1.0 / items.size))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # uninformative sources: the estimator says so at compress time
                est.fit(self.U, items)
                e = float(np.ravel(est.predict(y))[0])
                lo, hi = (float(np.ravel(v)[0]) for v in est.predict_interval(y, alpha=self.alpha))
        except (InvalidInputError, np.linalg.LinAlgError, ValueError):
            m = float(y.mean())
            self._last = (m, 0.0, 1.0)
            return
        self._last = (e, min(lo, e), max(hi, e))

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
