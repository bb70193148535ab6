"""The outcome event: what happened to one tool call, with no arguments and no free text.

One event per call, made by the MCP pipeline (or reported by an external MCP server through the REST API). Its
wire form is a small JSON object; the same form travels through the Redis stream, the spool's batch files, the
Celery fallback task and the REST batch endpoint, and ``from_wire`` is the one place it is checked on the way in.
"""

from __future__ import annotations

import itertools
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from errcatalog.vocabulary import TOOL_NAME_RULE, is_recorded_tool_name

OUTCOMES = ("ok", "error", "input_required")
# Where an event comes from: this endpoint's pipeline, or an external MCP server reporting through the REST API.
SOURCES = ("mcp", "api")
ELICITATION_ACTIONS = ("accept", "decline", "cancel", "requested")
# Names that reach storage and the dashboard: codes, variants, clients and sessions are identifier-shaped; tool
# names follow the tool-name vocabulary (``errcatalog.vocabulary``).
_NAME = re.compile(r"^[A-Za-z0-9_.:@/+-]{1,128}$")
_HEX_ID = re.compile(r"^[0-9a-f]{32}$")
_LOCALE = re.compile(r"^[A-Za-z0-9_-]{1,16}$")
# As an upstream's name is spelled (``errcatalog.gateway.models``).
_UPSTREAM = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# W3C trace-context trace IDs: 32 lower-case hex digits, all zero being the invalid one.
_TRACE_ID = re.compile(r"^(?!0{32}$)[0-9a-f]{32}$")
# Clocks differ between machines and a reporter may batch late, but not by more than this.
MAX_EVENT_AGE_SECONDS = 7 * 24 * 3600
MAX_EVENT_FUTURE_SECONDS = 300


