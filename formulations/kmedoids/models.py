"""Static linear statements of k-medoids instances built from the shared sorted candidate lists."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from benchsel.formulations.core.model import LinearModel, ModelBuilder

if TYPE_CHECKING:
    from .problem import KMedoids

__all__ = ["radius_model"]


def radius_model(f: KMedoids) -> LinearModel:
    """Elloumi (2010) radius formulation of ``f`` (see :meth:`KMedoids._radius_model`)."""
    I = f._served()
    C = f._cand
    nC = C.size
    s = f.sorted_candidates()
    order = s.order.astype(np.int64)
    Ds = np.take_along_axis(s.Dc, order, axis=1).astype(np.float64)
    new = np.ones_like(Ds, dtype=bool)
    new[:, 1:] = Ds[:, 1:] > Ds[:, :-1]
    grp = np.cumsum(new, axis=1) - 1  # 0-based distinct-distance group of each sorted entry
    last = np.ones_like(new)
    last[:, :-1] = new[:, 1:]
    # a step (group) is kept when fewer than C - k + 1 candidates lie within its distance
    within = np.arange(1, nC + 1)[None, :]
    keep_entry = last & (within < nC - f.k + 1)  # one entry per kept group (its last)
    n_keep = keep_entry.sum(axis=1)
    rows_i, pos = np.nonzero(keep_entry)
    nxt = Ds[rows_i, pos + 1]
    cur = Ds[rows_i, pos]
    b = ModelBuilder("kmedoids_radius")
    y = b.add_vars("y", nC, lb=0, ub=1, integer=True)
    nz = int(n_keep.sum())
    z = b.add_vars("z", nz, lb=0, ub=1, implied_integer=True, cost=f._w[I][rows_i] * (nxt - cur))
    b.add_objective_constant(float(f._w[I] @ Ds[:, 0]))
    b.add_cardinality("card", y, f.k)
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

