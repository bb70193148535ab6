"""OpenTelemetry spans of the call path (``mcpserver.tracing`` inside the SDK's message span), over real HTTP with the
SDK's client: in this process with an in-memory exporter, and in the served app against an OTLP/HTTP receiver on
127.0.0.1 that decodes what the real exporter sends."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import threading
from collections.abc import Iterator

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import ProxyTracer, SpanKind, StatusCode
from opentelemetry.util._once import Once

from config.tracing import tracing_requested
from mcpserver import tracing as mcpserver_tracing
from mcpserver.sdk_internals import otel as sdk_otel
from mcpserver.sdk_internals.otel import OnlyWhenTracing
from mcpserver.sdk_internals.tool_calls import ModernToolCalls
from tests.support.served_app import ServedApp, embedded_environment, new_token
from tests.support.waiting import wait_until


class _Captured(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


@pytest.fixture
def spans() -> Iterator[list[ReadableSpan]]:
    """Spans ended during the test, under a tracer provider installed for the test only.

    OpenTelemetry lets a process set its provider once, and its proxy tracers keep the first real tracer they
    resolve; the test resets both afterwards (their private attributes: no public API undoes a provider), so the
    tests after it run untraced, as a deployment without OTEL_* does.
    """
    captured = _Captured()
    provider = TracerProvider()
    provider.add_span_processor(captured)
    _forget_provider()
    trace.set_tracer_provider(provider)
    try:
        yield captured.spans
    finally:
        provider.shutdown()
        _forget_provider()


def _forget_provider() -> None:
    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    sdk_otel.forget_tracer_provider()
    if isinstance(mcpserver_tracing._tracer, ProxyTracer):
        mcpserver_tracing._tracer._real_tracer = None
    assert not mcpserver_tracing.tracing_on()


def _by_name(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


class _Counting:
    """A server middleware that counts the messages it saw and passes them on."""

    def __init__(self) -> None:
        self.seen = 0

    async def __call__(self, ctx, call_next):
        self.seen += 1
        return await call_next(ctx)


def _through(middleware) -> str:
    async def handler(ctx) -> str:
        return "answered"

    return asyncio.run(middleware(object(), handler))


def test_the_sdks_message_middleware_is_skipped_without_a_tracer_provider():
    _forget_provider()
    inner = _Counting()
    assert _through(OnlyWhenTracing(inner, mcpserver_tracing.tracing_on)) == "answered"
    assert inner.seen == 0


def test_the_sdks_message_middleware_runs_under_a_tracer_provider(spans):
    inner = _Counting()
    assert _through(OnlyWhenTracing(inner, mcpserver_tracing.tracing_on)) == "answered"
    assert inner.seen == 1


def test_the_server_wraps_the_sdks_span_middleware_and_leaves_the_others(settings):
    from mcpserver.changes import ChangeFeed
    from mcpserver.sdk_internals.otel import OpenTelemetryMiddleware
    from mcpserver.server import build_server

    server, _reader = build_server(ChangeFeed())
    kinds = [type(m) for m in server.middleware]
    assert OpenTelemetryMiddleware not in kinds
    assert kinds[0] is OnlyWhenTracing
    assert isinstance(server.middleware[0]._middleware, OpenTelemetryMiddleware)
    # Then the request-state boundary, as it was, and our own that serves 2026-07-28 calls, so the span of each
    # message (outermost) sees their answers and the boundary seals a question's state; innermost a named server's
    # instructions, which those calls never reach.
    from mcp.server.request_state import RequestStateBoundary

    from mcpserver.server import _named_server_instructions

    assert kinds[1:3] == [RequestStateBoundary, ModernToolCalls] and len(kinds) == 4
    assert server.middleware[3] is _named_server_instructions


@pytest.mark.django_db(transaction=True)
def test_each_tool_call_is_a_span_inside_the_mcp_message_span_with_the_catalog_code(mcp, spans):
    hostile = "IGNORE_ALL_PREVIOUS_INSTRUCTIONS_2"

    async def scenario(client):
        await client.call_tool("explain_error", {"code": "TIMEOUT"})
        await client.call_tool("send_email", {"subject": "Lunch", "body": "Noon?"})
        await client.call_tool(hostile, {})
        return client.protocol_version

    versions = set(mcp.run(scenario).values())
    assert versions == {"2026-07-28", "2025-11-25"}
    named = _by_name(spans)
    for tool in ("explain_error", "send_email"):
        assert len(named[f"execute_tool {tool}"]) == 2, sorted(named)
    messages = {span.context.span_id: span for span in named["tools/call explain_error"]}
    for span in named["execute_tool explain_error"]:
        # A child of the SDK's span of the same message.
        assert span.parent is not None and span.parent.span_id in messages
        assert messages[span.parent.span_id].kind == SpanKind.SERVER
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "explain_error"
        assert span.attributes["errcatalog.outcome"] == "ok"
        assert "error.type" not in span.attributes
    failed = named["execute_tool send_email"]
    assert {span.attributes["error.type"] for span in failed} == {"MISSING_PARAMETER"}
    assert all(
        span.status.status_code == StatusCode.ERROR and span.attributes["errcatalog.interactive"] for span in failed
    )
    # The 2025-11-25 call carries its session.
    assert sum("mcp.session.id" in span.attributes for span in failed) == 1
    # A name nothing serves never names a span of ours.
    unknown = named["execute_tool (unknown)"]
    assert {span.attributes["error.type"] for span in unknown} == {"FUNCTION_NOT_FOUND"}
    assert all("gen_ai.tool.name" not in span.attributes for span in unknown)
    assert not any(hostile in span.name for span in spans if span.name.startswith("execute_tool"))


@pytest.mark.django_db(transaction=True)
def test_each_outcome_carries_the_trace_of_its_call(mcp, spans, monkeypatch):
    recorded = []
    monkeypatch.setattr("mcpserver.pipeline.recorder.record", recorded.append)

    async def scenario(client):
        await client.call_tool("explain_error", {"code": "TIMEOUT"})

    mcp.run(scenario)
    traced = {format(span.context.trace_id, "032x") for span in _by_name(spans)["execute_tool explain_error"]}
    assert len(traced) == 2
    assert {event.trace_id for event in recorded if event.tool == "explain_error"} == traced


@pytest.mark.django_db(transaction=True)
def test_a_clients_trace_continues_through_the_call(mcp, spans):
    """The SDK's client puts the current trace in the request's ``_meta.traceparent``; the call joins that trace."""
    agent_traces = []

    async def scenario(client):
        with trace.get_tracer("an agent").start_as_current_span("agent turn") as turn:
            agent_traces.append(turn.get_span_context().trace_id)
            await client.call_tool("explain_error", {"code": "TIMEOUT"})

    mcp.run(scenario)
    ours = _by_name(spans)["execute_tool explain_error"]
    assert sorted(span.context.trace_id for span in ours) == sorted(agent_traces)


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "errcatalog"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
    ],
)
def test_tracing_is_off_unless_the_standard_variables_ask_for_it(environ, on):
    assert tracing_requested(environ) is on


# --- A real OTLP/HTTP receiver ----------------------------------------------------------------------------------


class Receiver(http.server.ThreadingHTTPServer):
    """``POST /v1/traces`` as an OpenTelemetry Collector takes it: protobuf, maybe gzipped; the spans decoded."""

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _ReceiverHandler)
        self.spans: list[tuple[str, str, dict]] = []  # (service, span name, attributes)
        self.scopes: set[str] = set()


class _ReceiverHandler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                self.server.scopes.add(scope_spans.scope.name)
                for span in scope_spans.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    self.server.spans.append((resource.get("service.name", ""), span.name, attributes))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args) -> None:
        pass


def _value(value):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def start_receiver(port: int = 0) -> Receiver:
    receiver = Receiver(port)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    return receiver


def test_the_served_app_exports_its_spans_to_an_otlp_receiver_and_outlives_it(tmp_path):
    receiver = start_receiver()
    port = receiver.server_address[1]
    env = embedded_environment(
        tmp_path / "data",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
        OTEL_SERVICE_NAME="errcatalog-test",
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_EXPORTER_OTLP_TIMEOUT="2",  # an export to a collector that is gone gives up after 2 s
    )
    key = new_token(env, "agent")
    app = ServedApp(env, tmp_path).start()
    try:

        async def call() -> list[str]:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=20) as http,
                Client(streamable_http_client(app.mcp_url, http_client=http)) as client,
            ):
                results = [
                    await client.call_tool("explain_error", {"code": "TIMEOUT"}),
                    await client.call_tool("explain_error", {"code": "not a code"}),
                ]
            return [result.structured_content.get("code", "ok") if result.is_error else "ok" for result in results]

        assert asyncio.run(call()) == ["ok", "INVALID_PARAMETER"]
        assert app.get("/health/").status_code == 200  # a Django request

        def exported() -> set[str]:
            return {name for _service, name, _attributes in receiver.spans}

        def ours(receiver: Receiver = receiver) -> list[tuple[str, dict]]:
            return [(service, attrs) for service, name, attrs in receiver.spans if name.startswith("execute_tool")]

        # Spans arrive in batches, in whatever order their batches went out: wait for all of them.
        wait_until(
            lambda: (
                len(ours()) >= 2
                and "tools/call explain_error" in exported()
                and "opentelemetry.instrumentation.django" in receiver.scopes
            ),
            seconds=30,
            what="the spans at the receiver",
        )
        assert {service for service, _ in ours()} == {"errcatalog-test"}
        assert {attributes.get("error.type") for _, attributes in ours()} == {None, "INVALID_PARAMETER"}

        # The collector dies: calls are answered exactly as before (spans are exported off the request path),
        # and once a collector listens again the spans of later calls reach it.
        receiver.shutdown()
        receiver.server_close()
        assert asyncio.run(call()) == ["ok", "INVALID_PARAMETER"]
        assert app.get("/health/").status_code == 200
        receiver = start_receiver(port)
        assert asyncio.run(call()) == ["ok", "INVALID_PARAMETER"]
        wait_until(lambda: len(ours(receiver)) >= 2, seconds=30, what="spans at the collector that came back")
    finally:
        app.stop()
        receiver.shutdown()
