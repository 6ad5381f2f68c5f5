"""Bad-input fuzz of every public constructor, builder and loader.

Every case either builds a formulation whose feasible selections evaluate to
finite objectives (checked on its warm start and through ``solve(f,
"random")``), or raises :class:`~benchsel.formulations.core.errors.InvalidInputError`
whose message starts with the name of one of the called function's
arguments (``"k: expected ..."``, ``"path: ..."``). Anything else (another
exception, a non-finite feasible objective, a case slower than
:data:`HANG_SECONDS`) is a failure.

Two parts:

* :data:`CATALOGUE` — fixed cases, among them every case of issue 12's list;
* :func:`case_strategy` — a Hypothesis strategy drawing random calls: arrays
  of every dtype kind (float, int, bool, complex, object, str) with shapes from
  empty to small, values scaled from 1e-320 to 1e300 with NaN and infinities
  sprinkled in, scalars of the wrong type (bools, strings, complex, NaN,
  10**12), masks of the wrong length, and files: random bytes, truncated and
  damaged ``.npz`` archives, ragged tables, absurd headers.

Run it with::

    python -m tests.support.fuzz_cases --examples 2000

(the test suite runs the same property with fewer examples, ``tests/test_hardening.py``).
"""
from __future__ import annotations

import argparse
import inspect
import io
import math
import os
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError

__all__ = ["CATALOGUE", "HANG_SECONDS", "Case", "case_strategy", "classify", "main"]

#: A case that takes longer than this (seconds) counts as a hang.
HANG_SECONDS = 5.0


@dataclass(frozen=True)
class Case:
    """One call: ``fn(*args, **kwargs)``; an error must name one of ``names`` (default: ``fn``'s parameters)."""

    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Any = None
    names: tuple[str, ...] = ()

    def __call__(self) -> Any:
        return self.fn(*self.args, **(self.kwargs or {}))

    @property
    def argnames(self) -> tuple[str, ...]:
        return self.names or tuple(inspect.signature(self.fn).parameters)


def _check_formulation(f: Any) -> None:
    """A built formulation: its feasible selections have finite objectives."""
    from benchsel.solvers.api import solve

    start = f.initial_selection()
    if start is not None and f.check(start).feasible:
        v = f.evaluate(start)
        if not math.isfinite(v):
            raise AssertionError(f"feasible warm start evaluates to {v}")
    res = solve(f, "random", seed=0)  # raises on a non-finite feasible objective (NumericalError)
    if res.feasible and not math.isfinite(res.objective):  # pragma: no cover - finalize refuses it
        raise AssertionError(f"feasible random selection evaluates to {res.objective}")


def classify(case: Case) -> str:
    """``"built"``, ``"named-error"``, or ``"FAIL: ..."`` (wrong exception, unnamed argument, non-finite, hang)."""
    from benchsel.formulations.base import Formulation

    t0 = time.perf_counter()
    try:
        out = case()
        if isinstance(out, Formulation):
            _check_formulation(out)
        outcome = "built"
    except InvalidInputError as e:
        head = str(e).split(":", 1)[0].strip().split("[")[0]
        names = case.argnames
        outcome = "named-error" if head in names else f"FAIL: error names {head!r}, not one of {names}: {e}"
    except Exception as e:
        outcome = f"FAIL: {type(e).__name__}: {str(e)[:200]}"
    dt = time.perf_counter() - t0
    if dt > HANG_SECONDS:
        outcome = f"FAIL: took {dt:.1f} s (> {HANG_SECONDS:g} s)"
    return outcome


# ------------------------------------------------------------------ arrays
_SCALES = (1.0,) * 8 + (1e-320, 1e-200, 1e-100, 1e100, 1e150, 1e200, 1e300)
_KINDS = ("f",) * 8 + ("i", "i", "b", "c", "O", "U")


