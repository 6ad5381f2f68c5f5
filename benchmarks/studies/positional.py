"""Positional representation / proportionality: the missing-data study, the performance run and time to proof.

Usage::

    python -m benchsel.benchmarks.studies.positional                 # full study + synthetic 200 x 100 case
    python -m benchsel.benchmarks.studies.positional --quick  # 3 tables, g in {2, 3}, eps = 0.2, synthetic 60 x 30
    python -m benchsel.benchmarks.studies.positional --g --no-synthetic --out results/positional  # proportionality only
    python -m benchsel.benchmarks.studies.positional --compare --no-synthetic   # time to proof, four exact methods
    python -m benchsel.benchmarks.studies.positional --compare --no-study --methods size-sweep highs:model=direct

Missing-data study: every real table of ``shared/data/positional`` under
``missing="drop"`` and ``missing="last"`` (ties ``"min"``); for g in {1, 2, 3, 4}
the minimum g-representative subset and the greedy colouring (plain and with
clean-up), for eps in {0.05, 0.1, 0.15, 0.2} the minimum eps-proportional
subset and the ``"sample"`` heuristic, for each ``--sizes`` (default 5) the
fixed-size subset with the smallest largest deviation and ``"prop-swap"``;
then, per (table, parameter), whether the policy changes the optimal size and
whether the subset chosen under one policy still has the property under the
other. The exact method is ``--exact`` (default ``"auto"``, the positional
formulations' default exact method, run standalone as a user calls it, its own
warm start included in its seconds; ``--exact highs`` warm-starts HiGHS from
the heuristic as before).

Performance: the same runs report proven optimality and seconds (target: each
real-table instance proven optimal within ``--time-limit`` = 10 s); a synthetic
Mallows profile of 200 metrics x 100 alternatives (g = 2; eps = 0.1) is solved
with ``--synthetic-time-limit`` = 120 s (optimal or the reported gap).

Time to proof (``--compare``): every minimum-size and fixed-size
proportionality instance (and representation for the ``--g`` given), each of
``--methods`` (default ``"highs"`` direct, ``"highs"`` size-indexed,
``"cpsat"``, ``"size-sweep"``) with the same heuristic warm start and
``--time-limit``; the seconds to proof side by side, then the synthetic case
with every method (``--synthetic-time-limit``).

Writes ``study.csv``, ``synthetic.csv`` and ``study.md`` (or ``compare.csv``,
``compare_synthetic.csv`` and ``compare.md``) to ``--out`` (default
``results/positional``) and prints the summary.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.proportionality import PositionalProportionality
from benchsel.formulations.representation import PositionalRepresentation
from benchsel.instances.scores import load_score_table, mallows_profile
from benchsel.solvers import solve

from .._data import default_data_dir
from ..tasks import parse_method

TABLES = (
    "helm/accuracy.tsv",
    "helm/fairness.tsv",
    "helm/robustness.tsv",
    "helm/calibration.tsv",
    "helm/efficiency.tsv",
    "helm/summarization.tsv",
    "helm/bias.tsv",
    "helm/toxicity.tsv",
    "helm/helm_lite_240829.csv",
    "bigbench/leaderboard.tsv",
)
QUICK_TABLES = ("helm/accuracy.tsv", "helm/toxicity.tsv", "helm/helm_lite_240829.csv")
POLICIES = ("drop", "last")


def _build(kind: str, df: Any, policy: str, param: float) -> Any:
    if kind == "representation":
        return PositionalRepresentation.from_scores(df, g=int(param), missing=policy)
    if kind == "fixed-size":
        return PositionalProportionality.from_scores(df, size=int(param), missing=policy)
    return PositionalProportionality.from_scores(df, eps=param, missing=policy)


def _exact(f: Any, exact: str, time_limit: float, seed: int, prop_model: str, warm: Any) -> Any:
    """The exact run: ``"highs"`` warm-started from the heuristic (and ``model=prop_model`` on minimum-size
    proportionality); any other method standalone, as a user calls it (its own warm start included in its time)."""
    if exact != "highs":
        return solve(f, exact, time_limit=time_limit, seed=seed)
    kw: dict[str, Any] = {"model": prop_model} if isinstance(f, PositionalProportionality) and f.size is None else {}
    return solve(f, "highs", time_limit=time_limit, seed=seed, warm_start=warm, **kw)


def _solve_instance(f: Any, kind: str, time_limit: float, seed: int, prop_model: str,
                    exact: str = "auto") -> dict[str, Any]:
    """Exact and heuristic runs on one instance."""
    row: dict[str, Any] = {"n_metrics": f.n_metrics, "n_alternatives": f.n_alternatives}
    if kind == "representation":
        plain = solve(f, "greedy-color", seed=seed)
        clean = solve(f, "greedy-color", seed=seed, cleanup=True)
        multi = solve(f, "greedy-multicover", seed=seed, cleanup=True)
        warm = min((plain, clean, multi), key=lambda r: r.objective).selection
        ex = solve(f, exact, time_limit=time_limit, seed=seed, warm_start=warm)
        row.update(heuristic=int(plain.objective), heuristic_cleanup=int(clean.objective),
                   multicover_cleanup=int(multi.objective), lower_bound=f.lower_bound(),
                   greedy_bound=f.bounds()["greedy_colour_bound"])
    elif kind == "fixed-size":
        swp = solve(f, "prop-swap", seed=seed, time_limit=max(1.0, time_limit))
        ex = _exact(f, exact, time_limit, seed, prop_model, swp.selection)
        row.update(heuristic=round(swp.objective, 6), heuristic_seconds=round(swp.seconds, 3))
    else:
        smp = solve(f, "sample", seed=seed, time_limit=max(1.0, time_limit))
        ex = _exact(f, exact, time_limit, seed, prop_model, smp.selection)
        b = f.bounds()
        row.update(heuristic=int(smp.objective), heuristic_seconds=round(smp.seconds, 3),
                   sample_size=b["sample_size"], upper_bound=round(b["upper_bound"], 1),
                   lower_bound=b["smallest_admissible_size"])
    opt = (round(ex.objective, 6) if kind == "fixed-size" else int(ex.objective)) if ex.feasible else None
    row.update(optimum=opt, bound=ex.bound, gap=ex.gap, exact=ex.method,
               exact_method=ex.extra.get("auto_method", ex.method),
               termination=ex.termination.value, proven=ex.termination == "optimal" and ex.feasible,
               seconds=round(ex.seconds, 3), selection=ex.selection if ex.feasible else None,
               model_rows=ex.extra.get("n_rows"))
    return row


def study(data: Path, tables: tuple[str, ...], gs: tuple[int, ...], epss: tuple[float, ...], time_limit: float,
          seed: int, prop_model: str, verbose: bool = True, policies: tuple[str, ...] = POLICIES,
          sizes: tuple[int, ...] = (), exact: str = "auto") -> list[dict[str, Any]]:
    """Every (table, policy, property, parameter): one row."""
    rows: list[dict[str, Any]] = []
    params = ([("representation", float(g)) for g in gs] + [("proportionality", e) for e in epss]
              + [("fixed-size", float(k)) for k in sizes])
    for name in tables:
        df = load_score_table(data / "positional" / name)
        built: dict[tuple[str, str, float], Any] = {}
        for policy in policies:
            for kind, p in params:
                base = {"table": name, "policy": policy, "property": kind, "param": p}
                try:
                    f = _build(kind, df, policy, p)
                except InvalidInputError as e:
                    rows.append({**base, "note": str(e).split(";")[0][:90]})
                    if verbose:
                        print(f"{name:28} {policy:4} {kind[:4]} {p:<5g} skipped: {str(e)[:70]}", flush=True)
                    continue
                r = _solve_instance(f, kind, time_limit, seed, prop_model, exact)
                built[(policy, kind, p)] = f
                rows.append({**base, **r, "note": ""})
                if verbose:
                    print(f"{name:28} {policy:4} {kind[:4]} {p:<5g} n={f.n_metrics:3} m={f.n_alternatives:3} "
                          f"opt={r['optimum']} ({r['termination']}, {r['seconds']:.2f}s, bound {r['bound']}) "
                          f"heur={r['heuristic']}", flush=True)
        # cross-policy comparison
        for kind, p in params:
            a = next((r for r in rows if r["table"] == name and r["policy"] == "drop" and r["property"] == kind
                      and r["param"] == p), None)
            b = next((r for r in rows if r["table"] == name and r["policy"] == "last" and r["property"] == kind
                      and r["param"] == p), None)
            if kind == "fixed-size" or a is None or b is None:
                continue  # a fixed-size subset is feasible under any policy: nothing to compare
            if a.get("selection") is None or b.get("selection") is None:
                continue
            fa, fb = built[("drop", kind, p)], built[("last", kind, p)]
            a["cross_feasible"] = bool(fb.check(a["selection"]).feasible)  # drop's subset under "last"
            b["cross_feasible"] = bool(fa.check(b["selection"]).feasible)  # last's subset under "drop"
    return rows


def synthetic(n_metrics: int, n_alternatives: int, g: int, eps: float, time_limit: float, seed: int,
              prop_model: str, verbose: bool = True, exact: str = "auto",
              prop_methods: tuple[str, ...] = ("auto",), rep_methods: tuple[str, ...] | None = None
              ) -> list[dict[str, Any]]:
    """The synthetic Mallows case: representation (each of ``rep_methods``, default ``exact``, warm-started
    from the cleaned-up greedy colouring) and minimum-size proportionality (each of ``prop_methods``;
    ``"highs"`` and ``"cpsat"`` are warm-started from ``"sample"``, the others run standalone)."""
    df = mallows_profile(n_metrics, n_alternatives, phi=0.9, seed=seed)
    out = []
    fr = PositionalRepresentation.from_scores(df, g=g)
    gc = solve(fr, "greedy-color", seed=seed)
    gcc = solve(fr, "greedy-color", seed=seed, cleanup=True)
    for spec in rep_methods or (exact,):
        name, opts = _method_spec(spec)
        t0 = time.perf_counter()
        ex = solve(fr, name, time_limit=time_limit, seed=seed, warm_start=gcc.selection, **opts)
        label = spec if spec != "auto" else f"auto ({ex.extra.get('auto_method')})"
        out.append({"case": f"representation g={g}", "method": label,
                    "n_metrics": n_metrics, "n_alternatives": n_alternatives,
                    "heuristic": int(gc.objective), "heuristic_cleanup": int(gcc.objective), "objective": ex.objective,
                    "bound": ex.bound, "gap": ex.gap, "termination": ex.termination.value,
                    "seconds": round(ex.seconds, 2), "build_seconds": round(ex.build_seconds, 2),
                    "model_rows": ex.extra.get("n_rows"), "total_seconds": round(time.perf_counter() - t0, 2)})
    fp = PositionalProportionality.from_scores(df, eps=eps)
    smp = None
    for spec in prop_methods:
        name, opts = _method_spec(spec)
        t0 = time.perf_counter()
        if name == "highs" or name == "cpsat":
            if smp is None:
                smp = solve(fp, "sample", seed=seed, time_limit=min(30.0, time_limit / 4))
            ex = solve(fp, name, time_limit=time_limit, seed=seed, warm_start=smp.selection, **opts)
            heur: Any = int(smp.objective)
        else:
            ex = solve(fp, name, time_limit=time_limit, seed=seed, **opts)
            heur = ex.extra.get("warm_start_objective")
        label = spec if spec != "auto" else f"auto ({ex.extra.get('auto_method')})"
        out.append({"case": f"proportionality eps={eps:g}", "method": label, "n_metrics": n_metrics,
                    "n_alternatives": n_alternatives, "heuristic": None if heur is None else int(heur),
                    "heuristic_cleanup": None, "objective": ex.objective,
                    "bound": ex.bound, "gap": ex.gap, "termination": ex.termination.value,
                    "seconds": round(ex.seconds, 2), "build_seconds": round(ex.build_seconds, 2),
                    "model_rows": ex.extra.get("n_rows"), "total_seconds": round(time.perf_counter() - t0, 2)})
    if verbose:
        for r in out:
            print(f"synthetic {n_metrics}x{n_alternatives} {r['case']} {r['method']}: objective {r['objective']} "
                  f"bound {r['bound']} gap {r['gap']} ({r['termination']}, {r['seconds']} s); "
                  f"heuristic {r['heuristic']}", flush=True)
    return out


# ---------------------------------------------------------- time to proof
#: The exact methods compared side by side (``--compare``): name and options.
COMPARE_METHODS = ("highs:model=direct", "highs:model=size-indexed", "cpsat", "size-sweep")


def _method_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:key=value,..."`` (values read as JSON when they parse, as the harness does)."""
    ms = parse_method(text)
    return ms.name, dict(ms.options)


