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
* ``"irt"`` -- tinyBenchmarks' IRT estimators (:mod:`benchsel.formulations.irt`).
* ``"rs-mean"`` and ``"bayes-aipw"`` -- BayesAME's baselines (sample mean with a
  finite-population interval; AIPW with a Bayesian ridge of the target's item
  scores on the sources' item scores).
* ``"source-assisted"`` -- HoloCosm's correction: the coreset mean plus the
  sources' mean gap between full and coreset score.

Third-party estimators register with :func:`register_estimator`.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, ClassVar

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option, check_options
from benchsel.formulations.core.validation import _describe, check_selection

__all__ = [
    "BayesAIPW",
    "ClusterWeighted",
    "Estimator",
    "MeanEstimator",
    "RSMean",
    "RepCoreRidge",
    "Ridge",
    "SourceAssisted",
    "Stacked",
    "estimator_names",
    "get_estimator",
    "list_estimators",
    "register_estimator",
    "ridge_loo",
    "selection_distances",
    "simplex_weights",
]

Z975 = 1.959963984540054


def single_thread() -> Any:
    """A context running BLAS on one thread (threadpoolctl), or a no-op without it.

    The estimators' linear algebra is small: on a busy machine a multithreaded
    BLAS made it 10-30x slower, never faster.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


# ------------------------------------------------------------------ validation
def _where(idx: tuple[int, ...], axes: tuple[str, ...]) -> str:
    return ", ".join(f"{a} {i}" for a, i in zip(axes, idx))


def check_scores(Y: Any, name: str, *, ndim: tuple[int, ...], axes: tuple[str, ...], shape_doc: str) -> np.ndarray:
    """A finite float array of scores, with messages that name the axes.

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
        arr = np.asarray(Y, dtype=float)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{name}: expected a numeric array of shape {shape_doc}, got {_describe(Y)} ({e})") \
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


# ------------------------------------------------------------------ base class
class Estimator:
    """Base class: ``fit(Y_source, selection) -> self``, ``predict(Y_target_on_selection) -> ndarray``.

    Subclasses set :attr:`name`, :attr:`options` (declared with
    :class:`~benchsel.formulations.core.options.Option`) and implement ``_fit`` and
    ``_predict``. Parameters are checked on construction; every declared
    option is an attribute of ``self.params``.

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

    def __init__(self, **params: Any) -> None:
        unknown = sorted(k for k in params if k not in {o.name for o in self.options})
        if unknown:
            raise InvalidInputError(
                f"params: {', '.join(map(repr, unknown))} not understood by estimator {self.name!r}; its options: "
                f"{', '.join(o.name for o in self.options) or '(none)'}"
            )
        checked, _ = check_options(params, self.options, self.name)
        self.params: dict[str, Any] = checked
        self._fitted = False

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if not isinstance(v, np.ndarray))
        return f"{type(self).__name__}({given})"

    def get_params(self) -> dict[str, Any]:
        return dict(self.params)

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
        import time

        t0 = time.perf_counter()
        axes = ("source model", "item", "metric")
        if Y_source is None:
            if self.needs_sources:
                raise InvalidInputError(f"Y_source: estimator {self.name!r} learns from source models; expected an "
                                        "array of shape (source models, items), got None")
            if n_items is None:
                raise InvalidInputError("n_items: expected the number of items N when Y_source is None, got None")
            Y = None
            N = int(n_items)
            self.n_sources_ = 0
            self.n_metrics_ = None
            self.score_range_ = (-math.inf, math.inf)
        else:
            nd = (2, 3) if self.multi_metric else (2,)
            doc = "(source models, items) or (source models, items, metrics)" if self.multi_metric \
                else "(source models, items)"
            Y = check_scores(Y_source, "Y_source", ndim=nd, axes=axes, shape_doc=doc)
            if Y.ndim == 3 and not self.multi_metric:  # pragma: no cover - caught by ndim
                raise InvalidInputError(f"Y_source: estimator {self.name!r} takes one metric")
            S, N = Y.shape[:2]
            if S < self.min_sources:
                raise InvalidInputError(
                    f"Y_source: expected at least {self.min_sources} source models (rows; columns are items), got "
                    f"shape {Y.shape}: {S} source model{'s' * (S != 1)}"
                )
            if n_items is not None and n_items != N:
                raise InvalidInputError(f"n_items: Y_source has {N} items (columns), n_items says {n_items}")
            self.n_sources_ = int(S)
            self.n_metrics_ = int(Y.shape[2]) if Y.ndim == 3 else None
            self.score_range_ = (float(Y.min()), float(Y.max()))
        if N < 2:
            raise InvalidInputError(f"Y_source: expected at least 2 items (columns), got {N}")
        sel = check_item_indices(selection, N)
        self.selection_ = sel
        self.n_items_ = int(N)
        with single_thread():
            self._fit(Y, sel)
        self._fitted = True
        self.fit_seconds_ = time.perf_counter() - t0
        return self

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
        return Yt

    def _clip(self, v: np.ndarray) -> np.ndarray:
        lo, hi = self.score_range_
        return np.clip(v, lo, hi)

    # ------------------------------------------------------------ to override
    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, Yt: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


# ------------------------------------------------------------------ registry
_ESTIMATORS: dict[str, type[Estimator]] = {}
_LOADED = False


def register_estimator(cls: type[Estimator]) -> type[Estimator]:
    """Register an :class:`Estimator` subclass under its ``name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Estimator)):
        raise InvalidInputError(f"cls: expected an Estimator subclass, got {_describe(cls)}")
    if not isinstance(cls.name, str) or not cls.name:
        raise InvalidInputError(f"cls: {cls.__name__}.name must be a non-empty string, got {cls.name!r}")
    if cls.name in _ESTIMATORS and _ESTIMATORS[cls.name] is not cls:
        raise InvalidInputError(f"name: an estimator {cls.name!r} is already registered ({_ESTIMATORS[cls.name]})")
    _ESTIMATORS[cls.name] = cls
    return cls


