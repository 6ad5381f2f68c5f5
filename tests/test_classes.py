"""Classes stay whole: no module-level function takes ``self`` (a class split across files instead of into
objects with their own state), and no package's modules import each other in a circle."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("formulations", "solvers", "heuristics", "instances", "benchmarks")


def _modules() -> list[tuple[str, ast.Module]]:
    files = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))
    files += sorted(ROOT.glob("*.py"))
    return [(p.relative_to(ROOT).as_posix(), ast.parse(p.read_text(), str(p))) for p in files]


MODULES = _modules()


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run at import, through ``if`` / ``try`` / ``with`` blocks (not into functions or classes);
    ``if TYPE_CHECKING:`` blocks included: a circle of imports through type hints alone is still two modules
    that cannot be read, changed or tested apart."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _module_level(node.body) + _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _module_level(node.body) + _module_level(node.orelse) + _module_level(node.finalbody)
            for h in node.handlers:
                out += _module_level(h.body)
        elif isinstance(node, ast.With):
            out += _module_level(node.body)
    return out


def _takes_self(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    params = fn.args.posonlyargs + fn.args.args
    return bool(params) and params[0].arg == "self"


@pytest.mark.parametrize("rel,tree", MODULES, ids=[r for r, _ in MODULES])
def test_no_module_level_function_takes_self(rel, tree):
    bad = [n.name for n in _module_level(tree.body)
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _takes_self(n)]
    assert not bad, (f"{rel}: module-level functions taking self: {bad} (make them methods of an object with "
                     "its own state)")


def test_the_self_check_sees_a_function_taking_self():
    tree = ast.parse("if True:\n    def f(self, x):\n        return x\nclass A:\n    def g(self):\n        pass\n")
    found = [n.name for n in _module_level(tree.body) if isinstance(n, ast.FunctionDef) and _takes_self(n)]
    assert found == ["f"]


def _sibling_imports(rel: str, tree: ast.Module, siblings: set[str]) -> set[str]:
    """Modules of the same package (by file stem; the package's ``__init__`` left out) this module imports at
    module level (function-level imports left out)."""
    package = "benchsel." + ".".join(rel.split("/")[:-1])
    out: set[str] = set()
    for node in _module_level(tree.body):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and node.module and node.module.startswith(package + "."):
                base = node.module[len(package) + 1:]
            elif node.level == 0 and node.module == package:
                base = None
            else:
                continue
            if base is None:  # from . import a, b: the names may be sibling modules
                out |= {a.name for a in node.names if a.name in siblings}
            else:
                out.add(base.split(".")[0])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(package + "."):
                    out.add(a.name[len(package) + 1:].split(".")[0])
    return out & siblings


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _packages() -> dict[str, dict[str, ast.Module]]:
    by_dir: dict[str, dict[str, ast.Module]] = {}
    for rel, tree in MODULES:
        if "/" not in rel:
            continue
        folder, name = rel.rsplit("/", 1)
        if name != "__init__.py":
            by_dir.setdefault(folder, {})[name[:-3]] = tree
    return by_dir


PACKAGES = _packages()


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_no_import_circle_among_a_package_s_modules(folder):
    mods = PACKAGES[folder]
    graph = {name: _sibling_imports(f"{folder}/{name}.py", tree, set(mods)) - {name} for name, tree in mods.items()}
    assert not _cycles(graph), f"{folder}: modules importing each other in a circle: {_cycles(graph)}"


def test_the_circle_check_sees_a_circle():
    a = ast.parse("from . import b\n")
    b = ast.parse("from .c import x\n")
    c = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from benchsel.solvers.demo.a import z\n")
    d = ast.parse("from .a import w\n\ndef f():\n    from .e import v\n")
    e = ast.parse("from .d import u\n")
    trees = {"a": a, "b": b, "c": c, "d": d, "e": e}
    graph = {n: _sibling_imports(f"solvers/demo/{n}.py", t, set(trees)) for n, t in trees.items()}
    assert graph == {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"d"}}
    assert _cycles(graph) == [["a", "b", "c"]]
