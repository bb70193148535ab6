"""Sentences the SDK writes, read in its source (mcp 2.3): the reach is their text, which no API exposes.

- ``SDK_FIXED_MESSAGES`` / ``SDK_FIXED_DATA``: JSON-RPC error messages the SDK's server sends as they are, none with
  anything from the request in it; ``mcpserver.jsonrpc_errors``' screen lets them through and replaces every other
  message it did not sanction.
- ``SDK_CLIENT_UNREADABLE_ANSWER``: the beginnings of the errors the SDK's client makes up for an answer it cannot
  read (``mcp/client/streamable_http.py``); the gateway (``mcpserver.gateway.failures``) reports such an error as an
  answer that is not MCP rather than as the upstream's own JSON-RPC error.
- ``SESSION_GONE``: how an upstream's answer says that it no longer knows our session (it restarted, or dropped it):
  the SDK's client's stand-in for a 404 without a JSON-RPC body, the SDK servers' (Python and TypeScript) 404 body,
  and the 400 body of the TypeScript SDK's example transports that ``server-everything`` runs; the gateway then opens
  the session again rather than report the upstream's JSON-RPC error for ever.

No plain path: a sentence the SDK rewords is screened to our fixed text, or classified as the upstream's JSON-RPC
error, until these tables follow it (``tests/mcpserver/sdk_internals/test_messages.py`` finds each in the source).
"""

from __future__ import annotations

# Sentences the SDK (mcp 2.3) sends as they are, read in its source: none contains anything from the request.
SDK_FIXED_MESSAGES = frozenset(
    {
        "Method not found",
        "Invalid request parameters",
        "Parse error",
        "Request cancelled",
        "Session not found",
        "Too many open sessions",
        "Not Found: Session has been terminated",
        "Not Found: Invalid or expired session ID",
        "Not Acceptable: Client must accept application/json",
        "Not Acceptable: Client must accept both application/json and text/event-stream",
        "Not Acceptable: Client must accept text/event-stream",
        "Unsupported Media Type: Content-Type must be application/json",
        "Session terminated before the request completed",
        "Error handling POST request",
        "Conflict: Only one SSE stream is allowed per session",
        "Method Not Allowed: Session termination not supported",
        "Method Not Allowed",
        "Bad Request: Missing session ID",
        "Error replaying events",
        "Body must be a single JSON-RPC request or notification object",
        "mcp-name header does not match the request body's 'name' parameter",
        "Invalid or expired requestState",
        "Unsupported protocol version",
    }
)
# SDK errors whose data is fixed too (the message is in SDK_FIXED_MESSAGES): message -> the one data allowed.
SDK_FIXED_DATA = {"Invalid or expired requestState": {"reason": "invalid_request_state"}}
# How the SDK's client words the errors it makes up for an answer it cannot read (its message starts with one).
SDK_CLIENT_UNREADABLE_ANSWER = (
    "Failed to parse JSON response",
    "Failed to parse SSE message",
    "Unexpected content type",
)
# An upstream no longer knows our session: the SDK client's stand-in for a 404 (``mcp/client/streamable_http.py``),
# the SDK servers' 404 body, and the TypeScript examples' 400 body (server-everything 2026.8.31).
SDK_CLIENT_SESSION_TERMINATED = "Session terminated"
SESSION_GONE = frozenset(
    {SDK_CLIENT_SESSION_TERMINATED, "Session not found", "Bad Request: No valid session ID provided"}
)
