"""The SDK's span per message, behind a check: the server's middleware list searched for a private class.

The SDK ships its OpenTelemetry middleware (``mcp.server._otel.OpenTelemetryMiddleware``, a private module) on every
``Server`` and documents dropping it to opt out. Untraced, it would still open a non-recording span and build its
attributes for every message, a cost every call would pay; ``spans_only_when`` wraps it in
``OnlyWhenTracing``, which runs it only while its check says so (per message: a provider can be installed after the
server was built, in tests). Plain path (``fast_paths`` off): the middleware stays as the SDK installs it.

For tests, which install a tracer provider and take it away again: ``forget_tracer_provider`` makes the SDK's own
module tracer (``mcp.shared._otel``, a ProxyTracer that keeps the real tracer it first resolved) resolve again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared import _otel as shared_otel
from opentelemetry.trace import ProxyTracer


class OnlyWhenTracing:
    """A server middleware (the SDK's span per message) that runs only while ``when()``."""

    def __init__(self, middleware: ServerMiddleware[Any], when: Callable[[], bool]) -> None:
        self._middleware = middleware
        self._when = when

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if self._when():
            return await self._middleware(ctx, call_next)
        return await call_next(ctx)


def spans_only_when(server: Server[Any], when: Callable[[], bool]) -> None:
    """Put the SDK's span middleware of ``server`` behind ``when`` (``mcpserver.tracing.tracing_on``)."""
    server.middleware[:] = [
        OnlyWhenTracing(m, when) if isinstance(m, OpenTelemetryMiddleware) else m for m in server.middleware
    ]


def forget_tracer_provider() -> None:
    """The SDK's module tracer forgets the real tracer it resolved, so that the next provider installed is used
    (tests only: a process keeps one provider)."""
    tracer = shared_otel._tracer
    if isinstance(tracer, ProxyTracer):
        tracer._real_tracer = None
