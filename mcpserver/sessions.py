"""Admission of stateful (2025-11-25) MCP sessions: a per-token cap on open sessions and the rate limit.

A 2025 session lives in the process that created it and holds memory until it ends, so one token opening
thousands of them would starve everyone else (the SDK's own process-wide cap answers 503 to all callers).
``SessionAdmission`` sits in front of the SDK's stateful session manager and, for every request that would open
a session (a request without ``Mcp-Session-Id``: the ``initialize`` handshake):

1. counts it against the caller's rate limit like any tool call (``mcpserver.ratelimit``), answering the
   catalog's RATE_LIMIT text as a JSON-RPC error over HTTP 429 with ``Retry-After``;
2. refuses it when the caller's token already has ``MAX_SESSIONS_PER_TOKEN`` sessions open, with a fixed
   JSON-RPC error that names the limit, over HTTP 429 (never a 5xx: the server is fine, this caller is at its
   quota).

Each session is bound to the server path it was opened at (``/mcp`` or an upstream's ``/mcp/<name>``,
``mcpserver.virtual_servers``): a request of it sent to another path is answered exactly as the SDK answers an
unknown session (404), so that nothing of one server's session (its capabilities, subscriptions, elicitation back
channel) is reachable through another's path. The binding is held from the moment the opening response starts, so
before the client can know the session's ID, until the SDK's session has ended (below); at an upstream's path, a
session this account does not hold is unknown.

The SDK ends idle sessions itself (``session_idle_timeout``, our ``SESSION_IDLE_SECONDS``) but offers no public
signal when a session ends: the manager's session table is private, and a handler's ``ServerSession`` does not
expose the connection whose ``exit_stack`` would tell. So ``SessionLeases`` keeps its own account of each
session, learned from the HTTP exchanges it already sees, and applies the SDK's documented rule: a session
lives while a request of it is in flight (an open GET stream included) and for ``SESSION_IDLE_SECONDS`` after
the last one ended (``tests/mcpserver/sdk_internals/test_session_rule.py`` reads the SDK's rule and its answer to an
unknown session again). Our idle clock starts a moment after the SDK's (when the response has been sent), so a lease
never ends before the SDK's session does. A session also ends here when its owner deletes it (HTTP
DELETE) or is told it is gone (404), and an ended session is never counted again. A request of a session this
account does not hold yet (the client's GET stream can start before the ``initialize`` request's handler has
returned) is counted from the moment the SDK accepts it. Everything runs on the event loop, without awaits inside
the account, so it needs no lock; its size is bounded by the sessions alive (expired leases are swept) and the
last ``_MAX_ENDED`` ended ones. Whoever keeps something per session (the gateway: a client's own upstream sessions
and log level) is told when one ends here (``on_ended``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.conf import settings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from errcatalog.render import error_object
from errcatalog.vocabulary import JSONRPC_SESSION_LIMIT, ROOT_SERVER
from mcpserver.auth import CLIENT_SCOPE_KEY, SERVER_SCOPE_KEY, ClientIdentity
from mcpserver.jsonrpc_errors import sanction
from mcpserver.ratelimit import rate_limit_answer, rate_limit_retry_after

logger = logging.getLogger("mcpserver.sessions")

_SESSION_HEADER = b"mcp-session-id"
# Refusals at the session cap are logged once a minute per client, in a table of at most this many clients.
WARNING_INTERVAL_SECONDS = 60.0
_MAX_WARNED = 10_000
# Sessions ended by a DELETE or a 404, remembered so that a request answered after the end cannot count them again.
_MAX_ENDED = 4096
# The catalog's RATE_LIMIT code on the JSON-RPC channel (default catalog): the session cap is a quota of the
# same family. Outside JSON-RPC's reserved range, as codes we choose must be.
SESSION_LIMIT_JSONRPC_CODE = JSONRPC_SESSION_LIMIT
SESSION_LIMIT_MESSAGE = (
    "Too many open MCP sessions for this token: at most {limit} may be open at once "
    "(ERRCATALOG_MCP_MAX_SESSIONS_PER_TOKEN). Close a session you no longer use (HTTP DELETE with its "
    "Mcp-Session-Id) or wait until an idle one expires ({idle} seconds without a request), then initialize again."
)


# The SDK's answer to a request of a session it does not know (``StreamableHTTPSessionManager``), byte for byte.
UNKNOWN_SESSION_BODY = types.JSONRPCError(
    jsonrpc="2.0", id=None, error=types.ErrorData(code=types.INVALID_REQUEST, message="Session not found")
).model_dump_json(by_alias=True, exclude_unset=True)


@dataclass(slots=True)
class _Lease:
    owner: str
    in_flight: int = 0
    idle_since: float = 0.0
    server: str = ROOT_SERVER  # the server path the session was opened at


class SessionLeases:
    """Which 2025 sessions are open, per client key, under the SDK's idle rule (see the module docstring)."""

    def __init__(
        self,
        *,
        idle_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        on_ended: Callable[[str], None] | None = None,
    ) -> None:
        self.idle_seconds = idle_seconds
        self._clock = clock
        # Told the ID of each session that ends here (deleted, gone or expired), once; it must not raise.
        self._on_ended = on_ended
        self._leases: dict[str, _Lease] = {}
        self._by_owner: dict[str, set[str]] = {}
        self._opening: dict[str, int] = {}
        self._ended: dict[str, None] = {}  # insertion-ordered: the oldest is forgotten first
        self._next_sweep = clock() + idle_seconds

    def __len__(self) -> int:
        """Sessions held (expired ones may linger until the next sweep)."""
        return len(self._leases)

    def open_count(self, owner: str) -> int:
        """Live sessions of ``owner`` plus those being opened right now; forgets its expired ones."""
        now = self._clock()
        for session_id in list(self._by_owner.get(owner, ())):
            if self._expired(self._leases[session_id], now):
                self._drop(session_id)
        return len(self._by_owner.get(owner, ())) + self._opening.get(owner, 0)

    def reserve(self, owner: str, limit: int) -> bool:
        """Hold a place for a session ``owner`` is opening, unless it is at ``limit``; ``release`` it after."""
        self._sweep()
        if self.open_count(owner) >= limit:
            return False
        self._opening[owner] = self._opening.get(owner, 0) + 1
        return True

    def release(self, owner: str, session_id: str | None, *, server: str = ROOT_SERVER) -> None:
        """The opening request is answered: a lease for ``session_id`` (opened at ``server``) when one was opened,
        the place freed."""
        remaining = self._opening.get(owner, 1) - 1
        if remaining > 0:
            self._opening[owner] = remaining
        else:
            self._opening.pop(owner, None)
        if session_id is not None:
            self.adopt(session_id, owner, server=server)

    def server_of(self, session_id: str) -> str | None:
        """The server ``session_id`` was opened at, while it is held; None for a session not held."""
        lease = self._leases.get(session_id)
        return lease.server if lease is not None else None

    def begin(self, session_id: str, owner: str) -> bool:
        """A request of ``session_id`` by ``owner`` starts; False (not counted) if the session is not theirs."""
        lease = self._leases.get(session_id)
        if lease is None or lease.owner != owner:
            return False
        lease.in_flight += 1
        return True

    def end(self, session_id: str, *, gone: bool) -> None:
        """A request that ``begin`` counted has been answered; ``gone`` when the session ended with it."""
        lease = self._leases.get(session_id)
        if gone:
            self.ended(session_id)
        elif lease is not None:
            lease.in_flight -= 1
            if lease.in_flight <= 0:
                lease.in_flight = 0
                lease.idle_since = self._clock()

    def ended(self, session_id: str) -> None:
        """The session is over (deleted, or the SDK answered 404): free its place, and never count it again."""
        self._drop(session_id)
        self._ended[session_id] = None
        if len(self._ended) > _MAX_ENDED:
            del self._ended[next(iter(self._ended))]

    def adopt(self, session_id: str, owner: str, *, server: str = ROOT_SERVER) -> None:
        """A session the SDK serves to ``owner`` at ``server``: hold it from now on, unless it is held already or has
        ended."""
        if session_id in self._leases or session_id in self._ended:
            return
        self._leases[session_id] = _Lease(owner=owner, idle_since=self._clock(), server=server)
        self._by_owner.setdefault(owner, set()).add(session_id)

    def _expired(self, lease: _Lease, now: float) -> bool:
        return lease.in_flight <= 0 and now - lease.idle_since >= self.idle_seconds

    def _drop(self, session_id: str) -> None:
        lease = self._leases.pop(session_id, None)
        if lease is None:
            return
        if self._on_ended is not None:
            self._on_ended(session_id)
        owned = self._by_owner.get(lease.owner)
        if owned is not None:
            owned.discard(session_id)
            if not owned:
                del self._by_owner[lease.owner]

    def _sweep(self) -> None:
        # Owners who never come back would otherwise keep their expired leases: one pass per idle period.
        now = self._clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.idle_seconds
        for session_id in [sid for sid, lease in self._leases.items() if self._expired(lease, now)]:
            self._drop(session_id)


