"""A span per tool call, inside the span the MCP SDK opens for each message (``config.tracing`` turns both on).

``execute_tool {tool}`` (OpenTelemetry's GenAI and MCP conventions): ``gen_ai.operation.name`` = ``execute_tool``,
``gen_ai.tool.name``, ``mcp.session.id`` (2025-11-25 sessions), ``mcp.protocol.version``, ``errcatalog.upstream``
for a gateway tool, and, once answered, ``errcatalog.outcome`` and for a failure ``error.type`` = its catalog code
(``errcatalog.variant``, ``errcatalog.interactive``) with the span's status set to error. A called name that
nothing serves is the caller's text: the span is then named ``execute_tool (unknown)`` and carries no tool name.

Without a tracer provider (``OTEL_*`` unset) the call path opens no span at all: not ours, and not the SDK's
either (``mcpserver.sdk_internals.otel`` puts its per-message middleware behind ``tracing_on``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from errcatalog.outcomes.events import OutcomeEvent
from mcpserver.calls import ToolCall

UNKNOWN_TOOL = "(unknown)"
_tracer = trace.get_tracer("errcatalog.mcpserver")


def tracing_on() -> bool:
    """Whether a tracer provider is installed (``config.tracing``); read twice on every call.

    The API's own global, not ``trace.get_tracer_provider()``: while no provider is set, that looks up an
    environment variable (``OTEL_PYTHON_TRACER_PROVIDER``, a provider to load) on every call, about a
    microsecond; ``config.tracing`` sets its provider in code, and a provider set is never taken back.
    """
    return trace._TRACER_PROVIDER is not None


@contextlib.contextmanager
def tool_call_span(call: ToolCall) -> Iterator[Span]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": call.protocol_version,
    }
    if call.session_id:
        attributes["mcp.session.id"] = call.session_id
    with _tracer.start_as_current_span("execute_tool", kind=SpanKind.INTERNAL, attributes=attributes) as span:
        yield span


def current_trace_id() -> str | None:
    """The trace of the call being served (32 hex digits) when it is traced: the outcome's link to its span."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid and context.trace_flags.sampled else None


def note_outcome(event: OutcomeEvent, *, served: bool) -> None:
    """Put a call's outcome on its span (the current one), if it is being traced."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    tool = event.tool if served else UNKNOWN_TOOL
    span.update_name(f"execute_tool {tool}")
    attributes: dict[str, Any] = {"errcatalog.outcome": event.outcome}
    if served:
        attributes["gen_ai.tool.name"] = event.tool
    if event.upstream:
        attributes["errcatalog.upstream"] = event.upstream
    if event.code is not None:
        attributes |= {
            "error.type": event.code,
            "errcatalog.variant": event.variant or "",
            "errcatalog.interactive": event.interactive,
        }
        span.set_status(StatusCode.ERROR)
    span.set_attributes(attributes)
