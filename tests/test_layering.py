"""The package's layering, held by tests: vocabulary (formulations/core) -> formulations -> heuristics / solvers ->
benchmarks, no cycle between folders, no function-level import of benchsel's own modules, size limits."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("formulations", "solvers", "heuristics", "instances", "benchmarks")
#: What each folder may import of benchsel (besides itself); formulations/core may import only itself.
ALLOWED = {
    "formulations": {"formulations"},
    "heuristics": {"formulations", "heuristics"},
    "instances": {"formulations", "instances"},
    "solvers": {"formulations", "heuristics", "solvers"},
    "benchmarks": {"formulations", "heuristics", "instances", "solvers", "benchmarks"},
}
#: Re-export modules kept at the old paths for one release (they may name other folders' modules).
SHIMS = {
    "solvers/errors.py", "solvers/validation.py", "solvers/options.py", "solvers/model.py", "solvers/result.py",
    "solvers/mps.py", "solvers/pipeline.py", "solvers/highs_backend.py", "solvers/scip_backend.py",
    "solvers/pyomo_backend.py", "solvers/cpsat_backend.py", "solvers/size_sweep.py", "solvers/branch_and_cut.py",
    "formulations/estimators.py", "formulations/irt.py", "heuristics/bayes_eval.py", "heuristics/bayes_multi.py",
}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for folder in FOLDERS:
        for p in sorted((ROOT / folder).rglob("*.py")):
            out.append((p.relative_to(ROOT).as_posix(), p))
    return out


def _module_name(rel: str) -> str:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["benchsel", *parts])


def _imports(rel: str, tree: ast.AST) -> list[tuple[str, list[str], bool]]:
    """``(module, names, inside a function)`` of every import of benchsel's own modules in a file."""
    pkg = _module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        pkg = pkg[:-1]
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = pkg[: len(pkg) - (child.level - 1)]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                if mod.startswith("benchsel"):
                    if mod == "benchsel":  # folders by name; the root's own names (e.g. __version__) import nothing
                        out.extend((f"{mod}.{a.name}", [], in_function) for a in child.names if a.name in FOLDERS)
                    elif child.module is None:  # from . import x: each name is a module
                        out.extend((f"{mod}.{a.name}", [], in_function) for a in child.names)
                    else:
                        out.append((mod, [a.name for a in child.names], in_function))
            elif isinstance(child, ast.Import):
                out.extend((a.name, [], in_function) for a in child.names if a.name.startswith("benchsel"))
            visit(child, inner)

    visit(tree, False)
    return out


PARSED = [(rel, ast.parse(p.read_text())) for rel, p in _modules()]


def _folder(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else None


@pytest.mark.parametrize("rel,tree", PARSED, ids=[r for r, _ in PARSED])
def test_imports_follow_the_layers(rel, tree):
    own = rel.split("/")[0]
    core = rel.startswith("formulations/core/")
    for mod, names, in_function in _imports(rel, tree):
        target = _folder(mod)
        assert not in_function, f"{rel}: function-level import of benchsel's {mod} (import it at module level)"
        if core:
            assert mod.startswith("benchsel.formulations.core"), f"{rel}: the vocabulary imports {mod}"
        if rel in SHIMS:
            continue
        assert target in ALLOWED[own], f"{rel} ({own}) imports {mod} ({target}): against the layering"
        if target != own:
            private = [n for n in names if n.startswith("_")] + [p for p in mod.split(".") if p.startswith("_")]
            assert not private, f"{rel} imports private names of another folder: {mod} {private}"


@pytest.mark.parametrize("rel,tree", PARSED, ids=[r for r, _ in PARSED])
def test_modules_and_functions_stay_small(rel, tree):
    lines = (ROOT / rel).read_text().count("\n")
    assert lines <= 800, f"{rel} has {lines} lines (split it along its concerns)"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            assert n <= 120, f"{rel}: {node.name} has {n} lines"


def test_formulations_import_nothing_above_them():
    """In a fresh interpreter, importing any formulations module loads no solvers, heuristics, instances or
    benchmarks module (one subprocess per module: each starts from an empty sys.modules)."""
    mods = [_module_name(rel) for rel, _ in PARSED if rel.startswith("formulations/") and rel not in SHIMS]
    code = (
        "import importlib, json, subprocess, sys\n"
        "bad = {}\n"
        "for m in json.loads(sys.argv[1]):\n"
        "    c = ('import importlib, sys; importlib.import_module(%r); '\n"
        "         'print(sorted(k for k in sys.modules if k.split(\".\")[:2] in '\n"
        "         '[[\"benchsel\", f] for f in (\"solvers\", \"heuristics\", \"instances\", \"benchmarks\")]))' % m)\n"
        "    out = subprocess.run([sys.executable, '-c', c], capture_output=True, text=True)\n"
        "    if out.returncode or out.stdout.strip() != '[]':\n"
        "        bad[m] = (out.stdout + out.stderr).strip()[-300:]\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(mods)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {}


def test_every_package_folder_is_in_the_wheel():
    """pyproject lists the packages by hand: a sub-package left out would be missing from the installed wheel."""
    text = (ROOT / "pyproject.toml").read_text()
    listed = set(text.split("packages = [", 1)[1].split("]", 1)[0].replace('"', "").replace(",", " ").split())
    found = {_module_name(rel) for rel, _ in PARSED if rel.endswith("__init__.py")} | {"benchsel"}
    assert found == listed, f"missing: {sorted(found - listed)}, stale: {sorted(listed - found)}"