class SessionAdmission:
    """ASGI middleware in front of the stateful session manager: rate limit and per-token cap on new sessions."""

    def __init__(self, app: ASGIApp, *, idle_seconds: float, on_ended: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.leases = SessionLeases(idle_seconds=idle_seconds, on_ended=on_ended)
        self._warned: dict[str, float] = {}

    def _warning_due(self, client_key: str) -> bool:
        # A client hammering at its limit would otherwise write a log line per refused request.
        now = time.monotonic()
        if now - self._warned.get(client_key, -WARNING_INTERVAL_SECONDS) < WARNING_INTERVAL_SECONDS:
            return False
        if len(self._warned) >= _MAX_WARNED:
            self._warned.clear()
        self._warned[client_key] = now
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client: ClientIdentity | None = scope.get(CLIENT_SCOPE_KEY)
        session_id = next((value for key, value in scope["headers"] if key == _SESSION_HEADER), None)
        if client is None:
            await self.app(scope, receive, send)
        elif session_id is None:
            await self._open(client, scope, receive, send)
        else:
            await self._continue(client, session_id.decode("latin-1"), scope, receive, send)

    async def _open(self, client: ClientIdentity, scope: Scope, receive: Receive, send: Send) -> None:
        mcp = settings.MCP
        retry_after = await rate_limit_retry_after(client.key, per_minute=mcp["RATE_LIMIT_PER_MINUTE"])
        if retry_after is not None:
            await _refuse(send, await _rate_limit_error(retry_after), retry_after=retry_after)
            return
        limit = mcp["MAX_SESSIONS_PER_TOKEN"]
        if not self.leases.reserve(client.key, limit):
            if self._warning_due(client.key):
                logger.warning(
                    "Refusing new MCP sessions for %s: %d sessions open, the limit (logged once a minute)",
                    client.key,
                    limit,
                )
            await _refuse(send, _session_limit_error(limit, self.leases.idle_seconds))
            return
        opened: str | None = None
        released = False
        server = _server(scope)

        async def watch(message: Message) -> None:
            nonlocal opened, released
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = _header(message, _SESSION_HEADER)
                if opened is not None:
                    # Held with its server before the client can learn its ID, in flight until this response ends.
                    self.leases.release(client.key, opened, server=server)
                    released = True
                    self.leases.begin(opened, client.key)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if not released:
                self.leases.release(client.key, None)
            elif opened is not None:
                self.leases.end(opened, gone=False)

    async def _continue(self, client: ClientIdentity, session_id: str, scope: Scope, receive: Receive, send: Send):
        server = _server(scope)
        bound = self.leases.server_of(session_id)
        # /mcp keeps serving a session it does not hold to the SDK, which answers it (unknown, or adopted below).
        if (bound is None and server != ROOT_SERVER) or (bound is not None and bound != server):
            await _unknown_session(send)
            return
        counted = self.leases.begin(session_id, client.key)
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status, counted
            if message["type"] == "http.response.start":
                status = message["status"]
                if not counted and 200 <= status < 400 and scope["method"] != "DELETE":
                    # The SDK serves this session to this caller, and this account does not hold it (yet): a
                    # request that arrived before its initialize was answered, or one whose lease expired here.
                    self.leases.adopt(session_id, client.key, server=server)
                    counted = self.leases.begin(session_id, client.key)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            deleted = scope["method"] == "DELETE" and 200 <= status < 300
            # The SDK answers 404 to a session that is gone (or is not this caller's: then it was never counted).
            if counted:
                self.leases.end(session_id, gone=deleted or status == 404)
            elif deleted:
                self.leases.ended(session_id)


def _server(scope: Scope) -> str:
    server = scope.get(SERVER_SCOPE_KEY)
    return server if isinstance(server, str) else ROOT_SERVER


async def _unknown_session(send: Send) -> None:
    body = UNKNOWN_SESSION_BODY.encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(message: Message, name: bytes) -> str | None:
    value = next((v for k, v in message.get("headers", ()) if k.lower() == name), None)
    return value.decode("latin-1") if value is not None else None


async def _rate_limit_error(retry_after: int) -> dict:
    """The catalog's RATE_LIMIT wording as a JSON-RPC error object, as a rate-limited tool call would get it."""
    error = error_object(await rate_limit_answer(retry_after), legacy=settings.ERRCATALOG["LEGACY_JSONRPC_CODES"])
    # Catalog text: let it through the JSON-RPC error screen that wraps this middleware.
    sanction(error["code"], error["message"], error.get("data"))
    return error


def _session_limit_error(limit: int, idle_seconds: float) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": SESSION_LIMIT_JSONRPC_CODE,
        "message": SESSION_LIMIT_MESSAGE.format(limit=limit, idle=round(idle_seconds)),
        "data": {"limit": "sessions_per_token", "max_sessions": limit, "retry_capable": True},
    }
    # A fixed sentence with the configured numbers only: let it through the JSON-RPC error screen.
    sanction(error["code"], error["message"], error["data"])
    return error


async def _refuse(send: Send, error: dict, *, retry_after: int | None = None) -> None:
    """HTTP 429 with a JSON-RPC error body (no id: the request was not read), which the SDK client surfaces."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
