"""Logging relayed: an upstream's ``notifications/message`` to the client it belongs to, at that client's level.

Log messages are the upstream's text meant for people (a client shows them in a log pane; no model reads them), so
they are relayed cut and with credentials redacted, like progress and elicitation messages: every string of the
message's ``data`` (and its keys) through ``redacted_for_people``, the structure bounded in depth, width and total
size. The ``logger`` is the upstream's name, followed by the upstream's own logger name when it gives one
(``upstream/logger``), so that a client can tell which upstream spoke.

Where a message goes and at which level:

- **2025-11-25 client sessions** set their level with ``logging/setLevel`` (``client_log_level``); it is kept per
  session here (``ClientLog``) and forwarded to that session's own upstream sessions (``client_sessions``), so one
  client's level never changes another's. A session that set no level gets ``DEFAULT_LEVEL`` and above (the spec
  leaves the choice to the server). A message goes to the client's call in flight when there is exactly one (related
  to its request), else on the session's own stream. The level, and the session it belongs to, are forgotten when the
  session ends (``client_log_forget``).
- **2026-07-28 requests** opt in per request (``_meta`` ``io.modelcontextprotocol/logLevel``, ``ToolCall.log_level``):
  the level goes on the forwarded request's ``_meta`` and the messages go back on the client's request
  (``RequestLog``); without the opt-in nothing is asked of the upstream and nothing is sent.

A message below the client's level is not relayed, whatever the upstream sends.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args

import mcp_types as types

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.safety import redacted_for_people

logger = logging.getLogger("mcpserver.gateway")

LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)  # least severe first (RFC 5424's order)
# What a 2025-11-25 client session that never set a level gets.
DEFAULT_LEVEL = "info"
# A relayed message's bounds: each string, each key, the logger name, the nesting, the items of one container and
# the characters of all strings together.
LOG_STRING_MAX_CHARS = 2000
LOG_KEY_MAX_CHARS = 100
LOG_LOGGER_MAX_CHARS = 100
LOG_MAX_DEPTH = 4
LOG_MAX_ITEMS = 50
LOG_MAX_TOTAL_CHARS = 8000
# 2025-11-25 sessions whose level this process keeps (each forgotten when its session ends).
MAX_CLIENT_LOGS = 10_000
ELIDED = "…"


class LogSender(Protocol):
    """How a call sends a log message to its client (``ToolContext.log``)."""

    async def log(self, level: str, data: Any, *, logger: str | None = None, related: bool = True) -> None: ...


class LogSink(Protocol):
    """Where one call's upstream log messages go, and from which level."""

    @property
    def level(self) -> str: ...

    @property
    def level_set(self) -> bool:
        """Whether the client chose the level (else it is ``DEFAULT_LEVEL``, not forwarded with setLevel)."""

    async def send(self, level: str, data: Any, logger: str | None) -> None: ...


def severe_enough(level: str, least: str) -> bool:
    """Whether ``level`` is ``least`` or more severe; an unknown level is never."""
    return level in LEVELS and LEVELS.index(level) >= LEVELS.index(least)


@dataclass(eq=False)
class ClientLog:
    """A 2025-11-25 client session's level and its calls in flight (their senders)."""

    level: str = DEFAULT_LEVEL
    level_set: bool = False
    calls: list[LogSender] = field(default_factory=list)
    last: LogSender | None = None  # the latest call's: its session's own stream outlives the call

    async def send(self, level: str, data: Any, logger: str | None) -> None:
        if len(self.calls) == 1:
            await self.calls[0].log(level, data, logger=logger)
        elif self.last is not None:
            await self.last.log(level, data, logger=logger, related=False)


@dataclass(eq=False)
class RequestLog:
    """A 2026-07-28 request that opted in to logging: its messages go back on the request."""

    sender: LogSender
    level: str
    level_set: bool = True

    async def send(self, level: str, data: Any, logger: str | None) -> None:
        await self.sender.log(level, data, logger=logger)


_client_logs: BoundedCache[str, ClientLog] = process_cache(
    "mcpserver.gateway.log_relay", scope="process", max_entries=MAX_CLIENT_LOGS
)


def client_log(session_id: str) -> ClientLog:
    """The log account of our 2025-11-25 session ``session_id`` (made on first use)."""
    known = _client_logs.get(session_id)
    if known is None:
        known = ClientLog()
        _client_logs.set(session_id, known)
    return known


