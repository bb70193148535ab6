"""One upstream, connected: a client session kept open by a supervisor task, its tools, and each call forwarded.

``UpstreamConnection.run`` is the supervisor: it connects (``transport``: Streamable HTTP, or a child process over
stdio whose stderr ``stderr`` logs), lists the upstream's tools, keeps them fresh (on a 2025-11-25 session's
``notifications/tools/list_changed``, on the tool changes of a 2026-07-28 upstream's ``subscriptions/listen`` stream,
and on a timer) and reconnects with a growing backoff when the connection drops or the process dies; a stdio child is
replaced after its lifetime and stopped when the server stops. ``UpstreamConnection.forward`` forwards one call from
any task over the shared session, within the upstream's concurrency limit, timeout and circuit breaker (``breaker``),
and turns every way it can fail into an ``UpstreamError`` (``failures``): it is the last link of the relays' chain
(``relays``), and ``_forward`` the one place the call goes to the upstream, where the transport's parts of the relays
plug in (progress, log level). What the upstream asks or tells during a call (elicitation, sampling, roots, log
messages) comes to the session's callbacks, which find the call with ``forwarded.calling``. A call of a client session
(or of a 2026-07-28 request to a stateful upstream) goes over an upstream session of that client's own instead
(``client_sessions``), within the same limits. What a result says is read by ``results``; ``probe`` connects once for a
check. What an upstream tells about its resources and prompts (updates of subscribed resources, list changes) goes to
``notices``, with the channel it came on: the shared session, or a client's own (``own_channel``); a 2026-07-28
upstream tells it on the supervisor's ``subscriptions/listen`` stream, which also holds the resource subscriptions of
the shared channel (``listen_to``, ``listening``).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import aiohttp
import anyio
import httpx2
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from errcatalog.gateway.models import TOOL_SEPARATOR, SessionMode, Transport
from errcatalog.gateway.secrets import SecretUnavailable, resolve, values_to_redact
from errcatalog.gateway.selectors import UpstreamConfig
from errcatalog.gateway.services import HealthReport
from errcatalog.safety import redacted_for_people
from errcatalog.vocabulary import is_tool_name
from mcpserver.gateway import notices
from mcpserver.gateway.breaker import CircuitBreaker
from mcpserver.gateway.client_sessions import OwnSession, OwnSessions, one_request_key
from mcpserver.gateway.elicitation import Ask, CallersClient, UrlElicitationRequired, relay_elicitation
from mcpserver.gateway.elicitation_complete import relay_completion
from mcpserver.gateway.failures import (
    CONNECTION_CODES,
    UpstreamConnectionError,
    UpstreamError,
    UpstreamHttpError,
    UpstreamJsonRpcError,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamToolError,
    UpstreamUnavailable,
    failure_for_staff,
    known_kind,
)
from mcpserver.gateway.forwarded import ForwardedCall, Result, calling, forwarding
from mcpserver.gateway.listening import ChangesFollowed
from mcpserver.gateway.log_relay import LogSink, relay_log
from mcpserver.gateway.progress import relaying_progress
from mcpserver.gateway.results import envelope_code, result_text, without_protocol_meta
from mcpserver.gateway.roots import relay_roots
from mcpserver.gateway.round_trip import round_trip_call
from mcpserver.gateway.sampling import relay_sampling
from mcpserver.gateway.stderr import ChildStderr
from mcpserver.gateway.transport import http_transport, proxied, stdio_transport
from mcpserver.sdk_internals.messages import SDK_CLIENT_UNREADABLE_ANSWER, SESSION_GONE
from mcpserver.sdk_internals.poster import STATUS_KEY, TRANSPORT_KEY, open_poster, post_tool_call

logger = logging.getLogger("mcpserver.gateway")

# How long a call waits for a first connection that is under way (at start, or after a drop) before it fails.
CONNECT_WAIT_SECONDS = 5.0
# ``logging/setLevel`` is how a 2025-11-25 upstream session is given its client's level; the SDK marks the feature
# deprecated for 2026-07-28 and would warn at every forwarded level.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)
# The own session (``client_sessions``) the call in this task uses, so that a failure that loses the connection
# closes that session rather than the shared one.
_own_session: ContextVar[OwnSession | None] = ContextVar("upstream_own_session", default=None)


def shares_child(config: UpstreamConfig) -> bool:
    """Whether every client's calls go to one stdio child of this upstream (``session_mode`` shared)."""
    return config.transport == Transport.STDIO and config.session_mode != SessionMode.PER_CLIENT


