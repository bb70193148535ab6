"""One upstream, connected: a client session kept open by a supervisor task, its tools, its limits.

``UpstreamConnection.run`` is the supervisor: it connects (Streamable HTTP, or a child process over stdio), lists
the upstream's tools, keeps them fresh (on a 2025-11-25 session's ``notifications/tools/list_changed``, on the
tool changes of a 2026-07-28 upstream's ``subscriptions/listen`` stream, and on a timer) and reconnects with
a growing backoff when the connection drops or the process dies; a stdio child is replaced after its lifetime
and stopped when the server stops. ``UpstreamConnection.call`` forwards one call from any task over the shared
session, within the upstream's concurrency limit, timeout and circuit breaker, and turns every way it can fail
into an ``UpstreamError`` (``mcpserver.gateway.failures``).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import threading
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import anyio
import httpx2
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types.methods import validate_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from errcatalog.gateway.models import TOOL_SEPARATOR, Transport
from errcatalog.gateway.secrets import SecretUnavailable, resolve
from errcatalog.gateway.selectors import UpstreamConfig
from errcatalog.gateway.services import HealthReport
from errcatalog.safety import redacted_for_people
from errcatalog.vocabulary import is_tool_name
from mcpserver.gateway.failures import (
    UpstreamConnectionError,
    UpstreamError,
    UpstreamHttpError,
    UpstreamJsonRpcError,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamToolError,
    UpstreamUnavailable,
)
from mcpserver.registry import ClientCannotAnswer, UserAnswer

logger = logging.getLogger("mcpserver.gateway")

# Keys of the JSON-RPC error data a failed POST is answered with (``_FailureKeepingTransport``, ``_post_call``): the
# HTTP error status, or that the request never got an answer (refused, cut off).
_STATUS_KEY = "errcatalogHttpStatus"
_TRANSPORT_KEY = "errcatalogTransportFailed"
_KIND_KEY = "errcatalogFailureClass"
# How the SDK's client (mcp 2.3, streamable_http.py) words the errors it makes up for an answer it cannot read.
_SDK_GARBAGE_MESSAGES = ("Failed to parse JSON response", "Failed to parse SSE message", "Unexpected content type")
# JSON-RPC codes of the SDK's own making that mean the connection is gone rather than the call refused.
_CONNECTION_CODES = frozenset({types.CONNECTION_CLOSED})
# How long a call waits for a first connection that is under way (at start, or after a drop) before it fails.
CONNECT_WAIT_SECONDS = 5.0
# A stdio child's stderr lines logged per minute, at most (``_ChildStderr``).
STDERR_LINES_PER_MINUTE = 120
# The last lines of a stdio child's stderr a failed check shows the operator (``ProbeResult.stderr_tail``), each cut
# to as many characters: enough for a stack trace's end or a "command not found", not a flood.
STDERR_TAIL_LINES = 20
STDERR_LINE_MAX_CHARS = 500
# Variables of our environment every stdio child gets besides the SDK's minimal set: where the machine's trusted
# certificates are (Python's ssl, requests, curl, Node) and which proxy to use, so that a `uvx` or `npx` server
# reaches its registry and its service behind a TLS-inspecting proxy as the rest of the machine does. None of them
# is one of errcatalog's own secrets (those never leave the web process), and the record's own variables win.
STDIO_PASSED_THROUGH_ENV = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
# An elicitation's message as our client's user sees it: the upstream's text, cut and with credentials redacted.
ELICITATION_MESSAGE_MAX_CHARS = 1000

# A progress notification's message as our client's user sees it: the upstream's text, cut and redacted.
PROGRESS_MESSAGE_MAX_CHARS = 500
# How a call reports progress to our client (``ToolContext.progress``, as the SDK client's progress callback).
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
# How a call asks our client's user (``ToolContext.elicit``): message and schema in, ``UserAnswer`` out; it raises
# ``ClientCannotAnswer`` when the client cannot take the request.
Ask = Callable[[str, Mapping[str, Any]], Awaitable[UserAnswer]]
# The asker of the call this task forwards. A 2026-07-28 upstream asks for input in its answer to the call, and the
# SDK's driver hands that request to the elicitation callback in the calling task, so it finds its call here.
_ASKER: ContextVar[_Asker | None] = ContextVar("upstream_asker", default=None)
# The prefix of ``_meta`` keys the protocol reserves for itself.
_PROTOCOL_META = "io.modelcontextprotocol/"
# A 2026-07-28 upstream's input requests relayed to our client: their keys (prefixed, so that they cannot meet our own
# elicitation's), and bounds on what we carry for the upstream through our client.
RELAY_PREFIX = "upstream:"
RELAY_STATE_VERSION = 1
RELAY_MAX_REQUESTS = 8
RELAY_MAX_STATE = 16384
_RELAY_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
# Catalog envelopes an upstream may answer with (another errcatalog, or a server using the toolError:v1 and
# needsInput:v1 envelopes).
_ENVELOPES = frozenset({"toolError:v1", "needsInput:v1"})


class CircuitBreaker:
    """Closed until ``failures`` transport failures in a row; then open for ``open_seconds`` (every call refused
    at once); then half-open: one call goes through as a probe, and its outcome closes or reopens the circuit."""

    def __init__(self, failures: int, open_seconds: float):
        self.threshold = failures
        self.open_seconds = open_seconds
        self.failures = 0
        self.opened_at: float | None = None
        self.probing = False

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half-open" if time.monotonic() - self.opened_at >= self.open_seconds else "open"

    def refusal(self) -> float | None:
        """Seconds until a call may go through, or None when this call may (and, half-open, is the probe)."""
        if self.opened_at is None:
            return None
        remaining = self.opened_at + self.open_seconds - time.monotonic()
        if remaining > 0:
            return remaining
        if self.probing:
            return self.open_seconds
        self.probing = True
        return None

    def succeeded(self) -> None:
        self.failures = 0
        self.opened_at = None
        self.probing = False

    def failed(self) -> None:
        self.failures += 1
        if self.probing or self.failures >= self.threshold:
            self.opened_at = time.monotonic()
        self.probing = False


class _FailureKeepingTransport(httpx2.AsyncBaseTransport):
    """Makes every failed POST answer its request with a JSON-RPC error that says what happened, and every
    redirect a failure.

    The SDK's transport reports an HTTP error status as a bare INTERNAL_ERROR (this keeps the status and a
    Retry-After in the error's data, for the catalog's status rules), and a POST that fails to connect or is cut
    off ends its writer task without answering the request at all (the call would wait for its timeout; this
    answers it at once as a connection failure). A redirect is never followed (the client does not, and a
    redirect reaching it is answered here as an error without its ``Location``): it would carry the call's
    arguments and the configured headers to an address the upstream chose.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport):
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            response = await self.inner.handle_async_request(request)
            if 300 <= response.status_code < 400:
                await response.aclose()
                return httpx2.Response(502)
            return response
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            data = {_TRANSPORT_KEY: True, _KIND_KEY: type(exc).__name__}
            return _error_response(502, data, f"{type(exc).__name__}: {exc}")
        if response.status_code < 300:
            return response
        if 300 <= response.status_code < 400:
            await response.aclose()
            return _error_response(502, {_STATUS_KEY: response.status_code}, f"HTTP {response.status_code}")
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            return response  # may carry the JSON-RPC error itself, which says more than the status
        await response.aclose()
        data = {_STATUS_KEY: response.status_code, "retryAfter": response.headers.get("retry-after")}
        return _error_response(response.status_code, data, f"HTTP {response.status_code}")

    async def aclose(self) -> None:
        await self.inner.aclose()