def make_array(shape: Sequence[int], kind: str, seed: int, scale: float = 1.0, special: float = 0.0,
               nonneg: bool = False) -> np.ndarray:
    """A seeded array: kind ``f`` (normal x scale, a share ``special`` of NaN/inf/huge), ``i`` (small ints),
    ``b``, ``c`` (complex), ``O`` (numbers with a None and a string), ``U`` (strings)."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in shape)
    if kind == "i":
        return rng.integers(0 if nonneg else -2, 5, size=shape)
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind == "U":
        return rng.integers(0, 9, size=shape).astype(str)
    x = rng.normal(size=shape)
    if nonneg:
        x = np.abs(x)
    with np.errstate(over="ignore", under="ignore"):
        x = x * scale
    if special and x.size:
        mask = rng.random(shape) < special
        x[mask] = rng.choice([np.nan, np.inf, -np.inf, 1e308, -1.0], size=int(mask.sum()))
    if kind == "c":
        return x + 1j * rng.normal(size=shape)
    if kind == "O":
        o = x.astype(object)
        if o.size:
            o.flat[0] = None if seed % 2 else "x"
        return o
    return x


def _sq(n: int) -> tuple[int, int]:
    return (n, n)


def _posmat(m: int, n: int, seed: int, how: str) -> np.ndarray:
    """Positions (m, n): valid competition ranks, or broken ones (dense, zeros, out of range, floats)."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    P = rankdata(rng.integers(0, 3, size=(m, n)), method="min", axis=0).astype(np.int64) if m and n else \
        np.zeros((m, n), np.int64)
    if how == "dense" and P.size:
        P = rankdata(rng.integers(0, 3, size=(m, n)), method="dense", axis=0).astype(np.int64)
    elif how == "zero" and P.size:
        P = P.copy()
        P.flat[0] = 0
    elif how == "big" and P.size:
        P = P.copy()
        P.flat[0] = m + 1
    elif how == "float" and P.size:
        P = P.astype(float) + 0.5
    elif how == "nan" and P.size:
        P = P.astype(float)
        P.flat[0] = np.nan
    return P