def _heuristic(f: Any, kind: str, time_limit: float, seed: int) -> Any:
    if kind == "representation":
        return solve(f, "greedy-multicover", seed=seed, cleanup=True)
    return solve(f, "sample" if kind == "proportionality" else "prop-swap", seed=seed, time_limit=max(1.0, time_limit))


def compare(data: Path, tables: tuple[str, ...], epss: tuple[float, ...], sizes: tuple[int, ...],
            time_limit: float, seed: int, methods: tuple[str, ...] = COMPARE_METHODS,
            policies: tuple[str, ...] = POLICIES, verbose: bool = True, gs: tuple[int, ...] = ()
            ) -> list[dict[str, Any]]:
    """Time to proof of each exact method on every positional instance, the same warm start for all.

    Every method gets the heuristic's selection (``"sample"``, ``"prop-swap"`` for a fixed size,
    ``"greedy-multicover"`` with clean-up for representation) as its warm start, so the seconds compare the
    proofs; the heuristic's seconds are a column of their own. A method that does not take an instance
    (``model="size-indexed"`` is a minimum-size proportionality statement) is marked n/a.
    """
    rows: list[dict[str, Any]] = []
    params = ([("proportionality", e) for e in epss] + [("fixed-size", float(k)) for k in sizes]
              + [("representation", float(g)) for g in gs])
    for name in tables:
        df = load_score_table(data / "positional" / name)
        for policy in policies:
            for kind, p in params:
                try:
                    f = _build(kind, df, policy, p)
                except InvalidInputError:
                    continue
                heur = _heuristic(f, kind, time_limit, seed)
                row: dict[str, Any] = {"table": name, "policy": policy, "property": kind, "param": p,
                                       "n_metrics": f.n_metrics, "n_alternatives": f.n_alternatives,
                                       "heuristic": heur.objective, "heuristic_seconds": round(heur.seconds, 3)}
                for spec in methods:
                    mname, opts = _method_spec(spec)
                    if kind != "proportionality" and "model" in opts:  # one statement: the direct one
                        if opts["model"] != "direct":
                            row[f"{spec} seconds"] = None
                            row[f"{spec} status"] = "n/a"
                            continue
                        opts = {k: v for k, v in opts.items() if k != "model"}
                    ex = solve(f, mname, time_limit=time_limit, seed=seed, warm_start=heur.selection, **opts)
                    proven = ex.termination == "optimal" and ex.feasible
                    row[f"{spec} seconds"] = round(ex.seconds, 3)
                    row[f"{spec} status"] = "optimal" if proven else (
                        f"gap {100 * ex.gap:.0f} %" if ex.gap is not None else ex.termination.value)
                    row[f"{spec} objective"] = ex.objective if ex.feasible else None
                rows.append(row)
                if verbose:
                    cells = "  ".join(f"{m}: {row[f'{m} status']} {row[f'{m} seconds']}" for m in methods)
                    print(f"{name:28} {policy:4} {kind[:5]} {p:<5g} {cells}", flush=True)
    return rows