def _error_response(status: int, data: dict[str, Any], message: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": types.INTERNAL_ERROR, "message": message, "data": data}}
    return httpx2.Response(status, headers={"content-type": "application/json"}, content=json.dumps(body).encode())


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
        self.limiter = anyio.CapacityLimiter(config.max_concurrency)
        self.in_flight = 0
        self._askers: list[_Asker] = []
        self._client: Client | None = None
        # Posts a Streamable HTTP session's 2026-07-28 calls (``_post_call``).
        self._poster: aiohttp.ClientSession | None = None
        self._request_ids = itertools.count(1)
        self._secrets: tuple[str, ...] = ()
        self._stderr: _ChildStderr | None = None  # the stdio child's stderr, for a failed check
        # Set when the connection attempt under way ended, connected or not; calls that arrive meanwhile wait on it.
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._wake = anyio.Event()
        self._lost = False
        self._refresh = False

    # --- Supervisor ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, serve and reconnect until ``stop``."""
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
                    self._note_failure(exc, "connecting")
                    self.state = "down"
                    self._settled.set()
                else:  # the session failed while serving: connect again at once
                    self._note_failure(exc, "serving")
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
        self.state = "stopped"

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    async def _serve(self, client: Client) -> None:
        """Serve the session until it ends; a 2026-07-28 upstream's tool changes are followed meanwhile."""
        async with anyio.create_task_group() as tasks:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                tasks.start_soon(self._follow_tool_changes, client)
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

    async def _open(self, stack: AsyncExitStack) -> Client:
        config = self.config
        try:
            binding = config.binding
            headers = {name: resolve(name, stored, binding=binding) for name, stored in config.headers.items()}
            env = {name: resolve(name, stored, binding=binding) for name, stored in config.env.items()}
        except SecretUnavailable as exc:
            text = f"not configured: {exc}"  # our own words: the value's name and why it cannot be read
            raise UpstreamConnectionError(config.name, text, for_staff=text) from None
        self._secrets = tuple(v for v in (*headers.values(), *env.values()) if v)
        if config.transport == Transport.STDIO:
            # The child gets the SDK's minimal environment (HOME, PATH, SHELL, TERM, USER, LOGNAME), the trust store
            # and proxy variables (``stdio_child_environment``) and the variables the record names; what it writes
            # to stderr is its own text, logged line by line as upstream text is.
            parameters = StdioServerParameters(
                command=config.command, args=list(config.args), env=stdio_child_environment(env), cwd=config.cwd or None
            )
            stderr = self._stderr = _ChildStderr(config.name, self._secrets)
            stack.callback(stderr.close_writer)
            transport: Any = stdio_client(parameters, errlog=stderr.writer)
        else:
            tls = httpx2.create_ssl_context()  # one trust store for both HTTP clients
            http = httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(config.timeout_seconds + 5, read=300),
                transport=_FailureKeepingTransport(httpx2.AsyncHTTPTransport(verify=tls)),
            )
            await stack.enter_async_context(http)
            transport = streamable_http_client(config.url, http_client=http)
            if not _proxied(config.url):
                # The call's own deadline (``call``) bounds it; a proxy from the environment is the SDK client's.
                self._poster = await stack.enter_async_context(
                    aiohttp.ClientSession(
                        headers=headers,
                        timeout=aiohttp.ClientTimeout(total=None),
                        connector=aiohttp.TCPConnector(limit=config.max_concurrency, ssl=tls),
                        trust_env=False,
                    )
                )
        client = Client(
            transport,
            cache=None,
            message_handler=self._on_message,
            elicitation_callback=self._on_elicitation,
            client_info=types.Implementation(name="errcatalog-gateway", version="1"),
            # Bounds the handshake and tool listings (a cancel scope cannot: the session's task group outlives
            # this call); a call's own, shorter deadline is ``call``'s.
            read_timeout_seconds=max(config.timeout_seconds, CONNECT_WAIT_SECONDS) + 1,
        )
        await stack.enter_async_context(client)
        if config.transport == Transport.STDIO:
            stderr.close_writer()  # the child has its own copy; the reader sees the end when the child's closes
        return client

    async def _on_elicitation(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """An upstream asks for input (``elicitation/create``, or a 2026-07-28 input request): relayed to the user
        of the call it belongs to when that call's client can answer, else declined.

        A 2026-07-28 upstream's request is found by its calling task (``_ASKER``). A 2025-11-25 upstream sends
        its request on the session, with nothing the SDK passes on that names the call: it is relayed only while a
        single call is in flight on this connection, and declined when it could belong to several. Only form
        elicitations are relayed (a URL one would send the user to an address the upstream chose).
        """
        asker = _ASKER.get()
        if asker is None and len(self._askers) == 1:
            asker = self._askers[0]
        if asker is None or asker.ask is None or not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        message = redacted_for_people(params.message, known=self._secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
        try:
            answer = await asker.ask(message, dict(params.requested_schema))
        except ClientCannotAnswer:
            return types.ElicitResult(action="decline")
        if answer.action == "accept":
            return types.ElicitResult(action="accept", content=answer.content)
        return types.ElicitResult(action="cancel" if answer.action == "cancel" else "decline")

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):  # a 2025-11-25 session's
            self._tools_changed()

    def _tools_changed(self) -> None:
        self._refresh = True
        self._wake.set()

    async def _follow_tool_changes(self, client: Client) -> None:
        """A 2026-07-28 upstream's ``subscriptions/listen`` stream of tool changes, each one a new listing.

        Every time the stream is acknowledged the tools are listed again (a change between the listing and the
        stream would be missed otherwise). When it drops they are listed at once, which also finds an upstream
        that went away (the listing fails, the supervisor reconnects), and it is opened again after a growing
        pause. An upstream that refuses the stream, or tool changes on it, has its tools re-read on the timer.
        """
        name, pause = self.config.name, self.settings["RECONNECT_MIN_SECONDS"]
        followed = False
        while True:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    if not subscription.honored.tools_list_changed:
                        logger.info("Upstream %s does not report its tool changes; re-read on the timer", name)
                        return
                    followed = True
                    self._tools_changed()
                    pause = self.settings["RECONNECT_MIN_SECONDS"]
                    async for _event in subscription:
                        self._tools_changed()
            except (SubscriptionLost, TimeoutError, OSError, httpx2.HTTPError) as exc:
                logger.debug("Upstream %s: its stream of tool changes ended (%s)", name, _kind(exc))
            except Exception as exc:  # refused (ListenNotSupportedError, MCPError), or an answer the SDK rejects
                # Never the session's end: whatever an upstream sends here, the timer still re-reads its tools. The
                # class only: the upstream's own words are logged redacted, where its failures are (``_note_failure``).
                if not followed:
                    logger.info("Upstream %s: no stream of tool changes (%s); re-read on the timer", name, _kind(exc))
                    return
                logger.debug("Upstream %s: its stream of tool changes failed (%s)", name, _kind(exc))
            self._tools_changed()
            await anyio.sleep(pause)
            pause = min(pause * 2, self.settings["RECONNECT_MAX_SECONDS"])

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

    def _note_failure(self, exc: BaseException, when: str) -> None:
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

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        ask: Ask | None = None,
        round_trip: RoundTrip | None = None,
        progress: Progress | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Forward one call; its result when the upstream's tool succeeded, else an ``UpstreamError``.

        ``ask`` relays an elicitation the upstream makes during the call to our client (``_on_elicitation``);
        without it, one is declined. The call's timeout includes the time the user takes to answer. With
        ``round_trip`` (our client speaks 2026-07-28 and takes forms), a 2026-07-28 upstream's input request comes
        back as our own ``InputRequiredResult`` for the client to answer, and the answer in the client's next call
        goes back to the upstream with the upstream's state (``_round_trip``). With ``progress``, the call asks the
        upstream for progress and relays each notification to it, its message cut and redacted (``_relay_progress``).
        """
        name = self.config.name
        wait = self.breaker.refusal()
        if wait is not None:
            raise UpstreamUnavailable(name, "circuit open", retry_after=max(1, round(wait)))
        asker = _Asker(ask)
        token = _ASKER.set(asker)
        try:
            with anyio.fail_after(self.config.timeout_seconds):
                async with self.limiter:
                    client = await self._client_or_wait()
                    poster = self._poster
                    self.in_flight += 1
                    self._askers.append(asker)
                    try:
                        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
                        if round_trip is not None and modern:
                            result = await self._round_trip(client, tool, arguments, round_trip)
                        elif progress is not None:
                            relay = self._relay_progress(progress)
                            result = await client.call_tool(tool, arguments, progress_callback=relay)
                        elif poster is not None and modern:
                            result = await self._post_call(client, poster, tool, arguments)
                        else:
                            result = await client.call_tool(tool, arguments)
                    finally:
                        self.in_flight -= 1
                        self._askers.remove(asker)
        except TimeoutError:
            self.breaker.failed()
            raise self._noted(
                UpstreamTimeout(name, f"no answer from {tool} within {self.config.timeout_seconds:g} s")
            ) from None
        except MCPError as exc:
            raise self._jsonrpc_failure(exc) from None
        except UpstreamConnectionError:
            self.breaker.failed()
            raise
        except (ValidationError, ValueError) as exc:  # the answer is not MCP (pydantic, JSON)
            self.breaker.succeeded()  # it answered: the transport works
            raise self._noted(UpstreamProtocolError(name, exc, secrets=self._secrets)) from None
        except (OSError, httpx2.TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._connection_lost()
            raise self._noted(UpstreamConnectionError(name, exc, secrets=self._secrets)) from None
        finally:
            _ASKER.reset(token)
        self.breaker.succeeded()
        if isinstance(result, types.InputRequiredResult):
            return result
        if result.is_error:
            raise UpstreamToolError(
                name, _result_text(result), tool=tool, secrets=self._secrets, code=_envelope_code(result)
            )
        if result.meta and any(key.startswith(_PROTOCOL_META) for key in result.meta):
            # The protocol's own metadata (the upstream's server info) describes the upstream's answer, not ours.
            meta = {k: v for k, v in result.meta.items() if not k.startswith(_PROTOCOL_META)}
            result = result.model_copy(update={"meta": meta or None})
        return result

    def _relay_progress(self, progress: Progress) -> Progress:
        """The SDK client's progress callback for one call: each notification to our client's request, its message
        (the upstream's text, meant for people) cut and with credentials redacted. A client that went away meanwhile
        costs the call nothing."""
        secrets = self._secrets

        async def relay(value: float, total: float | None, message: str | None) -> None:
            if message is not None:
                message = redacted_for_people(message, known=secrets, limit=PROGRESS_MESSAGE_MAX_CHARS)
            try:
                await progress(value, total, message)
            except Exception as exc:  # the client's stream is gone: the call goes on, and ends as it ends
                logger.debug("Upstream %s: a progress notification was not relayed (%s)", self.config.name, _kind(exc))

        return relay

    async def _post_call(
        self, client: Client, poster: aiohttp.ClientSession, tool: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """A 2026-07-28 ``tools/call`` over Streamable HTTP, posted with aiohttp beside the SDK's session.

        The SDK's client passes each request through its session, dispatcher, memory streams and a task per POST,
        then through httpx, whose HTTP/1.1 parser is pure Python. A 2026-07-28 call is one self-contained POST, so
        this sends it on an aiohttp session (a C parser; the forwarded call's CPU time went from 2.9 to 1.5 to
        0.9 ms with each step, ``bench/gateway_bench.py``), stamped by the SDK session exactly as it would stamp it
        (``_meta``, ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``), and validates the
        answer as the session would. What only the SDK handles goes to ``client.call_tool``: an input request (its
        driver answers it) and a ``HEADER_MISMATCH`` (it lists the tools again and sends once more).
        """
        session = client.session
        data = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments)).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        options: dict[str, Any] = {}
        session._stamp(data, options)  # type: ignore[arg-type]  # the SDK's own per-request stamp
        request_id = f"errcatalog-{next(self._request_ids)}"
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, **data}, separators=(",", ":"))
        headers = {**_POST_HEADERS, **options.get("headers", {})}
        try:
            # Never a redirect: it would carry the arguments and the configured headers where the upstream chose.
            async with poster.post(self.config.url, data=body, headers=headers, allow_redirects=False) as response:
                message = await _answer_to(response, request_id)
        except aiohttp.ClientError as exc:  # refused, cut off, not HTTP: as ``_FailureKeepingTransport`` says it
            data = {_TRANSPORT_KEY: True, _KIND_KEY: type(exc).__name__}
            raise MCPError(types.CONNECTION_CLOSED, f"{type(exc).__name__}: {exc}", data) from None
        except RuntimeError as exc:  # aiohttp's "Session is closed": the session ended meanwhile
            raise anyio.ClosedResourceError from exc
        error = message.get("error")
        if error is not None:
            if not isinstance(error, dict) or not isinstance(error.get("code"), int):
                raise ValueError("a JSON-RPC error without a code")
            if error["code"] == types.HEADER_MISMATCH:
                return await client.call_tool(tool, arguments)
            raise MCPError(error["code"], str(error.get("message") or ""), error.get("data"))
        raw = message.get("result")
        if not isinstance(raw, dict):
            raise ValueError("a JSON-RPC response without a result")
        if raw.get("resultType") == "input_required":
            return await client.call_tool(tool, arguments)
        validate_server_result("tools/call", client.protocol_version, raw)
        result = types.CallToolResult.model_validate(raw, by_name=False)
        if not result.is_error:
            await session.validate_tool_result(tool, result)
        return result

    async def _round_trip(
        self, client: Client, tool: str, arguments: dict[str, Any], round_trip: RoundTrip
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One round of a 2026-07-28 call whose input requests our client answers (see ``call``)."""
        upstream_state, responses = round_trip.answers_for(self.config.name, tool)
        result = await client.session.call_tool(
            tool, arguments, input_responses=responses, request_state=upstream_state, allow_input_required=True
        )
        if not isinstance(result, types.InputRequiredResult):
            return result  # a claimed result shape raises (allow_claimed is off)
        relayed = self._relayed(tool, result)
        if relayed is None:  # not form elicitations only: the SDK's driver answers them (a decline) as without
            return await client.call_tool(tool, arguments)
        return relayed

    def _relayed(self, tool: str, result: types.InputRequiredResult) -> types.InputRequiredResult | None:
        """The upstream's input requests as ours: form elicitations only, their messages cut and redacted, the
        upstream's state kept in ours (which the SDK seals before it reaches the client)."""
        requests = result.input_requests or {}
        state = result.request_state
        if not requests or len(requests) > RELAY_MAX_REQUESTS or (state is not None and len(state) > RELAY_MAX_STATE):
            return None
        ours: dict[str, types.CreateMessageRequest | types.ListRootsRequest | types.ElicitRequest] = {}
        for key, request in requests.items():
            params = getattr(request, "params", None)
            if not isinstance(params, types.ElicitRequestFormParams) or not _RELAY_KEY.fullmatch(key):
                return None
            message = redacted_for_people(params.message, known=self._secrets, limit=ELICITATION_MESSAGE_MAX_CHARS)
            ours[RELAY_PREFIX + key] = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=params.requested_schema)
            )
        relay = {"upstream": self.config.name, "tool": tool, "state": state, "keys": sorted(requests)}
        return types.InputRequiredResult(
            input_requests=ours, request_state=json.dumps({"v": RELAY_STATE_VERSION, "relay": relay})
        )

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
        if isinstance(data, dict) and data.get(_TRANSPORT_KEY):
            self._connection_lost()
            return UpstreamConnectionError(name, exc.message, secrets=self._secrets, cause=_known_kind(data))
        status = data.get(_STATUS_KEY) if isinstance(data, dict) else None
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
        if exc.code in _CONNECTION_CODES:
            self._connection_lost()
            return UpstreamConnectionError(name, exc.message, secrets=self._secrets)
        self.breaker.succeeded()
        if exc.message.startswith(_SDK_GARBAGE_MESSAGES):
            # The SDK's client stands in for an answer it could not read: not the upstream's JSON-RPC error (whose
            # catalog text would tell the model that its own request was malformed) but an answer that is not MCP.
            return UpstreamProtocolError(name, exc.message, secrets=self._secrets)
        return UpstreamJsonRpcError(
            name, f"{exc.code}: {exc.message}", said=exc.message, secrets=self._secrets, jsonrpc_code=exc.code
        )


