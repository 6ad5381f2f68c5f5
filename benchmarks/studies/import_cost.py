"""What a fresh process pays before any solving starts: peak memory, seconds and heavy imports.

Each stage runs in its own fresh interpreter, one after the other, and reports the process's peak
resident memory (``ru_maxrss``), the stage's wall seconds and which of the heavy optional modules
(pandas, scikit-learn, scipy.stats, the ``kmedoids`` package's ``__init__``) it imported::

    python -m benchsel.benchmarks.studies.import_cost [--repeats 3]

Stages: the numeric base (numpy, scipy.sparse, highspy); ``import benchsel``; the method registry
(what the first ``solve()`` of any formulation loads); a small k-medoids solve with ``"highs"`` (its
FasterPAM warm start included); and, for comparison, ``import kmedoids`` and ``import pandas`` on top
of the base. Peak memory varies by a few MB from run to run; the median of the repeats is printed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import TypedDict

HEAVY = ("pandas", "sklearn", "scipy.stats", "kmedoids")

STAGES: dict[str, str] = {
    "numeric base (numpy, scipy.sparse, highspy)": "import numpy, scipy.sparse, highspy",
    "import benchsel": "import numpy, scipy.sparse, highspy; import benchsel",
    "method registry loaded": ("import numpy, scipy.sparse, highspy; "
                               "from benchsel.solvers.methods import list_methods; list_methods()"),
    "k-medoids solve (N = 300, k = 8, highs)": (
        "import numpy, scipy.sparse, highspy; from benchsel import solve; "
        "from benchsel.instances import make_kmedoids; "
        "solve(make_kmedoids(300, 8, seed=1, metric='correlation', dim=6), 'highs', time_limit=60)"),
    "base + import kmedoids (the package)": "import numpy, scipy.sparse, highspy; import kmedoids",
    "base + import pandas": "import numpy, scipy.sparse, highspy; import pandas",
}

class Probe(TypedDict):
    peak_mb: float
    seconds: float
    heavy: list[str]


_PROBE = """
import json, resource, sys, time
t0 = time.perf_counter()
exec({code!r})
seconds = time.perf_counter() - t0
print(json.dumps({{"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "seconds": seconds,
                  "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def measure(code: str) -> Probe:
    """Run ``code`` in a fresh interpreter; its peak RSS (MB), seconds and the heavy modules it imported."""
    out = subprocess.run([sys.executable, "-c", _PROBE.format(code=code, heavy=HEAVY)], check=True,
                         capture_output=True, text=True, timeout=600)
    row: Probe = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsel.benchmarks.studies.import_cost",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per stage (the median is printed)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats: expected at least 1, got {args.repeats}")
    print(f"{'stage':44} {'peak MB':>8} {'seconds':>8}  heavy modules imported")
    for name, code in STAGES.items():
        runs = [measure(code) for _ in range(args.repeats)]
        peak = statistics.median(r["peak_mb"] for r in runs)
        secs = statistics.median(r["seconds"] for r in runs)
        heavy = sorted({m for r in runs for m in r["heavy"]})
        print(f"{name:44} {peak:8.0f} {secs:8.2f}  {', '.join(heavy) or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
