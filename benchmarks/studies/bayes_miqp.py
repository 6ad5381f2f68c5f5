"""Time to proof of the BayesAME batch problem through ``"scip"`` against ``"exhaustive"``.

Usage::

    python -m benchsel.benchmarks.studies.bayes_miqp --family continuous --out results/miqp/continuous.csv
    python -m benchsel.benchmarks.studies.bayes_miqp --family binary --out results/miqp/binary.csv
    python -m benchsel.benchmarks.studies.bayes_miqp --family binary --cells 4:5 5:10 --time-limit 30
    python -m benchsel.benchmarks.studies.bayes_miqp --family binary --cells 4:40 --methods scip
    python -m benchsel.benchmarks.studies.bayes_miqp --summary results/miqp/continuous.csv results/miqp/binary.csv
    python -m benchsel.benchmarks.studies.bayes_miqp --family continuous --diagonal-room --cells 40:4 120:4 200:4

Methods (``--methods``, all three by default): ``exhaustive`` (enumeration),
``scip`` (SCIP on the default statement, the perspective outer approximation
with lazy cuts: ``model="oa"``) and ``scip-miqp`` (SCIP on the mixed-integer
quadratic program: ``model="miqp"``). Every method gets the same time limit
(60 s by default) on the same instance; a run is *proven* when it ends
``optimal`` (for SCIP: with the selection's exact objective within the
requested gap, 1e-6, plus SCIP's tolerance slack of SCIP's bound — otherwise
``"unknown"``).

Families (one seeded instance per cell, 10 items already observed):

``continuous``
    Unique buckets: 5 reference models with uniform scores on ``|U| + 10``
    items, ``sigma^2 = 0.01``; cells ``|U|:k``. ``"exhaustive"`` enumerates
    item sets (``C(|U|, k)``), the MIQP has ``|U|`` binaries.
``binary``
    Repeated buckets: ``Kr`` reference models drawn from ``openllm_v2_ifeval``
    (binary; 541 items, so ``|U| = 531``), ``sigma^2 = 0.1`` (BayesAME's value
    outside the unique regime); cells ``Kr:k``. ``"exhaustive"`` enumerates
    bucket-count vectors, the MIQP keeps ``min(k, items)`` copies per bucket.

``--diagonal-room`` prints, per cell, how much diagonal the perspective
statement could take from ``Sigma|C`` (the usual way to strengthen a
perspective relaxation: ``S - diag(delta)`` must stay positive semi-definite,
so ``delta_b`` is at most bucket ``b``'s variance given every other bucket)
beside the noise ``D_b`` it already holds; nothing is solved.

Run under the shared lock: ``flock /work/bench.lock python -m ...``.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.bayes import BatchInformationGain
from benchsel.formulations.bayes.search import count_vectors
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.instances.responses import load_responses
from benchsel.solvers import solve

from .._data import default_data_dir
from .._rows import add_summary_options, append_rows, print_summary

CONTINUOUS_CELLS = ("20:4", "40:4", "60:4", "80:4", "120:4", "40:3", "40:5", "40:6", "40:8", "60:8")
BINARY_CELLS = ("4:5", "4:10", "4:15", "4:20", "5:5", "5:10", "5:15", "6:5", "6:10", "6:15")
IFEVAL = "benchmark_prediction/openllm_v2_ifeval.npz"
#: method label -> (registered method, options)
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "exhaustive": ("exhaustive", {"max_candidates": 10 ** 12}),
    "scip": ("scip", {"model": "oa"}),
    "scip-miqp": ("scip", {"model": "miqp"}),
}


def continuous_instance(n_u: int, k: int, seed: int = 0) -> BatchInformationGain:
    rng = np.random.default_rng([seed, n_u, k])
    N = n_u + 10
    R = rng.uniform(size=(5, N))
    C = rng.choice(N, 10, replace=False)
    return BatchInformationGain(R, coreset=C, observed=rng.uniform(size=10), k=k, sigma2=1e-2)


def binary_instance(data_dir: Path, n_ref: int, k: int, seed: int = 0) -> BatchInformationGain:
    Y = load_responses(data_dir / "responses" / IFEVAL).matrix(0)
    rng = np.random.default_rng([seed, n_ref])
    refs = rng.choice(Y.shape[0], n_ref, replace=False)
    target = rng.choice(np.setdiff1d(np.arange(Y.shape[0]), refs))
    C = np.sort(rng.choice(Y.shape[1], 10, replace=False))
    return BatchInformationGain(Y[refs], coreset=C, observed=Y[target, C], k=k, sigma2=0.1)


def run(family: str, cells: list[str], data_dir: Path | None, time_limit: float, quiet: bool = False,
        out: Path | None = None, methods: tuple[str, ...] = tuple(METHODS)) -> list[dict[str, Any]]:
    """Every method (labels of :data:`METHODS`) on every cell; rows are appended to ``out`` cell by cell."""
    rows: list[dict[str, Any]] = []
    if not quiet:
        print(f"{'cell':>7} {'|U|':>5} {'k':>3} {'buckets':>7} {'space':>10} {'method':10} {'proven':>6} "
              f"{'seconds':>8} {'beta':>12} {'gap':>9}  note", flush=True)
    for cell in cells:
        a, k = (int(v) for v in cell.split(":"))
        if family == "continuous":
            f = continuous_instance(a, k)
        else:
            assert data_dir is not None
            f = binary_instance(data_dir, a, k)
        n_u = int(f.unevaluated.size)
        space = count_vectors(f.data.avail, k) if family == "binary" else math.comb(n_u, k)
        ref = None
        first = len(rows)
        for m in methods:
            method, opts = METHODS[m]
            try:
                res = solve(f, method, time_limit=time_limit, seed=0, **opts)
            except InvalidInputError as e:  # the enumeration refuses a space beyond max_candidates
                rows.append({"family": family, "cell": cell, "U": n_u, "k": k, "U_times_k": n_u * k,
                             "buckets": f.data.n_buckets, "space": space, "method": m, "proven": False,
                             "termination": "refused", "seconds": 0.0, "beta": "", "bound": "", "gap": "",
                             "note": str(e).split(";")[0], "columns": "", "nodes": ""})
                if not quiet:
                    print(f"{cell:>7} {n_u:>5} {k:>3} {f.data.n_buckets:>7} {space:>10.3g} {m:10} refused", flush=True)
                continue
            proven = res.termination == "optimal"
            if m == "exhaustive" and proven:
                ref = res.objective
            note = ""
            if method == "scip":
                note = str(res.extra.get("scip_status", ""))
                if ref is not None and proven:
                    note += f", agrees with exhaustive: {abs(res.objective - ref) <= 1e-9 * max(ref, 1e-12)}"
            row = {"family": family, "cell": cell, "U": n_u, "k": k, "U_times_k": n_u * k,
                   "buckets": f.data.n_buckets, "space": space, "method": m, "proven": proven,
                   "termination": res.termination.value, "seconds": res.seconds, "beta": res.objective,
                   "bound": res.bound, "gap": res.gap, "note": note,
                   "columns": res.extra.get("n_cols"), "nodes": res.extra.get("scip_nodes")}
            rows.append(row)
            if not quiet:
                g = "" if res.gap is None else f"{res.gap:.1e}"
                print(f"{cell:>7} {n_u:>5} {k:>3} {f.data.n_buckets:>7} {space:>10.3g} {m:10} {proven!s:>6} "
                      f"{res.seconds:>8.2f} {res.objective:>12.6g} {g:>9}  {note}", flush=True)
        if out is not None:
            append_rows(out, rows[first:])
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for fam in dict.fromkeys(r["family"] for r in rows):
        for m in [m for m in METHODS if any(r["method"] == m for r in rows)]:
            pr = [r for r in rows if r["family"] == fam and r["method"] == m and str(r["proven"]) == "True"]
            if not pr:
                lines.append(f"{fam:10} {m:10}: proved nothing")
                continue
            big = max(pr, key=lambda r: int(r["U_times_k"]) * 10 ** 6 + int(r["k"]))
            kmax = max(pr, key=lambda r: (int(r["k"]), int(r["U"])))
            lines.append(f"{fam:10} {m:10}: proved {len(pr)} cells; largest |U| x k = {big['U']} x {big['k']} = "
                         f"{big['U_times_k']} ({float(big['seconds']):.1f} s); largest k = {kmax['k']} "
                         f"(|U| = {kmax['U']}, {float(kmax['seconds']):.1f} s)")
    return lines


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """A Markdown table, one line per cell: |U|, k, the search space, and each method's outcome and seconds."""
    present = [m for m in METHODS if any(r["method"] == m for r in rows)]
    head = "| family | cell | \\|U\\| | k | \\|U\\| x k | space | " + " | ".join(f"{m} | s" for m in present)
    head += " | " + " | ".join(f"{m} gap" for m in present if m != "exhaustive") + " |"
    n_cols = 6 + 2 * len(present) + sum(m != "exhaustive" for m in present)
    lines = [head, "|" + "---|" * n_cols]
    for fam, cell in dict.fromkeys((r["family"], r["cell"]) for r in rows):
        pr = {r["method"]: r for r in rows if r["family"] == fam and r["cell"] == cell}
        any_row = next(iter(pr.values()))

        def outcome(r: dict[str, Any] | None) -> list[str]:
            if r is None:
                return ["", ""]
            return ["proven" if str(r["proven"]) == "True" else str(r["termination"]), f"{float(r['seconds']):.1f}"]

        def gap(r: dict[str, Any] | None) -> str:
            return "" if r is None or r["gap"] in ("", None) else f"{float(r['gap']):.1e}"

        cells = [c for m in present for c in outcome(pr.get(m))] + [gap(pr.get(m)) for m in present
                                                                      if m != "exhaustive"]
        lines.append(f"| {fam} | {cell} | {any_row['U']} | {any_row['k']} | {any_row['U_times_k']} | "
                     f"{float(any_row['space']):.3g} | " + " | ".join(cells) + " |")
    return lines