# What every POST of a Streamable HTTP client sends (the SDK's transport sends the same).
_POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# An SSE answer's events are read until the response; a bound against a stream of notifications that never ends.
_MAX_SSE_EVENTS = 10_000
# A JSON answer larger than this is not read (a tool's result, images included, is far smaller).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


async def _answer_to(response: aiohttp.ClientResponse, request_id: str) -> dict[str, Any]:
    """The JSON-RPC response to ``request_id`` in a POST's answer: a JSON body or an SSE stream.

    Raises ``MCPError`` for an HTTP error status without a JSON body (with the status and Retry-After in its data,
    as ``_FailureKeepingTransport`` reports it) or a stream that ends without the response, ``ValueError`` for an
    answer that is not MCP.
    """
    content_type = response.headers.get("content-type", "").lower()
    status = response.status
    if 300 <= status < 400:  # a redirect, not followed (``_post_call``): a failure, whatever its body says
        raise MCPError(types.INTERNAL_ERROR, f"HTTP {status}", {_STATUS_KEY: status})
    if content_type.startswith("application/json"):  # may be a JSON-RPC error, which says more than the status
        message = json.loads(await _body(response))
        if not isinstance(message, dict):
            raise ValueError("a JSON answer that is not a JSON-RPC message")
        return message
    if status >= 400:
        data = {_STATUS_KEY: status, "retryAfter": response.headers.get("retry-after")}
        raise MCPError(types.INTERNAL_ERROR, f"HTTP {status}", data)
    if status >= 300 or not content_type.startswith("text/event-stream"):
        raise ValueError(f"Unexpected content type: {content_type or '(none)'} (HTTP {status})")
    events = 0
    stream = httpx2.Response(status, headers=dict(response.headers), stream=_Chunks(response))
    async for event in httpx2.EventSource(stream):  # the SDK's own SSE parser, over aiohttp's body
        events += 1
        if events > _MAX_SSE_EVENTS:
            break
        if not event.data:
            continue
        message = json.loads(event.data)  # notifications (progress, logging) are passed over
        if isinstance(message, dict) and message.get("id") == request_id and message.keys() & {"result", "error"}:
            return message
    raise MCPError(types.CONNECTION_CLOSED, "SSE stream ended without a response")