def client_log_level(session_id: str, level: str) -> None:
    """``logging/setLevel`` of our session ``session_id``."""
    account = client_log(session_id)
    account.level, account.level_set = level, True


def client_log_forget(session_id: str) -> None:
    """Our session ``session_id`` ended."""
    _client_logs.pop(session_id)


class call_logging:  # lower case: used as a function, ``with call_logging(...) as sink``
    """The sink of one forwarded call's upstream log messages: its 2025-11-25 session's account (the call counted in
    flight meanwhile), its 2026-07-28 request when it opted in, else None (nothing is relayed). A class, not a
    generator: it is on every call's path."""

    __slots__ = ("_account", "_sender", "_sink")

    def __init__(self, session_id: str | None, sender: LogSender | None, request_level: str | None) -> None:
        self._account: ClientLog | None = None
        self._sender = sender
        self._sink: LogSink | None
        if session_id is None or sender is None:
            self._sink = RequestLog(sender, request_level) if sender is not None and request_level in LEVELS else None
        else:
            self._account = self._sink = client_log(session_id)

    def __enter__(self) -> LogSink | None:
        account = self._account
        if account is not None and self._sender is not None:
            account.calls.append(self._sender)
            account.last = self._sender
        return self._sink

    def __exit__(self, *exc: object) -> None:
        account = self._account
        if account is not None and self._sender is not None:
            account.calls.remove(self._sender)


async def relay_log(
    params: types.LoggingMessageNotificationParams, sink: LogSink | None, *, upstream: str, secrets: Sequence[str]
) -> None:
    """One upstream log message to ``sink``, cut and redacted; dropped below the sink's level or without a sink. A
    client that went away costs the upstream's session nothing."""
    if sink is None or not severe_enough(params.level, sink.level):
        return
    name = upstream
    if params.logger:
        name = f"{upstream}/{redacted_for_people(params.logger, known=secrets, limit=LOG_LOGGER_MAX_CHARS)}"
    try:
        await sink.send(params.level, bounded(params.data, secrets), name)
    except Exception as exc:
        logger.debug("Upstream %s: a log message was not relayed (%s)", upstream, type(exc).__name__)


def bounded(data: Any, secrets: Sequence[str]) -> Any:
    """A message's ``data`` as people may see it: strings redacted and cut, containers cut to ``LOG_MAX_ITEMS`` and
    ``LOG_MAX_DEPTH``, all strings together at most ``LOG_MAX_TOTAL_CHARS``. Read without recursion."""
    budget = [LOG_MAX_TOTAL_CHARS]

    def text(value: object, limit: int) -> str:
        if budget[0] <= 0:
            return ELIDED
        shown = redacted_for_people(value, known=secrets, limit=max(1, min(limit, budget[0])))
        budget[0] -= len(shown)
        return shown

    def leaf(value: Any, depth: int) -> tuple[Any, bool]:
        """The value itself when it is a scalar, else a new empty container to fill (True)."""
        if value is None or isinstance(value, bool | int | float):
            return value, False
        if isinstance(value, str):
            return text(value, LOG_STRING_MAX_CHARS), False
        if isinstance(value, dict | list | tuple):
            if depth >= LOG_MAX_DEPTH:
                return ELIDED, False
            return ({} if isinstance(value, dict) else []), True
        return text(value, LOG_STRING_MAX_CHARS), False

    root, fill = leaf(data, 0)
    pending: list[tuple[Any, Any, int]] = [(data, root, 0)] if fill else []
    while pending:
        source, target, depth = pending.pop()
        items = list(source.items()) if isinstance(source, dict) else list(enumerate(source))
        for position, (key, value) in enumerate(items):
            if position >= LOG_MAX_ITEMS:
                if isinstance(target, dict):
                    target[ELIDED] = f"{len(items) - LOG_MAX_ITEMS} more"
                else:
                    target.append(f"{ELIDED} {len(items) - LOG_MAX_ITEMS} more")
                break
            shown, more = leaf(value, depth + 1)
            if isinstance(target, dict):
                target[text(key, LOG_KEY_MAX_CHARS)] = shown
            else:
                target.append(shown)
            if more:
                pending.append((value, shown, depth + 1))
    return root
