"""``benchsel compress`` and ``benchsel estimate``: the main job from the command line.

::

    benchsel compress SCORES --k K --out DIR [--selection S] [--estimator E] [--seed N] [--time-limit S]
                      [--metric M | --metric TASK=M ...] [--filter F | --filter TASK=F ...]
                      [--tasks PATTERN ...] [--aggregate macro|micro|TASK=W ...] [--chance B | TASK=B ...]
                      [--pool | --no-groups]
                      [--missing error|drop-items|drop-models] [--duplicates error|latest]
                      [--format auto|lm-eval|leaderboard|helm|table|npz] [--model-column COLUMN] [--force]
                      [--jobs N | --scheduler ADDRESS] [--no-progress] [--max-line-mb MB] [...]
    benchsel estimate DIR NEW_SCORES [--metric ...] [--filter F] [--format ...] [--json]

``SCORES`` is an lm-evaluation-harness output folder (``--log_samples``), a
folder of Open LLM Leaderboard details or HELM runs, or a ``.csv``,
``.parquet`` or ``.npz`` matrix (models x items). ``compress`` writes into
``DIR`` the saved compression (``compression.json``, ``arrays.npz``), the
selected items as ``items.csv`` and, when the items are ``task/doc_id``
labels of lm-eval logs, ``samples.json`` for ``lm_eval --samples
DIR/samples.json``. ``estimate`` reads the new models' scores (by default
the way ``compress`` read its scores) and prints each model's estimated
full-benchmark score with a 90 % interval (``--alpha``) and which estimate it got.

Scores read from evaluation logs keep their tasks (lm-eval tasks, leaderboard benchmarks, HELM
scenarios): with two or more, ``compress`` splits the budget across the tasks and ``estimate`` prints a
row per task and the suite's row (``--aggregate``, default macro: the mean of the tasks; ``--pool``
estimates the pooled item mean instead). lm-eval groups (``mmlu`` and its subjects) get a row each, and
weight the suite as lm-eval weights them unless ``--aggregate`` is given (:mod:`.cli_suite_rows`);
``--no-groups`` keeps the tasks but ignores the logs' groups (no group rows, the suite weighted by
``--aggregate``, default macro; not with ``--pool``, which ignores tasks and groups alike). ``estimate``
refuses new lm-eval logs whose groups differ from the compression's, by name.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import check_float, check_int, check_run_settings
from benchsel.formulations.estimation import get_estimator
from benchsel.instances.evallogs import parse_item_label, write_items_csv, write_samples_json
from benchsel.instances.scorefiles import load_scores
from benchsel.solvers.compression import DEFAULT_ESTIMATOR, DEFAULT_SELECTION, compress, load_compressed
from benchsel.solvers.saved import ARRAYS, META, align_scores, check_out_folder, estimate_table
from benchsel.solvers.selections import get_selection

from .cli_suite_rows import SuiteRows, groups_note

__all__ = ["COMMANDS", "add_commands", "cmd_compress", "cmd_estimate"]


def _err(msg: str) -> None:
    print(f"benchsel: {msg}", file=sys.stderr, flush=True)


def _reader_options(p: argparse.ArgumentParser, *, defaults_from_saved: bool) -> None:
    later = " (default: as when compressed)" if defaults_from_saved else ""
    p.add_argument("--format", default=None, choices=("auto", "lm-eval", "leaderboard", "helm", "table", "npz"),
                   help=f"how to read the scores (default: auto, from the path){later}")
    p.add_argument("--metric", action="append", default=None, metavar="M",
                   help="metric to read: a name (acc, acc_norm, exact_match, ...) or TASK=NAME, repeatable; "
                        f"by default each task's only metric{later}")
    p.add_argument("--filter", action="append", default=None, metavar="F",
                   help="lm-eval filter for tasks scored under several (none, strict-match, ...) or TASK=F, "
                        f"repeatable{later}")
    p.add_argument("--split", default=None, metavar="SPLIT", help=f"HELM split (test, valid){later}")
    p.add_argument("--model-column", default=None, metavar="COLUMN",
                   help=".csv/.parquet tables: the column of model names (default: the first column; a parquet's "
                        f"first column of numbers must be named){later}")
    p.add_argument("--missing", default="error", choices=("error", "drop-items", "drop-models"),
                   help="a cell missing for some models: refuse (default), or drop the incomplete items or models")
    p.add_argument("--duplicates", default="error", choices=("error", "latest"),
                   help="two logs of one task for one model: refuse (default) or keep the latest")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="read lm-eval model folders with N processes (default 1; the table is the same)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="read lm-eval model folders on this Dask scheduler (tcp://host:8786; the same table)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar while reading")


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``compress`` and ``estimate`` subcommands to ``benchsel``'s subparsers."""
    c = sub.add_parser("compress", parents=[common], help="choose k items of scored models and save the compression",
                       description="Read models x items scores (lm-eval sample logs, leaderboard details, HELM runs, "
                                   "or a .csv/.parquet/.npz matrix), choose k items, fit an estimator of the full "
                                   "score, and save it with lm-eval's --samples file and the item list.")
    c.add_argument("scores", type=Path, metavar="SCORES", help="scores of the models you already evaluated")
    c.add_argument("--k", type=int, required=True, metavar="K", help="items to keep")
    c.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write the compression into")
    c.add_argument("--selection", default=DEFAULT_SELECTION, metavar="S",
                   help=f"how to choose the items (default {DEFAULT_SELECTION})")
    c.add_argument("--estimator", default=None, metavar="E",
                   help=f"estimator of the full score (default: {DEFAULT_ESTIMATOR})")
    c.add_argument("--seed", type=int, default=0, metavar="N")
    c.add_argument("--time-limit", type=float, default=60.0, metavar="S", help="seconds for the selection's solver")
    c.add_argument("--tasks", nargs="+", default=None, metavar="PATTERN",
                   help="only tasks matching these shell patterns (evaluation logs)")
    c.add_argument("--aggregate", action="append", default=None, metavar="A",
                   help="the suite's score from its tasks' scores: macro (default: their mean), micro (weighted by "
                        "their sizes) or TASK=WEIGHT, repeatable")
    c.add_argument("--chance", action="append", default=None, metavar="B",
                   help="chance level of the tasks (one number, or TASK=B, repeatable): task scores rescaled to "
                        "max(0, (s - B) / (1 - B))")
    c.add_argument("--pool", action="store_true",
                   help="ignore the tasks: estimate the mean over every item of every task")
    c.add_argument("--no-groups", action="store_true",
                   help="keep the tasks of lm-eval logs but ignore their groups (group_subtasks): no group rows, "
                        "the suite weighted by --aggregate (default macro); not with --pool")
    c.add_argument("--force", action="store_true", help="replace a compression already in DIR")
    _reader_options(c, defaults_from_saved=False)

    e = sub.add_parser("estimate", parents=[common], help="estimate new models' full scores from a saved compression",
                       description="Read the new models' scores on the saved items and print each model's "
                                   "estimated full-benchmark score, a 1 - alpha interval and which estimate it got.")
    e.add_argument("dir", type=Path, metavar="DIR", help="a folder written by benchsel compress")
    e.add_argument("new_scores", type=Path, metavar="NEW_SCORES", help="the new models' scores on those items")
    e.add_argument("--json", action="store_true", help="print one JSON object per model instead of a table")
    e.add_argument("--alpha", type=float, default=0.1, help="miscoverage of the intervals (0.1: 90 %%)")
    _reader_options(e, defaults_from_saved=True)