# -------------------------------------------------------------- catalogue
def _catalogue() -> list[Case]:
    from benchsel.formulations import (
        BatchInformationGain,
        KMedoids,
        PositionalProportionality,
        PositionalRepresentation,
        RankingRiskReconstruction,
    )
    from benchsel.formulations.kmedoids import dissimilarity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 4))
    D = dissimilarity(X, "euclidean")
    R = rng.uniform(size=(3, 10))
    T = rng.normal(size=(4, 10, 2))
    P = _posmat(4, 6, 0, "ok")
    KM = ("D", "k", "weights", "candidates")
    FF = ("X", "k", "metric", "weights", "candidates")
    RR = ("X", "budget", "retention", "seed", "quantile", "bank_size", "lam", "eps", "orientation",
          "lower_is_better")
    BI = ("reference_scores", "coreset", "observed", "k", "alpha", "beta", "sigma2", "tol", "kernel", "N0")
    PR = ("positions", "g", "groups", "alternatives", "metrics", "ties", "missing", "dropped_alternatives")
    PP = ("positions", "eps", "size", "alternatives", "metrics", "ties", "missing", "dropped_alternatives")
    RK = ("rankings", "eps", "g", "size", "groups", "ties", "missing")
    with np.errstate(over="ignore"):
        huge_D = np.where(D > 0, 1e308, 0.0)
    cases = [
        Case("KMedoids D of 1e308", KMedoids, (huge_D, 3), names=KM),
        Case("KMedoids weights of 1e308", KMedoids, (D, 3), {"weights": np.full(8, 1e308)}, KM),
        Case("KMedoids D 1e150", KMedoids, (D * 1e150, 3), names=KM),
        Case("KMedoids k=True", KMedoids, (D, True), names=KM),
        Case("KMedoids k=2.5", KMedoids, (D, 2.5), names=KM),
        Case("KMedoids k='3'", KMedoids, (D, "3"), names=KM),
        Case("KMedoids complex D", KMedoids, (D + 1j, 3), names=KM),
        Case("KMedoids complex weights", KMedoids, (D, 3), {"weights": np.ones(8) + 1j}, KM),
        Case("KMedoids string D", KMedoids, (D.astype(str), 3), names=KM),
        Case("KMedoids object D", KMedoids, (np.array([[0, None], [1, 0]], dtype=object), 1), names=KM),
        Case("KMedoids candidates mask", KMedoids, (D, 2), {"candidates": np.arange(8) < 4}, KM),
        Case("KMedoids candidates short mask", KMedoids, (D, 2), {"candidates": np.array([True, False])}, KM),
        Case("KMedoids candidates floats", KMedoids, (D, 2), {"candidates": [0.5, 1.0]}, KM),
        Case("KMedoids candidates 2-D", KMedoids, (D, 2), {"candidates": [[0, 1]]}, KM),
        Case("KMedoids NaN D", KMedoids, (np.where(D > 1, np.nan, D), 2), names=KM),
        Case("KMedoids 1x1", KMedoids, (np.zeros((1, 1)), 1), names=KM),
        Case("from_features one row", KMedoids.from_features, (X[:1], 1), names=FF),
        Case("from_features cosine X*1e-320", KMedoids.from_features, (X * 1e-320, 3), {"metric": "cosine"}, FF),
        Case("from_features correlation X*1e200", KMedoids.from_features, (X * 1e200, 3), {"metric": "correlation"},
             FF),
        Case("from_features euclidean X*1e200", KMedoids.from_features, (X * 1e200, 3), {"metric": "euclidean"}, FF),
        Case("from_features complex", KMedoids.from_features, (X + 1j, 3), names=FF),
        Case("from_features bad metric", KMedoids.from_features, (X, 3), {"metric": "manhattan"}, FF),
        Case("from_features 10**6 rows", KMedoids.from_features, (np.zeros((10**6, 1)), 3), names=FF),
        Case("RRR budget=True", RankingRiskReconstruction, (T,), {"budget": True}, RR),
        Case("RRR bank_size=10**12", RankingRiskReconstruction, (T,), {"budget": 3, "bank_size": 10**12}, RR),
        Case("RRR retention=1e-9", RankingRiskReconstruction, (T,), {"retention": 1e-9}, RR),
        Case("RRR budget and retention", RankingRiskReconstruction, (T,), {"budget": 3, "retention": 0.3}, RR),
        Case("RRR complex", RankingRiskReconstruction, (T + 1j,), {"budget": 3}, RR),
        Case("RRR X*1e200", RankingRiskReconstruction, (T * 1e200,), {"budget": 3}, RR),
        Case("RRR X*1e-300", RankingRiskReconstruction, (T * 1e-300,), {"budget": 3}, RR),
        Case("RRR lam=1e300", RankingRiskReconstruction, (T,), {"budget": 3, "lam": 1e300}, RR),
        Case("RRR eps=nan", RankingRiskReconstruction, (T,), {"budget": 3, "eps": float("nan")}, RR),
        Case("RRR orientation wrong", RankingRiskReconstruction, (T,), {"budget": 3, "orientation": [1, 0]}, RR),
        Case("RRR lower_is_better=[1, 2]", RankingRiskReconstruction, (T,), {"budget": 3, "lower_is_better": [1, 2]},
             RR),
        Case("RRR one model", RankingRiskReconstruction, (T[:1],), {"budget": 3}, RR),
        Case("BIG R*1e300", BatchInformationGain, (R * 1e300,), {"k": 2}, BI),
        Case("BIG coreset bool mask", BatchInformationGain, (R,), {"coreset": np.arange(10) < 2, "k": 2,
                                                                   "observed": [0.1, 0.2]}, BI),
        Case("BIG coreset short mask", BatchInformationGain, (R,), {"coreset": np.array([True, False]), "k": 2}, BI),
        Case("BIG coreset floats", BatchInformationGain, (R,), {"coreset": [0.5], "k": 2}, BI),
        Case("BIG complex", BatchInformationGain, (R + 1j,), {"k": 2}, BI),
        Case("BIG k=True", BatchInformationGain, (R,), {"k": True}, BI),
        Case("BIG alpha=1e300", BatchInformationGain, (R,), {"k": 2, "alpha": 1e300}, BI),
        Case("BIG sigma2=1e-300", BatchInformationGain, (R,), {"k": 2, "sigma2": 1e-300}, BI),
        Case("BIG tol=1e-310", BatchInformationGain, (R * 1e10,), {"k": 2, "tol": 1e-310}, BI),
        Case("BIG observed 1e300", BatchInformationGain, (R,), {"k": 2, "coreset": [0], "observed": [1e300]}, BI),
        Case("BIG kernel bogus", BatchInformationGain, (R,), {"k": 2, "kernel": "rbf"}, BI),
        Case("PR g=True", PositionalRepresentation, (P,), {"g": True}, PR),
        Case("PR dense positions", PositionalRepresentation, (_posmat(4, 6, 1, "dense"),), {"g": 2}, PR),
        Case("PR positions 0", PositionalRepresentation, (_posmat(4, 6, 1, "zero"),), {"g": 2}, PR),
        Case("PR complex positions", PositionalRepresentation, (P + 0j,), {"g": 2}, PR),
        Case("PR bool positions", PositionalRepresentation, (P > 1,), {"g": 1}, PR),
        Case("PR duplicate alternatives", PositionalRepresentation, (P,), {"g": 2, "alternatives": list("aabc")}, PR),
        Case("PR groups strings", PositionalRepresentation, (P,), {"g": 2, "groups": "abc"}, PR),
        Case("PP eps and size", PositionalProportionality, (P,), {"eps": 0.1, "size": 2}, PP),
        Case("PP eps=True", PositionalProportionality, (P,), {"eps": True}, PP),
        Case("PP eps=1", PositionalProportionality, (P,), {"eps": 1}, PP),
        Case("PP size=True", PositionalProportionality, (P,), {"size": True}, PP),
        Case("PP 10**5 alternatives", PositionalProportionality, (np.ones((10**5, 1), np.int64),), {"eps": 0.1}, PP),
    ]
    for how in ("nan-error", "1d", "empty", "zero", "neg", "frac", "big", "str", "bool", "complex", "dense"):
        rk = {"nan-error": np.array([[1, np.nan], [2, 1]]), "1d": np.array([1, 2]), "empty": np.zeros((0, 0)),
              "zero": np.array([[0, 1], [1, 2]]), "neg": np.array([[-1, 1], [1, 2]]),
              "frac": np.array([[1.5, 1], [1, 2]]), "big": np.array([[3, 1], [1, 2]]),
              "str": np.array([["a", "1"], ["1", "2"]]), "bool": np.array([[True, False], [False, True]]),
              "complex": np.array([[1, 2], [2, 1]]) + 0j, "dense": np.array([[1, 1], [1, 2], [2, 3]])}[how]
        cases.append(Case(f"PP.from_rankings {how}", PositionalProportionality.from_rankings, (rk,), {"eps": 0.2},
                          RK))
        cases.append(Case(f"PR.from_rankings {how}", PositionalRepresentation.from_rankings, (rk,), {"g": 1}, RK))
    return cases


