"""Group rows on real suites: the error and the 90 % interval coverage of each group's estimate.

A group's estimate is the weighted sum of its tasks' estimates and its interval adds the tasks'
squared half-widths with the group's weights (SPEC F10), as ``benchsel estimate`` prints for lm-eval
groups. Groups over the tasks of the real suites of :mod:`benchsel.benchmarks.suite_fidelity`, each
weighting its tasks by size as lm-eval's ``mmlu`` does (``aggregate="micro"``: the suite and every group
size-weighted):

* ``helm_lite``: ``knowledge`` = OpenBookQA, MedQA, MMLU; ``reasoning`` = GSM8K, MATH;
* ``openllm_v2``: ``reasoning`` = MATH, MuSR (IFEval in no group);
* ``glue``: ``inference`` = MRPC, RTE (SST-2 in no group).

The truth of a target is its mean over every item of the group. Regimes as in ``suite_fidelity``
(``interpolation``: a random 25 % of the models are the targets; ``extrapolation``: the weakest 50 % are
the sources, the strongest 30 % the targets).

Run::

    python -m benchsel.benchmarks.studies.group_coverage --seeds 5

Prints a markdown table: per suite, group, regime and k, the mean absolute error in points (mean over
seeds) and the share of the target-runs the 90 % interval covers (over every seed's targets).
"""
from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.fidelity import split_models
from benchsel.benchmarks.suite_fidelity import REGIMES, load_suite
from benchsel.solvers.compression import compress

GROUPS = {
    "helm_lite": {"knowledge": ["commonsense", "med_qa", "mmlu"], "reasoning": ["gsm", "math"]},
    "openllm_v2": {"reasoning": ["math", "musr"]},
    "glue": {"inference": ["mrpc", "rte"]},
}
KS = (60, 150)
ALPHA = 0.1


def run(data_dir: Path, suite: str, regime: str, k: int, seed: int) -> dict[str, dict[str, Any]]:
    """``{group: {"mae", "covered", "targets"}}`` of one (suite, regime, k, seed)."""
    Y, tasks = load_suite(data_dir, suite)
    names = list(dict.fromkeys(tasks.tolist()))
    macro = np.stack([Y[:, tasks == t].mean(axis=1) for t in names], axis=1).mean(axis=1)
    src, tgt = split_models(macro[:, None], REGIMES[regime], seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compress(Y[src], k, seed=seed, tasks=tasks.tolist(), groups=GROUPS[suite], aggregate="micro")
        X = Y[tgt][:, c.items]
        est = c.predict_groups(X)
        lo, hi = c.predict_groups_interval(X, alpha=ALPHA)
    out = {}
    for j, g in enumerate(c.groups or []):
        truth = Y[tgt][:, np.isin(tasks, GROUPS[suite][g])].mean(axis=1)
        out[g] = {"mae": float(np.abs(est[:, j] - truth).mean()),
                  "covered": int(np.sum((lo[:, j] <= truth + 1e-12) & (truth <= hi[:, j] + 1e-12))),
                  "targets": int(tgt.size)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--suites", nargs="+", default=list(GROUPS))
    args = p.parse_args(argv)
    data_dir = args.data_dir or default_data_dir()
    if data_dir is None:
        p.error("--data-dir: no shared data found (set BENCHSEL_DATA or pass --data-dir)")
    print("| suite | group | regime | k | MAE (points) | 90 % coverage | target-runs |")
    print("|---|---|---|---|---|---|---|")
    for suite in args.suites:
        for regime in REGIMES:
            for k in KS:
                runs = [run(data_dir, suite, regime, k, s) for s in range(args.seeds)]
                for g in GROUPS[suite]:
                    n = sum(r[g]["targets"] for r in runs)
                    mae = 100 * float(np.mean([r[g]["mae"] for r in runs]))
                    cover = sum(r[g]["covered"] for r in runs) / n
                    print(f"| {suite} | {g} | {regime} | {k} | {mae:.2f} | {cover:.3f} | {n} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
