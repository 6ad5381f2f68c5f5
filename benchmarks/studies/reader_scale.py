"""Reading lm-eval logs at leaderboard scale: MB/s and peak memory in one process, ``--jobs N`` and on Dask.

A collection of lm-eval sample logs is generated in a temporary folder
(removed after): ``--models`` model folders, each with ``results_<date>.json``
and one ``samples_<task>_<date>.jsonl`` per task in ``lm_eval --log_samples``'s
layout (multiple-choice documents with prompt, arguments, responses, hashes,
``acc`` and ``acc_norm``; about 2 MB per model with the defaults, so 2 GB for
1 000 models). Then :func:`benchsel.instances.evallogs.read_lm_eval_samples`
reads it (``metric="acc"``), each way in a fresh process:

* ``1 process``: ``jobs=1``;
* ``--jobs N``: ``jobs=N`` worker processes;
* ``dask``: a local Dask cluster (``N`` worker processes, one thread each),
  given as ``scheduler=ADDRESS``.

Reported: wall seconds, MB/s (file bytes / wall), the peak RSS of the reading
process and the largest peak of its workers, and whether the table equals the
one-process table.

Usage::

    python -m benchsel.benchmarks.studies.reader_scale [--models 1000] [--jobs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def _line_prefixes(task: str, n_docs: int, rng: np.random.Generator) -> list[str]:
    """The part of each logged document before its metric values (the same for every model)."""
    out = []
    for d in range(n_docs):
        q = f"{task} question {d}: " + " ".join(f"word{int(w)}" for w in rng.integers(0, 5000, 60))
        choices = [f"choice {c} " + " ".join(f"w{int(w)}" for w in rng.integers(0, 999, 8)) for c in range(4)]
        prompt = f"{q}\nAnswer:"
        ex = {"doc_id": d, "doc": {"question": q, "choices": choices, "answer": d % 4}, "target": d % 4,
              "arguments": {f"gen_args_{c}": {"arg_0": prompt, "arg_1": f" {ch}"} for c, ch in enumerate(choices)},
              "resps": [[["-1.25", "False"]] for _ in choices], "filtered_resps": [["-1.25", "False"] for _ in choices],
              "filter": "none", "metrics": ["acc", "acc_norm"], "doc_hash": f"{d:064x}", "prompt_hash": f"{d:064x}",
              "target_hash": f"{d % 4:064x}"}
        out.append(json.dumps(ex)[:-1])
    return out


def generate(root: Path, n_models: int, tasks: int, docs: int, seed: int = 0) -> int:
    """Write the collection under ``root``; returns its size in bytes."""
    rng = np.random.default_rng(seed)
    names = [f"task{t}" for t in range(tasks)]
    prefixes = {t: _line_prefixes(t, docs, rng) for t in names}
    theta = rng.normal(size=n_models)
    b = {t: rng.normal(size=docs) for t in names}
    date = "2024-06-01T12-30-56.789010"
    total = 0
    for i in range(n_models):
        folder = root / f"org__model-{i}"
        folder.mkdir(parents=True)
        for t in names:
            p = 1 / (1 + np.exp(-(theta[i] - b[t])))
            acc = (rng.random(docs) < p).astype(int)
            text = "".join(f'{pre}, "acc": {float(a)}, "acc_norm": {float(a)}}}\n'
                           for pre, a in zip(prefixes[t], acc))
            f = folder / f"samples_{t}_{date}.jsonl"
            f.write_text(text)
            total += f.stat().st_size
        res = folder / f"results_{date}.json"
        res.write_text(json.dumps({"results": {t: {"acc,none": 0.5} for t in names}, "model_name": f"org/model-{i}"}))
        total += res.stat().st_size
    return total


_CHILD = r"""
import json, resource, sys, time
from benchsel.instances.evallogs import read_lm_eval_samples
root, jobs, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cluster = client = None
workers_peak = 0
if mode == "dask":
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
t0 = time.perf_counter()
df = read_lm_eval_samples(root, "acc", jobs=jobs if mode == "jobs" else 1,
                          scheduler=cluster.scheduler_address if cluster else None)
wall = time.perf_counter() - t0
if client is not None:
    peaks = client.run(lambda: __import__("resource").getrusage(__import__("resource").RUSAGE_SELF).ru_maxrss)
    workers_peak = max(peaks.values())
    client.close(); cluster.close()
else:
    workers_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
df.to_pickle(sys.argv[4])
print(json.dumps({"wall": wall, "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "workers_peak_kb": workers_peak, "shape": list(df.shape)}))
"""


def measure(root: Path, jobs: int, mode: str, table: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(jobs), mode, str(table)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--docs", type=int, default=135, help="documents per task")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=["single", "jobs", "dask"])
    args = ap.parse_args(argv)
    import pandas as pd

    tmp = Path(tempfile.mkdtemp(prefix="benchsel-reader-scale-"))
    try:
        t0 = time.perf_counter()
        size = generate(tmp / "logs", args.models, args.tasks, args.docs)
        mb = size / 2**20
        print(f"generated {args.models} models x {args.tasks} tasks x {args.docs} documents: {mb:.0f} MB in "
              f"{time.perf_counter() - t0:.0f} s (cpus {os.cpu_count()})", flush=True)
        print(f"{'mode':12} {'seconds':>8} {'MB/s':>7} {'peak MB':>8} {'workers MB':>10} same")
        ref = None
        for mode in args.modes:
            jobs = 1 if mode == "single" else args.jobs
            r = measure(tmp / "logs", jobs, mode, tmp / f"{mode}.pkl")
            df = pd.read_pickle(tmp / f"{mode}.pkl")
            same = True if ref is None else bool(df.equals(ref))
            ref = df if ref is None else ref
            label = {"single": "1 process", "jobs": f"--jobs {jobs}", "dask": f"dask x{jobs}"}[mode]
            print(f"{label:12} {r['wall']:8.1f} {mb / r['wall']:7.0f} {r['peak_kb'] / 1024:8.0f} "
                  f"{r['workers_peak_kb'] / 1024:10.0f} {same}  {tuple(r['shape'])}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
