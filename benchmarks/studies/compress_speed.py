"""Seconds of ``compress(Y, k)`` with the defaults, then of ``predict`` and ``predict_interval``.

On a real matrix (``helm_lite_legalbench``, 79 models x 2 047 items, when the data are found) and on a
synthetic one (seeded two-parameter IRT responses, ``--sources`` models x ``--items`` items). Each
setting is timed ``--repeats`` times with seeds 0, 1, ...; the table gives the median and the range::

    python -m benchsel.benchmarks.studies.compress_speed [--k 100] [--items 2000] [--sources 200] [--repeats 5]
                                                         [--tasks T]

``--tasks T`` compresses the synthetic matrix as a suite of ``T`` tasks of equal size
(``compress(Y, k, tasks=...)``).

BLAS is pinned to one thread.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchsel.benchmarks._blas import one_blas_thread
from benchsel.instances.responses import load_responses
from benchsel.solvers.compression import compress

from .._data import default_data_dir
from ..suites import irt_responses


def _time(Y: np.ndarray, new: np.ndarray, k: int, seed: int, tasks: list[str] | None = None
          ) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    c = compress(Y, k, seed=seed, tasks=tasks)
    t1 = time.perf_counter()
    c.predict(new[:, c.items])
    t2 = time.perf_counter()
    c.predict_interval(new[:, c.items])
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.compress_speed",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--sources", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--tasks", type=int, default=0, help="the synthetic matrix as a suite of this many tasks")
    args = ap.parse_args(argv)
    settings: list[tuple[str, np.ndarray, np.ndarray, list[str] | None]] = []
    data = args.data_dir or default_data_dir()
    p = None if data is None else Path(data) / "responses" / "benchmark_prediction" / "helm_lite_legalbench.npz"
    if p is not None and p.is_file():
        Y = np.asarray(load_responses(p).matrix(0), dtype=float)
        settings.append((f"helm_lite_legalbench {Y.shape[0] - 20}x{Y.shape[1]}", Y[:-20], Y[-20:], None))
    Y = irt_responses(args.sources + 100, args.items, seed=0)
    perm = np.random.default_rng(0).permutation(Y.shape[0])
    tasks = [f"task{i * args.tasks // args.items}" for i in range(args.items)] if args.tasks > 0 else None
    suite = f", {args.tasks} tasks" if tasks else ""
    settings.append((f"IRT {args.sources}x{args.items}{suite}", Y[perm[:args.sources]], Y[perm[args.sources:]],
                     tasks))
    print(f"compress(Y, k={args.k}) with the defaults, then 100/20 new models: median [min, max] of "
          f"{args.repeats} seeds, seconds")
    print("| matrix | compress | predict | predict_interval |")
    print("|---|---|---|---|")
    with one_blas_thread():
        for name, src, new, t in settings:
            runs = [_time(src, new, args.k, s, t) for s in range(args.repeats)]
            cells = []
            for j in range(3):
                v = [r[j] for r in runs]
                cells.append(f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
