"""The positional paper's headline comparison on the shared data: a deployed lite subset against the subsets the
formulations find, the lite subset extended with ``include=``, and ``groups=`` (Definition 4.2) on metric families.

Usage::

    python -m benchsel.benchmarks.studies.positional_lite                # writes results/positional/lite.md, lite.csv
    python -m benchsel.benchmarks.studies.positional_lite --time-limit 30 --out /tmp/lite

The paper (arXiv 2506.09813, Section 5 / Appendix L) compares the subsets its
integer programs and greedy algorithm find with existing hand-curated lite
subsets (BIG-bench Lite, HELM Lite) and extends existing lite subsets. The
shared data hold no BIG-bench Lite task list and no full BIG-bench (see the
data README), but HELM Lite's scenarios MMLU, NarrativeQA, NaturalQuestions
(closed-book), NaturalQuestions (open-book) and OpenbookQA are 5 of the 16
HELM Classic accuracy scenarios of ``helm/accuracy.tsv``: that is the deployed
lite subset ``L`` inside the full suite ``N`` used here (the other 5 HELM Lite
scenarios are not in HELM Classic). For each missing-data policy (``"drop"``:
the 29 models with every score; ``"last"``: all 67, missing tied for last):

1. ``L``'s own guarantees: its largest deviation ``eps_L = maxdev(L)`` and the
   smallest ``g_L`` for which ``L`` is g-representative;
2. the smallest eps_L-proportional and g_L-representative subsets (the exact
   default method ``"auto"``) and the fixed-size-5 subset with the smallest
   largest deviation, against ``|L| = 5`` and ``eps_L``;
3. extension (``include=L``): the smallest eps-proportional (eps in 0.1, 0.15,
   0.2) and g-representative (g in 2, 3, 4) supersets of ``L``, against the
   optimum without ``include``.

Groups (``--no-groups`` to skip): accuracy, robustness and fairness joined on
the models (46 metrics, ``missing="last"``), one group per family: the
smallest eps-proportional subset with and without ``groups=``, and whether the
ungrouped optimum meets the grouped property.

Every exact run reports its termination; a row not proven optimal within
``--time-limit`` says so.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.proportionality import PositionalProportionality
from benchsel.formulations.representation import PositionalRepresentation
from benchsel.instances.scores import load_score_table
from benchsel.solvers import solve

from .._data import default_data_dir

#: HELM Lite's scenarios that are HELM Classic accuracy columns (``helm/accuracy.tsv``).
HELM_LITE_IN_CLASSIC = (
    "MMLU - EM",
    "NarrativeQA - F1",
    "NaturalQuestions (closed-book) - F1",
    "NaturalQuestions (open-book) - F1",
    "OpenbookQA - EM",
)
FAMILIES = ("accuracy", "robustness", "fairness")
EPS = (0.1, 0.15, 0.2)
GS = (2, 3, 4)


def _exact(f: Any, time_limit: float, seed: int) -> dict[str, Any]:
    r = solve(f, "auto", time_limit=time_limit, seed=seed)
    return {"value": r.objective if r.feasible else None, "termination": r.termination.value,
            "seconds": round(r.seconds, 2), "selection": r.selection if r.feasible else None,
            "proven": r.termination == "optimal" and r.feasible}


def lite_rows(df: Any, policy: str, time_limit: float, seed: int, verbose: bool = True) -> list[dict[str, Any]]:
    """Parts 1-3 of the module docstring for one missing-data policy."""
    base = PositionalProportionality.from_scores(df, eps=0.1, missing=policy)
    L = np.array([base.metrics.index(c) for c in HELM_LITE_IN_CLASSIC], dtype=np.int64)
    n, k = base.n_metrics, L.size
    eps_L = Fraction(base.max_deviation(L)).limit_denominator(n * k)  # exactly |C_N k - C_K n| / (n k)
    g_L = next(g for g in range(1, n + 1) if PositionalRepresentation.from_scores(df, g=g, missing=policy)
               .is_feasible(L))
    head = {"policy": policy, "n_metrics": n, "n_alternatives": base.n_alternatives}
    rows: list[dict[str, Any]] = []

    def add(question: str, lite: Any, found: dict[str, Any], **kw: Any) -> None:
        rows.append({**head, "question": question, "helm_lite": lite, "found": found["value"],
                     "termination": found["termination"], "seconds": found["seconds"], **kw,
                     "selection": found["selection"]})
        if verbose:
            print(f"{policy:4} {question:58} lite {lite!s:>8}  found {found['value']!s:>8}  "
                  f"({found['termination']}, {found['seconds']} s)", flush=True)

    fp = PositionalProportionality.from_scores(df, eps=eps_L, missing=policy)
    add(f"smallest eps_L-proportional subset (eps_L = {float(eps_L):.4f})", k, _exact(fp, time_limit, seed),
        param=float(eps_L))
    fr = PositionalRepresentation.from_scores(df, g=g_L, missing=policy)
    add(f"smallest g_L-representative subset (g_L = {g_L})", k, _exact(fr, time_limit, seed), param=g_L)
    fx = PositionalProportionality.from_scores(df, size=k, missing=policy)
    ex = _exact(fx, time_limit, seed)
    ex["value"] = None if ex["value"] is None else round(float(ex["value"]), 4)
    add(f"smallest largest deviation of {k} metrics", round(float(eps_L), 4), ex, param=k)
    lite = [df.columns[i] for i in L]
    for eps in EPS:
        free = _exact(PositionalProportionality.from_scores(df, eps=eps, missing=policy), time_limit, seed)
        ext = _exact(PositionalProportionality.from_scores(df, eps=eps, missing=policy, include=lite), time_limit,
                     seed)
        add(f"eps = {eps}: smallest superset of HELM Lite (include=)", k, ext, param=eps,
            optimum_without_include=free["value"], without_include_termination=free["termination"])
    for g in GS:
        free = _exact(PositionalRepresentation.from_scores(df, g=g, missing=policy), time_limit, seed)
        ext = _exact(PositionalRepresentation.from_scores(df, g=g, missing=policy, include=lite), time_limit, seed)
        add(f"g = {g}: smallest superset of HELM Lite (include=)", k, ext, param=g,
            optimum_without_include=free["value"], without_include_termination=free["termination"])
    return rows


def group_rows(data: Path, time_limit: float, seed: int, verbose: bool = True) -> list[dict[str, Any]]:
    """Grouped vs ungrouped proportionality on the accuracy, robustness and fairness families joined."""
    import pandas as pd

    frames = [load_score_table(data / "positional" / "helm" / f"{fam}.tsv") for fam in FAMILIES]
    df = pd.concat(frames, axis=1, join="inner")
    groups = [list(fr.columns) for fr in frames]
    rows = []
    for eps in EPS:
        fg = PositionalProportionality.from_scores(df, eps=eps, missing="last", groups=groups)
        fu = PositionalProportionality.from_scores(df, eps=eps, missing="last")
        g = _exact(fg, time_limit, seed)
        u = _exact(fu, time_limit, seed)
        meets = None if u["selection"] is None else bool(fg.is_feasible(u["selection"]))
        parts = [G for G, _ in fg.group_formulations()]
        per = [int(np.isin(G, g["selection"]).sum()) for G in parts] if g["selection"] is not None else None
        rows.append({"eps": eps, "n_metrics": fg.n_metrics, "n_alternatives": fg.n_alternatives,
                     "group_sizes": " ".join(str(G.size) for G in parts),
                     "grouped": g["value"], "grouped_termination": g["termination"], "grouped_seconds": g["seconds"],
                     "per_group": None if per is None else " ".join(map(str, per)),
                     "ungrouped": u["value"], "ungrouped_termination": u["termination"],
                     "ungrouped_seconds": u["seconds"], "ungrouped_meets_grouped": meets})
        if verbose:
            print(f"groups eps={eps}: grouped {g['value']} ({g['termination']}, {g['seconds']} s; per group {per}), "
                  f"ungrouped {u['value']} ({u['termination']}); ungrouped meets grouped: {meets}", flush=True)
    return rows


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def markdown(rows: list[dict[str, Any]], grows: list[dict[str, Any]], time_limit: float) -> str:
    out = ["| policy | n x m | question | HELM Lite | found | termination | seconds | without include |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        wo = r.get("optimum_without_include")
        out.append(f"| {r['policy']} | {r['n_metrics']} x {r['n_alternatives']} | {r['question']} | "
                   f"{_fmt(r['helm_lite'])} | {_fmt(r['found'])} | {r['termination']} | {r['seconds']} | "
                   f"{_fmt(wo) if 'optimum_without_include' in r else ''} |")
    out.append(f"\nExact method `\"auto\"`, {time_limit:g} s per run.")
    if grows:
        out += ["", "| eps | n x m | group sizes | grouped optimum | per group | termination | ungrouped optimum | "
                "termination | ungrouped optimum meets the grouped property |", "|---|---|---|---|---|---|---|---|---|"]
        for g in grows:
            meets = g["ungrouped_meets_grouped"]
            out.append(f"| {g['eps']} | {g['n_metrics']} x {g['n_alternatives']} | {g['group_sizes']} | "
                       f"{_fmt(g['grouped'])} | {g['per_group']} | {g['grouped_termination']} | "
                       f"{_fmt(g['ungrouped'])} | {g['ungrouped_termination']} | "
                       f"{'–' if meets is None else ('yes' if meets else 'no')} |")
    return "\n".join(out) + "\n"


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            sel = r.get("selection")
            w.writerow({**r, **({"selection": " ".join(str(int(i)) for i in sel)} if sel is not None else {})})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.positional_lite",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per exact run")
    ap.add_argument("--policies", nargs="+", default=["drop", "last"], choices=("drop", "last"))
    ap.add_argument("--no-groups", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("results/positional"))
    args = ap.parse_args(argv)
    data: Path = args.data_dir or default_data_dir() or Path("../shared/data")
    if not (data / "positional").is_dir():
        print(f"error: positional data not found under {data}; pass --data-dir", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    df = load_score_table(data / "positional" / "helm" / "accuracy.tsv")
    rows = [r for p in args.policies for r in lite_rows(df, p, args.time_limit, args.seed)]
    grows = [] if args.no_groups else group_rows(data, args.time_limit, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    _write_csv(args.out / "lite.csv", rows)
    if grows:
        _write_csv(args.out / "lite_groups.csv", grows)
    md = markdown(rows, grows, args.time_limit)
    (args.out / "lite.md").write_text(md)
    print()
    print(md)
    print(f"total {time.perf_counter() - t0:.1f} s; tables in {args.out / 'lite.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
