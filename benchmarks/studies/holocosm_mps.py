"""HoloCosm MPS round trip: tiny instances exported to MPS, re-read by SCIP and by HiGHS, checked by brute force.

Usage::

    python -m benchsel.benchmarks.studies.holocosm_mps                      # 40 instances per design
    python -m benchsel.benchmarks.studies.holocosm_mps --instances 10 --designs offset near-identical

Each design draws seeded tiny ``RankingRiskReconstruction`` instances (``M`` 3-4 models, ``N`` 7-9 items,
``K`` 1-2 metrics, responses from an integer grid ``0..3``):

* ``unit``: the grid itself;
* ``tiny``: the grid times ``1e-9``;
* ``offset``: ``0.5 +`` the grid times ``1e-9`` (responses ``1e-9`` apart around a common offset);
* ``near-identical``: one random response vector shared by every model, plus the grid times ``1e-9``
  (models ``1e-9`` apart);
* ``mixed``: random responses, with the first metric replaced by ``0.3 +`` the grid times ``1e-9``.

Every instance is written with ``f.to_mps`` (the default statement), read back by SCIP
(``pyscipopt.Model.readProblem``, default settings) and by HiGHS (``solve_mps``), and each reader's selection
is judged by the formulation against the brute-force optimum. A run is **wrong** when the reader claims
optimality for a selection the formulation rejects (``infeasible``) or whose objective is more than ``1e-6``
(relative) from the optimum (``worse``); ``unreadable``: HiGHS refused the file.
"""
from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations import RankingRiskReconstruction
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.mps import read_name_map, selection_from_values
from benchsel.solvers.backends.mps import solve_mps
from benchsel.solvers.conformance import brute_force

__all__ = ["DESIGNS", "make_instance", "study"]


def _grid(rng: np.random.Generator, M: int, N: int, K: int) -> np.ndarray:
    return rng.integers(0, 4, size=(M, N, K)).astype(float)


def _mixed(rng: np.random.Generator, M: int, N: int, K: int) -> np.ndarray:
    X = rng.random((M, N, K))
    X[:, :, 0] = 0.3 + 1e-9 * _grid(rng, M, N, 1)[:, :, 0]
    return X


#: Response designs: ``design(rng, M, N, K) -> X`` of shape (M, N, K).
DESIGNS: dict[str, Callable[[np.random.Generator, int, int, int], np.ndarray]] = {
    "unit": _grid,
    "tiny": lambda rng, M, N, K: 1e-9 * _grid(rng, M, N, K),
    "offset": lambda rng, M, N, K: 0.5 + 1e-9 * _grid(rng, M, N, K),
    "near-identical": lambda rng, M, N, K: rng.random((1, N, K)) + 1e-9 * _grid(rng, M, N, K),
    "mixed": _mixed,
}


def make_instance(design: str, seed: int) -> RankingRiskReconstruction:
    """The seeded instance ``seed`` of ``design``."""
    rng = np.random.default_rng([seed, len(design)])
    M, N, K = int(rng.integers(3, 5)), int(rng.integers(7, 10)), int(rng.integers(1, 3))
    X = DESIGNS[design](rng, M, N, K)
    return RankingRiskReconstruction(X, budget=int(rng.integers(2, N - 2)), seed=seed)


def _verdict(f: Any, optimum: float, claimed_optimal: bool, sel: np.ndarray) -> str:
    if not claimed_optimal:
        return "not optimal"
    if not f.is_feasible(sel):
        return "wrong: infeasible"
    if abs(f.evaluate(sel) - optimum) > 1e-6 * max(abs(optimum), 1e-300):
        return "wrong: worse"
    return "right"


def _scip(path: Path, time_limit: float) -> tuple[bool, dict[str, float]]:
    import pyscipopt  # the scip extra

    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(str(path))
    m.setParam("limits/time", time_limit)
    m.optimize()
    ok = m.getStatus() == "optimal"
    return ok, ({v.name: m.getVal(v) for v in m.getVars()} if ok else {})


def study(n_instances: int = 40, designs: tuple[str, ...] | None = None, time_limit: float = 60.0,
          quiet: bool = False) -> dict[str, dict[str, Counter]]:
    """Per design and reader (``"scip"``, ``"highs"``), the count of each verdict."""
    out: dict[str, dict[str, Counter]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for design in designs or tuple(DESIGNS):
            counts: dict[str, Counter] = {"scip": Counter(), "highs": Counter()}
            for i in range(n_instances):
                f = make_instance(design, i)
                optimum = brute_force(f)[0]
                path, _ = f.to_mps(Path(tmp) / f"{design}-{i}.mps")
                info = read_name_map(path)
                ok, values = _scip(path, time_limit)
                sel = selection_from_values(info, values) if ok else np.zeros(0, np.int64)
                counts["scip"][_verdict(f, optimum, ok, sel)] += 1
                try:
                    row = solve_mps(path, time_limit)
                except InvalidInputError:  # e.g. coefficients past HiGHS' infinity (1e20)
                    counts["highs"]["unreadable"] += 1
                    continue
                counts["highs"][_verdict(f, optimum, row["termination"] == "optimal", row["selection"])] += 1
            out[design] = counts
            if not quiet:
                for reader, c in counts.items():
                    print(f"{design:15} {reader:6} {dict(sorted(c.items()))}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=40)
    ap.add_argument("--designs", nargs="*", choices=tuple(DESIGNS), default=None)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args(argv)
    study(args.instances, tuple(args.designs) if args.designs else None, args.time_limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
