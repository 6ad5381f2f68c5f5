"""Built-in (numpy) FasterPAM vs the ``kmedoids`` package, from the same BUILD start.

``"fasterpam"`` uses the package when weights are unit and every item is a
candidate, and the built-in implementation otherwise (weights, candidate sets).
This script checks that the built-in one reaches the same kind of local optimum
and measures its speed ratio on OR-Library instances::

    python -m benchsel.benchmarks.studies.fasterpam_speed [--instances pmed1 pmed10 ...] [--repeats 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np

from benchsel.heuristics.kmedoids import fasterpam
from benchsel.instances.orlib import load_pmed

from .._data import default_data_dir


def main(argv: list[str] | None = None) -> int:
    import kmedoids


    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.fasterpam_speed",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", nargs="+", default=[f"pmed{i}" for i in (1, 5, 10, 15, 20, 25, 30, 35, 40)])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    data = default_data_dir()
    if data is None:
        print("error: ../shared/data not found; set BENCHSEL_DATA", file=sys.stderr)
        return 2
    ratios = []
    print(f"{'instance':9} {'N':>4} {'k':>4} {'pkg cost':>9} {'own cost':>9} {'pkg ms':>8} {'own ms':>8} {'ratio':>6}")
    for name in args.instances:
        f = load_pmed(data / "orlib" / "pmed" / f"{name}.txt")
        start = np.sort(f.greedy_selection())
        tp, to = [], []
        for r in range(args.repeats):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                res = kmedoids.fasterpam(f.D, start.copy(), max_iter=100, random_state=r, n_cpu=1)
            tp.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            med, *_ = fasterpam(f.D, start, f.weights, f.candidates, rng=np.random.default_rng(r))
            to.append(time.perf_counter() - t0)
        pc, oc = float(res.loss), f.evaluate(med)
        ratio = statistics.median(to) / statistics.median(tp)
        ratios.append(ratio)
        print(f"{name:9} {f.n_items:>4} {f.k:>4} {pc:>9.0f} {oc:>9.0f} {1e3 * statistics.median(tp):>8.2f} "
              f"{1e3 * statistics.median(to):>8.2f} {ratio:>6.2f}")
    print(f"\nspeed ratio built-in / package: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
