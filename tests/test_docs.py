"""Every ```python block of the docs and the README runs as written (one namespace per page, in order)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path) -> list[str]:
    return FENCE.findall(path.read_text())


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns: dict = {"__name__": f"docs_{page.stem}"}
    for i, block in enumerate(python_blocks(page)):
        try:
            exec(compile(block, f"{page.relative_to(ROOT)}[block {i}]", "exec"), ns)
        except Exception as e:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"{page.relative_to(ROOT)}, python block {i} failed: {type(e).__name__}: {e}\n"
                                 f"{block}") from e


def test_every_docs_page_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    missing = sorted(p for p in pages if p not in nav)
    assert not missing, f"docs pages not in mkdocs.yml's nav: {missing}"


def test_no_user_page_points_to_the_internal_spec():
    for p in PAGES:
        assert "SPEC.md" not in p.read_text(), f"{p.relative_to(ROOT)} refers to SPEC.md, which users do not have"


