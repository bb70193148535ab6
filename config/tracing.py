"""OpenTelemetry tracing: off unless the standard ``OTEL_*`` variables ask for it.

On when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``) or an OTLP endpoint is set
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` keeps it off whatever else is set. Then each process gets a tracer provider named by
``OTEL_SERVICE_NAME`` (``errcatalog`` by default; ``OTEL_RESOURCE_ATTRIBUTES`` adds to it), spans go out in
batches to the OTLP/HTTP exporter (which reads ``OTEL_EXPORTER_OTLP_*`` itself: endpoint, headers, timeout,
compression; ``OTEL_BSP_*`` tune the batches) or to stdout, and these are traced:

- every MCP message: the SDK's own middleware (``mcp.server._otel``, on in every ``Server``) opens a server span
  named by the method and tool (``tools/call send_email``) with the MCP semantic conventions (``mcp.method.name``,
  ``mcp.protocol.version``, ``jsonrpc.request.id``, ``gen_ai.tool.name``), continuing a client's trace from the
  request's ``_meta.traceparent``;
- every tool call inside it: ``mcpserver.tracing`` (``execute_tool send_email``, with ``mcp.session.id``, the
  upstream, and ``error.type`` = the catalog code of a failure);
- Django's requests (admin, REST API, dashboard), and Celery's tasks in the workers (with the trace of the
  process that sent them).

Unset, nothing is installed: OpenTelemetry's API answers with no-op spans, and the call path skips its own.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import OTEL_SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

DEFAULT_SERVICE_NAME = "errcatalog"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_requested(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces (see the module docstring)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(exporter) or any(environ.get(name, "").strip() for name in _ENDPOINTS)


def configure_tracing(*, celery: bool = False) -> TracerProvider | None:
    """Install the tracer provider and the instrumentations when the environment asks for traces; None when not.

    Called once per process: by ``config.asgi`` in a web process, and in each Celery worker process as it starts
    (``celery=True``: a forked pool process has none of its parent's exporter threads).
    """
    if not tracing_requested():
        return None
    resource = Resource.create({OTEL_SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(_exporter()))
    trace.set_tracer_provider(provider)
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    DjangoInstrumentor().instrument(tracer_provider=provider)
    if celery:
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        CeleryInstrumentor().instrument(tracer_provider=provider)
    return provider


def _exporter() -> SpanExporter:
    names = [n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").lower().split(",") if n.strip()]
    if names == ["console"]:
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()
