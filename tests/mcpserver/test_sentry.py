"""System errors reach Sentry through its real HTTP transport (a small ingest server on 127.0.0.1); user
errors do not."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.mcp import MCPIntegration

pytestmark = pytest.mark.django_db(transaction=True)


class Ingest(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), IngestHandler)
        self.events: list[dict] = []
        self.paths: list[str] = []


class IngestHandler(BaseHTTPRequestHandler):
    server: Ingest

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.server.paths.append(self.path)
        for item in Envelope.deserialize(body).items:
            event = item.get_event()
            if event is not None:
                self.server.events.append(event)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def sentry_ingest():
    ingest = Ingest()
    thread = threading.Thread(target=ingest.serve_forever, daemon=True)
    thread.start()
    sentry_sdk.init(
        dsn=f"http://publickey@127.0.0.1:{ingest.server_address[1]}/42",
        data_collection={"user_info": False, "http_bodies": []},
        disabled_integrations=[MCPIntegration()],
    )
    yield ingest
    sentry_sdk.get_client().close(timeout=2)
    sentry_sdk.init()  # no DSN: capturing is off again
    ingest.shutdown()


def test_system_error_is_captured_with_its_event_id_in_the_result(mcp, sentry_ingest):
    results = mcp.run(lambda client: client.call_tool("upstream_broken", {}))
    sentry_sdk.get_client().flush(timeout=5)

    assert len(sentry_ingest.events) == 2  # one per protocol generation, nothing from logging
    assert set(sentry_ingest.paths) == {"/api/42/envelope/"}
    by_id = {event["event_id"]: event for event in sentry_ingest.events}
    for result in results.values():
        envelope = result.structured_content
        assert envelope["code"] == "SERVER_ERROR"
        event_id = envelope["details"]["eventId"]
        assert event_id in result.content[0].text
        assert "secret stack trace" not in result.content[0].text
        event = by_id[event_id]
        assert event["fingerprint"] == ["errcatalog", "SERVER_ERROR"]
        assert event["tags"]["tool"] == "upstream_broken"
        assert event["tags"]["code"] == "SERVER_ERROR"
        assert event["exception"]["values"][-1]["type"] == "ApiServerError"


def test_user_error_creates_no_event(mcp, sentry_ingest):
    results = mcp.run(lambda client: client.call_tool("record_missing", {}))
    sentry_sdk.get_client().flush(timeout=5)
    assert all(result.structured_content["code"] == "NOT_FOUND" for result in results.values())
    assert sentry_ingest.events == []