async def _body(response: aiohttp.ClientResponse) -> bytes:
    if (response.content_length or 0) > MAX_ANSWER_BYTES:
        raise ValueError(f"an answer of more than {MAX_ANSWER_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ValueError(f"an answer of more than {MAX_ANSWER_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class _Chunks(httpx2.AsyncByteStream):
    """An aiohttp response's body as httpx reads one."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.response.content.iter_any():
            yield chunk


def _kind(exc: BaseException) -> str:
    return type(exc).__name__


def _is_exception_class(module: Any, name: object) -> bool:
    found = getattr(module, name, None) if isinstance(name, str) and name.isidentifier() else None
    return isinstance(found, type) and issubclass(found, Exception)


def _known_kind(data: Mapping[str, Any]) -> str:
    """The class of a transport failure our HTTP clients reported in a JSON-RPC error's data; empty for anything
    else, such as an upstream's own error data that claims to be one."""
    kind = data.get(_KIND_KEY)
    return kind if _is_exception_class(httpx2, kind) or _is_exception_class(aiohttp, kind) else ""  # type: ignore[return-value]


def failure_for_staff(exc: BaseException, timeout_seconds: float) -> str:
    """How a failure to connect or to list tools is shown to staff (health, connection test, ``upstreams``): the
    kind of failure in fixed words, the class of its cause, an HTTP status or JSON-RPC code, never the upstream's
    own text (a pydantic error would quote the answer back, ``input_value=...``)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the transports' task groups wrap the cause
        exc = exc.exceptions[0]
    if isinstance(exc, UpstreamError):
        return exc.for_staff
    if isinstance(exc, TimeoutError):
        return f"TimeoutError: no answer within {timeout_seconds:g} s"
    if isinstance(exc, MCPError):
        data = exc.data if isinstance(exc.data, dict) else {}
        if data.get(_TRANSPORT_KEY):
            return f"{_known_kind(data) or 'TransportError'}: the connection failed"
        status = data.get(_STATUS_KEY)
        if isinstance(status, int) and not isinstance(status, bool):
            return f"an HTTP error status (HTTP {status})"
        if exc.code in _CONNECTION_CODES:
            return "the connection was closed"
        if exc.message.startswith(_SDK_GARBAGE_MESSAGES):
            return "an answer that is not valid MCP"
        return f"a JSON-RPC error (JSON-RPC error {exc.code})"
    if isinstance(exc, ValidationError):
        return f"ValidationError: an answer that is not valid MCP ({exc.error_count()} errors)"
    if isinstance(exc, ValueError):
        return f"{_kind(exc)}: an answer that is not valid MCP"
    if isinstance(exc, (OSError, httpx2.TransportError, aiohttp.ClientError)):
        return f"{_kind(exc)}: the connection failed"
    return f"{_kind(exc)}: the upstream failed"


def stdio_child_environment(record_env: Mapping[str, str]) -> dict[str, str]:
    """The variables a stdio child gets on top of the SDK's minimal set: those of ``STDIO_PASSED_THROUGH_ENV`` that
    our environment sets, then the record's own (``record_env``, resolved), which win."""
    passed = {name: os.environ[name] for name in STDIO_PASSED_THROUGH_ENV if os.environ.get(name)}
    return passed | dict(record_env)


def _proxied(url: str) -> bool:
    """Whether the environment sends requests to ``url`` through a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``, less ``NO_PROXY``), as the SDK's httpx client reads it."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


def _result_text(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(texts) or "(no text)"


def _envelope_code(result: types.CallToolResult) -> str | None:
    """The catalog code of a ``toolError:v1``/``needsInput:v1`` envelope in the result, if it carries one.

    Only the code is taken (the catalog renders its own text for it), and only if it is a code name.
    """
    candidates: list[Any] = [result.structured_content]
    for block in result.content:
        if isinstance(block, types.TextContent) and block.text.lstrip().startswith("{") and len(block.text) < 65536:
            try:
                candidates.append(json.loads(block.text))
            except ValueError:
                continue
    for candidate in candidates:
        if isinstance(candidate, dict) and candidate.get("kind") in _ENVELOPES:
            code = candidate.get("code")
            if isinstance(code, str) and code.isupper() and code.replace("_", "").isalnum() and len(code) <= 64:
                return code
    return None


@dataclass(frozen=True)
class ProbeResult:
    """What connecting to an upstream once showed: for admin's "test connection" and ``manage.py upstreams``."""

    ok: bool
    protocol_version: str | None = None
    tools: tuple[str, ...] = ()
    failure: str = ""  # fixed words for staff (``failure_for_staff``), never the upstream's text
    seconds: float = 0.0
    # A failed stdio child's last stderr lines (cut, credentials redacted): the upstream's own text, for the operator
    # at the server's shell (``manage.py upstreams --check``) only, never for admin's pages or a model.
    stderr_tail: tuple[str, ...] = ()


async def probe(config: UpstreamConfig, settings: Mapping[str, Any]) -> ProbeResult:
    """Connect to the upstream, list the tools it would expose, and disconnect (a stdio child is stopped)."""
    connection = UpstreamConnection(config, settings, lambda: None)
    started = time.perf_counter()
    try:
        with anyio.fail_after(max(config.timeout_seconds, CONNECT_WAIT_SECONDS) + 5):
            async with AsyncExitStack() as stack:
                client = await connection._open(stack)
                await connection._list_tools(client)
                version = client.protocol_version
    except Exception as exc:  # whatever failed is the answer
        connection._note_failure(exc, "being tested")
        seconds = time.perf_counter() - started
        stderr = connection._stderr
        # The child is stopped and our copy of the pipe closed: its reader sees the end once it read the rest.
        tail = await anyio.to_thread.run_sync(stderr.tail) if stderr is not None else ()
        return ProbeResult(False, failure=connection.last_failure, seconds=seconds, stderr_tail=tail)
    return ProbeResult(True, version, tuple(sorted(connection.tools)), seconds=time.perf_counter() - started)


class _ChildStderr:
    """A stdio child's stderr: a pipe whose lines a thread logs as upstream text (cut, credentials redacted), at
    most ``STDERR_LINES_PER_MINUTE`` a minute, so a chatty child cannot flood the log. The last
    ``STDERR_TAIL_LINES`` lines, logged or not, are kept for a failed check (``tail``)."""

    # How long ``tail`` waits for the reader to reach the end of the pipe (the child is already stopped).
    TAIL_WAIT_SECONDS = 2.0

    def __init__(self, upstream: str, secrets: tuple[str, ...]) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._upstream = upstream
        self._secrets = secrets
        self._last: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._thread = threading.Thread(target=self._log_lines, name=f"upstream-{upstream}-stderr", daemon=True)
        self._thread.start()

    def tail(self) -> tuple[str, ...]:
        """The last lines the child wrote, once its stderr ended (or after ``TAIL_WAIT_SECONDS``)."""
        self.close_writer()
        self._thread.join(self.TAIL_WAIT_SECONDS)
        return tuple(self._last)

    def close_writer(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    def _log_lines(self) -> None:
        window, logged, dropped = time.monotonic(), 0, 0
        with self._reader:
            for raw in self._reader:
                line = redacted_for_people(
                    raw.decode("utf-8", "replace").rstrip(), known=self._secrets, limit=STDERR_LINE_MAX_CHARS
                )
                self._last.append(line)
                if time.monotonic() - window >= 60:
                    if dropped:
                        logger.info("Upstream %s stderr: %d more lines not logged", self._upstream, dropped)
                    window, logged, dropped = time.monotonic(), 0, 0
                if logged >= STDERR_LINES_PER_MINUTE:
                    dropped += 1
                    continue
                logged += 1
                logger.info("Upstream %s stderr: %s", self._upstream, line)


@dataclass(frozen=True)
class RoundTrip:
    """What a 2026-07-28 call of ours carries back from an earlier round: its answers and our (unsealed) state."""

    request_state: str | None
    input_responses: Mapping[str, Any] | None

    def answers_for(self, upstream: str, tool: str) -> tuple[str | None, types.InputResponses | None]:
        """The upstream's state and the answers to its input requests, when this call answers a request relayed
        from ``upstream``'s ``tool`` (``UpstreamConnection._relayed``); else (None, None): a first round."""
        try:
            state = json.loads(self.request_state) if self.request_state else None
        except ValueError:
            return None, None
        relay = state.get("relay") if isinstance(state, dict) and state.get("v") == RELAY_STATE_VERSION else None
        if not isinstance(relay, dict) or relay.get("upstream") != upstream or relay.get("tool") != tool:
            return None, None
        answers: dict[str, Any] = {}
        for key in relay.get("keys") or ():
            raw = (self.input_responses or {}).get(f"{RELAY_PREFIX}{key}") if isinstance(key, str) else None
            if raw is None:
                continue
            if not isinstance(raw, Mapping):
                raw = raw.model_dump(by_alias=True, exclude_none=True)
            try:
                answers[key] = types.ElicitResult.model_validate(raw, by_name=False)
            except ValueError:
                continue
        upstream_state = relay.get("state")
        return (upstream_state if isinstance(upstream_state, str) else None), (answers or None)


@dataclass(eq=False)
class _Asker:
    """One forwarded call's way to ask its client's user; ``ask`` is None when the call has none."""

    ask: Ask | None
