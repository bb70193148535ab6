"""No module outside ``mcpserver.sdk_internals`` touches the MCP SDK's private attributes.

The import contract "sdk-internals" (``pyproject.toml``) keeps the SDK's private modules out; import-linter cannot
see an attribute, so this reads the source. A private name of the SDK is one its source defines with a leading
underscore (a method, a class attribute, an instance attribute set on ``self``, a slot); an access of one on
anything but ``self`` or ``cls`` (``x._name``, or ``getattr(x, "_name")``) in ``config``, ``errcatalog``,
``mcpserver`` or ``tests`` outside the package and its contract tests fails here, unless ``NOT_THE_SDKS`` names it:
another library's documented name that the SDK happens to use too, or ``OURS`` names the access: our own private
helper on our own object. In ``tests``, which the import contract does not read, an import of a private module of
the SDK fails here too.
"""

from __future__ import annotations

import ast
import functools
import pathlib

import mcp
import mcp_types

from tests.docs.reference_pages import REPO_ROOT

SCANNED = ("config", "errcatalog", "mcpserver", "tests")
PACKAGE = REPO_ROOT / "mcpserver" / "sdk_internals"
CONTRACT_TESTS = REPO_ROOT / "tests" / "mcpserver" / "sdk_internals"
SDK_PACKAGES = ("mcp", "mcp_types")
# Names the SDK defines privately that mean something else on the objects we touch, with the reason.
NOT_THE_SDKS: dict[str, str] = {
    "_meta": "Django's model options (Model._meta), a documented API; the SDK's models name theirs meta",
}
# (file, name): why the access is to our own object. Each entry must still match one, so that the list cannot rot.
OURS: dict[tuple[str, str], str] = {
    ("tests/errcatalog/catalog/test_services.py", "_delete"): "errcatalog.catalog.services' own helper, spied on",
    ("tests/errcatalog/test_background.py", "_lock"): "errcatalog.background.OnDemandThread's own lock, held at a fork",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


@functools.cache
def sdk_private_names() -> frozenset[str]:
    names: set[str] = set()
    for root in (pathlib.Path(mcp.__file__).parent, pathlib.Path(mcp_types.__file__).parent):
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name):
                            names.add(item.name)
                        targets = item.targets if isinstance(item, ast.Assign) else []
                        if isinstance(item, ast.AnnAssign):
                            targets = [item.target]
                        for target in targets:
                            if isinstance(target, ast.Name) and _private(target.id):
                                names.add(target.id)
                            if isinstance(target, ast.Name) and target.id == "__slots__":
                                names.update(
                                    c.value
                                    for c in ast.walk(item)
                                    if isinstance(c, ast.Constant) and _private(str(c.value))
                                )
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                    and _private(node.attr)
                ):
                    names.add(node.attr)
    return frozenset(names - NOT_THE_SDKS.keys())


def _reaches(path: pathlib.Path, private: frozenset[str]) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append((node.lineno, str(node.args[1].value)))
    return found


def _private_imports(path: pathlib.Path) -> list[tuple[int, str]]:
    """Imports of a private module of the SDK (``from mcp.server._otel import x``, ``from mcp.shared import _otel``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SDK_PACKAGES:
            names = [alias.name for alias in node.names]
            if any(_private(part) for part in node.module.split(".")) or any(map(_private, names)):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in SDK_PACKAGES and any(map(_private, parts)):
                    found.append((node.lineno, alias.name))
    return found


def _scanned_files() -> list[pathlib.Path]:
    files = []
    for top in SCANNED:
        for path in sorted((REPO_ROOT / top).rglob("*.py")):
            if PACKAGE in path.parents or CONTRACT_TESTS in path.parents or "migrations" in path.parts:
                continue
            files.append(path)
    return files


def test_the_sdks_private_names_are_found():
    # The scan is only as good as this set: it holds the reaches the package makes itself.
    assert {"_stamp", "_connection", "_serialize"} <= sdk_private_names()


def test_no_module_outside_the_package_touches_the_sdks_private_attributes():
    private = sdk_private_names()
    reaches, allowed = [], set()
    for path in _scanned_files():
        relative = path.relative_to(REPO_ROOT).as_posix()
        for line, name in _reaches(path, private):
            if (relative, name) in OURS:
                allowed.add((relative, name))
                continue
            reaches.append(f"{relative}:{line}: {name}")
    assert not reaches, (
        "These reach into the MCP SDK's private attributes outside mcpserver.sdk_internals: move each there (with "
        "a contract test and its plain path), or, if it is our own object's private name that the SDK happens to "
        "use too, add it to OURS with the reason:\n" + "\n".join(reaches)
    )
    assert allowed == set(OURS), f"OURS names accesses that no longer exist: {sorted(set(OURS) - allowed)}"


def test_no_test_outside_the_contract_tests_imports_a_private_module_of_the_sdk():
    tests = [path for path in _scanned_files() if path.relative_to(REPO_ROOT).parts[0] == "tests"]
    reaches = [
        f"{path.relative_to(REPO_ROOT).as_posix()}:{line}: {module}"
        for path in tests
        for line, module in _private_imports(path)
    ]
    assert not reaches, (
        "These tests import the MCP SDK's private modules: reach them through mcpserver.sdk_internals (with a "
        "contract test in tests/mcpserver/sdk_internals/):\n" + "\n".join(reaches)
    )
