"""Benchmark harness: grid planning, isolated runs, watchdog, results store, resumability, gaps."""
from __future__ import annotations

import csv
import json
import math
import textwrap
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.benchmarks import harness
from benchsel.benchmarks.suites import InstanceSpec, suite_instances
from benchsel.formulations import formulation_classes
from benchsel.formulations.core.errors import InvalidInputError, UnknownMethodError
from benchsel.instances.synthetic import make_kmedoids

REQUIRED = ("formulation", "instance", "method", "seed", "objective", "bound", "gap", "seconds", "feasible",
            "termination")


def _specs(n=2):
    return [InstanceSpec(f"tiny-{i}", partial(make_kmedoids, 24 + 6 * i, 3, seed=i), ("highs", "fasterpam", "random"))
            for i in range(n)]


@pytest.fixture
def plugin(tmp_path):
    """A .py plugin registering misbehaving methods; unregistered afterwards."""
    from benchsel.formulations.core.registry import unregister_method

    p = tmp_path / "misbehaving_methods.py"
    p.write_text(textwrap.dedent("""
        import os, time
        from benchsel.formulations.kmedoids import KMedoids
        from benchsel.formulations.core.registry import register_method

        @register_method("test_sleeper", kind="heuristic", accepts=KMedoids, replace=True)
        def sleeper(f, *, time_limit, seed, **options):
            time.sleep(120)  # ignores its time limit, as an overrunning solver would

        @register_method("test_crasher", kind="heuristic", accepts=KMedoids, replace=True)
        def crasher(f, *, time_limit, seed, **options):
            os._exit(3)

        @register_method("test_raiser", kind="heuristic", accepts=KMedoids, replace=True)
        def raiser(f, *, time_limit, seed, **options):
            raise RuntimeError("this method always fails")
    """))
    yield str(p)
    for name in ("test_sleeper", "test_crasher", "test_raiser"):
        unregister_method(name)


# ------------------------------------------------------------- planning
def test_plan_grid_and_method_options():
    tasks, _notes = harness.plan("t", _specs(2), seeds=2, time_limit=5)
    assert len(tasks) == 2 * 3 * 2
    assert {t.kind for t in tasks} == {"exact", "heuristic"}
    assert all(t.time_limit == 5 for t in tasks)
    highs = [t for t in tasks if t.method == "highs"]
    assert all(t.options["threads"] == 1 for t in highs)  # exact backends get one thread each
    assert all("threads" not in t.options for t in tasks if t.method == "random")
    assert len({t.key for t in tasks}) == len(tasks)
    tasks, _ = harness.plan("t", _specs(1), methods=["highs:model=radius,mip_rel_gap=0.001"], time_limit=5)
    assert tasks[0].options == {"model": "radius", "mip_rel_gap": 0.001, "threads": 1}
    assert tasks[0].label == "highs:model=radius,mip_rel_gap=0.001"


@pytest.mark.parametrize("methods,exc,text", [
    (["nosuch"], UnknownMethodError, "unknown method 'nosuch'"),
    (["fasterpam:bogus=1"], InvalidInputError, "'bogus' not understood"),
    (["highs:mip_rel_gap=abc"], InvalidInputError, "mip_rel_gap: expected a real number"),
    (["highs:model=bogus"], InvalidInputError, "model: expected one of"),
    (["highs:=1"], InvalidInputError, "expected 'name:key=value"),
])
def test_plan_bad_methods(methods, exc, text):
    with pytest.raises(exc, match=text):
        harness.plan("t", _specs(1), methods=methods, time_limit=5)


def test_plan_bad_numbers():
    with pytest.raises(InvalidInputError, match="seeds"):
        harness.plan("t", _specs(1), seeds=0, time_limit=5)
    with pytest.raises(InvalidInputError, match="time-limit"):
        harness.plan("t", _specs(1), time_limit=0)


def test_quick_suite_has_exact_and_heuristic_for_every_formulation():
    specs = suite_instances("quick")
    tasks, _ = harness.plan("quick", specs, time_limit=20)
    kinds: dict[str, set] = {}
    for t in tasks:
        kinds.setdefault(t.formulation, set()).add(t.kind)
    assert set(kinds) == {c.__name__ for c in formulation_classes() if c.__module__.startswith("benchsel.")}
    assert all({"exact", "heuristic"} <= k <= {"exact", "heuristic", "baseline"} for k in kinds.values()), kinds
    assert "baseline" in kinds["RankingRiskReconstruction"]  # HoloCosm's peers run beside its solvers
    # seeded: the same suite twice gives the same instances
    again, _ = harness.plan("quick", suite_instances("quick"), time_limit=20)
    assert [t.key for t in tasks] == [t.key for t in again]


