"""Estimators: from a coreset to full-benchmark scores.

Every estimator follows one interface::

    est = get_estimator("ridge").fit(Y_source, selection)
    scores = est.predict(Y_target[:, selection])      # shape (n_targets,)

``Y_source`` has shape (source models, items): the models whose scores on
every item are known. ``selection`` holds the indices of the selected items
(the coreset), in the order of the columns the targets are later observed on.
``predict`` takes the targets' scores on those items, shape
(target models, len(selection)), and returns each target's estimated
full-benchmark mean score. Scores may be binary (0/1) or continuous.
Multi-metric estimators (``"mean"``, ``"cluster-weighted"``,
``"source-assisted"``) also take ``Y_source`` of shape (models, items,
metrics) and targets of shape (targets, len(selection), metrics) and then
return shape (targets, metrics).

Built-in estimators (see :func:`list_estimators`):

* ``"mean"`` -- the coreset mean.
* ``"cluster-weighted"`` -- AnchorPoints: every item joins its nearest
  selected item in the sources' correlation geometry; a selected item's weight
  is its cluster's share of the items.
* ``"ridge"`` -- a ridge regression of the sources' full score on their
  coreset scores, penalty by exact leave-one-out over a grid.
* ``"repcore-ridge"`` -- RepCore's extrapolator: per target, a ridge of its
  coreset scores on each item's source-mean score predicts the unseen items.
* ``"irt"`` -- tinyBenchmarks' IRT estimators (:mod:`benchsel.formulations.estimation.irt`).
* ``"rs-mean"``, ``"bayes-aipw"``, ``"aipw"`` and ``"bayes-rs-learn"`` -- BayesAME's
  baselines (sample mean with a finite-population interval; AIPW with a Bayesian
  ridge or a ridge of the target's item scores on the sources' item scores; a
  Bayesian ridge of the sources' full score on their coreset scores).
* ``"source-assisted"`` -- HoloCosm's correction: the coreset mean plus the
  sources' mean gap between full and coreset score.
* ``"suite"`` -- a suite of tasks: an estimator inside each task, the suite's macro, micro or
  weighted average (:mod:`benchsel.formulations.estimation.suite`).

Third-party estimators register with :func:`register_estimator`.
"""
from __future__ import annotations

import contextlib
import importlib
import math
import os
import pkgutil
import time
import warnings
from typing import Any, ClassVar, TypeVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option, check_options
from benchsel.formulations.core.registry import Registry
from benchsel.formulations.core.validation import (
    MAX_MAGNITUDE,
    _object_numeric,
    check_magnitude,
    check_selection,
    describe,
)

__all__ = [
    "CONFORMAL_FOLDS",
    "ESTIMATORS",
    "SCORE_MAX",
    "Z975",
    "Estimator",
    "UninformativeSourcesWarning",
    "bounded_variance",
    "check_alpha",
    "check_item_indices",
    "check_scores",
    "conformal_quantile",
    "design_half_width",
    "estimator_names",
    "get_estimator",
    "list_estimators",
    "plus_four",
    "register_estimator",
    "single_thread",
]

Z975 = 1.959963984540054
#: Continuous target scores may exceed the sources' largest magnitude by this factor (beyond: another unit).
SCALE_FACTOR = 10.0
#: Folds of source models behind the default (split-conformal) intervals.
CONFORMAL_FOLDS = 5
#: Largest ``|score|`` an estimator takes (the square root of ``MAX_MAGNITUDE``): squares and products of
#: scores (ridge Gram matrices, correlations, distances) stay finite.
SCORE_MAX = math.sqrt(MAX_MAGNITUDE)