class _EventIds:
    """Event IDs, 128 random-prefixed bits each: a random 64-bit prefix per process and a 64-bit counter.

    Unique across processes and restarts like a UUID4 (the prefix is drawn again in a forked child), at a sixth of
    ``uuid.uuid4()``'s cost, which showed in the profile of every tool call.
    """

    def __init__(self) -> None:
        self.reseed()
        os.register_at_fork(after_in_child=self.reseed)

    def reseed(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._counter = itertools.count()

    def __call__(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"


new_event_id = _EventIds()


# The client of an event reported through the REST API: "reporter:<token id>", or "reporter:<token id>/<client>" for
# a client the reporter names. Apart from the MCP endpoint's "token:<id>", so a reported event never joins an episode
# of calls errcatalog served, and every rollup row says whether errcatalog observed its calls itself (adaptive
# allocation counts only those, and reporters staff opted in). Before, reporters' clients were "token:<id>/<client>".
REPORTER_CLIENT_PREFIX = "reporter:"
LEGACY_REPORTER_CLIENT = r"^token:[0-9]+/"


def reporter_client(token_id: int, client: str | None) -> str:
    """The stored client of an event a token reported, naming the reporter's own client when it sent one."""
    prefix = f"{REPORTER_CLIENT_PREFIX}{token_id}"
    return f"{prefix}/{client}" if client else prefix


# Not frozen: a frozen dataclass's __init__ costs twice as much, on every tool call. Treat events as immutable
# (``dataclasses.replace`` makes a changed copy).
@dataclass(slots=True)
class OutcomeEvent:
    """What happened to one call. ``id`` is the event ID that makes ingestion idempotent."""

    tool: str  # the called name, or vocabulary.INVALID_TOOL_NAME for a name outside the vocabulary
    outcome: str  # "ok", "error" or "input_required" (a 2026-07-28 elicitation round trip is under way)
    client: str | None = None  # "token:<id>", "ip:<address>", or ``reporter_client`` for a reported event
    session: str | None = None
    code: str | None = None  # catalog code of an error
    variant: str | None = None  # the template variant the error was rendered with
    locale: str | None = None  # the variant's locale; None for the catalog default (and in older events)
    upstream: str | None = None  # the upstream MCP server whose tool was called (the gateway); None for ours
    interactive: bool = False  # rendered as a question or asked through an elicitation
    latency_ms: float = 0.0
    elicitation: str | None = None  # "accept", "decline", "cancel" or "requested" when one was made
    sentry_event_id: str | None = None
    trace_id: str | None = None  # the OpenTelemetry trace of the call (32 hex digits), when it was traced
    source: str = "mcp"  # "api" for events reported through the REST API (set by the API, never by the reporter)
    ts: float = field(default_factory=time.time)  # Unix time the call ended
    id: str = field(default_factory=new_event_id)

    def to_wire(self) -> dict[str, Any]:
        # Spelled out field by field: a loop over the optional names cost the recorder's flusher a third more.
        wire: dict[str, Any] = {"id": self.id, "ts": self.ts, "tool": self.tool, "outcome": self.outcome}
        if self.client is not None:
            wire["client"] = self.client
        if self.session is not None:
            wire["session"] = self.session
        if self.code is not None:
            wire["code"] = self.code
        if self.variant is not None:
            wire["variant"] = self.variant
        if self.locale is not None:
            wire["locale"] = self.locale
        if self.upstream is not None:
            wire["upstream"] = self.upstream
        if self.elicitation is not None:
            wire["elicitation"] = self.elicitation
        if self.sentry_event_id is not None:
            wire["sentry_event_id"] = self.sentry_event_id
        if self.trace_id is not None:
            wire["trace_id"] = self.trace_id
        if self.interactive:
            wire["interactive"] = True
        if self.source != "mcp":
            wire["source"] = self.source
        wire["latency_ms"] = int(self.latency_ms * 1000 + 0.5) / 1000  # to the microsecond; round() costs 5 times more
        return wire

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_wire())


class InvalidEvent(ValueError):
    """A wire event that cannot be stored; the message names the field, never echoes its value."""


def from_wire(wire: Any, *, now: float | None = None) -> OutcomeEvent:
    """Check one wire event and build it. Raises ``InvalidEvent`` naming the first bad field."""
    if not isinstance(wire, dict):
        raise InvalidEvent("an event must be a JSON object")
    unknown = sorted(str(name) for name in set(wire) - _WIRE_FIELDS)
    if unknown:
        # A field name is the reporter's text: named only when it is identifier-shaped.
        raise InvalidEvent(f"unknown field {unknown[0]!r}" if _NAME.fullmatch(unknown[0]) else "unknown field")
    event_id = wire.get("id")
    if not isinstance(event_id, str) or not _HEX_ID.fullmatch(event_id.replace("-", "").lower()):
        raise InvalidEvent("id: must be a UUID")
    ts = wire.get("ts")
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        raise InvalidEvent("ts: must be a Unix time in seconds")
    now = time.time() if now is None else now
    if not now - MAX_EVENT_AGE_SECONDS <= ts <= now + MAX_EVENT_FUTURE_SECONDS:
        raise InvalidEvent("ts: must be within the last 7 days")
    outcome = wire.get("outcome")
    if outcome not in OUTCOMES:
        raise InvalidEvent(f"outcome: must be one of {', '.join(OUTCOMES)}")
    tool = wire.get("tool")
    if not is_recorded_tool_name(tool):
        raise InvalidEvent(f"tool: must be {TOOL_NAME_RULE}")
    names: dict[str, str] = {}
    for name in ("client", "session", "code", "variant", "sentry_event_id"):
        value = wire.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not _NAME.fullmatch(value):
            raise InvalidEvent(f"{name}: must be 1-128 letters, digits or _.:@/+-")
        names[name] = value
    locale = wire.get("locale")
    if locale is not None:
        # As a catalog spells a variant's locale (catalog.schema.json), and short enough for its column.
        if not isinstance(locale, str) or not _LOCALE.fullmatch(locale):
            raise InvalidEvent("locale: must be a language tag such as de or pt-BR (at most 16 characters)")
        names["locale"] = locale
    upstream = wire.get("upstream")
    if upstream is not None:
        if not isinstance(upstream, str) or not _UPSTREAM.fullmatch(upstream):
            raise InvalidEvent("upstream: must be an upstream's name (1-64 lower-case letters, digits, _ or -)")
        names["upstream"] = upstream
    if outcome == "error" and "code" not in names:
        raise InvalidEvent("code: an error needs its catalog code")
    elicitation = wire.get("elicitation")
    if elicitation is not None and elicitation not in ELICITATION_ACTIONS:
        raise InvalidEvent(f"elicitation: must be one of {', '.join(ELICITATION_ACTIONS)}")
    source = wire.get("source", "mcp")
    if source not in SOURCES:
        raise InvalidEvent(f"source: must be one of {', '.join(SOURCES)}")
    interactive = wire.get("interactive", False)
    if not isinstance(interactive, bool):
        raise InvalidEvent("interactive: must be true or false")
    trace_id = wire.get("trace_id")
    if trace_id is not None and (not isinstance(trace_id, str) or not _TRACE_ID.fullmatch(trace_id)):
        raise InvalidEvent("trace_id: must be an OpenTelemetry trace ID (32 lower-case hex digits, not all zero)")
    latency = wire.get("latency_ms", 0.0)
    if not isinstance(latency, int | float) or isinstance(latency, bool) or not 0 <= latency <= 86_400_000:
        raise InvalidEvent("latency_ms: must be a number of milliseconds, at least 0")
    return OutcomeEvent(
        id=uuid.UUID(event_id).hex,
        ts=float(ts),
        outcome=outcome,
        interactive=interactive,
        latency_ms=float(latency),
        elicitation=elicitation,
        source=source,
        tool=tool,
        client=names.get("client"),
        session=names.get("session"),
        code=names.get("code"),
        variant=names.get("variant"),
        locale=names.get("locale"),
        upstream=names.get("upstream"),
        sentry_event_id=names.get("sentry_event_id"),
        trace_id=trace_id,
    )


_WIRE_FIELDS = frozenset(
    {"id", "ts", "tool", "outcome", "client", "session", "code", "variant", "interactive", "latency_ms"}
    | {"locale", "upstream", "elicitation", "sentry_event_id", "trace_id", "source"}
)
