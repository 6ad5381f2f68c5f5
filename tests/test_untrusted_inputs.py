"""Files from outside are untrusted: bounded memory, every field checked, one bad line never stops a run.

Each case asserts the named error (the file, the field or option, what was expected, what was found); the
over-large inputs are sparse files or zip members whose declared size is refused before anything is read.
"""
from __future__ import annotations

import json
import math
import os
import tracemalloc
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.evallog_formats import model_scores, write_helm_run, write_lm_eval_run

import benchsel
from benchsel.benchmarks.cli import main
from benchsel.benchmarks.store import ResultStore
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.untrusted import (
    MB,
    LimitError,
    Limits,
    iter_lines,
    read_json,
    read_npz_members,
    use_limits,
)
from benchsel.formulations.kmedoids import KMedoids
from benchsel.instances.evallogs import read_lm_eval_samples
from benchsel.instances.files import load_instance, save_instance
from benchsel.instances.helm import read_helm_runs
from benchsel.instances.scorefiles import load_scores, read_score_table
from benchsel.solvers.compression import load_compressed

GB = 1 << 30


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    """A file of ``size`` bytes holding ``head`` then zeros, without using the disk (a hole)."""
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def _bomb(zpath: Path, name: str, nbytes: int) -> None:
    """Add an ``.npy`` member of ``nbytes`` zeros (a few kB compressed) to the zip file ``zpath``."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, dtype=np.uint8))
    header["shape"] = (nbytes,)
    with zipfile.ZipFile(zpath, "a", compression=zipfile.ZIP_DEFLATED) as z, z.open(f"{name}.npy", "w",
                                                                                      force_zip64=True) as fh:
        np.lib.format.write_array_header_1_0(fh, header)
        block = bytes(1 << 20)
        for _ in range(nbytes >> 20):
            fh.write(block)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    Y = pd.DataFrame((rng.random((24, 40)) < 0.5).astype(float), index=[f"m{i}" for i in range(24)],
                     columns=[f"t/{j}" for j in range(40)])
    c = benchsel.compress(Y, k=5, estimator="ridge", seed=1)
    return c.save(tmp_path_factory.mktemp("saved") / "c")


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


# ------------------------------------------------------------------ caps
def test_limits_are_checked_and_named():
    with pytest.raises(InvalidInputError, match="--max-line-mb: expected a finite number of megabytes > 0, got nan"):
        Limits.from_mb(line_mb=math.nan)
    with pytest.raises(InvalidInputError, match="max_json_bytes: expected a whole number of bytes >= 1, got 0"):
        Limits(max_json_bytes=0)
    assert Limits.from_mb(array_mb=2).max_array_bytes == 2 * MB


def test_a_zip_bomb_in_an_unused_member_is_never_read(saved, tmp_path):
    c = _copy(saved, tmp_path / "c")
    _bomb(c / "arrays.npz", "junk", 256 * MB)
    tracemalloc.start()
    try:
        back = load_compressed(c)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert back.k == 5 and peak < 64 * MB


def test_a_zip_bomb_in_a_used_member_is_refused_from_its_declared_size(tmp_path):
    np.savez_compressed(tmp_path / "r.npz", models=np.array(["a", "b"]))
    _bomb(tmp_path / "r.npz", "Y", 64 * MB)
    with use_limits(Limits(max_array_bytes=16 * MB)), pytest.raises(
            LimitError, match=r"array 'Y' of a response file .* 64\.0 MB is more than the cap of 16\.0 MB; raise it "
                              r"with --max-array-mb"):
        load_scores(tmp_path / "r.npz")
    with pytest.raises(LimitError, match="--max-array-mb"):
        read_npz_members(tmp_path / "r.npz", ["Y"], limits=Limits(max_array_bytes=MB))


def test_an_npy_header_larger_than_its_member_is_refused(tmp_path):
    import io

    buf = io.BytesIO()
    np.save(buf, np.zeros(4))
    member = buf.getvalue().replace(b"(4,)", b"(99,)")
    with zipfile.ZipFile(tmp_path / "a.npz", "w") as z:
        z.writestr("Y.npy", member)
    with pytest.raises(InvalidInputError, match=r"array 'Y' .*declares 792 bytes of data but the member holds 16[01]"):
        read_npz_members(tmp_path / "a.npz")
    with zipfile.ZipFile(tmp_path / "a.npz", "w") as z:
        z.writestr("Y.npy", buf.getvalue().replace(b"(4,)", b"(9,)"))
    with pytest.raises(InvalidInputError, match=r"array 'Y' .* is truncated \(32 of 72 bytes\)"):
        read_npz_members(tmp_path / "a.npz")


@pytest.mark.parametrize("name", ["scores.csv", "samples_t_2024-06-01T12-30-56.jsonl"])
def test_a_2gb_file_without_newline_is_refused_by_its_cap(tmp_path, name):
    p = _sparse(tmp_path / name, 2 * GB, b"model,")
    with pytest.raises(LimitError, match=r"(more than the cap of 1024 MB|longer than the cap of 64\.0 MB).*"
                                         r"--max-(array|line)-mb"):
        load_scores(p)


@pytest.mark.parametrize("name", ["compression.json", "per_instance_stats.json"])
def test_a_2gb_json_document_is_refused_before_it_is_read(tmp_path, name):
    if name == "compression.json":
        folder = tmp_path / "c"
        folder.mkdir()
        _sparse(folder / name, 2 * GB, b"{")
        with pytest.raises(LimitError, match=r"2048\.0 MB is more than the cap of 128\.0 MB; raise it with "
                                             r"--max-json-mb"):
            load_compressed(folder)
    else:
        run = write_helm_run(tmp_path / "runs", "gsm", "a/b", {"id0": {"exact_match": 1.0}})
        _sparse(run / name, 2 * GB, b"[")
        with pytest.raises(LimitError, match="--max-json-mb"):
            read_helm_runs(tmp_path / "runs", "exact_match")


def test_line_cap_streams_and_names_the_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b"a\n" + b"b" * 300 + b"\nc")
    lim = Limits(max_line_bytes=100)
    assert list(iter_lines(p, limits=lim, skip_long=True)) == [(1, b"a"), (2, None), (3, b"c")]
    with pytest.raises(LimitError, match=r"line 2 of the file .* longer than the cap of 100 bytes"):
        list(iter_lines(p, limits=lim))


# ------------------------------------------------------------------ runs.jsonl
def _row(**kw):
    base = {"suite": "s", "instance": "i", "formulation": "KMedoids", "method": "fasterpam", "fingerprint": "abc",
            "seed": 0, "time_limit": 10.0, "objective": 1.5, "feasible": True, "termination": "converged",
            "retry": False, "error": "", "selection": "1 2"}
    return {**base, **kw}


def test_bad_rows_are_skipped_counted_and_never_results(tmp_path):
    store = ResultStore(tmp_path)
    good = [json.dumps(_row(seed=s)).encode() for s in range(3)]
    bad = [
        b"\xff\xfe" + good[0][2:],                                       # not UTF-8
        json.dumps(_row(seed=7)).replace('"seed": 7', '"seed": 1e999').encode(),  # out of range
        b"[" * 5000 + b"]" * 5000,                                       # deep nesting
        b"[1, 2]",                                                       # a list
        json.dumps(_row(seed=8, objective="abc")).encode(),              # a feasible run without a number
        json.dumps(_row(seed=9, objective=None)).encode(),
        json.dumps(_row(seed=10, **{"extra.x": [1, 2]})).encode(),       # not a scalar
        b'{"instance": "i", "method": "m"',                              # cut short
        b"x" * 5000,                                                     # longer than the cap below
    ]
    store.jsonl.write_bytes(b"\n".join(good[:1] + bad + good[1:]) + b"\n")
    with use_limits(Limits(max_line_bytes=4000)):
        rows = store.rows()
        seen = store._refresh_seen(reset=True)
    assert sorted(r["seed"] for r in rows) == [0, 1, 2] and len(seen) == 3
    assert store.bad_lines.count == len(bad)
    text = store.bad_lines.describe(store.jsonl)
    assert f"{len(bad)} unreadable or invalid rows" in text and "line 2: row: not UTF-8 text" in text
    assert "line 3: row: field $.seed number out of range" in text and len(text) < 1500
    assert "field $.objective expected `float | null`, got `str`" in store.bad_lines.first[4][1]


def test_report_says_how_many_rows_it_skipped_and_never_prints_them(tmp_path, capsys):
    store = ResultStore(tmp_path)
    huge = json.dumps(_row(seed=5, error="z" * 3000)).encode()
    store.jsonl.write_bytes(json.dumps(_row()).encode() + b"\n" + huge + b"\n" + b"{oops\n")
    assert main(["report", str(tmp_path), "--no-plots", "--max-line-mb", "0.001"]) == 0
    err = capsys.readouterr().err
    assert "2 unreadable or invalid rows" in err and "line 2: longer than the cap" in err and "zzzz" not in err


# ------------------------------------------------------------------ saved compressions
@pytest.mark.parametrize("edit, match", [
    (lambda m: m.update(selection={**m["selection"], "result": {**m["selection"]["result"], "termination": []}}),
     r"field \$\.selection\.result\.termination expected `str`, got `array`"),
    (lambda m: m.update(seed="1"), r"field \$\.seed expected `int`, got `str`"),
    (lambda m: m.update(seed=-1), r"field \$\.seed expected `int` >= 0"),
    (lambda m: m.update(selection={**m["selection"], "seconds": "1"}),
     r"field \$\.selection\.seconds expected `float`, got `str`"),
    (lambda m: m.update(source=[1]), r"field \$\.source expected `object`, got `array`"),
    (lambda m: m["selection"].pop("name"), r"field \$\.selection object missing required field `name`"),
    (lambda m: m.update(items=m["items"][:-1]), r"field \$\.items: expected 5 distinct item indices"),
    (lambda m: m.update(item_labels=m["item_labels"][::-1]), r"field \$\.digest: .*does not match its digest"),
    (lambda m: m.update(check={"atol": 1.0}), r"field \$\.digest"),
    (lambda m: m["estimator"]["params"].update(alpha=5.0), r"field \$\.digest"),
    (lambda m: m.pop("digest"), r"field \$\.digest is missing .*check=False"),
])
def test_every_field_of_a_saved_compression_is_checked(saved, tmp_path, edit, match):
    c = _copy(saved, tmp_path / "c")
    meta = json.loads((c / "compression.json").read_text())
    edit(meta)
    (c / "compression.json").write_text(json.dumps(meta))
    with pytest.raises(InvalidInputError, match=match):
        load_compressed(c)


def test_deep_nesting_and_1e999_in_a_saved_compression(saved, tmp_path):
    c = _copy(saved, tmp_path / "c")
    text = (c / "compression.json").read_text()
    (c / "compression.json").write_text(text.replace('"seed": 1', '"seed": 1e999', 1))
    with pytest.raises(InvalidInputError, match=r"compression.json': field \$\.seed number out of range"):
        load_compressed(c)
    (c / "compression.json").write_text('{"format": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(InvalidInputError, match="nested too deeply"):
        load_compressed(c)


def test_out_is_checked_before_anything_is_read(tmp_path, capsys):
    missing = str(tmp_path / "no-such-scores")
    (tmp_path / "file").write_text("")
    (tmp_path / "clash" / "arrays.npz").mkdir(parents=True)
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    for out, msg in [(tmp_path / "file", "is a file"), (tmp_path / "clash", "arrays.npz' is a folder"),
                     (tmp_path / "loop", "looping symbolic link")]:
        assert main(["compress", missing, "--k", "3", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"out: {str(out)!r}"[:40] in err and msg in err and "reading" not in err, err
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert main(["compress", missing, "--k", "3", "--out", str(ro / "c")]) == 2
        assert "permission denied" in capsys.readouterr().err


@pytest.mark.parametrize("argv, msg", [
    (["--seed", "-1"], "seed: expected a whole number with 0 <= seed < 2**63, got -1"),
    (["--time-limit", "nan"], "time-limit: expected a finite number, got nan"),
    (["--time-limit", "inf"], "time-limit: expected a finite number, got inf"),
    (["--time-limit", "0"], "time-limit: expected 0.0 < time-limit, got 0"),
    (["--time-limit", "-1"], "time-limit: expected 0.0 < time-limit, got -1"),
    (["--k", "0"], "k: expected an integer >= 1, got 0"),
    (["--jobs", "0"], "jobs: expected an integer >= 1, got 0"),
    (["--selection", "nope"], "nope"),
])
def test_compress_options_are_checked_before_reading(tmp_path, capsys, argv, msg):
    args = ["compress", str(tmp_path / "no-such-scores"), "--k", "3", "--out", str(tmp_path / "c")]
    args[args.index("--k") + 1:args.index("--k") + 2] = [argv[1]] if argv[0] == "--k" else ["3"]
    assert main(args + ([] if argv[0] == "--k" else argv)) == 2
    err = capsys.readouterr().err
    assert msg in err and "reading" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("seed, msg", [(-1, "got -1"), (1.5, "got float 1.5"), ("a", "got str 'a'"),
                                       (True, "got bool True")])
def test_compress_refuses_a_bad_seed_by_name(seed, msg):
    Y = (np.random.default_rng(0).random((10, 20)) < 0.5).astype(float)
    with pytest.raises(InvalidInputError, match=rf"seed: expected a whole number .*{msg}"):
        benchsel.compress(Y, k=3, seed=seed)


@pytest.mark.parametrize("t", [math.nan, math.inf, 0, -1])
def test_compress_refuses_a_bad_time_limit_by_name(t):
    Y = (np.random.default_rng(0).random((10, 20)) < 0.5).astype(float)
    with pytest.raises(InvalidInputError, match="time_limit: expected"):
        benchsel.compress(Y, k=3, time_limit=t)


def test_a_dataframe_of_strings_is_refused():
    Y = pd.DataFrame((np.random.default_rng(0).random((10, 20)) < 0.5).astype(float)).astype(str)
    with pytest.raises(InvalidInputError, match=r"Y: expected real numbers, got str '(0|1)\.0' at flat index 0"):
        benchsel.compress(Y, k=3)


def test_run_refuses_grace_nan_before_any_run(tmp_path, capsys):
    assert main(["run", "quick", "--grace", "nan", "--out", str(tmp_path / "r")]) == 2
    assert "grace: expected a finite number, got nan" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("path", [5, None, b"x"])
def test_load_scores_of_a_non_path(path):
    with pytest.raises(InvalidInputError, match=r"path: expected a file or folder path .*got (int|NoneType|bytes)"):
        load_scores(path)


# ------------------------------------------------------------------ readers
def _logs(tmp_path: Path, n_models: int = 4) -> Path:
    scores = model_scores(n_models, {"arc": 12, "boolq": 9}, seed=0)
    for m, tasks in scores.items():
        write_lm_eval_run(tmp_path / "out", m, tasks)
    return tmp_path / "out"


def test_a_log_line_that_is_not_utf8_or_too_large_a_number(tmp_path):
    out = _logs(tmp_path, 2)
    log = sorted(out.rglob("samples_arc_*.jsonl"))[0]
    lines = log.read_bytes().splitlines()
    # (a field the reader does not use is skipped, not decoded as text: the bad byte goes into one it uses)
    log.write_bytes(b"\n".join([lines[0], lines[1].replace(b'"filter": "none"', b'"filter": "n\xffne"', 1),
                                 *lines[2:]]) + b"\n")
    with pytest.raises(InvalidInputError, match=rf"{log.name}:2: not UTF-8 text"):
        read_lm_eval_samples(out, "acc")
    big = json.loads(lines[1])
    big["acc"] = 10 ** 400
    log.write_bytes(b"\n".join([lines[0], json.dumps(big).encode(), *lines[2:]]) + b"\n")
    with pytest.raises(InvalidInputError, match=rf"metric: 'acc' at .*{log.name}:2 is a number too large .*401-digit"):
        read_lm_eval_samples(out, "acc")


def test_parallel_reading_gives_the_same_table(tmp_path):
    out = _logs(tmp_path, 5)
    one = read_lm_eval_samples(out, "acc")
    two = read_lm_eval_samples(out, "acc", jobs=2)
    pd.testing.assert_frame_equal(one, two)


def test_reading_on_a_dask_cluster_gives_the_same_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    out = _logs(tmp_path, 3)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        on_dask = read_lm_eval_samples(out, "acc", scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(read_lm_eval_samples(out, "acc"), on_dask)


def test_k_is_refused_after_the_first_model(tmp_path):
    out = _logs(tmp_path, 4)
    with pytest.raises(InvalidInputError, match=r"k: expected 1 <= k < 21, the number of items, got k = 50 .*"
                                                r"before the rest of the 4 models"):
        read_lm_eval_samples(out, "acc", min_items=51)


def test_helm_stats_of_the_wrong_type(tmp_path):
    run = write_helm_run(tmp_path, "gsm", "a/b", {"id0": {"exact_match": 1.0}})
    p = run / "per_instance_stats.json"
    data = json.loads(p.read_text())
    data[0]["stats"][0].update(mean=None, sum="1", count="1")
    p.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"per_instance_stats.json': field \$\[0\]\.stats\[0\]\.count "
                                                r"expected `int \| null`, got `str`"):
        read_helm_runs(tmp_path, "exact_match")
    spec = json.loads((run / "run_spec.json").read_text())
    (run / "run_spec.json").write_text(json.dumps({**spec, "name": 5}))
    with pytest.raises(InvalidInputError, match=r"run_spec.json': field \$\.name expected `str \| null`, got `int`"):
        read_helm_runs(tmp_path, "exact_match")


def test_a_csv_that_is_not_a_table(tmp_path):
    p = tmp_path / "s.csv"
    p.write_bytes(b'model,q1\nm1,"unterminated\n' + b"x" * 200)
    with pytest.raises(InvalidInputError, match=r"path: cannot read .*s.csv' as a table"):
        read_score_table(p)


def test_instance_file_fraction_with_zero_denominator(tmp_path):
    D = np.random.default_rng(0).random((6, 6))
    p = save_instance(KMedoids(D + D.T, k=2), tmp_path / "i.npz")
    z = dict(np.load(p, allow_pickle=False))
    spec = json.loads(str(z["__params__"]))
    spec["k"] = {"kind": "fraction", "value": [1, 0]}
    z["__params__"] = np.array(json.dumps(spec))
    np.savez(p, **z)
    with pytest.raises(InvalidInputError, match=r"parameter 'k': expected a fraction .*non-zero denominator, got "
                                                r"\[1, 0\]"):
        load_instance(p)
    spec["k"] = {"kind": "sideways"}
    z["__params__"] = np.array(json.dumps(spec))
    np.savez(p, **z)
    with pytest.raises(InvalidInputError, match=r"__params__: field \$\[\.\.\.\]\.kind invalid enum value 'sideways'"):
        load_instance(p)
    assert Fraction(1, 2) == Fraction(1, 2)  # (the fraction kind itself round-trips in test_instance_files)


def test_an_mps_name_map_that_is_a_list(tmp_path):
    D = np.random.default_rng(0).random((6, 6))
    f = KMedoids(D + D.T, k=2)
    mps, jpath = f.to_mps(tmp_path / "k.mps")
    jpath.write_text("[1, 2]")
    with pytest.raises(InvalidInputError, match=r"k.mps.json' is not a benchsel MPS name map \(format 'a JSON list'"):
        load_instance(mps)
    info = {"format": "benchsel-mps-map", "selection": {"block": "x", "first_column": "0", "items": []}}
    jpath.write_text(json.dumps(info))
    with pytest.raises(InvalidInputError, match=r"field \$\.selection\.first_column expected `int`, got `str`"):
        load_instance(mps)


def test_read_json_of_a_folder_or_a_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="is not a regular file"):
        read_json(tmp_path)
    with pytest.raises(InvalidInputError, match="cannot read the JSON file"):
        read_json(tmp_path / "none.json")


def test_compress_reads_with_jobs_and_saves_the_same_compression(tmp_path, capsys):
    out = _logs(tmp_path, 6)
    for jobs in ("1", "2"):
        assert main(["compress", str(out), "--k", "4", "--metric", "acc", "--out", str(tmp_path / f"c{jobs}"),
                     "--jobs", jobs, "--no-progress"]) == 0
    a, b = (json.loads((tmp_path / f"c{j}" / "compression.json").read_text()) for j in ("1", "2"))
    assert a["items"] == b["items"] and a["source"]["fingerprint"] == b["source"]["fingerprint"]