def single_thread() -> Any:
    """A context running BLAS on one thread (threadpoolctl), or a no-op without it.

    The estimators' linear algebra is small: on a busy machine a multithreaded
    BLAS makes it slower, never faster.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl is a dependency
            return contextlib.nullcontext()
        _CONTROLLER = ThreadpoolController()  # finds the BLAS libraries once (each lookup reads /proc)
    return _CONTROLLER.limit(limits=1, user_api="blas")


#: The BLAS libraries found by threadpoolctl, looked up on the first :func:`single_thread`.
_CONTROLLER: Any = None


# ------------------------------------------------------------------ validation
def _where(idx: tuple[int, ...], axes: tuple[str, ...]) -> str:
    return ", ".join(f"{a} {i}" for a, i in zip(axes, idx))


def check_scores(Y: Any, name: str, *, ndim: tuple[int, ...], axes: tuple[str, ...], shape_doc: str) -> np.ndarray:
    """A finite float array of scores, with messages that name the axes.

    Magnitudes: every ``|score|`` at most :data:`SCORE_MAX` (``1e75``) and the largest either 0 or at
    least ``1 / SCORE_MAX``, so that squares and products of scores stay finite and non-zero.

    Parameters
    ----------
    Y : array_like
    name : str
        Argument name for messages (``"Y_source"``, ``"Y_target"``).
    ndim : tuple of int
        Allowed numbers of dimensions.
    axes : tuple of str
        Name of each axis, e.g. ``("source model", "item", "metric")``.
    shape_doc : str
        The expected shape as documented.
    """
    try:
        if hasattr(Y, "to_numpy"):
            Y = Y.to_numpy()
        raw = np.asarray(Y)
        if raw.dtype.kind in "OUSV":  # strings ("0.5") and booleans inside objects are refused, not parsed
            raw = _object_numeric(raw, name)
        arr = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as e:
        if isinstance(e, InvalidInputError):
            raise
        raise InvalidInputError(f"{name}: expected a numeric array of shape {shape_doc}, got {describe(Y)} ({e})") \
            from None
    if arr.ndim not in ndim:
        raise InvalidInputError(f"{name}: expected an array of shape {shape_doc}, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = np.argwhere(bad)
        n_nan = int(np.isnan(arr).sum())
        what = f"{n_nan} NaN" + (f" and {int(bad.sum()) - n_nan} infinite" if bad.sum() > n_nan else "")
        rows = np.unique(idx[:, 0])
        first = _where(tuple(int(i) for i in idx[0]), axes)
        raise InvalidInputError(
            f"{name}: expected finite scores, got {what} entries in {rows.size} {axes[0]}s "
            f"(first at {first}; {axes[0]}s {', '.join(map(str, rows[:8].tolist()))}"
            f"{' ...' if rows.size > 8 else ''}); impute or drop them first"
        )
    # squares and products of scores (regressions, correlations, distances) must stay finite and non-zero
    big = check_magnitude(arr, name, limit=SCORE_MAX, what="squares and products of scores")
    if 0.0 < big < 1.0 / SCORE_MAX:
        raise InvalidInputError(
            f"{name}: expected scores whose largest magnitude is 0 or at least {1.0 / SCORE_MAX:.3g}, got values up to "
            f"{big:.3g} (their squares underflow float64 and the estimates lose them); rescale {name}"
        )
    return arr


def check_item_indices(selection: Any, n_items: int, name: str = "selection") -> np.ndarray:
    """Distinct int64 item indices in ``[0, n_items)``, order kept; shape (k,).

    The checks are :func:`benchsel.formulations.core.validation.check_selection`'s (which
    sorts); the order given is kept because it is the order of the target
    columns.
    """
    checked = check_selection(selection, n_items, name)
    if checked.size == 0:
        raise InvalidInputError(f"{name}: expected at least one selected item, got an empty selection")
    arr = np.asarray(selection)
    if arr.dtype == bool:  # a mask: its items in index order
        return checked
    return arr.astype(np.int64)


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float in (0, 1), or a named error."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        a = math.nan
    if isinstance(alpha, bool) or not 0.0 < a < 1.0:
        raise InvalidInputError(f"alpha: expected a miscoverage level 0 < alpha < 1 (0.1 for 90 % intervals), got "
                                f"{alpha!r}")
    return a


def conformal_quantile(residuals: np.ndarray, alpha: float) -> float:
    """The ``ceil((n + 1)(1 - alpha))``-th smallest absolute residual (infinite when there are too few).

    Parameters
    ----------
    residuals : ndarray, shape (n,)
    alpha : float
    """
    r = np.sort(np.abs(np.asarray(residuals, dtype=float)))
    n = r.size
    j = math.ceil((n + 1) * (1 - alpha))
    return float(r[j - 1]) if 1 <= j <= n else math.inf


class UninformativeSourcesWarning(UserWarning):
    """The source models carry no information about new models: every source scores alike on every item."""


def bounded_variance(p: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The largest variance of a score in ``[lo, hi]`` whose mean is ``p``: ``(p - lo)(hi - p)`` (for 0/1 scores
    ``p (1 - p)``, the Bernoulli variance); shape of ``p``."""
    q = np.clip(p, lo, hi)
    return (q - lo) * (hi - q)