def compare_markdown(rows: list[dict[str, Any]], methods: tuple[str, ...], time_limit: float) -> str:
    """Side-by-side table of the seconds to proof (``> limit (status)`` where a method did not prove)."""
    head = "| table | policy | problem | " + " | ".join(f"`{m}`" for m in methods) + " |"
    lines = [head, "|---|---|---|" + "---|" * len(methods)]
    for r in rows:
        label = {"representation": f"g={int(r['param'])}", "fixed-size": f"size={int(r['param'])}"}.get(
            r["property"], f"eps={r['param']:g}")
        cells = []
        for m in methods:
            st, sec = r[f"{m} status"], r[f"{m} seconds"]
            cells.append("n/a" if st == "n/a" else (f"{sec:.2f}" if st == "optimal" else f"> {time_limit:g} ({st})"))
        lines.append(f"| {r['table'].split('/')[-1]} | {r['policy']} | {label} | " + " | ".join(cells) + " |")
    lines.append("")
    names = {"proportionality": "minimum size", "fixed-size": "fixed size", "representation": "representation"}
    for kind in names:
        rs = [r for r in rows if r["property"] == kind]
        if not rs:
            continue
        parts = []
        for m in methods:
            secs = [r[f"{m} seconds"] for r in rs if r[f"{m} status"] == "optimal"]
            app = [r for r in rs if r[f"{m} status"] != "n/a"]
            if not app:
                continue
            worst = f", max {max(secs):.2f} s" if secs else ""
            parts.append(f"`{m}` {len(secs)}/{len(app)} proven{worst}")
        lines.append(f"{names[kind]} ({len(rs)} instances): "
                     + "; ".join(parts) + ".")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------- reporting
