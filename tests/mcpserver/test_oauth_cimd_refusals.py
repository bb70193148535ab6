"""An authorization request whose client id is a URL that names no usable metadata document: refused before anyone
is asked to sign in, with what went wrong and what to do in plain words, and nothing sent to the redirect URI.

Each kind of failure is met as a person meets it: the authorization URL opened by someone not signed in, through
Django's test client for every kind, and in Debian's Chromium (Playwright) for the three a person meets most (a host
that does not resolve, a 404, a document that is not JSON). The documents are served over real TLS by
``tests.mcpserver.test_oauth_cimd``'s document server.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode, urlsplit

import pytest
from oauth2_provider.models import get_application_model
from playwright.async_api import async_playwright

from errcatalog.access.oauth import CLIENT_DOCUMENT_URL_SHOWN
from tests.mcpserver.test_oauth_cimd import document, private_allowed  # noqa: F401 (fixtures)
from tests.mcpserver.test_oauth_clients import CHROMIUM, CHROMIUM_ARGS
from tests.support.oauth_flow import REDIRECT_URI

# RFC 2606: .invalid never resolves.
UNRESOLVED = "https://client.errcatalog-test.invalid/client.json"


def _authorize_url(client_id: str, redirect_uri: str = REDIRECT_URI) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "state": "s",
    }
    return f"/oauth/authorize/?{urlencode(query)}"


def _refusal(client, client_id: str, redirect_uri: str = REDIRECT_URI) -> str:
    """The page someone not signed in gets for the authorization URL: a 400, no sign-in form, no redirect."""
    page = client.get(_authorize_url(client_id, redirect_uri))
    text = page.content.decode()
    assert page.status_code == 400, (page.status_code, page.get("Location"))
    assert "Location" not in page
    assert 'name="password"' not in text and "Allow" not in text
    assert 'id="oauth-advice"' in text
    return text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("missing", "could not be fetched: its server answered HTTP 404."),
        ("html", "is not JSON: its server must send it as application/json"),
        ("invalid_json", "is not valid JSON."),
        ("array", "is not a JSON object."),
        ("other_client_id", "is not this client&#x27;s: its client_id does not match the URL it was fetched from."),
        ("huge", "is larger than this server reads (16384 bytes)."),
        ("deep", "nests too deeply to be a client&#x27;s metadata."),
        ("client_credentials", "is refused: grant_types may name only authorization_code, refresh_token."),
    ],
)
def test_a_document_that_cannot_be_used_is_said_before_sign_in(client, document, private_allowed, mode, words):  # noqa: F811 (the fixtures imported above)
    document.mode = mode

    text = _refusal(client, document.url)

    assert f"The client&#x27;s metadata document at {document.url} {words}" in text
    assert "<script>alert(1)" not in text and "not closed" not in text and "padding" not in text  # nothing fetched
    assert document.fetches == 1
    assert not get_application_model().objects.filter(client_id=document.url).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("private", [False, True])
def test_a_host_that_does_not_resolve_is_said_before_sign_in(client, settings, private):
    settings.OAUTH = {**settings.OAUTH, "CIMD_ALLOW_PRIVATE": private}

    text = _refusal(client, UNRESOLVED)

    assert (
        f"The client&#x27;s metadata document at {UNRESOLVED} could not be fetched: the host name did not resolve."
        in (text)
    )
    assert "Check the client ID URL for a typo" in text


@pytest.mark.django_db
def test_a_document_on_a_private_address_is_said_to_be_one_and_not_fetched(client, document):  # noqa: F811 (the fixtures imported above)
    text = _refusal(client, document.url)

    assert "its host points to a private address, which this server does not fetch." in text
    assert document.fetches == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "client_id", ["https://10.0.0.5/client.json", "https://169.254.169.254/latest/meta-data", "https://[::1]/c.json"]
)
def test_private_and_metadata_addresses_are_named_as_such(client, client_id):
    assert "points to a private address" in _refusal(client, client_id)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "client_id",
    ["https://127.0.0.1/a/../client.json", "https://user@127.0.0.1/client.json", "https://127.0.0.1:99999/c"],
)
def test_a_url_no_client_id_may_be_is_said_and_not_fetched(client, document, private_allowed, client_id):  # noqa: F811 (the fixtures imported above)
    assert "is not at a URL a client ID may be" in _refusal(client, client_id)
    assert document.fetches == 0


@pytest.mark.django_db
def test_a_redirect_uri_the_document_does_not_name_is_refused_without_a_redirect(client, document, private_allowed):  # noqa: F811 (the fixtures imported above)
    elsewhere = "https://attacker.example/callback"

    text = _refusal(client, document.url, elsewhere)

    assert "does not name this redirect URI" in text
    assert "attacker.example" not in text


@pytest.mark.django_db
def test_the_url_shown_is_escaped_and_cut(client):
    client_id = "https://<b>x</b>.invalid/" + "a" * 400

    text = _refusal(client, client_id)

    assert "<b>x</b>" not in text and "&lt;b&gt;x&lt;/b&gt;.invalid/" in text
    assert "a" * (CLIENT_DOCUMENT_URL_SHOWN) not in text and "a…" in text


@pytest.mark.django_db
def test_a_reload_while_the_server_waits_to_fetch_again_still_says_why(client, document, private_allowed):  # noqa: F811 (the fixtures imported above)
    document.mode = "missing"
    first = _refusal(client, document.url)
    again = _refusal(client, document.url)

    assert "answered HTTP 404" in first and "answered HTTP 404" in again
    assert document.fetches == 1  # the toolkit's backoff: not fetched again


@pytest.mark.django_db
def test_a_usable_document_goes_on_to_sign_in_and_is_fetched_once(client, django_user_model, document, private_allowed):  # noqa: F811 (the fixtures imported above)
    url = _authorize_url(document.url)

    page = client.get(url)
    assert page.status_code == 302 and urlsplit(page["Location"]).path == "/accounts/login/"
    client.force_login(django_user_model.objects.create_user(username="ada", password="pw"))
    consent = client.get(url)
    assert consent.status_code == 200 and "Document Client" in consent.content.decode()
    assert document.fetches == 1  # the client resolved before sign-in is the one the consent page shows


@pytest.mark.django_db
def test_a_client_id_that_is_not_a_url_is_left_to_the_usual_checks(client):
    page = client.get(_authorize_url("not-a-url-client"))
    assert page.status_code == 302  # to sign in, as before: the toolkit checks it after


# --- In a real browser -------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_person_in_a_browser_reads_why_before_any_sign_in(mcp_url, document, private_allowed):  # noqa: F811 (the fixtures imported above)
    base = mcp_url.removesuffix("/mcp")
    document.mode = "missing"
    missing = document.url
    cases = {
        "unresolved": (UNRESOLVED, "could not be fetched: the host name did not resolve."),
        "missing": (missing, "could not be fetched: its server answered HTTP 404."),
    }

    async def visit() -> dict[str, dict]:
        seen: dict[str, dict] = {}
        async with async_playwright() as playwright:
            chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await chromium.new_page()
                for name, (client_id, _words) in cases.items():
                    await page.goto(base + _authorize_url(client_id))
                    seen[name] = await _what_the_page_shows(page)
                # The same server's document, now not JSON: a new URL, so it is fetched afresh.
                document.mode = "invalid_json"
                await page.goto(base + _authorize_url(document.url + "?v=2"))
                seen["invalid_json"] = await _what_the_page_shows(page)
            finally:
                await chromium.close()
        return seen

    seen = asyncio.run(visit())

    for name, (client_id, words) in cases.items():
        assert seen[name]["error"] == f"The client's metadata document at {client_id} {words}", seen[name]
    assert seen["invalid_json"]["error"].endswith("/client.json?v=2 is not valid JSON."), seen["invalid_json"]
    for shown in seen.values():
        assert shown["path"] == "/oauth/authorize/"  # no redirect: not to sign in, not to the app
        assert shown["sign_in_fields"] == 0
        assert shown["advice"]
        assert shown["site_name"] == "errcatalog"


async def _what_the_page_shows(page) -> dict:
    return {
        "path": urlsplit(page.url).path,
        "error": await page.locator("#oauth-error").inner_text(),
        "advice": await page.locator("#oauth-advice").inner_text(),
        "sign_in_fields": await page.locator("input[type=password]").count(),
        "site_name": await page.locator("#site-name").inner_text(),
    }
