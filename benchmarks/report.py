"""Tables and plots of benchmark results.

* :func:`instance_tables` — one table per instance: objective, bound, gap to
  the reference (best proven optimum), seconds, feasibility, termination, and
  fidelity columns when the suite measures them; :func:`summary_table` — one
  line per (formulation, method) across instances.
* :func:`plot_gap_vs_time` — ``gap_vs_time.png``: every feasible run's gap
  against its seconds, one colour per method, one panel per formulation.
* :func:`plot_fidelity_vs_retention` — ``fidelity_vs_retention.png`` for
  compression formulations whose runs carry ``fidelity.*`` columns.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "instance_tables",
    "method_colors",
    "plot_fidelity_vs_retention",
    "plot_gap_vs_time",
    "render",
    "summary_rows",
    "summary_table",
]


#: Font sizes (points) and resolution of the figures.
FONT = {"title": 12, "label": 11, "tick": 10, "legend": 9}
DPI = 100


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _fmt(v: float, spec: str = ".6g") -> str:
    return "-" if v is None or not math.isfinite(v) else format(v, spec)


def _table(header: Sequence[str], body: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    w = [max(len(str(x)) for x in col) for col in zip(header, *body)] if body else [len(h) for h in header]
    def line(cells):
        return "  ".join(str(c).rjust(w[i]) if i in right else str(c).ljust(w[i]) for i, c in enumerate(cells)).rstrip()
    return [line(header)] + [line(b) for b in body]


def _fidelity_keys(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    keys: dict[str, None] = {}
    for r in rows:
        for k in r:
            if k.startswith("fidelity."):
                keys.setdefault(k, None)
    return list(keys)


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return statistics.fmean(xs) if xs else math.nan


def _group(rows: Iterable[Mapping[str, Any]], *keys: str) -> dict[tuple, list[Mapping[str, Any]]]:
    g: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        g[tuple(r.get(k) for k in keys)].append(r)
    return g


def _method_order(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Exact methods first, then heuristics, each in first-seen order."""
    seen: dict[str, str] = {}
    for r in rows:
        seen.setdefault(r["method"], r.get("kind", ""))
    names = [m for m, k in seen.items() if k == "exact"] + [m for m, k in seen.items() if k != "exact"]
    return {m: i for i, m in enumerate(names)}


def instance_tables(rows: Sequence[Mapping[str, Any]]) -> str:
    """One table per instance (rows must carry reference gaps: see ``harness.reference_gaps``)."""
    out: list[str] = []
    for (inst, _fp), rs in _group(rows, "instance", "fingerprint").items():
        r0 = rs[0]
        fid = _fidelity_keys(rs)
        ref = _f(r0.get("reference_value"))
        refs = {"optimum": f"best proven optimum {_fmt(ref)}",
                "bound": f"best proven bound {_fmt(ref)} (no optimum proven)"}
        known = _f(r0.get("meta.known_optimum"))
        extra = f"; known optimum {_fmt(known)}" if math.isfinite(known) else ""
        limits = sorted({_f(r.get("time_limit")) for r in rs})
        tl = ", ".join(_fmt(t, "g") for t in limits)
        out.append(f"== {inst}  ({r0.get('formulation')}, {r0.get('n_items')} items, {r0.get('sense')}; time limit"
                   f"{'s' * (len(limits) > 1)} {tl} s; "
                   f"reference: {refs.get(r0.get('reference') or '', 'none')}{extra})")
        if len({r.get("time_limit") for r in rs}) > 1:  # runs with different limits stored together
            rs = [{**r, "method": f"{r['method']} @{_fmt(_f(r.get('time_limit')), 'g')}s"} for r in rs]
        by_m = _group(rs, "method")
        order = _method_order(rs)
        multi = any(len(v) > 1 for v in by_m.values())
        header = ["method", "kind", "runs", "objective", "bound", "gap %"] + (["gap % max"] if multi else []) + \
                 ["seconds", "feasible", "termination"] + [k.split(".", 1)[1] for k in fid]
        body = []
        for (m,), mr in sorted(by_m.items(), key=lambda kv: order.get(kv[0][0], 99)):
            sense_best = min if r0.get("sense") == "min" else max
            objs = [_f(r["objective"]) for r in mr if r.get("feasible") is True and math.isfinite(_f(r["objective"]))]
            bounds = [_f(r.get("bound")) for r in mr if math.isfinite(_f(r.get("bound")))]
            gaps = [100 * _f(r.get("gap")) for r in mr if math.isfinite(_f(r.get("gap")))]
            terms = Counter(str(r.get("termination")) for r in mr)
            term = ", ".join(t if n == 1 and len(mr) == 1 else f"{t} x{n}" for t, n in terms.most_common())
            row = [m, str(mr[0].get("kind", "")), str(len(mr)), _fmt(sense_best(objs)) if objs else "-",
                   _fmt((max if r0.get("sense") == "min" else min)(bounds)) if bounds else "-",
                   _fmt(_mean(gaps), ".3f")]
            if multi:
                row.append(_fmt(max(gaps), ".3f") if gaps else "-")
            row += [_fmt(_mean([_f(r.get("seconds")) for r in mr]), ".2f"),
                    f"{sum(r.get('feasible') is True for r in mr)}/{len(mr)}", term]
            row += [_fmt(_mean([_f(r.get(k)) for r in mr]), ".4f") for k in fid]
            body.append(row)
        right = {2, 3, 4, 5, 6} | ({7} if multi else set())
        right |= set(range(len(header) - len(fid), len(header)))
        out += _table(header, body, right)
        errs = [r for r in rs if r.get("error")]
        for r in errs[:3]:
            out.append(f"   ! {r['method']} seed {r.get('seed')}: {r['error']}")
        out.append("")
    return "\n".join(out)