# What an upstream asks or tells during a call goes to the call it belongs to among ``calls``, those in flight on the
# session it came on (the shared one or a client's own), found with ``forwarded.calling``; when no call can be told,
# there is nobody to ask, no client and no log.


def _asker_of(calls: Sequence[ForwardedCall]) -> tuple[Ask | None, CallersClient | None]:
    """How to ask the user of the call an upstream's elicitation belongs to, and that call's client."""
    call = calling(calls)
    return (call.ask, call.client) if call is not None else (None, None)


def _client_of(calls: Sequence[ForwardedCall]) -> CallersClient | None:
    """The client of the call an upstream's sampling or roots request belongs to."""
    call = calling(calls)
    return call.client if call is not None else None


def _log_of(calls: Sequence[ForwardedCall]) -> LogSink | None:
    """Where a log message of the upstream's goes: the log of the call it belongs to."""
    call = calling(calls)
    return call.log if call is not None else None


class _Classified:
    """The block of one request to the upstream: the own session it uses (``_own_session``) is forgotten after, and
    its failure is raised as ``UpstreamConnection._classified`` names it. A class, not a generator: it is on every
    call's path."""

    __slots__ = ("_connection", "_token", "_what")

    def __init__(self, connection: UpstreamConnection, what: str) -> None:
        self._connection, self._what = connection, what

    def __enter__(self) -> None:
        self._token = _own_session.set(None)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            error = self._connection._classified(exc, self._what) if exc is not None else None
            if error is not None:
                raise error from None
        finally:
            _own_session.reset(self._token)


