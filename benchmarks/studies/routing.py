"""Where the default loses at small budgets: its per-model route between two estimates.

The default pipeline (``compress(Y, k)``: the balanced stratified draw and ``auto``) gives each new model
the stacked estimate when the model-assisted estimate puts it inside the sources' range of full scores,
and the model-assisted estimate outside. At ``k = 10`` the model-assisted estimate is noisy enough that
models inside the range are sent outside, where its error is large. This study splits the default's error
into its parts, on the same splits as the fidelity benchmark (``benchsel.benchmarks.fidelity``):

* ``default``: the default's estimate, as ``Compressed.predict`` returns it;
* ``stacked``: the default's own stacked estimate for every model (no route);
* ``model_assisted``: its model-assisted estimate for every model;
* ``oracle``: per model, whichever of the two is closer to the truth (a route no estimator can take: the
  least error any route between these two estimates reaches);
* ``share_ma``: the share of the models routed to the model-assisted estimate, and ``ma_routed`` /
  ``stacked_routed`` the two estimates' errors on those models;
* ``kmedoids_stacked``: ``compress(Y, k, selection="kmedoids", estimator="stacked")`` on the same split,
  the reference of issue 41's small-budget goal.

Errors are mean absolute errors in points (100 x the score), means over the datasets and splits.

Run::

    python -m benchsel.benchmarks.studies.routing --ks 10 25 --splits 5

(the nine matrices of ``fidelity --paper``; ``--datasets`` for others).
"""
from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.fidelity import PAPER_DATASETS, load_dataset, split_models
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.solvers.compression import compress

__all__ = ["COLUMNS", "run", "summarise"]

#: The errors :func:`run` returns, in the order of the printed table.
COLUMNS = ("default", "stacked", "model_assisted", "oracle", "kmedoids_stacked", "share_ma", "ma_routed",
           "stacked_routed")
PROTOCOLS = ("interpolation", "paper-extrapolation")


def run(Y: np.ndarray, protocol: str, split: int, k: int) -> dict[str, float]:
    """The default's error and its parts on one split (see the module docstring).

    Parameters
    ----------
    Y : ndarray, shape (M, N)
        Scores of every model on every item.
    protocol : str
        A protocol of :func:`benchsel.benchmarks.fidelity.split_models`.
    split : int
        The split, and the seed of both pipelines.
    k : int
        Items to select.

    Returns
    -------
    dict
        :data:`COLUMNS` to floats: errors in points, ``share_ma`` in [0, 1]; ``ma_routed`` and
        ``stacked_routed`` are NaN when no model is routed to the model-assisted estimate.
    """
    src, tgt = split_models(Y, protocol, split)
    Ys, Yt = Y[src], Y[tgt]
    truth = Yt.mean(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = compress(Ys, k, seed=split)
        X = Yt[:, c.items]
        est = c.estimator
        default = np.asarray(c.predict(X), dtype=float)
        if getattr(est, "stacked_", None) is None:
            raise InvalidInputError(f"Y: expected at least 4 source models on split {split} (the stacked part "
                                    f"needs them), got {src.size}")
        stacked = est.stacked_._predict(X)
        ma = est.model_assisted_._predict(X)
        to_ma = est.route(X) == "model-assisted"
        ref = compress(Ys, k, seed=split, selection="kmedoids", estimator="stacked")
        kmed = np.asarray(ref.predict(Yt[:, ref.items]), dtype=float)
    e_st, e_ma = np.abs(stacked - truth), np.abs(ma - truth)
    pts = 100.0
    return {"default": pts * float(np.abs(default - truth).mean()), "stacked": pts * float(e_st.mean()),
            "model_assisted": pts * float(e_ma.mean()), "oracle": pts * float(np.minimum(e_st, e_ma).mean()),
            "kmedoids_stacked": pts * float(np.abs(kmed - truth).mean()), "share_ma": float(to_ma.mean()),
            "ma_routed": pts * float(e_ma[to_ma].mean()) if to_ma.any() else float("nan"),
            "stacked_routed": pts * float(e_st[to_ma].mean()) if to_ma.any() else float("nan")}


def summarise(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Means over datasets and splits of each (protocol, k), in first-seen order: one dict per cell with
    ``protocol``, ``k``, ``runs`` and the mean of each of :data:`COLUMNS` (NaN-skipping for the routed ones)."""
    cells: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in rows:
        cells.setdefault((str(r["protocol"]), int(r["k"])), []).append(r)
    out = []
    for (protocol, k), rs in cells.items():
        row: dict[str, Any] = {"protocol": protocol, "k": k, "runs": len(rs)}
        for col in COLUMNS:
            v = np.array([r[col] for r in rs], dtype=float)
            row[col] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
        out.append(row)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--datasets", nargs="+", default=list(PAPER_DATASETS))
    p.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    p.add_argument("--ks", nargs="+", type=int, default=[10, 25])
    p.add_argument("--splits", type=int, default=5)
    args = p.parse_args(argv)
    data_dir = args.data_dir or default_data_dir()
    if data_dir is None:
        p.error("--data-dir: no shared data found (set BENCHSEL_DATA or pass --data-dir)")
    rows = []
    for name in args.datasets:
        Y = load_dataset(data_dir, name)
        for protocol in args.protocols:
            for k in args.ks:
                for split in range(args.splits):
                    rows.append({"dataset": name, "protocol": protocol, "k": k, "split": split,
                                 **run(Y, protocol, split, k)})
                print(f"{name} {protocol} k={k}: done", flush=True)
    print()
    print("| protocol | k | runs | " + " | ".join(COLUMNS) + " |")
    print("|---" * (3 + len(COLUMNS)) + "|")
    for r in summarise(rows):
        cells = [f"{r[c]:.2f}" for c in COLUMNS]
        print(f"| {r['protocol']} | {r['k']} | {r['runs']} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
