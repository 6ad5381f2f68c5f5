"""The package's layering, held by tests: vocabulary (formulations/core) -> formulations -> heuristics / solvers ->
benchmarks, no cycle between folders nor between the sub-packages of one folder, no function-level import of
benchsel's own modules, size limits."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
        assert target in ALLOWED[own], f"{rel} ({own}) imports {mod} ({target}): against the layering"
        if target != own:
            private = [n for n in names if n.startswith("_")] + [p for p in mod.split(".") if p.startswith("_")]
            assert not private, f"{rel} imports private names of another folder: {mod} {private}"


def _defines_something(tree: ast.AST) -> bool:
    """Does a module hold code of its own (a function, a class, a statement) beyond imports, ``__all__`` and its
    docstring?"""
    for node in tree.body:  # type: ignore[attr-defined]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # the docstring
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            continue
        return True
    return False


@pytest.mark.parametrize("rel,tree", PARSED, ids=[r for r, _ in PARSED])
def test_no_module_only_re_exports(rel, tree):
    """Every module other than a package's ``__init__`` is the home of what it holds: no module that only imports
    names from elsewhere and hands them on."""
    if rel.endswith("__init__.py"):
        return
    assert _defines_something(tree), f"{rel} only re-exports names defined elsewhere (import them from their home)"


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
    mods = [_module_name(rel) for rel, _ in PARSED if rel.startswith("formulations/")]
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
    """pyproject finds the packages (none is listed): the search it configures finds every package folder."""
    from setuptools import find_packages

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    (where,) = find["where"]
    listed = set(find_packages(where=str(ROOT / where), include=find["include"], exclude=find["exclude"]))
    found = {_module_name(rel) for rel, _ in PARSED if rel.endswith("__init__.py")} | {"benchsel"}
    assert found == listed, f"missing: {sorted(found - listed)}, stale: {sorted(listed - found)}"


# ------------------------------------------------------------------ sub-packages
def _runtime_tree(tree: ast.AST) -> ast.AST:
    """``tree`` without its ``if TYPE_CHECKING:`` blocks (a package's typing mirror of its lazy names)."""

    class Drop(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> Any:
            t = node.test
            if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
                    (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"):
                return None
            return self.generic_visit(node)

    return Drop().visit(ast.parse(ast.unparse(tree)))


def _exported() -> dict[str, dict[str, str]]:
    """Per package, the module each name of its ``__init__`` comes from: its lazy map (``_LAZY``, a module
    path or a module of the package) and its own ``from ... import`` statements."""
    out: dict[str, dict[str, str]] = {}
    for rel, tree in PARSED:
        if not rel.endswith("__init__.py"):
            continue
        pkg = _module_name(rel)
        names: dict[str, str] = {}
        for node in tree.body:  # type: ignore[attr-defined]
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
                node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and target.id in ("_LAZY", "EXPORTS") and isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                        names[k.value] = v.value if v.value.startswith("benchsel.") else f"{pkg}.{v.value}"
        for mod, imported, _ in _imports(rel, tree):
            names.update((n, mod) for n in imported)
        out[pkg] = names
    return out


def _package_graphs() -> dict[str, tuple[set[str], dict[str, dict[str, str]]]]:
    """For every package folder with sub-packages: (its sub-packages, the import graph of its children).

    The children of a package are its modules and sub-packages (``__init__`` is one node); an edge
    ``a -> b`` means a file in ``a`` imports ``b`` (or a name the package's ``__init__`` takes from ``b``),
    labelled with the first such file.
    """
    exported = _exported()
    graphs = {}
    for init in [ROOT / "__init__.py"] + [p for f in FOLDERS for p in sorted((ROOT / f).rglob("__init__.py"))]:
        d = init.parent
        rel_dir = d.relative_to(ROOT)
        subs = set(FOLDERS) if d == ROOT else {p.name for p in d.iterdir() if (p / "__init__.py").is_file()}
        if not subs:
            continue
        dotted = ".".join(["benchsel", *rel_dir.parts])
        kids = subs | ({p.stem for p in d.glob("*.py")} - {"__init__"} if d != ROOT else set())
        edges: dict[str, dict[str, str]] = {}
        for rel, tree in PARSED + ([("__init__.py", ast.parse(init.read_text()))] if d == ROOT else []):
            inside = Path(rel).relative_to(rel_dir) if Path(rel).is_relative_to(rel_dir) else None
            if inside is None:
                continue
            src = "__init__" if inside.parts == ("__init__.py",) else inside.parts[0].removesuffix(".py")
            for mod, names, _ in _imports(rel, _runtime_tree(tree) if src == "__init__" else tree):
                targets = [exported.get(mod, {}).get(n, mod) for n in names] or [mod]
                for t in targets:
                    if t == dotted:
                        dst = "__init__"
                    elif t.startswith(dotted + ".") and t[len(dotted) + 1:].split(".")[0] in kids:
                        dst = t[len(dotted) + 1:].split(".")[0]
                    else:
                        continue
                    if dst != src:
                        edges.setdefault(src, {}).setdefault(dst, rel)
        graphs[dotted] = (subs, edges)
    return graphs


GRAPHS = _package_graphs()


def _path(edges: dict[str, dict[str, str]], a: str, b: str) -> list[tuple[str, str, str]] | None:
    """A shortest chain of imports from child ``a`` to child ``b``: ``(from, to, file)`` per step."""
    parent: dict[str, tuple[str, str]] = {a: ("", "")}
    todo = [a]
    while todo:
        x = todo.pop(0)
        for y, rel in sorted(edges.get(x, {}).items()):
            if y not in parent:
                parent[y] = (x, rel)
                todo.append(y)
    if b not in parent:
        return None
    steps = []
    while b != a:
        x, rel = parent[b]
        steps.append((x, b, rel))
        b = x
    return steps[::-1]


@pytest.mark.parametrize("package", sorted(GRAPHS))
def test_no_cycle_between_sub_packages(package):
    """No two sub-packages of one folder import each other, directly or through other modules of the
    folder: the sub-packages of a folder are layered too (e.g. ``formulations/bayes`` below
    ``formulations/estimation``)."""
    subs, edges = GRAPHS[package]
    for a in sorted(subs):
        for b in sorted(subs):
            there, back = (_path(edges, a, b), _path(edges, b, a)) if a < b else (None, None)
            if there and back:
                chain = "; ".join(f"{x} -> {y} ({rel})" for x, y, rel in there + back)
                pytest.fail(f"{package}: sub-packages {a} and {b} import each other: {chain}")


def test_sub_package_graph_sees_lazy_names():
    """The check above follows names a package exports lazily to the module that defines them."""
    subs, edges = GRAPHS["benchsel.formulations"]
    assert {"bayes", "estimation", "core"} <= subs
    assert "bayes" in edges["estimation"] and "estimation" not in edges.get("bayes", {})
