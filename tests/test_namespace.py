"""One ``benchsel`` import namespace: short forms, subpackages, no import cycle at module level."""
from __future__ import annotations

import subprocess
import sys

import pytest

import benchsel

SUBPACKAGES = ("formulations", "solvers", "heuristics", "instances", "benchmarks")


def test_short_forms_are_the_subpackages_objects():
    from benchsel.formulations.kmedoids import KMedoids
    from benchsel.solvers.api import solve

    assert benchsel.solve is solve
    assert benchsel.KMedoids is KMedoids
    for name in benchsel.__all__:
        assert getattr(benchsel, name) is not None


def test_unknown_attribute_is_named():
    with pytest.raises(AttributeError, match="'benchsel' has no attribute 'nope'"):
        benchsel.nope


@pytest.mark.parametrize("sub", SUBPACKAGES)
def test_each_subpackage_imports_alone_in_a_fresh_interpreter(sub):
    # a module-level import cycle shows up as an ImportError when one subpackage is imported first
    code = (f"import importlib, pkgutil, benchsel.{sub} as p\n"
            "for m in pkgutil.iter_modules(p.__path__):\n"
            "    if m.name == '__main__': continue\n"
            "    importlib.import_module(p.__name__ + '.' + m.name)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_import_benchsel_is_light():
    code = ("import sys, benchsel; "
            "print(' '.join(m for m in ('pyomo', 'ortools', 'highspy', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == ""


def test_the_method_registry_does_not_import_scipy_stats():
    # the registry imports every built-in method's module on first use (any solve); scipy.stats (about a
    # second) is imported only where a rank is computed
    code = ("import sys; from benchsel.solvers.methods import list_methods; list_methods(); "
            "from benchsel.formulations.rankings import rankdata; assert 'scipy.stats' not in sys.modules; "
            "print(rankdata([3.0, 1.0, 2.0]).tolist(), 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[3.0, 1.0, 2.0] True"


def test_the_method_registry_does_not_import_pandas():
    # pandas (about 30 MB of resident memory) is imported where a positional formulation reads or returns a table
    code = ("import sys; from benchsel.solvers.methods import list_methods; list_methods(); "
            "from benchsel.formulations.repcore import roc_auc; print(roc_auc([0.1, 0.9, 0.4], [0, 1, 1])); "
            "assert 'pandas' not in sys.modules; "
            "from benchsel import PositionalRepresentation; import numpy as np; "
            "S = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [3.0, 1.0, 2.0]]); "
            "f = PositionalRepresentation.from_scores(S, g=2); "
            "t = f.count_table([0, 1]); print(type(t).__name__, t.shape, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["1.0", "DataFrame", "(3,", "3)", "True"]


def test_wheel_holds_only_the_benchsel_package(tmp_path):
    import shutil
    import zipfile
    from pathlib import Path

    root = Path(benchsel.__file__).resolve().parent
    src = tmp_path / "src"  # build from a copy: pip builds in-tree and would leave build/ in the checkout
    # .ci/typecheck/benchsel (a link to the root) is where pyproject's package search looks: kept as a link
    shutil.copytree(root, src, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "results", "build", "*.egg-info", "__pycache__",
                                                  ".hypothesis", ".mypy_cache", ".ruff_cache", "site"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(src)],
                   check=True, timeout=300, capture_output=True)
    (whl,) = tmp_path.glob("benchsel-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"benchsel", whl.name.split("-py")[0] + ".dist-info"}
    assert "benchsel/py.typed" in names
    assert {f"benchsel/{s}/__init__.py" for s in SUBPACKAGES} <= set(names)
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith("/__init__.py")}
    on_disk = {p.parent.relative_to(root).as_posix() for s in SUBPACKAGES for p in (root / s).rglob("__init__.py")}
    assert packages == {"benchsel"} | {f"benchsel/{d}" for d in on_disk}  # every sub-package, found not listed
    assert not any(n.startswith(("benchsel/tests/", "benchsel/docs/")) for n in names)


def test_import_cost_script_reports_every_stage_and_its_heavy_imports(capsys):
    import importlib.util

    from benchsel.benchmarks.studies import import_cost

    assert import_cost.main(["--repeats", "1"]) == 0
    lines = {ln[:44].strip(): ln[44:].split() for ln in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == set(import_cost.STAGES)
    for stage in ("import benchsel", "method registry loaded", "k-medoids solve (N = 300, k = 8, highs)"):
        peak, secs, *heavy = lines[stage]
        assert float(peak) > 0 and float(secs) >= 0 and heavy == ["-"], (stage, heavy)
    assert "pandas" in " ".join(lines["base + import pandas"][2:])
    if importlib.util.find_spec("sklearn") is not None:  # the kmedoids package's __init__ imports it
        assert "sklearn" in " ".join(lines["base + import kmedoids (the package)"][2:])
    with pytest.raises(SystemExit):
        import_cost.main(["--repeats", "0"])
