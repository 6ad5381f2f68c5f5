"""Heuristics and baselines for :class:`benchsel.formulations.RankingRiskReconstruction` (HoloCosm).

``"swap"`` is SPEC F1's feasibility-first exchange search: candidates are
ordered by the key ``(0, R_mean)`` when feasible (``R_rank <= eps + 1e-9``)
and ``(1, V, R_mean)`` otherwise, ``V = (R_rank - eps) / max(eps, 1e-12)``.
It starts from the reference-bank subset with the smallest key; each round
samples up to ``proposals`` (64) distinct swaps ``(i in S, j not in S)``,
takes the best and accepts it only if its key is strictly smaller; it stops
when a round brings no improvement or after ``max_swaps`` (80) accepted swaps.
A swap changes the source sums by ``X[:, j, :] - X[:, i, :]``, so a proposal
is scored in ``O(M*K + pairs)`` (see :class:`benchsel.formulations.holocosm.RiskTerms`).

Baselines, in the same terms (a formulation built on the source tensor, its
budget ``B`` and a seed; each returns a :class:`BaselineSelection` whose
``estimate`` maps target responses on the selection to full-score estimates):

* :func:`random_baseline` — uniform random ``B`` items, plain means (or the
  source-assisted correction with ``correction=True``);
* :func:`anchorpoints` — AnchorPoints: k-medoids (F4, FasterPAM from a BUILD
  start) on ``1 - Pearson`` correlation of items' source response vectors
  for one metric, or on the AverageMetric (:func:`average_metric`), with
  cluster-size weights;
* :func:`kmeans_baseline` — Lloyd k-means on concatenated source responses
  (metrics scaled by the spread of source means), nearest item per centre,
  cluster-size weights;
* :func:`swap_unconstrained` — the exchange search without the ranking
  constraint (ablation), with the source-assisted correction.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsel.formulations.holocosm import FEAS_TOL, RankingRiskReconstruction, weighted_estimate
from benchsel.formulations.kmedoids import KMedoids
from benchsel.solvers.errors import InvalidInputError
from benchsel.solvers.options import Option
from benchsel.solvers.registry import register_method
from benchsel.solvers.result import Termination
from benchsel.solvers.validation import as_array, check_int, check_rng

from ._common import Clock, output, progress

__all__ = [
    "swap_search",
    "SwapOutcome",
    "BaselineSelection",
    "random_baseline",
    "anchorpoints",
    "average_metric",
    "kmeans_baseline",
    "swap_unconstrained",
    "holocosm_selection",
]


# --------------------------------------------------------------------------- exchange search
@dataclass(frozen=True)
class SwapOutcome:
    """Result of :func:`swap_search`.

    Attributes
    ----------
    selection : ndarray of int64, shape (B,)
        Best subset seen (sorted).
    key : tuple
        Its feasibility-first key.
    feasible : bool
        ``R_rank <= eps + 1e-9`` (always True without the ranking constraint).
    swaps, rounds : int
        Accepted swaps and sampled rounds.
    start : int
        Index of the starting subset in the reference bank (-1 for a given start).
    stopped : Termination
    """

    selection: np.ndarray
    key: tuple
    feasible: bool
    swaps: int
    rounds: int
    start: int
    stopped: Termination
    R_mean: float
    R_rank: float


def _keys(rm: np.ndarray, rr: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised key parts: (infeasible flag, violation V)."""
    if not np.isfinite(eps):  # no ranking constraint
        return np.zeros(np.shape(rr), dtype=bool), np.zeros(np.shape(rr))
    infeas = rr > eps + FEAS_TOL
    V = np.where(infeas, (rr - eps) / max(eps, 1e-12), 0.0)
    return infeas, V


def _key_tuple(infeas: bool, V: float, rm: float) -> tuple:
    return (1, float(V), float(rm)) if infeas else (0, float(rm))