def _by_task(values: list[str] | None, what: str) -> str | dict[str, str] | None:
    """``--metric acc`` -> ``"acc"``; ``--metric t1=acc --metric t2=f1`` -> ``{"t1": "acc", "t2": "f1"}``."""
    if not values:
        return None
    pairs = [v for v in values if "=" in v]
    if not pairs:
        if len(values) > 1:
            raise InvalidInputError(f"{what}: give one {what} name, or TASK=NAME pairs, got {' '.join(values)}")
        return values[0]
    if len(pairs) != len(values):
        raise InvalidInputError(f"{what}: mix of a plain name and TASK=NAME pairs: {' '.join(values)}")
    out: dict[str, str] = {}
    for v in pairs:
        task, _, name = v.partition("=")
        if not task or not name:
            raise InvalidInputError(f"{what}: expected TASK=NAME, got {v!r}")
        out[task] = name
    return out


def _read(path: Path, args: argparse.Namespace, saved: dict[str, Any], *, tasks: list[str] | None,
          min_items: int | None = None) -> Any:

    fmt = args.format or saved.get("format") or "auto"
    metric = _by_task(args.metric, "metric") if args.metric else saved.get("metric")
    filt = _by_task(args.filter, "filter") if args.filter else saved.get("filter")
    split = args.split if args.split is not None else saved.get("split")
    model_column = (args.model_column if args.model_column is not None
                    else saved.get("model_column") if fmt == saved.get("format") else None)
    _err(f"reading {str(path)!r} ({fmt}{f', metric {metric}' if metric else ''})")
    df = load_scores(path, format=fmt, metric=metric, tasks=tasks, filter=filt, missing=args.missing,
                     duplicates=args.duplicates, split=split, jobs=args.jobs, scheduler=args.scheduler,
                     progress=not args.no_progress and sys.stderr.isatty(), min_items=min_items,
                     model_column=model_column)
    for key, what in (("dropped_items", "items"), ("dropped_models", "models")):
        dropped = df.attrs.get(key) or []
        if dropped:
            shown = ", ".join(map(str, dropped[:6])) + (" ..." if len(dropped) > 6 else "")
            _err(f"missing={args.missing}: dropped {len(dropped)} {what} ({shown})")
    return df


