"""The connection behind a 2025-11-25 ``ServerSession``: a private attribute, for the session's end.

mcp 2.3 hands a handler the per-request ``ServerSession`` only; the ``Connection`` behind it, whose exit stack closes
when the session ends, is its private ``_connection``, with no public accessor. ``mcpserver.changes`` keys the
sessions it tells of list changes by it and forgets each on that exit stack. Plain path (``fast_paths`` off): none
in the public API, so ``session_connection`` answers None and 2025-11-25 sessions are not told of list changes
(2026-07-28 listen streams still are).
"""

from __future__ import annotations

from mcp.server.connection import Connection
from mcp.server.session import ServerSession

from mcpserver.sdk_internals import fast_paths


def session_connection(session: ServerSession) -> Connection | None:
    """The ``Connection`` of ``session``; None without the fast paths."""
    if not fast_paths():
        return None
    connection = getattr(session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError("mcp's ServerSession no longer holds its Connection as _connection")
    return connection
