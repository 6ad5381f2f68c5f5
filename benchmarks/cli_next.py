"""``benchsel next``: evaluate a new model with lm-eval batch by batch until its interval is narrow enough.

::

    benchsel next DIR NEW_LOGS --half-width 0.05 --batch 20 --out next.json [--alpha A] [--max-items M]
                  [--seed N] [--design D] [--json] [--metric ...] [--filter F] [--format ...]

``DIR`` is a folder written by ``benchsel compress``; ``NEW_LOGS`` the new model's lm-eval sample logs
so far (one folder holding one or several runs). The command replays
:class:`~benchsel.solvers.adaptive.AdaptiveEvaluation` on the answers in the logs (the batches follow
from the seed and the answers, so nothing else is stored), prints the current estimate and its
interval and either writes the next batch as an lm-eval ``--samples`` file (``--out``) or says the
evaluation is done. Every call of one evaluation takes the same ``--seed``, ``--batch``,
``--half-width``, ``--alpha``, ``--max-items`` and ``--design``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.instances.evallogs import find_lm_eval_logs, write_samples_json
from benchsel.solvers.adaptive import DESIGNS, AdaptiveEvaluation
from benchsel.solvers.compression import load_compressed

from .cli_compress import _err, _read, _reader_options

__all__ = ["COMMANDS", "add_commands", "cmd_next", "replay"]


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``next`` subcommand to ``benchsel``'s subparsers."""
    p = sub.add_parser("next", parents=[common], help="the next items a new model should answer (adaptive)",
                       description="Read a new model's lm-eval sample logs so far, print its estimated "
                                   "full-benchmark score and interval, and write the next batch of items as an "
                                   "lm-eval --samples file, or say that the interval is narrow enough.")
    p.add_argument("dir", type=Path, metavar="DIR", help="a folder written by benchsel compress")
    p.add_argument("new_logs", type=Path, metavar="NEW_LOGS",
                   help="the new model's lm-eval --log_samples output so far (one or several runs)")
    p.add_argument("--half-width", type=float, default=0.05, metavar="H",
                   help="stop when the interval's half-width is at most H (default 0.05)")
    p.add_argument("--batch", type=int, default=20, metavar="B", help="items per batch (default 20)")
    p.add_argument("--alpha", type=float, default=0.1, help="miscoverage of the interval (0.1: 90 %%)")
    p.add_argument("--max-items", type=int, default=None, metavar="M", help="most items to evaluate")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the draws (same in every call)")
    p.add_argument("--design", choices=list(DESIGNS), default=DESIGNS[0],
                   help="how the batches are chosen (default nested; same in every call)")
    p.add_argument("--out", type=Path, default=Path("next.json"), metavar="FILE",
                   help="where to write the next --samples file (default next.json)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _reader_options(p, defaults_from_saved=True)


def replay(ev: AdaptiveEvaluation, answered: dict[int, float]) -> np.ndarray:
    """Feed ``answered`` (item -> score) to ``ev`` batch by batch; the items still to answer, shape (b,).

    Raises a named error when ``answered`` holds items the evaluation never asked.
    """
    asked: set[int] = set()
    while True:
        it = ev.next_items()
        if it.size == 0:
            todo = it
            break
        asked.update(it.tolist())
        have = np.asarray([i for i in it.tolist() if i in answered], dtype=np.int64)
        if have.size:
            ev.observe(have, np.asarray([answered[i] for i in have.tolist()]))
        if have.size < it.size:
            todo = ev.next_items()
            break
    extra = sorted(set(answered) - asked)
    if extra:
        none = not asked & set(answered)
        raise InvalidInputError(
            f"new_logs: {len(extra)} answered item(s) this evaluation never asked (item indices {extra[:6]}"
            f"{' ...' if len(extra) > 6 else ''}); "
            + ("none of the compression's first batch is answered: logs of another compression?"
               if none else "logs of another compression, or an earlier call with other --seed, --batch, "
                            "--half-width, --alpha, --max-items or --design?"))
    return todo


def _read_runs(path: Path, args: argparse.Namespace, reader: dict[str, Any]) -> Any:
    """One model's answers from every lm-eval run under ``path`` (runs of one task merged: a document
    logged twice keeps the latest run's score); a (models, labels) DataFrame."""
    import pandas as pd

    logs = find_lm_eval_logs(path)
    _err(f"reading {len(logs)} lm-eval sample log(s) under {str(path)!r}")
    args.format = "lm-eval"
    frames = []
    for log in logs:  # sorted by model, task and date: later runs come later
        with contextlib.redirect_stderr(io.StringIO()):
            frames.append(_read(log.path, args, reader, tasks=None))
    df = pd.concat(frames, axis=1)
    return df.T.groupby(level=0, sort=False).last().T

def _answers(c: Any, df: Any) -> dict[int, float]:
    """The new model's answered items (index in the compression's benchmark -> score) from its logs."""
    if df.shape[0] != 1:
        raise InvalidInputError(f"new_logs: expected the logs of one model, got {df.shape[0]} models "
                                f"({', '.join(map(str, list(df.index)[:4]))}); give one model's folder")
    labels = None if c.source is None else c.source.item_labels
    if labels is None:
        raise InvalidInputError("dir: the compression has no item labels (it was made from an array); "
                                "benchsel next needs a compression of lm-eval logs")
    where = {str(lab): i for i, lab in enumerate(np.asarray(labels, dtype=object).tolist())}
    unknown = [str(col) for col in df.columns if str(col) not in where]
    if unknown:
        raise InvalidInputError(
            f"new_logs: {len(unknown)} logged item(s) are not items of the compression in dir (e.g. "
            f"{', '.join(map(repr, unknown[:4]))}): logs of another compression or benchmark")
    row = df.iloc[0]
    return {where[str(col)]: float(v) for col, v in row.items() if np.isfinite(float(v))}


def cmd_next(args: argparse.Namespace) -> int:

    _err(f"loading {str(args.dir)!r} (refitting its estimator on the stored source scores)")
    c = load_compressed(args.dir)
    ev = AdaptiveEvaluation(c, alpha=args.alpha, half_width=args.half_width, batch=args.batch,
                            max_items=args.max_items, seed=args.seed, design=args.design)
    answered: dict[int, float] = {}
    if args.new_logs.exists() and any(args.new_logs.iterdir()):
        answered = _answers(c, _read_runs(args.new_logs, args, dict(getattr(c.source, "reader", {}) or {})))
    todo = replay(ev, answered)
    est, lo, hi = ev.estimate()
    labels = np.asarray(c.source.item_labels, dtype=object)
    out = {"estimate": est, "interval": [lo, hi], "alpha": args.alpha, "items": ev.n_items, "n_items": ev.N,
           "state": ev.state, "next": None}
    if todo.size:
        path = write_samples_json([str(x) for x in labels[todo].tolist()], args.out)
        out["next"] = {"file": str(path), "items": int(todo.size)}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"estimate {est:.4f}  {100 * (1 - args.alpha):g}% interval [{lo:.4f}, {hi:.4f}]  "
          f"(half-width {(hi - lo) / 2:.4f}; {ev.n_items} of {ev.N} items answered)")
    if todo.size:
        print(f"next: {todo.size} items written to {args.out}; run lm_eval ... --samples {args.out} --log_samples "
              f"--output_path {args.new_logs} (not with --limit), then benchsel next again")
    else:
        why = {"narrow": f"the interval's half-width is at most {args.half_width:g}",
               "budget": f"--max-items {args.max_items} items are answered",
               "exhausted": "every item is answered: the score is exact"}[ev.state]
        print(f"done: {why}")
    return 0


COMMANDS = {"next": cmd_next}
