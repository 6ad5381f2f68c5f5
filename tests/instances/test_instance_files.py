"""Instance files (.npz round trip, OR-Library .txt, benchsel .mps) and solving an MPS export with HiGHS."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.data import needs_data

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.cli import main
from benchsel.formulations import formulation_classes
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.kmedoids import KMedoids
from benchsel.instances import files
from benchsel.instances.files import MpsInstance, fingerprint, load_instance, save_instance
from benchsel.instances.synthetic import make_kmedoids
from benchsel.solvers import solve
from benchsel.solvers.backends.mps import solve_mps


def _same(a, b):
    pa, pb = a.get_params(), b.get_params()
    assert type(a) is type(b) and pa.keys() == pb.keys()
    for k in pa:
        if isinstance(pa[k], np.ndarray):
            assert pa[k].dtype == pb[k].dtype and np.array_equal(pa[k], pb[k])
        else:
            assert pa[k] == pb[k]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 12), data=st.data())
def test_npz_round_trip_rebuilds_an_equal_instance(tmp_path_factory, n, data):
    seed = data.draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(1, n - 1))
    weighted = data.draw(st.booleans())
    cand = None
    if data.draw(st.booleans()):
        cand = np.sort(rng.choice(n, size=data.draw(st.integers(k, n)), replace=False))
    f = KMedoids(rng.uniform(0, 10, size=(n, n)), k, weights=rng.uniform(0.1, 2, n) if weighted else None,
                 candidates=cand)
    path = save_instance(f, tmp_path_factory.mktemp("inst") / "f")
    assert path.suffix == ".npz"
    g = load_instance(path)
    _same(f, g)
    assert fingerprint(f) == fingerprint(g)
    sel = f.random_selection(np.random.default_rng(0))
    assert f.evaluate(sel) == g.evaluate(sel)


def test_fingerprint_tells_instances_apart():
    a, b = make_kmedoids(20, 3, seed=0), make_kmedoids(20, 3, seed=1)
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a) == fingerprint(KMedoids(**a.get_params()))
    assert fingerprint(a) != fingerprint(KMedoids(a.D, 4))


def test_save_instance_bad_input(tmp_path):
    with pytest.raises(InvalidInputError, match="expected a benchsel Formulation"):
        save_instance(np.zeros((3, 3)), tmp_path / "x.npz")


def test_load_instance_bad_files(tmp_path):
    (tmp_path / "a.csv").write_text("1,2\n")
    with pytest.raises(InvalidInputError, match=r"\.npz, \.txt"):
        load_instance(tmp_path / "a.csv")
    np.savez(tmp_path / "fake.npz", __format__=np.array("benchsel-instance"), __version__=np.array(1),
             __class__=np.array("os:path"), __params__=np.array("{}"))
    with pytest.raises(InvalidInputError, match=r"cannot import formulation class|not a benchsel Formulation"):
        load_instance(tmp_path / "fake.npz")
    f = make_kmedoids(10, 2, seed=0)
    p = save_instance(f, tmp_path / "ok.npz")
    z = dict(np.load(p))
    z["__params__"] = np.array('{"D": {"kind": "array"}, "k": {"kind": "json", "value": 99}, '
                               '"weights": {"kind": "none"}, "candidates": {"kind": "none"}}')
    np.savez(tmp_path / "badk.npz", **z)
    with pytest.raises(InvalidInputError, match="holds an invalid KMedoids"):
        load_instance(tmp_path / "badk.npz")


def test_mps_export_solved_by_highs_reading_the_file(tmp_path):
    f = make_kmedoids(40, 4, weighted=True, seed=3)
    mps, _ = f.to_mps(tmp_path / "k.mps")
    save_instance(f, tmp_path / "k.npz")
    inst = load_instance(mps)
    assert isinstance(inst, MpsInstance) and inst.name == "k"
    _same(inst.formulation, f)
    row = solve_mps(mps, 30)
    ref = solve(f, "highs", time_limit=30)
    assert row["termination"] == "optimal" and ref.termination == "optimal"
    assert row["objective"] == pytest.approx(ref.objective, rel=1e-9)
    assert row["bound"] <= row["objective"] + 1e-6
    assert f.evaluate(row["selection"]) == pytest.approx(row["objective"], rel=1e-9)
    assert f.is_feasible(row["selection"])
    # without the instance beside it the MPS still loads (no re-check possible)
    (tmp_path / "k.npz").unlink()
    assert load_instance(mps).formulation is None


def test_mps_check_finds_sections_anywhere_streaming_the_file(tmp_path, monkeypatch):
    """A 2.7 MB export was refused ('no COLUMNS section in its first 65536 bytes'): its ROWS take megabytes."""
    f = make_kmedoids(12, 3, seed=0)
    mps, _ = f.to_mps(tmp_path / "k.mps")
    text = mps.read_text()
    monkeypatch.setattr(files, "_MPS_CHUNK", 7)  # headers split across chunks, COLUMNS many chunks in
    assert isinstance(load_instance(mps), MpsInstance)
    padded = tmp_path / "padded.mps"  # COLUMNS 200 kB in (comment lines), read in 7-byte chunks
    padded.write_text(text.replace("ROWS\n", "ROWS\n" + "* padding\n" * 20_000, 1))
    mps.with_name("k.mps.json").rename(tmp_path / "padded.mps.json")
    assert isinstance(load_instance(padded), MpsInstance)
    monkeypatch.undo()
    no_columns = tmp_path / "nocol.mps"
    no_columns.write_text(text.replace("COLUMNS\n", "", 1))
    with pytest.raises(InvalidInputError, match=rf"^path: .* is not an MPS file: no COLUMNS section in its "
                                                rf"{len(text) - len('COLUMNS') - 1} bytes"):
        load_instance(no_columns)
    binary = tmp_path / "bin.mps"
    binary.write_bytes(text.encode()[:100] + bytes([200, 201]) + text.encode()[100:])
    with pytest.raises(InvalidInputError, match=r"^path: .* is not an MPS file \(it is not plain text\)"):
        load_instance(binary)


@pytest.mark.slow
def test_readme_kmedoids_mps_example_reads_back_and_solves_to_the_same_optimum(tmp_path, monkeypatch, capsys):
    """The README's 'Solve a formulation, compare methods, export MPS' example, then load_instance and
    ``benchsel solve`` on its MPS (about 2.7 MB: refused before its COLUMNS section was looked for past 64 KiB)."""
    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).normal(size=(150, 5))
    f = KMedoids.from_features(X, k=6, metric="euclidean")
    exact = solve(f, "highs", time_limit=60)
    f.to_mps("kmedoids.mps")
    assert (tmp_path / "kmedoids.mps").stat().st_size > 1 << 20 and (tmp_path / "kmedoids.mps.json").is_file()
    inst = load_instance("kmedoids.mps")
    assert isinstance(inst, MpsInstance) and inst.formulation is None
    capsys.readouterr()
    assert main(["solve", "kmedoids.mps", "--method", "highs", "--time-limit", "600", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert exact.termination == "optimal" and row["termination"] == "optimal"
    assert row["objective"] == pytest.approx(exact.objective, rel=1e-9)
    sel = [int(i) for i in row["selection"].split()]
    assert f.is_feasible(sel) and f.evaluate(sel) == pytest.approx(exact.objective, rel=1e-9)


@needs_data("orlib", "pmed", "pmed1.txt")
def test_load_orlib_txt():
    f = load_instance(default_data_dir() / "orlib" / "pmed" / "pmed1.txt")
    assert isinstance(f, KMedoids) and f.n_items == 100 and f.k == 5


@pytest.mark.parametrize("cls", [c for c in formulation_classes() if c.__module__.startswith("benchsel.")],
                         ids=lambda c: c.__name__)  # instance files name only the package's own classes
def test_every_formulation_round_trips_through_an_instance_file(cls, tmp_path):
    for i, f in enumerate(cls.conformance_instances(seed=0)):
        g = load_instance(save_instance(f, tmp_path / f"{cls.__name__}-{i}.npz"))
        assert type(g) is cls and fingerprint(g) == fingerprint(f)
        for sel in [f.random_selection(np.random.default_rng(s)) for s in range(3)]:
            assert g.evaluate(sel) == f.evaluate(sel) and g.is_feasible(sel) == f.is_feasible(sel)


def test_instance_file_saved_before_the_namespace_still_loads(tmp_path):
    f = make_kmedoids(12, 3, seed=4)
    path = save_instance(f, tmp_path / "old")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    assert str(arrays["__class__"]) == "benchsel.formulations.kmedoids:KMedoids"
    arrays["__class__"] = np.array("formulations.kmedoids:KMedoids")  # the class path older releases wrote
    old = tmp_path / "older.npz"
    np.savez(old, **arrays)
    g = load_instance(old)
    _same(f, g)


@pytest.mark.parametrize("named", ["this:Zen", "os:system", "benchsel.solvers.api:solve",
                                   "benchsel.formulations.base:Check",
                                   "benchsel.formulations.kmedoids:KMedoids.evaluate"])
def test_an_instance_file_naming_a_foreign_class_is_refused_before_any_import(tmp_path, named):
    import subprocess
    import sys

    path = save_instance(make_kmedoids(12, 2, seed=0), tmp_path / "km.npz")
    z = dict(np.load(path))
    z["__class__"] = np.array(named)
    np.savez_compressed(path, **z)
    code = (
        "import sys\n"
        "from benchsel.instances.files import load_instance\n"
        "from benchsel.formulations.core.errors import InvalidInputError\n"
        "before = set(sys.modules)\n"
        f"try:\n    load_instance({str(path)!r})\nexcept InvalidInputError as e:\n    print('refused:', e)\n"
        "print('imported:', sorted(m for m in set(sys.modules) - before if m in ('this', 'os.system')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "refused: class:" in out.stdout
    assert "imported: []" in out.stdout and "Beautiful is better" not in out.stdout
