"""The installed SDK is the one every reach of ``mcpserver.sdk_internals`` was read against."""

from __future__ import annotations

from importlib.metadata import version

from mcpserver.sdk_internals import READ_AGAINST


def test_the_installed_sdk_is_the_one_the_reaches_were_read_against():
    installed = {name: version(name) for name in ("mcp", "mcp-types")}
    assert installed == {"mcp": READ_AGAINST, "mcp-types": READ_AGAINST}, (
        f"The MCP SDK is now {installed}; mcpserver.sdk_internals was read against {READ_AGAINST}. Its docstring "
        "lists every reach into the SDK's internals: run tests/mcpserver/sdk_internals/, read each reach against "
        "the new SDK's source (even where its test passes), then set READ_AGAINST to the new version. If a reach "
        "cannot follow yet, ship with ERRCATALOG_MCP_SDK_FAST_PATHS=0 (the SDK's plain path)."
    )
