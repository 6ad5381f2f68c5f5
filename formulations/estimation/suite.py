"""Suites of tasks (SPEC F10): the budget split across tasks, per-task estimates and the suite's aggregate.

A suite has tasks ``1..T``; task ``t`` has ``N_t`` items and a model's task score is its mean over them,
rescaled by a chance level ``b_t`` where the suite rescales (``max(0, (s - b) / (1 - b))``). The suite's
score is the *macro* average of the task scores, the *micro* (size-weighted) average, or a weighted
average with the user's weights.

* :func:`allocate` splits a budget of ``k`` items across the tasks: at least ``k_min`` items each, the
  rest minimising the aggregate's variance ``sum_t w_t^2 sigma_t^2 (1/k_t - 1/N_t)`` (Neyman). The
  objective is separable and convex in ``k_t``, so greedy marginal allocation is exact (Fox 1966).
* :class:`Suite` estimates each task with an estimator of its own (the default ``"auto"``, SPEC F9)
  fitted on that task's items only, and aggregates; the tasks' designs are independent, so the
  variances of the tasks' estimates add (:func:`sum_half_width`).
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option

from .base import Estimator, check_alpha, get_estimator, register_estimator, single_thread
from .groups import check_group_weights, group_matrix

__all__ = ["AGGREGATES", "K_MIN", "PROPORTIONAL_SHARE", "Suite", "allocate", "allocation_variance",
           "chance_levels", "check_tasks", "item_tasks", "suite_allocation", "sum_half_width", "task_variances",
           "task_weights"]

#: Smallest number of items of a task (two give a within-task variance, hence an interval).
K_MIN = 2
#: Share of the budget allocated in proportion to the tasks' sizes before the Neyman allocation of the rest
#: (pure Neyman starves tasks whose sources vary little; measured in docs/suites.md).
PROPORTIONAL_SHARE = 0.75
AGGREGATES = ("macro", "micro")
#: The name of the one task of a benchmark given without tasks.
ONE_TASK = "all"


# ------------------------------------------------------------------ tasks and weights
def check_tasks(tasks: Any, n_items: int, name: str = "tasks") -> tuple[list[str], np.ndarray]:
    """Task names in order of first appearance and each item's task code.

    Parameters
    ----------
    tasks : sequence, shape (N,)
        A task name per item (text or whole numbers; read as text).
    n_items : int
        ``N``, the items of the benchmark.

    Returns
    -------
    names : list of str, length T
    codes : ndarray of int64, shape (N,)
        ``names[codes[i]]`` is item ``i``'s task.
    """
    if isinstance(tasks, (str, bytes)) or isinstance(tasks, Mapping):
        raise InvalidInputError(f"{name}: expected one task name per item ({n_items} names), got "
                                f"{type(tasks).__name__} {str(tasks)[:60]!r}")
    vals = tasks.tolist() if hasattr(tasks, "tolist") else list(tasks) if isinstance(tasks, Sequence) else None
    if vals is None:
        raise InvalidInputError(f"{name}: expected a sequence of {n_items} task names, got {type(tasks).__name__}")
    if len(vals) != n_items:
        raise InvalidInputError(f"{name}: expected one task name per item, {n_items} names (the columns of the "
                                f"scores), got {len(vals)}")
    names: list[str] = []
    index: dict[str, int] = {}
    codes = np.empty(n_items, dtype=np.int64)
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, (str, int)) or (isinstance(v, str) and not v):
            raise InvalidInputError(f"{name}: expected task names (non-empty text or whole numbers), got {v!r} for "
                                    f"item {i}")
        s = str(v)
        j = index.get(s)
        if j is None:
            j = index[s] = len(names)
            names.append(s)
        codes[i] = j
    return names, codes


def task_weights(aggregate: Any, names: Sequence[str], sizes: np.ndarray) -> np.ndarray:
    """Each task's weight in the suite's score (summing to 1), shape (T,).

    Parameters
    ----------
    aggregate : {"macro", "micro"} or mapping
        ``"macro"``: equal weights; ``"micro"``: weights ``N_t / N``; a mapping ``{task: weight}`` with a
        non-negative weight for every task (normalised to sum 1).
    names : sequence of str, length T
    sizes : ndarray, shape (T,)
        Items per task.
    """
    T = len(names)
    if isinstance(aggregate, str):
        if aggregate == "macro":
            return np.full(T, 1.0 / T)
        if aggregate == "micro":
            return np.asarray(sizes, dtype=float) / float(np.sum(sizes))
        raise InvalidInputError(f"aggregate: expected 'macro', 'micro' or a mapping {{task: weight}}, got "
                                f"{aggregate!r}")
    if not isinstance(aggregate, Mapping):
        raise InvalidInputError(f"aggregate: expected 'macro', 'micro' or a mapping {{task: weight}}, got "
                                f"{type(aggregate).__name__}")
    keys = {str(k) for k in aggregate}
    missing = [t for t in names if t not in keys]
    extra = sorted(keys - set(names))
    if missing or extra:
        raise InvalidInputError(
            f"aggregate: expected a weight for each of the {T} tasks and no others; "
            + "; ".join(p for p in (f"missing {', '.join(map(repr, missing[:5]))}" if missing else "",
                                    f"unknown {', '.join(map(repr, extra[:5]))}" if extra else "") if p)
            + f" (tasks: {', '.join(map(repr, list(names)[:8]))}{' ...' if T > 8 else ''})")
    byname = {str(k): v for k, v in aggregate.items()}
    w = np.empty(T)
    for j, t in enumerate(names):
        v = byname[t]
        try:
            w[j] = float(v)
        except (TypeError, ValueError):
            w[j] = math.nan
        if isinstance(v, bool) or not (math.isfinite(w[j]) and w[j] >= 0):
            raise InvalidInputError(f"aggregate: expected a finite non-negative weight for task {t!r}, got {v!r}")
    if w.sum() <= 0:
        raise InvalidInputError("aggregate: expected at least one positive task weight, got all zeros")
    return w / w.sum()


def chance_levels(chance: Any, names: Sequence[str]) -> np.ndarray | None:
    """Each task's chance level ``0 <= b < 1``, shape (T,), or None (no rescaling).

    ``chance`` is None, one number for every task, or a mapping ``{task: level}`` (tasks it omits are not
    rescaled, i.e. ``b = 0``; a task it names must exist).
    """
    if chance is None:
        return None
    if isinstance(chance, Mapping):
        unknown = sorted(str(k) for k in chance if str(k) not in set(names))
        if unknown:
            raise InvalidInputError(f"chance: tasks {', '.join(map(repr, unknown[:5]))} are not in the suite "
                                    f"(tasks: {', '.join(map(repr, list(names)[:8]))})")
        given = {str(k): v for k, v in chance.items()}
        raw = [given.get(t, 0.0) for t in names]
    else:
        raw = [chance] * len(names)
    b = np.empty(len(names))
    for j, v in enumerate(raw):
        try:
            b[j] = float(v)
        except (TypeError, ValueError):
            b[j] = math.nan
        if isinstance(v, bool) or not 0.0 <= b[j] < 1.0:
            raise InvalidInputError(f"chance: expected chance levels 0 <= b < 1 (e.g. 0.25 for four options), got "
                                    f"{v!r} for task {names[j]!r}")
    return b


def rescale(s: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """Task scores ``s`` (..., T) rescaled by chance levels ``b`` (T,): ``max(0, (s - b) / (1 - b))``."""
    if b is None:
        return s
    return np.maximum(0.0, (s - b) / (1.0 - b))


def task_variances(Y: np.ndarray, codes: np.ndarray, n_tasks: int) -> np.ndarray:
    """Each task's within-task item variance predicted from the sources, shape (T,).

    The mean over source models of the variance of their scores across the task's items (``ddof=1``;
    0 for a task of one item).

    Parameters
    ----------
    Y : ndarray, shape (S, N)
    codes : ndarray of int64, shape (N,)
    n_tasks : int
    """
    out = np.zeros(n_tasks)
    for t in range(n_tasks):
        cols = Y[:, codes == t]
        if cols.shape[1] > 1:
            out[t] = float(np.var(cols, axis=1, ddof=1).mean())
    return out


def item_tasks(df: Any) -> list[str] | None:
    """Each column's task of a table the readers made (``df.attrs["tasks"]``), or None when it has none.

    Parameters
    ----------
    df : pandas.DataFrame, shape (models, items)

    Returns
    -------
    list of str, length items, or None
        None when the table carries no task labels or they do not match its columns (a table whose
        columns were cut since it was read).
    """
    attrs = getattr(df, "attrs", None)
    tasks = attrs.get("tasks") if isinstance(attrs, dict) else None
    if not isinstance(tasks, list) or len(tasks) != np.shape(df)[1]:
        return None
    return [str(t) for t in tasks]


# ------------------------------------------------------------------ allocation
def allocation_variance(k: Any, sizes: Any, sigma2: Any, weights: Any) -> float:
    """The aggregate's variance ``sum_t w_t^2 sigma_t^2 (1/k_t - 1/N_t)`` of an allocation ``k`` (T,)."""
    kk, N = np.asarray(k, dtype=float), np.asarray(sizes, dtype=float)
    w2s = np.asarray(weights, dtype=float) ** 2 * np.asarray(sigma2, dtype=float)
    return float(np.sum(w2s * (1.0 / kk - 1.0 / N)))


