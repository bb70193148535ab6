"""The reach of ``mcpserver.sdk_internals.otel``: the SDK's span middleware is the private class we look for, on by
default in every server, and a plain ``(ctx, call_next)`` middleware."""

from __future__ import annotations

import inspect

from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware

from mcpserver.sdk_internals.otel import OnlyWhenTracing, forget_tracer_provider, spans_only_when
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


def test_the_sdks_module_tracer_is_a_proxy_that_keeps_the_tracer_it_resolved():
    """``forget_tracer_provider`` relies on the SDK's module tracer being OpenTelemetry's ProxyTracer, made once at
    import, which keeps in ``_real_tracer`` the tracer it resolved from the first provider."""
    from mcp.shared import _otel as shared_otel
    from opentelemetry.trace import ProxyTracer

    tracer = shared_otel._tracer
    assert isinstance(tracer, ProxyTracer), revisit("otel", f"mcp.shared._otel._tracer is {type(tracer)}")
    assert "_real_tracer" in vars(tracer), revisit("otel", "a ProxyTracer keeps its real tracer elsewhere")
    forget_tracer_provider()
    assert tracer._real_tracer is None
