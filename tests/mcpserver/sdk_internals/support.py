"""What every contract test of ``mcpserver.sdk_internals`` says when the SDK moved under a reach."""

from __future__ import annotations

import pathlib

import mcp

SDK_SOURCE = pathlib.Path(mcp.__file__).parent


def revisit(reach: str, what: str) -> str:
    """The failure message: which reach to read again, and what changed."""
    return (
        f"The MCP SDK changed under a reach of mcpserver.sdk_internals.{reach}: {what}. Read that module's docstring "
        "and the SDK's source again, then follow it or drop the reach; meanwhile ERRCATALOG_MCP_SDK_FAST_PATHS=0 "
        "serves through the SDK's plain path."
    )


def sdk_source(relative: str) -> str:
    return (SDK_SOURCE / relative).read_text()