def summary_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One record per (formulation, method) across instances."""
    out = []
    order = _method_order(rows)
    for (form, m), rs in sorted(_group(rows, "formulation", "method").items(),
                                key=lambda kv: (str(kv[0][0]), order.get(kv[0][1], 99))):
        gaps = [_f(r.get("gap")) for r in rs if math.isfinite(_f(r.get("gap")))]
        out.append({
            "formulation": form, "method": m, "kind": rs[0].get("kind", ""),
            "instances": len({r["instance"] for r in rs}),
            "runs": len(rs), "feasible": sum(r.get("feasible") is True for r in rs),
            "optimal": sum(r.get("termination") == "optimal" for r in rs),
            "killed": sum(r.get("termination") == "killed" for r in rs),
            "gap_mean": _mean(gaps), "gap_max": max(gaps) if gaps else math.nan,
            "seconds_mean": _mean([_f(r.get("seconds")) for r in rs]),
            "seconds_max": max((_f(r.get("seconds")) for r in rs), default=math.nan),
        })
    return out


def summary_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Text table of :func:`summary_rows`."""
    header = ["formulation", "method", "kind", "instances", "runs", "feasible", "optimal", "killed", "gap % mean",
              "gap % max", "seconds mean", "seconds max"]
    body = [[s["formulation"], s["method"], s["kind"], str(s["instances"]), str(s["runs"]), str(s["feasible"]),
             str(s["optimal"]), str(s["killed"]), _fmt(100 * s["gap_mean"], ".3f"), _fmt(100 * s["gap_max"], ".3f"),
             _fmt(s["seconds_mean"], ".2f"), _fmt(s["seconds_max"], ".2f")] for s in summary_rows(rows)]
    return "\n".join(["== summary (gap to the best proven optimum of exact runs, per run)",
                      *_table(header, body, set(range(3, 12)))])


# ------------------------------------------------------------------ plots
def _colors(methods: list[str]) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")
    return {m: cmap(i % cmap.N) for i, m in enumerate(methods)}


def method_colors(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One colour per method for every panel of a figure (exact methods first, then heuristics)."""
    order = _method_order(rows)
    return _colors(sorted(order, key=order.__getitem__))


def plot_gap_vs_time(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path | None:
    """Scatter of gap (%) against seconds: one panel per formulation, one colour per method.

    Squares are exact methods, dots heuristics; the y axis is linear below
    0.1 % and logarithmic above. Returns the PNG path, or None when no run has
    a gap.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [r for r in rows if math.isfinite(_f(r.get("gap"))) and math.isfinite(_f(r.get("seconds")))]
    if not pts:
        return None
    forms = list(dict.fromkeys(r["formulation"] for r in pts))
    ncols = min(3, len(forms))
    nrows = -(-len(forms) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.0 * ncols, 3.8 * nrows), squeeze=False)
    for ax in axes.ravel()[len(forms):]:
        ax.axis("off")
    col = method_colors(pts)  # the same colour for a method in every panel
    for ax, form in zip(axes.ravel(), forms):
        fr = [r for r in pts if r["formulation"] == form]
        order = _method_order(fr)
        methods = sorted(order, key=order.__getitem__)
        top = 0.0
        for m in methods:
            mr = [r for r in fr if r["method"] == m]
            x = [max(_f(r["seconds"]), 1e-4) for r in mr]
            y = [100 * _f(r["gap"]) for r in mr]
            top = max(top, *y)
            ax.scatter(x, y, s=28, alpha=0.8, color=col[m], label=m,
                       marker="s" if mr[0].get("kind") == "exact" else "o", edgecolors="none")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_ylim(-0.02, max(1.0, top) * 2.5)
        ax.set_xlabel("seconds (log)", fontsize=FONT["label"])
        ax.set_ylabel("gap, %", fontsize=FONT["label"])
        ax.tick_params(labelsize=FONT["tick"])
        n_inst = len({r["instance"] for r in fr})
        ax.set_title(f"{form}: {n_inst} instance{'s' * (n_inst > 1)}", fontsize=FONT["title"])
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=FONT["legend"], loc="upper right", framealpha=0.7, handletextpad=0.2, borderpad=0.3)
    fig.suptitle("gap to the best proven optimum vs time (squares: exact methods)", fontsize=FONT["title"])
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _plot_keys(keys: list[str]) -> list[str]:
    """Fidelity columns to plot: the ``mean_*`` ones when there are any (at most 3), else the first 3."""
    means = [k for k in keys if k.split(".", 1)[1].startswith("mean_")]
    return (means or keys)[:3]


