"""Issue 12: every bad input a named error, no silent inf/NaN, errors that surface, a store safe under
concurrent writers, CLI exit codes."""
from __future__ import annotations

import collections
import json
import math
import os
import pickle
import platform
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support.fuzz_cases import case_strategy, catalogue, classify

from benchsel.benchmarks.store import ResultStore
from benchsel.formulations import KMedoids
from benchsel.formulations.core.errors import InvalidInputError, NumericalError
from benchsel.formulations.core.result import MethodOutput, ReadOnlyDict, Termination
from benchsel.instances import make_kmedoids
from benchsel.solvers.api import finalize, solve


# ------------------------------------------------------------------- fuzz
@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def test_catalogue_of_bad_inputs_named_or_correct(fuzz_dir):
    """Issue 12's cases (and their neighbours): a named InvalidInputError or a correct, finite result."""
    fails = [f"{c.label}: {out}" for c in catalogue(fuzz_dir) if (out := classify(c)).startswith("FAIL")]
    assert not fails, "\n".join(fails)


def test_fuzz_every_constructor_and_loader(fuzz_dir):
    """Hypothesis: any call builds a formulation with finite feasible objectives, or raises a named error."""
    fails: list[str] = []
    seen: collections.Counter[str] = collections.Counter()

    @settings(max_examples=400, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case_strategy(fuzz_dir))
    def run(case):
        out = classify(case)
        seen[out if not out.startswith("FAIL") else "FAIL"] += 1
        if out.startswith("FAIL"):
            fails.append(f"{case.label} {case.kwargs}: {out}")

    run()
    assert not fails, "\n".join(fails[:10])
    assert seen["built"] >= 25 and seen["named-error"] >= 50, seen  # both sides are exercised


def test_messages_name_the_argument():
    D = np.ones((4, 4)) - np.eye(4)
    with pytest.raises(InvalidInputError, match=r"^D: expected real numbers, got a complex array"):
        KMedoids(D + 1j, 2)
    with pytest.raises(InvalidInputError, match=r"^X: expected at least 2 items"):
        KMedoids.from_features(np.ones((1, 3)), 1)
    with pytest.raises(InvalidInputError, match=r"^candidates: a boolean mask must have one entry per item"):
        KMedoids(D, 2, candidates=[True, False])
    f = KMedoids(D, 2, candidates=np.array([True, True, False, True]))
    assert f.candidates.tolist() == [0, 1, 3]
    with pytest.raises(InvalidInputError, match=r"^bank_size: .* needs about .* TiB of memory"):
        from benchsel.formulations import RankingRiskReconstruction

        RankingRiskReconstruction(np.random.default_rng(0).normal(size=(4, 10, 2)), budget=3, bank_size=10**12)


def test_scale_free_metrics_survive_tiny_and_huge_features():
    X = np.random.default_rng(0).normal(size=(12, 4))
    for metric in ("cosine", "correlation"):
        base = KMedoids.from_features(X, 3, metric=metric).D
        for s in (1e-200, 1e200, 1e300):
            assert np.allclose(KMedoids.from_features(X * s, 3, metric=metric).D, base, atol=1e-12)
        assert not np.allclose(base, 1.0)


# ------------------------------------------------------------ solve()
@pytest.fixture
def raiser():
    from benchsel.formulations.core.registry import register_method, unregister_method

    @register_method("test_hardening_raiser", kind="heuristic", accepts=KMedoids, replace=True)
    def run(f, *, time_limit, seed, **options):
        raise RuntimeError("boom inside the method")

    yield "test_hardening_raiser"
    unregister_method("test_hardening_raiser")


def test_solve_raises_method_errors_unless_captured(raiser):
    f = make_kmedoids(20, 3)
    with pytest.raises(RuntimeError, match="boom inside the method"):
        solve(f, raiser)
    res = solve(f, raiser, capture_errors=True)
    assert res.termination == "error" and not res.feasible and res.selection.size == 0
    assert res.extra["error"] == "RuntimeError: boom inside the method"
    assert "Traceback" in res.extra["traceback"] and "boom inside the method" in res.extra["traceback"]
    # caller mistakes raise in both modes
    with pytest.raises(InvalidInputError, match="n_samples"):
        solve(f, "random", capture_errors=True, n_samples=0)
    with pytest.raises(InvalidInputError, match="capture_errors"):
        solve(f, "random", capture_errors="yes")


def test_feasible_non_finite_objective_is_an_error(monkeypatch):
    f = make_kmedoids(20, 3)
    sel = f.initial_selection()
    monkeypatch.setattr(f, "evaluate", lambda s: math.inf)
    with pytest.raises(NumericalError, match="objective: KMedoids evaluates the feasible selection"):
        finalize(f, "x", 0, MethodOutput(sel, Termination.CONVERGED), 0.0)
    res = solve(f, "random", capture_errors=True)
    assert res.termination == "error" and "NumericalError" in res.extra["error"] and not res.feasible


