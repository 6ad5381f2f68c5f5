"""The Lagrangian bound of a k-medoids instance (:func:`lagrangian_bound`)."""
from __future__ import annotations

import time

import numpy as np

from .bounds import _LagrangeTerms, _row_extremes
from .data import KMedoidsData


def lagrangian_bound(d: KMedoidsData, time_limit: float | None = None, *, incumbent: np.ndarray | None = None,
                     max_iter: int = 300, multipliers: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """The Lagrangian bound of ``d`` raised by deflected subgradient steps (see :meth:`KMedoids.lagrangian_bound`;
    ``incumbent``: a checked selection, item indices).

    Returns
    -------
    bound : float
    multipliers : ndarray, shape (n_served,)
    """
    t0 = time.perf_counter()
    t_end = None if time_limit is None else t0 + float(time_limit)
    I = d.served()
    Dc = d.cost_matrix()
    w = d.w[I]
    nC = d.cand.size
    if incumbent is not None:
        S0 = incumbent
        target = d.cost(S0)
        d_inc = d.D[np.ix_(I, S0)].min(axis=1).astype(np.float64)
    else:
        target, d_inc = np.inf, None
    if multipliers is not None:
        lam = np.asarray(multipliers, dtype=float).copy()
    elif d_inc is not None:
        lam = w * d_inc
    else:
        lam = w * _row_extremes(Dc)[1] * 0.5
    # with the sorted lists, only the pairs w_i D[i, j] < lam_i are visited (a short prefix per item)
    sort_by = None if t_end is None else t0 + 0.5 * (t_end - t0)
    rows = d.sorted_candidates(sort_by)
    terms = _LagrangeTerms(Dc, w, rows if rows.complete else None)
    best, best_lam = -np.inf, lam.copy()
    mu, stall = 1.0, 0
    g_prev: np.ndarray | None = None
    for _ in range(max(1, int(max_iter))):
        rho = terms.rho(lam)
        S = np.argpartition(rho, d.k - 1)[: d.k] if d.k < nC else np.arange(nC)
        val = float(lam.sum() + rho[S].sum())
        if not np.isfinite(best) or val > best + 1e-12 * max(1.0, abs(best)):
            best, best_lam, stall = val, lam.copy(), 0
        else:
            stall += 1
            if stall >= 20:
                mu, stall = mu / 2, 0
        if t_end is not None and time.perf_counter() >= t_end:
            break
        g = 1.0 - terms.served(lam, S)  # x_ij = 1 in the subproblem for the open j with w_i D[i, j] < lam_i
        if g_prev is not None:  # deflected subgradient: damps the zig-zag
            g = g + 0.5 * g_prev
        g_prev = g
        gg = float(g @ g)
        if gg == 0 or mu < 1e-6:
            break
        goal = target if np.isfinite(target) else best + 0.01 * abs(best) + 1e-9
        lam = lam + mu * max(goal - val, 1e-12 * max(1.0, abs(val))) / gg * g
    return float(best), best_lam