def plot_fidelity_vs_retention(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path | None:
    """Fidelity against retention (selected share of items), one line per method.

    One row of panels per formulation with ``fidelity.*`` columns (its
    ``mean_*`` measures, at most three); each point is the mean over the runs
    (seeds, instances) at that retention. Returns None when no row has
    fidelity columns.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fid_rows = [r for r in rows if _fidelity_keys([r]) and math.isfinite(_f(r.get("retention")))]
    if not fid_rows:
        return None
    forms = list(dict.fromkeys(r["formulation"] for r in fid_rows))
    keys = {form: _plot_keys(_fidelity_keys([r for r in fid_rows if r["formulation"] == form])) for form in forms}
    ncols = max(len(k) for k in keys.values())
    order = _method_order(fid_rows)
    methods = sorted(order, key=order.__getitem__)
    col = method_colors(fid_rows)
    fig, axes = plt.subplots(len(forms), ncols, figsize=(4.4 * ncols + 2.0, 3.5 * len(forms)), squeeze=False)
    for i, form in enumerate(forms):
        for j in range(ncols):
            ax = axes[i][j]
            if j >= len(keys[form]):
                ax.axis("off")
                continue
            key = keys[form][j]
            for m in methods:
                pts = defaultdict(list)
                for r in fid_rows:
                    if r["formulation"] == form and r["method"] == m and math.isfinite(_f(r.get(key))):
                        pts[round(_f(r["retention"]), 4)].append(_f(r[key]))
                if not pts:
                    continue
                xs = sorted(pts)
                ax.plot([100 * x for x in xs], [statistics.fmean(pts[x]) for x in xs], marker="o", ms=3.5,
                        lw=1.2, color=col[m], label=m)
            name = key.split(".", 1)[1]
            ax.set_title(f"{form}: {name}", fontsize=FONT["title"])
            ax.set_xlabel("retention, % of items", fontsize=FONT["label"])
            ax.tick_params(labelsize=FONT["tick"])
            ax.grid(alpha=0.3)
    handles, labels = [], []
    for ax in axes.ravel():
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="center right", fontsize=FONT["legend"], frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 1.9 / fig.get_figwidth(), 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def render(rows: Sequence[Mapping[str, Any]], out_dir: str | Path | None = None, *, plots: bool = True
           ) -> tuple[str, list[Path]]:
    """Tables as text, and (with ``out_dir``) ``summary.csv`` and PNG plots under ``out_dir/plots``.

    ``rows`` must carry reference gaps (``harness.reference_gaps``).
    """
    text = instance_tables(rows) + "\n" + summary_table(rows) + "\n"
    written: list[Path] = []
    if out_dir is not None:
        import csv

        out_dir = Path(out_dir)
        srows = summary_rows(rows)
        if srows:
            p = out_dir / "summary.csv"
            with p.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(srows[0]))
                w.writeheader()
                for s in srows:
                    w.writerow({k: ("" if isinstance(v, float) and not math.isfinite(v) else v) for k, v in s.items()})
            written.append(p)
        if plots:
            for fn, name in ((plot_gap_vs_time, "gap_vs_time.png"),
                             (plot_fidelity_vs_retention, "fidelity_vs_retention.png")):
                png = fn(rows, out_dir / "plots" / name)
                if png is not None:
                    written.append(png)
    return text, written
