"""Seconds to fit each estimator and predict 100 targets on a 5 000-item matrix.

The matrix is synthetic (seeded two-parameter IRT responses,
:func:`benchsel.benchmarks.suites.irt_responses`): ``--sources`` source
models and 100 targets on 5 000 items, a random coreset of ``--k`` items.
Each estimator is fitted and asked for the 100 predictions ``--repeats``
times; the table gives the median seconds of fit and of predict. The IRT
model fits (2PL on the sources; gp-IRT also refits on 80 % of them to choose
its weight) are reported apart, as the first fit of each setting, with the
fit cache off::

    python -m benchsel.benchmarks.studies.estimator_speed [--sources 200] [--items 5000] [--k 100] [--repeats 5]

BLAS is pinned to one thread (set before numpy is imported).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from benchsel.benchmarks._blas import one_blas_thread
from benchsel.formulations.estimation import get_estimator, irt

from ..fidelity import parse_spec
from ..suites import irt_responses

ESTIMATORS = ("mean", "cluster-weighted", "ridge", "ridge:target=unseen", "repcore-ridge", "rs-mean", "bayes-aipw",
              "source-assisted", "irt:variant=p-irt", "irt", "stacked")


def main(argv: list[str] | None = None) -> int:


    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.estimator_speed",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=200)
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--estimators", nargs="+", default=list(ESTIMATORS))
    args = ap.parse_args(argv)
    Y = irt_responses(args.sources + args.targets, args.items, seed=0)
    perm = np.random.default_rng(1).permutation(Y.shape[0])
    src, tgt = Y[perm[:args.sources]], Y[perm[args.sources:]]
    sel = np.sort(np.random.default_rng(2).choice(args.items, args.k, replace=False))
    print(f"{args.sources} sources, {args.targets} targets, {args.items} items, k = {args.k}; "
          f"median of {args.repeats} repeats; IRT fits cached after the first (reported apart)")
    print(f"{'estimator':22} {'fit s':>8} {'predict s':>10} {'total s':>8}  {'MAE pp':>7}")
    truth = tgt.mean(axis=1)
    irt_first: dict[str, float] = {}
    for spec in args.estimators:
        name, opts = parse_spec(spec)
        if name in ("irt", "stacked"):
            irt._CACHE.clear()
            t0 = time.perf_counter()
            get_estimator(name, **opts).fit(src, sel)
            irt_first[spec] = time.perf_counter() - t0
        fits, preds = [], []
        p = None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            est = get_estimator(name, **opts).fit(src, sel)
            t1 = time.perf_counter()
            p = est.predict(tgt[:, sel])
            t2 = time.perf_counter()
            fits.append(t1 - t0)
            preds.append(t2 - t1)
        f, q = statistics.median(fits), statistics.median(preds)
        mae = 100 * float(np.abs(np.asarray(p) - truth).mean())
        print(f"{spec:22} {f:8.4f} {q:10.4f} {f + q:8.4f}  {mae:7.2f}")
    if irt_first:
        print("\nfirst fit with the IRT model fitting included (no cache):")
        for spec, s in irt_first.items():
            print(f"  {spec:22} {s:8.2f} s")
        m = irt.fit_irt(src, 1, cache=False)
        print(f"  one 2PL fit (d = 1) on {src.shape[0]} x {src.shape[1]}: {m.info['seconds']:.2f} s, "
              f"{m.info['nit']} L-BFGS iterations")
    return 0


if __name__ == "__main__":  # pragma: no cover
    with one_blas_thread():
        sys.exit(main())
