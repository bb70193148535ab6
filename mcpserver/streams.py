"""Resumable 2025-11-25 SSE streams: the events each session was sent, kept a while so that a client that lost its
stream picks it up where it left off.

With an event store, the SDK's transport starts each POST stream with a priming event (an event id and no data) and
a ``retry`` field (how long a client waits before it reconnects), stores every event it sends, and answers a GET that
names the last event the client saw (``Last-Event-ID``) with the events after it on that stream, then with the rest of
the call as it comes. A call goes on when its client's connection drops (a proxy's timeout, a network change, a
server that closes the stream itself to be polled, SEP-1699), and its result waits here for the client's return.

``ReplayStore`` is one bounded store per process: at most ``MCP["STREAM_REPLAY_EVENTS"]`` events, none older than
``MCP["STREAM_REPLAY_SECONDS"]``, the oldest dropped first. Each session writes to a view of its own
(``ReplayStore.session_view``): the SDK names a stream by its JSON-RPC request id, which every client numbers from the
same start, so a view replays its own session's events only, and an event id from elsewhere (another session's,
an expired one, a made-up one) replays nothing. Event ids are random, so that none can be guessed.

In one process only, by design: a 2025-11-25 session lives in the process that opened it, and so does the transport
that replays, so a reconnection must reach that process anyway (``deploy/haproxy`` sticks each session to its process
by its ``Mcp-Session-Id``; elsewhere the session is unknown and answers 404, wherever its events were kept).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

import mcp_types as types
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore


@dataclass(slots=True)
class _Event:
    session: int
    stream: str
    message: types.JSONRPCMessage | None
    at: float


class ReplayStore:
    """The SSE events of this process's sessions, bounded in number and age, each session's through its own view."""

    def __init__(self, max_events: int, max_age_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.max_events = max_events
        self.max_age_seconds = max_age_seconds
        self._clock = clock
        self._events: OrderedDict[str, _Event] = OrderedDict()  # by event id, oldest first
        self._streams: dict[tuple[int, str], deque[str]] = {}  # each stream's event ids, oldest first
        self._sessions = 0

    def __len__(self) -> int:
        return len(self._events)

    def session_view(self) -> SessionEvents:
        """The store as one new session sees it."""
        self._sessions += 1
        return SessionEvents(self, self._sessions)

    def store(self, session: int, stream: str, message: types.JSONRPCMessage | None) -> str:
        now = self._clock()
        self._expire(now)
        while len(self._events) >= self.max_events:
            self._drop_oldest()
        event_id = secrets.token_urlsafe(16)
        self._events[event_id] = _Event(session, stream, message, now)
        self._streams.setdefault((session, stream), deque()).append(event_id)
        return event_id

    def after(self, session: int, last_event_id: str) -> tuple[str, list[EventMessage]] | None:
        """The stream of ``last_event_id`` and its events after it, when it is one of ``session``'s kept events."""
        self._expire(self._clock())
        event = self._events.get(last_event_id)
        if event is None or event.session != session:
            return None
        ids = self._streams[(session, event.stream)]
        later = list(ids)[list(ids).index(last_event_id) + 1 :]
        # Priming events (no message) only mark a position; they are not replayed.
        replay = [
            EventMessage(message, event_id)
            for event_id in later
            if (message := self._events[event_id].message) is not None
        ]
        return event.stream, replay

    def _expire(self, now: float) -> None:
        while self._events and now - next(iter(self._events.values())).at > self.max_age_seconds:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, event = self._events.popitem(last=False)
        key = (event.session, event.stream)
        ids = self._streams[key]
        ids.popleft()  # a stream's events are dropped in the order they were stored, as all are
        if not ids:
            del self._streams[key]


class SessionEvents(EventStore):
    """One session's view of the process's ``ReplayStore``: the SDK's ``EventStore`` for that session's transport."""

    def __init__(self, store: ReplayStore, session: int):
        self._store = store
        self._session = session

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        return self._store.store(self._session, stream_id, message)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        found = self._store.after(self._session, last_event_id)
        if found is None:
            return None
        stream, events = found
        for event in events:
            await send_callback(event)
        return stream