def cmd_compress(args: argparse.Namespace) -> int:

    out: Path = args.out
    # every option checked before anything is read
    check_run_settings(args.seed, args.time_limit, seed_name="seed", time_name="time-limit")
    k = check_int(args.k, "k", low=1)
    check_int(args.jobs, "jobs", low=1)
    check_out_folder(out, "out")
    if args.no_groups and args.pool:
        raise InvalidInputError("no-groups: --pool already ignores the tasks and their groups (one pooled mean); "
                                "give --pool, or --no-groups to keep the tasks without their groups")
    if (out / META).exists() and not args.force:
        raise InvalidInputError(f"out: {str(out)!r} already holds a saved compression; pass --force to replace it")
    get_selection(args.selection)
    get_estimator(args.estimator or DEFAULT_ESTIMATOR)
    df = _read(args.scores, args, {}, tasks=args.tasks, min_items=k + 1)
    _err(f"scores: {df.shape[0]} models x {df.shape[1]} items")
    estimator = args.estimator or DEFAULT_ESTIMATOR
    aggregate = _by_task(args.aggregate, "aggregate")
    chance = _by_task(args.chance, "chance")
    ignored = df.attrs.get("groups") if args.no_groups else None
    if ignored:
        _err(f"--no-groups: the logs' {len(ignored)} lm-eval groups ignored (no group rows; the suite weighted by "
             f"--aggregate {' '.join(args.aggregate) if args.aggregate else 'macro'})")
    c = compress(df, k=args.k, selection=args.selection, estimator=estimator, seed=args.seed,
                 time_limit=args.time_limit, verbose=True, tasks=False if args.pool else None,
                 aggregate=aggregate, chance=None if chance is None else _number(chance, "chance"),
                 groups=False if args.no_groups else None)
    if c.tasks is not None:
        alloc = c.selection.result.extra.get("allocation", {})
        _err(f"suite of {len(c.tasks)} tasks: " + ", ".join(f"{t} {alloc.get(t, '?')}" for t in c.tasks))
        note = groups_note(c)
        if note:
            _err(note)
    c.save(out)
    _err(f"wrote {out / META} and {out / ARRAYS} ({c.k} items of {c.n_items}, estimator {estimator!r})")
    items_csv = write_items_csv(c, out / "items.csv")
    _err(f"wrote {items_csv}")
    labels = [] if c.item_labels is None else list(c.item_labels)
    try:
        for lab in labels:
            parse_item_label(lab)
        lm_eval = bool(labels)
    except InvalidInputError:
        lm_eval = False
    if lm_eval:
        sj = write_samples_json(c, out / "samples.json")
        _err(f"wrote {sj}: run the new model with lm_eval ... --samples {sj} --log_samples --output_path NEW "
             "(not with --limit)")
    else:
        why = "no item labels" if not labels else f"item labels such as {str(labels[0])!r} are not task/doc_id"
        _err(f"no samples.json: {why} (lm-eval's --samples needs task/doc_id labels from lm-eval sample logs)")
    shown = ", ".join(map(str, labels[:8] if labels else c.items[:8].tolist()))
    print(f"{c.k} items: {shown}{' ...' if c.k > 8 else ''}")
    print(f"saved to {out}")
    return 0