def swap_search(f: RankingRiskReconstruction, *, rng: np.random.Generator, proposals: int = 64, max_swaps: int = 80,
                patience: int = 1, rank_constraint: bool = True, init: Any = None, clock: Clock | None = None,
                verbose: bool = False) -> SwapOutcome:
    """Feasibility-first exchange search of SPEC F1.

    Parameters
    ----------
    f : RankingRiskReconstruction
    rng : numpy.random.Generator
    proposals : int
        Distinct swaps sampled per round (64).
    max_swaps : int
        Accepted swaps after which the search stops (80).
    patience : int
        Consecutive rounds without improvement before stopping (SPEC: 1).
    rank_constraint : bool
        False: every subset counts as feasible (key ``(0, R_mean)``), the ablation.
    init : array_like of int, shape (B,), optional
        Start here instead of the best reference-bank subset.
    clock : Clock, optional
        Time budget; the best subset so far is returned when it expires.

    Returns
    -------
    SwapOutcome
    """
    N, B = f.n_items, f.budget
    Xt = f.item_vectors
    mu = f._mu_flat
    terms = f.terms
    eps = f.eps if rank_constraint else np.inf
    if init is None:
        inf_b, V_b = _keys(f.bank_R_mean, f.bank_R_rank, eps)
        start = int(np.lexsort((f.bank_R_mean, V_b, inf_b))[0])
        S0 = f.bank[start]
    else:
        start = -1
        S0 = f.as_selection(init, "init")
        if S0.size != B:
            raise InvalidInputError(f"init: expected {B} items (the budget), got {S0.size}")
    in_S = np.zeros(N, dtype=bool)
    in_S[S0] = True
    sel = np.flatnonzero(in_S)
    uns = np.flatnonzero(~in_S)
    n_out = N - B
    total = B * n_out
    m = min(proposals, total)
    S1 = Xt[sel].sum(axis=0)
    rm0, rr0 = terms.risks(S1 / B - mu)
    i0, v0 = _keys(np.asarray(rm0), np.asarray(rr0), eps)
    cur = _key_tuple(bool(i0), float(v0), float(rm0))
    cur_rr = float(rr0)
    swaps = rounds = idle = 0
    stopped = Termination.CONVERGED
    while True:
        if swaps >= max_swaps:
            stopped = Termination.ITERATION_LIMIT
            break
        if clock is not None and clock.expired():
            stopped = Termination.TIME_LIMIT
            break
        rounds += 1
        r = rng.choice(total, size=m, replace=False)
        ip, jp = np.divmod(r, n_out)
        cand = S1 + (Xt[uns[jp]] - Xt[sel[ip]])  # (m, M*K)
        rm, rr = terms.risks(cand / B - mu)
        inf_c, V_c = _keys(rm, rr, eps)
        b = int(np.lexsort((rm, V_c, inf_c))[0])
        new = _key_tuple(bool(inf_c[b]), float(V_c[b]), float(rm[b]))
        if new < cur:
            i, j = sel[ip[b]], uns[jp[b]]
            sel[ip[b]], uns[jp[b]] = j, i
            S1 = cand[b]
            cur, cur_rr = new, float(rr[b])
            swaps += 1
            idle = 0
            progress(verbose, f"swap {swaps}: key {cur}")
        else:
            idle += 1
            if idle >= patience:
                break
    sel_sorted = np.sort(sel).astype(np.int64)
    return SwapOutcome(selection=sel_sorted, key=cur, feasible=cur[0] == 0, swaps=swaps, rounds=rounds, start=start,
                       stopped=stopped, R_mean=float(cur[-1]), R_rank=cur_rr)


