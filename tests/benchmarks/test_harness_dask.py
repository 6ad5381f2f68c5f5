"""The harness grid on a local Dask cluster (dask.distributed LocalCluster on this machine)."""
from __future__ import annotations

import csv
from functools import partial

import pytest

distributed = pytest.importorskip("distributed")

from benchsel.benchmarks import harness  # noqa: E402
from benchsel.benchmarks.cli import main  # noqa: E402
from benchsel.benchmarks.suites import InstanceSpec  # noqa: E402
from benchsel.instances.synthetic import make_kmedoids  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as c:
        yield c


def test_grid_on_local_dask_cluster_matches_local_pool(cluster, tmp_path):
    specs = [InstanceSpec("tiny", partial(make_kmedoids, 30, 3, seed=4), ("highs", "fasterpam"))]
    tasks, _ = harness.plan("t", specs, methods=["highs", "fasterpam:init=\"random\""], seeds=2, time_limit=10)
    dstore = harness.ResultStore(tmp_path / "dask")
    s = harness.execute(tasks, dstore, scheduler=cluster.scheduler_address, progress=False)
    assert (s.ran, s.errors, s.killed) == (4, 0, 0)
    drows = {harness.row_key(r): r for r in dstore.rows()}
    assert all(r["executor"].startswith("dask tcp://") for r in drows.values())
    lstore = harness.ResultStore(tmp_path / "local")
    harness.execute(tasks, lstore, jobs=2, progress=False)
    for r in lstore.rows():
        d = drows[harness.row_key(r)]
        assert (d["objective"], d["selection"], d["termination"]) == (r["objective"], r["selection"], r["termination"])
    # resumable on the cluster too
    s2 = harness.execute(tasks, dstore, scheduler=cluster.scheduler_address, progress=False)
    assert (s2.ran, s2.skipped) == (0, 4)


def test_cli_scheduler_option(cluster, tmp_path, capsys):
    rc = main(["run", "quick", "--instances", "kmedoids-blobs-60", "--methods", "highs", "random", "--scheduler",
               cluster.scheduler_address, "--out", str(tmp_path), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "Dask scheduler" in cap.err
    rows = list(csv.DictReader(open(tmp_path / "runs.csv")))
    assert len(rows) == 2 and all(r["executor"].startswith("dask") for r in rows)
    assert {r["feasible"] for r in rows} == {"true"}