# ---------------------------------------------------- runs, store, resume
def test_local_grid_store_and_resume(tmp_path):
    tasks, _ = harness.plan("t", _specs(2), time_limit=10)
    store = harness.ResultStore(tmp_path / "out")
    s1 = harness.execute(tasks, store, jobs=2, progress=False)
    assert (s1.ran, s1.skipped, s1.killed, s1.errors) == (6, 0, 0, 0)
    rows = list(csv.DictReader(open(store.csv)))
    assert len(rows) == 6
    assert set(REQUIRED) <= set(rows[0])
    assert any(c.startswith("version.") for c in rows[0])
    assert {r["feasible"] for r in rows} == {"true"}
    assert all(r["executor"] == "local fork" for r in rows)
    for r in rows:
        assert float(r["gap"]) >= 0
        if r["method"] == "highs":
            assert r["termination"] == "optimal" and float(r["gap"]) == 0 and r["reference"] == "optimum"
    # second run: everything is skipped
    s2 = harness.execute(tasks, store, jobs=2, progress=False)
    assert (s2.ran, s2.skipped) == (0, 6)
    # a crash mid-write leaves a cut line; a run whose worker died is retried; lost rows are re-run
    lines = store.jsonl.read_text().splitlines()
    bad = json.loads(lines[1])
    bad.update(termination="error", retry=True)
    store.jsonl.write_text("\n".join([lines[0], json.dumps(bad), lines[2][:40]]) + "\n")
    s3 = harness.execute(tasks, store, jobs=2, progress=False)
    assert store.n_bad_lines == 1
    assert (s3.ran, s3.skipped) == (5, 1)
    assert len(store.rows()) == 6 and all(r["termination"] != "error" for r in store.rows())


def test_a_torn_last_line_is_set_aside_and_the_resumed_rows_get_lines_of_their_own(tmp_path):
    """A writer killed mid-write leaves a last line without its newline; the next row used to land on that
    line (and be lost with it). It is cut off into runs.jsonl.torn before the next append."""
    tasks, _ = harness.plan("t", _specs(2), time_limit=10)
    store = harness.ResultStore(tmp_path / "out")
    harness.execute(tasks, store, jobs=2, progress=False)
    lines = store.jsonl.read_text().splitlines()
    torn = lines[-1][:57]
    store.jsonl.write_text("\n".join(lines[:-1]) + "\n" + torn)  # the last run's row cut short, no newline
    s = harness.execute(tasks, store, jobs=2, progress=False)
    assert (s.ran, s.skipped) == (1, 5)
    text = store.jsonl.read_text()
    assert text.endswith("\n") and torn not in text.splitlines() and len(text.splitlines()) == 6
    assert [json.loads(ln) for ln in text.splitlines()]  # every line a whole row
    assert store.n_bad_lines == 0 and len(store.rows()) == 6
    assert (store.dir / "runs.jsonl.torn").read_text() == torn + "\n"
    # the store itself: a torn tail longer than a read block, then an append
    store.jsonl.write_text(text + "x" * 70_000)
    store.append({**json.loads(text.splitlines()[0]), "seed": 99})
    assert store.jsonl.read_text() == text + text.splitlines()[0].replace('"seed": 0', '"seed": 99') + "\n"
    assert (store.dir / "runs.jsonl.torn").read_text() == torn + "\n" + "x" * 70_000 + "\n"


def test_same_seed_same_row(tmp_path):
    tasks, _ = harness.plan("t", _specs(1), methods=["random"], seeds=2, time_limit=10)
    a = {t.key: harness.run_forked(t) for t in tasks}
    b = {t.key: harness.run_isolated(t) for t in tasks}  # fresh interpreter: same answers
    assert a[tasks[0].key]["selection"] != a[tasks[1].key]["selection"]  # the seed matters here
    for k in a:
        assert a[k]["selection"] == b[k]["selection"]
        assert a[k]["objective"] == b[k]["objective"]


