"""Upstream sessions of one client each: opened on first use, closed with the client's session or when idle, bounded.

Which calls get one (``UpstreamConnection.forward`` decides):

- a 2025-11-25 session of ours (its ``Mcp-Session-Id``) calling an HTTP upstream, or a stdio upstream whose
  ``session_mode`` is ``per_client`` (a child process of its own): one upstream session per our session, kept for
  its next calls, so that whatever the upstream keeps per session (a log level, simulated logging, subscriptions,
  its own state) belongs to that client alone;
- a 2026-07-28 request (no session: every request stands alone) calling such an upstream that speaks 2025-11-25
  (stateful): an upstream session for that one request, closed after it, so that no state one client left in an
  upstream session reaches another; to a 2026-07-28 upstream (stateless too) it goes over the connection's shared
  session, where there is no state to cross;
- everything else (a stdio upstream in its default ``shared`` mode; the supervisor's tool listing and change
  following) uses the connection's shared session.

``OwnSessions`` holds them for one upstream in one process, at most ``GATEWAY["SESSIONS_PER_UPSTREAM"]``: each in a
task of its own (a client's transport is entered and left in one task), closed after
``GATEWAY["SESSION_IDLE_SECONDS"]`` without a call (one that holds resource subscriptions is not idle: its client
waits for their updates on it), when our session ends (``close``), when a call finds it broken
(the next call opens another; one that held resource subscriptions has them held again when it opens:
``on_reopened``), or when the connection stops. Past the bound the least recently used idle one is
closed for the new one; when every one is busy the call is refused with ``UpstreamSessionsBusy``, which the
catalog's rules classify like an open circuit (SERVICE_UNAVAILABLE, retryable, with a Retry-After), and never falls
back to the shared session.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import anyio
import anyio.abc
from mcp.client import Client

from mcpserver.gateway.failures import UpstreamConnectionError, UpstreamUnavailable
from mcpserver.gateway.forwarded import ForwardedCall, outside_calls
from mcpserver.gateway.log_relay import LogSink

logger = logging.getLogger("mcpserver.gateway")

# The Retry-After of a call refused because every session of its upstream is busy.
BUSY_RETRY_AFTER_SECONDS = 1
# A one-request session's key: never an ``Mcp-Session-Id`` (those are visible ASCII without spaces).
_ONE_REQUEST = "one request "


class UpstreamSessionsBusy(UpstreamUnavailable):
    """Every upstream session this process may hold for the upstream is in a call: answered at once, retryable."""

    what = "every session this process may open to it is busy"


@dataclass(eq=False)
class OwnSession:
    """One client's upstream session; ``client`` while it is open."""

    key: str
    client: Client | None = None
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)
    # The calls in flight on it, which its upstream's requests may belong to (``forwarded.calling``).
    calls: list[ForwardedCall] = field(default_factory=list)
    # Where its upstream's log messages go: the sink of the client it belongs to, set at each call.
    log: LogSink | None = None
    # The level last forwarded to a 2025-11-25 upstream with ``logging/setLevel``.
    level_sent: str | None = None
    # Resource subscriptions held on it (``mcpserver.offerings``): while any is, it is not idle.
    holds: int = 0
    opened: anyio.Event = field(default_factory=anyio.Event)
    closing: anyio.Event = field(default_factory=anyio.Event)
    wake: anyio.Event = field(default_factory=anyio.Event)
    failure: BaseException | None = None

    def close(self) -> None:
        self.closing.set()
        self.wake.set()


def one_request_key() -> str:
    """A key for a session that serves one request only."""
    return f"{_ONE_REQUEST}{time.monotonic_ns()}-{id(object())}"


