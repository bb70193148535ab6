"""How the gateway reaches an upstream: the SDK client's transport for Streamable HTTP or a stdio child.

``http_transport`` opens an httpx client whose transport (``FailureKeepingTransport``) answers every failed POST with
a JSON-RPC error that says what happened and never follows a redirect; ``stdio_transport`` starts the child with the
SDK's minimal environment plus ``stdio_child_environment``. ``proxied`` tells whether the environment sends a URL
through a proxy (then only the SDK's client calls it). A failed POST's facts travel in the error's data under the
keys the gateway's poster fills too (``mcpserver.sdk_internals.poster``), and ``mcpserver.gateway.failures`` reads
them.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
import urllib.request
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.sdk_internals.poster import KIND_KEY, STATUS_KEY, TRANSPORT_KEY

# Variables of our environment every stdio child gets besides the SDK's minimal set: where the machine's trusted
# certificates are (Python's ssl, requests, curl, Node) and which proxy to use, so that a `uvx` or `npx` server
# reaches its registry and its service behind a TLS-inspecting proxy as the rest of the machine does. None of them
# is one of errcatalog's own secrets (those never leave the web process), and the record's own variables win.
STDIO_PASSED_THROUGH_ENV = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


class FailureKeepingTransport(httpx2.AsyncBaseTransport):
    """Makes every failed POST answer its request with a JSON-RPC error that says what happened, and every
    redirect a failure.

    The SDK's transport reports an HTTP error status as a bare INTERNAL_ERROR (this keeps the status and a
    Retry-After in the error's data, for the catalog's status rules), and a POST that fails to connect or is cut
    off ends its writer task without answering the request at all (the call would wait for its timeout; this
    answers it at once as a connection failure). A redirect is never followed (the client does not, and a
    redirect reaching it is answered here as an error without its ``Location``): it would carry the call's
    arguments and the configured headers to an address the upstream chose.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport):
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            response = await self.inner.handle_async_request(request)
            if 300 <= response.status_code < 400:
                await response.aclose()
                return httpx2.Response(502)
            return response
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            data = {TRANSPORT_KEY: True, KIND_KEY: type(exc).__name__}
            return _error_response(502, data, f"{type(exc).__name__}: {exc}")
        if response.status_code < 300:
            return response
        if 300 <= response.status_code < 400:
            await response.aclose()
            return _error_response(502, {STATUS_KEY: response.status_code}, f"HTTP {response.status_code}")
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            return response  # may carry the JSON-RPC error itself, which says more than the status
        await response.aclose()
        data = {STATUS_KEY: response.status_code, "retryAfter": response.headers.get("retry-after")}
        return _error_response(response.status_code, data, f"HTTP {response.status_code}")

    async def aclose(self) -> None:
        await self.inner.aclose()


def _error_response(status: int, data: dict[str, Any], message: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": types.INTERNAL_ERROR, "message": message, "data": data}}
    return httpx2.Response(status, headers={"content-type": "application/json"}, content=json.dumps(body).encode())


@functools.cache
def trust_store() -> ssl.SSLContext:
    """The trust store every HTTP client of every upstream verifies servers with, built once per process: loading the
    system's certificates takes milliseconds, which each client's own upstream session would pay as it opens, and an
    ``SSLContext`` is made to be shared by connections."""
    return httpx2.create_ssl_context()


async def http_transport(
    stack: AsyncExitStack, config: UpstreamConfig, headers: Mapping[str, str]
) -> tuple[Any, ssl.SSLContext]:
    """The SDK client's Streamable HTTP transport to ``config.url`` (closed with ``stack``), and its trust store."""
    tls = trust_store()
    http = httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(config.timeout_seconds + 5, read=300),
        transport=FailureKeepingTransport(httpx2.AsyncHTTPTransport(verify=tls)),
    )
    await stack.enter_async_context(http)
    return streamable_http_client(config.url, http_client=http), tls


def stdio_transport(config: UpstreamConfig, env: Mapping[str, str], errlog: TextIO) -> Any:
    """The SDK client's stdio transport: the child gets the SDK's minimal environment (HOME, PATH, SHELL, TERM, USER,
    LOGNAME), the trust store and proxy variables (``stdio_child_environment``) and the variables the record names
    (``env``, resolved); what it writes to stderr goes to ``errlog``."""
    parameters = StdioServerParameters(
        command=config.command, args=list(config.args), env=stdio_child_environment(env), cwd=config.cwd or None
    )
    return stdio_client(parameters, errlog=errlog)


def stdio_child_environment(record_env: Mapping[str, str]) -> dict[str, str]:
    """The variables a stdio child gets on top of the SDK's minimal set: those of ``STDIO_PASSED_THROUGH_ENV`` that
    our environment sets, then the record's own (``record_env``, resolved), which win."""
    passed = {name: os.environ[name] for name in STDIO_PASSED_THROUGH_ENV if os.environ.get(name)}
    return passed | dict(record_env)


def proxied(url: str) -> bool:
    """Whether the environment sends requests to ``url`` through a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``, less ``NO_PROXY``), as the SDK's httpx client reads it."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")
