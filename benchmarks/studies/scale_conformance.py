"""Scale conformance: no false "optimal" claim and no bound past the optimum, at any cost scale.

Every formulation's tiny conformance instances (``conformance_instances(seed)``)
are copied with their costs multiplied by factors from 1e-9 to 1e9 (and, for
k-medoids, HoloCosm and the positional problems, with tied and near-tied
data), brute-forced with the formulation's own ``evaluate`` and ``check``
(:func:`benchsel.solvers.conformance.brute_force`), and solved by every exact
method that accepts them. A run fails when it claims ``"optimal"`` with an
objective worse than the optimum, or reports a bound past the optimum, by more
than ``1e-6`` relative. Usage::

    python -m benchsel.benchmarks.studies.scale_conformance                  # seeds 0-4, every scale
    python -m benchsel.benchmarks.studies.scale_conformance --seeds 2 --out sc.csv
    python -m benchsel.benchmarks.studies.scale_conformance --seeds 0 --holocosm-designs 60   # tied HoloCosm only

The copies: k-medoids ``D * s``; HoloCosm ``X * s``; BatchInformationGain
``reference_scores * s``, ``observed * s``, ``alpha * s**2``, ``sigma2 * s**2``
and ``beta / s**2`` (every objective times ``s**2``). Positional problems have
no costs (their data are ranks): they run on tied and near-tied score tables
instead.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np

from benchsel.formulations import formulation_classes
from benchsel.formulations.base import Formulation
from benchsel.formulations.bayes import BatchInformationGain
from benchsel.formulations.holocosm import RankingRiskReconstruction
from benchsel.formulations.kmedoids import KMedoids
from benchsel.formulations.proportionality import PositionalProportionality
from benchsel.formulations.representation import PositionalRepresentation
from benchsel.solvers.api import solve
from benchsel.solvers.conformance import brute_force
from benchsel.solvers.methods import available_methods

from .holocosm_mps import DESIGNS, make_instance

__all__ = ["SCALES", "cases", "check_run", "main", "scaled"]

SCALES = (1e-9, 1e-6, 1e-3, 1.0, 1e3, 1e6, 1e9)
#: Relative tolerance of the checks.
REL = 1e-6


def scaled(f: Any, s: float) -> Any:
    """A copy of ``f`` with its costs multiplied by ``s`` (see the module docstring); None when it has none."""
    p = f.get_params()
    if isinstance(f, KMedoids):
        return KMedoids(**{**p, "D": np.asarray(p["D"], dtype=float) * s})
    if isinstance(f, RankingRiskReconstruction):
        return RankingRiskReconstruction(**{**p, "X": np.asarray(p["X"], dtype=float) * s,
                                            "eps": None if p["eps"] is None else p["eps"] * s})
    if isinstance(f, BatchInformationGain):
        observed = None if p["observed"] is None else np.asarray(p["observed"]) * s
        return BatchInformationGain(**{**p, "reference_scores": np.asarray(p["reference_scores"]) * s,
                                       "observed": observed, "alpha": p["alpha"] * s * s,
                                       "sigma2": p["sigma2"] * s * s, "beta": p["beta"] / (s * s),
                                       "tol": None if p["tol"] is None else p["tol"] * s})
    return None


def _tied(f: Any, rng: np.random.Generator, near: bool) -> Any:
    """A tied (or near-tied: ties broken by 1e-9) variant of a k-medoids, HoloCosm or positional instance."""
    p = f.get_params()
    if isinstance(f, KMedoids):
        D = np.round(np.asarray(p["D"], dtype=float) * 2) / 2  # few distinct distances
        if near:
            D = D + 1e-9 * rng.random(D.shape)
        np.fill_diagonal(D, 0.0)
        return KMedoids(**{**p, "D": D})
    if isinstance(f, RankingRiskReconstruction):
        X = np.round(np.asarray(p["X"], dtype=float), 1)
        if near:
            X = X + 1e-9 * rng.random(X.shape)
        return RankingRiskReconstruction(**{**p, "X": X})
    if isinstance(f, (PositionalRepresentation, PositionalProportionality)):
        scores = -np.asarray(p["positions"], dtype=float)  # rank 1 best: higher score better
        scores = np.round(scores / 2)  # ties
        if near:
            scores = scores + 1e-9 * rng.random(scores.shape)
        keys = ("eps", "size", "groups", "include") if isinstance(f, PositionalProportionality) else \
            ("g", "groups", "include")
        kw = {k: p[k] for k in keys if k in p}
        return type(f).from_scores(scores, **{k: v for k, v in kw.items() if v is not None})
    return None


def cases(seeds: int, scales: tuple[float, ...] = SCALES) -> Iterator[tuple[str, str, Any]]:
    """``(instance name, variant, formulation)`` for every class, seed, instance and scale or tie variant."""
    for cls in formulation_classes():  # each a Formulation subclass
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            for i, f in enumerate(cast(type[Formulation], cls).conformance_instances(seed)):
                name = f"{cls.__name__}[{seed}.{i}]"
                for s in scales:
                    g = scaled(f, s)
                    if g is not None:
                        yield name, f"x{s:g}", g
                for near in (False, True):
                    g = _tied(f, rng, near)
                    if g is not None:
                        yield name, "near-tied" if near else "tied", g


def holocosm_designs(seeds: int) -> Iterator[tuple[str, str, Any]]:
    """``(instance name, design, formulation)`` for the tied and near-tied HoloCosm designs of
    :mod:`benchsel.benchmarks.studies.holocosm_mps` (unit, tiny, offset, near-identical, mixed), seeds
    ``0 .. seeds - 1``."""
    for design in DESIGNS:
        for seed in range(seeds):
            yield f"RankingRiskReconstruction[{design}.{seed}]", design, make_instance(design, seed)


def check_run(f: Any, method: str, optimum: float, time_limit: float = 60.0) -> dict[str, Any]:
    """Solve ``f`` with ``method`` and judge its claims against the brute-force ``optimum``."""
    t0 = time.perf_counter()
    try:
        r = solve(f, method, time_limit=time_limit)
    except Exception as e:
        return {"termination": "raised", "error": f"{type(e).__name__}: {e}"[:300], "false_optimal": False,
                "bound_past": False, "seconds": time.perf_counter() - t0}
    sign = -1.0 if f.sense == "max" else 1.0
    tol = REL * abs(optimum) + 1e-300
    false_opt = r.termination == "optimal" and not (r.feasible and sign * (r.objective - optimum) <= tol)
    past = r.bound is not None and sign * (r.bound - optimum) > tol
    return {"termination": str(r.termination), "objective": r.objective, "bound": r.bound, "optimum": optimum,
            "false_optimal": bool(false_opt), "bound_past": bool(past), "seconds": time.perf_counter() - t0,
            "error": r.extra.get("error", "")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.scale_conformance",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="conformance seeds per class (default 5)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=None, help="CSV of every run")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--holocosm-designs", type=int, default=0, metavar="N",
                    help="also the tied HoloCosm designs of studies/holocosm_mps.py, seeds 0..N-1 (default 0: none)")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for name, variant, f in itertools.chain(cases(args.seeds), holocosm_designs(args.holocosm_designs)):
        optimum, _ = brute_force(f)
        if math.isnan(optimum):
            continue
        for method in available_methods(f, "exact"):
            row = {"instance": name, "variant": variant, "method": method,
                   **check_run(f, method, optimum, args.time_limit)}
            rows.append(row)
            if not args.quiet and (row["false_optimal"] or row["bound_past"] or row["termination"] == "raised"):
                print(f"FAIL {name} {variant} {method}: {row['termination']} objective {row.get('objective')} "
                      f"bound {row.get('bound')} optimum {optimum} {row.get('error', '')}", file=sys.stderr)
        if not args.quiet and len(rows) % 200 < 6:
            print(f"[scale_conformance] {len(rows)} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    by: dict[str, list[int]] = {}
    for r in rows:
        key = f"{r['instance'].split('[')[0]} {r['method']}"
        c = by.setdefault(key, [0, 0, 0, 0, 0])
        c[0] += 1
        c[1] += r["false_optimal"]
        c[2] += r["bound_past"]
        c[3] += r["termination"] == "optimal"
        c[4] += r["termination"] == "raised"
    print(f"{'formulation method':45s} {'runs':>5s} {'optimal':>8s} {'false opt':>9s} {'bound past':>10s} "
          f"{'raised':>6s}")
    for key, (n, fo, bp, opt, raised) in sorted(by.items()):
        print(f"{key:45s} {n:5d} {opt:8d} {fo:9d} {bp:10d} {raised:6d}")
    total = [sum(c[i] for c in by.values()) for i in range(5)]
    print(f"{'all':45s} {total[0]:5d} {total[3]:8d} {total[1]:9d} {total[2]:10d} {total[4]:6d}"
          f"   ({time.perf_counter() - t0:.0f} s)")
    if args.out is not None:
        keys = sorted({k for r in rows for k in r})
        with open(args.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    return 0 if total[1] == total[2] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