class OwnSessions:
    """One upstream's sessions of one client each, in this process (see the module docstring)."""

    def __init__(
        self,
        upstream: str,
        open_client: Callable[[AsyncExitStack, OwnSession], Awaitable[Client]],
        *,
        limit: int,
        idle_seconds: float,
        on_reopened: Callable[[str], None] | None = None,
    ) -> None:
        self.upstream = upstream
        self._open_client = open_client
        self.limit = limit
        self.idle_seconds = idle_seconds
        # Told the key of a session opened again after one of the same key that held subscriptions broke (the
        # upstream lost them with it: they are to be held again).
        self._on_reopened = on_reopened
        self._sessions: dict[str, OwnSession] = {}
        self._lost: set[str] = set()
        self._tasks: anyio.abc.TaskGroup | None = None
        self.opened = 0  # sessions opened since the start, for tests and health
        self.closed = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: str) -> OwnSession | None:
        return self._sessions.get(key)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The task group its sessions live in; every session is closed when it ends."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self.close_all()

    @contextlib.asynccontextmanager
    async def use(self, key: str, *, one_request: bool = False) -> AsyncIterator[OwnSession]:
        """The session of ``key`` (opened when there is none), counted in use inside the block."""
        own = self._sessions.get(key)
        if own is None or own.closing.is_set():
            if own is not None and own.holds:  # it broke holding subscriptions, and is not gone yet
                self._lost.add(key)
            own = self._start(key)
        own.in_flight += 1
        try:
            await own.opened.wait()
            if own.client is None:
                raise UpstreamConnectionError(self.upstream, own.failure or "the session closed") from None
            yield own
        finally:
            own.in_flight -= 1
            own.last_used = time.monotonic()
            if one_request:
                own.close()
            own.wake.set()

    def close(self, key: str) -> None:
        """Our session ``key`` ended: its upstream session is closed (in the background)."""
        own = self._sessions.pop(key, None)
        self._lost.discard(key)
        if own is not None:
            own.close()

    def close_all(self) -> None:
        for key in list(self._sessions):
            self.close(key)

    def _start(self, key: str) -> OwnSession:
        if self._tasks is None:
            raise UpstreamConnectionError(self.upstream, "not connected")
        if len(self._sessions) >= self.limit:
            idle = [own for own in self._sessions.values() if own.in_flight == 0 and not own.holds]
            if not idle:
                raise UpstreamSessionsBusy(self.upstream, "every session is busy", retry_after=BUSY_RETRY_AFTER_SECONDS)
            oldest = min(idle, key=lambda own: own.last_used)
            self.close(oldest.key)
        own = OwnSession(key)
        self._sessions[key] = own
        # Opened by a call, the session serves the client's later calls too: what reaches it is not that call's.
        with outside_calls():
            self._tasks.start_soon(self._hold, own, name=f"errcatalog-upstream-{self.upstream}-session")
        return own

    async def _hold(self, own: OwnSession) -> None:
        """Open ``own``'s session, keep it until it is closed or idle, close it."""
        try:
            async with AsyncExitStack() as stack:
                own.client = await self._open_client(stack, own)
                self.opened += 1
                own.opened.set()
                if own.key in self._lost:
                    self._lost.discard(own.key)
                    if self._on_reopened is not None:
                        self._on_reopened(own.key)
                while not own.closing.is_set():
                    idle_for = time.monotonic() - own.last_used
                    busy = own.in_flight or own.holds
                    if not busy and idle_for >= self.idle_seconds:
                        break
                    with anyio.move_on_after(max(0.0, self.idle_seconds - idle_for) if not busy else 3600):
                        await own.wake.wait()
                    own.wake = anyio.Event()
                own.client = None
        except Exception as exc:
            own.failure = exc
            logger.debug("Upstream %s: a client's session ended (%s)", self.upstream, type(exc).__name__)
        finally:
            own.client = None
            own.closing.set()
            own.opened.set()
            if self._sessions.get(own.key) is own:  # it ended by itself (broken), not with our session
                del self._sessions[own.key]
                if own.holds and len(self._lost) < self.limit:
                    self._lost.add(own.key)
            self.closed += 1