def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def markdown(rows: list[dict[str, Any]], syn: list[dict[str, Any]], time_limit: float) -> str:
    lines = []
    lines.append("| table | property | drop: m | drop: optimum | drop: heuristic | last: m | last: optimum | "
                 "last: heuristic | policy changes size | drop's K ok under last | last's K ok under drop |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    keys = []
    for r in rows:
        k = (r["table"], r["property"], r["param"])
        if k not in keys:
            keys.append(k)
    for t, kind, p in keys:
        by_policy = {r["policy"]: r for r in rows if (r["table"], r["property"], r["param"]) == (t, kind, p)}
        d, l_ = by_policy.get("drop", {"note": "not run"}), by_policy.get("last", {"note": "not run"})

        def cell(r: dict[str, Any], key: str) -> str:
            if r.get("note"):
                return "n/a"
            v = r.get(key)
            mark = "" if key != "optimum" or r.get("proven") else "*"
            return _fmt(v) + mark

        label = {"representation": f"g={int(p)}", "fixed-size": f"size={int(p)}"}.get(kind, f"eps={p:g}")
        changed = "n/a" if d.get("note") or l_.get("note") else _fmt(d.get("optimum") != l_.get("optimum"))
        lines.append(f"| {t.split('/')[-1]} | {label} | {cell(d, 'n_alternatives')} | {cell(d, 'optimum')} | "
                     f"{cell(d, 'heuristic')} | {cell(l_, 'n_alternatives')} | {cell(l_, 'optimum')} | "
                     f"{cell(l_, 'heuristic')} | {changed} | {_fmt(d.get('cross_feasible'))} | "
                     f"{_fmt(l_.get('cross_feasible'))} |")
    lines.append("")
    exact = sorted({str(r.get("exact_method")) for r in rows if r.get("exact_method")})
    lines.append(f"`*`: not proven optimal within {time_limit:g} s (best found; exact: {', '.join(exact)}). "
                 "Heuristic: greedy colouring (representation), `sample` (proportionality), `prop-swap` (fixed size: "
                 "the optimum is the smallest largest deviation). n/a: `missing=\"drop\"` leaves no alternative.")
    if syn:
        lines.append("")
        lines.append("| synthetic case | method | n x m | heuristic | objective | bound | gap | termination "
                     "| seconds |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for r in syn:
            gap = "–" if r["gap"] is None else f"{100 * r['gap']:.1f} %"
            clean = "" if r.get("heuristic_cleanup") is None else f" (clean-up {r['heuristic_cleanup']})"
            lines.append(f"| {r['case']} | `{r['method']}` | {r['n_metrics']} x {r['n_alternatives']} | "
                         f"{r['heuristic']}{clean} | "
                         f"{_fmt(r['objective'])} | {_fmt(r['bound'])} | {gap} | {r['termination']} | {r['seconds']} |")
    return "\n".join(lines) + "\n"


def proof_markdown(rows: list[dict[str, Any]], time_limit: float) -> str:
    """Optimum and seconds to proof per (table, policy), one column per problem (``opt (s)``; ``*`` unproven).

    ``rows`` are the study's rows (or read back from ``study.csv``: numbers as strings are accepted).
    """
    def num(v: Any) -> float | None:
        return None if v in (None, "") else float(v)

    solved = [r for r in rows if not r.get("note")]
    cols: list[tuple[str, float]] = []
    for r in solved:
        key = (str(r["property"]), float(r["param"]))
        if key not in cols:
            cols.append(key)
    label = {"representation": "g={:g}", "fixed-size": "size={:g}", "proportionality": "eps={:g}"}
    heads = [label[k].format(p) for k, p in cols]
    lines = ["| table | policy | m | n | " + " | ".join(heads) + " |", "|---|---|---|---|" + "---|" * len(cols)]
    seen: list[tuple[str, str]] = []
    for r in solved:
        if (r["table"], r["policy"]) not in seen:
            seen.append((r["table"], r["policy"]))
    for t, pol in seen:
        rs = {(str(r["property"]), float(r["param"])): r for r in solved if (r["table"], r["policy"]) == (t, pol)}
        first = next(iter(rs.values()))
        cells = []
        for key in cols:
            row = rs.get(key)
            if row is None:
                cells.append("n/a")
                continue
            opt, sec = num(row.get("optimum")), num(row.get("seconds"))
            proven = str(row.get("proven")) == "True" and sec is not None and sec <= time_limit
            val = "–" if opt is None else (f"{opt:.4g}" if key[0] == "fixed-size" else f"{int(opt)}")
            cells.append(f"{val}{'' if proven else '*'}" + ("" if sec is None else f" ({sec:.2f} s)"))
        lines.append(f"| {str(t).split('/')[-1]} | {pol} | {first['n_alternatives']} | {first['n_metrics']} | "
                     + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Cell: optimum (seconds of the exact method, its warm start included); `*`: not proven within "
                 f"{time_limit:g} s. m alternatives (models) x n metrics; fixed size: the smallest largest deviation.")
    return "\n".join(lines) + "\n"


def summary(rows: list[dict[str, Any]], time_limit: float) -> list[str]:
    out = []
    solved = [r for r in rows if not r.get("note")]
    for kind in ("representation", "proportionality", "fixed-size"):
        rs = [r for r in solved if r["property"] == kind]
        if not rs:
            continue
        proven = [r for r in rs if r["proven"]]
        fast = [r for r in proven if r["seconds"] <= time_limit]
        secs = [r["seconds"] for r in rs]
        exact = ", ".join(sorted({str(r.get("exact_method")) for r in rs}))
        out.append(f"{kind}: {len(rs)} instances, proven optimal {len(proven)}, of which within {time_limit:g} s "
                   f"{len(fast)}; {exact} seconds median {statistics.median(secs):.2f}, max {max(secs):.2f}")
        ratios = [r["heuristic"] / r["optimum"] for r in proven if r["optimum"]]
        if ratios:
            name = {"representation": "greedy-colour", "proportionality": "sample"}.get(kind, "prop-swap")
            out.append(f"  {name} / optimum over {len(ratios)} proven instances: "
                       f"median {statistics.median(ratios):.3f}, max {max(ratios):.3f}")
        if kind == "representation":
            rc = [r["heuristic_cleanup"] / r["optimum"] for r in proven if r["optimum"]]
            rm = [r["multicover_cleanup"] / r["optimum"] for r in proven if r["optimum"]]
            out.append(f"  greedy-colour + clean-up / optimum: median {statistics.median(rc):.3f}, max {max(rc):.3f}; "
                       f"greedy-multicover + clean-up / optimum: median {statistics.median(rm):.3f}, max {max(rm):.3f}")
        if kind == "fixed-size":
            continue
        pairs: dict[tuple[Any, Any], dict[str, Any]] = {}
        for r in rs:
            pairs.setdefault((r["table"], r["param"]), {})[r["policy"]] = r
        both = [v for v in pairs.values() if "drop" in v and "last" in v]
        changed = sum(v["drop"]["optimum"] != v["last"]["optimum"] for v in both)
        cross = sum(bool(v["drop"].get("cross_feasible")) for v in both)
        out.append(f"  missing policy changes the optimal size in {changed} of {len(both)} (table, parameter) pairs; "
                   f"the subset chosen under 'drop' keeps the property under 'last' in {cross} of {len(both)}")
    return out


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys and k != "selection")
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*keys, "selection"])
        w.writeheader()
        for r in rows:
            sel = r.get("selection")
            w.writerow({**{k: r.get(k) for k in keys},
                        "selection": "" if sel is None else " ".join(str(int(i)) for i in sel)})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.positional",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 tables, g in {2, 3}, eps = 0.2, synthetic 60 x 30")
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per real-table exact solve")
    ap.add_argument("--synthetic-time-limit", type=float, default=120.0)
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--no-study", action="store_true")
    ap.add_argument("--prop-model", default="auto", choices=("auto", "direct", "size-indexed"),
                    help="minimum-size model when --exact highs")
    ap.add_argument("--exact", default="auto", help="exact method of the study (default 'auto', the positional "
                    "formulations' default: size-sweep for proportionality, highs for representation)")
    ap.add_argument("--tables", nargs="+", default=None, help="table paths under positional/ (default: all ten)")
    ap.add_argument("--g", nargs="*", type=int, default=None,
                    help="group sizes (default 1 2 3 4; none: --g; with --compare only those given)")
    ap.add_argument("--eps", nargs="*", type=float, default=None, help="eps values (default 0.05 0.1 0.15 0.2)")
    ap.add_argument("--sizes", nargs="*", type=int, default=None,
                    help="fixed sizes of the fixed-size problem (default 5; none: --sizes)")
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    ap.add_argument("--compare", action="store_true",
                    help="time to proof of each of --methods on every proportionality instance (the same warm "
                         "start for all) instead of the study; with the synthetic case unless --no-synthetic")
    ap.add_argument("--methods", nargs="+", default=list(COMPARE_METHODS),
                    help="exact methods of --compare, as name or name:key=value,...")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("results/positional"))
    args = ap.parse_args(argv)
    data: Path = args.data_dir or default_data_dir() or Path("../shared/data")
    if not args.no_study and not (data / "positional").is_dir():
        print(f"error: positional data not found under {data}; pass --data-dir", file=sys.stderr)
        return 2
    tables = tuple(args.tables) if args.tables else (QUICK_TABLES if args.quick else TABLES)
    gs = tuple(args.g) if args.g is not None else ((2, 3) if args.quick else (1, 2, 3, 4))
    epss = tuple(args.eps) if args.eps is not None else ((0.2,) if args.quick else (0.05, 0.1, 0.15, 0.2))
    sizes = tuple(args.sizes) if args.sizes is not None else (5,)
    t0 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    n, m, tl = (60, 30, 20.0) if args.quick else (200, 100, args.synthetic_time_limit)
    if args.compare:
        methods = tuple(args.methods)
        crows = [] if args.no_study else compare(data, tables, epss, sizes, args.time_limit, args.seed, methods,
                                                 tuple(args.policies), gs=tuple(args.g or ()))
        rep = tuple(dict.fromkeys(x.replace(":model=direct", "") for x in methods if "size-indexed" not in x))
        syn = [] if args.no_synthetic else synthetic(n, m, 2, 0.1, tl, args.seed, args.prop_model, exact=args.exact,
                                                     prop_methods=methods, rep_methods=rep)
        if crows:
            _write_csv(args.out / "compare.csv", crows)
        if syn:
            _write_csv(args.out / "compare_synthetic.csv", syn)
        md = compare_markdown(crows, methods, args.time_limit) if crows else ""
        (args.out / "compare.md").write_text(md + ("\n" + markdown([], syn, tl) if syn else ""))
        print()
        print(md.split("\n\n", 1)[-1].strip())
        print(f"total {time.perf_counter() - t0:.1f} s; tables in {args.out / 'compare.md'}")
        return 0
    rows = [] if args.no_study else study(data, tables, gs, epss, args.time_limit, args.seed, args.prop_model,
                                          policies=tuple(args.policies), sizes=sizes, exact=args.exact)
    syn = [] if args.no_synthetic else synthetic(n, m, 2, 0.1, tl, args.seed, args.prop_model, exact=args.exact,
                                                 prop_methods=(args.exact,))
    if rows:
        _write_csv(args.out / "study.csv", rows)
    if syn:
        _write_csv(args.out / "synthetic.csv", syn)
    md = markdown(rows, syn, args.time_limit) if rows else markdown([], syn, args.time_limit)
    if rows:
        md += "\n" + proof_markdown(rows, args.time_limit)
    (args.out / "study.md").write_text(md)
    print()
    for line in summary(rows, args.time_limit):
        print(line)
    print(f"total {time.perf_counter() - t0:.1f} s; tables in {args.out / 'study.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