def plus_four(mean: np.ndarray, k: int, lo: float, hi: float) -> np.ndarray:
    """A mean of ``k`` scores in ``[lo, hi]`` moved toward the middle as by two pseudo-items at each end
    (Agresti and Coull's "plus four" for proportions: ``(x + 2) / (k + 4)``), so that a mean at an end still has
    a variance; shape of ``mean``."""
    return (mean * k + 2.0 * (lo + hi)) / (k + 4.0)


def design_half_width(Yt: np.ndarray, n_items: int, alpha: float, bounds: tuple[float, float] | None
                      ) -> np.ndarray:
    """Half-width of the design-based t-interval of each target's full mean from its scores on a random
    sample of the items: ``t_{1 - alpha/2, k - 1} sqrt((1 - k / N) s^2 / k)``, ``s^2`` the target's sample
    variance, at least the variance a score in ``bounds`` has at the plus-four mean (:func:`plus_four`), so
    that a target with equal scores on every sampled item still gets an interval; shape (T,).

    Parameters
    ----------
    Yt : ndarray, shape (T, k)
    n_items : int
        ``N``.
    alpha : float
    bounds : (float, float) or None
        The score range (0/1 scores: ``(0, 1)``); None: no floor.
    """
    from scipy.stats import t as student

    k = Yt.shape[1]
    s2 = Yt.var(axis=1, ddof=1) if k > 1 else np.full(Yt.shape[0], np.inf)
    if bounds is not None:
        s2 = np.maximum(s2, bounded_variance(plus_four(Yt.mean(axis=1), k, *bounds), *bounds))
    return float(student.ppf(1 - alpha / 2, max(k - 1, 1))) * np.sqrt(max(0.0, 1.0 - k / n_items) * s2 / k)


_E = TypeVar("_E", bound="Estimator")


