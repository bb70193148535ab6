"""The import contract "sdk-internals" (``pyproject.toml``) forbids every private module the installed SDK has."""

from __future__ import annotations

import pathlib
import tomllib

import mcp
import mcp_types

from tests.docs.reference_pages import REPO_ROOT


def _private_modules() -> set[str]:
    found = set()
    for package in (mcp, mcp_types):
        root = pathlib.Path(package.__file__).parent
        for path in root.rglob("*.py"):
            parts = (package.__name__, *path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(part.startswith("_") and not part.startswith("__") for part in parts):
                found.add(".".join(parts))
    return found


def test_the_contract_forbids_exactly_the_sdks_private_modules():
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["id"] == "sdk-internals")
    forbidden = set(contract["forbidden_modules"])
    private = _private_modules()
    assert forbidden == private, (
        "The installed MCP SDK's private modules changed: list them in pyproject.toml's sdk-internals contract "
        f"(missing: {sorted(private - forbidden)}; gone: {sorted(forbidden - private)}), and read "
        "mcpserver.sdk_internals' reaches again."
    )
