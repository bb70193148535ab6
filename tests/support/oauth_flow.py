"""A person at the consent page, driven over HTTP, and the SDK's OAuth client around it.

``Person`` signs in with a Django account and answers a consent page as a browser would (cookies, CSRF token, the
form's hidden fields); ``oauth_client`` is the official SDK's ``OAuthClientProvider`` with in-memory storage whose
callback is that person, so a test runs the whole authorization code flow against the served app.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never reached: the person reads the code off the redirect
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)"(?: value="([^"]*)")?[^>]*>')


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Person:
    """Someone with a Django account who allows (or denies) what a consent page asks."""

    def __init__(self, username: str, password: str, *, allow: bool = True) -> None:
        self.username = username
        self.password = password
        self.allow = allow
        self.authorization_url: str | None = None
        self.consent_page: str | None = None
        self.visits = 0

    async def visit(self, authorization_url: str) -> None:
        self.authorization_url = authorization_url
        self.visits += 1

    async def answer(self) -> AuthorizationCodeResult:
        """Sign in, read the consent page, allow or deny; the redirect's parameters."""
        assert self.authorization_url is not None, "the client never sent the person to the authorization page"
        redirect = await self.consent(self.authorization_url)
        query = parse_qs(urlsplit(redirect).query)
        if "code" not in query:
            raise PermissionError(f"no code in the redirect: {redirect}")
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    async def consent(self, authorization_url: str) -> str:
        """The Location the consent page's answer redirects to."""
        async with httpx2.AsyncClient(follow_redirects=False, timeout=20) as http:
            page = await self._signed_in_page(http, authorization_url)
            assert page.status_code == 200, (page.status_code, page.text[:500])
            self.consent_page = page.text
            fields = {name: html.unescape(value or "") for name, value in _HIDDEN.findall(page.text)}
            if self.allow:
                fields["allow"] = "Allow"
            answer = await http.post(authorization_url, data=fields, headers={"Referer": authorization_url})
            assert answer.status_code == 302, (answer.status_code, answer.text[:500])
            return answer.headers["location"]

    async def _signed_in_page(self, http: httpx2.AsyncClient, url: str) -> httpx2.Response:
        page = await http.get(url)
        if page.status_code != 302 or "/accounts/login/" not in page.headers["location"]:
            return page
        login_url = urljoin(url, page.headers["location"])
        form = await http.get(login_url)
        token = dict(_HIDDEN.findall(form.text))["csrfmiddlewaretoken"]
        signed_in = await http.post(
            login_url,
            data={"username": self.username, "password": self.password, "csrfmiddlewaretoken": token},
            headers={"Referer": login_url},
        )
        assert signed_in.status_code == 302, ("sign-in failed", signed_in.status_code)
        return await http.get(url)


def call_whoami(url: str, token: str) -> httpx2.Response:
    """A raw 2026-07-28 ``tools/call`` of ``whoami`` at ``url`` with ``token`` as the bearer: the HTTP answer itself,
    for tests that look at statuses and challenges."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "whoami", "arguments": {}, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "whoami",
    }
    return httpx2.post(url, content=body, headers=headers, timeout=10)


def client_metadata(**overrides) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        redirect_uris=[REDIRECT_URI],
        client_name="Test Agent",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        **overrides,
    )


def oauth_provider(
    mcp_url: str, person: Person, *, storage: MemoryStorage | None = None, **options
) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=options.pop("client_metadata", None) or client_metadata(),
        storage=storage or MemoryStorage(),
        redirect_handler=person.visit,
        callback_handler=person.answer,
        **options,
    )


@contextlib.asynccontextmanager
async def oauth_client(url: str, provider: OAuthClientProvider, *, mode: str = "auto") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(20)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client
