"""``"anneal"``: HoloCosm's search by simulated annealing over swaps, with descent and polishing (the swap scorer of
incremental risk sums).
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
from .swap import SEARCH_OPTIONS, _keys


# --------------------------------------------------------------------------- simulated annealing
class SwapScorer:
    """Incremental scores of swaps ``(i in S, j not in S)`` for a :class:`RankingRiskReconstruction`.

    With ``Em = muhat - mu`` on the ``nm`` weighted (model, metric) entries and
    ``D = dhat - d`` on the ``G`` pairs, a swap adds ``Xm[j] - Xm[i]`` to
    ``Em`` and ``Xp[j] - Xp[i]`` to ``D`` (``Xm``, ``Xp``: item responses and
    pair differences divided by ``B``), so a candidate costs ``O(nm + G)``.

    Parameters
    ----------
    f : RankingRiskReconstruction
    rank_constraint : bool
        False: every subset is feasible (the ablation).
    """

    def __init__(self, f: RankingRiskReconstruction, rank_constraint: bool = True) -> None:
        t = f.terms
        B = f.budget
        Xt = f.item_vectors
        self.mi = np.flatnonzero(t.mean_w > 0)
        self.mw = t.mean_w[self.mi]
        self.Xm = np.ascontiguousarray(Xt[:, self.mi] / B)  # (N, nm)
        self.mu = f._mu_flat[self.mi]
        self.Xp = np.ascontiguousarray((Xt[:, t.pair_a] - Xt[:, t.pair_b]) / B)  # (N, G)
        self.pd = t.pair_d
        self.pw = t.pair_w
        self.lam = float(t.lam)
        self.eps = float(f.eps) if rank_constraint else np.inf
        self.tol = float(f.rank_tol)
        #: both blocks side by side, shape (N, nm + G), and the matching offset ``(mu, d)``
        self.XC = np.ascontiguousarray(np.concatenate([self.Xm, self.Xp], axis=1))
        self.offset = np.concatenate([self.mu, self.pd])

    def state(self, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(Em, D)`` of a selection, shapes (nm,) and (G,)."""
        return self.Xm[sel].sum(axis=0) - self.mu, self.Xp[sel].sum(axis=0) - self.pd

    def risks(self, Em: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R_mean, R_rank)`` for states of shape (..., nm) and (..., G)."""
        rm = np.abs(Em) @ self.mw
        if self.pw.size == 0:
            return rm, np.zeros_like(rm)
        loss = np.maximum(-D, 0.0)
        if self.lam:
            loss += self.lam * np.maximum(-(D + self.pd), 0.0)
        return rm, loss @ self.pw

    def feasible(self, rr: Any) -> Any:
        return rr <= self.eps + self.tol


@dataclass(frozen=True)
class AnnealOutcome:
    """Result of :func:`anneal_search`.

    Attributes
    ----------
    selection : ndarray of int64, shape (B,)
        Best subset seen (sorted): the feasible one with the smallest ``R_mean``,
        else the least violating one.
    feasible : bool
    R_mean, R_rank : float
    iterations : int
        Proposals scored over all chains.
    accepted : int
    restarts : int
        Chains run.
    polish_swaps : int
        Improving swaps made by the best-improvement descent.
    stopped : Termination
    penalty : float
        Final penalty weight of the ranking-risk excess.
    """

    selection: np.ndarray
    feasible: bool
    R_mean: float
    R_rank: float
    iterations: int
    accepted: int
    restarts: int
    polish_swaps: int
    stopped: Termination
    penalty: float


def _lex_best(rm: np.ndarray, rr: np.ndarray, sc: SwapScorer) -> int:
    """Index of the best candidate under the feasibility-first order (feasible by ``R_mean``, else by excess)."""
    feas = sc.feasible(rr)
    if feas.any():
        return int(np.flatnonzero(feas)[np.argmin(rm[feas])])
    return int(np.lexsort((rm, rr))[0])


def _better(rm: float, rr: float, best_rm: float, best_rr: float, sc: SwapScorer) -> bool:
    fa, fb = bool(sc.feasible(rr)), bool(sc.feasible(best_rr))
    if fa != fb:
        return fa
    if fa:
        return rm < best_rm - 1e-15 * max(1.0, abs(best_rm))
    return (rr, rm) < (best_rr, best_rm)


def polish_swaps(f: RankingRiskReconstruction, selection: Any, *, rank_constraint: bool = True,
                 clock: Clock | None = None, scorer: SwapScorer | None = None, max_moves: int | None = None,
                 chunk_floats: int = 4_000_000) -> tuple[np.ndarray, int]:
    """Best-improvement 1-swap descent under the feasibility-first order.

    Every pass scores all ``B (N - B)`` swaps (in chunks of about
    ``chunk_floats`` numbers) and makes the best one if it improves the order
    ``(feasible, R_mean)`` / ``(R_rank excess, R_mean)``; it stops at a 1-swap
    local optimum, after ``max_moves`` swaps, or when ``clock`` expires.

    Returns
    -------
    selection : ndarray of int64, shape (B,), sorted
    moves : int
    """
    sc = scorer or SwapScorer(f, rank_constraint)
    N, B = f.n_items, f.budget
    sel = f.as_selection(selection)
    if sel.size != B:
        raise InvalidInputError(f"selection: expected {B} items (the budget), got {sel.size}")
    in_S = np.zeros(N, dtype=bool)
    in_S[sel] = True
    sel, uns = np.flatnonzero(in_S), np.flatnonzero(~in_S)
    Em, D = sc.state(sel)
    rm0, rr0 = sc.risks(Em, D)
    cur_rm, cur_rr = float(rm0), float(rr0)
    width = max(sc.mi.size + sc.pd.size, 1)
    rows = max(1, chunk_floats // max((N - B) * width, 1))
    moves = 0
    XmU, XpU = sc.Xm[uns], sc.Xp[uns]
    while (max_moves is None or moves < max_moves) and not (clock is not None and clock.expired()):
        best = None
        for a in range(0, B, rows):
            blk = np.arange(a, min(a + rows, B))
            Ec = (Em + XmU[None, :, :]) - sc.Xm[sel[blk]][:, None, :]
            Dc = (D + XpU[None, :, :]) - sc.Xp[sel[blk]][:, None, :]
            rm, rr = sc.risks(Ec, Dc)
            k = _lex_best(rm.ravel(), rr.ravel(), sc)
            cand = (float(rm.ravel()[k]), float(rr.ravel()[k]), int(blk[k // (N - B)]), int(k % (N - B)))
            if best is None or _better(cand[0], cand[1], best[0], best[1], sc):
                best = cand
            if clock is not None and clock.expired():
                break
        if best is None or not _better(best[0], best[1], cur_rm, cur_rr, sc):
            break
        _, _, ip, jp = best
        i, j = sel[ip], uns[jp]
        Em = Em + sc.Xm[j] - sc.Xm[i]
        D = D + sc.Xp[j] - sc.Xp[i]
        sel[ip], uns[jp] = j, i
        XmU[jp], XpU[jp] = sc.Xm[i], sc.Xp[i]
        r1, r2 = sc.risks(Em, D)
        cur_rm, cur_rr = float(r1), float(r2)
        moves += 1
    return np.sort(sel).astype(np.int64), moves


def descent(sc: SwapScorer, sel: np.ndarray, uns: np.ndarray, rng: np.random.Generator,
            clock: Clock | None = None, max_passes: int | None = None, block_floats: int = 120_000
            ) -> tuple[float, float, int]:
    """Blockwise eager 1-swap descent in place, under the feasibility-first order.

    The selected positions are visited in random order, a block of them at a
    time (as many as fit in about ``block_floats`` numbers of candidate
    state: one at large ``N``, all of them at small ``N``); every swap of the
    block's items with every unselected item is scored, and the best one is
    made if it improves (feasible subsets by ``R_mean``, infeasible ones by
    ``R_rank``). ``sel`` (shape (B,)) and ``uns`` (shape (N - B,)) are updated
    in place. The descent stops after a pass without an improving swap (a
    1-swap local optimum), after ``max_passes`` passes, or when ``clock``
    expires.

    Returns
    -------
    R_mean, R_rank : float
        Of the final subset.
    moves : int
    """
    XC, nm = sc.XC, sc.mi.size
    W = XC.shape[1]
    Z = XC[sel].sum(axis=0) - sc.offset
    r1, r2 = sc.risks(Z[:nm], Z[nm:])
    cur_rm, cur_rr = float(r1), float(r2)
    lim = sc.eps + sc.tol
    cur_ok = cur_rr <= lim
    XU = XC[uns]
    n_out = uns.size
    rows = int(max(1, min(sel.size, block_floats // max(n_out * W, 1))))
    mw, pw, lpw, pd, lam = sc.mw, sc.pw, sc.lam * sc.pw, sc.pd, sc.lam
    moves = passes = 0
    while max_passes is None or passes < max_passes:
        passes += 1
        improved = False
        order = rng.permutation(sel.size)
        for a in range(0, order.size, rows):
            blk = order[a:a + rows]
            Zc = XU[None, :, :] + (Z - XC[sel[blk]])[:, None, :]  # (r, N - B, W)
            rm = np.abs(Zc[..., :nm]) @ mw
            if pw.size:
                nD = -Zc[..., nm:]
                rr = np.maximum(nD, 0.0) @ pw
                if lam:
                    rr += np.maximum(nD - pd, 0.0) @ lpw
            else:
                rr = np.zeros_like(rm)
            rm, rr = rm.ravel(), rr.ravel()
            ok = rr <= lim
            if ok.any():
                rmo = np.where(ok, rm, np.inf)
                k = int(np.argmin(rmo))
                better = (not cur_ok) or rmo[k] < cur_rm - 1e-15 * max(1.0, abs(cur_rm))
            else:
                k = int(np.lexsort((rm, rr))[0])
                better = (not cur_ok) and (rr[k], rm[k]) < (cur_rr, cur_rm)
            if better:
                p, jp = int(blk[k // n_out]), int(k % n_out)
                i, j = sel[p], uns[jp]
                Z = Z + XC[j] - XC[i]
                cur_rm, cur_rr = float(rm[k]), float(rr[k])
                cur_ok = cur_rr <= lim
                sel[p], uns[jp] = j, i
                XU[jp] = XC[i]
                moves += 1
                improved = True
            if clock is not None and clock.expired():
                return cur_rm, cur_rr, moves
        if not improved:
            break
    Z = XC[sel].sum(axis=0) - sc.offset  # exact risks of the final subset (no accumulated rounding)
    r1, r2 = sc.risks(Z[:nm], Z[nm:])
    return float(r1), float(r2), moves


def _auto_local_searches(N: int, B: int) -> int:
    """Default number of local searches: ``4e6 / (B (N - B))``, 100 to 1 000 (a local search costs
    ``O(B (N - B))`` swap scores, so the default keeps the run's length about the same across sizes)."""
    return int(min(max(4e6 / max(B * (N - B), 1), 100), 1000))


def _kick(rng: np.random.Generator, sel: np.ndarray, uns: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``k`` random swaps of distinct selected and unselected items (copies)."""
    sel, uns = sel.copy(), uns.copy()
    k = min(k, sel.size, uns.size)
    if k > 0:
        ip = rng.choice(sel.size, size=k, replace=False)
        jp = rng.choice(uns.size, size=k, replace=False)
        sel[ip], uns[jp] = uns[jp], sel[ip].copy()
    return sel, uns


def _chains(f: RankingRiskReconstruction, sc: SwapScorer, rng: np.random.Generator, starts: list[np.ndarray],
            per: int, accept0: float, t_ratio: float, w: float, clock: Clock | None, budget_t: float | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, float]:
    """Annealing of ``len(starts)`` chains over swaps on ``R_mean + w * excess``, advanced together.

    Returns the best subset of each chain (shape (C, B)) with its risks, the
    proposals scored per chain and the final penalty weight.
    """
    N, B = f.n_items, f.budget
    C = len(starts)
    nm = sc.mi.size
    XC = np.ascontiguousarray(np.concatenate([sc.Xm, sc.Xp], axis=1))  # (N, nm + G)
    pd, pw, lpw, eps = sc.pd, sc.pw, sc.lam * sc.pw, sc.eps

    def risks(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rm = np.abs(Z[..., :nm]) @ sc.mw
        if pw.size == 0:
            return rm, np.zeros_like(rm)
        D = Z[..., nm:]
        rr = np.maximum(-D, 0.0) @ pw
        if sc.lam:
            rr = rr + np.maximum(-(D + pd), 0.0) @ lpw
        return rm, rr

    def objective(rm_: np.ndarray, rr_: np.ndarray) -> np.ndarray:
        return rm_ + w * np.maximum(rr_ - eps, 0.0) if w else rm_

    in_S = np.zeros((C, N), dtype=bool)
    for c, st in enumerate(starts):
        in_S[c, st] = True
    sel = np.nonzero(in_S)[1].reshape(C, B)
    uns = np.nonzero(~in_S)[1].reshape(C, N - B)
    offset = np.concatenate([sc.mu, pd])
    Z = XC[sel].sum(axis=1) - offset
    rm, rr = risks(Z)
    F = objective(rm, rr)
    best_rm, best_rr, best_sel = rm.copy(), rr.copy(), sel.copy()
    rows = np.arange(C)[:, None]
    I = rng.integers(B, size=(C, 16))
    J = rng.integers(N - B, size=(C, 16))
    d0 = objective(*risks(Z[:, None, :] + XC[uns[rows, J]] - XC[sel[rows, I]])) - F[:, None]
    up = d0[d0 > 0]
    T0 = float(np.median(up)) / -np.log(accept0) if up.size else max(float(np.abs(F).max()), 1e-12) * 1e-3
    t0 = clock.elapsed if clock is not None else 0.0
    scored = 0
    m, a_est = 1, 0.5
    next_check = 0.1
    ar = np.arange(C)
    while True:
        prog = scored / per
        if budget_t is not None and clock is not None:
            prog = max(prog, (clock.elapsed - t0) / budget_t)
        if prog >= 1.0:
            break
        T = T0 * t_ratio**prog
        I = rng.integers(B, size=(C, m))
        J = rng.integers(N - B, size=(C, m))
        Zc = Z[:, None, :] + XC[uns[rows, J]] - XC[sel[rows, I]]
        rmc, rrc = risks(Zc)
        Fc = objective(rmc, rrc)
        dF = Fc - F[:, None]
        ok = (dF <= 0.0) | (rng.random((C, m)) < np.exp(-np.maximum(dF, 0.0) / T))
        has = ok.any(axis=1)
        k = np.argmax(ok, axis=1)
        scored += m
        n_acc = int(has.sum())
        a_est = 0.8 * a_est + 0.2 * (n_acc / max(int(np.where(has, k + 1, m).sum()), 1))
        if n_acc:
            c = ar[has]
            kc = k[has]
            ip, jp = I[c, kc], J[c, kc]
            i_item, j_item = sel[c, ip], uns[c, jp]
            sel[c, ip], uns[c, jp] = j_item, i_item
            Z[c] = Zc[c, kc]
            rm[c], rr[c], F[c] = rmc[c, kc], rrc[c, kc], Fc[c, kc]
            fc, fb = sc.feasible(rr[c]), sc.feasible(best_rr[c])
            imp = (fc & ~fb) | (fc & fb & (rm[c] < best_rm[c])) | (~fc & ~fb & (rr[c] < best_rr[c]))
            if imp.any():
                ci = c[imp]
                best_rm[ci], best_rr[ci] = rm[ci], rr[ci]
                best_sel[ci] = sel[ci]
        m = int(min(max(round(1.0 / max(a_est, 1e-3)), 1), 256))
        if prog >= next_check:
            next_check += 0.1
            Z = XC[sel].sum(axis=1) - offset  # drop accumulated rounding
            rm, rr = risks(Z)
            if w and (~sc.feasible(rr)).mean() > 0.5:
                w *= 1.5
            F = objective(rm, rr)
    return best_sel, best_rm, best_rr, scored, w


def _anneal_start(f: RankingRiskReconstruction, sc: SwapScorer, rng: np.random.Generator, init: Any, chains: int,
                  chain_proposals: int, chain_share: float, penalty: float | None, clock: Clock | None,
                  verbose: bool) -> tuple[np.ndarray, float]:
    """The annealing's start (``init``, the best bank subset, or the best chain's result) and the chains' penalty."""
    inf_b, V_b = _keys(f.bank_R_mean, f.bank_R_rank, sc.eps, f.rank_tol)
    order = np.lexsort((f.bank_R_mean, V_b, inf_b))
    if init is not None:
        start = f.as_selection(init, "init")
        if start.size != f.budget:
            raise InvalidInputError(f"init: expected {f.budget} items (the budget), got {start.size}")
    else:
        start = f.bank[order[0]]
    if chains <= 0:
        return start, 0.0
    feas_bank = f.bank_R_mean[f.bank_R_rank <= f.eps + f.rank_tol]
    ref = float(np.median(feas_bank if feas_bank.size else f.bank_R_mean))
    w = float(penalty) if penalty is not None else max(ref, 1e-12) / max(f.eps, 1e-12)
    if not np.isfinite(sc.eps):
        w = 0.0
    starts = [start] + [f.bank[order[c % order.size]] for c in range(1, chains)]
    budget_t = (None if clock is None or clock.limit is None
                else chain_share * max(clock.limit - clock.elapsed, 0.0))
    bs, brm, brr, scored, w = _chains(f, sc, rng, starts, chain_proposals, 0.5, 1e-4, w, clock, budget_t)
    fb = sc.feasible(brr)
    progress(verbose, f"anneal chains: {chains} x {scored} proposals")
    return bs[int(np.lexsort((brm, np.where(fb, 0.0, brr), ~fb))[0])], w


def anneal_search(f: RankingRiskReconstruction, *, rng: np.random.Generator, max_iter: int | None = None,
                  patience: int | None = None, kick: int = 3, t_start: float = 0.2, t_ratio: float = 1e-3,
                  chains: int = 0, chain_proposals: int = 20_000, chain_share: float = 0.5,
                  penalty: float | None = None,
                  rank_constraint: bool = True, init: Any = None, clock: Clock | None = None,
                  verbose: bool = False) -> AnnealOutcome:
    """Annealing over swap-local optima (iterated local search with a Metropolis acceptance).

    The search walks from one 1-swap local optimum to the next: ``kick``
    random swaps from the current subset, then the eager descent of
    :func:`descent` (each selected item, in random order, makes its best
    swap if that improves the feasibility-first order: feasible subsets by
    ``R_mean``, infeasible ones by ``R_rank``). The new local optimum
    replaces the current one when it is better, or, both feasible, with
    probability ``exp(-(R_mean_new - R_mean_cur) / T)``; ``T`` falls
    geometrically from ``t_start`` times the best ``R_mean`` to ``t_ratio``
    times that. An infeasible local optimum never replaces a feasible one.
    Progress is the larger of the share of ``max_iter`` local searches done
    and the share of the time budget used, so a time limit shortens the
    schedule instead of cutting it; with ``patience`` the search also stops
    after that many local searches without a new best. To anneal for a given
    time, pass ``max_iter`` large and a time limit.

    With ``chains > 0`` a first phase anneals that many chains over single
    swaps on the penalised objective ``R_mean + w * max(0, R_rank - eps)``
    (``chain_proposals`` proposals each, scored together in vectorised steps)
    and the search starts from the best chain's result.

    A local optimum costs ``O(passes * B * (N - B) * (M K + pairs))``: every
    swap is scored incrementally from the current per-(model, metric) sums.

    Parameters
    ----------
    f : RankingRiskReconstruction
    rng : numpy.random.Generator
    max_iter : int, optional
        Local searches (default ``4e6 / (B (N - B))``, 100 to 1 000); the temperature schedule spans them
        (or the time budget, whichever ends first).
    patience : int, optional
        Local searches without a new best before stopping (default: none; the schedule runs out).
    kick : int
        Random swaps between local searches.
    t_start, t_ratio : float
        Initial temperature relative to the best ``R_mean``; final / initial temperature.
    chains, chain_proposals : int
        Optional single-swap annealing phase (0 chains: none).
    chain_share : float
        Share of the time budget that phase may use.
    penalty : float, optional
        Weight of the ranking-risk excess in that phase (default: median feasible bank ``R_mean`` / eps).
    rank_constraint : bool
        False: every subset counts as feasible (the ablation).
    init : array_like of int, shape (B,), optional
        Start instead of the best reference-bank subset.
    clock : Clock, optional
        Time budget of the whole search.

    Returns
    -------
    AnnealOutcome
    """
    N, B = f.n_items, f.budget
    sc = SwapScorer(f, rank_constraint)
    n_ls = int(max_iter) if max_iter is not None else _auto_local_searches(N, B)
    start, w = _anneal_start(f, sc, rng, init, chains, chain_proposals, chain_share, penalty, clock, verbose)
    in_S = np.zeros(N, dtype=bool)
    in_S[start] = True
    sel, uns = np.flatnonzero(in_S), np.flatnonzero(~in_S)
    cur_rm, cur_rr, moves = descent(sc, sel, uns, rng, clock)
    cur = (sel, uns)
    best_sel, best_rm, best_rr = sel.copy(), cur_rm, cur_rr
    t0 = clock.elapsed if clock is not None else 0.0
    budget_t = None if clock is None or clock.limit is None else max(clock.limit - t0, 1e-3)
    it = idle = accepted = 0
    stopped = Termination.CONVERGED
    while it < n_ls and (patience is None or idle < patience):
        prog = it / n_ls
        if budget_t is not None and clock is not None:
            prog = max(prog, (clock.elapsed - t0) / budget_t)
            if prog >= 1.0:
                stopped = Termination.TIME_LIMIT
                break
        T = t_start * abs(best_rm) * t_ratio**prog
        sel, uns = _kick(rng, cur[0], cur[1], kick)
        rm, rr, mv = descent(sc, sel, uns, rng, clock)
        moves += mv
        it += 1
        idle += 1
        if _better(rm, rr, best_rm, best_rr, sc):
            best_sel, best_rm, best_rr = sel.copy(), rm, rr
            idle = 0
            progress(verbose, f"anneal local search {it}: R_mean {rm:.6g} (R_rank {rr:.6g}, eps {f.eps:.6g})")
        fn, fc = bool(sc.feasible(rr)), bool(sc.feasible(cur_rr))
        if fn and fc:
            take = rm <= cur_rm or (T > 0 and rng.random() < np.exp(-(rm - cur_rm) / T))
        else:
            take = _better(rm, rr, cur_rm, cur_rr, sc)
        if take:
            cur, cur_rm, cur_rr = (sel, uns), rm, rr
            accepted += 1
    if it >= n_ls:
        stopped = Termination.ITERATION_LIMIT
    if clock is not None and clock.expired():
        stopped = Termination.TIME_LIMIT
    progress(verbose, f"anneal: {it} local searches ({accepted} accepted, {moves} swaps); best R_mean {best_rm:.6g}, "
                      f"R_rank {best_rr:.6g} (eps {f.eps:.6g}); stopped: {stopped.value}")
    return AnnealOutcome(selection=np.sort(best_sel).astype(np.int64), feasible=bool(sc.feasible(best_rr)),
                         R_mean=float(best_rm), R_rank=float(best_rr), iterations=it, accepted=accepted,
                         restarts=int(chains), polish_swaps=moves, stopped=stopped, penalty=w)


ANNEAL_OPTIONS = (
    Option("max_iter", None, "int", low=1,
           doc="local searches the schedule spans (default 4e6 / (B (N - B)), 100 to 1000); a time limit shortens it"),
    Option("patience", None, "int", low=1, doc="stop after this many local searches without a new best (default: off)"),
    Option("kick", 3, "int", low=1, doc="random swaps between local searches"),
    Option("t_start", 0.2, "float", low=0.0, doc="initial temperature, relative to the best R_mean (0: descend only)"),
    Option("t_ratio", 1e-3, "float", low=0.0, high=1.0, low_open=True, doc="final / initial temperature"),
    Option("chains", 0, "int", low=0, doc="optional first phase: single-swap annealing chains (0: none)"),
    Option("chain_proposals", 20_000, "int", low=1, doc="proposals per chain in that phase"),
    Option("chain_share", 0.5, "float", low=0.0, high=1.0, low_open=True, doc="share of a time limit for that phase"),
    Option("penalty", None, "float", low=0.0,
           doc="weight of the ranking-risk excess in the chain phase (default: median feasible bank R_mean / eps)"),
    *SEARCH_OPTIONS,
)


@register_method(
    "anneal",
    kind="heuristic",
    accepts=RankingRiskReconstruction,
    description="HoloCosm: annealing over swap-local optima (kicks, eager best-swap descent, Metropolis acceptance)",
    options=ANNEAL_OPTIONS,
)
def run_anneal(f: RankingRiskReconstruction, *, time_limit: float | None, seed: int | None, max_iter: int | None,
               patience: int | None, kick: int, t_start: float, t_ratio: float, chains: int, chain_proposals: int,
               chain_share: float, penalty: float | None, rank_constraint: bool, init: Any, verbose: bool):
    rng = check_rng(seed)
    clock = Clock(time_limit)
    out = anneal_search(f, rng=rng, max_iter=max_iter, patience=patience, kick=kick, t_start=t_start,
                        t_ratio=t_ratio, chains=chains, chain_proposals=chain_proposals, chain_share=chain_share,
                        penalty=penalty,
                        rank_constraint=rank_constraint, init=init, clock=clock, verbose=verbose)
    return output(out.selection, clock, stopped=out.stopped, local_searches=out.iterations, accepted=out.accepted,
                  swaps=out.polish_swaps, chains=out.restarts, found_feasible=out.feasible,
                  rank_constraint=rank_constraint)
