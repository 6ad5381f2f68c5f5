"""JSON decoders on lm-eval sample-log lines: MB/s of ``json``, ``orjson``, ``msgspec`` and typed ``msgspec``.

The readers of files from outside decode with ``msgspec`` (see
:mod:`benchsel.formulations.core.untrusted`); this script measured the choice.
Lines are generated in the layout of ``lm_eval --log_samples`` (a
multiple-choice document with its prompt, arguments, responses, hashes and
two metrics, about 1.5 kB each). Each decoder decodes every line; the best of
``--repeat`` passes is reported:

* ``json``: ``json.loads`` (the standard library);
* ``orjson``: ``orjson.loads`` (skipped when not installed; not a dependency);
* ``msgspec``: ``msgspec.json.decode`` into Python objects;
* ``msgspec typed``: a ``msgspec.Struct`` of the fields the reader uses
  (``doc_id``, ``filter``, ``metrics``, ``acc``, ``acc_norm``), the rest skipped
  without building objects: what the lm-eval reader does.

Usage::

    python -m benchsel.benchmarks.studies.json_decoders [--lines 40000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import msgspec


def sample_lines(n: int, seed: int = 0) -> list[bytes]:
    """``n`` lines of an lm-eval sample log (multiple choice, two metrics), seeded."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for d in range(n):
        q = f"Question {d}: " + " ".join(f"word{int(w)}" for w in rng.integers(0, 5000, 40))
        choices = [f"choice {c} " + " ".join(f"w{int(w)}" for w in rng.integers(0, 999, 6)) for c in range(4)]
        prompt = f"{q}\nAnswer:"
        ex = {
            "doc_id": d, "doc": {"question": q, "choices": choices, "answer": int(d % 4)},
            "target": int(d % 4),
            "arguments": {f"gen_args_{c}": {"arg_0": prompt, "arg_1": f" {ch}"} for c, ch in enumerate(choices)},
            "resps": [[[str(-float(rng.random() * 5)), "False"]] for _ in choices],
            "filtered_resps": [[str(-float(rng.random() * 5)), "False"] for _ in choices],
            "filter": "none", "metrics": ["acc", "acc_norm"],
            "doc_hash": hashlib.sha256(q.encode()).hexdigest(),
            "prompt_hash": hashlib.sha256(prompt.encode()).hexdigest(),
            "target_hash": hashlib.sha256(str(d % 4).encode()).hexdigest(),
            "acc": float(rng.random() < 0.6), "acc_norm": float(rng.random() < 0.6),
        }
        out.append(json.dumps(ex).encode())
    return out


class Used(msgspec.Struct):
    """The fields of a logged document the lm-eval reader uses."""

    doc_id: Any = None
    filter: Any = None
    metrics: Any = None
    acc: Any = None
    acc_norm: Any = None


def decoders() -> dict[str, Callable[[bytes], Any]]:
    out: dict[str, Callable[[bytes], Any]] = {"json": json.loads}
    try:
        import orjson

        out["orjson"] = orjson.loads
    except ImportError:
        pass
    out["msgspec"] = msgspec.json.Decoder().decode
    out["msgspec typed"] = msgspec.json.Decoder(Used).decode
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=40000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    lines = sample_lines(args.lines)
    mb = sum(len(x) for x in lines) / 2**20
    print(f"{args.lines} lines, {mb:.1f} MB ({1024 * mb / args.lines:.2f} kB a line); best of {args.repeat}")
    print(f"{'decoder':15} {'MB/s':>8} {'x json':>7}")
    base = None
    for name, dec in decoders().items():
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for x in lines:
                dec(x)
            best = min(best, time.perf_counter() - t0)
        rate = mb / best
        base = base or rate
        print(f"{name:15} {rate:8.0f} {rate / base:7.1f}")


if __name__ == "__main__":
    main()
