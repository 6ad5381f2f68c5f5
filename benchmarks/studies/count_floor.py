"""The least coverage an interval valid for every model can have on a task of few 0/1 items.

A task whose sample has ``n`` items scored 0 or 1 gives each model one of ``n + 1`` hit counts. An interval
that depends on the sample through the hit count, with ends that do not decrease as the count grows,
covers a model's true score on a run of consecutive counts, so its coverage for that model is the
probability of one such run. For a model whose true score is 0.95 on a task of five sampled items, the
counts 5, 4 and 3 have probabilities 0.77, 0.20 and 0.02: a run holding at least 90 % of the probability
holds at least 0.97 of it. An interval that covers each such model at least 90 % of the time covers more
than 95 % of them on average, and the band 85-95 % of issue 41 is out of reach for that task.

For each target and task this study takes the default design's strata of the task (``k_t`` equal-count
strata of its items sorted by difficulty for the strongest sources, one item drawn from each, every item
of a stratum equally likely: the plain stratified draw, before the balanced choice among draws), so that
the hit count is Poisson-binomial with the target's stratum means, and finds the least probability of a
run of consecutive counts that is at least ``level`` (:func:`least_valid_coverage`). Its mean over the
target-runs of a task-cell is the least coverage any count-monotone interval can have while covering every
target with probability at least ``level``. The default's interval also depends on which items were hit
(design weights and the regression), so the bound describes it only approximately; it is printed beside
the default's own coverage of its 90 % intervals on the same seeds (as ``suite_fidelity``'s ``suite``
method measures it).

Run::

    python -m benchsel.benchmarks.studies.count_floor --seeds 5

Prints a markdown table per suite, regime, k and task: the median number of sampled items, the least
coverage at levels 0.90 and 0.85, and the default's coverage; then how many task-cells the default covers
below the bound at 0.90 (some model is covered less than 90 % of the time), and how many above both the
bound and 95 % (wider than validity for every model needs). ``--estimator-options '{"sure": false}'``
measures the default without its sure end.
"""
from __future__ import annotations

import argparse
import itertools
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.fidelity import split_models
from benchsel.benchmarks.suite_fidelity import ALPHA, BAND, KS, REGIMES, SUITES, _suite_fit, _truth, load_suite
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation.design import difficulty_features, difficulty_score, strata_edges
from benchsel.formulations.estimation.suite import PROPORTIONAL_SHARE

__all__ = ["least_valid_coverage", "poisson_binomial", "run", "stratum_means"]

LEVELS = (0.90, 0.85)
#: Coverage differences this small are not counted in the summary line (sampling noise).
MARGIN = 0.01


def poisson_binomial(p: np.ndarray) -> np.ndarray:
    """Probabilities of 0 .. n successes of independent trials with success probabilities ``p`` (n,);
    shape (n + 1,)."""
    pmf = np.ones(1)
    for q in np.asarray(p, dtype=float):
        pmf = np.convolve(pmf, [1.0 - q, q])
    return pmf


def least_valid_coverage(pmf: np.ndarray, level: float) -> float:
    """The least total probability of a run of consecutive counts whose total is at least ``level``.

    Parameters
    ----------
    pmf : ndarray, shape (n + 1,)
        Probabilities of the counts 0 .. n (sum 1).
    level : float
        In (0, 1].

    Returns
    -------
    float
        In [level, 1] (up to rounding).
    """
    if not 0 < level <= 1:
        raise InvalidInputError(f"level: expected 0 < level <= 1, got {level!r}")
    c = np.concatenate([[0.0], np.cumsum(np.asarray(pmf, dtype=float))])
    best = 1.0
    for a in range(c.size - 1):
        # the shortest run starting at a that reaches the level (runs only grow by extending b)
        b = int(np.searchsorted(c, c[a] + level - 1e-12, side="left"))
        if b < c.size:
            best = min(best, float(c[b] - c[a]))
    return best


