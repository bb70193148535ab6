"""MCP authorization with real clients: mcp-remote's own OAuth flow, and a person in a real browser.

mcp-remote (the npm package Claude Desktop users run) is started as users start it, with nothing but our /mcp URL:
it registers itself, listens on its loopback callback port and opens a browser at the authorization URL. Its
browser here is the ``BROWSER`` script its opener (xdg-open) runs, which writes the URL to a file; a person
(``tests.support.oauth_flow.Person``) signs in and allows over HTTP, and the consent's redirect is followed to
mcp-remote's callback. The test then speaks MCP to mcp-remote over stdio with the SDK's client.

In Debian's Chromium (driven by Playwright, as the dashboard's browser tests do), the SDK's OAuth client sends the
browser to the authorization URL; the person mistypes the password once, signs in, reads the consent page and clicks
Allow or Deny; the browser lands on a local HTTP server that is the client's redirect URI. The connected-apps page
then revokes the grant, and the old token is refused on the next call.

Playwright's async API runs in the SDK client's event loop, where Django refuses ORM calls: the database is
read before and after each scenario, never inside it.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from django.test import Client as DjangoClient
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from oauth2_provider.models import get_access_token_model
from playwright.async_api import Page, async_playwright

from errcatalog.access.models import ClientToken
from tests.mcpserver.test_client_configs import node_clients  # noqa: F401 (a fixture)
from tests.support.oauth_flow import MemoryStorage, Person, oauth_client, oauth_provider

pytestmark = pytest.mark.django_db(transaction=True)

USERNAME = "ada"
PASSWORD = "correct horse battery staple"  # a test account's
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
BROWSER_AGENT = {
    "client_name": "Browser Agent",
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}
SIGN_IN_SECONDS = 30  # mcp-remote's own wait for its callback (its --auth-timeout default)


@pytest.fixture
def account(django_user_model, catalog) -> None:
    """The person's Django account (not staff: connecting an app needs none)."""
    django_user_model.objects.create_user(username=USERNAME, password=PASSWORD)


def _grant() -> ClientToken:
    return ClientToken.objects.select_related("user").get(application__isnull=False)


# --- mcp-remote ------------------------------------------------------------------------------------------------


async def _url_opened(opened: Path) -> str:
    """The URL mcp-remote's browser was sent to, once it has been."""
    for _ in range(SIGN_IN_SECONDS * 10):
        if opened.exists() and (url := opened.read_text().strip()):
            return url
        await asyncio.sleep(0.1)
    raise AssertionError("mcp-remote never opened a browser")


async def _sign_in_for_mcp_remote(person: Person, opened: Path) -> None:
    location = await person.consent(await _url_opened(opened))
    assert urlsplit(location).path == "/oauth/callback", location  # mcp-remote's loopback callback
    async with httpx2.AsyncClient(timeout=SIGN_IN_SECONDS) as http:
        landed = await http.get(location)
    assert landed.status_code == 200, (landed.status_code, landed.text[:500])


def test_mcp_remote_registers_signs_in_through_its_browser_and_proxies_a_tool_call(
    mcp_url,
    account,
    node_clients,  # noqa: F811 (the fixture imported above)
    tmp_path,
):
    person = Person(USERNAME, PASSWORD)
    opened = tmp_path / "opened-url"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" > "{opened}"\n')
    browser.chmod(0o755)
    log = tmp_path / "mcp-remote.log"
    mcp_remote = StdioServerParameters(
        command=str(node_clients / ".bin" / "mcp-remote"),
        args=[mcp_url],
        # Its token cache in this test's folder; the SDK passes on no desktop variables, so xdg-open runs BROWSER.
        env={"HOME": str(tmp_path), "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-auth"), "BROWSER": str(browser)},
    )

    async def whoami(sign_in: bool) -> dict:
        async with asyncio.TaskGroup() as tasks:
            signing_in = tasks.create_task(_sign_in_for_mcp_remote(person, opened)) if sign_in else None
            with log.open("a") as errlog:
                async with Client(stdio_client(mcp_remote, errlog=errlog), mode="legacy") as client:
                    result = await client.call_tool("whoami", {})
            assert not result.is_error, result
            if signing_in is not None:
                await signing_in
            return result.structured_content

    try:
        caller = asyncio.run(whoami(sign_in=True))
        opened.unlink()
        # Started again, as a desktop client does each day: its cached token serves, nobody is asked again.
        again = asyncio.run(whoami(sign_in=False))
    except BaseException:
        print(log.read_text())  # what mcp-remote said, for the failure report
        raise
    assert caller["client"] == again["client"] == "MCP CLI Proxy"
    assert not opened.exists()
    assert "Error" not in log.read_text()
    assert "MCP CLI Proxy" in person.consent_page and "localhost:" in person.consent_page  # its loopback callback
    grant = _grant()
    assert (grant.user.username, grant.name, grant.application.name) == (USERNAME, "MCP CLI Proxy", "MCP CLI Proxy")
    assert grant.can_call_tools and grant.last_used_at is not None
    assert any(path.suffix == ".json" for path in (tmp_path / "mcp-auth").rglob("*"))  # its cache stayed here


