"""Heuristics and baselines for :class:`benchsel.formulations.RankingRiskReconstruction` (HoloCosm).

``"swap"`` is the paper's feasibility-first exchange search: candidates are
ordered by the key ``(0, R_mean)`` when feasible (``R_rank <= eps + rank_tol``)
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
* :func:`anchorpoints` — AnchorPoints: k-medoids (:class:`~benchsel.formulations.KMedoids`, FasterPAM from a BUILD
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

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import Termination
from benchsel.formulations.core.validation import check_rng
from benchsel.formulations.holocosm import RankingRiskReconstruction

from .._common import Clock, output, progress


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
        ``R_rank <= eps + rank_tol`` (always True without the ranking constraint).
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


def _keys(rm: np.ndarray, rr: np.ndarray, eps: float, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised key parts: (infeasible flag, violation V); feasible when ``rr <= eps + tol``."""
    if not np.isfinite(eps):  # no ranking constraint
        return np.zeros(np.shape(rr), dtype=bool), np.zeros(np.shape(rr))
    infeas = rr > eps + tol
    V = np.where(infeas, (rr - eps) / max(eps, 1e-12), 0.0)
    return infeas, V


def _key_tuple(infeas: bool, V: float, rm: float) -> tuple:
    return (1, float(V), float(rm)) if infeas else (0, float(rm))


def swap_search(f: RankingRiskReconstruction, *, rng: np.random.Generator, proposals: int = 64, max_swaps: int = 80,
                patience: int = 1, rank_constraint: bool = True, init: Any = None, clock: Clock | None = None,
                verbose: bool = False) -> SwapOutcome:
    """Feasibility-first exchange search of the paper.

    Parameters
    ----------
    f : RankingRiskReconstruction
    rng : numpy.random.Generator
    proposals : int
        Distinct swaps sampled per round (64).
    max_swaps : int
        Accepted swaps after which the search stops (80).
    patience : int
        Consecutive rounds without improvement before stopping (default 1, as in the paper).
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
        inf_b, V_b = _keys(f.bank_R_mean, f.bank_R_rank, eps, f.rank_tol)
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
    i0, v0 = _keys(np.asarray(rm0), np.asarray(rr0), eps, f.rank_tol)
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
        inf_c, V_c = _keys(rm, rr, eps, f.rank_tol)
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


#: Options both searches take.
SEARCH_OPTIONS = (
    Option("rank_constraint", True, "bool", doc="keep the ranking-risk constraint (False: the ablation)"),
    Option("init", None, "any", doc="a start of B items; default the best reference-bank subset"),
    Option("verbose", False, "bool", doc="progress lines"),
)


SWAP_OPTIONS = (
    Option("proposals", 64, "int", low=1, doc="candidate swaps scored per round"),
    Option("max_swaps", 80, "int", low=0, doc="cap on accepted swaps"),
    Option("patience", 1, "int", low=1, doc="rounds without improvement before stopping (default 1, as in the paper)"),
    *SEARCH_OPTIONS,
)


@register_method(
    "swap",
    kind="heuristic",
    accepts=RankingRiskReconstruction,
    description="HoloCosm feasibility-first exchange search from the best reference-bank subset",
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