def _number(v: str | dict[str, str], what: str) -> float | dict[str, float]:
    """A number or a mapping of numbers from the command line, or a named error."""
    try:
        return float(v) if isinstance(v, str) else {t: float(x) for t, x in v.items()}
    except ValueError:
        raise InvalidInputError(f"{what}: expected a number or TASK=NUMBER, got {v!r}") from None


def _fmt(v: float) -> str:
    return "-" if not math.isfinite(v) else f"{v:.4f}"


def cmd_estimate(args: argparse.Namespace) -> int:

    check_float(args.alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    check_int(args.jobs, "jobs", low=1)
    _err(f"loading {str(args.dir)!r} (refitting its estimator on the stored source scores)")
    c = load_compressed(args.dir)
    reader = dict(c.source.reader)
    df = _read(args.new_scores, args, reader, tasks=None)
    table = estimate_table(c, df, alpha=args.alpha)
    per_task = None
    if c.tasks is not None:
        X, _ = align_scores(c, df)
        per_task = SuiteRows(c, X, args.alpha)
    if args.json:
        for i, (model, row) in enumerate(table.iterrows()):
            iv = [row["low"], row["high"]] if math.isfinite(row["low"]) else None
            obj: dict[str, Any] = {"model": str(model), "estimate": float(row["estimate"]),
                                   "low": float(row["low"]), "high": float(row["high"]), "interval": iv,
                                   "interval_note": row["interval"], "method": str(row["method"])}
            if per_task is not None:
                obj.update(per_task.json(i))
            print(json.dumps(obj))
        return 0
    header = ["model", "estimate", "low", "high", "interval", "method"]
    body = []
    for i, (m, r) in enumerate(table.iterrows()):
        if per_task is not None:
            body += per_task.rows(i, str(m), (r["estimate"], r["low"], r["high"]), _fmt)
        else:
            body.append([str(m), _fmt(r["estimate"]), _fmt(r["low"]), _fmt(r["high"]), str(r["interval"]),
                         str(r["method"])])
    if per_task is not None:
        header = ["model", "task", "estimate", "low", "high"]
        inner = c.estimator.params["estimator"]
        _err(f"{100 * (1 - args.alpha):g}% intervals; each task estimated on its own items ({inner!r})")
    n_left = 2 if per_task is not None else 1
    w = [max(len(x) for x in col) for col in zip(header, *body)]
    for row in [header, *body]:
        cells = ([x.ljust(w[i]) for i, x in enumerate(row[:n_left])]
                 + [x.rjust(w[i]) for i, x in enumerate(row[n_left:n_left + 3], n_left)] + row[n_left + 3:])
        print("  ".join(cells).rstrip())
    return 0


COMMANDS = {"compress": cmd_compress, "estimate": cmd_estimate}
