"""CP-SAT exactness study: random tiny instances of every linear formulation, checked by brute force.

Usage::

    python -m benchsel.benchmarks.studies.cpsat_exactness                  # 500 instances per formulation
    python -m benchsel.benchmarks.studies.cpsat_exactness --instances 50   # a quick share
    python -m benchsel.benchmarks.studies.cpsat_exactness --out cpsat.json
    python -m benchsel.benchmarks.studies.cpsat_exactness --combine a.json b.json   # one table from runs in chunks

For each formulation with a linear statement (``RankingRiskReconstruction``,
``KMedoids``, ``PositionalProportionality``, ``PositionalRepresentation``) the
script draws seeded tiny instances (integer data with ties, floating-point
data, binary data; every model variant; explicit infeasible thresholds),
enumerates every selection, and solves each instance with ``"cpsat"``. A run
is **wrong** when it claims ``"optimal"`` with an objective away from the
brute-force optimum or a bound past it, claims ``"infeasible"`` while a
feasible selection exists, returns a selection the formulation rejects while
claiming optimality, or gives a bound past the optimum whatever its status.
A weaker but honest answer (``"feasible"`` with a valid bound) is counted
apart. The goal is 0 wrong claims.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from benchsel.formulations import (
    KMedoids,
    PositionalProportionality,
    PositionalRepresentation,
    RankingRiskReconstruction,
)
from benchsel.solvers import solve
from benchsel.solvers.conformance import brute_force

__all__ = ["GENERATORS", "check_run", "make_instance", "study", "summarise"]


def _rrr(rng: np.random.Generator) -> tuple[Any, dict]:
    M = int(rng.integers(2, 6))
    N = int(rng.integers(5, 10))
    K = int(rng.integers(1, 4))
    B = int(rng.integers(1, min(4, N)))
    kind = rng.choice(["integer", "normal", "binary"])
    if kind == "integer":  # ties between models, R_rank values that land exactly on eps
        X = rng.integers(0, 5, size=(M, N, K)).astype(float)
    elif kind == "binary":
        X = (rng.random((M, N, K)) < 0.5).astype(float)
    else:
        X = rng.normal(size=(M, N, K))
    lam = float(rng.choice([0.0, 1.0, 2.5]))
    seed = int(rng.integers(0, 10_000))
    f = RankingRiskReconstruction(X, budget=B, seed=seed, lam=lam)
    opts: dict[str, Any] = {}
    if rng.random() < 0.3:
        opts = {"pools": str(rng.choice(["merged", "separate"])), "muhat": str(rng.choice(["inline", "aux"]))}
    if rng.random() < 0.1:  # an explicit eps below every subset's ranking risk: infeasible
        low = min(f.ranking_risk(S) for S in f.enumerate_selections())
        if low > 0:
            f = RankingRiskReconstruction(X, budget=B, seed=seed, lam=lam, eps=0.5 * low)
    return f, opts


def _kmedoids(rng: np.random.Generator) -> tuple[Any, dict]:
    N = int(rng.integers(5, 10))
    k = int(rng.integers(1, 4))
    kind = rng.choice(["integer", "euclidean", "correlation"])
    weights = rng.uniform(0.3, 3.0, N) if rng.random() < 0.4 else None
    if kind == "integer":
        D = rng.integers(0, 10, size=(N, N)).astype(float)
        np.fill_diagonal(D, 0.0)
        cands = None
        if rng.random() < 0.3:
            cands = np.sort(rng.choice(N, size=int(rng.integers(k, N + 1)), replace=False))
        f = KMedoids(D, k, weights=weights, candidates=cands)
    else:
        f = KMedoids.from_features(rng.normal(size=(N, int(rng.integers(2, 5)))), k, metric=str(kind), weights=weights)
    return f, {"model": str(rng.choice(["assignment", "radius"]))}


def _table(rng: np.random.Generator) -> tuple[np.ndarray, str, str]:
    m = int(rng.integers(3, 7))
    n = int(rng.integers(4, 9))
    kind = rng.choice(["integer", "normal"])
    t = rng.integers(0, 4, size=(m, n)).astype(float) if kind == "integer" else rng.normal(size=(m, n))
    missing = "error"
    if rng.random() < 0.2:
        t[int(rng.integers(m)), int(rng.integers(n))] = np.nan
        missing = "last"
    return t, str(rng.choice(["min", "max", "ordinal"])), missing


def _proportionality(rng: np.random.Generator) -> tuple[Any, dict]:
    t, ties, missing = _table(rng)
    if rng.random() < 0.3:
        f = PositionalProportionality.from_scores(t, size=int(rng.integers(1, t.shape[1] + 1)), ties=ties,
                                                  missing=missing)
        return f, {}
    eps = float(rng.choice([0.1, 0.15, 0.2, 0.25, 1 / 3, 0.4]))
    f = PositionalProportionality.from_scores(t, eps=eps, ties=ties, missing=missing)
    return f, {"model": str(rng.choice(["direct", "size-indexed"]))}


def _representation(rng: np.random.Generator) -> tuple[Any, dict]:
    t, ties, missing = _table(rng)
    n = t.shape[1]
    groups = None
    if rng.random() < 0.3 and n >= 4:
        cut = int(rng.integers(2, n - 1))
        groups = [list(range(0, cut + 1)), list(range(cut - 1, n))]
    f = PositionalRepresentation.from_scores(t, g=int(rng.integers(1, 4)), ties=ties, missing=missing, groups=groups)
    return f, {"presolve": bool(rng.random() < 0.7)}


#: Instance generators per formulation: ``gen(rng) -> (formulation, model options)``.
GENERATORS: dict[str, Callable[[np.random.Generator], tuple[Any, dict]]] = {
    "RankingRiskReconstruction": _rrr,
    "KMedoids": _kmedoids,
    "PositionalProportionality": _proportionality,
    "PositionalRepresentation": _representation,
}


def make_instance(name: str, seed: int) -> tuple[Any, dict]:
    """The seeded instance ``seed`` of formulation ``name`` (with the model options it is solved with)."""
    return GENERATORS[name](np.random.default_rng([seed, len(name)]))


def _tol(x: float) -> float:
    return 1e-6 * max(1.0, abs(x))


def check_run(f: Any, optimum: float, res: Any) -> str | None:
    """Why the run is a wrong claim (None: a correct, possibly weaker, answer)."""
    sign = 1.0 if f.sense == "min" else -1.0
    if math.isnan(optimum):
        if res.feasible:
            return "returned a feasible selection for an infeasible instance"
        if res.termination == "optimal":
            return "claimed 'optimal' on an infeasible instance"
        return None
    if res.termination in ("infeasible", "infeasible_or_unbounded"):
        return f"claimed {res.termination.value!r}; the optimum is {optimum!r}"
    if res.bound is not None and sign * (res.bound - optimum) > _tol(optimum):
        return f"bound {res.bound!r} past the optimum {optimum!r} (termination {res.termination.value})"
    if res.termination == "optimal":
        if not res.feasible:
            return "claimed 'optimal' for a selection the formulation rejects"
        if abs(res.objective - optimum) > _tol(optimum):
            return f"claimed 'optimal' at {res.objective!r}; the optimum is {optimum!r}"
    if res.has_solution and res.feasible and sign * (res.objective - optimum) < -_tol(optimum):
        return f"objective {res.objective!r} better than the brute-force optimum {optimum!r}"
    return None


def study(n_instances: int = 500, names: tuple[str, ...] | None = None, seed0: int = 0, time_limit: float = 60.0,
          cpsat_parameters: dict | None = None, quiet: bool = False) -> list[dict]:
    """One row per (formulation, instance): brute-force optimum, CP-SAT's answer, and the verdict."""
    rows = []
    for name in names or tuple(GENERATORS):
        t0 = time.perf_counter()
        for i in range(seed0, seed0 + n_instances):
            f, opts = make_instance(name, i)
            opt, best = brute_force(f)
            at_eps = None
            if isinstance(f, RankingRiskReconstruction) and best is not None and not math.isnan(opt):
                # the boundary case a rounded ranking row used to cut off
                at_eps = bool(abs(f.risks(best)[1] - f.eps) <= 1e-12 * max(1.0, abs(f.eps)))
            extra_opts: dict[str, Any] = {"cpsat_parameters": cpsat_parameters} if cpsat_parameters else {}
            res = solve(f, "cpsat", time_limit=time_limit, seed=0, **opts, **extra_opts)
            why = check_run(f, opt, res)
            row = {"formulation": name, "instance": i, "repr": repr(f), "options": opts, "optimum": opt,
                   "termination": res.termination.value, "objective": res.objective, "bound": res.bound,
                   "feasible": res.feasible, "seconds": res.seconds, "wrong": why,
                   "nogoods": res.extra.get("cpsat_nogoods"), "certificate": res.extra.get("cpsat_certificate"),
                   "exact_copy": res.extra.get("cpsat_exact_copy"), "optimum_at_eps": at_eps,
                   "claim_refused": res.extra.get("claim_rejected")}
            rows.append(row)
            if why and not quiet:
                print(f"WRONG {name}[{i}] {opts}: {why}", flush=True)
        if not quiet:
            s = summarise([r for r in rows if r["formulation"] == name])[name]
            print(f"{name}: {s['instances']} instances in {time.perf_counter() - t0:.1f} s; wrong {s['wrong']}; "
                  f"terminations {s['terminations']}; infeasible instances {s['infeasible_instances']}; "
                  f"with no-goods {s['with_nogoods']}; certificate solves {s['with_certificate']}", flush=True)
    return rows