def diagonal_room(f: BatchInformationGain) -> dict[str, float]:
    """Ceiling of a diagonal shift ``delta`` with ``Sigma|C - diag(delta)`` positive semi-definite.

    ``delta_b`` can be at most ``1 / (S^{-1})_bb``, bucket ``b``'s variance given
    every other live bucket. ``S`` gets a ridge of ``1e-12`` times its mean
    diagonal to be invertible, which only raises these values (upper bounds).

    Returns
    -------
    dict
        ``median`` and ``max`` of the ceiling over the buckets, the median
        ``noise`` ``D_b`` and the median prior diagonal ``diag_S``.
    """
    d = f.data
    S = 0.5 * (d.S + d.S.T)
    ridge = 1e-12 * float(np.mean(np.diag(S)))
    room = 1.0 / np.diag(np.linalg.inv(S + ridge * np.eye(S.shape[0])))
    return {"median": float(np.median(room)), "max": float(room.max()), "noise": float(np.median(d.noise)),
            "diag_S": float(np.median(np.diag(S)))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.bayes_miqp",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=["continuous", "binary"], default="continuous")
    ap.add_argument("--cells", nargs="+", default=None, help="|U|:k (continuous) or Kr:k (binary)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS),
                    help="methods to run (default: all)")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--diagonal-room", action="store_true",
                    help="print the diagonal a perspective statement could take from Sigma|C per cell; solve nothing")
    add_summary_options(ap, "CSV file (appended to when it exists)")
    args = ap.parse_args(argv)
    if args.summary:
        print_summary(args.summary, summarize, markdown if args.markdown else None)
        return 0
    data = args.data_dir or default_data_dir()
    if args.family == "binary" and (data is None or not (data / "responses" / IFEVAL).is_file()):
        print("error: openllm_v2_ifeval not found under <data>/responses; pass --data-dir", file=sys.stderr)
        return 2
    cells = args.cells or list(CONTINUOUS_CELLS if args.family == "continuous" else BINARY_CELLS)
    if args.diagonal_room:
        print(f"{'cell':>7} {'buckets':>7} {'median room':>12} {'max room':>10} {'noise D_b':>10} {'diag S':>8}")
        for cell in cells:
            a, k = (int(v) for v in cell.split(":"))
            if args.family == "continuous":
                f = continuous_instance(a, k)
            else:
                assert data is not None  # checked above
                f = binary_instance(data, a, k)
            r = diagonal_room(f)
            print(f"{cell:>7} {f.data.n_buckets:>7} {r['median']:>12.2e} {r['max']:>10.2e} {r['noise']:>10.2e} "
                  f"{r['diag_S']:>8.3f}")
        return 0
    rows = run(args.family, cells, data, args.time_limit, out=args.out, methods=tuple(args.methods))
    print()
    print("\n".join(summarize(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