class UpstreamConnection:
    """One upstream's session, tools and limits in this process (see the module docstring)."""

    def __init__(
        self,
        config: UpstreamConfig,
        settings: Mapping[str, Any],
        on_tools_changed: Callable[[], None],
        on_listed: Callable[[UpstreamConnection], Awaitable[None]] | None = None,
    ):
        self.config = config
        self._on_tools_changed = on_tools_changed
        # Awaited after every listing, before the connection serves a first one (the gateway pins the metadata).
        self._on_listed = on_listed
        self.settings = settings
        self.tools: Mapping[str, types.Tool] = MappingProxyType({})
        self.state = "connecting"
        self.protocol_version: str | None = None
        self.last_failure = ""
        self.last_failure_at: float | None = None
        self.connected_at: float | None = None
        self.breaker = CircuitBreaker(settings["BREAKER_FAILURES"], settings["BREAKER_SECONDS"])
        # The calls and requests in flight at once. This path takes asyncio's own semaphore and timeout, which cost
        # every forwarded call less than anyio's limiter and ``fail_after`` (a generator around a cancel scope).
        self.limiter = asyncio.Semaphore(config.max_concurrency)
        self.in_flight = 0
        # The calls in flight on the shared session, which its upstream's requests and log messages may belong to
        # (``forwarded.calling``).
        self._calls: list[ForwardedCall] = []
        self.own_sessions = OwnSessions(
            config.name,
            self._open_own,
            limit=settings["SESSIONS_PER_UPSTREAM"],
            idle_seconds=settings["SESSION_IDLE_SECONDS"],
            on_reopened=lambda key: notices.heard(config.name, notices.Connected(), channel=key),
        )
        self._client: Client | None = None
        # Posts a Streamable HTTP session's 2026-07-28 calls (``mcpserver.sdk_internals.poster``).
        self._poster: aiohttp.ClientSession | None = None
        self._request_ids = itertools.count(1)
        self._secrets: tuple[str, ...] = ()
        self._stderr: ChildStderr | None = None  # the stdio child's stderr, for a failed check
        # Set when the connection attempt under way ended, connected or not; calls that arrive meanwhile wait on it.
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._wake = anyio.Event()
        self._lost = False
        self._refresh = False
        # A 2026-07-28 upstream's changes, followed on a listen stream while its session serves (``listening``).
        self._changes = ChangesFollowed(config.name, settings, self._tools_changed)
        # Which of resources and prompts the upstream offers, as of its last handshake (its clients are told of
        # their lists when it connects or goes away).
        self.offers: frozenset[str] = frozenset()

    # --- Supervisor ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, serve and reconnect until ``stop``; the clients' own sessions live as long."""
        async with self.own_sessions.serving():
            await self._supervise()
        self.state = "stopped"

    async def _supervise(self) -> None:
        backoff = self.settings["RECONNECT_MIN_SECONDS"]
        while not self._stop.is_set():
            if self._settled.is_set():
                self._settled = anyio.Event()
            try:
                async with AsyncExitStack() as stack:
                    client = await self._open(stack)
                    await self._list_tools(client)
                    self._client, self._lost = client, False
                    self.protocol_version = client.protocol_version
                    self._announce_offerings(client)
                    self.state = "connected"
                    self.connected_at = time.monotonic()
                    # A handshake and a tool listing went through: the transport works again, so the circuit closes
                    # at once rather than after its open time.
                    self.breaker.succeeded()
                    self._settled.set()
                    backoff = self.settings["RECONNECT_MIN_SECONDS"]
                    logger.info(
                        "Upstream %s connected (%s, protocol %s, %d tools)",
                        self.config.name,
                        self.config.transport,
                        self.protocol_version,
                        len(self.tools),
                    )
                    await self._serve(client)
            except Exception as exc:
                if self._client is None and not self._lost:  # the attempt failed: calls stop waiting for it
                    self.note_failure(exc, "connecting")
                    self.state = "down"
                    self._settled.set()
                else:  # the session failed while serving: connect again at once
                    self.note_failure(exc, "serving")
                    self.state, self._lost = "connecting", True
            finally:
                self._client = self._poster = None
            if self._stop.is_set():
                break
            if self.state == "connecting" and self._lost:
                # A session that was serving ended (dropped, its process died, its lifetime is over): reconnect at
                # once; calls meanwhile wait for it (``_client_or_wait``).
                self._lost = False
                continue
            self.state = "down"
            with anyio.move_on_after(backoff):
                await self._stop.wait()
            backoff = min(backoff * 2, self.settings["RECONNECT_MAX_SECONDS"])

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    async def _serve(self, client: Client) -> None:
        """Serve the session until it ends; a 2026-07-28 upstream's changes are followed meanwhile (``listening``)."""
        async with anyio.create_task_group() as tasks:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                tasks.start_soon(self._changes.follow, client, self.offers)
            try:
                await self._watch(client)
            finally:
                tasks.cancel_scope.cancel()

    async def _watch(self, client: Client) -> None:
        """Wait while the session is good: refresh the tools when asked or due; return to reconnect."""
        refresh_every = self.settings["TOOLS_REFRESH_SECONDS"]
        lifetime = self.settings["STDIO_MAX_LIFETIME_SECONDS"] if self.config.transport == Transport.STDIO else 0
        next_refresh = time.monotonic() + refresh_every
        retire_at = time.monotonic() + lifetime if lifetime else float("inf")
        while not self._stop.is_set():
            # Past its lifetime with calls in flight, the session is looked at again every second until it is idle.
            wake_at = min(next_refresh, retire_at if time.monotonic() < retire_at else time.monotonic() + 1)
            with anyio.move_on_after(max(0.0, wake_at - time.monotonic())):
                await self._wake.wait()
            self._wake = anyio.Event()
            if self._stop.is_set() or self._lost:
                return
            if self._refresh or time.monotonic() >= next_refresh:
                self._refresh = False
                next_refresh = time.monotonic() + refresh_every
                await self._list_tools(client)  # a failure here ends the session: the supervisor reconnects
            if time.monotonic() >= retire_at and not self.in_flight:
                logger.info("Upstream %s: replacing its process after its lifetime", self.config.name)
                self._detach()
                return

    async def _open_own(self, stack: AsyncExitStack, own: OwnSession) -> Client:
        """A client's own session (``client_sessions``), closed with ``stack``."""
        return await self._open(stack, own)

    async def _open(self, stack: AsyncExitStack, own: OwnSession | None = None) -> Client:
        """The shared session, or ``own``'s: its own child process (stdio) or HTTP session, the poster excepted."""
        config = self.config
        try:
            binding = config.binding
            headers = {name: resolve(name, stored, binding=binding) for name, stored in config.headers.items()}
            env = {name: resolve(name, stored, binding=binding) for name, stored in config.env.items()}
        except SecretUnavailable as exc:
            text = f"not configured: {exc}"  # our own words: the value's name and why it cannot be read
            raise UpstreamConnectionError(config.name, text, for_staff=text) from None
        self._secrets = (*values_to_redact(headers), *values_to_redact(env))
        if config.transport == Transport.STDIO:
            # What the child writes to stderr is its own text, logged line by line as upstream text is.
            stderr = ChildStderr(config.name, self._secrets)
            if own is None:
                self._stderr = stderr
            stack.callback(stderr.close_writer)
            transport = stdio_transport(config, env, stderr.writer)
        else:
            transport, tls = await http_transport(stack, config, headers)
            if own is None and not proxied(config.url):  # a proxy from the environment is the SDK client's alone
                self._poster = await open_poster(
                    stack, headers=headers, tls=tls, max_concurrency=config.max_concurrency
                )
        secrets = self._secrets
        # Roots are a client's: declared over an upstream session of one client (a client's own, or the HTTP one no
        # client's session state lives on), never to the stdio child every client shares (``roots``).
        roots = config.relay_roots and (own is not None or not shares_child(config))
        if own is not None:

            async def on_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
                ask, client = _asker_of(own.calls)
                return await relay_elicitation(params, ask, client, secrets, upstream=config.name, channel=own.key)

            async def on_log(params: types.LoggingMessageNotificationParams) -> None:
                await relay_log(params, own.log, upstream=config.name, secrets=secrets)

            async def on_sampling(
                context: Any, params: types.CreateMessageRequestParams
            ) -> types.CreateMessageResult | types.ErrorData:
                return await relay_sampling(params, _client_of(own.calls), config.name, secrets)

            async def on_list_roots(context: Any) -> types.ListRootsResult | types.ErrorData:
                return await relay_roots(_client_of(own.calls))

        client = Client(
            transport,
            cache=None,
            message_handler=self._on_message if own is None else functools.partial(self._on_message, channel=own.key),
            elicitation_callback=self._on_elicitation if own is None else on_elicitation,
            logging_callback=self._on_log if own is None else on_log,
            # Declared to the upstream only where its record relays them (``sampling``, ``roots``).
            sampling_callback=(self._on_sampling if own is None else on_sampling) if config.relay_sampling else None,
            list_roots_callback=(self._on_list_roots if own is None else on_list_roots) if roots else None,
            client_info=types.Implementation(name="errcatalog-gateway", version="1"),
            # Bounds the handshake and tool listings (a cancel scope cannot: the session's task group outlives
            # this call); a call's own, shorter deadline is ``call``'s.
            read_timeout_seconds=max(config.timeout_seconds, CONNECT_WAIT_SECONDS) + 1,
        )
        await stack.enter_async_context(client)
        if config.transport == Transport.STDIO:
            stderr.close_writer()  # the child has its own copy; the reader sees the end when the child's closes
        return client

    async def open_and_list(self, stack: AsyncExitStack) -> Client:
        """Connect and list the tools once, without serving the session (``probe``); closed with ``stack``."""
        client = await self._open(stack)
        await self._list_tools(client)
        return client

    @property
    def stderr(self) -> ChildStderr | None:
        """The stdio child's stderr (``probe`` shows a failed check's last lines)."""
        return self._stderr

    async def _on_elicitation(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """An upstream asks for input: relayed to the user of the call it belongs to (``elicitation``)."""
        ask, client = _asker_of(self._calls)
        return await relay_elicitation(params, ask, client, self._secrets, upstream=self.config.name)

    async def _on_sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """An upstream asks for a completion: relayed to the client of the call it belongs to (``sampling``)."""
        return await relay_sampling(params, _client_of(self._calls), self.config.name, self._secrets)

    async def _on_list_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        """An upstream asks for the roots: those of the client of the call it belongs to (``roots``)."""
        return await relay_roots(_client_of(self._calls))

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message on the shared session: relayed to the client of the call it belongs to (``log_relay``)."""
        await relay_log(params, _log_of(self._calls), upstream=self.config.name, secrets=self._secrets)

    async def _on_message(self, message: Any, *, channel: str = notices.SHARED) -> None:
        """A notification of the shared session (``channel`` ``SHARED``) or of a client's own (its key)."""
        if isinstance(message, types.ToolListChangedNotification):  # a 2025-11-25 session's
            self._tools_changed()
        elif isinstance(message, notices.HEARD):  # its resources' and prompts' changes, for our clients
            notices.heard(self.config.name, message, channel=channel)
        elif isinstance(message, types.ElicitCompleteNotification):  # a URL elicitation we relayed ended
            await relay_completion(self.config.name, channel, message.params.elicitation_id)

    def _announce_offerings(self, client: Client) -> None:
        """A session opened: what it offers of resources and prompts is kept, and our clients are told that those
        lists changed (they may have: it was away, or new)."""
        capabilities = client.server_capabilities
        offers = set()
        if capabilities.resources is not None:
            offers.add("resources")
        if capabilities.prompts is not None:
            offers.add("prompts")
        self.offers = frozenset(offers)
        notices.offerings_changed(self.config.name, self.offers, connected=True)

    def own_channel(self, session_id: str | None) -> str:
        """The channel a request of our 2025-11-25 session ``session_id`` goes over: that session's own upstream
        session where it gets one (``client_sessions``), else the shared session (``notices.SHARED``). A 2026-07-28
        upstream has no session state: everything goes over the shared session and its listen stream."""
        own = self._own_key(session_id)
        if own is None or own[1] or self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return notices.SHARED
        return own[0]

    def listen_to(self, uris: frozenset[str]) -> None:
        """The resources a 2026-07-28 upstream is to report on the supervisor's listen stream from now on (reopened
        with them: ``listening``)."""
        self._changes.listen_to(uris)

    def _tools_changed(self) -> None:
        self._refresh = True
        self._wake.set()

    async def _list_tools(self, client: Client) -> None:
        tools: dict[str, types.Tool] = {}
        cursor = None
        with anyio.fail_after(max(self.config.timeout_seconds, CONNECT_WAIT_SECONDS) + 1):
            for _ in range(100):  # pages: a bound against an upstream that never stops paginating
                page = await client.list_tools(cursor=cursor)
                for tool in page.tools:
                    if self._exposed(tool):
                        tools[tool.name] = tool
                cursor = page.next_cursor
                if cursor is None:
                    break
        if tools.keys() != self.tools.keys() or any(tools[n] != self.tools[n] for n in tools):
            self.tools = MappingProxyType(tools)
            self._on_tools_changed()
        if self._on_listed is not None:
            await self._on_listed(self)

    def _exposed(self, tool: types.Tool) -> bool:
        config = self.config
        if config.tools is not None and tool.name not in config.tools:
            return False
        if not is_tool_name(f"{config.prefix}{TOOL_SEPARATOR}{tool.name}"):
            logger.warning("Upstream %s: a tool name outside MCP's tool-name rules is not served", config.name)
            return False
        try:
            Draft202012Validator.check_schema(tool.input_schema)
        except SchemaError:
            logger.warning("Upstream %s: tool %s has an invalid input schema; not served", config.name, tool.name)
            return False
        return tool.input_schema.get("type") == "object"

    def health(self) -> HealthReport:
        """This connection's state, as the process reports it for admin (``Gateway._report_health``)."""
        at = self.last_failure_at
        return HealthReport(
            upstream=self.config.name,
            state=self.state,
            protocol_version=self.protocol_version or "",
            tool_count=len(self.tools),
            circuit=self.breaker.state,
            last_failure=self.last_failure,
            last_failure_at=datetime.fromtimestamp(at, tz=UTC) if at is not None else None,
        )

    def note_failure(self, exc: BaseException, when: str) -> None:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the transports' task groups wrap the cause
            exc = exc.exceptions[0]
        if isinstance(exc, UpstreamError):
            detail = exc.detail
        elif isinstance(exc, TimeoutError):
            detail = f"no answer within {self.config.timeout_seconds:g} s"
        elif isinstance(exc, MCPError):  # a JSON-RPC error: the upstream's, or the transport's (a failed POST)
            detail = exc.message or f"JSON-RPC error {exc.code}"
        else:
            detail = f"{type(exc).__name__}: {exc}"
        text = redacted_for_people(detail, known=self._secrets)
        shown = failure_for_staff(exc, self.config.timeout_seconds)
        # An upstream that stays down fails the same way at every attempt: said once, then again when it changes.
        repeated = self.state == "down" and shown == self.last_failure
        self.last_failure = shown
        self.last_failure_at = time.time()
        log = logger.debug if repeated else logger.warning
        log("Upstream %s failed while %s: %s", self.config.name, when, text)

    # --- Calls --------------------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> Result:
        """Forward a call that came through no pipeline (a check, a test): nobody to ask, nothing relayed."""
        return await self.forward(ForwardedCall(self, tool, arguments))

    async def forward(self, call: ForwardedCall) -> Result:
        """The relays' last link (``relays``): ``call`` to the upstream; its result when the upstream's tool
        succeeded, else an ``UpstreamError``.

        The call's timeout includes the time its user takes to answer what the upstream asks. ``call.round_trip``:
        our client speaks 2026-07-28 and answers input requests, so a 2026-07-28 upstream's come back as our own
        ``InputRequiredResult`` for the client to answer, and the answers in the client's next call go back to the
        upstream with the upstream's state (``round_trip.round_trip_call``). ``call.progress``: the upstream is asked
        for progress, and its notifications are relayed (``progress``). A call whose task is cancelled (our client
        cancelled it, or went away) is cancelled upstream by the SDK client and frees its slot. ``call.session_id``
        is our 2025-11-25 session's, whose calls go over an upstream session of its own where the upstream has them
        (``client_sessions``); ``call.log`` is where the upstream's log messages for the call go, and at which level
        (``log_relay``).
        """
        name = self.config.name
        tool = call.tool
        wait = self.breaker.refusal()
        if wait is not None:
            raise UpstreamUnavailable(name, "circuit open", retry_after=max(1, round(wait)))
        with forwarding(call), _Classified(self, tool):
            async with asyncio.timeout(self.config.timeout_seconds), self.limiter:
                own = self._own_key(call.session_id)
                if own is None:
                    client = await self.client_for()
                    poster = self._poster
                    self.in_flight += 1
                    self._calls.append(call)
                    try:
                        result = await self._forward(client, poster, call)
                    finally:
                        self.in_flight -= 1
                        self._calls.remove(call)
                else:
                    result = await self._call_own(*own, call)
        self.breaker.succeeded()
        if isinstance(result, types.InputRequiredResult):
            return result
        if result.is_error:
            raise UpstreamToolError(
                name,
                result_text(result),
                tool=tool,
                secrets=self._secrets,
                code=envelope_code(result),
                words=self.config.failure_words,
            )
        return without_protocol_meta(result)

    async def request[T](
        self, what: str, send: Callable[[Client], Awaitable[T]], *, channel: str = notices.SHARED, hold: int = 0
    ) -> T:
        """One request other than a tool call (a resource read, a prompt, a completion, a subscription: ``offerings``),
        sent by ``send`` over the shared session or, for ``channel`` a client's own (``own_channel``), that one
        (opened on first use), within the upstream's circuit breaker, concurrency limit and timeout; every way it
        fails is an ``UpstreamError``, classified exactly as a call's failure is. ``hold`` counts the subscriptions
        the request adds to (or, negative, takes from) the own session: one that holds any is not closed as idle."""
        wait = self.breaker.refusal()
        if wait is not None:
            raise UpstreamUnavailable(self.config.name, "circuit open", retry_after=max(1, round(wait)))
        with _Classified(self, what):
            async with asyncio.timeout(self.config.timeout_seconds), self.limiter:
                if channel == notices.SHARED:
                    client = await self.client_for()
                    self.in_flight += 1
                    try:
                        result = await send(client)
                    finally:
                        self.in_flight -= 1
                else:
                    async with self.own_sessions.use(channel) as own:
                        _own_session.set(own)
                        assert own.client is not None
                        self.in_flight += 1
                        try:
                            result = await send(own.client)
                        finally:
                            self.in_flight -= 1
                        own.holds = max(0, own.holds + hold)
        self.breaker.succeeded()
        return result

    async def client_for(self) -> Client:
        """The SDK client a request goes to the upstream over: the process's one session, waited for while it
        connects."""
        return await self._client_or_wait()

    def _classified(self, exc: BaseException, what: str) -> BaseException | None:
        """Every way a request to the upstream can fail, as the ``UpstreamError`` the catalog's rules classify (None:
        ``exc`` goes on as it is); the circuit breaker and the connection's health are told as they go."""
        name = self.config.name
        if isinstance(exc, TimeoutError):
            self.breaker.failed()
            return self._noted(UpstreamTimeout(name, f"no answer from {what} within {self.config.timeout_seconds:g} s"))
        if isinstance(exc, MCPError):
            return self._jsonrpc_failure(exc)
        if isinstance(exc, UpstreamConnectionError):
            self.breaker.failed()
            return None
        if isinstance(exc, ValidationError | ValueError):  # the answer is not MCP (pydantic, JSON)
            self.breaker.succeeded()  # it answered: the transport works
            return self._noted(UpstreamProtocolError(name, exc, secrets=self._secrets))
        if isinstance(exc, OSError | httpx2.TransportError | anyio.BrokenResourceError | anyio.ClosedResourceError):
            self._connection_lost()
            return self._noted(UpstreamConnectionError(name, exc, secrets=self._secrets))
        return None

    def _own_key(self, session_id: str | None) -> tuple[str, bool] | None:
        """The key of the call's own upstream session and whether it serves this request only; None: the shared
        session (``client_sessions`` says which calls get one)."""
        config = self.config
        if shares_child(config):
            return None
        if session_id is not None:
            return session_id, False
        version = self.protocol_version
        if version is not None and version not in MODERN_PROTOCOL_VERSIONS:  # a stateful upstream
            return one_request_key(), True
        return None

    async def _call_own(self, key: str, one_request: bool, call: ForwardedCall) -> Result:
        """Forward over the client's own session (opened on first use)."""
        async with self.own_sessions.use(key, one_request=one_request) as own:
            client = own.client
            assert client is not None
            _own_session.set(own)  # until ``forward`` has classified the call's failure (``_Classified``)
            self.in_flight += 1
            own.calls.append(call)
            own.log = call.log
            try:
                await self._forward_level(own, client, call.log)
                return await self._forward(client, self._poster, call)
            finally:
                self.in_flight -= 1
                own.calls.remove(call)

    async def _forward_level(self, own: OwnSession, client: Client, log: LogSink | None) -> None:
        """The level our client set, sent to its own 2025-11-25 upstream session with ``logging/setLevel`` when it
        changed (a 2026-07-28 upstream is told on each request instead). An upstream that does not log refuses it:
        the call goes on."""
        level = log.level if log is not None and log.level_set else None
        if level is None or level == own.level_sent or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        own.level_sent = level
        try:
            await client.session.set_logging_level(level)  # type: ignore[arg-type]
        except MCPError as exc:
            logger.debug("Upstream %s refused a log level (JSON-RPC error %s)", self.config.name, exc.code)

    async def forward_level(self, session_id: str, log: LogSink) -> None:
        """Our session ``session_id`` set a level: its open upstream session is told at once (see
        ``_forward_level``); one that opens later is told before its first call."""
        own = self.own_sessions.get(session_id)
        client = own.client if own is not None else None
        if own is None or client is None:
            return
        with anyio.move_on_after(self.config.timeout_seconds):
            try:
                await self._forward_level(own, client, log)
            except Exception as exc:  # the session is broken: its next call finds out and opens another
                logger.debug("Upstream %s: a log level was not forwarded (%s)", self.config.name, type(exc).__name__)

    async def _forward(self, client: Client, poster: aiohttp.ClientSession | None, call: ForwardedCall) -> Result:
        """The one place a forwarded call goes to the upstream, by one of three ways; the relays' parts that belong
        to the transport (a progress callback, a log level, cancellation) plug in here, on each way.

        A 2026-07-28 call whose input requests our client answers goes round trip by round trip
        (``round_trip.round_trip_call``); another 2026-07-28 call over HTTP is posted beside the SDK's session
        (``mcpserver.sdk_internals.poster``, when the SDK's fast paths are on); everything else is the SDK client's
        ``call_tool``, which is also how a call that relays progress or log messages goes (the poster reads no
        notifications). A 2026-07-28 upstream is asked for log messages at the client's level on the call's ``_meta``
        (``log_relay``).
        """
        tool, arguments, log = call.tool, call.arguments, call.log
        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        progress = call.progress
        relay = relaying_progress(progress, upstream=self.config.name, secrets=self._secrets) if progress else None
        meta = {types.LOG_LEVEL_META_KEY: log.level} if log is not None and modern else None
        if call.round_trip is not None and modern:
            return await round_trip_call(
                client, self.config.name, tool, arguments, call.round_trip, self._secrets, progress=relay, meta=meta
            )
        if meta is not None:
            return await client.call_tool(tool, arguments, progress_callback=relay, meta=meta)  # type: ignore[arg-type]
        if relay is not None:
            return await client.call_tool(tool, arguments, progress_callback=relay)
        if poster is not None and modern:
            request_id = f"errcatalog-{next(self._request_ids)}"
            return await post_tool_call(client, poster, self.config.url, request_id, tool, arguments)
        return await client.call_tool(tool, arguments)

    async def _client_or_wait(self) -> Client:
        client = self._client
        # A connection under way (at start, or again after a drop) is worth waiting for; one that failed its last
        # attempt is not: the call fails at once, and the supervisor keeps trying with its backoff.
        if client is None and self.state == "connecting":
            with anyio.move_on_after(CONNECT_WAIT_SECONDS):
                await self._settled.wait()
            client = self._client
        if client is None:
            raise UpstreamConnectionError(self.config.name, self.last_failure or "not connected")
        return client

    def _connection_lost(self) -> None:
        self.breaker.failed()
        own = _own_session.get()
        if own is not None:  # the client's own session broke: its next call opens another
            own.close()
            return
        self._detach()
        self._wake.set()

    def _detach(self) -> None:
        """Stop handing out the current session: calls from now on wait for the supervisor's next one
        (``_client_or_wait``) rather than use one that is closing."""
        self._client = None
        if self._settled.is_set():
            self._settled = anyio.Event()
        self.state = "connecting"
        self._lost = True

    def _noted(self, error: UpstreamError) -> UpstreamError:
        """Keep a call's failure of the upstream itself (not of its tool) as the connection's last, for its health."""
        self.last_failure, self.last_failure_at = error.for_staff, time.time()
        return error

    def _jsonrpc_failure(self, exc: MCPError) -> UpstreamError:
        error = self._classified_jsonrpc_failure(exc)
        return error if isinstance(error, UpstreamJsonRpcError) else self._noted(error)

    def _classified_jsonrpc_failure(self, exc: MCPError) -> UpstreamError:
        name, data = self.config.name, exc.data
        if isinstance(data, dict) and data.get(TRANSPORT_KEY):
            self._connection_lost()
            return UpstreamConnectionError(name, exc.message, secrets=self._secrets, cause=known_kind(data))
        status = data.get(STATUS_KEY) if isinstance(data, dict) else None
        if isinstance(status, int):
            if status == 404:  # the upstream forgot our session (it restarted): connect again
                self._connection_lost()
                return UpstreamConnectionError(name, "HTTP 404: session gone", status_code=status)
            if status >= 500:
                self.breaker.failed()
            else:
                self.breaker.succeeded()
            return UpstreamHttpError(
                name, f"HTTP {status}", status_code=status, retry_after=data.get("retryAfter") if data else None
            )
        if exc.code in CONNECTION_CODES:
            self._connection_lost()
            return UpstreamConnectionError(name, exc.message, secrets=self._secrets)
        if exc.message in SESSION_GONE:  # the upstream forgot our session (it restarted): connect again
            self._connection_lost()
            return UpstreamConnectionError(name, "session gone")
        self.breaker.succeeded()
        if exc.message.startswith(SDK_CLIENT_UNREADABLE_ANSWER):
            # The SDK's client stands in for an answer it could not read: not the upstream's JSON-RPC error (whose
            # catalog text would tell the model that its own request was malformed) but an answer that is not MCP.
            return UpstreamProtocolError(name, exc.message, secrets=self._secrets)
        if exc.code == types.URL_ELICITATION_REQUIRED:  # its URLs, for a client that can open them (``elicitation``)
            own = _own_session.get()  # the call's own upstream session, where their completions will come
            channel = own.key if own is not None else notices.SHARED
            return UrlElicitationRequired(name, exc.data, exc.message, secrets=self._secrets, channel=channel)
        return UpstreamJsonRpcError(
            name,
            f"{exc.code}: {exc.message}",
            said=exc.message,
            secrets=self._secrets,
            jsonrpc_code=exc.code,
            words=self.config.failure_words,
        )