def test_result_extra_is_read_only_and_picklable():
    res = solve(make_kmedoids(20, 3), "random")
    assert isinstance(res.extra, ReadOnlyDict) and "wall_seconds" in res.extra
    with pytest.raises(TypeError, match="read-only"):
        res.extra["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        del res.extra["wall_seconds"]  # type: ignore[attr-defined]
    copy = dict(res.extra)
    copy["x"] = 1
    again = pickle.loads(pickle.dumps(res))
    assert dict(again.extra) == dict(res.extra) and again.extra == res.extra


# -------------------------------------------------------------- store
def _run_keys(out: Path) -> collections.Counter:
    rows = [json.loads(ln) for ln in (out / "runs.jsonl").read_text().splitlines() if ln.strip()]
    return collections.Counter((r["instance"], r["method"], r["seed"]) for r in rows)


def _cli(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "benchsel.benchmarks", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


@pytest.mark.slow
def test_two_concurrent_runs_execute_each_run_once(tmp_path):
    out = tmp_path / "shared"
    argv = ["run", "quick", "--methods", "random", "--jobs", "1", "--no-progress", "--out", str(out),
            "--instances", "kmedoids-*", "pos*"]
    procs = [_cli(*argv), _cli(*argv)]
    res = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], res
    counts = _run_keys(out)
    assert len(counts) == 8 and set(counts.values()) == {1}, counts  # 8 instances, each run once
    ran = sum(int(e.split(" runs in ")[0].rsplit(" ", 1)[-1]) for _, e in res for e in e.splitlines()
              if " runs in " in e)
    assert ran == 8  # the two processes shared the work: executions add up to the grid
    assert not list((out / ".claims").glob("*.json"))  # every claim released
    for o, _ in res:  # each process printed the full tables (it waited for the other's runs)
        assert o.count("== ") >= 8


def test_stale_claims_are_taken_over(tmp_path):
    store = ResultStore(tmp_path)
    path = store._claim_path("k1")
    path.parent.mkdir(parents=True, exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path.write_text(json.dumps({"host": platform.node(), "pid": dead.pid, "token": "other"}))
    assert store.claim("k1") == "claimed"  # its writer died (SIGKILL leaves such files)
    other = ResultStore(tmp_path)
    assert other.claim("k1") == "held" and other.holder("k1")["pid"] == os.getpid()
    store.release("k1")
    assert other.claim("k1") == "claimed"
    other.release("k1")
    p2 = store._claim_path("k2")
    p2.write_text(json.dumps({"host": "elsewhere.example", "pid": 1, "token": "far"}))
    assert store.claim("k2") == "held"  # another host, fresh heartbeat
    old = time.time() - 2 * ResultStore.STALE_SECONDS
    os.utime(p2, (old, old))
    assert store.claim("k2") == "claimed"  # no heartbeat for STALE_SECONDS
    store.release("k2")
    # a finished row is never claimed again, by any writer
    store.append({"instance": "i", "fingerprint": "f", "method": "m", "seed": 0, "time_limit": 1.0})
    from benchsel.benchmarks.tasks import run_key

    assert other.claim(run_key("i", "f", "m", 0, 1.0)) == "done"


@pytest.mark.slow
def test_sigint_keeps_finished_runs_and_resume_runs_the_rest(tmp_path):
    plugin = tmp_path / "slow_methods.py"
    plugin.write_text(textwrap.dedent("""
        import time
        from benchsel.formulations.kmedoids import KMedoids
        from benchsel.formulations.core.registry import register_method
        from benchsel.formulations.core.result import MethodOutput, Termination

        @register_method("test_slow", kind="heuristic", accepts=KMedoids, replace=True)
        def slow(f, *, time_limit, seed, **options):
            time.sleep(0.7)
            return MethodOutput(f.initial_selection(), Termination.CONVERGED)
    """))
    out = tmp_path / "res"
    argv = ["run", "quick", "--methods", "test_slow", "--plugin", str(plugin), "--jobs", "1", "--no-progress",
            "--quiet", "--out", str(out), "--instances", "kmedoids-blobs-60", "kmedoids-anchor-r10"]
    p = _cli(*argv)
    deadline = time.time() + 120
    while time.time() < deadline and not ((out / "runs.jsonl").is_file() and (out / "runs.jsonl").read_text()):
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    first = _run_keys(out)
    assert sum(first.values()) == 1 and set(first.values()) == {1}
    q = _cli(*argv)
    _, err = q.communicate(timeout=120)
    assert q.returncode == 0, err
    counts = _run_keys(out)
    assert len(counts) == 2 and set(counts.values()) == {1}  # 2 k-medoids instances, each run once in total
    assert f"{sum(first.values())} skipped as already done" in err


# ---------------------------------------------------------------- CLI
def test_cli_exit_codes(tmp_path):
    from benchsel.benchmarks.cli import main

    one = ["--instances", "kmedoids-blobs-60", "--out", str(tmp_path / "a")]
    assert main(["run", "quick", "--methods", "highs:model=bogus", *one]) == 2
    assert main(["run", "quick", "--methods", "highs:mip_rel_gap=abc", *one]) == 2
    assert not (tmp_path / "a" / "runs.jsonl").exists()  # refused before any run
    plugin = tmp_path / "raising.py"
    plugin.write_text(textwrap.dedent("""
        from benchsel.formulations.kmedoids import KMedoids
        from benchsel.formulations.core.registry import register_method

        @register_method("test_cli_raiser", kind="heuristic", accepts=KMedoids, replace=True)
        def raiser(f, *, time_limit, seed, **options):
            raise RuntimeError("method bug")
    """))
    p = _cli("run", "quick", "--methods", "test_cli_raiser", "--plugin", str(plugin), "--instances",
             "kmedoids-blobs-60", "--no-progress", "--quiet", "--out", str(tmp_path / "b"))
    _, err = p.communicate(timeout=120)
    assert p.returncode == 3 and "RuntimeError: method bug" in err and "(exit code 3)" in err
    row = json.loads((tmp_path / "b" / "runs.jsonl").read_text().splitlines()[0])
    assert row["termination"] == "error" and "raise RuntimeError" in row["traceback"]
