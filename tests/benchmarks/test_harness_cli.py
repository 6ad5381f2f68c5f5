"""The ``benchsel`` command line: run, report, export-mps, solve; bad input gives one line and exit 2."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.data import needs_data

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _stderr_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


def test_run_report_export_solve(tmp_path, capsys):
    out = tmp_path / "res"
    rc = main(["run", "quick", "--jobs", "2", "--out", str(out), "--instances", "kmedoids-blobs-60",
               "kmedoids-anchor-r30", "--methods", "highs", "fasterpam", "random", "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "== kmedoids-blobs-60" in cap.out and "== summary" in cap.out
    for m in ("highs", "fasterpam", "random"):
        assert f"\n{m} " in cap.out
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert len(rows) == 6 and {r["feasible"] for r in rows} == {"true"}
    assert all(float(r["gap"]) >= 0 for r in rows)
    highs = {r["instance"]: float(r["objective"]) for r in rows if r["method"] == "highs"}

    rc = main(["report", str(out)])
    cap = capsys.readouterr()
    assert rc == 0 and "== kmedoids-anchor-r30" in cap.out
    assert (out / "plots" / "gap_vs_time.png").stat().st_size > 1000
    assert (out / "plots" / "fidelity_vs_retention.png").stat().st_size > 1000
    assert (out / "summary.csv").is_file()

    mps_dir = tmp_path / "mps"
    rc = main(["export-mps", "quick", "--out", str(mps_dir), "--instances", "kmedoids-blobs-60"])
    capsys.readouterr()
    assert rc == 0 and (mps_dir / "kmedoids-blobs-60.mps").is_file()
    assert (mps_dir / "kmedoids-blobs-60.mps.json").is_file() and (mps_dir / "kmedoids-blobs-60.npz").is_file()

    rc = main(["solve", str(mps_dir / "kmedoids-blobs-60.mps"), "--method", "highs", "--json"])
    cap = capsys.readouterr()
    assert rc == 0
    import json

    got = json.loads(cap.out)
    assert got["termination"] == "optimal" and got["feasible"] is True
    assert got["objective"] == pytest.approx(highs["kmedoids-blobs-60"], rel=1e-9)
    assert got["objective_checked"] == pytest.approx(highs["kmedoids-blobs-60"], rel=1e-9)

    rc = main(["solve", str(mps_dir / "kmedoids-blobs-60.npz"), "--method", "fasterpam"])
    cap = capsys.readouterr()
    assert rc == 0 and "feasible" in cap.out and "True" in cap.out


@pytest.fixture
def bad_files(tmp_path):
    (tmp_path / "garbage.txt").write_text("these are not integers\n")
    (tmp_path / "short.txt").write_text("10 5 2\n1 2 3\n")
    (tmp_path / "garbage.npz").write_bytes(b"not a zip at all")
    np.savez(tmp_path / "responses.npz", Y=np.zeros((2, 3)))
    (tmp_path / "orphan.mps").write_text("NAME x\nROWS\n N OBJ\nCOLUMNS\nRHS\nBOUNDS\nENDATA\n")
    (tmp_path / "empty").mkdir()
    return tmp_path


BAD = [
    (["run", "nosuch"], "unknown suite 'nosuch'"),
    (["run", "quick", "--methods", "nosuch"], "unknown method 'nosuch'"),
    (["run", "quick", "--methods", "fasterpam:bogus=1"], "not understood"),
    (["run", "quick", "--seeds", "0"], "seeds"),
    (["run", "quick", "--time-limit", "-3"], "time-limit"),
    (["run", "quick", "--instances", "zzz*"], "no instance of suite 'quick' matches"),
    (["run", "orlib-pmed", "--data-dir", "{d}/empty"], "needs orlib/pmed/pmedopt.txt"),
    (["run", "orlib-pmed", "--data-dir", "{d}/missing"], "is not a directory"),
    (["export-mps", "orlib-pmed", "--out", "{d}/o", "--data-dir", "{d}/empty"], "needs orlib/pmed/pmedopt.txt"),
    (["solve", "{d}/garbage.txt", "--method", "highs"], "not a OR-Library p-median file"),
    (["solve", "{d}/short.txt", "--method", "highs"], "header says n=10"),
    (["solve", "{d}/garbage.npz", "--method", "highs"], "not an .npz archive"),
    (["solve", "{d}/responses.npz", "--method", "highs"], "not a benchsel instance file"),
    (["solve", "{d}/orphan.mps", "--method", "highs"], "name map"),
    (["solve", "{d}/nothere.npz", "--method", "highs"], "no such instance file"),
    (["report", "{d}/empty"], "holds no benchsel results"),
    (["run"], "required"),
    (["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize("argv,text", BAD, ids=[" ".join(a[:3]) for a, _ in BAD])
def test_bad_input_one_line_no_traceback(argv, text, bad_files, capsys):
    argv = [a.format(d=bad_files) for a in argv]
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse errors
        rc = e.code
    cap = capsys.readouterr()
    lines = _stderr_lines(cap.err)
    assert rc != 0
    assert len(lines) == 1, cap.err
    assert text in lines[0]
    assert "Traceback" not in cap.err


def test_console_process_exit_code_and_debug(bad_files):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "benchmarks", "solve", str(bad_files / "garbage.txt"), "--method",
                        "highs"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert _stderr_lines(p.stderr) == [p.stderr.strip()] and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "benchmarks", "solve", str(bad_files / "garbage.txt"), "--method",
                        "highs", "--debug"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode != 0 and "Traceback" in p.stderr


@needs_data("orlib", "pmed", "pmed1.txt")
def test_orlib_pmed_suite_real_data(tmp_path, capsys):
    rc = main(["run", "orlib-pmed", "--instances", "pmed1", "--methods", "highs", "fasterpam", "--time-limit", "60",
               "--jobs", "2", "--out", str(tmp_path), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    rows = {r["method"]: r for r in csv.DictReader(open(tmp_path / "runs.csv"))}
    assert float(rows["highs"]["objective"]) == float(rows["highs"]["meta.known_optimum"]) == 5819
    assert rows["highs"]["termination"] == "optimal"
    assert float(rows["fasterpam"]["gap"]) >= 0 and rows["fasterpam"]["reference"] == "optimum"
    assert "known optimum 5819" in cap.out


REAL = [
    ("bayes", "glue-rte-k4", ["exhaustive", "smc", "random"]),
    ("positional", "helm-lite-rep-g2", ["highs", "greedy-multicover"]),
    ("holocosm", "topical-chat-r10", ["swap", "random"]),
]


@pytest.mark.parametrize("suite,instance,methods", REAL, ids=[r[0] for r in REAL])
def test_real_data_suites(suite, instance, methods, tmp_path, capsys):
    from benchsel.benchmarks.suites import available_suites, suite_instances

    if suite not in available_suites():
        pytest.skip(f"suite {suite} not in this build")
    data = default_data_dir()
    try:
        suite_instances(suite, data)
    except Exception as e:  # data folder absent here
        pytest.skip(f"data for {suite} not present: {e}")
    rc = main(["run", suite, "--instances", instance, "--methods", *methods, "--time-limit", "30", "--jobs", "2",
               "--out", str(tmp_path), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    rows = list(csv.DictReader(open(tmp_path / "runs.csv")))
    assert {r["method"] for r in rows} == set(methods)
    assert all(r["feasible"] == "true" and r["termination"] != "error" for r in rows), rows
    exact = [r for r in rows if r["kind"] == "exact"]
    if exact:
        assert all(r["termination"] == "optimal" for r in exact)
        assert all(float(r["gap"]) >= 0 for r in rows)
    if suite == "holocosm":
        assert all(0 <= float(r["fidelity.mean_nmae"]) for r in rows)
