"""``manage.py public_url_check``: what a hosted MCP client (Claude, ChatGPT) sees at this service's public URL.

Hosted clients connect from their own cloud, through whatever tunnel or reverse proxy stands in front of the
running server. This command walks their way from the outside, step by step, and says in plain words where it
breaks: the URL (https, a public address), the 401 challenge on /mcp, the protected resource's metadata, the
authorization server's metadata (can a client register?), and, with ``--token``, an MCP session through the public
URL with the SDK's own client. It reads the running server over the network, so it also finds a server started
without the setting this process has ("export" reaches this command, not a server started before it).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from errcatalog.access.oauth import resource_metadata_url

OK, FAILED = "ok", "FAILED"
TIMEOUT_SECONDS = 15
# The most of a body read from the server: metadata documents are small.
MAX_BODY_BYTES = 256 * 1024


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an answer to report, not to follow


_opener = urllib.request.build_opener(_NoRedirects)


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and (bounded) body of a GET, whatever the status."""
    request = urllib.request.Request(url, headers={"Accept": "application/json, text/event-stream"})  # noqa: S310
    try:
        with _opener.open(request, timeout=TIMEOUT_SECONDS) as response:
            return response.status, dict(response.headers.items()), response.read(MAX_BODY_BYTES)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read(MAX_BODY_BYTES)


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Command(BaseCommand):
    help = "Check what a hosted MCP client (Claude, ChatGPT) sees at ERRCATALOG_PUBLIC_URL, step by step."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", help="The public URL to check (default: ERRCATALOG_PUBLIC_URL).")
        parser.add_argument("--token", help="Also open an MCP session through the public URL with this client key.")
        parser.add_argument(
            "--allow-http", action="store_true", help="Accept plain http (a local stand-in; hosted clients need https)."
        )
        parser.add_argument(
            "--allow-private",
            action="store_true",
            help="Accept a loopback or private address (a local stand-in; hosted clients cannot reach one).",
        )

    def handle(self, *args: Any, url: str | None, token: str | None, **options: Any) -> None:
        public = (url or settings.OAUTH["PUBLIC_URL"]).strip().rstrip("/")
        if not public:
            raise CommandError(
                "ERRCATALOG_PUBLIC_URL is not set. Set it to the https URL your tunnel or reverse proxy gives this "
                "server (e.g. ERRCATALOG_PUBLIC_URL=https://errors.example.com ./dev up), then run this again with the "
                "same setting, or name the URL with --url."
            )
        self.failures = 0
        self.stdout.write(f"What a hosted MCP client sees at {public}/mcp:")
        checks: tuple[Callable[[str, dict[str, Any]], bool], ...] = (
            self._check_url,
            self._check_challenge,
            self._check_resource_metadata,
            self._check_server_metadata,
        )
        found: dict[str, Any] = {"allow_http": options["allow_http"], "allow_private": options["allow_private"]}
        for check in checks:
            if not check(public, found):
                break  # each step needs the one before it
        else:
            if token:
                self._check_session(public, token)
        if self.failures:
            raise CommandError(f"{self.failures} check(s) failed: a hosted client could not connect yet.")
        self.stdout.write(f"A hosted client can connect: add {public}/mcp as a custom connector and sign in.")

    # --- Each step says what it found, in one line, and whether the next can run -----------------------------

    def _say(self, passed: bool, text: str) -> bool:
        self.stdout.write(f"  [{OK if passed else FAILED}] {text}")
        self.failures += not passed
        return passed

    def _check_url(self, public: str, found: dict[str, Any]) -> bool:
        parts = urlsplit(public)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return self._say(False, f"{public} is not an http(s) URL with a host.")
        if parts.scheme != "https" and not found["allow_http"]:
            return self._say(False, "The URL is plain http: Claude and ChatGPT connect to https URLs only.")
        try:
            addresses = {str(info[4][0]) for info in socket.getaddrinfo(parts.hostname, parts.port or 443)}
        except OSError as error:
            return self._say(False, f"{parts.hostname} does not resolve here ({error.strerror or error}).")
        shown = ", ".join(sorted(addresses))
        private = [a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_global]
        if private and not found["allow_private"]:
            return self._say(
                False,
                f"{parts.hostname} resolves to {shown}: a private or loopback address, which hosted clients "
                "cannot reach.",
            )
        return self._say(True, f"{parts.hostname} resolves to {shown}.")

    def _check_challenge(self, public: str, found: dict[str, Any]) -> bool:
        try:
            status, headers, _body = _get(f"{public}/mcp")
        except OSError as error:
            return self._say(False, f"Nothing answers at {public}/mcp ({getattr(error, 'reason', error)}).")
        challenge = {k.lower(): v for k, v in headers.items()}.get("www-authenticate", "")
        expected = resource_metadata_url(public, "/mcp")
        if status in (400, 421):
            return self._say(
                False,
                f"The server refused the host name ({status}): it was started without this public URL. Restart it "
                f"with ERRCATALOG_PUBLIC_URL={public} set in its environment.",
            )
        if status != 401:
            return self._say(False, f"GET {public}/mcp without a token answered {status}, not 401 with a challenge.")
        if expected not in challenge:
            return self._say(
                False,
                f"The 401 challenge does not point at {expected}: the server builds its URLs on another address "
                f"({challenge[:200]!r}); restart it with ERRCATALOG_PUBLIC_URL={public} set in its environment.",
            )
        return self._say(True, f"GET /mcp without a token: 401, and the challenge points at {expected}.")

    def _check_resource_metadata(self, public: str, found: dict[str, Any]) -> bool:
        url = resource_metadata_url(public, "/mcp")
        status, _headers, body = _get(url)
        document = _json(body) if status == 200 else None
        if document is None:
            return self._say(False, f"The protected resource metadata at {url} answered {status}, not a JSON object.")
        servers = document.get("authorization_servers") or []
        if document.get("resource") != f"{public}/mcp" or not servers:
            return self._say(
                False,
                f"The resource metadata names resource {document.get('resource')!r} and authorization servers "
                f"{servers!r}: a client would sign in elsewhere than {public}.",
            )
        found["issuer"] = servers[0]
        return self._say(True, f"The resource metadata names {public}/mcp, signed in at {servers[0]}.")

    def _check_server_metadata(self, public: str, found: dict[str, Any]) -> bool:
        issuer = found["issuer"].rstrip("/")
        parts = urlsplit(issuer)
        # RFC 8414: the well-known segment goes between the host and the issuer's path.
        url = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path}"
        status, _headers, body = _get(url)
        document = _json(body) if status == 200 else None
        if document is None:
            return self._say(False, f"The authorization server metadata at {url} answered {status} without JSON.")
        if document.get("issuer", "").rstrip("/") != issuer:
            return self._say(False, f"The authorization server's issuer is {document.get('issuer')!r}, not {issuer}.")
        ways = [
            *(["dynamic registration"] if document.get("registration_endpoint") else []),
            *(["client metadata documents"] if document.get("client_id_metadata_document_supported") else []),
        ]
        if not ways:
            return self._say(
                False,
                "The authorization server offers no way for a new client to register (no registration endpoint, no "
                "client metadata documents): hosted clients need one.",
            )
        return self._say(True, f"The authorization server {issuer} lets clients register by {' and '.join(ways)}.")

    def _check_session(self, public: str, token: str) -> None:
        import httpx2
        from mcp.client import Client
        from mcp.client.streamable_http import streamable_http_client

        async def session() -> int:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=TIMEOUT_SECONDS) as http,
                Client(streamable_http_client(f"{public}/mcp", http_client=http)) as client,
            ):
                return len((await client.list_tools()).tools)

        try:
            tools = anyio.run(session)
        except Exception as error:  # every way a session fails is reported, by its type's name
            self._say(False, f"An MCP session through {public}/mcp with the key failed ({type(error).__name__}).")
            return
        self._say(True, f"An MCP session through {public}/mcp with the key lists {tools} tools.")
