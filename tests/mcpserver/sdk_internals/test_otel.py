"""The reach of ``mcpserver.sdk_internals.otel``: the SDK's span middleware is the private class we look for, on by
default in every server, and a plain ``(ctx, call_next)`` middleware."""

from __future__ import annotations

import inspect

from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware

from mcpserver.sdk_internals.otel import OnlyWhenTracing, spans_only_when
from tests.mcpserver.sdk_internals.support import revisit


def test_every_server_starts_with_the_sdks_span_middleware():
    kinds = [type(m) for m in Server("x").middleware]
    assert kinds == [OpenTelemetryMiddleware], revisit(
        "otel", f"a new Server's middleware is {kinds}, not the one OpenTelemetryMiddleware of mcp.server._otel"
    )


def test_the_span_middleware_is_called_as_any_server_middleware():
    parameters = list(inspect.signature(OpenTelemetryMiddleware.__call__).parameters)
    assert parameters == ["self", "ctx", "call_next"], revisit(
        "otel", f"OpenTelemetryMiddleware.__call__ takes {parameters}"
    )
    assert inspect.iscoroutinefunction(OpenTelemetryMiddleware.__call__), revisit("otel", "it is no longer async")


def test_the_swap_wraps_exactly_the_span_middleware():
    server = Server("x")
    other = object()
    server.middleware.append(other)  # type: ignore[arg-type]
    spans_only_when(server, lambda: False)
    assert type(server.middleware[0]) is OnlyWhenTracing
    assert server.middleware[1] is other