# ------------------------------------------------------------------ base class
class Estimator:
    """Base class: ``fit(Y_source, selection) -> self``, ``predict(Y_target_on_selection) -> ndarray``.

    Subclasses set :attr:`name`, :attr:`options` (declared with
    :class:`~benchsel.formulations.core.options.Option`) and implement ``_fit`` and
    ``_predict``, which receive checked arrays. Parameters are checked once, where they are given
    (construction, :meth:`set_params`; a subclass adds its own checks in ``_check_params`` and checks of
    target scores in ``_check_targets``); every declared option is a key of ``self.params``.

    Attributes (after :meth:`fit`)
    ------------------------------
    selection_ : ndarray of int64, shape (k,)
        The selection, in the order given.
    n_items_ : int
        Items of the full benchmark (columns of ``Y_source``).
    n_sources_ : int
    score_range_ : (float, float)
        Smallest and largest source score (predictions of regressors are
        clipped to it).
    fit_seconds_ : float
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()
    multi_metric: ClassVar[bool] = False
    #: needs the source matrix (False: ``fit(None, selection)`` works given ``n_items``).
    needs_sources: ClassVar[bool] = True
    min_sources: ClassVar[int] = 2
    #: chooses among several estimates per target (:meth:`route` says which each target got).
    routes: ClassVar[bool] = False
    #: metrics of the multi-metric sources it was fitted on (None: a (models, items) matrix, or not fitted).
    n_metrics_: int | None = None

    def __init__(self, **params: Any) -> None:
        self._check_names(params)
        # the values exactly as given (defaults filled in): get_params returns these very objects, so
        # sklearn.base.clone can rebuild the estimator and check it got the same parameters back
        self._raw: dict[str, Any] = {o.name: params.get(o.name, o.default) for o in self.options}
        self.params: dict[str, Any] = self._checked_params(self._raw)
        self._fitted = False
        #: the attributes of an unfitted estimator (its checked parameters and what their checks derived)
        self._config = frozenset(self.__dict__) | {"_config"}

    def _check_names(self, params: Any) -> None:
        unknown = sorted(k for k in params if k not in {o.name for o in self.options})
        if unknown:
            raise InvalidInputError(
                f"params: {', '.join(map(repr, unknown))} not understood by estimator {self.name!r}; its options: "
                f"{', '.join(o.name for o in self.options) or '(none)'}"
            )

    def _checked_params(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The declared options checked (:func:`check_options`), then :meth:`_check_params`' own checks: the
        one check of the parameters, when they are given (construction, :meth:`set_params`); :meth:`fit` and
        the inner fits of composite estimators trust them."""
        checked, _ = check_options(dict(raw), self.options, self.name)
        return self._check_params(checked)

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """Checks and conversions beyond the declared options' (subclasses override); returns ``params``."""
        return params

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if not isinstance(v, np.ndarray))
        return f"{type(self).__name__}({given})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Every option, as given to the constructor or :meth:`set_params` (scikit-learn's convention).

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn; estimators hold no nested estimators as parameters (member
            estimators of ``"stacked"`` are given by name), so it changes nothing.
        """
        return dict(self._raw)

    def set_params(self, **params: Any) -> Estimator:
        """Change options (checked now); the estimator becomes unfitted.

        Returns
        -------
        self
        """
        self._check_names(params)
        raw = {**self._raw, **params}
        self.params = self._checked_params(raw)
        self._raw = raw
        self._fitted = False
        return self

    @property
    def is_fitted(self) -> bool:
        return self._fitted

    # ------------------------------------------------------------ public API
    def fit(self, Y_source: Any, selection: Any, *, n_items: int | None = None) -> Estimator:
        """Fit on the source models' scores and the selected items.

        Parameters
        ----------
        Y_source : array_like, shape (S, N) (or (S, N, K) for multi-metric estimators)
            Scores of ``S >= 2`` source models (rows) on all ``N`` items
            (columns).
        selection : array_like of int, shape (k,)
            Selected item indices (distinct, in ``[0, N)``), in the order of
            the columns later passed to :meth:`predict`.
        n_items : int, optional
            ``N`` when ``Y_source`` is None (estimators that need no sources,
            e.g. ``"mean"``).

        Returns
        -------
        self
        """
        Y, sel, N = self._check_fit(Y_source, selection, n_items)
        self._fit_checked(Y, sel, N)
        if self.uninformative_:  # once, at the public boundary (not in inner fits)
            assert Y is not None
            warnings.warn(
                f"Y_source: every one of the {Y.shape[0]} source models scores alike on every item, so the sources "
                f"carry no information about new models; estimator {self.name!r} falls back to design-based "
                "intervals from each new model's own scores on the selected items (add source models that differ "
                "for model-based estimates)", UninformativeSourcesWarning, stacklevel=2)
        return self

    def _check_fit(self, Y_source: Any, selection: Any, n_items: int | None
                   ) -> tuple[np.ndarray | None, np.ndarray, int]:
        """The one check of :meth:`fit`'s arguments (pure): ``(Y, selection, N)``."""
        if Y_source is None:
            if self.needs_sources:
                raise InvalidInputError(f"Y_source: estimator {self.name!r} learns from source models; expected an "
                                        "array of shape (source models, items), got None")
            if n_items is None:
                raise InvalidInputError("n_items: expected the number of items N when Y_source is None, got None")
            Y = None
            N = int(n_items)
        else:
            nd = (2, 3) if self.multi_metric else (2,)
            doc = "(source models, items) or (source models, items, metrics)" if self.multi_metric \
                else "(source models, items)"
            Y = check_scores(Y_source, "Y_source", ndim=nd, axes=("source model", "item", "metric"), shape_doc=doc)
            S, N = Y.shape[:2]
            if S < self.min_sources:
                raise InvalidInputError(
                    f"Y_source: expected at least {self.min_sources} source models (rows; columns are items), got "
                    f"shape {Y.shape}: {S} source model{'s' * (S != 1)}"
                )
            if n_items is not None and n_items != N:
                raise InvalidInputError(f"n_items: Y_source has {N} items (columns), n_items says {n_items}")
        if N < 2:
            raise InvalidInputError(f"Y_source: expected at least 2 items (columns), got {N}")
        return Y, check_item_indices(selection, N), N

    def _fit_checked(self: _E, Y: np.ndarray | None, sel: np.ndarray, N: int) -> _E:
        """:meth:`fit` on arguments :meth:`_check_fit` accepted, or parts of them (a composite estimator's
        folds of the sources): nothing is checked again.

        Parameters
        ----------
        Y : ndarray, shape (S, N) (or (S, N, K)), or None
        sel : ndarray of int64, shape (k,)
        N : int
        """
        t0 = time.perf_counter()
        if Y is None:
            self.n_sources_ = 0
            self.n_metrics_ = None
            self.score_range_ = (-math.inf, math.inf)
            self.binary_sources_ = False
            self.uninformative_ = False
        else:
            self.n_sources_ = int(Y.shape[0])
            self.n_metrics_ = int(Y.shape[2]) if Y.ndim == 3 else None
            self.binary_sources_ = bool(np.isin(Y, (0.0, 1.0)).all())
            lo, hi = float(Y.min()), float(Y.max())
            # 0/1 scores live in [0, 1] whatever the sources scored; a single value is no range: in [0, 1] it is
            # read as a fraction, else the range is unknown
            self.score_range_ = ((0.0, 1.0) if self.binary_sources_ or (lo == hi and 0.0 <= lo <= 1.0)
                                 else (lo, hi) if lo < hi else (-math.inf, math.inf))
            #: every source scores alike on every item: they tell nothing about a new model
            self.uninformative_ = bool(Y.shape[0] >= 2 and not np.ptp(Y, axis=0).any())
        self._Y_fit: np.ndarray | None = Y
        self._conf_res: np.ndarray | None = None
        self.selection_ = sel
        self.n_items_ = int(N)
        with single_thread():
            self._fit(Y, sel)
        self._fitted = True
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _unfitted(self: _E) -> _E:
        """A new, unfitted estimator with these parameters, as they were checked when given (a composite
        estimator's members and refits: nothing is checked again)."""
        new = type(self).__new__(type(self))
        new.__dict__.update((k, v) for k, v in self.__dict__.items() if k in self._config)
        new._fitted = False
        return new

    def route(self, Y_target: Any) -> np.ndarray:
        """Which estimate each target gets, shape (T,): this estimator's name, unless it :attr:`routes` (then
        the name of the estimate it chose for each target)."""
        return np.full(self._targets(Y_target).shape[0], self.name, dtype=object)

    def predict(self, Y_target: Any) -> np.ndarray:
        """Estimated full-benchmark mean score of each target.

        Parameters
        ----------
        Y_target : array_like, shape (T, k) (or (T, k, K) for multi-metric data)
            Target models' scores (rows) on the selected items (columns, in the
            order of ``selection``); a 1-D array of length ``k`` is one target.

        Returns
        -------
        ndarray, shape (T,) (or (T, K))
        """
        Yt = self._targets(Y_target)
        with single_thread():
            return np.asarray(self._predict(Yt), dtype=float)

    def predict_interval(self, Y_target: Any, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
        """A ``1 - alpha`` interval for each target's full-benchmark mean score.

        Estimators with a model of their own error (``"model-assisted"``, ``"auto"``) use it; the others
        use split-conformal residuals: the estimator is refitted on all source models but one fold
        (:data:`CONFORMAL_FOLDS` folds) and its absolute errors on the held-out sources give the
        half-width. The intervals are clipped to the sources' score range.

        Parameters
        ----------
        Y_target : array_like, shape (T, k) (or (T, k, K) for multi-metric data)
            As for :meth:`predict`.
        alpha : float
            Miscoverage, ``0 < alpha < 1`` (0.1 gives 90 % intervals).

        Returns
        -------
        low, high : ndarray, shape (T,) (or (T, K): one split-conformal quantile per metric)
        """
        _, lo, hi = self.predict_with_interval(Y_target, alpha)
        return lo, hi

    def predict_with_interval(self, Y_target: Any, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`predict` and :meth:`predict_interval` in one pass (the estimate is computed once).

        Returns
        -------
        estimate, low, high : ndarray, shape (T,) (or (T, K))
        """
        a = check_alpha(alpha)
        Yt = self._targets(Y_target)
        with single_thread():
            est, lo, hi = self._interval(Yt, a)
        return (np.asarray(est, dtype=float), self._clip(np.asarray(lo, dtype=float)),
                self._clip(np.asarray(hi, dtype=float)))

    def _interval(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, low, high), each shape (T,): split-conformal by default."""
        est = np.asarray(self._predict(Yt), dtype=float)
        res = self._conformal_residuals()
        if est.ndim == 1:
            q: Any = conformal_quantile(res, alpha)
            if getattr(self, "uninformative_", False):  # the sources' errors say nothing: join the design interval
                m, dh = Yt.mean(axis=1), design_half_width(Yt, self.n_items_, alpha, self._bounds())
                return est, np.minimum(est - q, m - dh), np.maximum(est + q, m + dh)
        else:  # multi-metric: one quantile per metric
            q = np.array([conformal_quantile(res[:, j], alpha) for j in range(est.shape[1])])
        return est, est - q, est + q

    def _spread(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The ``1 - alpha`` interval as standard errors, for sums of independent estimates (a suite's tasks):
        (estimate, standard error below, above, degrees of freedom), each shape (T,). By default the
        half-widths of :meth:`_interval` over the normal quantile, with infinite degrees of freedom."""
        from scipy.stats import norm

        est, lo, hi = self._interval(Yt, alpha)
        est = np.asarray(est, dtype=float)
        z = float(norm.ppf(1 - alpha / 2))
        return (est, np.maximum(est - np.asarray(lo, dtype=float), 0.0) / z,
                np.maximum(np.asarray(hi, dtype=float) - est, 0.0) / z, np.full(est.shape, np.inf))

    def _design_se(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A design-based estimate with its standard error and degrees of freedom, each shape (T,), for
        estimators that have one (the model-assisted estimate); None otherwise."""
        return None

    def _bounds(self) -> tuple[float, float] | None:
        """The score range as bounds of a variance (:func:`bounded_variance`), or None when it is not known."""
        lo, hi = self.score_range_
        return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi else None

    def _conformal_residuals(self) -> np.ndarray:
        """Absolute errors on held-out source models of refits on the other folds (cached); shape (S,)
        (multi-metric: (S, K))."""
        cached = self._conf_res
        if cached is None:
            Y = self._Y_fit
            if Y is None:
                raise InvalidInputError(f"estimator: {self.name!r} was fitted without source scores; an interval "
                                        "needs them (fit(Y_source, selection))")
            S = Y.shape[0]
            folds = min(CONFORMAL_FOLDS, S)
            fold = np.random.default_rng(0).permutation(np.arange(S) % folds)
            truth = Y.mean(axis=1)
            res = np.full(truth.shape, np.nan)
            sel = self.selection_
            for f in range(folds):
                tr, va = fold != f, fold == f
                if tr.sum() < self.min_sources:
                    continue
                est = self._unfitted()._fit_checked(Y[tr], sel, self.n_items_)
                res[va] = np.asarray(est._predict(Y[va][:, sel]), dtype=float) - truth[va]
            ok = np.isfinite(res) if res.ndim == 1 else np.isfinite(res).all(axis=1)
            cached = np.abs(res[ok])
            self._conf_res = cached
        return cached

    def fit_predict(self, Y_source: Any, selection: Any, Y_target: Any) -> np.ndarray:
        """``fit(Y_source, selection).predict(Y_target)``."""
        return self.fit(Y_source, selection).predict(Y_target)

    # ------------------------------------------------------------ helpers
    def _require_fitted(self) -> None:
        if not self._fitted:
            raise InvalidInputError(f"estimator: {self.name!r} is not fitted; call fit(Y_source, selection) before "
                                    "predict")

    def _targets(self, Y_target: Any) -> np.ndarray:
        self._require_fitted()
        k = self.selection_.size
        K = self.n_metrics_
        if K is None:
            doc = f"(targets, {k}): one row per target model, one column per selected item"
            nd: tuple[int, ...] = (1, 2)
        else:
            doc = f"(targets, {k}, {K}): target models x selected items x metrics"
            nd = (2, 3)
        Yt = check_scores(Y_target, "Y_target", ndim=nd, axes=("target model", "selected item", "metric"),
                          shape_doc=doc)
        if Yt.ndim == nd[0]:  # a single target
            Yt = Yt[None]
        width = Yt.shape[1]
        ok = width == k and (K is None or Yt.shape[2] == K)
        if not ok:
            hint = ""
            if width == self.n_items_:
                hint = (f"; it has one column per item of the full benchmark ({self.n_items_}): pass only the "
                        "selected columns, Y_target[:, selection]")
            elif Yt.shape[0] == k:
                hint = (f"; it looks transposed: rows must be target models and columns the {k} selected items "
                        "(pass Y_target.T)")
            raise InvalidInputError(f"Y_target: expected shape {doc} (len(selection) = {k}), got shape "
                                    f"{Yt.shape}{hint}")
        self._check_range(Yt)
        self._check_targets(Yt)
        return Yt

    def _check_targets(self, Yt: np.ndarray) -> None:
        """What an estimator asks of target scores beyond :meth:`_targets`' checks (subclasses override;
        composites ask what their members ask). ``Yt`` has shape (T, k) (or (T, k, K))."""

    def _check_range(self, Yt: np.ndarray) -> None:
        """Target scores on the scale the sources were on: within [0, 1] for 0/1 sources; for continuous
        sources, no target score more than :data:`SCALE_FACTOR` times the sources' largest magnitude (a
        new model may beat every source, but not by a change of unit such as percent for fractions)."""
        lo, hi = self.score_range_
        if not (math.isfinite(lo) and math.isfinite(hi)) or Yt.size == 0:
            return
        tmin, tmax = float(Yt.min()), float(Yt.max())
        if self.binary_sources_:
            ok = tmin >= 0.0 and tmax <= 1.0
            allowed = "within 0 to 1"
        else:
            scale = max(abs(lo), abs(hi), hi - lo)
            ok = max(abs(tmin), abs(tmax)) <= SCALE_FACTOR * scale * (1 + 1e-12)
            allowed = f"of magnitude at most {SCALE_FACTOR:g} x {scale:.6g}"
        if not ok:
            raise InvalidInputError(
                f"Y_target: expected scores on the sources' scale (sources {lo:.6g} to {hi:.6g}, so targets "
                f"{allowed}), got scores from {tmin:.6g} to {tmax:.6g}; rescale them as the sources were "
                "(e.g. fractions, not percent)")

    def _clip(self, v: np.ndarray) -> np.ndarray:
        lo, hi = self.score_range_
        return np.clip(v, lo, hi)

    # ------------------------------------------------------------ to override
    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, Yt: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


# ------------------------------------------------------------------ registry
def _load() -> None:
    """Import every module of this package: each registers its estimators by declaration."""
    for m in pkgutil.iter_modules([os.path.dirname(__file__)]):
        if not m.name.startswith("_"):
            importlib.import_module(f"{__package__}.{m.name}")


#: Every estimator class by its ``name`` (the built-in ones are loaded on the first lookup).
ESTIMATORS: Registry[type[Estimator]] = Registry("estimator", load=_load)


def register_estimator(cls: type[Estimator]) -> type[Estimator]:
    """Register an :class:`Estimator` subclass under its ``name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Estimator)):
        raise InvalidInputError(f"cls: expected an Estimator subclass, got {describe(cls)}")
    if not isinstance(cls.name, str) or not cls.name:
        raise InvalidInputError(f"cls: {cls.__name__}.name must be a non-empty string, got {cls.name!r}")
    return ESTIMATORS.register(cls.name, cls)


def estimator_names() -> list[str]:
    """Names of the registered estimators, in registration order."""
    return ESTIMATORS.names()


def list_estimators() -> list[type[Estimator]]:
    """The registered estimator classes (each has ``name``, ``description`` and ``options``)."""
    return ESTIMATORS.values()


def get_estimator(name: str, **params: Any) -> Estimator:
    """A new, unfitted estimator.

    Parameters
    ----------
    name : str
        A registered name: ``"mean"``, ``"cluster-weighted"``, ``"ridge"``,
        ``"repcore-ridge"``, ``"irt"``, ``"rs-mean"``, ``"bayes-aipw"``,
        ``"source-assisted"``, ... (see :func:`estimator_names`).
    **params
        The estimator's options (checked; unknown names are refused with the
        known ones listed).
    """
    return ESTIMATORS.get(name)(**params)
