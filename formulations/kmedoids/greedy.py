"""PAM's greedy BUILD for a k-medoids instance (:func:`greedy_build`)."""
from __future__ import annotations

import time

import numpy as np

from .data import KMedoidsData
from .distances import _row_block


def greedy_build(d: KMedoidsData, deadline: float | None = None) -> np.ndarray:
    """PAM's greedy BUILD on ``d``: add the candidate that lowers the weighted cost most, ``k`` times.

    See :meth:`KMedoids.greedy_selection`. Returns the medoids in the order chosen (item indices), shape (k,).
    """
    D, w, cand = d.D, d.w, d.cand
    cols = None if d.all_candidates else cand
    C = cand.size
    B = _row_block(C)

    def rows(idx: np.ndarray) -> np.ndarray:  # a float64 copy of D[idx][:, cand]
        blk = D[idx] if cols is None else D[np.ix_(idx, cols)]
        return blk if blk.dtype == np.float64 else blk.astype(np.float64)

    def change(idx: np.ndarray, old: np.ndarray, new: np.ndarray | None) -> np.ndarray:
        """sum_i w_i (max(old_i - D[i, j], 0) - max(new_i - D[i, j], 0)) over ``idx``, shape (C,)."""
        g = np.zeros(C)
        for a in range(0, idx.size, B):
            sub = idx[a:a + B]
            blk = rows(sub)
            np.subtract(old[a:a + B, None], blk, out=blk)
            if new is None:
                np.maximum(blk, 0.0, out=blk)
            else:  # new <= old: the difference of the two terms is old - D clipped to [0, old - new]
                np.clip(blk, 0.0, (old[a:a + B] - new[a:a + B])[:, None], out=blk)
            g += w[sub] @ blk
        return g

    every = np.arange(d.n_items)
    total = np.zeros(C)
    for a in range(0, every.size, B):
        total += w[a:a + B] @ rows(every[a:a + B])
    first = int(np.argmin(total))
    chosen = [first]
    d1 = D[:, cand[first]].astype(np.float64)
    gain = change(every, d1, None)
    gain[first] = -np.inf
    while len(chosen) < d.k:
        if deadline is not None and time.perf_counter() >= deadline:
            rest = np.argsort(-gain, kind="stable")[: d.k - len(chosen)]
            chosen.extend(int(r) for r in rest)
            break
        j = int(np.argmax(gain))
        chosen.append(j)
        dj = D[:, cand[j]].astype(np.float64)
        ch = np.flatnonzero(dj < d1)
        if ch.size:  # their terms max(d1 - D, 0) shrink to max(dj - D, 0)
            gain -= change(ch, d1[ch], dj[ch])
            d1[ch] = dj[ch]
        gain[chosen] = -np.inf
    return cand[np.asarray(chosen)]
