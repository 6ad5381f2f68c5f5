"""Evaluate a new model batch by batch until its interval is narrow enough.

::

    from benchsel import AdaptiveEvaluation, compress
    c = compress(Y_sources, k=20)
    ev = AdaptiveEvaluation(c, alpha=0.1, half_width=0.05, batch=10, seed=0)
    while len(items := ev.next_items()):
        ev.observe(items, run_model_on(items))
    estimate, low, high = ev.estimate()
    ev.state                      # "narrow", "budget" or "exhausted"

The first batch is the compression's own selection (``c.items``, the *pilot*; until two later draws are
answered, :meth:`AdaptiveEvaluation.estimate` gives the compression's own estimate and interval). Every
later item is drawn at random, one at a
time without replacement, from the items not yet evaluated, with probability

``q_t(j) = (1 - EPS) sqrt(v_t(j)) / sum_{R_t} sqrt(v_t) + EPS / |R_t|``,

``v_t(j) = max(f_t(j) (1 - f_t(j)), V_FLOOR)`` the predicted squared residual of item ``j`` under
``f_t``, the item scores predicted for this model from the sources and its answers so far
(:class:`ItemPredictor`). With ``R_t`` the items not evaluated before draw ``t`` and ``i_t`` the drawn
item, the draw's estimate of the benchmark's total

``Z_t = sum_{evaluated before t} y + sum_{j in R_t} f_t(j) + (y_{i_t} - f_t(i_t)) / q_t(i_t)``

is unbiased for the total given everything before the draw, whatever ``f_t`` and ``q_t`` are, because both
are fixed before the draw (an adaptive importance sampling / AIPW estimate; the pilot's scores enter
exactly). The estimate recomputes the ``Z_t`` with cross-fitted predictions (the draws of batch ``b`` with
predictions fitted on the pilot and the batches of the other ``FOLDS - 1`` folds), which keeps the draw's
residual out of its own prediction and uses the later answers too (the predictions then depend slightly on
later draws: the unbiasedness is approximate, the bias of a smooth four-parameter fit). The estimate is the
weighted mean of the ``Z_t`` with weights fixed before each batch (``1 / sqrt`` of the draw's predicted
variance), its variance the weighted sum of squared deviations (a martingale central limit theorem), floored
by the predicted variance (:class:`DrawLog`). A model unlike the sources (stronger than all of them) gets
poor ``f_t``: the estimate stays unbiased, its variance grows and the loop runs longer; the uniform share
``EPS`` of every draw bounds the weights. Before it may stop the loop needs ``MIN_DRAWS`` draws, and the
variance has ``PRIOR_DRAWS`` pseudo-draws of a uniform draw's variance (so that a model scoring alike on the
first items does not get a zero-width interval, SPEC F11).

Scores are on the sources' scale: ``[0, 1]`` when the sources' scores lie there, else the sources' range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_float, check_int, check_seed, describe

__all__ = ["EPS", "MIN_DRAWS", "PRIOR_DRAWS", "STATES", "V_FLOOR", "AdaptiveEvaluation", "DrawLog", "ItemPredictor"]

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
#: ``state`` values: waiting for answers, or why the loop stopped.
STATES = ("pilot", "running", "narrow", "budget", "exhausted")

_CLIP = 0.02


class ItemPredictor:
    """Item scores predicted for one new model: source features calibrated to its answers.

    Features of item ``j`` (logits of clipped means, the sources' scores scaled to [0, 1]): the mean
    over all sources, over the strongest fifth, and over the ``NEIGHBOURS`` sources closest to the
    target on the items it answered. A logistic regression of the target's answers on them (ridge
    ``RIDGE``, the intercept free) gives ``f(j)``; with few answers it stays close to the target's mean.

    Parameters
    ----------
    U : ndarray, shape (S, N)
        Source scores scaled to [0, 1].
    """

    def __init__(self, U: np.ndarray) -> None:
        self.U = U
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

    Attributes
    ----------
    state : str
        ``"pilot"`` (the first batch is out), ``"running"``, or why it stopped: ``"narrow"`` (the
        interval is narrow enough), ``"budget"`` (``max_items`` spent), ``"exhausted"`` (every item
        evaluated: the estimate is exact).
    """

    def __init__(self, c: Any, alpha: float = 0.1, half_width: float = 0.05, batch: int = 10,
                 max_items: int | None = None, seed: int = 0) -> None:
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
        self.c = c
        self.N = N
        lo, hi = float(np.min(Y)), float(np.max(Y))
        self.low, self.high = (0.0, 1.0) if lo >= 0.0 and hi <= 1.0 else (lo, hi)
        span = self.high - self.low
        if not span > 0:
            raise InvalidInputError("c: every source score is equal; the sources carry no information on the "
                                    "items (evaluate the new model on a random subset instead)")
        self._span = span
        self._z = float(norm.ppf(1.0 - self.alpha / 2.0))
        self._rng = np.random.default_rng(self.seed)
        self._predictor = ItemPredictor((Y - self.low) / span)
        self.pilot = np.asarray(c.items, dtype=np.int64)[: self.max_items]
        self._log = DrawLog()
        self._scores: dict[int, float] = {}  # item -> score on the [0, 1] scale
        self._asked: list[int] = []  # items in the order asked
        self._pending: set[int] = set()
        self._fixed: tuple[float, float, float] | None = None
        self._batches = 0
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

    def _answered_draws(self) -> np.ndarray:
        """Scaled scores of the longest answered prefix of the draws, in draw order."""
        out = []
        for i in self._log.item:
            if i not in self._scores:
                break
            out.append(self._scores[i])
        return np.asarray(out, dtype=float)

    def _interval(self) -> tuple[float, float, float]:
        if self.state == "exhausted":
            m = float(np.mean(list(self._scores.values())))
            return m, m, m
        y = self._answered_draws()
        if y.size >= 2:
            Z = self._totals(y)
            m = float(np.clip(np.mean(list(self._scores.values())), 0.02, 0.98))
            est, var = self._log.interval(Z, self.N, self.N**2 * m * (1 - m))
            h = self._z * math.sqrt(var)
            return est, est - h, est + h
        if self._fixed is not None:
            return self._fixed
        if self._scores:
            m = float(np.mean(list(self._scores.values())))
            return m, 0.0, 1.0
        return 0.5, 0.0, 1.0

    def _totals(self, y: np.ndarray) -> np.ndarray:
        """``Z_t`` of the answered draws (scores ``y``, draw order) with cross-fitted predictions: the
        residuals of the draws of fold ``b`` (batches ``b``, ``b + FOLDS``, ...) come from predictions fitted
        on the pilot and the other folds."""
        n = y.size
        log = self._log
        items = np.asarray(log.item[:n], dtype=np.int64)
        fold = np.asarray(log.fold[:n])
        py = np.asarray([self._scores[i] for i in self.pilot.tolist()], dtype=float)
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
        return (vals[0], vals[1], vals[2]) if all(math.isfinite(v) for v in vals) else None

    def _update_state(self) -> None:
        n = len(self._scores)
        if n >= self.N:
            self.state = "exhausted"
            return
        if len(self._log) == 0:
            self._fixed = self._pilot_interval()
        elif len(self._log) >= MIN_DRAWS:
            _, lo, hi = self._interval()
            if (hi - lo) / 2 <= self.half_width / self._span:
                self.state = "narrow"
                return
        self.state = "budget" if n >= self.max_items else "running"

    def _draw_batch(self) -> np.ndarray:
        done = np.fromiter(self._scores, dtype=np.int64, count=len(self._scores))
        y = np.asarray([self._scores[i] for i in done.tolist()], dtype=float)
        f = self._predictor.predict(done, y)
        rest = np.ones(self.N, dtype=bool)
        rest[done] = False
        b = min(self.batch, self.max_items - done.size, int(rest.sum()))
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
            q_i = float(q[j] / q.sum())
            self._log.add(i, q_i, fold, w, pv)
            picks.append(i)
            idx = np.delete(idx, j)
            if idx.size:
                q = np.delete(q, j)
        return self._ask(picks)