# --- A person in a real browser ---------------------------------------------------------------------------------


class RedirectReceiver:
    """The client's redirect URI: a local HTTP server that records the query each visit brings."""

    def __init__(self) -> None:
        queries = self.queries = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path == "/callback":  # not the browser's own asks, such as /favicon.ico
                    queries.append(parse_qs(parts.query))
                body = b"<!doctype html><title>Signed in</title><p>You can close this window."
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        self.thread = threading.Thread(target=self.server.serve_forever, name="oauth-redirect-uri", daemon=True)

    def __enter__(self) -> RedirectReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[RedirectReceiver]:
    with RedirectReceiver() as receiver:
        yield receiver


class BrowserPerson:
    """Someone at a real browser: signs in on the login page, reads the consent page and clicks a button.

    ``visit`` is the OAuth client's redirect handler, ``answer`` its callback handler: the code (or the refusal)
    is what the browser brought to the redirect URI, as the client's own server would read it.
    """

    def __init__(self, page: Page, receiver: RedirectReceiver, *, passwords: list[str], button: str) -> None:
        self.page = page
        self.receiver = receiver
        self.passwords = passwords  # tried in turn, as someone who mistypes first
        self.button = button
        self.consent_text: str | None = None
        self.login_errors: list[str] = []
        self.page_errors: list[str] = []

    async def visit(self, authorization_url: str) -> None:
        page = self.page
        await page.goto(authorization_url)
        for password in self.passwords:
            if urlsplit(page.url).path != "/accounts/login/":
                break
            await page.fill("#id_username", USERNAME)
            await page.fill("#id_password", password)
            async with page.expect_navigation():
                await page.click("input[type=submit]")
            if urlsplit(page.url).path == "/accounts/login/":
                self.login_errors.append(await page.locator(".errornote").inner_text())
        if urlsplit(page.url).path != "/oauth/authorize/":
            return  # never signed in: nothing to consent to, nothing reaches the client
        self.consent_text = await page.locator("#content-main").inner_text()
        async with page.expect_navigation(url=f"{self.receiver.uri}?*"):
            await page.click(f"input[type=submit][value={self.button}]")

    async def answer(self) -> AuthorizationCodeResult:
        if not self.receiver.queries:
            raise PermissionError("the browser never came back to the redirect URI")
        query = self.receiver.queries[-1]
        if "code" not in query:
            raise PermissionError(f"no code in the redirect: {query}")
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


def _mcp_status(mcp_url: str, access_token: str) -> int:
    """The status a plain MCP request with ``access_token`` gets (the SDK's OAuth client would sign in again)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {access_token}",
    }
    return httpx2.post(mcp_url, content=json.dumps(body), headers=headers, timeout=10).status_code


async def _browser_flow(
    mcp_url: str,
    receiver: RedirectReceiver,
    *,
    passwords: list[str],
    button: str,
    then: Callable[[Page, MemoryStorage], Awaitable[None]] | None = None,
) -> tuple[BrowserPerson, MemoryStorage, dict]:
    """The SDK's OAuth client with a person at Chromium; ``then(page, storage)`` runs after the tool call."""
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await chromium.new_page()
            person = BrowserPerson(page, receiver, passwords=passwords, button=button)
            # What would break these pages in any browser (a script error, a style or script the policy refuses);
            # not a missing static file, which this in-process server may not serve.
            page.on("pageerror", lambda error: person.page_errors.append(str(error)))
            page.on(
                "console",
                lambda message: "Content Security Policy" in message.text and person.page_errors.append(message.text),
            )
            storage = MemoryStorage()
            provider = oauth_provider(
                mcp_url,
                person,
                storage=storage,
                client_metadata=OAuthClientMetadata(**{**BROWSER_AGENT, "redirect_uris": [receiver.uri]}),
            )
            try:
                async with oauth_client(mcp_url, provider) as client:
                    result = await client.call_tool("whoami", {})
                    assert not result.is_error, result
                    if then is not None:
                        await then(page, storage)
                    return person, storage, result.structured_content
            except BaseException as error:
                error.add_note(f"the person: consent={person.consent_text!r} login errors={person.login_errors}")
                raise
        finally:
            await chromium.close()