def _load() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import irt  # noqa: F401  (registers "irt")


def estimator_names() -> list[str]:
    """Names of the registered estimators, in registration order."""
    _load()
    return list(_ESTIMATORS)


def list_estimators() -> list[type[Estimator]]:
    """The registered estimator classes (each has ``name``, ``description`` and ``options``)."""
    _load()
    return list(_ESTIMATORS.values())


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
    _load()
    if not isinstance(name, str) or name not in _ESTIMATORS:
        raise InvalidInputError(f"name: unknown estimator {name!r}; estimators: {', '.join(_ESTIMATORS)}")
    return _ESTIMATORS[name](**params)


# ================================================================== estimators
@register_estimator
class MeanEstimator(Estimator):
    """``mean_{i in C} y_t[i]``: the coreset mean (needs no sources)."""

    name = "mean"
    description = "the coreset mean"
    multi_metric = True
    needs_sources = False
    min_sources = 1

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        pass

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1)


def _item_features(Y: np.ndarray) -> np.ndarray:
    """Items as rows of features: shape (N, S) or (N, S*K) for multi-metric sources."""
    F = np.moveaxis(Y, 1, 0)
    return F.reshape(F.shape[0], -1)


def selection_distances(F: np.ndarray, sel: np.ndarray, metric: str = "correlation") -> np.ndarray:
    """Dissimilarity of every item to each selected item, shape (N, k).

    The same dissimilarities as :func:`benchsel.formulations.kmedoids.dissimilarity`
    (``"correlation"``: ``1 - Pearson``, a constant item has correlation 0
    with every other; ``"cosine"``; ``"euclidean"``) without forming the
    ``N x N`` matrix.

    Parameters
    ----------
    F : ndarray, shape (N, d)
        Item features (e.g. the sources' scores of each item).
    sel : ndarray of int, shape (k,)
    metric : {"correlation", "cosine", "euclidean"}
    """
    if metric == "euclidean":
        from scipy.spatial.distance import cdist

        D = cdist(F, F[sel], "euclidean")
    else:
        Z = F - F.mean(axis=1, keepdims=True) if metric == "correlation" else F.astype(float, copy=True)
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        Z = Z / np.where(norms > 0, norms, 1.0)
        D = 1.0 - Z @ Z[sel].T
    np.clip(D, 0.0, None, out=D)
    D[sel, np.arange(sel.size)] = 0.0
    return D


