"""The commonest job in one call: a models x items score matrix -> a k-item subset and a fitted estimator.

::

    from benchsel import compress
    c = compress(Y, k=50)                 # Y: (models, items), rows are models
    c.items                               # the 50 selected item indices
    c.predict(Y_new[:, c.items])          # estimated full-benchmark scores of new models

A *selection* turns source scores into a subset. It is a formulation built
from the source matrix plus a registered method that solves it (see
:func:`benchsel.solvers.registry.register_method`); :func:`register_selection`
adds one by name, and the fidelity benchmark (``benchsel run fidelity``) runs
every registered selection. Built in:

* ``"random"`` -- ``k`` items drawn uniformly (seeded);
* ``"kmedoids"`` -- AnchorPoints: k-medoids on ``1 - Pearson`` correlation of
  the items' source score vectors, solved by FasterPAM;
* ``"kmedoids-highs"`` -- the same k-medoids problem solved by HiGHS (a proven
  optimum, or the best found and its gap at the time limit);
* ``"irt-anchor"`` -- tinyBenchmarks' IRT anchors: k-medoids (FasterPAM) on the
  items' fitted 2PL parameters ``(a_i, b_i)``, Euclidean.
"""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.result import Result, Termination
from benchsel.formulations.core.validation import check_int, describe
from benchsel.formulations.estimation import check_scores, get_estimator
from benchsel.formulations.estimation.design import difficulty_features, difficulty_score, stratified_sample
from benchsel.formulations.estimation.irt import fit_irt
from benchsel.formulations.kmedoids import KMedoids
from benchsel.formulations.kmedoids.bounds import available_bytes
from benchsel.solvers.api import solve

from .saved import (
    ARRAYS,
    ATOL,
    META,
    SourceScores,
    _arr,
    _decode,
    _num,
    _read_arrays,
    _read_meta,
    fingerprint_scores,
    save_compressed,
    source_scores,
)

__all__ = [
    "DEFAULT_ESTIMATOR",
    "DEFAULT_SELECTION",
    "Compressed",
    "Selection",
    "SelectionResult",
    "anchor_kmedoids",
    "compress",
    "get_selection",
    "irt_kmedoids",
    "load_compressed",
    "register_selection",
    "select_items",
    "selection_names",
]

#: The estimator :func:`compress` fits unless told otherwise (see docs/estimators.md for the measurements).
DEFAULT_ESTIMATOR = "auto"
#: The selection :func:`compress` uses unless told otherwise.
DEFAULT_SELECTION = "stratified"


# ------------------------------------------------------------------ builders
def anchor_kmedoids(Y_source: np.ndarray, k: int, seed: int = 0) -> Any:
    """AnchorPoints' k-medoids problem: items as points, ``1 - Pearson`` of their source score vectors.

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Source models (rows) x items (columns).
    k : int
    seed : int
        Unused (the problem is deterministic).
    """

    _dense_fits(np.shape(Y_source)[1], "kmedoids")
    return KMedoids.from_features(np.asarray(Y_source, dtype=float).T, k, metric="correlation")


def irt_kmedoids(Y_source: np.ndarray, k: int, seed: int = 0, dim: int = 1) -> Any:
    """tinyBenchmarks' IRT anchor problem: k-medoids on the items' 2PL parameters ``(a_i, b_i)`` (Euclidean).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
        Source scores in [0, 1].
    k : int
    seed : int
        Seeds the IRT fit's start.
    dim : int
        Latent dimension of the 2PL model.
    """

    _dense_fits(np.shape(Y_source)[1], "irt-anchor")
    model = fit_irt(Y_source, dim, seed=seed)
    return KMedoids.from_features(model.item_embedding(), k, metric="euclidean")


