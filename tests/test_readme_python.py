"""The Python examples of README and the documentation site run as written: the public Python API they document
survives any change of layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def python_blocks() -> list[str]:
    return [
        block
        for page in PAGES
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    ]


@pytest.mark.django_db
def test_rendering_from_python_runs_as_the_docs_show():
    from errcatalog.catalog.defaults import catalog_load_defaults

    catalog_load_defaults(reset=False)
    block = next(block for block in python_blocks() if "catalog_snapshot()" in block)
    namespace: dict = {}
    exec(compile(block, "docs/guides/rendering-from-python.md", "exec"), namespace)  # noqa: S102 (our own docs)
    assert namespace["rendered"].code == "MISSING_PARAMETER"


def test_every_module_the_readme_imports_from_exists():
    import importlib

    imports = {
        (module, name.strip())
        for block in python_blocks()
        for module, names in re.findall(r"^from ((?:errcatalog|mcpserver)[\w.]*) import (.+)$", block, re.MULTILINE)
        for name in names.split(",")
    }
    assert imports, "README and docs/ show no import of errcatalog or mcpserver"

    missing = [f"{module}.{name}" for module, name in imports if not hasattr(importlib.import_module(module), name)]
    assert missing == []