def _file_cases(d: Path) -> list[Case]:
    from benchsel.instances import load_instance, load_pmed, load_score_table
    from benchsel.instances.responses import load_responses

    def write(name: str, data: bytes | str) -> Path:
        p = d / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return p

    buf = io.BytesIO()
    np.savez(buf, Y=np.zeros((3, 4)))
    good = buf.getvalue()
    cases = []
    npz: list[tuple[str, bytes]] = [("trunc.npz", good[: len(good) // 2]), ("garbage.npz", b"not a zip"),
                                    ("empty.npz", b""), ("pk.npz", b"PK\x03\x04" + b"\x00" * 40)]
    for name, data in npz:
        cases.append(Case(f"load_responses {name}", load_responses, (write(name, data),), names=("path",)))
    for name, Y in [("str", np.array([["a", "b"]])), ("cplx", np.ones((3, 4)) + 1j), ("1d", np.ones(3)),
                    ("nan", np.full((2, 2), np.nan)), ("empty", np.zeros((0, 3)))]:
        buf = io.BytesIO()
        np.savez(buf, Y=Y)
        cases.append(Case(f"load_responses Y {name}", load_responses, (write(f"y_{name}.npz", buf.getvalue()),),
                          names=("path",)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("Y.npy", b"\x93NUMPY garbage")
    cases.append(Case("load_responses bad member", load_responses, (write("member.npz", buf.getvalue()),),
                      names=("path",)))
    buf = io.BytesIO()
    np.savez(buf, Y=np.array([[1, None]], dtype=object))
    cases.append(Case("load_responses object Y", load_responses, (write("obj.npz", buf.getvalue()),),
                      names=("path",)))
    pmed: list[tuple[str, str | bytes]] = [("2e9", "2000000000 1 5\n1 2 3\n"), ("p0", "4 3 0\n1 2 1\n2 3 1\n3 4 1\n"),
                       ("neg", "-4 3 1\n"), ("huge", "99999999999999999999 1 1\n"), ("bin", b"\xff\xfe\x00"),
                       ("short", "10 5 2\n1 2 3\n"), ("words", "a b c\n")]
    for name, text in pmed:
        cases.append(Case(f"load_pmed {name}", load_pmed, (write(f"pmed_{name}.txt", text),), names=("path", "k")))
    tables: list[tuple[str, str | bytes]] = [
                       ("ragged-long", "Model,a,b\nm1,1,2\nm2,3,4,5\n"), ("ragged-short", "Model,a,b\nm1,1,2\nm2,3\n"),
                       ("dup-model", "Model,a,b\nm1,1,2\nm1,3,4\n"), ("dup-col", "Model,a,a\nm1,1,2\nm2,3,4\n"),
                       ("empty", ""), ("binary", b"\xff\xfe\x00\x01"), ("quote", 'Model,a\n"m1,1\n'),
                       ("no-metric", "Model\nm1\n"), ("text-cell", "Model,a\nm1,high\n")]
    for name, text in tables:
        cases.append(Case(f"load_score_table {name}", load_score_table, (write(f"t_{name}.csv", text),),
                          names=("path", "lower_is_better", "skip")))
    files: list[tuple[str, str | bytes]] = [("bad.mps", "garbage\n"), ("bin.mps", b"\x00\xff"),
                                            ("trunc.npz", good[:30]), ("x.json", "{}")]
    for name, content in files:
        cases.append(Case(f"load_instance {name}", load_instance, (write(f"inst_{name}", content),),
                          names=("path",)))
    return cases


def _repcore_cases(d: Path) -> list[Case]:
    """RepCore: alignment inputs, the hidden-state generator and loader."""
    from benchsel.formulations.repcore import RepCoreAligner, align_hidden_states
    from benchsel.instances.hidden import load_hidden_states, make_hidden_states

    rng = np.random.default_rng(0)
    H = [rng.normal(size=(12, 3)), rng.normal(size=(12, 5))]
    Y = rng.integers(0, 2, size=(2, 12))
    AL = ("hidden_states", "Y_source", "dim", "seed", "width", "hidden", "epochs", "batch_size", "lr",
          "weight_decay", "patience", "split", "activation", "time_limit", "threads", "verbose")
    fast = {"epochs": 2}
    bad_npz = d / "repcore_ragged.npz"
    np.savez(bad_npz, a=np.ones((4, 2)), b=np.ones((5, 2)))
    cases = [
        Case("align item counts differ", align_hidden_states, ([H[0], H[1][:-1]], Y), fast, AL),
        Case("align NaN", align_hidden_states, ([H[0], np.full((12, 5), np.nan)], Y), fast, AL),
        Case("align inf", align_hidden_states, ([np.full((12, 3), np.inf), H[1]], Y), fast, AL),
        Case("align zero width", align_hidden_states, ([H[0], np.zeros((12, 0))], Y), fast, AL),
        Case("align complex", align_hidden_states, ([H[0] + 1j, H[1]], Y), fast, AL),
        Case("align strings", align_hidden_states, ([H[0].astype(str), H[1]], Y), fast, AL),
        Case("align Y rows", align_hidden_states, (H, Y[:1]), fast, AL),
        Case("align Y not binary", align_hidden_states, (H, Y * 0.5), fast, AL),
        Case("align dim=0", align_hidden_states, (H, Y), {**fast, "dim": 0}, AL),
        Case("align dim=True", align_hidden_states, (H, Y), {**fast, "dim": True}, AL),
        Case("align states 1e300", align_hidden_states, ([h * 1e300 for h in H], Y), fast, AL),
        Case("align states 1e-320", align_hidden_states, ([h * 1e-320 for h in H], Y), fast, AL),
        Case("aligner lr=nan", RepCoreAligner, (), {"lr": float("nan")}),
        Case("aligner split bogus", RepCoreAligner, (), {"split": (0.5, 0.6, -0.1)}),
        Case("make_hidden_states n_items=10**12", make_hidden_states, (10**12,), {"n_models": 2}),
        Case("make_hidden_states widths=10**9", make_hidden_states, (100,), {"widths": 10**9}),
        Case("make_hidden_states widths short", make_hidden_states, (10, 3), {"widths": (2, 3)}),
        Case("load_hidden_states ragged npz", load_hidden_states, (bad_npz,)),
        Case("load_hidden_states missing", load_hidden_states, (d / "nope.npz",)),
    ]
    return cases


def catalogue(tmpdir: str | Path) -> list[Case]:
    """The fixed cases (files written under ``tmpdir``)."""
    return _catalogue() + _file_cases(Path(tmpdir)) + _repcore_cases(Path(tmpdir))


CATALOGUE = catalogue  # the fixed cases are built on demand (files need a folder)


# -------------------------------------------------------------- strategies
def case_strategy(tmpdir: str | Path) -> Any:
    """A Hypothesis strategy of random :class:`Case` s over every public constructor and loader."""
    from hypothesis import strategies as st

    from benchsel.formulations import (
        BatchInformationGain,
        KMedoids,
        PositionalProportionality,
        PositionalRepresentation,
        RankingRiskReconstruction,
    )
    from benchsel.instances import load_pmed, load_score_table
    from benchsel.instances.responses import load_responses

    tmp = Path(tmpdir)
    ok_int = st.integers(1, 3)
    ints = st.one_of(ok_int, ok_int, ok_int, st.integers(-2, 9),
                     st.sampled_from([True, False, 10**12, 2.0, 2.5, float("nan"), "3", None, 1 + 0j, np.int64(3)]))
    ok_real = st.floats(0.05, 0.6)
    reals = st.one_of(ok_real, ok_real, ok_real, st.floats(-2, 2),
                      st.sampled_from([0.0, 1e-300, 1e300, float("nan"), float("inf"), True, "x", None, 1j, -1.0]))
    seeds = st.integers(0, 2**16)

    # half the cases are "clean": every argument valid except that arrays may carry extreme magnitudes
    # (1e-320 .. 1e300), which is where a built formulation could still evaluate to inf or NaN
    clean_flag = st.booleans()

    @st.composite
    def arr(draw: Any, shape: Any, nonneg: bool = False, clean: bool = False) -> np.ndarray:
        kind = "f" if clean else draw(st.sampled_from(_KINDS))
        scale = draw(st.sampled_from(_SCALES))
        special = 0.0 if clean else draw(st.sampled_from([0.0] * 7 + [0.2]))
        return make_array(shape, kind, draw(seeds), scale, special, nonneg)

    def I(clean: bool) -> Any:  # noqa: E743 - an int argument
        return ok_int if clean else ints

    def F(clean: bool) -> Any:  # a real argument
        return ok_real if clean else reals

    n_st = st.one_of(st.integers(2, 7), st.integers(2, 7), st.integers(0, 7))

    @st.composite
    def index_arg(draw: Any, n: int) -> Any:
        how = draw(st.sampled_from(["none"] * 6 + ["ints", "mask", "badmask", "floats", "oob", "dup", "nested"]))
        rng = np.random.default_rng(draw(seeds))
        k = int(rng.integers(0, max(n, 1) + 1))
        return {"none": None, "ints": rng.permutation(max(n, 1))[:k].tolist(), "mask": rng.random(n) < 0.5,
                "badmask": rng.random(n + 1) < 0.5, "floats": [0.5, 1.0], "oob": [0, n + 3], "dup": [0, 0],
                "nested": [[0, 1]]}[how]

    @st.composite
    def kmedoids(draw: Any) -> Case:
        c = draw(clean_flag)
        n = draw(st.integers(4, 7)) if c else draw(n_st)
        shape = _sq(n) if c else draw(st.sampled_from([_sq(n)] * 5 + [(n, n + 1), (n,)]))
        D = draw(arr(shape, nonneg=True, clean=c))
        if D.ndim == 2 and D.shape[0] == D.shape[1] and D.dtype.kind == "f":
            np.fill_diagonal(D, 0.0)
        w = draw(st.one_of(st.none(), arr((n,), nonneg=True, clean=c)) if c else
                 st.one_of(st.none(), arr((n,), nonneg=True), arr((n + 1,))))
        return Case("KMedoids", KMedoids, (D, draw(I(c))),
                    {"weights": w, "candidates": None if c else draw(index_arg(n))})

    @st.composite
    def features(draw: Any) -> Case:
        c = draw(clean_flag)
        n = draw(st.integers(4, 7)) if c else draw(n_st)
        X = draw(arr((n, draw(st.integers(1 if c else 0, 4))), clean=c))
        metric = draw(st.sampled_from(["correlation", "cosine", "euclidean"] + ([] if c else ["l1", 3])))
        w = draw(st.one_of(st.none(), arr((n,), nonneg=True, clean=c)))
        return Case("KMedoids.from_features", KMedoids.from_features, (X, draw(I(c))),
                    {"metric": metric, "weights": w, "candidates": None if c else draw(index_arg(n))})

    @st.composite
    def holocosm(draw: Any) -> Case:
        c = draw(clean_flag)
        M, N, K = draw(st.integers(2 if c else 1, 5)), draw(st.integers(5 if c else 1, 8)), draw(st.integers(1, 3))
        X = draw(arr((M, N, K) if c else draw(st.sampled_from([(M, N, K)] * 4 + [(M, N), (M,)])), clean=c))
        kw: dict[str, Any] = {"seed": draw(st.sampled_from([0, 1] if c else [0, 1, -1, True, 2.5]))}
        if c:
            kw.update({"budget": 2} if draw(st.booleans()) else {"retention": draw(st.floats(0.2, 0.6))})
        else:
            if draw(st.booleans()):
                kw["budget"] = draw(ints)
            if draw(st.booleans()) or "budget" not in kw:
                kw["retention"] = draw(reals)
        for name, strat in (("quantile", F(c)), ("lam", F(c)), ("eps", st.one_of(st.none(), F(c))),
                            ("bank_size", st.sampled_from([1, 7, 128] if c else [1, 7, 128, 0, -3, 10**12, True,
                                                                                 2.5]))):
            if draw(st.booleans()):
                kw[name] = draw(strat)
        if not c and draw(st.booleans()):
            kw["orientation" if draw(st.booleans()) else "lower_is_better"] = draw(
                st.sampled_from([[1] * K, [-1] * K, [0] * K, [True] * K, [1], "up", True]))
        return Case("RankingRiskReconstruction", RankingRiskReconstruction, (X,), kw)

    @st.composite
    def bayes(draw: Any) -> Case:
        c = draw(clean_flag)
        Kr, N = draw(st.integers(1, 4)), draw(st.integers(5 if c else 1, 9))
        R = draw(arr((Kr, N) if c else draw(st.sampled_from([(Kr, N)] * 5 + [(N,)])), clean=c))
        kw: dict[str, Any] = {"k": draw(I(c)), "coreset": [0, 1] if c and draw(st.booleans()) else
                              None if c else draw(index_arg(N))}
        sig = st.sampled_from([1e-4, 1e-2, 1e-8, 1.0]) if c else reals
        for name, strat in (("alpha", st.sampled_from([1.0, 0.5, 1e-3, 1e3]) if c else reals),
                            ("beta", st.sampled_from([1.0, 0.1, 10.0]) if c else reals), ("sigma2", sig),
                            ("tol", st.one_of(st.none(), F(c))),
                            ("kernel", st.sampled_from(["se", "matern32"] + ([] if c else ["rbf"]))),
                            ("N0", I(c)), ("observed", arr((draw(st.integers(0, N + 1)),)))):
            if draw(st.booleans()) and not (c and name == "observed"):
                kw[name] = draw(strat)
        return Case("BatchInformationGain", BatchInformationGain, (R,), kw)

    @st.composite
    def positional(draw: Any) -> Case:
        c = draw(clean_flag)
        m, n = draw(st.integers(2 if c else 1, 6)), draw(st.integers(2 if c else 1, 6))
        cls = draw(st.sampled_from([PositionalRepresentation, PositionalProportionality]))
        via = draw(st.sampled_from(["positions", "scores", "rankings"]))
        if via == "positions" and c:
            data: Any = _posmat(m, n, draw(seeds), "ok")
        elif via == "positions":
            data = _posmat(m, n, draw(seeds), draw(st.sampled_from(["ok"] * 5 + ["dense", "zero", "big", "float",
                                                                             "nan"])))
        elif via == "rankings":
            data = _posmat(m, n, draw(seeds), draw(st.sampled_from(["ok"] * 3 + ["dense", "zero", "big", "float",
                                                                               "nan"])))
        else:
            data = draw(arr((m, n), clean=c))
        kw: dict[str, Any] = {}
        if cls is PositionalRepresentation:
            kw["g"] = draw(I(c))
            if not c and draw(st.booleans()):
                kw["groups"] = draw(st.sampled_from([[[0, 1]], [[0], [1, 2]], [[]], [[9]], "ab", [["x"]], [[0.5]]]))
        else:
            if draw(st.booleans()):
                kw["eps"] = draw(F(c))
            if (draw(st.booleans()) and not c) or "eps" not in kw:
                kw["size"] = draw(I(c))
        if via != "positions":
            kw["ties"] = draw(st.sampled_from(["min", "max", "ordinal"] + ([] if c else ["average"])))
            kw["missing"] = draw(st.sampled_from(["error", "last", "drop"] + ([] if c else ["ignore"])))
        fn = cls if via == "positions" else getattr(cls, "from_scores" if via == "scores" else "from_rankings")
        return Case(f"{cls.__name__}({via})", fn, (data,), kw)

    counter = [0]

    def fresh(suffix: str) -> Path:
        counter[0] += 1
        return tmp / f"f{os.getpid()}_{counter[0]}{suffix}"

    @st.composite
    def response_file(draw: Any) -> Case:
        p = fresh(".npz")
        how = draw(st.sampled_from(["npz", "npz", "bytes", "truncated"]))
        if how == "bytes":
            p.write_bytes(draw(st.binary(max_size=200)))
        else:
            Y = draw(arr(draw(st.sampled_from([(3, 4), (2, 3, 2), (0, 3), (3,), (2, 2, 2, 2)]))))
            extra: dict[str, Any] = {}
            if draw(st.booleans()):
                extra["models"] = draw(st.sampled_from([np.array(["a", "b", "c"]), np.array(["a"]), np.zeros((2, 2))]))
            if draw(st.booleans()):
                extra["metrics"] = draw(st.sampled_from([np.array(["m", "m"]), np.array(["m", "n"]), np.array([1])]))
            buf = io.BytesIO()
            np.savez(buf, **({"Y": Y} if draw(st.booleans()) or Y.dtype.kind != "O" else {"X": Y}), **extra)
            data = buf.getvalue()
            if how == "truncated":
                data = data[: draw(st.integers(0, max(len(data) - 1, 0)))]
            p.write_bytes(data)
        lib = draw(st.sampled_from([None, None, True, [True], [1, 0], "yes"]))
        return Case("load_responses", load_responses, (p,), {"lower_is_better": lib})

    @st.composite
    def pmed_file(draw: Any) -> Case:
        p = fresh(".txt")
        n = draw(st.sampled_from([0, 1, 3, 4, 2_000_000_000, -5]))
        m = draw(st.sampled_from([0, 1, 2, 3, 10**9]))
        pp = draw(st.sampled_from([0, 1, 2, 9]))
        edges = draw(st.lists(st.tuples(st.integers(-1, 5), st.integers(-1, 5), st.integers(-3, 9)), max_size=6))
        tail = draw(st.sampled_from(["", "x", "1.5", "99999999999999999999"]))
        p.write_text(f"{n} {m} {pp}\n" + "".join(f"{a} {b} {c}\n" for a, b, c in edges) + tail)
        return Case("load_pmed", load_pmed, (p,), {"k": draw(st.sampled_from([None, None, 1, 0, True]))})

    @st.composite
    def table_file(draw: Any) -> Case:
        p = fresh(draw(st.sampled_from([".csv", ".tsv"])))
        sep = "\t" if p.suffix == ".tsv" else ","
        cells = st.sampled_from(["1", "2.5", "-", "", "x", "nan", "inf", "m1", "a", '"q', "1e400"])
        header = draw(st.lists(st.sampled_from(["Model", "a", "b", "a", "Average", ""]), min_size=0, max_size=4))
        rows = draw(st.lists(st.lists(cells, min_size=0, max_size=5), max_size=4))
        p.write_text("\n".join(sep.join(r) for r in [header, *rows]))
        return Case("load_score_table", load_score_table, (p,),
                    {"lower_is_better": draw(st.sampled_from([None, True, ["a"], ["zz"]]))})

    return st.one_of(kmedoids(), features(), holocosm(), bayes(), positional(), response_file(), pmed_file(),
                     table_file())


# ------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=2000, help="random cases drawn by Hypothesis (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import warnings

    from hypothesis import HealthCheck, given, seed, settings

    warnings.simplefilter("ignore")
    outcomes: Counter[str] = Counter()
    fails: list[str] = []
    slowest = 0.0
    with tempfile.TemporaryDirectory() as d:
        for case in catalogue(d):
            t0 = time.perf_counter()
            out = classify(case)
            slowest = max(slowest, time.perf_counter() - t0)
            outcomes[("catalogue", out if not out.startswith("FAIL") else "FAIL")] += 1  # type: ignore[index]
            if out.startswith("FAIL"):
                fails.append(f"{case.label}: {out}")
        by_fn: Counter[tuple[str, str]] = Counter()

        @seed(args.seed)
        @settings(max_examples=args.examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case_strategy(d))
        def run(case: Case) -> None:
            nonlocal slowest
            t0 = time.perf_counter()
            out = classify(case)
            slowest = max(slowest, time.perf_counter() - t0)
            by_fn[(case.label, out if not out.startswith("FAIL") else "FAIL")] += 1
            if out.startswith("FAIL"):
                fails.append(f"{case.label} {case.kwargs}: {out}")

        run()
    print(f"catalogue: {sum(v for k, v in outcomes.items())} cases: "
          + ", ".join(f"{k[1]} {v}" for k, v in sorted(outcomes.items())))
    labels = sorted({k[0] for k in by_fn})
    print(f"random: {sum(by_fn.values())} cases")
    print(f"{'function':38} {'built':>7} {'named-error':>12} {'FAIL':>6}")
    for lab in labels:
        print(f"{lab:38} {by_fn[(lab, 'built')]:7d} {by_fn[(lab, 'named-error')]:12d} {by_fn[(lab, 'FAIL')]:6d}")
    print(f"slowest case: {slowest:.2f} s (hang threshold {HANG_SECONDS:g} s)")
    for f in dict.fromkeys(fails):
        print("FAIL", f[:400])
    return 1 if fails else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
