"""Evaluate a new model batch by batch until its interval is narrow enough.

::

    from benchsel import AdaptiveEvaluation, compress
    c = compress(Y_sources, k=20)
    ev = AdaptiveEvaluation(c, alpha=0.1, half_width=0.05, batch=10, seed=0)
    while len(items := ev.next_items()):
        ev.observe(items, run_model_on(items))
    estimate, low, high = ev.estimate()
    ev.state                      # "narrow", "budget" or "exhausted"

The first batch is the compression's own selection (``c.items``, the *pilot*). Three designs choose the later
batches (``design``):

* ``"nested"`` (default, :mod:`benchsel.solvers.adaptive_nested`): a fixed sequence of balanced stratified
  batches of the items not yet evaluated, every prefix estimated by the default estimator (``"auto"``) with its
  interval; the loop stops at the first answered batch whose interval is narrow enough. The savings over a
  fixed design come from stopping each model where its own interval is narrow enough.
* ``"importance"`` (:mod:`benchsel.solvers.adaptive_importance`): items drawn one at a time with probability
  growing with their predicted uncertainty for this model, a martingale AIPW estimate.
* ``"difference"`` (:mod:`benchsel.solvers.adaptive_difference`): a random order of the other items fixed by the
  seed, a cross-fitted difference (AIPW) estimate with its design-based t-interval.

Scores are on the sources' scale: ``[0, 1]`` when the sources' scores lie there, else the sources' range.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_choice, check_float, check_int, check_seed, describe

from .adaptive_difference import DifferenceDesign
from .adaptive_importance import ImportanceDesign
from .adaptive_nested import NestedDesign

__all__ = ["DESIGNS", "STATES", "AdaptiveEvaluation"]

#: ``state`` values: waiting for answers, or why the loop stopped.
STATES = ("pilot", "running", "narrow", "budget", "exhausted")
#: Designs of the batches after the pilot (the first is the default).
DESIGNS = ("nested", "importance", "difference")


class AdaptiveEvaluation:
    """Evaluate one new model in batches chosen from its answers, until the interval is narrow enough.

    Parameters
    ----------
    c : Compressed
        A compression of one benchmark (:func:`benchsel.compress`); its items are the first batch, its
        source scores predict the item scores.
    alpha : float
        Miscoverage of the interval, ``0 < alpha < 1`` (0.1: 90 %).
    half_width : float
        Stop when the interval's half-width is at most this, in score points of the [0, 1] scale
        (times the sources' range when it is not [0, 1]), ``0 < half_width <= 0.5``.
    batch : int
        Items per batch after the pilot, ``>= 1``.
    max_items : int, optional
        Most items to evaluate, pilot included (default: every item).
    seed : int
        Seeds the draws; the same seed and answers give the same batches.
    design : {"nested", "importance", "difference"}
        How the batches after the pilot are chosen and estimated (module docstring; default ``"nested"``).

    Attributes
    ----------
    state : str
        ``"pilot"`` (the first batch is out), ``"running"``, or why it stopped: ``"narrow"`` (the
        interval is narrow enough), ``"budget"`` (``max_items`` spent), ``"exhausted"`` (every item
        evaluated: the estimate is exact).
    """

    def __init__(self, c: Any, alpha: float = 0.1, half_width: float = 0.05, batch: int = 10,
                 max_items: int | None = None, seed: int = 0, design: str = DESIGNS[0]) -> None:
        src = getattr(c, "source", None)
        if src is None or getattr(src, "scores", None) is None or not hasattr(c, "items"):
            raise InvalidInputError(f"c: expected a compression with its source scores (benchsel.compress or "
                                    f"load_compressed), got {describe(c)}")
        Y = np.asarray(src.scores, dtype=float)
        if Y.ndim != 2:
            raise InvalidInputError(f"c: expected a compression of one metric (scores of shape (models, items)), "
                                    f"got source scores of shape {Y.shape}")
        if getattr(c, "tasks", None) is not None:
            raise InvalidInputError(
                f"c: expected a compression of one benchmark, got a suite of {len(c.tasks)} tasks (estimated per "
                "task): adaptive evaluation estimates one mean over the items; compress each task on its own, or "
                "pool them with compress(..., tasks=False) (benchsel compress --pool)")
        self.alpha = check_float(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
        self.half_width = check_float(half_width, "half_width", low=0.0, high=0.5, low_open=True)
        self.batch = check_int(batch, "batch", low=1)
        N = Y.shape[1]
        self.max_items = N if max_items is None else check_int(max_items, "max_items", low=1, high=N)
        self.seed = check_seed(seed)
        self.design = check_choice(design, "design", DESIGNS)
        self.c = c
        self.N = N
        lo, hi = float(np.min(Y)), float(np.max(Y))
        self.low, self.high = (0.0, 1.0) if lo >= 0.0 and hi <= 1.0 else (lo, hi)
        span = self.high - self.low
        if not span > 0:
            raise InvalidInputError("c: every source score is equal; the sources carry no information on the "
                                    "items (evaluate the new model on a random subset instead)")
        self._span = span
        self.pilot = np.asarray(c.items, dtype=np.int64)[: self.max_items]
        U = (Y - self.low) / span
        self._design: NestedDesign | ImportanceDesign | DifferenceDesign
        if self.design == "nested":
            self._design = NestedDesign(U, self.pilot, self.alpha, self.seed)
        elif self.design == "importance":
            self._design = ImportanceDesign(U, self.pilot, self._pilot_interval, self.alpha, self.seed)
        else:
            self._design = DifferenceDesign(U, self.pilot, self._pilot_interval, self.alpha, self.seed)
        self._scores: dict[int, float] = {}  # item -> score on the [0, 1] scale
        self._asked: list[int] = []  # items in the order asked
        self._pending: set[int] = set()
        self.state = "pilot"

    # -------------------------------------------------------------- the loop
    @property
    def n_items(self) -> int:
        """Items evaluated so far."""
        return len(self._scores)

    @property
    def items(self) -> np.ndarray:
        """Evaluated items in the order asked, shape (n_items,)."""
        return np.asarray([i for i in self._asked if i in self._scores], dtype=np.int64)

    def next_items(self) -> np.ndarray:
        """The next batch of item indices to evaluate, shape (b,); empty once the loop has stopped.

        While items of the last batch are unanswered, returns those.
        """
        if self._pending:
            return np.asarray([i for i in self._asked if i in self._pending], dtype=np.int64)
        if not self._asked:
            return self._ask(self.pilot.tolist())
        if self.state in ("narrow", "budget", "exhausted"):
            return np.zeros(0, dtype=np.int64)
        return self._draw_batch()

    def observe(self, items: Any, scores: Any) -> None:
        """Record the model's scores on asked items (any order; each item once).

        Parameters
        ----------
        items : array_like of int, shape (m,)
        scores : array_like of float, shape (m,)
            On the sources' scale.
        """
        it = np.asarray(items)
        if it.ndim != 1 or (it.size and it.dtype.kind not in "iu"):
            raise InvalidInputError(f"items: expected a 1-D array of item indices, got {describe(items)}")
        s = np.asarray(scores, dtype=float) if np.ndim(scores) else np.asarray([scores], dtype=float)
        if s.shape != it.shape:
            raise InvalidInputError(f"scores: expected one score per item, shape {it.shape}, got shape {s.shape}")
        itl = it.astype(np.int64).tolist()
        if len(set(itl)) != len(itl):
            dup = sorted({i for i in itl if itl.count(i) > 1})
            raise InvalidInputError(f"items: item(s) {dup[:6]} given twice in one call")
        done = [i for i in itl if i in self._scores]
        if done:
            raise InvalidInputError(f"items: item(s) {done[:6]} were already observed (each item is scored once)")
        unasked = [i for i in itl if i not in self._pending]
        if unasked:
            raise InvalidInputError(f"items: item(s) {unasked[:6]} were not asked (next_items() says which to "
                                    "evaluate)")
        tol = 1e-9 * max(1.0, self._span)
        bad = ~np.isfinite(s) | (s < self.low - tol) | (s > self.high + tol)
        if bad.any():
            raise InvalidInputError(f"scores: expected finite scores in [{self.low:g}, {self.high:g}] (the sources' "
                                    f"range), got {s[bad][:4].tolist()} for item(s) {it[bad][:4].tolist()}")
        u = np.clip((s - self.low) / self._span, 0.0, 1.0)
        for i, v in zip(itl, u.tolist()):
            self._scores[i] = v
            self._pending.discard(i)
        if not self._pending:
            self._update_state()

    def estimate(self) -> tuple[float, float, float]:
        """``(estimate, low, high)``: the full-benchmark score and its ``1 - alpha`` interval, clipped to
        the score range (before any answer: the range's middle and the range)."""
        est, lo, hi = self._interval()
        return self._out(est), self._out(lo), self._out(hi)

    def _out(self, u: float) -> float:
        return self.low + self._span * float(np.clip(u, 0.0, 1.0))

    # -------------------------------------------------------------- internals
    def _ask(self, items: list[int]) -> np.ndarray:
        self._asked.extend(items)
        self._pending.update(items)
        return np.asarray(items, dtype=np.int64)

    def _interval(self) -> tuple[float, float, float]:
        if self.state == "exhausted":
            m = float(np.mean(list(self._scores.values())))
            return m, m, m
        got = self._design.interval(self._scores)
        if got is not None:
            return got
        if self._scores:
            m = float(np.mean(list(self._scores.values())))
            return m, 0.0, 1.0
        return 0.5, 0.0, 1.0

    def _pilot_interval(self) -> tuple[float, float, float] | None:
        """The compression's own estimate and interval on the pilot, scaled to [0, 1] (None if not usable)."""
        if self.pilot.size != np.asarray(self.c.items).size:
            return None
        X = np.asarray([[self.low + self._span * self._scores[i] for i in self.pilot.tolist()]])
        try:
            est = float(np.asarray(self.c.predict(X)).reshape(-1)[0])
            lo, hi = self.c.predict_interval(X, alpha=self.alpha)
        except (InvalidInputError, NotImplementedError, AttributeError):
            return None
        vals = [(v - self.low) / self._span for v in (est, float(np.ravel(lo)[0]), float(np.ravel(hi)[0]))]
        return (vals[0], vals[1], vals[2]) if all(np.isfinite(v) for v in vals) else None

    def _update_state(self) -> None:
        n = len(self._scores)
        if n >= self.N:
            self.state = "exhausted"
            return
        self._design.look(self._scores)
        if self._design.narrow(self._scores, self.half_width / self._span):
            self.state = "narrow"
            return
        self.state = "budget" if n >= self.max_items else "running"

    def _draw_batch(self) -> np.ndarray:
        b = min(self.batch, self.max_items - len(self._scores), self.N - len(self._scores))
        return self._ask(self._design.batch(self._scores, b))