def summarise(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for name in dict.fromkeys(r["formulation"] for r in rows):
        rs = [r for r in rows if r["formulation"] == name]
        out[name] = {
            "instances": len(rs),
            "wrong": sum(bool(r["wrong"]) for r in rs),
            "terminations": dict(Counter(r["termination"] for r in rs)),
            "infeasible_instances": sum(math.isnan(r["optimum"]) for r in rs),
            "with_nogoods": sum(bool(r["nogoods"]) for r in rs),
            "with_certificate": sum(bool(r["certificate"]) for r in rs),
            "exact_copy": sum(bool(r["exact_copy"]) for r in rs),
            "claims_refused": sum(bool(r.get("claim_refused")) for r in rs),
            "optimum_at_eps": sum(bool(r.get("optimum_at_eps")) for r in rs),
            "seconds_median": float(np.median([r["seconds"] for r in rs])),
            "seconds_max": float(max(r["seconds"] for r in rs)),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.cpsat_exactness",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=500, help="instances per formulation (default 500)")
    ap.add_argument("--formulations", nargs="*", default=None, choices=tuple(GENERATORS))
    ap.add_argument("--seed0", type=int, default=0, help="first instance seed")
    ap.add_argument("--out", default=None, help="write every row and the summary as JSON")
    ap.add_argument("--inclusion-presolve", action="store_true",
                    help="switch CP-SAT's linear + at-most-one inclusion presolve back on (the OR-Tools 9.15 defect "
                         "the backend avoids) to see how often the checks refuse its claims")
    ap.add_argument("--combine", nargs="+", default=None, metavar="JSON",
                    help="run nothing: print one summary of the rows saved by earlier --out runs (e.g. seed chunks)")
    a = ap.parse_args(argv)
    if a.combine:
        rows = []
        for path in a.combine:
            with open(path) as fh:
                rows.extend(json.load(fh)["rows"])
    else:
        prm = {"presolve_inclusion_work_limit": 100_000_000} if a.inclusion_presolve else None
        rows = study(a.instances, tuple(a.formulations) if a.formulations else None, a.seed0, cpsat_parameters=prm)
    summ = summarise(rows)
    total = sum(v["wrong"] for v in summ.values())
    print(f"\nwrong claims: {total} over {len(rows)} runs")
    print("| formulation | instances | wrong claims | optimal | feasible | infeasible (proven) | runs with no-goods | "
          "certificate solves | CP-SAT claims refused | optimum at R_rank = eps | median s | max s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, v in summ.items():
        t = v["terminations"]
        print(f"| {name} | {v['instances']} | {v['wrong']} | {t.get('optimal', 0)} | {t.get('feasible', 0)} | "
              f"{t.get('infeasible', 0)} | {v['with_nogoods']} | {v['with_certificate']} | {v['claims_refused']} | "
              f"{v['optimum_at_eps']} | "
              f"{v['seconds_median']:.3f} | {v['seconds_max']:.2f} |")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump({"rows": rows, "summary": summ}, fh, indent=1, default=str)
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
