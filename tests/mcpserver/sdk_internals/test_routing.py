"""The reach of ``mcpserver.sdk_internals.routing``: the SDK's session manager still splits requests between its two
generations by the ``MCP-Protocol-Version`` header and the handshake versions, as ``is_modern`` does."""

from __future__ import annotations

import ast
import inspect
import textwrap

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcpserver.sdk_internals.routing import is_modern
from tests.mcpserver.sdk_internals.support import revisit


def _split_condition() -> str:
    """The condition under which the SDK's ``_handle_request`` hands a request to its modern entry, as source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(StreamableHTTPSessionManager._handle_request)))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and any(
            isinstance(call, ast.Call) and getattr(call.func, "id", None) == "handle_modern_request"
            for call in ast.walk(ast.Module(body=node.body, type_ignores=[]))
        ):
            return ast.unparse(node.test)
    return ""


def test_the_sdk_sends_a_non_handshake_version_to_its_modern_entry():
    condition = _split_condition()
    assert condition == "pv is not None and pv not in HANDSHAKE_PROTOCOL_VERSIONS", revisit(
        "routing", f"_handle_request hands a request to handle_modern_request when {condition!r}"
    )
    header = inspect.getsource(StreamableHTTPSessionManager._handle_request)
    assert "MCP_PROTOCOL_VERSION_HEADER" in header, revisit("routing", "the split no longer reads the header")


def test_is_modern_splits_as_that_condition_does():
    for version in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS, "1999-01-01", "", "garbage"):
        assert is_modern(version.encode()) is (version not in HANDSHAKE_PROTOCOL_VERSIONS), version
    assert is_modern(None) is False
