"""Separation (:class:`Separator`): violated rows from a thread's cut pool or from the lazy rows, plain and
in-out, and the rows the lazy object proposes before the first LP."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchsel.formulations.core.model import LazyRows, RowBlock

from .lp import LPRelaxation
from .options import BnCOptions
from .pool import dedupe, stack, violated_rows


class Separator:
    """One search thread's separation: its LP's pool first, then ``lazy.separate``.

    Parameters
    ----------
    lazy : LazyRows
    lp : LPRelaxation
        The thread's LP (its pool is searched first; initial rows go into it).
    opt : BnCOptions
    stats : dict
        The thread's counters (``pool_cuts``, ``initial_rows_added``).
    """

    def __init__(self, lazy: LazyRows, lp: LPRelaxation, opt: BnCOptions, stats: dict[str, Any]) -> None:
        self.lazy, self.lp, self.opt, self.stats = lazy, lp, opt, stats
        self.core: np.ndarray | None = None  # in-out core point (integer columns)
        self.initial_bound: float | None = None  # the lazy rows' bound before the first LP, if they give one

    def separate(self, x: np.ndarray, *, root: bool) -> RowBlock | None:
        """Violated rows at ``x`` (shape (n_cols,)): from the pool, else from the lazy rows (plain and, at the
        root, in-out)."""
        tol = 1e-6
        pooled = self.lp.pool.take_violated(x, tol)
        if pooled is not None:
            self.stats["pool_cuts"] += pooled.n_rows
            return pooled
        blocks = []
        a = self.opt.in_out
        ints, n = self.lp.ints, self.lp.n
        if root and 0 < a < 1:
            if self.core is None:
                self.core = x[ints].copy()
            xs = x.copy()
            xs[ints] = a * x[ints] + (1 - a) * self.core
            self.core = 0.5 * self.core + 0.5 * x[ints]
            sep = self.lazy.separate(xs, tol)
            if sep is not None:
                sep = violated_rows(sep, x, n, tol)
                if sep is not None:
                    blocks.append(sep)
        plain = self.lazy.separate(x, tol)
        if plain is not None:
            blocks.append(plain)
        if not blocks:
            return None
        return blocks[0] if len(blocks) == 1 else dedupe(stack(blocks), n)

    def initial_rows(self, left: float, incumbent: np.ndarray | None) -> None:
        """Rows the lazy object proposes before the first LP (``lazy.initial_rows``), within ``initial_share``
        of the seconds ``left``, given the ``incumbent`` selection (or None)."""
        if self.opt.initial_share <= 0 or self.stats.get("initial_rows_added"):
            return
        budget = None if not np.isfinite(left) else self.opt.initial_share * left
        block = self.lazy.initial_rows(budget, incumbent)
        if block is not None and block.n_rows:
            self.lp.add_rows(block)
            self.stats["initial_rows_added"] = block.n_rows
            self.lp.ipm_next = block.n_rows >= 1000
        bound = self.lazy.initial_bound  # a valid bound even if the first LP does not finish
        if bound is not None and np.isfinite(bound):
            self.initial_bound = float(bound)