def test_watchdog_kills_overrunning_run_and_crash_is_an_error(tmp_path, plugin):
    tasks, _ = harness.plan("t", _specs(1), methods=["test_sleeper", "test_crasher", "test_raiser", "fasterpam"],
                            time_limit=0.5, plugins=[plugin])
    store = harness.ResultStore(tmp_path / "out")
    s = harness.execute(tasks, store, jobs=2, grace=1.5, progress=False)
    assert (s.ran, s.killed, s.errors) == (4, 1, 2)
    rows = {r["method"]: r for r in store.rows()}
    k = rows["test_sleeper"]
    assert k["termination"] == "killed" and k["feasible"] is False and k["objective"] is None
    assert 1.5 <= k["seconds"] < 15 and "watchdog" in k["error"]
    c = rows["test_crasher"]
    assert c["termination"] == "error" and "exited with code 3" in c["error"]
    assert rows["fasterpam"]["feasible"] is True
    r = rows["test_raiser"]
    assert r["termination"] == "error" and "this method always fails" in r["error"] and r["retry"] is False
    assert c["retry"] is True and k["retry"] is False
    # killed runs and failing methods are results: not retried; the crash is
    s2 = harness.execute(tasks, store, jobs=2, grace=1.5, progress=False)
    assert (s2.ran, s2.skipped) == (1, 3)
    # the subprocess runner (used on Dask workers) has the same watchdog
    t = next(t for t in tasks if t.method == "test_sleeper")
    row = harness.run_isolated(t, grace=1.0)
    assert row["termination"] == "killed" and row["seconds"] < 15


def test_fidelity_columns(tmp_path):
    specs = [s for s in suite_instances("quick") if s.name == "kmedoids-anchor-r20"]
    tasks, _ = harness.plan("quick", specs, methods=["fasterpam", "random"], time_limit=10)
    store = harness.ResultStore(tmp_path)
    harness.execute(tasks, store, jobs=2, progress=False)
    for r in store.rows():
        assert 0 <= r["fidelity.mean_nmae"] < 1 and -1 <= r["fidelity.mean_sp"] <= 1
        assert r["retention"] == pytest.approx(0.2)


# ------------------------------------------------------------------ gaps
def _row(obj, *, method="h", kind="heuristic", term="converged", bound=None, sense="min", feasible=True):
    return {"instance": "i", "fingerprint": "f", "method": method, "kind": kind, "termination": term,
            "objective": obj, "bound": bound, "sense": sense, "feasible": feasible, "seed": 0}


def test_reference_gaps_min_max_and_bound_only():
    rows = harness.reference_gaps([_row(10.0, kind="exact", term="optimal", bound=10.0, method="x"),
                                   _row(12.0), _row(None, feasible=False)])
    assert [r["gap"] for r in rows] == [0.0, pytest.approx(2 / 12), None]
    assert rows[1]["reference"] == "optimum" and rows[1]["reference_value"] == 10.0
    rows = harness.reference_gaps([_row(10.0, kind="exact", term="optimal", bound=10.0, sense="max", method="x"),
                                   _row(8.0, sense="max")])
    assert rows[1]["gap"] == pytest.approx(2 / 8)
    # no optimum proven: the best bound of the exact runs is the reference
    rows = harness.reference_gaps([_row(11.0, kind="exact", term="time_limit", bound=9.0, method="a"),
                                   _row(12.0, kind="exact", term="time_limit", bound=9.5, method="b"), _row(10.0)])
    assert rows[2]["reference"] == "bound" and rows[2]["gap"] == pytest.approx(0.5 / 10)
    # no exact run at all: no gap
    assert harness.reference_gaps([_row(3.0)])[0]["gap"] is None


def test_reference_gaps_warns_when_a_heuristic_beats_a_proven_optimum():
    warned = []
    rows = harness.reference_gaps([_row(10.0, kind="exact", term="optimal", method="x"), _row(9.0)],
                                  warn=warned.append)
    assert rows[1]["gap"] < 0 and len(warned) == 1 and "better than the proven optimum" in warned[0]


@settings(max_examples=60, deadline=None)
@given(opt=st.floats(-1e6, 1e6, allow_nan=False), deltas=st.lists(st.floats(0, 1e6), min_size=1, max_size=6),
       sense=st.sampled_from(["min", "max"]))
def test_gaps_are_nonnegative_against_a_true_optimum(opt, deltas, sense):
    sign = 1 if sense == "min" else -1
    rows = [_row(opt, kind="exact", term="optimal", method="x", sense=sense)]
    rows += [_row(opt + sign * d, method=f"h{i}", sense=sense) for i, d in enumerate(deltas)]
    out = harness.reference_gaps(rows)
    assert out[0]["gap"] == 0.0
    for r in out[1:]:
        assert r["gap"] >= 0 and math.isfinite(r["gap"])
