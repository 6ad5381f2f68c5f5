"""Which linear statement of a k-medoids instance to build, and whether it fits (:class:`Statements`)."""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.model import LinearModel
from benchsel.formulations.core.validation import check_choice

from .bounds import available_bytes
from .checks import ModelTooLargeError
from .data import KMedoidsData
from .distances import _row_block
from .models import assignment_model, benders_model, radius_model


class Limits(Protocol):
    """The size limits the statements follow (:class:`~benchsel.formulations.kmedoids.KMedoids`' class
    attributes, read at each call)."""

    AUTO_ASSIGNMENT_MAX: int
    MAX_MODEL_BYTES: int
    EXACT_COUNT_MAX: int
    BYTES_PER_NNZ: int


class Statements:
    """The statements of one (twin-free) instance's ``data``: their sizes, the size guards and the ``"auto"``
    choice, within the ``limits`` of its formulation."""

    def __init__(self, data: KMedoidsData, limits: Limits) -> None:
        self.data, self.limits = data, limits

    def size(self, model: str) -> dict[str, Any]:
        """See :meth:`KMedoids.model_size`."""
        check_choice(model, "model", ("assignment", "radius", "benders"))
        d = self.data
        nI, nC = int(d.served().size), int(d.cand.size)
        if model == "assignment":
            cols, rows, nnz = nI * nC + nC, nI + nI * nC + 1, 3 * nI * nC + nC
        elif model == "radius":
            steps = self.radius_steps()
            cols, rows = steps + nC, steps + 1
            nnz = min(nI * nC, steps + nI) + 2 * steps + nC
        else:
            cols, rows, nnz = nI + nC, 1, nC
        size = {"model": model, "columns": int(cols), "rows": int(rows), "nnz": int(nnz),
                "bytes": int(nnz * self.limits.BYTES_PER_NNZ)}
        if model == "benders":
            size["bytes"] = int(4 * nI * nC + 64 * (nI + nC) * 8)  # sorted lists + a master of a few cuts per item
        return size

    def radius_steps(self) -> int:
        """Kept distance steps of the radius model (exact with the sorted lists, else ``n_served * (C - k)``)."""
        d = self.data
        nI, nC, k = int(d.served().size), int(d.cand.size), d.k
        if nI * nC <= self.limits.EXACT_COUNT_MAX:
            d.sorted_candidates()
        s = d.sorted
        if s is None or not s.complete:
            return nI * max(nC - k, 0)
        Dc, total = s.Dc, 0
        B = _row_block(nC)
        for a in range(0, nI, B):
            ds = np.take_along_axis(Dc[a:a + B], s.order[a:a + B], axis=1)
            last = np.ones(ds.shape, dtype=bool)
            last[:, :-1] = ds[:, 1:] > ds[:, :-1]
            total += int(last[:, : max(nC - k, 0)].sum())
        return total

    def check_fits(self, model: str, *, time_limit: float | None = None, nnz_per_second: float | None = None,
                   check_time: bool = True) -> dict[str, Any]:
        """See :meth:`KMedoids.check_model_fits`."""
        size = self.size(model)
        if model == "benders":
            return size
        f, d = self.limits, self.data
        budget = min(f.MAX_MODEL_BYTES, available_bytes())
        secs = None if not nnz_per_second else size["nnz"] / float(nnz_per_second)
        size["seconds"] = secs
        what = (f"the {model} model of this instance (N = {d.n_items}, {d.cand.size} candidates, k = {d.k}) "
                f"has about {size['columns']:,} columns and {size['nnz']:,} non-zeros, about "
                f"{size['bytes'] / 2**30:.2f} GiB for the solver")
        if size["bytes"] > budget:
            raise ModelTooLargeError(
                f"model: {what}, more than the {budget / 2**30:.2f} GiB allowed (KMedoids.MAX_MODEL_BYTES or the "
                "memory available); use model='benders' (rows generated on demand), or a heuristic", size, model)
        if check_time and time_limit is not None and secs is not None and secs > 0.5 * time_limit:
            raise ModelTooLargeError(
                f"model: {what}; building it would take about {secs:.0f} s, more than half the time limit of "
                f"{time_limit:g} s; use model='benders' (rows made on demand), raise time_limit, or use a heuristic",
                size, model)
        return size

    def build(self, model: str, *, allow_lazy: bool, time_limit: float | None,
              nnz_per_second: float | None) -> LinearModel:
        """The statement ``model`` (``"auto"``: chosen here), refused when it would not fit."""
        d = self.data
        requested = model
        if model == "auto":
            if d.n_items * d.cand.size <= self.limits.AUTO_ASSIGNMENT_MAX:
                model = "assignment"
            else:
                model = "benders" if allow_lazy else "radius"
        if model == "benders" and not allow_lazy:
            raise InvalidInputError(
                "model: 'benders' generates its cuts on demand, which this static consumer (e.g. MPS export) "
                "cannot do; use model='radius' or model='assignment'"
            )
        if model != "benders":
            try:
                self.check_fits(model, time_limit=time_limit, nnz_per_second=nnz_per_second,
                                check_time=requested == "auto")
            except ModelTooLargeError as e:
                e.requested = requested
                raise
        if model == "assignment":
            return assignment_model(d)
        return radius_model(d) if model == "radius" else benders_model(d)