def cluster_shares(D_sel: np.ndarray, sel: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Share of the items (or item weight) nearest to each selected item, shape (k,), in selection order.

    Ties go to the selected item of lowest index (as :meth:`KMedoids.assign`).

    Parameters
    ----------
    D_sel : ndarray, shape (N, k)
        Dissimilarity of each item to each selected item (columns in the order of ``sel``).
    sel : ndarray of int, shape (k,)
    weights : ndarray, shape (N,), optional
    """
    order = np.argsort(sel, kind="stable")
    lab = order[np.argmin(D_sel[:, order], axis=1)]  # column (selection position) serving each item
    w = np.ones(D_sel.shape[0]) if weights is None else weights
    return np.bincount(lab, weights=w, minlength=sel.size) / w.sum()


@register_estimator
class ClusterWeighted(Estimator):
    """AnchorPoints: ``sum_{j in C} (|cluster j| / N) y_t[j]``.

    Each item joins its nearest selected item under the sources' dissimilarity
    (``1 - Pearson`` correlation of the items' source score vectors by
    default); ties go to the selected item of lowest index. ``D`` (an
    ``N x N`` dissimilarity, e.g. a :class:`KMedoids` instance's) replaces the
    sources' geometry; ``item_weights`` weights the items' shares.
    """

    name = "cluster-weighted"
    description = "AnchorPoints' cluster-size weights (nearest selected item in the sources' correlation geometry)"
    multi_metric = True
    options = (
        Option("metric", "correlation", "choice", choices=("correlation", "cosine", "euclidean"),
               doc="dissimilarity between the items' source score vectors"),
        Option("D", None, "any", doc="precomputed (N, N) dissimilarity; Y_source may then be None"),
        Option("item_weights", None, "any", doc="(N,) non-negative item weights (default 1)"),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        from benchsel.formulations.core.validation import as_array

        D = self.params["D"]
        if D is not None:
            D = as_array(D, "D", ndim=2, shape_doc="(N, N)", nonnegative=True)
            if D.shape[0] != D.shape[1]:
                raise InvalidInputError(f"D: expected a square dissimilarity of shape (N, N), got shape {D.shape}")
            self.params["D"] = D
        w = self.params["item_weights"]
        if w is not None:
            w = as_array(w, "item_weights", ndim=1, shape_doc="(N,)", nonnegative=True)
            if not w.any():
                raise InvalidInputError("item_weights: expected at least one positive weight, got all zeros")
            self.params["item_weights"] = w
        self.needs_sources = D is None  # type: ignore[misc]

    def fit(self, Y_source: Any, selection: Any, *, n_items: int | None = None) -> ClusterWeighted:
        D = self.params["D"]
        if Y_source is None and D is not None and n_items is None:
            n_items = D.shape[0]
        super().fit(Y_source, selection, n_items=n_items)
        return self

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        D = self.params["D"]
        w = self.params["item_weights"]
        N = self.n_items_
        if D is not None and D.shape[0] != N:
            raise InvalidInputError(f"D: expected shape ({N}, {N}) (one row per item of Y_source), got {D.shape}")
        if w is not None and w.shape[0] != N:
            raise InvalidInputError(f"item_weights: expected shape ({N},), got {w.shape}")
        if D is not None:
            D_sel = D[:, sel]
        else:
            assert Y is not None
            D_sel = selection_distances(_item_features(Y), sel, self.params["metric"])
        self.weights_ = cluster_shares(D_sel, sel, w)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return np.tensordot(Yt, self.weights_, axes=([1], [0]))


# ------------------------------------------------------------------ ridge
#: Default penalty grid of :class:`Ridge` (scores on a 0..1 scale).
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 4, 29))


def ridge_loo(X: np.ndarray, y: np.ndarray, alphas: Any) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Ridge regression with an unpenalised intercept, penalty chosen by exact leave-one-out.

    For a penalised least-squares fit the leave-one-out residual is
    ``e_i / (1 - h_ii)``, with ``H = 11^T/n + Xc (Xc^T Xc + alpha I)^-1 Xc^T``;
    all penalties are scored from one SVD of the centred design.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    alphas : sequence of float, shape (A,)
        Positive penalties.

    Returns
    -------
    coef : ndarray, shape (p,)
    intercept : float
    alpha : float
        The penalty of smallest leave-one-out mean squared error (the largest
        such penalty on ties).
    loo_mse : ndarray, shape (A,)
    """
    a = np.asarray(alphas, dtype=float)
    n = X.shape[0]
    xm = X.mean(axis=0)
    ym = float(y.mean())
    Xc = X - xm
    yc = y - ym
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    s2 = s * s
    Uy = U.T @ yc  # (r,)
    f = s2[None, :] / (s2[None, :] + a[:, None])  # (A, r) shrinkage factors
    fit = (f * Uy[None, :]) @ U.T  # (A, n) fitted centred values
    h = 1.0 / n + f @ (U * U).T  # (A, n) leverages
    loo = (yc[None, :] - fit) / np.maximum(1.0 - h, 1e-12)
    mse = np.mean(loo * loo, axis=1)
    best = np.flatnonzero(mse <= mse.min() * (1 + 1e-12) + 1e-300)
    j = int(best[np.argmax(a[best])])
    coef = Vt.T @ (s / (s2 + a[j]) * Uy)
    return coef, ym - float(xm @ coef), float(a[j]), mse


@register_estimator
class Ridge(Estimator):
    """A ridge regression across the sources: full score ~ coreset scores.

    Fitted on the ``S`` source models (``X = Y_source[:, C]``,
    ``y = mean_i Y_source[:, i]``), penalty by exact leave-one-out over
    ``alphas``. With ``target="unseen"`` the regression predicts the mean of
    the items outside the coreset and the estimate is
    ``(sum_C y_t + (N - k) * prediction) / N``: the observed part is kept
    exactly. Predictions are clipped to the sources' score range.
    """

    name = "ridge"
    description = "ridge regression of the full score on the coreset scores across sources (leave-one-out penalty)"
    options = (
        Option("alphas", RIDGE_ALPHAS, "any", doc="penalty grid searched by leave-one-out"),
        Option("target", "full", "choice", choices=("full", "unseen"),
               doc="regress the full mean ('full') or the mean of the unselected items ('unseen')"),
        Option("clip", True, "bool", doc="clip estimates to the sources' score range"),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        a = np.atleast_1d(np.asarray(self.params["alphas"], dtype=float))
        if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise InvalidInputError(f"alphas: expected a non-empty 1-D sequence of positive penalties, got "
                                    f"{self.params['alphas']!r}")
        self.params["alphas"] = tuple(float(v) for v in a)

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        X = Y[:, sel]
        if self.params["target"] == "full":
            y = Y.mean(axis=1)
        else:
            mask = np.ones(Y.shape[1], bool)
            mask[sel] = False
            y = Y[:, mask].mean(axis=1) if mask.any() else Y.mean(axis=1)
        self.coef_, self.intercept_, self.alpha_, self.loo_mse_ = ridge_loo(X, y, self.params["alphas"])

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        p = Yt @ self.coef_ + self.intercept_
        if self.params["clip"]:
            p = self._clip(p)
        if self.params["target"] == "unseen":
            N, k = self.n_items_, self.selection_.size
            p = (Yt.sum(axis=1) + (N - k) * p) / N
        return p


@register_estimator
class RepCoreRidge(Estimator):
    """RepCore's extrapolator (paper section 2.4).

    ``x_i = mean_s Y_source[s, i]`` (each item's source-mean score). Per
    target ``t``, ``g_t(x) = a_t + b_t x`` minimises
    ``sum_{i in C} (g_t(x_i) - y_t[i])^2 + alpha b_t^2``; the estimate is
    ``(sum_{i in C} y_t[i] + sum_{i not in C} g_t(x_i)) / N`` with each
    ``g_t(x_i)`` clipped to the sources' score range.
    """

    name = "repcore-ridge"
    description = "RepCore: per target, a ridge of its coreset scores on the items' source-mean score"
    options = (
        Option("alpha", 1.0, "float", low=0.0, doc="ridge penalty on the slope (scikit-learn Ridge's default 1)"),
        Option("clip", True, "bool", doc="clip each predicted item score to the sources' score range"),
    )

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        x = Y.mean(axis=0)
        self.x_ = x
        mask = np.ones(x.size, bool)
        mask[sel] = False
        self.x_unseen_ = x[mask]
        xc = x[sel]
        self._xm = float(xc.mean())
        self._dx = xc - self._xm
        self._sxx = float(self._dx @ self._dx)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        ym = Yt.mean(axis=1)
        denom = self._sxx + self.params["alpha"]
        slope = (Yt - ym[:, None]) @ self._dx / denom if denom > 0 else np.zeros(Yt.shape[0])
        icpt = ym - slope * self._xm
        self.slope_, self.intercept_ = slope, icpt
        g = icpt[:, None] + slope[:, None] * self.x_unseen_[None, :]  # (T, N - k)
        if self.params["clip"]:
            g = self._clip(g)
        return (Yt.sum(axis=1) + g.sum(axis=1)) / self.n_items_


# ------------------------------------------------------------------ BayesAME baselines
class _IntervalMixin:
    """Estimators with a 95 % interval: ``predict_interval(Y) -> (T, 2)``."""

    def predict_interval(self, Y_target: Any) -> np.ndarray:
        """95 % interval of each target's full-benchmark score, shape (T, 2)."""
        Yt = self._targets(Y_target)  # type: ignore[attr-defined]
        est, var = self._predict_var(Yt)  # type: ignore[attr-defined]
        half = Z975 * np.sqrt(np.maximum(var, 0.0))
        return np.stack([est - half, est + half], axis=1)


@register_estimator
class RSMean(_IntervalMixin, Estimator):
    """BayesAME's RS-Mean: the coreset mean, with the finite-population variance
    ``Var_R = s^2 / k * (N - k) / N`` (``s`` the target's sample standard
    deviation on the coreset) for :meth:`predict_interval`. Meant for a random
    coreset; needs no sources."""

    name = "rs-mean"
    description = "BayesAME's RS-Mean: coreset mean with a finite-population 95 % interval"
    needs_sources = False
    min_sources = 1

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        pass

    def _predict_var(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, N = Yt.shape[1], self.n_items_
        est = Yt.mean(axis=1)
        if k < 2:
            return est, np.full(est.shape, np.inf)
        return est, Yt.var(axis=1, ddof=1) / k * (N - k) / N

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1)


def bayesian_ridge_batch(X: np.ndarray, Y: np.ndarray, *, max_iter: int = 300, tol: float = 1e-3,
                         a1: float = 1e-6, a2: float = 1e-6, l1: float = 1e-6, l2: float = 1e-6
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bayesian ridge regressions (MacKay evidence updates) of several responses on one design.

    The model of each column ``t`` of ``Y``: ``y = X w + b + e``,
    ``w ~ N(0, I / lambda_t)``, ``e ~ N(0, 1 / alpha_t)``, Gamma(1e-6, 1e-6)
    hyper-priors and an unpenalised intercept (scikit-learn's
    ``BayesianRidge`` updates and defaults). The design is shared, so one
    eigendecomposition serves every response.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    Y : ndarray, shape (n, T)

    Returns
    -------
    coef : ndarray, shape (T, p)
    intercept : ndarray, shape (T,)
    alpha, lam : ndarray, shape (T,)
    evals : ndarray, shape (p,)
        Eigenvalues of ``Xc^T Xc``.
    Q : ndarray, shape (p, p)
        Its eigenvectors (posterior covariance of ``w_t`` is
        ``Q diag(1 / (alpha_t evals + lam_t)) Q^T``).
    """
    n = X.shape[0]
    xm = X.mean(axis=0)
    ym = Y.mean(axis=0)
    Xc = X - xm
    Yc = Y - ym
    ev, Q = np.linalg.eigh(Xc.T @ Xc)
    ev = np.clip(ev, 0.0, None)
    qy = Q.T @ (Xc.T @ Yc)  # (p, T)
    yty = np.einsum("nt,nt->t", Yc, Yc)
    alpha = 1.0 / (yty / n + np.finfo(float).eps)
    lam = np.ones(Y.shape[1])
    active = np.ones(Y.shape[1], bool)
    coef_q = np.zeros_like(qy)
    for it in range(max_iter):
        coef_q_new = qy / (ev[:, None] + lam / alpha)
        rmse = np.maximum(yty - 2.0 * np.einsum("pt,pt->t", coef_q_new, qy) + np.einsum("pt,p,pt->t", coef_q_new, ev,
                                                                                         coef_q_new), 0.0)
        gamma = np.sum(alpha[None, :] * ev[:, None] / (lam[None, :] + alpha[None, :] * ev[:, None]), axis=0)
        wsq = np.einsum("pt,pt->t", coef_q_new, coef_q_new)
        lam_new = (gamma + 2 * l1) / (wsq + 2 * l2)
        alpha_new = (n - gamma + 2 * a1) / (rmse + 2 * a2)
        # no previous iterate at the first step: it never counts as converged
        change = np.sum(np.abs(Q @ (coef_q_new - coef_q)), axis=0) if it else np.full(Y.shape[1], np.inf)
        lam = np.where(active, lam_new, lam)
        alpha = np.where(active, alpha_new, alpha)
        coef_q = np.where(active[None, :], coef_q_new, coef_q)
        active &= ~(change < tol)
        if not active.any():
            break
    coef_q = qy / (ev[:, None] + lam / alpha)
    coef = (Q @ coef_q).T
    return coef, ym - coef @ xm, alpha, lam, ev, Q


@register_estimator
class BayesAIPW(_IntervalMixin, Estimator):
    """BayesAME's Bayes-AIPW, for a coreset drawn at random.

    Per target, a Bayesian ridge regression of its scores on the coreset on the
    items' source score vectors ``phi_i = Y_source[:, i]`` gives
    ``mu_i = phi_i^T w + b`` for every item; the AIPW estimate is
    ``mean_C y + (mean_U mu - mean_C mu) / (1 + k / (N - k))`` and its
    variance ``[d^T Sigma_w d + (1/alpha)(1/k + 1/(N - k))] / (1 + k/(N - k))^2``
    with ``d = mean_U phi - mean_C phi``.
    """

    name = "bayes-aipw"
    description = "BayesAME's Bayes-AIPW: Bayesian ridge on the sources' item scores, AIPW estimate"

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        Phi = Y.T  # (N, S)
        self._phi_C = Phi[sel]
        self._mC = self._phi_C.mean(axis=0)
        N, k = Phi.shape[0], sel.size
        self._mU = (Phi.sum(axis=0) - self._phi_C.sum(axis=0)) / (N - k) if N > k else self._mC

    def _predict_var(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        N, k = self.n_items_, self.selection_.size
        mean_c = Yt.mean(axis=1)
        if k >= N:
            return mean_c, np.zeros_like(mean_c)
        coef, _, alpha, lam, ev, Q = bayesian_ridge_batch(self._phi_C, Yt.T)
        d = self._mU - self._mC
        f = 1.0 + k / (N - k)
        est = mean_c + (coef @ d) / f
        dq = Q.T @ d
        var_w = np.sum(dq[None, :] ** 2 / (alpha[:, None] * ev[None, :] + lam[:, None]), axis=1)
        var = (var_w + (1.0 / alpha) * (1.0 / k + 1.0 / (N - k))) / f ** 2
        return est, var

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return self._predict_var(Yt)[0]


@register_estimator
class SourceAssisted(Estimator):
    """HoloCosm's source-assisted correction (its ``RankingRiskReconstruction.estimate``).

    ``yhat[t, k] = mean_{i in C} y_t[i, k] + c[k]`` with
    ``c[k] = mean_s (mu[s, k] - muhat[s, k](C))`` over the sources: the coreset
    mean shifted by the sources' average gap between full and coreset score.
    Leaves every difference between targets unchanged.
    """

    name = "source-assisted"
    description = "HoloCosm: coreset mean plus the sources' mean full-minus-coreset gap"
    multi_metric = True
    min_sources = 1

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        self.correction_ = (Y.mean(axis=1) - Y[:, sel].mean(axis=1)).mean(axis=0)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return Yt.mean(axis=1) + self.correction_



# ------------------------------------------------------------------ stacking
def _member_specs(members: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    out: list[tuple[str, dict[str, Any]]] = []
    for m in members:
        if isinstance(m, str):
            out.append((m, {}))
        elif isinstance(m, (tuple, list)) and len(m) == 2 and isinstance(m[0], str) and isinstance(m[1], dict):
            out.append((m[0], dict(m[1])))
        else:
            raise InvalidInputError(f"members: expected estimator names or (name, params) pairs, got {m!r}")
    if not out:
        raise InvalidInputError("members: expected at least one member estimator, got none")
    return tuple(out)


def simplex_weights(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative weights summing to 1 minimising ``|P w - y|^2``; shape (m,).

    Parameters
    ----------
    P : ndarray, shape (n, m)
        Each column one member's predictions.
    y : ndarray, shape (n,)
    """
    from scipy.optimize import nnls

    m = P.shape[1]
    big = 1e3 * max(1.0, float(np.abs(P).max()))
    w, _ = nnls(np.vstack([P, np.full((1, m), big)]), np.concatenate([y, [big]]))
    s = w.sum()
    return w / s if s > 0 else np.full(m, 1.0 / m)


@register_estimator
class Stacked(Estimator):
    """A convex combination of member estimators, weights fitted on held-out source models.

    The sources are split into ``folds`` groups; each member is fitted on all
    groups but one and predicts the held-out group's full scores from their
    coreset scores. The weights (non-negative, summing to 1) minimise the
    squared error of these out-of-fold predictions; every member is then
    refitted on all sources. With one member this is that member.

    ``cv="upward"`` mimics extrapolation to models stronger than every
    source: the sources are ranked by full score and cut into ``folds``
    contiguous groups, and group ``g >= 1`` is predicted by members fitted on
    groups ``0..g-1`` only (the weakest group is never predicted).
    """

    name = "stacked"
    description = "convex combination of member estimators, weights from out-of-fold predictions on the sources"
    options = (
        Option("members", (("ridge", {}), ("irt", {"variant": "p-irt"}), ("cluster-weighted", {})), "any",
               doc="member estimators: names or (name, params) pairs"),
        Option("folds", 5, "int", low=2, doc="cross-fitting folds over the source models"),
        Option("cv", "random", "choice", choices=("random", "upward"),
               doc="'random' folds, or 'upward': folds by full score, each predicted from the weaker folds only"),
        Option("seed", 0, "int", low=0, doc="seeds the fold assignment"),
    )
    min_sources = 4

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.params["members"] = _member_specs(self.params["members"])
        for n, p in self.params["members"]:
            if n == self.name:
                raise InvalidInputError("members: a stacked estimator cannot contain 'stacked'")
            get_estimator(n, **p)  # names and options checked now

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        specs = self.params["members"]
        S = Y.shape[0]
        folds = min(self.params["folds"], S // 2)
        truth = Y.mean(axis=1)
        if self.params["cv"] == "random":
            rng = np.random.default_rng(self.params["seed"])
            fold = rng.permutation(np.arange(S) % folds)
            plan = [(fold != f, fold == f) for f in range(folds)]
        else:  # upward: contiguous groups by full score, each predicted from the weaker ones
            fold = np.empty(S, dtype=np.int64)
            fold[np.argsort(truth, kind="stable")] = np.arange(S) * folds // S
            plan = [(fold < f, fold == f) for f in range(1, folds)]
        P = np.full((S, len(specs)), np.nan)
        for tr, va in plan:
            for j, (n, p) in enumerate(specs):
                P[va, j] = get_estimator(n, **p).fit(Y[tr], sel).predict(Y[va][:, sel])
        done = ~np.isnan(P[:, 0])
        self.weights_ = simplex_weights(P[done], truth[done])
        self.oof_mae_ = np.abs(P[done] - truth[done, None]).mean(axis=0)
        self.members_ = [get_estimator(n, **p).fit(Y, sel) for n, p in specs]

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return np.column_stack([m.predict(Yt) for m in self.members_]) @ self.weights_