def stratified_draw(Y_source: np.ndarray, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``"stratified"`` design: items sorted by difficulty for strong models, ``k`` equal-count strata,
    one item drawn uniformly from each (:func:`benchsel.formulations.estimation.design.stratified_sample`).

    Parameters
    ----------
    Y_source : ndarray, shape (S, N)
    k : int
    seed : int

    Returns
    -------
    items : ndarray of int64, shape (k,)
    weights : ndarray, shape (k,)
        Each stratum's share of the items.
    """
    Y = np.asarray(Y_source, dtype=float)
    return stratified_sample(difficulty_score(difficulty_features(Y)), k, seed)


def _no_build(Y_source: np.ndarray, k: int, seed: int = 0) -> Any:
    raise InvalidInputError("selection: this selection is a sampling design; it has no formulation to build")


#: Share of the available memory a k-medoids selection's dense N x N matrices (two float64 copies at the
#: peak of their construction) may take.
DENSE_MEMORY_SHARE = 0.5


def _dense_fits(n_items: int, selection: str) -> None:
    """Refuse, by name, a k-medoids selection whose dense ``N x N`` dissimilarity would not fit in memory."""
    need = 2 * 8 * float(n_items) ** 2
    avail = float(available_bytes())
    if need > DENSE_MEMORY_SHARE * avail:
        raise InvalidInputError(
            f"selection: {selection!r} builds a dense {n_items} x {n_items} dissimilarity ({need / 2**30:.1f} GiB at "
            f"its peak), more than {DENSE_MEMORY_SHARE:.0%} of the {avail / 2**30:.1f} GiB available; use "
            "selection='stratified' (the default, no N x N matrix) or a subset of the items")


# ------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Selection:
    """A named way of choosing ``k`` items from source scores.

    Attributes
    ----------
    name : str
    build : callable
        ``build(Y_source, k, seed) -> Formulation`` (module-level, so it pickles).
    method : str
        Registered method that solves the formulation.
    options : mapping
        Method options.
    description : str
    draw : callable, optional
        A sampling design instead of an optimisation: ``draw(Y_source, k, seed) -> (items, weights)``,
        each shape (k,), the weights being the shares of the items each drawn item stands for (sum 1).
        ``build`` and ``method`` are then unused.
    """

    name: str
    build: Callable[..., Any]
    method: str
    options: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    draw: Callable[..., Any] | None = None


_SELECTIONS: dict[str, Selection] = {}


def register_selection(name: str, build: Callable[..., Any] | None, method: str, *,
                       options: Mapping[str, Any] | None = None, description: str = "",
                       draw: Callable[..., Any] | None = None) -> Selection:
    """Register a selection: ``build(Y_source, k, seed) -> Formulation`` solved by ``method``, or a sampling
    design ``draw(Y_source, k, seed) -> (items, weights)`` (then ``build`` may be None).

    The fidelity benchmark and :func:`compress` then accept ``name``.
    """
    if draw is not None:
        if not callable(draw):
            raise InvalidInputError(f"draw: expected a callable draw(Y_source, k, seed), got {describe(draw)}")
        build = build if build is not None else _no_build
    if not isinstance(name, str) or not name or ":" in name:
        raise InvalidInputError(f"name: expected a non-empty selection name without ':', got {name!r}")
    if not callable(build):
        raise InvalidInputError(f"build: expected a callable build(Y_source, k, seed), got {describe(build)}")
    if not isinstance(method, str):
        raise InvalidInputError(f"method: expected a registered method name, got {describe(method)}")
    s = Selection(name, build, method, dict(options or {}), description, draw)
    _SELECTIONS[name] = s
    return s


def selection_names() -> list[str]:
    """Names of the registered selections."""
    return list(_SELECTIONS)


def get_selection(name: str) -> Selection:
    """The selection called ``name`` (an error lists the known ones)."""
    if not isinstance(name, str) or name not in _SELECTIONS:
        raise InvalidInputError(f"selection: unknown selection {name!r}; selections: {', '.join(_SELECTIONS)}")
    return _SELECTIONS[name]


register_selection("stratified", None, "stratified-sample", draw=stratified_draw,
                   description="one item drawn from each of k equal-count strata of the items sorted by their "
                               "difficulty for the strongest sources (seeded); design weights for the estimators")
register_selection("random", anchor_kmedoids, "random", description="k items drawn uniformly at random (seeded)")
register_selection("kmedoids", anchor_kmedoids, "fasterpam",
                   description="AnchorPoints: k-medoids on 1 - Pearson of the items' source scores, FasterPAM")
register_selection("kmedoids-highs", anchor_kmedoids, "highs",
                   description="the same k-medoids problem solved exactly by HiGHS (proven optimum or gap)")
register_selection("irt-anchor", irt_kmedoids, "fasterpam",
                   description="tinyBenchmarks: k-medoids on the items' 2PL parameters (a_i, b_i), FasterPAM")


# ------------------------------------------------------------------ checks
def _axes_doc(Y: np.ndarray) -> str:
    return f"shape {Y.shape}: {Y.shape[0]} models (rows) x {Y.shape[1]} items (columns)"


def check_matrix(Y: Any, k: int | None = None, name: str = "Y") -> tuple[np.ndarray, np.ndarray | None]:
    """A models x items score matrix (and its column labels when ``Y`` is a DataFrame).

    Raises a message that says which axis is which, and suggests ``Y.T`` when
    the shape can only make sense transposed (``k`` not below the number of
    columns while the rows could hold it).
    """

    labels = None
    if hasattr(Y, "columns") and hasattr(Y, "to_numpy"):
        labels = np.asarray(Y.columns)
    A = check_scores(Y, name, ndim=(2,), axes=("model", "item"), shape_doc="(models, items)")
    M, N = A.shape
    if M < 2 and N >= 2:
        raise InvalidInputError(f"{name}: expected at least 2 models (rows) to learn from, got {_axes_doc(A)}")
    if k is not None:
        if k >= N:
            hint = (f"; if your rows are items and columns models, pass {name}.T" if k < M else "")
            raise InvalidInputError(
                f"k: expected 1 <= k < {N}, the number of items (columns of {name}), got k = {k} with "
                f"{name} of {_axes_doc(A)}{hint}"
            )
    if N < 2:
        raise InvalidInputError(f"{name}: expected at least 2 items (columns), got {_axes_doc(A)}"
                                + (f"; if your rows are items, pass {name}.T" if M >= 2 else ""))
    return A, labels


# ------------------------------------------------------------------ selection
@dataclass(frozen=True, eq=False)
class SelectionResult:
    """Selected items and how they were found.

    Attributes
    ----------
    items : ndarray of int64, shape (k,)
        Sorted item indices.
    selection : str
    result : benchsel.formulations.core.result.Result
        The solver's result (objective, bound, gap, termination, seconds).
    seconds : float
        Wall seconds of building and solving.
    weights : ndarray, shape (k,), optional
        A sampling design's weights of ``items`` (the share of the items each stands for), in the order
        of ``items``.
    """

    items: np.ndarray
    selection: str
    result: Any
    seconds: float
    weights: np.ndarray | None = None


def _log(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"benchsel: {msg}", file=sys.stderr, flush=True)


def select_items(Y_source: Any, k: int, selection: str = "kmedoids", *, seed: int = 0, time_limit: float | None = 60.0,
                 verbose: bool = False, **options: Any) -> SelectionResult:
    """Choose ``k`` items from the source models' scores.

    Parameters
    ----------
    Y_source : array_like, shape (S, N)
        Source models (rows) x items (columns).
    k : int
        Items to select, ``1 <= k < N``.
    selection : str
        A registered selection (:func:`selection_names`).
    seed : int
    time_limit : float, optional
        Seconds for the solver.
    verbose : bool
        Progress lines on stderr.
    **options
        Method options, overriding the selection's own.
    """

    s = get_selection(selection)
    Y, _ = check_matrix(Y_source, None, "Y_source")
    k = check_int(k, "k", low=1)
    check_matrix(Y, k, "Y_source")
    t0 = time.perf_counter()
    if s.draw is not None:
        if options:
            raise InvalidInputError(f"options: selection {selection!r} is a sampling design and takes no options, "
                                    f"got {', '.join(sorted(options))}")
        drawn, w = s.draw(Y, k, seed)
        order = np.argsort(drawn, kind="stable")
        items, weights = np.asarray(drawn, dtype=np.int64)[order], np.asarray(w, dtype=float)[order]
        dt = time.perf_counter() - t0
        res = Result(selection=items, objective=math.nan, bound=None, gap=None, feasible=True,
                     termination=Termination.CONVERGED, method=s.method, seed=seed, build_seconds=0.0,
                     solve_seconds=dt, formulation="sampling design")
        _log(verbose, f"selection {selection!r}: {items.size} items drawn in {dt:.2f} s")
        return SelectionResult(items, selection, res, dt, weights)
    _log(verbose, f"selection {selection!r}: building the problem from {_axes_doc(Y)}")
    f = s.build(Y, k, seed)
    _log(verbose, f"selection {selection!r}: solving with {s.method!r} (time limit {time_limit} s)")
    res = solve(f, s.method, time_limit=time_limit, seed=seed, **{**dict(s.options), **options})
    if not res.has_solution:
        raise InvalidInputError(f"selection: {selection!r} ({s.method}) found no selection: "
                                f"{res.termination} {res.extra.get('error', '')}")
    items = np.asarray(res.selection, dtype=np.int64)
    dt = time.perf_counter() - t0
    _log(verbose, f"selection {selection!r}: {items.size} items in {dt:.2f} s ({res.termination})")
    return SelectionResult(items, selection, res, dt)


# ------------------------------------------------------------------ one call
@dataclass(eq=False)
class Compressed:
    """A k-item subset of a benchmark and an estimator fitted on the source models.

    Attributes
    ----------
    items : ndarray of int64, shape (k,)
        Selected item indices (columns of the matrix given to :func:`compress`).
    estimator : benchsel.formulations.estimation.Estimator
        Fitted; its columns are ``items`` in this order.
    selection : SelectionResult
    item_labels : ndarray, shape (k,), optional
        Column labels of the selected items when the matrix was a DataFrame.
    n_items : int
        Items of the full benchmark.
    fit_seconds : float
    source : benchsel.solvers.saved.SourceScores, optional
        The source scores and settings :func:`compress` used (for :meth:`save`).
    """

    items: np.ndarray
    estimator: Any
    selection: SelectionResult
    n_items: int
    item_labels: np.ndarray | None = None
    fit_seconds: float = 0.0
    source: Any = field(default=None, repr=False)

    def save(self, path: Any) -> Any:
        """Save into the folder ``path`` (JSON + arrays, no pickle; see :mod:`benchsel.solvers.saved`)."""
        return save_compressed(self, path)

    @property
    def k(self) -> int:
        return int(self.items.size)

    def subset(self, Y: Any) -> Any:
        """The selected columns of a models x items matrix of the full benchmark, shape (models, k).

        A DataFrame keeps its labels: when :func:`compress` was given a DataFrame, its columns are
        taken by item label (a named error lists labels it lacks), otherwise by position.
        """
        frame = _is_frame(Y)
        src_labels = None if self.source is None else self.source.item_labels
        if frame and src_labels is not None and self.item_labels is not None:
            missing = [lab for lab in self.item_labels.tolist() if lab not in set(Y.columns)]
            if missing:
                raise InvalidInputError(f"Y: expected columns for every selected item label, missing {len(missing)} "
                                        f"of {self.k}: {_some(missing)}")
            sub = Y.loc[:, list(self.item_labels)]
            check_matrix(sub, None, "Y")
            return sub
        A, _ = check_matrix(Y, None, "Y")
        if A.shape[1] != self.n_items:
            hint = " (it looks transposed: pass Y.T)" if A.shape[0] == self.n_items else ""
            raise InvalidInputError(f"Y: expected {self.n_items} items (columns), got {_axes_doc(A)}{hint}")
        if frame:
            return Y.iloc[:, self.items]
        return A[:, self.items]

    def _aligned(self, Y_items: Any) -> tuple[Any, Any]:
        """(scores in the order of :attr:`items`, the model index of a DataFrame or None)."""
        if not _is_frame(Y_items):
            return Y_items, None
        if self.item_labels is None:  # compress saw no labels: by position
            return Y_items.to_numpy(), Y_items.index
        cols = list(Y_items.columns)
        want = self.item_labels.tolist()
        missing = [c for c in want if c not in set(cols)]
        extra = [c for c in cols if c not in set(want)]
        if missing or extra or len(cols) != len(want):
            parts = []
            if missing:
                parts.append(f"missing {len(missing)} selected item label(s): {_some(missing)}")
            if extra:
                parts.append(f"{len(extra)} label(s) that are not selected items: {_some(extra)}")
            if not parts:
                parts.append("repeated labels")
            raise InvalidInputError(
                f"Y_items: expected one column per selected item, labelled as c.item_labels ({self.k} labels), got "
                f"{'; '.join(parts)} (c.subset(Y_full) takes the selected columns of a full-benchmark frame)")
        return Y_items.loc[:, want].to_numpy(), Y_items.index

    def predict(self, Y_items: Any) -> Any:
        """Estimated full-benchmark mean score of each new model, shape (models,).

        Parameters
        ----------
        Y_items : array_like or pandas.DataFrame, shape (models, k)
            New models (rows) scored on the selected items (columns). An
            array is read by position (columns in the order of :attr:`items`);
            a DataFrame's columns are matched to :attr:`item_labels` by label.

        Returns
        -------
        ndarray of shape (models,), or a pandas.Series indexed by the DataFrame's models
        """
        A, index = self._aligned(Y_items)
        est = self.estimator.predict(A)
        return _series(est, index, "estimate")

    def predict_interval(self, Y_items: Any, alpha: float = 0.1) -> tuple[Any, Any]:
        """A ``1 - alpha`` interval for each new model's full-benchmark mean score.

        Parameters
        ----------
        Y_items : array_like or pandas.DataFrame, shape (models, k)
            As for :meth:`predict`.
        alpha : float
            Miscoverage, ``0 < alpha < 1``.

        Returns
        -------
        low, high : ndarray of shape (models,) (Series for a DataFrame)
        """
        A, index = self._aligned(Y_items)
        lo, hi = self.estimator.predict_interval(A, alpha=alpha)
        return _series(lo, index, "low"), _series(hi, index, "high")

    def route(self, Y_items: Any) -> Any:
        """Which estimate each new model gets (``"stacked"`` or ``"model-assisted"`` for the default
        estimator; the estimator's name for the others), shape (models,)."""
        A, index = self._aligned(Y_items)
        if hasattr(self.estimator, "route"):
            r = self.estimator.route(A)
        else:
            r = np.full(np.asarray(self.estimator.predict(A)).shape[0], self.estimator.name, dtype=object)
        return _series(np.asarray(r, dtype=object), index, "route")


def _is_frame(Y: Any) -> bool:
    return hasattr(Y, "columns") and hasattr(Y, "index") and hasattr(Y, "to_numpy")


def _some(labels: list[Any], n: int = 5) -> str:
    return ", ".join(map(repr, labels[:n])) + (" ..." if len(labels) > n else "")


def _series(values: np.ndarray, index: Any, name: str) -> Any:
    if index is None:
        return values
    import pandas as pd

    return pd.Series(values, index=index, name=name)


def compress(Y: Any, k: int, *, selection: str = DEFAULT_SELECTION, estimator: str = DEFAULT_ESTIMATOR, seed: int = 0,
             time_limit: float | None = 60.0, verbose: bool = False,
             selection_options: Mapping[str, Any] | None = None,
             estimator_options: Mapping[str, Any] | None = None) -> Compressed:
    """Choose ``k`` items of a benchmark and fit an estimator of the full score on them.

    Parameters
    ----------
    Y : array_like or pandas.DataFrame, shape (models, items)
        Scores (binary or continuous) of the models you already evaluated on
        every item: rows are models, columns are items. More models than
        items is fine.
    k : int
        Items to keep, ``1 <= k < items``.
    selection : str
        How to choose the items (:func:`selection_names`): ``"stratified"``
        (default: one item from each of ``k`` strata of difficulty, drawn with
        ``seed``), ``"kmedoids"``, ``"kmedoids-highs"``, ``"irt-anchor"``,
        ``"random"``.
    estimator : str
        Estimator of the full score (:func:`benchsel.formulations.estimation.estimator_names`);
        the default ``"auto"`` gives each new model the stacked estimate when
        it lies inside the sources' range and the model-assisted one outside
        (:meth:`Compressed.route` says which). A sampling design's weights go
        to estimators with a ``weights`` option unless ``estimator_options``
        sets them.
    seed : int
        Seeds the selection and the estimator (where they draw).
    time_limit : float, optional
        Seconds for the selection's solver.
    verbose : bool
        Progress lines on stderr.
    selection_options, estimator_options : mapping, optional
        Passed to the selection's method and to the estimator.

    Returns
    -------
    Compressed
        ``items``, the fitted ``estimator`` and ``predict(Y_new[:, items])``.
    """

    A, labels = check_matrix(Y, None, "Y")
    k = check_int(k, "k", low=1)
    check_matrix(A, k, "Y")
    est_opts = dict(estimator_options or {})
    est = get_estimator(estimator, **est_opts)  # unknown names and options refused before any work
    sel = select_items(A, k, selection, seed=seed, time_limit=time_limit, verbose=verbose,
                       **dict(selection_options or {}))
    if sel.weights is not None and "weights" in est.get_params() and "weights" not in est_opts:
        est.set_params(weights=sel.weights)
    t0 = time.perf_counter()
    _log(verbose, f"estimator {estimator!r}: fitting on {A.shape[0]} source models")
    est.fit(A, sel.items)
    dt = time.perf_counter() - t0
    _log(verbose, f"estimator {estimator!r}: fitted in {dt:.2f} s")
    src = source_scores(Y, A, selection=selection, estimator=estimator, seed=seed, time_limit=time_limit,
                        selection_options=selection_options)
    return Compressed(sel.items, est, sel, int(A.shape[1]), None if labels is None else labels[sel.items], dt, src)


def load_compressed(path: str | Path, *, check: bool = True) -> Any:
    """Load a compression saved by :meth:`Compressed.save <benchsel.solvers.compression.Compressed.save>`.

    Parameters
    ----------
    path : str or Path
        The folder.
    check : bool
        Compare the refitted estimator's estimates of the source models with
        the stored ones (an error when they differ by more than the stored
        tolerance, e.g. after an upgrade changed the estimator).

    Returns
    -------
    Compressed
        With the refitted estimator, the selection (its solver result as
        stored), the labels and ``source`` (so it can be saved again).
    """

    folder = Path(path)
    meta = _read_meta(folder)
    where = repr(str(folder / META))
    z = _read_arrays(folder / ARRAYS)
    try:
        scores = np.asarray(z["source_scores"], dtype=float)
        stored = np.asarray(z["source_predictions"], dtype=float)
        items = np.asarray(z["items"], dtype=np.int64)
        src, sel, est_meta = meta["source"], meta["selection"], meta["estimator"]
        n_items = int(meta["n_items"])
        params = {k: _decode(v, z) for k, v in est_meta["params"].items()}
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidInputError(f"path: {where} is a damaged saved compression (missing or bad {e})") from None
    if fingerprint_scores(scores) != src.get("fingerprint"):
        raise InvalidInputError(f"path: the source scores in {str(folder / ARRAYS)!r} do not match the fingerprint "
                                f"in {where} (the files are damaged or come from two saves)")
    if items.tolist() != list(meta.get("items", [])) or scores.shape[1] != n_items:
        raise InvalidInputError(f"path: {where} and {ARRAYS} disagree on the items (damaged save)")
    est = get_estimator(est_meta["name"], **params)
    t0 = time.perf_counter()
    est.fit(scores, items)
    fit_seconds = time.perf_counter() - t0
    if check:
        pred = np.asarray(est.predict(scores[:, items]), dtype=float)
        atol = float(meta.get("check", {}).get("atol", ATOL))
        diff = float(np.max(np.abs(pred - stored))) if pred.shape == stored.shape else math.inf
        if not diff <= atol:
            raise InvalidInputError(
                f"path: refitting estimator {est_meta['name']!r} on the saved source scores does not reproduce the "
                f"saved estimates of the source models (largest difference {diff:.3g} > {atol:g}); the estimator "
                f"changed since benchsel {meta.get('benchsel_version', '?')} saved it. Pass check=False to use the "
                "refitted estimator anyway"
            )
    r = sel.get("result", {})
    result = Result(
        selection=np.sort(items), objective=_num(r.get("objective")), bound=r.get("bound"), gap=r.get("gap"),
        feasible=bool(r.get("feasible", True)), termination=Termination(r.get("termination", "feasible")),
        method=str(r.get("method", sel.get("method", ""))), seed=r.get("seed"),
        build_seconds=float(r.get("build_seconds") or 0.0), solve_seconds=float(r.get("solve_seconds") or 0.0),
        formulation=str(r.get("formulation", "")),
    )
    labels = meta.get("item_labels")
    c = Compressed(items=items, estimator=est,
                   selection=SelectionResult(items=np.sort(items), selection=str(sel["name"]), result=result,
                                             seconds=float(sel.get("seconds", 0.0))),
                   n_items=n_items, item_labels=None if labels is None else np.asarray(labels, dtype=object),
                   fit_seconds=fit_seconds)
    c.source = SourceScores(
        scores=scores, model_labels=_arr(src.get("model_labels")), item_labels=_arr(src.get("item_labels")),
        fingerprint=src["fingerprint"], selection=str(sel["name"]), estimator=str(est_meta["name"]),
        seed=int(meta.get("seed", 0)), time_limit=sel.get("time_limit"),
        selection_options=dict(sel.get("options") or {}), reader=dict(src.get("reader") or {}),
    )
    return c
