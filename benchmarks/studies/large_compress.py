"""Time and peak memory of ``compress(Y, k)`` on large benchmarks: the 12 x 41 871 OpenCompass matrix.

Each setting runs in a fresh Python process (so its peak resident memory is its own): the first ``n``
columns of ``psn_irt/opencompass_11bench.npz`` for each ``--items`` value (``0`` is the whole matrix),
``compress(Y, k)`` with the defaults (or ``--selection`` / ``--estimator``), then ``predict`` and
``predict_interval`` of the sources themselves::

    python -m benchsel.benchmarks.studies.large_compress [--items 2000 10000 0] [--k 100] [--selection stratified]

Prints one table row per setting: seconds of compress, peak resident MB (``ru_maxrss``), the selection's
termination and the selected items' count.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchsel.solvers.compression import compress

from .._data import default_data_dir

FILE = ("responses", "psn_irt", "opencompass_11bench.npz")


def _one(path: str, n: int, k: int, selection: str, estimator: str) -> dict:
    Y = np.load(path)["Y"]
    if n:
        Y = Y[:, :n]
    Y = Y.astype(float)
    t0 = time.perf_counter()
    c = compress(Y, k, selection=selection, estimator=estimator, seed=0)
    t1 = time.perf_counter()
    c.predict(Y[:, c.items])
    c.predict_interval(Y[:, c.items])
    t2 = time.perf_counter()
    return {"items": int(Y.shape[1]), "k": k, "selection": selection, "estimator": estimator,
            "compress_seconds": t1 - t0, "predict_seconds": t2 - t1,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "termination": str(c.selection.result.termination), "selected": int(c.k)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.large_compress",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[2000, 10000, 0])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--selection", default="stratified")
    ap.add_argument("--estimator", default="auto")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--one", nargs=5, metavar=("PATH", "N", "K", "SELECTION", "ESTIMATOR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        p, n, k, s, e = args.one
        print(json.dumps(_one(p, int(n), int(k), s, e)))
        return 0
    data = args.data_dir or default_data_dir()
    path = None if data is None else Path(data).joinpath(*FILE)
    if path is None or not path.is_file():
        print(f"error: data-dir: {'/'.join(FILE)} not found; pass --data-dir", file=sys.stderr)
        return 2
    print("| items | k | selection | estimator | compress s | predict + interval s | peak MB | termination |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.items:
        out = subprocess.run([sys.executable, "-m", "benchsel.benchmarks.studies.large_compress", "--one", str(path),
                              str(n), str(args.k), args.selection, args.estimator],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(f"| {n or 'all'} | {args.k} | {args.selection} | {args.estimator} | failed: "
                  f"{out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode} | | | |",
                  flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {r['items']} | {r['k']} | {r['selection']} | {r['estimator']} | {r['compress_seconds']:.1f} | "
              f"{r['predict_seconds']:.1f} | {r['peak_mb']:.0f} | {r['termination']} |", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
