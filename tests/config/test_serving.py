"""``./dev up`` serving: each start-up line once, no Django warning while serving, static files whole.

The app runs as ``./dev up`` runs it (uvicorn with the production limits, the Celery worker and beat beside it); the
test reads the server's stderr after a few pages, static files (GET, HEAD, a conditional GET), a 404 and an MCP call.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import urllib.error
import urllib.request
from pathlib import Path

import django.contrib.admin
import drf_spectacular_sidecar
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

STARTUP_LINES = (
    "Started server process",
    "Waiting for application startup.",
    "MCP endpoint ready",
    "Application startup complete.",
    "Uvicorn running on",
)
# Credentials a client puts in a URL: the access log shows each redacted.
QUERY_SECRETS = ("ecAccessTok3nInTheQuery", "clientS3cretInTheQuery", "authC0deInTheQuery")
ADMIN_CSS = Path(django.contrib.admin.__file__).parent / "static/admin/css/base.css"
SWAGGER_JS = Path(drf_spectacular_sidecar.__file__).parent / "static/drf_spectacular_sidecar/swagger-ui-dist"


async def tool_names(url: str, key: str) -> list[str]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return [tool.name for tool in (await client.list_tools()).tools]


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, method=method, headers=headers or {})  # noqa: S310 (http://127.0.0.1)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture(scope="module")
def served_log(dev_up) -> str:
    """The server's stderr after a first-hour tour of the pages."""
    base = dev_up.base_url
    for path in ("/admin/login/", "/dashboard/", "/api/v1/", "/api/v1/docs/", "/api/v1/schema/", "/favicon.ico"):
        status, _headers, _body = fetch(base + path)
        assert status == 200, path
    assert fetch(base + "/no-such-page/")[0] == 404
    # Credentials where they never belong: in a query string (refused by /mcp; ignored by the login page).
    assert fetch(base + f"/mcp?access_token={QUERY_SECRETS[0]}&x=1")[0] == 401
    assert fetch(base + f"/admin/login/?next=/&Client_Secret={QUERY_SECRETS[1]}&code={QUERY_SECRETS[2]}")[0] == 200
    # An MCP call with the printed token, through the SDK's client.
    assert "send_email" in asyncio.run(tool_names(dev_up.mcp_url, dev_up.printed_key()))
    return dev_up.stderr()


def test_each_startup_line_is_logged_once(served_log):
    for line in STARTUP_LINES:
        assert served_log.count(line) == 1, (line, served_log)
    # The SDK's line came once per session manager, and we run two.
    assert "session manager started" not in served_log


def test_the_access_log_shows_no_credential_from_a_query_string(served_log, dev_up):
    access = dev_up.printed()  # uvicorn writes its access log to stdout
    assert '"GET /mcp?access_token=[REDACTED]&x=1 HTTP/1.1" 401' in access
    assert "Client_Secret=[REDACTED]&code=[REDACTED] HTTP/1.1" in access
    for secret in QUERY_SECRETS:
        assert secret not in access + served_log


def test_a_404_is_logged_once(served_log):
    assert served_log.count("Not Found: /no-such-page/") == 1, served_log


def test_serving_raises_no_streaming_warning(served_log):
    assert "StreamingHttpResponse" not in served_log
    assert "Warning" not in served_log, served_log


def test_static_files_arrive_whole_and_head_has_no_body(dev_up):
    url = f"{dev_up.base_url}/static/admin/css/base.css"
    status, headers, body = fetch(url)
    assert status == 200 and body == ADMIN_CSS.read_bytes()
    assert headers["Content-Type"].startswith("text/css")
    assert int(headers["Content-Length"]) == len(body)

    status, headers, body = fetch(url, method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == ADMIN_CSS.stat().st_size

    # Larger than one chunk many times over: Swagger UI's bundle from drf-spectacular-sidecar.
    bundle = SWAGGER_JS / "swagger-ui-bundle.js"
    status, _headers, body = fetch(f"{dev_up.base_url}/static/drf_spectacular_sidecar/swagger-ui-dist/{bundle.name}")
    assert status == 200 and body == bundle.read_bytes()


def test_a_not_modified_answer_has_no_body(dev_up):
    url = f"{dev_up.base_url}/static/admin/css/base.css"
    _status, headers, _body = fetch(url)
    status, _headers, body = fetch(url, headers={"If-None-Match": headers["ETag"]})
    assert status == 304 and body == b""


def raw_status(port: int, path: str, *, padding: int) -> int:
    """The status of a GET whose head carries ``padding`` bytes of headers (4 KB each, as big cookies come), sent
    over a plain socket in one write; 0 when the server reset the connection before an answer arrived."""
    pad = "".join(f"X-Pad-{i}: {'a' * 4000}\r\n" for i in range(padding // 4000))
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{pad}Connection: close\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        connection.sendall(head)
        answer = b""
        with contextlib.suppress(ConnectionResetError):  # closed with the rest of a refused head unread
            while chunk := connection.recv(65536):
                answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


@pytest.mark.parametrize("path", ["/health/", "/mcp", "/api/v1/"])
def test_a_request_head_over_16_kib_is_refused_and_a_normal_one_served(dev_up, path):
    port = int(dev_up.base_url.rsplit(":", 1)[1])
    assert raw_status(port, path, padding=0) in (200, 401, 405, 406)  # served: each path's own answer
    assert raw_status(port, path, padding=12_000) in (200, 401, 405, 406)  # under the limit
    assert raw_status(port, path, padding=20_000) == 431
    # h11 may see a head this large before it is whole (then it answers 400 itself and closes, maybe before the
    # whole head was read: a reset), or whole (then the app answers 431).
    assert raw_status(port, path, padding=128_000) in (0, 400, 431)
