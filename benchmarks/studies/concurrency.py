"""Several ``benchsel run`` into one results folder at once: is every run executed exactly once?

Starts ``--writers`` copies of ``benchsel run SUITE`` (default: the quick
suite with its default methods) into one fresh folder at the same moment,
waits for all, then counts the rows of ``runs.jsonl`` per run and the runs
each process says it executed::

    python -m benchsel.benchmarks.studies.concurrency --writers 2 --jobs 1

Exit code 0 when every run of the grid is in ``runs.jsonl`` exactly once, the
executions add up to the grid and every writer exited 0.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "run_writers"]


def run_writers(out: Path, writers: int, suite: str, jobs: int, extra: Sequence[str] = ()) -> dict:
    """Start the writers together; return their exit codes, executed counts, the row counts per run, seconds."""
    argv = [sys.executable, "-m", "benchsel.benchmarks", "run", suite, "--jobs", str(jobs), "--no-progress",
            "--quiet", "--out", str(out), *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.perf_counter()
    procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(writers)]
    errs = [p.communicate()[1] for p in procs]
    seconds = time.perf_counter() - t0
    ran, elsewhere = [], []
    for e in errs:
        m = re.search(r"benchsel: (\d+) runs in .*?\((\d+) skipped as already done(?:, (\d+) run by another process)?",
                      e)
        ran.append(int(m.group(1)) if m else -1)
        elsewhere.append(int(m.group(3) or 0) if m else -1)
    rows = [json.loads(ln) for ln in (out / "runs.jsonl").read_text().splitlines() if ln.strip()]
    per_run = collections.Counter((r["instance"], r["method"], r["seed"], r["time_limit"]) for r in rows)
    return {"codes": [p.returncode for p in procs], "ran": ran, "elsewhere": elsewhere, "rows": len(rows),
            "runs": len(per_run), "max_per_run": max(per_run.values(), default=0), "seconds": seconds,
            "stderr": errs}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--jobs", type=int, default=1, help="jobs per writer (default 1)")
    ap.add_argument("--repeat", type=int, default=1, help="independent trials (fresh folder each)")
    args, extra = ap.parse_known_args(argv)
    ok = True
    print(f"{'trial':>5} {'writers':>7} {'runs':>5} {'rows':>5} {'max rows/run':>12} {'executed per writer':>20} "
          f"{'sum':>4} {'exit codes':>10} {'seconds':>8}")
    for trial in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            r = run_writers(Path(d) / "out", args.writers, args.suite, args.jobs, extra)
        good = (r["max_per_run"] == 1 and r["rows"] == r["runs"] and sum(r["ran"]) == r["runs"]
                and set(r["codes"]) == {0})
        ok &= good
        print(f"{trial:5d} {args.writers:7d} {r['runs']:5d} {r['rows']:5d} {r['max_per_run']:12d} "
              f"{'+'.join(map(str, r['ran'])):>20} {sum(r['ran']):4d} {','.join(map(str, r['codes'])):>10} "
              f"{r['seconds']:8.1f}{'' if good else '  <- FAIL'}")
        if not good:
            for e in r["stderr"]:
                print(e[-2000:], file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
