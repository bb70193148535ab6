"""What ``mcpserver.sessions.SessionLeases`` keeps its own account of, because the SDK's session table is private: the
SDK's rule for when a 2025-11-25 session ends, and its answer to a session it does not know. If the SDK changes either,
the account would end sessions the SDK keeps, or answer a foreign session differently from an unknown one."""

from __future__ import annotations

import inspect

from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager, _error_response

from mcpserver.sessions import UNKNOWN_SESSION_BODY


def _revisit(what: str) -> str:
    return (
        f"The MCP SDK changed what mcpserver.sessions.SessionLeases mirrors: {what}. Read the SDK's session manager "
        "and transport again and make the account follow (its docstring says the rule it applies)."
    )


def test_an_unknown_session_is_answered_404_with_the_body_the_account_answers_a_foreign_one_with():
    response = _error_response("Session not found", 404)
    assert response.status_code == 404, _revisit(f"the answer's status is {response.status_code}")
    assert response.body == UNKNOWN_SESSION_BODY.encode(), _revisit(f"the answer is {response.body!r}")
    source = inspect.getsource(StreamableHTTPSessionManager)
    assert source.count('_error_response("Session not found", 404)') >= 1, _revisit(
        "the manager no longer answers an unknown session with _error_response('Session not found', 404)"
    )


def test_a_session_ends_after_its_idle_time_without_a_request_in_flight():
    documented = " ".join((inspect.getdoc(StreamableHTTPSessionManager) or "").split())
    assert "no HTTP request in flight for this long" in documented, _revisit("the manager's documented idle rule")
    transport = inspect.getsource(StreamableHTTPServerTransport)
    assert "_requests_in_flight" in transport and "idle_scope" in transport, _revisit(
        "the transport no longer counts requests in flight for its idle scope"
    )
    parameters = inspect.signature(StreamableHTTPSessionManager).parameters
    assert "session_idle_timeout" in parameters, _revisit("session_idle_timeout is gone")
