"""Reference gaps: every run measured against the best proven optimum (or bound) of its instance."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["GAP_TOL", "reference_gaps"]

# gap tolerance: a heuristic may beat a "proven" optimum by the solver's relative gap
GAP_TOL = 1e-5


def _num(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def reference_gaps(rows: Iterable[Mapping[str, Any]], *, warn: Callable[[str], None] | None = None
                   ) -> list[dict[str, Any]]:
    """Rows with ``gap``, ``reference`` and ``reference_value`` filled in.

    Per instance (name and fingerprint) the reference is the best objective of
    the exact runs that proved optimality (``reference = "optimum"``); failing
    that, the best bound any exact run proved (``"bound"``); failing that none
    (gap left empty). The gap of a feasible run is
    ``(objective - ref) / max(|objective|, 1e-9)`` for minimisation and
    ``(ref - objective) / max(|objective|, 1e-9)`` for maximisation; values
    within ``-1e-5`` of 0 (a heuristic matching an optimum proven to the
    solver's relative tolerance) are set to 0. A larger negative gap would mean
    a wrong "proven" optimum or bound: it is kept and reported through ``warn``.
    """
    out = [dict(r) for r in rows]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in out:
        groups.setdefault((str(r.get("instance")), str(r.get("fingerprint"))), []).append(r)
    for (inst, _), rs in groups.items():
        sense = rs[0].get("sense", "min")
        best = min if sense == "min" else max
        exact = [r for r in rs if r.get("kind") == "exact"]
        opt = [_num(r["objective"]) for r in exact
               if r.get("termination") == "optimal" and r.get("feasible") is True
               and math.isfinite(_num(r["objective"]))]
        # the best proven bound: the largest lower bound (min) / smallest upper bound (max)
        bounds = [_num(r.get("bound")) for r in exact if math.isfinite(_num(r.get("bound")))]
        if opt:
            ref, kind = best(opt), "optimum"
        elif bounds:
            ref, kind = (max(bounds) if sense == "min" else min(bounds)), "bound"
        else:
            ref, kind = math.nan, ""
        for r in rs:
            r["reference"] = kind
            r["reference_value"] = ref if math.isfinite(ref) else None
            obj = _num(r.get("objective"))
            if not (kind and r.get("feasible") is True and math.isfinite(obj)):
                r["gap"] = None
                continue
            g = ((obj - ref) if sense == "min" else (ref - obj)) / max(abs(obj), 1e-9)
            if -GAP_TOL <= g < 0:
                g = 0.0
            elif g < 0 and warn is not None:
                warn(f"instance {inst}: {r.get('method')} (seed {r.get('seed')}) has objective {obj:.10g}, better "
                     f"than the proven {kind} {ref:.10g}")
            r["gap"] = g
    return out
