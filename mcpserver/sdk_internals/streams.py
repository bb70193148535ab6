"""A 2025-11-25 session manager whose sessions each get an event store of their own.

The SDK's ``StreamableHTTPSessionManager`` takes one ``event_store`` and hands that same object to the transport of
every session it opens (it reads its ``event_store`` attribute once per new session), while the ``EventStore``
interface names a stream by its JSON-RPC request id alone: with one store, two sessions' requests ``1`` would share a
stream, and a reconnection could be replayed another session's events. Here the attribute is a property that gives
each new session a store of its own (``mcpserver.streams.ReplayStore.session_view``, passed in).

Reach: the manager reads ``event_store`` once for each session it opens, and nowhere else (its private
``_admit_session``); the transport keeps what it was given. Plain path (without ``MCP["SDK_FAST_PATHS"]``): no event
store, so 2025-11-25 streams are not resumable (no priming event, no ``retry``, a ``Last-Event-ID`` replays nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.streamable_http import EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from mcpserver.sdk_internals import fast_paths


class PerSessionEventStores(StreamableHTTPSessionManager):
    """The SDK's session manager, each of whose sessions gets its own event store from ``session_store``; the SDK's
    own, without an event store, when ``session_store`` is None or the fast paths are off."""

    def __init__(self, app: Any, *, session_store: Callable[[], EventStore] | None, **options: Any):
        self.session_store = session_store if fast_paths() else None
        super().__init__(app, event_store=None, **options)

    @property
    def event_store(self) -> EventStore | None:
        """A new session's own store (read by the manager once per session it opens)."""
        return self.session_store() if self.session_store is not None else None

    @event_store.setter
    def event_store(self, value: EventStore | None) -> None:
        # The SDK's constructor assigns the store it was given (None here): the property stands in for it.
        if value is not None:
            raise TypeError("PerSessionEventStores takes its stores as session_store=")