def stratum_means(Y_target: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """Each target's mean over each of ``k`` equal-count strata of the items sorted by ``score``.

    Parameters
    ----------
    Y_target : ndarray, shape (T, N)
    score : ndarray, shape (N,)
    k : int
        ``1 <= k <= N``.

    Returns
    -------
    ndarray, shape (T, k)
    """
    N = score.size
    if not 1 <= k <= N:
        raise InvalidInputError(f"k: expected 1 <= k <= {N}, got {k!r}")
    order = np.argsort(score, kind="stable")
    edges = strata_edges(N, k)  # the default design's equal-count strata
    Ys = np.asarray(Y_target, dtype=float)[:, order]
    return np.stack([Ys[:, edges[h]:edges[h + 1]].mean(axis=1) for h in range(k)], axis=1)


def run(data_dir: Path, suite: str, regime: str, k: int, seed: int,
        estimator_options: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Per task of one (suite, regime, k, seed): ``items`` (sampled), ``floor`` ({level: mean least
    coverage over the targets}, None for a task whose scores are not all 0/1 or that is taken whole),
    ``cover`` (the default's coverage of the task, its tasks' estimator given ``estimator_options``) and
    ``targets``."""
    Y, tasks = load_suite(data_dir, suite)
    names = list(dict.fromkeys(tasks.tolist()))
    codes = np.array([names.index(t) for t in tasks])
    every = _truth(Y, codes, len(names))  # (models, tasks)
    src, tgt = split_models(every.mean(axis=1)[:, None], REGIMES[regime], seed)
    Ys, Yt = Y[src], Y[tgt]
    truth = every[tgt]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _suite_fit(Ys, k, seed, tasks, PROPORTIONAL_SHARE, estimator_options=estimator_options)
        _, lo, hi = est.predict_tasks_with_interval(Yt[:, est.selection_], alpha=ALPHA)
    hit = (lo <= truth + 1e-12) & (truth <= hi + 1e-12)
    out: dict[str, dict[str, Any]] = {}
    for j, t in enumerate(names):
        cols = np.flatnonzero(tasks == t)
        kt = len(est.columns_[j])
        floor = None
        if kt < cols.size and np.isin(Y[:, cols], (0.0, 1.0)).all():
            means = stratum_means(Yt[:, cols], difficulty_score(difficulty_features(Ys[:, cols])), kt)
            pmfs = [poisson_binomial(p) for p in means]
            floor = {lv: float(np.mean([least_valid_coverage(f, lv) for f in pmfs])) for lv in LEVELS}
        out[t] = {"items": kt, "floor": floor, "cover": float(hit[:, j].mean()), "targets": int(tgt.size)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    p.add_argument("--ks", nargs="+", type=int, default=list(KS))
    p.add_argument("--estimator-options", type=json.loads, default=None,
                   help='options of the tasks\' estimator as JSON (e.g. \'{"sure": false}\'); default: the default')
    args = p.parse_args(argv)
    data_dir = args.data_dir or default_data_dir()
    if data_dir is None:
        p.error("--data-dir: no shared data found (set BENCHSEL_DATA or pass --data-dir)")
    print("| suite | regime | k | task | items (median) | least coverage, valid at 90 % | at 85 % | "
          "default's coverage |")
    print("|---|---|---|---|---|---|---|---|")
    below = above = cells = 0
    for suite, regime, k in itertools.product(args.suites, REGIMES, args.ks):
        runs = [run(data_dir, suite, regime, k, s, args.estimator_options) for s in range(args.seeds)]
        for t in runs[0]:
            rs = [r[t] for r in runs]
            n = sum(r["targets"] for r in rs)
            cover = sum(r["cover"] * r["targets"] for r in rs) / n
            floors = [r["floor"] for r in rs if r["floor"] is not None]
            f = {lv: sum(fl[lv] * r["targets"] for fl, r in zip(floors, rs)) / n for lv in LEVELS} \
                if len(floors) == len(rs) else None
            fl_txt = " | ".join(f"{f[lv]:.3f}" for lv in LEVELS) if f else "- | -"
            if f:
                cells += 1
                below += cover < f[LEVELS[0]] - MARGIN
                above += cover > max(BAND[1], f[LEVELS[0]]) + MARGIN
            print(f"| {suite} | {regime} | {k} | {t} | {int(np.median([r['items'] for r in rs]))} | {fl_txt} | "
                  f"{cover:.3f} |", flush=True)
    print(f"\nOf {cells} task-cells with a bound: the default's coverage below the least coverage valid at "
          f"{LEVELS[0]:.0%} for every model by more than {MARGIN:.2f} in {below}; above both that bound and "
          f"{BAND[1]:.0%} by more than {MARGIN:.2f} in {above}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