SWAP_OPTIONS = (
    Option("proposals", 64, "int", low=1, doc="candidate swaps scored per round"),
    Option("max_swaps", 80, "int", low=0, doc="cap on accepted swaps"),
    Option("patience", 1, "int", low=1, doc="rounds without improvement before stopping (SPEC: 1)"),
    Option("rank_constraint", True, "bool", doc="keep the ranking-risk constraint (False: the ablation)"),
    Option("init", None, "any", doc="a start of B items; default the best reference-bank subset"),
    Option("verbose", False, "bool", doc="progress lines"),
)


@register_method(
    "swap",
    kind="heuristic",
    accepts=RankingRiskReconstruction,
    description="HoloCosm feasibility-first exchange search from the best reference-bank subset (SPEC F1)",
    options=SWAP_OPTIONS,
)
def run_swap(f: RankingRiskReconstruction, *, time_limit: float | None, seed: int | None, proposals: int,
             max_swaps: int, patience: int, rank_constraint: bool, init: Any, verbose: bool):
    rng = check_rng(seed)
    clock = Clock(time_limit)
    out = swap_search(f, rng=rng, proposals=proposals, max_swaps=max_swaps, patience=patience,
                      rank_constraint=rank_constraint, init=init, clock=clock, verbose=verbose)
    return output(out.selection, clock, stopped=out.stopped, swaps=out.swaps, rounds=out.rounds,
                  start_bank_index=out.start, found_feasible=bool(f.check(out.selection).feasible),
                  rank_constraint=rank_constraint)


# --------------------------------------------------------------------------- baselines
@dataclass(frozen=True)
class BaselineSelection:
    """A baseline's selection and the estimator that goes with it.

    Attributes
    ----------
    method : str
    selection : ndarray of int64, shape (B,)
        Selected items, sorted.
    weights : ndarray, shape (B,) or None
        Aggregation weights aligned with ``selection`` (None: plain mean).
    correction : bool
        Add the source-assisted correction of the formulation (SPEC F1).
    extra : dict
    """

    method: str
    selection: np.ndarray
    weights: np.ndarray | None = None
    correction: bool = False
    extra: dict = field(default_factory=dict)

    def estimate(self, f: RankingRiskReconstruction, Y: Any) -> np.ndarray:
        """Estimated full scores, shape (G, K), from target responses ``Y`` on the selection, shape (G, B, K)
        (in the units of ``f``'s ``X`` as given)."""
        if self.correction:
            base = weighted_estimate(Y, self.weights)
            return base + f.correction(self.selection)
        return weighted_estimate(Y, self.weights)


def holocosm_selection(f: RankingRiskReconstruction, seed: int = 0, **options: Any) -> BaselineSelection:
    """HoloCosm (``"swap"``) with its source-assisted estimator, as a :class:`BaselineSelection`."""
    out = swap_search(f, rng=check_rng(seed), **options)
    return BaselineSelection("holocosm", out.selection, None, True,
                             {"swaps": out.swaps, "feasible": out.feasible, "R_mean": out.R_mean, "R_rank": out.R_rank})


def swap_unconstrained(f: RankingRiskReconstruction, seed: int = 0, **options: Any) -> BaselineSelection:
    """The exchange search without the ranking constraint (ablation), source-assisted estimator."""
    out = swap_search(f, rng=check_rng(seed), rank_constraint=False, **options)
    return BaselineSelection("swap_unconstrained", out.selection, None, True,
                             {"swaps": out.swaps, "R_mean": out.R_mean, "R_rank": f.ranking_risk(out.selection)})


def random_baseline(f: RankingRiskReconstruction, seed: int = 0, *, correction: bool = False) -> BaselineSelection:
    """Uniform random ``B`` items (``f.uniform_selection``, the constraint ignored); plain means, or with the
    source-assisted correction."""
    sel = f.uniform_selection(check_rng(seed))
    return BaselineSelection("random_sac" if correction else "random", sel, None, bool(correction))