def allocate(sizes: Any, sigma2: Any, k: int, *, weights: Any = None, k_min: int = K_MIN, lower: Any = None,
             names: Sequence[str] | None = None) -> np.ndarray:
    """Integers ``lower_t <= k_t <= N_t`` with ``sum k_t = k`` minimising :func:`allocation_variance`.

    Greedy marginal allocation: from the lower bounds, each further item goes to the task whose variance
    drops most, ``w_t^2 sigma_t^2 / (k_t (k_t + 1))`` (ties: the task with the smallest share ``k_t/N_t``,
    then the first). The objective is separable and convex in each ``k_t``, so the result is optimal.

    Parameters
    ----------
    sizes : array_like of int, shape (T,)
        ``N_t``, items of each task.
    sigma2 : array_like, shape (T,)
        Within-task item variances (non-negative).
    k : int
        The budget, ``sum_t lower_t <= k <= sum_t N_t``.
    weights : array_like, shape (T,), optional
        The tasks' weights in the aggregate (default equal).
    k_min : int
        Fewest items of a task (every task needs ``N_t >= k_min``).
    lower : array_like of int, shape (T,), optional
        Further lower bounds (e.g. a proportional floor), raised to ``k_min`` and capped at ``N_t``.
    names : sequence of str, optional
        Task names for messages.

    Returns
    -------
    ndarray of int64, shape (T,)
    """
    N = np.asarray(sizes, dtype=np.int64)
    T = N.size
    label = list(names) if names is not None else [f"task {j}" for j in range(T)]
    s2 = np.asarray(sigma2, dtype=float)
    w = np.full(T, 1.0 / T) if weights is None else np.asarray(weights, dtype=float)
    if s2.shape != (T,) or w.shape != (T,) or not (np.all(np.isfinite(s2)) and np.all(s2 >= 0)):
        raise InvalidInputError(f"sigma2: expected {T} finite non-negative variances and {T} weights, got shapes "
                                f"{s2.shape} and {w.shape}")
    small = [f"{label[j]!r} ({int(N[j])})" for j in range(T) if N[j] < k_min]
    if small:
        raise InvalidInputError(f"tasks: every task needs at least k_min = {k_min} items (for an interval), got "
                                f"{', '.join(small[:5])}; merge small tasks or drop them")
    low = np.full(T, k_min, dtype=np.int64)
    if lower is not None:
        low = np.minimum(np.maximum(low, np.asarray(lower, dtype=np.int64)), N)
    if not int(low.sum()) <= k <= int(N.sum()):
        raise InvalidInputError(f"k: expected {int(low.sum())} <= k <= {int(N.sum())} for {T} tasks (at least "
                                f"{k_min} items each), got k = {k}; for a smaller budget pool the tasks "
                                "(compress(..., tasks=False), benchsel compress --pool)")
    kt = low.copy()
    w2s = w * w * s2
    heap = [(-w2s[j] / (kt[j] * (kt[j] + 1)), kt[j] / N[j], j) for j in range(T) if kt[j] < N[j]]
    heapq.heapify(heap)
    for _ in range(int(k - kt.sum())):
        _, _, j = heapq.heappop(heap)
        kt[j] += 1
        if kt[j] < N[j]:
            heapq.heappush(heap, (-w2s[j] / (kt[j] * (kt[j] + 1)), kt[j] / N[j], j))
    return kt