def test_a_person_signs_in_and_allows_in_a_real_browser_then_revokes_the_app_there(mcp_url, account, receiver):
    revoked: dict = {}

    async def revoke_in_the_browser(page: Page, storage: MemoryStorage) -> None:
        token = storage.tokens.access_token
        revoked["before"] = await asyncio.to_thread(_mcp_status, mcp_url, token)
        await page.goto(mcp_url.removesuffix("/mcp") + "/accounts/apps/")
        row = page.locator("#connected-apps tbody tr", has_text="Browser Agent")
        revoked["row"] = await row.inner_text()
        async with page.expect_navigation():
            await row.locator("input[type=submit][value=Revoke]").click()
        revoked["notice"] = await page.locator("#revoked-notice").inner_text()
        revoked["listed after"] = await page.locator("#connected-apps").count()
        revoked["after"] = await asyncio.to_thread(_mcp_status, mcp_url, token)
        async with page.expect_navigation():
            await page.click("#sign-out input[type=submit]")
        revoked["signed out to"] = urlsplit(page.url).path

    person_at_browser, _storage, caller = asyncio.run(
        _browser_flow(
            mcp_url, receiver, passwords=["not the password", PASSWORD], button="Allow", then=revoke_in_the_browser
        )
    )
    assert caller["client"] == "Browser Agent"
    assert person_at_browser.page_errors == []
    # A wrong password leaves the person on the login page; only the right one reaches the consent page.
    assert len(person_at_browser.login_errors) == 1
    assert "correct username and password" in person_at_browser.login_errors[0]
    consent = person_at_browser.consent_text
    host = urlsplit(receiver.uri).netloc
    assert "Connect “Browser Agent” to errcatalog?" in consent
    assert f"act as {USERNAME} on /mcp" in consent
    assert f"send you back to {host}" in consent
    assert "Call MCP tools as you" in consent and "Read the error catalog" in consent
    assert len(receiver.queries) == 1 and "code" in receiver.queries[0]

    assert "Browser Agent" in revoked["row"] and "Call MCP tools as you" in revoked["row"]
    assert "Browser Agent" in revoked["notice"]
    assert revoked["listed after"] == 0  # the only app is gone from the list
    assert (revoked["before"], revoked["after"]) == (200, 401)
    assert revoked["signed out to"] == "/accounts/login/"
    assert _grant().revoked_at is not None


def test_a_person_who_clicks_deny_in_the_browser_gives_the_client_no_token(mcp_url, account, receiver):
    with pytest.raises(ExceptionGroup) as raised:  # the SDK's client raises from its task group
        asyncio.run(_browser_flow(mcp_url, receiver, passwords=[PASSWORD], button="Deny"))
    assert raised.group_contains(PermissionError, match="no code in the redirect", depth=1)
    denial = receiver.queries[0]
    assert denial["error"] == ["access_denied"]
    assert denial["iss"] == [mcp_url.removesuffix("/mcp")]  # RFC 9207: a refusal names its issuer as a code does
    assert not ClientToken.objects.filter(application__isnull=False).exists()
    assert not get_access_token_model().objects.filter(user__isnull=False).exists()


def test_signing_in_with_no_page_to_go_back_to_lands_on_the_connected_apps_page(client, account):
    signed_in = client.post("/accounts/login/", {"username": USERNAME, "password": PASSWORD})
    assert (signed_in.status_code, signed_in.headers["location"]) == (302, "/accounts/apps/")
    assert client.get("/accounts/login/", follow=True).redirect_chain == [("/accounts/apps/", 302)]
    back = client.post(
        "/accounts/login/?next=/oauth/authorize/%3Fclient_id%3Dx", {"username": USERNAME, "password": PASSWORD}
    )
    assert back.headers["location"] == "/oauth/authorize/?client_id=x"  # where a consent page sent the person


def test_someone_signed_in_as_another_account_signs_out_on_the_consent_page_and_comes_back_to_it(
    django_user_model, account
):
    django_user_model.objects.create_user(username="bob", password=PASSWORD)
    browser = DjangoClient(enforce_csrf_checks=True)
    registered = browser.post(
        "/oauth/register/",
        {**BROWSER_AGENT, "redirect_uris": ["http://127.0.0.1:9/callback"]},
        content_type="application/json",
    )
    query = {
        "response_type": "code",
        "client_id": registered.json()["client_id"],
        "redirect_uri": "http://127.0.0.1:9/callback",
        "scope": "tools",
        "state": "s1",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    consent_url = f"/oauth/authorize/?{urlencode(query)}"

    def sign_in(username: str) -> str:
        login = browser.get(consent_url, follow=True)
        assert login.redirect_chain[-1][0].startswith("/accounts/login/"), login.redirect_chain
        answer = browser.post(
            login.redirect_chain[-1][0],
            {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": _csrf_token(login)},
        )
        assert answer.headers["location"] == consent_url
        return browser.get(consent_url).content.decode()

    page = sign_in("bob")
    assert "act as <strong>bob</strong>" in page and "Not bob?" in page
    signed_out = browser.post(
        "/accounts/logout/", {"next": consent_url, "csrfmiddlewaretoken": _csrf_token(browser.get(consent_url))}
    )
    assert (signed_out.status_code, signed_out.headers["location"]) == (302, consent_url)  # back to the request
    assert f"act as <strong>{USERNAME}</strong>" in sign_in(USERNAME)


def _csrf_token(response) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode())[1]
