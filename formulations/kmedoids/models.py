"""The linear statements of a k-medoids instance: assignment, radius (from the shared sorted candidate
lists) and the Benders master with its lazy cuts."""
from __future__ import annotations

import numpy as np

from benchsel.formulations.core.model import LinearModel, ModelBuilder

from .benders import BendersCuts
from .bounds import _row_extremes
from .data import KMedoidsData

__all__ = ["assignment_model", "benders_model", "radius_model"]


def assignment_model(d: KMedoidsData) -> LinearModel:
    """``y_j`` open, ``x_ij <= y_j``, ``sum_j x_ij = 1``, ``sum_j y_j = k``."""
    I = d.served()
    C = d.cand
    nI, nC = I.size, C.size
    b = ModelBuilder("kmedoids_assignment")
    y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
    cost = d.w[I, None] * d.D[np.ix_(I, C)]
    x = b.add_vars("x", (nI, nC), lb=0, ub=1, implied_integer=True, cost=cost)
    b.add_cardinality("card", y, d.k)
    b.add_rows("assign", rows=np.repeat(np.arange(nI), nC), cols=x.ravel(), vals=1.0, lb=np.ones(nI),
               ub=np.ones(nI))
    r = np.arange(nI * nC)
    b.add_rows(
        "link",
        rows=np.concatenate([r, r]),
        cols=np.concatenate([x.ravel(), np.tile(y, nI)]),
        vals=np.concatenate([np.ones(nI * nC), -np.ones(nI * nC)]),
        ub=np.zeros(nI * nC),
        shape=(nI, nC),
    )
    return b.build(selection_block="y", selection_items=C, meta={"variant": "assignment"})


def benders_model(d: KMedoidsData) -> LinearModel:
    """The radius formulation projected on ``y``: one cost variable per served item, its cuts generated on
    demand (:class:`~.benders.BendersCuts`)."""
    I = d.served()
    C = d.cand
    lo, hi = _row_extremes(d.cost_matrix())
    b = ModelBuilder("kmedoids_benders")
    y = b.add_vars("y", C.size, lb=0, ub=1, integer=True)
    theta = b.add_vars("theta", I.size, lb=lo, ub=hi, cost=d.w[I])
    b.add_cardinality("card", y, d.k)
    lazy = BendersCuts(d, d.sorted_rows(), y, theta, lo, hi)
    return b.build(selection_block="y", selection_items=C, meta={"variant": "benders"}, lazy=lazy,
                   integral_objective=d.integral_costs())


def radius_model(d: KMedoidsData) -> LinearModel:
    """Elloumi (2010) radius formulation, vectorised, from the shared sorted lists.

    For item ``i`` let ``u_i^1 < ... < u_i^{K_i}`` be its distinct distances
    to the candidates. ``z_i^h = 1`` when no open medoid lies within
    ``u_i^h``. Cost ``w_i (u_i^1 + sum_h (u_i^{h+1} - u_i^h) z_i^h)``;
    rows ``z_i^1 + sum_{d_ij = u_i^1} y_j >= 1`` and
    ``z_i^h - z_i^{h-1} + sum_{d_ij = u_i^h} y_j >= 0``. Steps where at
    least ``C - k + 1`` candidates lie within ``u_i^h`` always have
    ``z = 0`` and are dropped with their rows.
    """
    I = d.served()
    C = d.cand
    nC = C.size
    s = d.sorted_candidates()
    order = s.order.astype(np.int64)
    Ds = np.take_along_axis(s.Dc, order, axis=1).astype(np.float64)
    new = np.ones_like(Ds, dtype=bool)
    new[:, 1:] = Ds[:, 1:] > Ds[:, :-1]
    grp = np.cumsum(new, axis=1) - 1  # 0-based distinct-distance group of each sorted entry
    last = np.ones_like(new)
    last[:, :-1] = new[:, 1:]
    # a step (group) is kept when fewer than C - k + 1 candidates lie within its distance
    within = np.arange(1, nC + 1)[None, :]
    keep_entry = last & (within < nC - d.k + 1)  # one entry per kept group (its last)
    n_keep = keep_entry.sum(axis=1)
    rows_i, pos = np.nonzero(keep_entry)
    nxt = Ds[rows_i, pos + 1]
    cur = Ds[rows_i, pos]
    b = ModelBuilder("kmedoids_radius")
    y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
    nz = int(n_keep.sum())
    z = b.add_vars("z", nz, lb=0, ub=1, implied_integer=True, cost=d.w[I][rows_i] * (nxt - cur))
    b.add_objective_constant(float(d.w[I] @ Ds[:, 0]))
    b.add_cardinality("card", y, d.k)
    offs = np.concatenate([[0], np.cumsum(n_keep)[:-1]])
    g_of = grp[rows_i, pos]
    in_row = grp < n_keep[:, None]
    ii, pp = np.nonzero(in_row)
    y_rows = offs[ii] + grp[ii, pp]
    y_cols = y[order[ii, pp]]
    z_rows_self = np.arange(nz)
    prev_mask = g_of > 0
    lb = np.where(g_of == 0, 1.0, 0.0)
    b.add_rows(
        "radius",
        rows=np.concatenate([y_rows, z_rows_self, z_rows_self[prev_mask]]),
        cols=np.concatenate([y_cols, z, z[np.flatnonzero(prev_mask) - 1]]),
        vals=np.concatenate([np.ones(y_rows.size), np.ones(nz), -np.ones(int(prev_mask.sum()))]),
        lb=lb,
    )
    return b.build(selection_block="y", selection_items=C,
                   meta={"variant": "radius", "steps": nz})

