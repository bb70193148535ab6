"""The reach of ``mcpserver.sdk_internals.sessions``: a ``ServerSession`` holds its ``Connection`` as ``_connection``,
and that connection's exit stack closes when the session ends."""

from __future__ import annotations

import inspect

from mcp.server.connection import Connection
from mcp.server.session import ServerSession

from mcpserver.sdk_internals.sessions import session_connection
from tests.mcpserver.sdk_internals.support import revisit


def _session() -> tuple[ServerSession, Connection]:
    connection = Connection.from_envelope("2025-11-25", None, None)
    parameters = inspect.signature(ServerSession.__init__).parameters
    assert "connection" in parameters, revisit("sessions", f"ServerSession takes {list(parameters)}")
    kwargs = {name: None for name, p in parameters.items() if name != "self" and p.default is inspect.Parameter.empty}
    kwargs["connection"] = connection
    return ServerSession(**kwargs), connection


def test_a_session_holds_its_connection_as_the_private_attribute_we_read():
    session, connection = _session()
    assert getattr(session, "_connection", None) is connection, revisit(
        "sessions", "ServerSession no longer keeps its Connection as _connection"
    )
    assert session_connection(session) is connection


def test_the_connection_has_the_exit_stack_and_version_we_use():
    connection = _session()[1]
    assert connection.protocol_version == "2025-11-25", revisit("sessions", "Connection.protocol_version moved")
    assert callable(getattr(connection.exit_stack, "callback", None)), revisit(
        "sessions", "Connection.exit_stack no longer takes callbacks"
    )


def test_without_the_fast_paths_no_session_is_followed(settings):
    session, _connection = _session()
    settings.MCP = {**settings.MCP, "SDK_FAST_PATHS": False}
    assert session_connection(session) is None