def suite_allocation(Y: np.ndarray, codes: np.ndarray, names: Sequence[str], k: int, weights: np.ndarray, *,
                     share: float = PROPORTIONAL_SHARE, k_min: int = K_MIN) -> np.ndarray:
    """The allocation :func:`compress` uses: ``share`` of ``k`` in proportion to the tasks' sizes (at least
    ``k_min`` each), the rest by :func:`allocate` on the sources' within-task variances; shape (T,).

    Parameters
    ----------
    Y : ndarray, shape (S, N)
    codes : ndarray of int64, shape (N,)
    names : sequence of str, length T
    k : int
    weights : ndarray, shape (T,)
        The tasks' weights in the aggregate (:func:`task_weights`).
    """
    T = len(names)
    N = np.bincount(codes, minlength=T)
    floor = np.floor(share * k * N / N.sum()).astype(np.int64)
    floor = np.minimum(np.maximum(floor, k_min), N)
    if floor.sum() > k:  # the floor would take more than the budget: the bounds alone
        floor = np.full(T, k_min, dtype=np.int64)
    return allocate(N, task_variances(Y, codes, T), k, weights=weights, k_min=k_min, lower=floor, names=names)


def sum_half_width(se: np.ndarray, dof: np.ndarray, weights: np.ndarray, alpha: float) -> np.ndarray:
    """Half-width of the ``1 - alpha`` t-interval of ``sum_t w_t x_t`` for independent estimates ``x_t``.

    The variances add, ``V = sum_t w_t^2 se_t^2``; the degrees of freedom are Welch and Satterthwaite's,
    ``V^2 / sum_t (w_t^2 se_t^2)^2 / dof_t`` (infinite ``dof_t``: a known variance; all infinite: the normal
    quantile). Half-width ``t_{1 - alpha/2, nu} sqrt(V)``; shape (targets,).

    Parameters
    ----------
    se : ndarray, shape (targets, T)
        Standard errors (non-negative).
    dof : ndarray, shape (targets, T)
        Degrees of freedom (positive; ``inf`` allowed).
    weights : ndarray, shape (T,)
    alpha : float
    """
    from scipy.stats import t as student

    v = np.square(se) * np.square(weights)[None, :]
    V = v.sum(axis=1)
    den = np.sum(np.where(np.isfinite(dof), np.square(v) / np.where(np.isfinite(dof), dof, 1.0), 0.0), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = np.where(den > 0, np.square(V) / np.where(den > 0, den, 1.0), np.inf)
    return student.ppf(1 - alpha / 2, nu) * np.sqrt(V)


# ------------------------------------------------------------------ borrowing strength
class Borrowed:
    """One task's GREG estimate with the target's subset mean on the other tasks as the auxiliary variable.

    Each item ``i`` of the task gets a least-squares line ``a_i + b_i z`` fitted on the sources, ``z``
    being a model's mean over the other tasks' selected items; for a target with ``z_t``, the prediction
    ``f(i) = a_i + b_i z_t`` (clipped to the sources' range) is corrected by the design-weighted mean of
    its residuals on the task's selected items: ``mean_i f(i) + sum_j w_j (y_j - f(j))``. The other
    tasks' samples are drawn independently of this task's, so the estimate stays design-unbiased.
    Interval: ``t_{k-1}`` times ``sqrt((1 - k/N) (w . w) s^2)``, ``s^2`` the residuals' sample variance.

    Parameters
    ----------
    Y : ndarray, shape (S, N_t)
        The sources' scores on the task's items.
    z : ndarray, shape (S,)
        The sources' mean over the other tasks' selected items.
    local : ndarray of int64, shape (k_t,)
        The task's selected items (indices into its items).
    weights : ndarray, shape (k_t,)
        Design weights (sum 1).
    """

    def __init__(self, Y: np.ndarray, z: np.ndarray, local: np.ndarray, weights: np.ndarray) -> None:
        zc = z - z.mean()
        vz = float(zc @ zc)
        self.b = (zc @ (Y - Y.mean(axis=0))) / vz if vz > 0 else np.zeros(Y.shape[1])
        self.a = Y.mean(axis=0) - self.b * z.mean()
        self.local, self.w = local, weights
        self.range = (float(Y.min()), float(Y.max()))
        self.fpc = max(0.0, 1.0 - local.size / Y.shape[1])

    def estimate(self, y: np.ndarray, z: np.ndarray, alpha: float | None) -> tuple[np.ndarray, np.ndarray]:
        """(estimates, half-widths (zeros when ``alpha`` is None)), each shape (T,); ``y`` (T, k_t), ``z`` (T,)."""
        f = np.clip(self.a[None, :] + z[:, None] * self.b[None, :], *self.range)
        res = y - f[:, self.local]
        est = f.mean(axis=1) + res @ self.w
        k = self.local.size
        if alpha is None or k < 2:
            return est, np.zeros_like(est)
        from scipy.stats import t as student

        se = np.sqrt(self.fpc * float(self.w @ self.w) * res.var(axis=1, ddof=1))
        return est, float(student.ppf(1 - alpha / 2, k - 1)) * se


# ------------------------------------------------------------------ estimator
@register_estimator
class Suite(Estimator):
    """A suite's tasks estimated one by one and aggregated (SPEC F10).

    Task ``t``'s estimate is the inner estimator (default ``"auto"``) fitted on the sources' scores on
    that task's items with that task's selected items; it is rescaled by the chance level where one is
    given. The suite's estimate is the weighted sum of the task estimates (weights from ``aggregate``).
    Intervals: each task's own; for the suite, the tasks' designs are independent, so their variances
    add. The suite's interval joins two t-intervals with Welch-Satterthwaite degrees of freedom
    (:func:`sum_half_width`): around the suite's estimate, from the standard errors of the route each task
    takes (:meth:`Estimator._spread`: the stacked estimate's conformal quantile over the normal one, or
    the model-assisted standard error with its degrees of freedom), and around the weighted sum of the
    tasks' design-based (model-assisted) estimates, from their standard errors (a suite whose weight is
    on one task alone has that task's interval). The inner ``"auto"``
    estimator's hedge against a biased stacked estimate (its task interval joins the model-assisted
    one) is thereby made once, for the suite, instead of once per task: adding the squares of hedged
    half-widths over-covers (docs/suites.md). A task whose every item is selected is known exactly.
    Without ``tasks`` the benchmark is one task (named ``"all"``).

    Attributes (after fit)
    ----------------------
    tasks_ : list of str
        Task names, in order of first appearance in ``tasks``.
    task_weights_ : ndarray, shape (T,)
    chance_ : ndarray, shape (T,), or None
    members_ : list of Estimator, Borrowed or None
        Each task's fitted estimator (None for a fully selected task; :class:`Borrowed` with ``borrow``).
    groups_ : list of str
        Group names (``groups``; empty without), the columns of :meth:`predict_groups`.
    group_weights_ : ndarray, shape (T, G)
        Each group's weights of the tasks (a column per group, summing to 1).
    """

    name = "suite"
    description = "a suite of tasks: each task estimated on its own items, the suite's macro, micro or weighted " \
                  "average of the task estimates"
    options = (
        Option("tasks", None, "any", doc="(N,) task name of each item (None: one task)"),
        Option("aggregate", "macro", "any", doc="'macro' (mean of the tasks), 'micro' (size-weighted) or a mapping "
                                                "{task: weight}"),
        Option("chance", None, "any", doc="chance levels 0 <= b < 1 ({task: b} or one number): task scores "
                                          "rescaled to max(0, (s - b) / (1 - b))"),
        Option("estimator", "auto", "str", doc="the estimator inside each task"),
        Option("estimator_options", None, "any", doc="its options (a mapping)"),
        Option("weights", None, "any", doc="(k,) design weights of the selected items (normalised within each "
                                           "task), for an inner estimator with a weights option"),
        Option("borrow", False, "bool", doc="estimate each task by GREG with the target's mean on the other "
                                            "tasks' items as the auxiliary variable (:class:`Borrowed`) instead "
                                            "of the inner estimator"),
        Option("groups", None, "any", doc="groups of tasks, {group: {task: weight}}: each group's estimate is the "
                                          "weighted sum of its tasks' (lm-eval groups)"),
    )

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["estimator"] == self.name:
            raise InvalidInputError("estimator: the estimator inside each task cannot be 'suite' itself")
        opts = params["estimator_options"]
        if opts is not None and not isinstance(opts, Mapping):
            raise InvalidInputError(f"estimator_options: expected a mapping of the inner estimator's options, got "
                                    f"{type(opts).__name__}")
        #: the inner estimator, its options checked once (every task copies it)
        self._prototype = get_estimator(params["estimator"], **dict(opts or {}))
        if params["weights"] is not None:
            w = np.asarray(params["weights"], dtype=float)
            if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise InvalidInputError(f"weights: expected (k,) finite non-negative design weights, got shape "
                                        f"{w.shape}")
        if isinstance(params["aggregate"], str) and params["aggregate"] not in AGGREGATES:
            raise InvalidInputError(f"aggregate: expected 'macro', 'micro' or a mapping {{task: weight}}, got "
                                    f"{params['aggregate']!r}")
        if params["tasks"] is not None:  # names and mappings checked now, the length at fit
            vals = params["tasks"]
            n = len(vals.tolist() if hasattr(vals, "tolist") else vals) if not isinstance(vals, (str, Mapping)) \
                else 0
            names, codes = check_tasks(vals, n)
            sizes = np.bincount(codes, minlength=len(names))
            task_weights(params["aggregate"], names, sizes)
            chance_levels(params["chance"], names)
        if params["groups"] is not None:
            check_group_weights(params["groups"])
        return params

    # ------------------------------------------------------------ fit
    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        N = self.n_items_
        if self.params["tasks"] is None:
            names, codes = [ONE_TASK], np.zeros(N, dtype=np.int64)
        else:
            names, codes = check_tasks(self.params["tasks"], N)
        T = len(names)
        sizes = np.bincount(codes, minlength=T)
        self.tasks_ = names
        self.task_sizes_ = sizes
        self.task_weights_ = task_weights(self.params["aggregate"], names, sizes)
        self.chance_ = chance_levels(self.params["chance"], names)
        groups = self.params["groups"]
        groups = {} if groups is None else check_group_weights(groups)
        self.groups_ = list(groups)
        self.group_weights_ = group_matrix(groups, names)
        w = self.params["weights"]
        if w is not None and np.asarray(w).shape != sel.shape:
            raise InvalidInputError(f"weights: expected shape ({sel.size},), one weight per selected item, got "
                                    f"{np.asarray(w).shape}")
        sel_codes = codes[sel]
        empty = [names[t] for t in range(T) if not np.any(sel_codes == t)]
        if empty:
            raise InvalidInputError(f"selection: every task needs a selected item, tasks "
                                    f"{', '.join(map(repr, empty[:5]))} have none (compress(..., tasks=...) gives "
                                    f"each task at least {K_MIN})")
        self.columns_: list[np.ndarray] = []
        self._others = [np.flatnonzero(sel_codes != t) for t in range(T)]
        self.members_: list[Any] = []
        for t in range(T):
            items = np.flatnonzero(codes == t)
            cols = np.flatnonzero(sel_codes == t)
            local = np.searchsorted(items, sel[cols])
            self.columns_.append(cols)
            if cols.size == items.size:  # every item selected: the task's score is known
                self.members_.append(None)
                continue
            if self.params["borrow"] and T > 1:
                wt = np.ones(cols.size) if w is None else np.asarray(w, dtype=float)[cols]
                z = Y[:, sel[sel_codes != t]].mean(axis=1)
                self.members_.append(Borrowed(Y[:, items], z, local, wt / wt.sum()))
                continue
            member = self._prototype._unfitted()
            if w is not None and "weights" in member.params:
                wt = np.asarray(w, dtype=float)[cols]
                member.set_params(weights=wt / wt.sum() if wt.sum() > 0 else np.full(cols.size, 1.0 / cols.size))
            self.members_.append(member._fit_checked(Y[:, items], local, int(items.size)))

    def _check_targets(self, Yt: np.ndarray) -> None:
        for m, cols in zip(self.members_, self.columns_):
            if isinstance(m, Estimator):
                m._check_targets(Yt[:, cols])

    # ------------------------------------------------------------ estimates
    def _tasks(self, Yt: np.ndarray, alpha: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Task estimates and interval ends (low, high), each shape (T, tasks), rescaled (both ends = estimates when
        ``alpha`` is None)."""
        T = Yt.shape[0]
        est = np.empty((T, len(self.tasks_)))
        lo, hi = est.copy(), est.copy()
        for j, (m, cols) in enumerate(zip(self.members_, self.columns_)):
            Yj = Yt[:, cols]
            if m is None:
                est[:, j] = lo[:, j] = hi[:, j] = Yj.mean(axis=1)
            elif isinstance(m, Borrowed):
                e, h = m.estimate(Yj, Yt[:, self._others[j]].mean(axis=1), alpha)
                est[:, j], lo[:, j], hi[:, j] = np.clip(e, *m.range), e - h, e + h
            elif alpha is None:
                est[:, j] = lo[:, j] = hi[:, j] = m._predict(Yj)
            else:
                e, low, high = m._interval(Yj, alpha)
                est[:, j] = e
                lo[:, j] = m._clip(np.asarray(low, dtype=float))
                hi[:, j] = m._clip(np.asarray(high, dtype=float))
        chance = self.chance_
        return rescale(est, chance), rescale(lo, chance), rescale(hi, chance)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return self._tasks(Yt, None)[0] @ self.task_weights_

    def _spreads(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, ...]:
        """Each task's estimate with the standard errors (below, above) and degrees of freedom of the interval
        of the route it takes, then its design-based (model-assisted) estimate, standard error and degrees of
        freedom (the route's where the task has none); rescaled; each shape (targets, tasks)."""
        from scipy.stats import t as student

        shape = (Yt.shape[0], len(self.tasks_))
        est, se_lo, se_hi, dof = (np.zeros(shape) for _ in range(4))
        d_est, d_se, d_dof = (np.zeros(shape) for _ in range(3))
        for j, (m, cols) in enumerate(zip(self.members_, self.columns_)):
            Yj = Yt[:, cols]
            if m is None:  # every item selected: known exactly
                est[:, j] = d_est[:, j] = Yj.mean(axis=1)
                dof[:, j] = d_dof[:, j] = np.inf
                continue
            if isinstance(m, Borrowed):
                e, h = m.estimate(Yj, Yt[:, self._others[j]].mean(axis=1), alpha)
                k = m.local.size
                est[:, j] = d_est[:, j] = np.clip(e, *m.range)
                se_lo[:, j] = se_hi[:, j] = d_se[:, j] = h / float(student.ppf(1 - alpha / 2, k - 1)) if k > 1 else 0.0
                dof[:, j] = d_dof[:, j] = max(k - 1, 1)
                continue
            est[:, j], se_lo[:, j], se_hi[:, j], dof[:, j] = m._spread(Yj, alpha)
            design = m._design_se(Yj)
            if design is None:
                d_est[:, j], d_se[:, j], d_dof[:, j] = est[:, j], np.maximum(se_lo[:, j], se_hi[:, j]), dof[:, j]
            else:
                d_est[:, j], d_se[:, j], d_dof[:, j] = design
        b = self.chance_
        g = np.ones(shape[1]) if b is None else 1.0 / (1.0 - b)  # the rescaling's slope
        return (rescale(est, b), se_lo * g, se_hi * g, dof, rescale(d_est, b), d_se * g, d_dof)

    def _interval(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._aggregate_interval(Yt, alpha, self.task_weights_)

    def _aggregate_interval(self, Yt: np.ndarray, alpha: float, W: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Weighted sums of the task estimates with their ``1 - alpha`` intervals: the tasks' variances add
        (independent designs, Welch-Satterthwaite degrees of freedom), joined once with the interval around the
        same sum of the design-based estimates. ``W`` shape (T,) or (T, G); results (targets,) or (targets, G)."""
        cols = W[:, None] if W.ndim == 1 else W
        spreads = None
        out = np.zeros((3, Yt.shape[0], cols.shape[1]))
        for g in range(cols.shape[1]):
            w = cols[:, g]
            if np.count_nonzero(w) == 1:  # one task: that task's own interval
                j = int(np.flatnonzero(w)[0])
                t_est, t_lo, t_hi = self._tasks(Yt, alpha)
                out[:, :, g] = w[j] * np.stack([t_est[:, j], t_lo[:, j], t_hi[:, j]])
                continue
            if spreads is None:
                spreads = self._spreads(Yt, alpha)
            est, se_lo, se_hi, dof, d_est, d_se, d_dof = spreads
            s, d = est @ w, d_est @ w
            out[0, :, g] = s
            h_d = sum_half_width(d_se, d_dof, w, alpha)
            out[1, :, g] = np.minimum(s - sum_half_width(se_lo, dof, w, alpha), d - h_d)
            out[2, :, g] = np.maximum(s + sum_half_width(se_hi, dof, w, alpha), d + h_d)
        if W.ndim == 1:
            return out[0, :, 0], out[1, :, 0], out[2, :, 0]
        return out[0], out[1], out[2]

    def predict_tasks(self, Y_target: Any) -> np.ndarray:
        """Each target's estimated score on each task, shape (targets, T), columns in the order of
        :attr:`tasks_`.

        Parameters
        ----------
        Y_target : array_like, shape (targets, k)
            As for :meth:`predict`.
        """
        Yt = self._targets(Y_target)
        return self._tasks(Yt, None)[0]

    def predict_tasks_with_interval(self, Y_target: Any, alpha: float = 0.1
                                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Task estimates and their ``1 - alpha`` intervals, each shape (targets, T)."""
        a = check_alpha(alpha)
        Yt = self._targets(Y_target)
        with single_thread():
            return self._tasks(Yt, a)

    def predict_tasks_interval(self, Y_target: Any, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: each task's ``1 - alpha`` interval, each shape (targets, T)."""
        _, lo, hi = self.predict_tasks_with_interval(Y_target, alpha)
        return lo, hi

    # ------------------------------------------------------------ groups
    def _groups_matrix(self) -> np.ndarray:
        if not self.groups_:
            raise InvalidInputError("groups: this suite has no groups (compress keeps lm-eval's groups of the logs "
                                    "it reads; Suite(groups={group: {task: weight}}) sets them)")
        return self.group_weights_

    def predict_groups(self, Y_target: Any) -> np.ndarray:
        """Each target's estimated score on each group, shape (targets, G), columns in the order of
        :attr:`groups_`: the group's weighted sum of the task estimates."""
        W = self._groups_matrix()
        return self._tasks(self._targets(Y_target), None)[0] @ W

    def predict_groups_with_interval(self, Y_target: Any, alpha: float = 0.1
                                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group estimates and their ``1 - alpha`` intervals, each shape (targets, G): built like the suite's
        (the tasks' variances add with the group's weights; the tasks' designs are independent)."""
        W = self._groups_matrix()
        a = check_alpha(alpha)
        Yt = self._targets(Y_target)
        with single_thread():
            est, lo, hi = self._aggregate_interval(Yt, a, W)
        return est, self._clip(lo), self._clip(hi)

    def predict_groups_interval(self, Y_target: Any, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: each group's ``1 - alpha`` interval, each shape (targets, G)."""
        _, lo, hi = self.predict_groups_with_interval(Y_target, alpha)
        return lo, hi

