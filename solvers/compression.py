"""The commonest job in one call: a models x items score matrix -> a k-item subset and a fitted estimator.

::

    from benchsel import compress
    c = compress(Y, k=50)                 # Y: (models, items), rows are models
    c.items                               # the 50 selected item indices
    c.predict(Y_new[:, c.items])          # estimated full-benchmark scores of new models

A *selection* turns source scores into a subset. It is a formulation built
from the source matrix plus a registered method that solves it (see
:func:`benchsel.solvers.methods.register_method`); :func:`register_selection`
adds one by name, and the fidelity benchmark (``benchsel run fidelity``) runs
every registered selection. Built in:

* ``"random"`` -- ``k`` items drawn uniformly (seeded);
* ``"kmedoids"`` -- AnchorPoints: k-medoids on ``1 - Pearson`` correlation of
  the items' source score vectors, solved by FasterPAM;
* ``"kmedoids-highs"`` -- the same k-medoids problem solved by HiGHS (a proven
  optimum, or the best found and its gap at the time limit);
* ``"irt-anchor"`` -- tinyBenchmarks' IRT anchors: k-medoids (FasterPAM) on the
  items' fitted 2PL parameters ``(a_i, b_i)``, Euclidean;
* ``"holocosm"`` -- multi-metric scores (models x items x metrics): HoloCosm's
  ranking-risk constrained selection, with its source-assisted estimates per metric;
* ``"repcore"`` -- RepCore: anchors of the sources' aligned hidden states
  (``selection_options={"hidden_states": H}``), with RepCore's ridge extrapolator;
* ``"bayesame"`` -- BayesAME: the size chosen by its stopping rule on held-out
  sources (``k`` is the most), the items by information gain, posterior estimates.

Selections live in :mod:`benchsel.solvers.selections`.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.result import Result, Termination
from benchsel.formulations.core.validation import check_run_settings
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.groups import GroupTree

from .saved import (
    ARRAYS,
    ATOL,
    META,
    SourceScores,
    _arr,
    _decode,
    _num,
    check_new_groups,
    check_reader,
    check_saved_tasks,
    check_scale,
    fingerprint_scores,
    read_saved,
    save_compressed,
    saved_params,
    source_scores,
)
from .selections import (
    Selection,
    SelectionResult,
    _axes_doc,
    _log,
    _run_selection,
    anchor_kmedoids,
    check_matrix,
    check_selection_input,
    check_tensor,
    get_selection,
    irt_kmedoids,
    register_selection,
    select_items,
    selection_names,
)
from .suite_selection import groups_of, select_suite, suite_spec, tasks_of

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
    tasks : list of str or None
        A suite's task names (``compress(..., tasks=...)``), the columns of :meth:`predict_tasks`.
    groups : list of str or None
        A suite's groups of tasks (lm-eval groups), the columns of :meth:`predict_groups`.
    group_tree : GroupTree or None
        The groups' members and weightings (saved with the compression).
    """

    items: np.ndarray
    estimator: Any
    selection: SelectionResult
    n_items: int
    item_labels: np.ndarray | None = None
    fit_seconds: float = 0.0
    source: Any = field(default=None, repr=False)
    group_tree: GroupTree | None = None

    def save(self, path: Any) -> Any:
        """Save into the folder ``path`` (JSON + arrays, no pickle; see :mod:`benchsel.solvers.saved`)."""
        return save_compressed(self, path)

    @property
    def k(self) -> int:
        return int(self.items.size)

    @property
    def tasks(self) -> list[str] | None:
        """The suite's task names (the columns of :meth:`predict_tasks`), or None without tasks."""
        names = getattr(self.estimator, "tasks_", None)
        return None if names is None else list(names)

    @property
    def groups(self) -> list[str] | None:
        """The suite's group names (the columns of :meth:`predict_groups`), or None without groups."""
        names = getattr(self.estimator, "groups_", None)
        return list(names) if names else None

    @property
    def n_metrics(self) -> int | None:
        """Metrics of multi-metric scores (3-D), None for a (models, items) matrix."""
        return self.estimator.n_metrics_

    def subset(self, Y: Any) -> Any:
        """The selected columns of a models x items matrix of the full benchmark, shape (models, k)
        (of multi-metric scores, shape (models, k, metrics)); one model's vector, shape (n_items,), gives
        shape (k,).

        A DataFrame keeps its labels: when :func:`compress` was given a DataFrame, its columns are
        taken by item label (a named error lists labels it lacks), otherwise by position.
        """
        if self.n_metrics is not None:
            A3 = check_tensor(Y, None, "Y")
            if A3.shape[1:] != (self.n_items, self.n_metrics):
                raise InvalidInputError(f"Y: expected scores of shape (models, {self.n_items}, {self.n_metrics}) "
                                        f"(models, items, metrics), got shape {A3.shape}")
            return A3[:, self.items, :]
        frame = _is_frame(Y)
        src_labels = None if self.source is None else self.source.item_labels
        if frame and src_labels is not None and self.item_labels is not None:
            missing = [lab for lab in self.item_labels.tolist() if lab not in set(Y.columns)]
            if missing:
                raise InvalidInputError(f"Y: expected columns for every selected item label, missing {len(missing)} "
                                        f"of {self.k}: {_some(missing)}")
            sub = Y.loc[:, list(self.item_labels)]
            check_matrix(sub, None, "Y", min_models=1)
            return sub
        if not frame and np.ndim(Y) == 1:  # one model's scores on every item, shape (n_items,)
            return self.subset(np.asarray(Y)[None, :])[0]
        A, _ = check_matrix(Y, None, "Y", min_models=1)
        if A.shape[1] != self.n_items:
            hint = " (it looks transposed: pass Y.T)" if A.shape[0] == self.n_items else ""
            raise InvalidInputError(f"Y: expected {self.n_items} items (columns), got {_axes_doc(A)}{hint}")
        if frame:
            return Y.iloc[:, self.items]
        return A[:, self.items]

    def _aligned(self, Y_items: Any) -> tuple[Any, Any]:
        """(scores in the order of :attr:`items`, the model index of a DataFrame or None), refused when read
        with another metric than the sources or on another scale (:func:`~benchsel.solvers.saved.check_scale`)."""
        A, index = self._by_label(Y_items)
        if _is_frame(Y_items):
            check_reader(self, Y_items.attrs, "Y_items")
            check_new_groups(self, Y_items.attrs, list(Y_items.index), "Y_items")
        X = np.asarray(A) if isinstance(A, np.ndarray) or np.ndim(A) == 2 else None
        if X is not None and X.ndim == 2 and X.dtype.kind in "biuf":
            check_scale(self, X.astype(float), "Y_items")
        return A, index

    def _by_label(self, Y_items: Any) -> tuple[Any, Any]:
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
        Y_items : array_like or pandas.DataFrame, shape (models, k), or array_like, shape (models, k, metrics)
            New models (rows) scored on the selected items (columns). An
            array is read by position (columns in the order of :attr:`items`);
            a DataFrame's columns are matched to :attr:`item_labels` by label.
            Multi-metric compressions take (models, k, metrics).

        Returns
        -------
        ndarray of shape (models,) (of multi-metric scores, (models, metrics)), or a pandas.Series
        indexed by the DataFrame's models
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
        low, high : ndarray of shape (models,) (of multi-metric scores, (models, metrics); Series for a
            DataFrame)
        """
        A, index = self._aligned(Y_items)
        lo, hi = self.estimator.predict_interval(A, alpha=alpha)
        return _series(lo, index, "low"), _series(hi, index, "high")

    def _suite(self) -> Any:
        if self.tasks is None:
            raise InvalidInputError("tasks: this compression has no tasks (compress(Y, k, tasks=...) keeps a suite's "
                                    "tasks); predict gives its one estimate")
        return self.estimator

    def predict_tasks(self, Y_items: Any) -> Any:
        """Each new model's estimated score on each task of the suite, shape (models, tasks).

        Parameters
        ----------
        Y_items : array_like or pandas.DataFrame, shape (models, k)
            As for :meth:`predict`.

        Returns
        -------
        ndarray of shape (models, tasks), columns in the order of :attr:`tasks` (a DataFrame indexed by
        the models, columns the tasks, for a DataFrame)
        """
        return self._parts("task", Y_items)

    def predict_tasks_interval(self, Y_items: Any, alpha: float = 0.1) -> tuple[Any, Any]:
        """A ``1 - alpha`` interval for each new model's score on each task.

        Returns
        -------
        low, high : ndarray of shape (models, tasks) (DataFrames for a DataFrame)
        """
        return self._parts("task", Y_items, alpha)

    def predict_groups(self, Y_items: Any) -> Any:
        """Each new model's estimated score on each group of the suite, shape (models, groups), columns in the
        order of :attr:`groups` (a DataFrame for a DataFrame): the group's weighted sum of the task estimates
        (:attr:`group_tree` says how each group weights its members). ``Y_items`` as for :meth:`predict`.
        """
        return self._parts("group", Y_items)

    def predict_groups_interval(self, Y_items: Any, alpha: float = 0.1) -> tuple[Any, Any]:
        """A ``1 - alpha`` interval for each new model's score on each group (the tasks' half-widths added in
        quadrature, weighted: the tasks' designs are independent).

        Returns
        -------
        low, high : ndarray of shape (models, groups) (DataFrames for a DataFrame)
        """
        return self._parts("group", Y_items, alpha)

    def _parts(self, kind: str, Y_items: Any, alpha: float | None = None) -> Any:
        """Task or group (``kind``) estimates of the suite, or with ``alpha`` their intervals ``(low, high)``."""
        est = self._suite()
        names = self.tasks if kind == "task" else self.groups
        if names is None:
            raise InvalidInputError("groups: this compression has no groups (compress keeps the lm-eval groups of "
                                    "the logs it reads, or takes groups={group: [members]})")
        A, index = self._aligned(Y_items)
        if alpha is None:
            return _frame(getattr(est, f"predict_{kind}s")(A), index, names, kind)
        lo, hi = getattr(est, f"predict_{kind}s_interval")(A, alpha=alpha)
        return _frame(lo, index, names, kind), _frame(hi, index, names, kind)

    def route(self, Y_items: Any) -> Any:
        """Which estimate each new model gets (``"stacked"`` or ``"model-assisted"`` for the default
        estimator; the estimator's name for the others), shape (models,)."""
        A, index = self._aligned(Y_items)
        return _series(np.asarray(self.estimator.route(A), dtype=object), index, "route")


def _is_frame(Y: Any) -> bool:
    return hasattr(Y, "columns") and hasattr(Y, "index") and hasattr(Y, "to_numpy")


def _some(labels: list[Any], n: int = 5) -> str:
    return ", ".join(map(repr, labels[:n])) + (" ..." if len(labels) > n else "")


def _series(values: np.ndarray, index: Any, name: str) -> Any:
    if index is None:
        return values
    import pandas as pd

    return pd.Series(values, index=index, name=name)


def _frame(values: np.ndarray, index: Any, columns: Any, name: str = "task") -> Any:
    if index is None:
        return values
    import pandas as pd

    return pd.DataFrame(values, index=index, columns=pd.Index(columns, name=name))


def _saved_option(v: Any) -> Any:
    """A selection option as stored with a saved compression (data such as hidden states by description)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)) and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
        return list(v)
    return f"<{type(v).__name__}, not saved>"


def compress(Y: Any, k: int, *, selection: str = DEFAULT_SELECTION, estimator: str | None = None, seed: int = 0,
             time_limit: float | None = 60.0, verbose: bool = False,
             selection_options: Mapping[str, Any] | None = None,
             estimator_options: Mapping[str, Any] | None = None, tasks: Any = None, aggregate: Any = None,
             chance: Any = None, groups: Any = None) -> Compressed:
    """Choose ``k`` items of a benchmark and fit an estimator of the full score on them.

    Parameters
    ----------
    Y : array_like or pandas.DataFrame, shape (models, items), or array_like, shape (models, items, metrics)
        Scores (binary or continuous) of the models you already evaluated on
        every item: rows are models, columns are items. More models than
        items is fine. Multi-metric scores (3-D) go to ``selection="holocosm"``.
    k : int
        Items to keep, ``1 <= k < items`` (for ``"bayesame"``, the most it may keep).
    selection : str
        How to choose the items (:func:`selection_names`): ``"stratified"``
        (default: one item from each of ``k`` strata of difficulty, the draw of
        1000 (seeded) that reproduces the sources' full scores best;
        ``selection_options={"draws": 1}`` for one plain draw), ``"kmedoids"``,
        ``"kmedoids-highs"``, ``"irt-anchor"``, ``"random"``; ``"holocosm"`` (3-D scores), ``"repcore"`` (needs
        ``selection_options={"hidden_states": H}``), ``"bayesame"`` (the size
        by BayesAME's stopping rule; ``c.selection.result.extra`` says how).
    estimator : str, optional
        Estimator of the full score (:func:`benchsel.formulations.estimation.estimator_names`).
        Default: the selection's own (``"source-assisted"`` for ``"holocosm"``,
        ``"repcore-ridge"`` for ``"repcore"``, ``"bayesame"`` for ``"bayesame"``),
        else ``"auto"``, which gives each new model the stacked estimate when
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
        Passed to the selection (its build options, then its method) and to the estimator.
    tasks : sequence of str, shape (items,), optional
        A suite's task of each item (SPEC F10). The budget ``k`` is split across the tasks (at least 2
        items each; 75 % in proportion to their sizes, the rest where the sources' scores vary most),
        the selection runs inside each task, and the estimator (default ``"auto"``) estimates each
        task on its own items: :meth:`Compressed.predict_tasks` gives the task scores,
        :meth:`Compressed.predict` the suite's. Default: a reader's table's own tasks
        (``Y.attrs["tasks"]``, e.g. lm-eval tasks) when it has two or more; ``False`` pools every item
        into one benchmark.
    aggregate : {"macro", "micro"} or mapping, optional
        The suite's score from the task scores: ``"macro"`` (default; the mean of the tasks, as
        leaderboards and HELM report), ``"micro"`` (weighted by the tasks' sizes, as lm-eval's groups)
        or ``{task: weight}``.
    chance : float or mapping, optional
        Chance levels ``0 <= b < 1`` (one for every task or ``{task: b}``): task scores are rescaled to
        ``max(0, (s - b) / (1 - b))`` (the Open LLM Leaderboard v2's normalisation).
    groups : mapping or False, optional
        Groups of tasks, ``{group: [tasks or groups]}``, estimated as weighted sums of their tasks
        (:meth:`Compressed.predict_groups`). Default: the lm-eval groups of a reader's table
        (``Y.attrs["groups"]``) when its tasks are used; then, unless ``aggregate`` is given, each group
        weights its members as lm-eval reported it (by size or plainly, inferred from the reported
        scores) and the suite is the plain mean of the top groups and ungrouped tasks. With
        ``aggregate`` (or groups given here) a group's weights are the suite's restricted to its tasks.
        ``False``: no groups.

    Returns
    -------
    Compressed
        ``items``, the fitted ``estimator`` and ``predict(Y_new[:, items])``.
    """

    seed, time_limit = check_run_settings(seed, time_limit)  # before anything is read or solved
    s = get_selection(selection)
    A, labels, k = check_selection_input(s, Y, k, "Y")  # the one check of Y and k: what follows trusts them
    name = estimator if estimator is not None else (s.estimator or DEFAULT_ESTIMATOR)
    est_opts = dict(estimator_options or {})
    task_list = tasks_of(Y, tasks)
    spec = None
    if task_list is None:
        for opt, v in (("aggregate", aggregate), ("chance", chance), ("groups", groups or None)):
            if v is not None:
                raise InvalidInputError(f"{opt}: given without tasks; pass tasks= (one task name per item) to "
                                        "compress a suite")
    else:
        if A.ndim != 2:
            raise InvalidInputError(f"tasks: suites take one metric, scores of shape (models, items); got shape "
                                    f"{A.shape}")
        hierarchy, report = groups_of(Y, tasks, groups)
        models = [str(m) for m in Y.index] if hasattr(Y, "index") and hasattr(Y, "columns") else []
        spec = suite_spec(task_list, int(A.shape[1]), aggregate, chance, groups=hierarchy, report=report,
                          models=models)
        inner = DEFAULT_ESTIMATOR if name == "suite" else name
        est_opts = {"tasks": spec.labels, "aggregate": spec.aggregate, "chance": spec.chance, "estimator": inner,
                    "estimator_options": est_opts or None, "groups": spec.group_weights}
        name = "suite"
    est = get_estimator(name, **est_opts)  # unknown names and options refused before any work
    if A.ndim == 3 and not est.multi_metric:
        raise InvalidInputError(f"estimator: {name!r} estimates one metric; the scores of selection {selection!r} "
                                f"have shape {A.shape} (models, items, metrics): use 'source-assisted' (default), "
                                "'mean' or 'cluster-weighted'")
    if spec is None:
        sel = _run_selection(s, A, k, seed=seed, time_limit=time_limit, verbose=verbose,
                             options=dict(selection_options or {}))
    else:
        sel = select_suite(s, A, k, spec, seed=seed, time_limit=time_limit, verbose=verbose,
                           options=dict(selection_options or {}))
    if sel.weights is not None and "weights" in est.get_params() and "weights" not in est_opts:
        est.set_params(weights=sel.weights)
    t0 = time.perf_counter()
    _log(verbose, f"estimator {name!r}: fitting on {A.shape[0]} source models")
    est.fit(A, sel.items)
    dt = time.perf_counter() - t0
    _log(verbose, f"estimator {name!r}: fitted in {dt:.2f} s")
    opts = {o: _saved_option(v) for o, v in dict(selection_options or {}).items()}
    src = source_scores(Y, A, selection=selection, estimator=name, seed=seed, time_limit=time_limit,
                        selection_options=opts)
    return Compressed(sel.items, est, sel, int(A.shape[1]), None if labels is None else labels[sel.items], dt, src,
                      None if spec is None else spec.tree)


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
    meta, z = read_saved(folder, check)
    where = repr(str(folder / META))
    try:
        scores = np.asarray(z["source_scores"], dtype=float)
        stored = np.asarray(z["source_predictions"], dtype=float)
        items = np.asarray(z["items"], dtype=np.int64)
        src, sel, est_meta = meta["source"], meta["selection"], meta["estimator"]
        n_items = int(meta["n_items"])
        params = {k: _decode(v, z) for k, v in est_meta["params"].items()}
    except (KeyError, TypeError, ValueError, RecursionError) as e:
        raise InvalidInputError(f"path: {where} is a damaged saved compression (missing or bad {e})") from None
    if fingerprint_scores(scores) != src.get("fingerprint"):
        raise InvalidInputError(f"path: the source scores in {str(folder / ARRAYS)!r} do not match the fingerprint "
                                f"in {where} (the files are damaged or come from two saves)")
    if items.tolist() != list(meta.get("items", [])) or scores.shape[1] != n_items:
        raise InvalidInputError(f"path: {where} and {ARRAYS} disagree on the items (damaged save)")
    est = get_estimator(est_meta["name"], **saved_params(est_meta["name"], params))
    t0 = time.perf_counter()
    est.fit(scores, items)
    fit_seconds = time.perf_counter() - t0
    check_saved_tasks(meta, est, where)
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
                   fit_seconds=fit_seconds,
                   group_tree=None if meta.get("groups") is None else GroupTree.from_json(meta["groups"]))
    c.source = SourceScores(
        scores=scores, model_labels=_arr(src.get("model_labels")), item_labels=_arr(src.get("item_labels")),
        fingerprint=src["fingerprint"], selection=str(sel["name"]), estimator=str(est_meta["name"]),
        seed=int(meta.get("seed", 0)), time_limit=sel.get("time_limit"),
        selection_options=dict(sel.get("options") or {}), reader=dict(src.get("reader") or {}),
    )
    return c