def average_metric(X: Any) -> np.ndarray:
    """AverageMetric: min-max normalise each metric with source statistics and average the metrics.

    Each metric ``k`` is mapped by ``(X - lo_k) / (hi_k - lo_k)`` with ``lo_k``,
    ``hi_k`` the smallest and largest source-model mean (falling back to the
    item-level range, then 1, when the means coincide).

    Parameters
    ----------
    X : array_like, shape (M, N, K)
        Oriented source responses.

    Returns
    -------
    ndarray, shape (M, N)
    """
    X = as_array(X, "X", ndim=3, shape_doc="(M, N, K)")
    mu = X.mean(axis=1)
    lo, hi = mu.min(axis=0), mu.max(axis=0)
    span = hi - lo
    item_span = X.max(axis=(0, 1)) - X.min(axis=(0, 1))
    span = np.where(span > 0, span, np.where(item_span > 0, item_span, 1.0))
    return ((X - lo) / span).mean(axis=2)


def anchorpoints(f: RankingRiskReconstruction, metric: int | str = "average", seed: int = 0) -> BaselineSelection:
    """AnchorPoints on one metric (``metric=k``) or on the AverageMetric (``metric="average"``).

    k-medoids (``B`` medoids) on ``1 - Pearson`` correlation between items'
    source response vectors (FasterPAM from a BUILD start, through the
    registered ``"fasterpam"`` runner); each item joins its most-correlated
    medoid; the weights are cluster sizes / N. Needs an ``N x N`` matrix.
    """
    X = f.X
    if isinstance(metric, str):
        if metric != "average":
            raise InvalidInputError(f"metric: expected a metric index or 'average', got {metric!r}")
        F = average_metric(X)
        name = "anchorpoints_avg"
    else:
        k = check_int(metric, "metric", low=0, high=f.n_metrics - 1)
        F = X[:, :, k]
        name = f"anchorpoints_m{k}"
    from .kmedoids import run_fasterpam

    km = KMedoids.from_features(F.T, f.budget, metric="correlation")
    out = run_fasterpam(km, time_limit=None, seed=seed)
    sel = np.sort(np.asarray(out.selection, dtype=np.int64))
    return BaselineSelection(name, sel, km.cluster_weights(sel), False, {"cost": km.evaluate(sel)})


def kmeans_baseline(f: RankingRiskReconstruction, seed: int = 0, *, max_iter: int = 100) -> BaselineSelection:
    """Lloyd k-means (k-means++ start) on items' concatenated source responses.

    Each metric is divided by the standard deviation of the source models'
    full-benchmark means (1 when that is 0); ``B`` clusters; each centre keeps
    its nearest not-yet-kept item (centres in order of their nearest distance);
    weights are cluster sizes / N.
    """
    from scipy.cluster.vq import kmeans2

    X = f.X
    M, N, K = X.shape
    sd = f.mu.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    F = (X / sd).transpose(1, 0, 2).reshape(N, M * K)
    rng = check_rng(seed)
    B = f.budget
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty clusters: kmeans2 keeps their centre
        centres, labels = kmeans2(F, B, iter=check_int(max_iter, "max_iter", low=1), minit="++", seed=rng)
    d2 = ((F[None, :, :] - centres[:, None, :]) ** 2).sum(axis=2) if B * N * M * K <= 5e7 else _sqdist(centres, F)
    taken = np.zeros(N, dtype=bool)
    reps = np.empty(B, dtype=np.int64)
    for c in np.argsort(d2.min(axis=1), kind="stable"):
        row = np.where(taken, np.inf, d2[c])
        j = int(np.argmin(row))
        reps[c] = j
        taken[j] = True
    sizes = np.bincount(labels, minlength=B).astype(float) / N
    order = np.argsort(reps)
    return BaselineSelection("kmeans", reps[order], sizes[order], False, {"empty_clusters": int((sizes == 0).sum())})


def _sqdist(C: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, shape (len(C), len(F))."""
    return np.maximum((C**2).sum(1)[:, None] - 2 * C @ F.T + (F**2).sum(1)[None, :], 0.0)
