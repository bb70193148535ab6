"""The demo tools' HTTP client against real local upstreams: bounded Retry-After and status, no credentials
forwarded across a redirect to another host."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import demo.mcp_tools as demo
from mcpserver.calls import ToolCall
from mcpserver.pipeline import call_tool

SECRET = "k-SECRET-123"


class Server:
    """A local HTTP server on 127.0.0.1: answers with ``status``/``headers``/``body`` and records what it got."""

    def __init__(self) -> None:
        self.status = 200
        self.headers: dict[str, str] = {"Content-Type": "application/json"}
        self.body = b'{"ok": true}'
        self.requests: list[tuple[str, dict[str, str]]] = []
        # Answers for the next requests, in order, before the standing one above.
        self.queued: list[tuple[int, dict[str, str], bytes]] = []
        answer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = (
                    answer.queued.pop(0) if answer.queued else (answer.status, answer.headers, answer.body)
                )
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    first, second = Server(), Server()
    yield first, second
    first.close()
    second.close()


# --- Redirects ---------------------------------------------------------------------------------------------------


def redirect(server: Server, to: str, status: int = 302) -> None:
    server.status = status
    server.headers = {"Location": to}
    server.body = b""


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_credentials_are_not_forwarded_to_another_host(servers, settings, status):
    first, second = servers
    redirect(first, second.url("/search", host="localhost"), status)
    settings.DEMO_SEARCH_URL = first.url("/search")
    settings.DEMO_SEARCH_API_KEY = SECRET

    demo.web_search(query="mcp")

    assert first.requests[0][1]["authorization"] == f"Bearer {SECRET}"
    assert len(second.requests) == 1
    assert "authorization" not in second.requests[0][1]
    assert SECRET not in json.dumps(second.requests)


def test_no_credential_header_crosses_to_another_port(servers):
    first, second = servers
    redirect(first, second.url("/data"))
    headers = {"Authorization": f"Bearer {SECRET}", "Cookie": f"session={SECRET}", "Proxy-Authorization": SECRET}

    assert demo._fetch_json(first.url("/data"), params={}, headers=headers, timeout=5, service="x") == {"ok": True}

    received = second.requests[0][1]
    assert not {"authorization", "cookie", "proxy-authorization"} & set(received)
    assert received["accept"] == "application/json"  # other headers still follow the redirect


def test_credentials_follow_a_redirect_on_the_same_origin(servers, settings):
    first, _second = servers
    settings.DEMO_SEARCH_API_KEY = SECRET
    settings.DEMO_SEARCH_URL = first.url("/old-search")
    first.queued = [(302, {"Location": "/search"}, b""), (200, {"Content-Type": "application/json"}, b"[]")]

    demo.web_search(query="mcp")

    assert [headers.get("authorization") for _path, headers in first.requests] == [f"Bearer {SECRET}"] * 2


# --- Retry-After and status through the whole call -------------------------------------------------------------


def weather_call() -> dict:
    result = asyncio.run(
        call_tool(ToolCall(name="get_weather", arguments={"location": "Oslo"}, client=None, session_id=None,
                           protocol_version="2025-11-25"))
    )  # fmt: skip
    assert result.is_error
    return result.structured_content


@pytest.fixture
def weather(servers, settings, catalog, short_lived_connections):
    settings.MCP = {**settings.MCP, "TOOLSETS": frozenset({"demo"})}
    settings.ERRCATALOG = {**settings.ERRCATALOG, "MAX_RETRY_AFTER_SECONDS": 600}
    first, _second = servers
    settings.DEMO_WEATHER_URL = first.url("/weather")
    first.status, first.body = 429, b"{}"
    return first


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("retry_after", "hint"),
    [
        ("17", 17),
        (str(10**12), 600),
        ("0", 1),
        ("-30", None),
        ("²", None),
        ("later, please", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        ("Fri, 01 Jan 9999 00:00:00 GMT", 600),
    ],
)
def test_any_retry_after_gives_a_rate_limit_with_a_bounded_hint(weather, retry_after, hint):
    weather.headers = {"Content-Type": "application/json", "Retry-After": retry_after}

    envelope = weather_call()

    assert envelope["code"] == "RATE_LIMIT"
    seconds = envelope["details"]["retryAfterSeconds"]
    assert 1 <= seconds <= 600
    if hint is not None:
        assert seconds == hint


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("status", [600, 799, 999])
def test_a_status_outside_100_to_599_is_unknown(weather, status):
    weather.status = status

    envelope = weather_call()

    assert envelope["code"] == "UNKNOWN_ERROR"
    assert "statusCode" not in envelope.get("details", {})
