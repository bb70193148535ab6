"""MCP authorization end to end: the SDK's own OAuth client against the served app, and every bad input refused.

The authorization server is django-oauth-toolkit; what is tested here is what errcatalog makes of it: the resource
metadata and 401 challenge clients discover it by, the consent page and the grant it records, audience-bound tokens,
step-up for a missing scope, refresh, revocation, and a clear 4xx for each bad request.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from django.utils import timezone
from mcp.client.auth import OAuthFlowError
from oauth2_provider.models import get_application_model

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_revoke
from tests.support.oauth_flow import REDIRECT_URI, MemoryStorage, Person, call_whoami, oauth_client, oauth_provider

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


@pytest.fixture
def person(django_user_model, catalog) -> Person:
    django_user_model.objects.create_user(username="ada", password=PASSWORD)
    return Person("ada", PASSWORD)


def _base(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp")


def _whoami(client):
    async def call():
        result = await client.call_tool("whoami", {})
        assert not result.is_error, result
        return result.structured_content

    return call()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdks_oauth_client_registers_signs_in_and_calls_a_tool_in_both_generations(mcp, person, mode):
    async def scenario():
        provider = oauth_provider(mcp.url, person)
        async with oauth_client(mcp.url, provider, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            return await _whoami(client)

    caller = asyncio.run(scenario())
    assert caller["client"] == "Test Agent"  # outcomes, rate limits and sessions are the grant's, by its client
    page = person.consent_page
    assert "Test Agent" in page and "127.0.0.1:9" in page  # who asks, and where the answer goes
    assert "Call MCP tools as you" in page and "Read the error catalog" in page
    grant = ClientToken.objects.get(application__isnull=False)
    assert (grant.user.username, grant.name, grant.key_hash) == ("ada", "Test Agent", None)
    assert grant.can_call_tools and grant.can_read_catalog and not grant.can_write_catalog
    assert grant.last_used_at is not None


def _forget_oauthlib_servers() -> None:
    """The toolkit builds each endpoint's oauthlib server once per view class and process, with the settings of that
    moment (``OAuthLibMixin.get_oauthlib_core``): forgotten, the next request builds it with today's."""
    from oauth2_provider.views.mixins import OAuthLibMixin

    classes = [OAuthLibMixin]
    while classes:
        cls = classes.pop()
        if "_oauthlib_core" in cls.__dict__:
            delattr(cls, "_oauthlib_core")
        classes.extend(cls.__subclasses__())


@pytest.fixture
def two_second_tokens(settings):
    """Access tokens that live 2 seconds, for this test only."""
    usual = settings.OAUTH2_PROVIDER
    settings.OAUTH2_PROVIDER = {**usual, "ACCESS_TOKEN_EXPIRE_SECONDS": 2}
    _forget_oauthlib_servers()
    yield
    settings.OAUTH2_PROVIDER = usual
    _forget_oauthlib_servers()


def test_the_sdks_client_refreshes_its_expired_token_without_asking_the_person_again(mcp, person, two_second_tokens):
    storage = MemoryStorage()

    async def scenario():
        async with oauth_client(mcp.url, oauth_provider(mcp.url, person, storage=storage)) as client:
            await _whoami(client)
            first = storage.tokens
            await asyncio.sleep(2.5)  # past the token's lifetime: the client refreshes before its next request
            await _whoami(client)
            return first

    first = asyncio.run(scenario())
    assert person.visits == 1
    assert storage.tokens.access_token != first.access_token
    assert storage.tokens.refresh_token != first.refresh_token  # rotated


def test_the_resource_metadata_and_the_401_challenge_lead_a_client_to_the_authorization_server(mcp):
    base = _base(mcp.url)
    refused = mcp.raw(body=b"{}")
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="tools catalog:read"' in challenge

    # A path that names no server gets /mcp's metadata: the challenge never carries what the client wrote.
    odd = httpx2.post(mcp.url + '/%22x%5C", scope="everything', content=b"{}")
    assert odd.status_code == 401
    assert odd.headers["www-authenticate"] == challenge

    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        document = httpx2.get(base + path).json()
        assert document["resource"] == mcp.url
        assert document["authorization_servers"] == [base]
        assert document["scopes_supported"] == ["tools", "catalog:read"]
        assert document["bearer_methods_supported"] == ["header"]
    named = httpx2.get(base + "/.well-known/oauth-protected-resource/mcp/git").json()
    assert named["resource"] == mcp.url + "/git"
    assert httpx2.get(base + "/.well-known/oauth-protected-resource/elsewhere").status_code == 404

    server = httpx2.get(base + "/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["response_types_supported"] == ["code"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert "none" in server["token_endpoint_auth_methods_supported"]
    assert server["authorization_response_iss_parameter_supported"] is True
    assert server["client_id_metadata_document_supported"] is True
    assert server["registration_endpoint"] == base + "/oauth/register/"
    assert server["revocation_endpoint"] == base + "/oauth/revoke/"


# --- A flow driven by hand, for the bad inputs the SDK's client never sends ---------------------------------


def _register(base: str, **metadata) -> httpx2.Response:
    body = {
        "client_name": "Hand Client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return httpx2.post(base + "/oauth/register/", json=body)


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _authorize_url(base: str, client_id: str, challenge: str | None, **extra) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "s1",
        "scope": "tools catalog:read",
        **({"code_challenge": challenge, "code_challenge_method": "S256"} if challenge else {}),
        **extra,
    }
    return f"{base}/oauth/authorize/?{urlencode(query, doseq=True)}"


def _code(location: str) -> str:
    return parse_qs(urlsplit(location).query)["code"][0]


def _exchange(base: str, client_id: str, code: str, verifier: str, **extra) -> httpx2.Response:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        "code_verifier": verifier,
        **extra,
    }
    return httpx2.post(base + "/oauth/token/", data=data)


def _tokens(base: str, person: Person, resource: str | None = None, scope: str = "tools catalog:read") -> dict:
    client_id = _register(base).json()["client_id"]
    verifier, challenge = _pkce()
    extra = {"resource": resource} if resource else {}
    location = asyncio.run(person.consent(_authorize_url(base, client_id, challenge, scope=scope, **extra)))
    response = _exchange(base, client_id, _code(location), verifier, **extra)
    assert response.status_code == 200, response.text
    return {**response.json(), "client_id": client_id}


def _call(mcp, access_token: str, url: str | None = None) -> httpx2.Response:
    return call_whoami(url or mcp.url, access_token)


def test_a_token_is_accepted_only_at_the_resource_it_was_issued_for(mcp, person, caplog):
    base = _base(mcp.url)
    for_git = _tokens(base, person, resource=mcp.url + "/git")["access_token"]
    with caplog.at_level(logging.INFO, logger="mcpserver.auth"):
        refused = _call(mcp, for_git)
    assert refused.status_code == 401  # issued for /mcp/git, so not for /mcp
    assert _messages(caplog, "mcpserver.auth") == ["MCP request refused: the token was issued for another resource"]

    for_root = _tokens(base, person, resource=mcp.url)["access_token"]
    assert _call(mcp, for_root).status_code == 200
    # A token for /mcp reaches the servers under it too (this one has none: 404 after the token, as for any caller).
    assert _call(mcp, for_root, mcp.url + "/git").status_code == 404


def test_a_resource_of_another_service_is_refused_before_any_code_is_issued(mcp, person):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    page = _visit(person, _authorize_url(base, client_id, _pkce()[1], resource="https://elsewhere.example/mcp"))
    assert page.status_code == 400
    assert "not served here" in page.text


def test_a_token_without_the_tools_scope_is_told_which_scopes_to_ask_for(mcp, person):
    base = _base(mcp.url)
    reader = _tokens(base, person, scope="catalog:read")["access_token"]
    refused = _call(mcp, reader)
    assert refused.status_code == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="tools catalog:read"' in challenge  # what it holds and what it lacks, in one challenge
    assert "resource_metadata=" in challenge


def test_a_refresh_rotates_the_refresh_token_and_a_reused_one_revokes_the_family(mcp, person):
    base = _base(mcp.url)
    first = _tokens(base, person)
    refresh = {"grant_type": "refresh_token", "client_id": first["client_id"]}
    second = httpx2.post(base + "/oauth/token/", data={**refresh, "refresh_token": first["refresh_token"]})
    assert second.status_code == 200, second.text
    assert second.json()["refresh_token"] != first["refresh_token"]
    assert _call(mcp, second.json()["access_token"]).status_code == 200

    replayed = httpx2.post(base + "/oauth/token/", data={**refresh, "refresh_token": first["refresh_token"]})
    assert replayed.status_code == 400
    assert replayed.json()["error"] == "invalid_grant"


def test_revoking_a_grant_in_admin_or_a_token_at_the_endpoint_takes_effect_on_the_next_call(mcp, person):
    base = _base(mcp.url)
    tokens = _tokens(base, person)
    assert _call(mcp, tokens["access_token"]).status_code == 200
    client_token_revoke(token=ClientToken.objects.get(application__client_id=tokens["client_id"]))
    assert _call(mcp, tokens["access_token"]).status_code == 401
    refresh = {"grant_type": "refresh_token", "client_id": tokens["client_id"]}
    refresh["refresh_token"] = tokens["refresh_token"]
    refreshed = httpx2.post(base + "/oauth/token/", data=refresh)
    assert refreshed.status_code == 400  # the grant's refresh tokens went with it

    again = _tokens(base, person)
    assert _call(mcp, again["access_token"]).status_code == 200
    revoked = httpx2.post(
        base + "/oauth/revoke/", data={"token": again["access_token"], "client_id": again["client_id"]}
    )
    assert revoked.status_code == 200
    assert _call(mcp, again["access_token"]).status_code == 401


def test_an_expired_token_is_refused(mcp, person):
    from oauth2_provider.models import get_access_token_model

    tokens = _tokens(_base(mcp.url), person)
    assert _call(mcp, tokens["access_token"]).status_code == 200
    get_access_token_model().objects.update(expires=timezone.now() - timezone.timedelta(seconds=1))
    ClientToken.objects.get(application__isnull=False).save()  # as any token change does: this process re-checks
    assert _call(mcp, tokens["access_token"]).status_code == 401


def test_tokens_are_stored_as_hashes_only(mcp, person):
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    tokens = _tokens(_base(mcp.url), person)
    stored = get_access_token_model().objects.get(user__isnull=False)
    assert stored.token == "" and stored.token_checksum == hashlib.sha256(tokens["access_token"].encode()).hexdigest()
    assert get_refresh_token_model().objects.get().token == ""
    registration = get_access_token_model().objects.get(user__isnull=True)  # RFC 7592's management token
    assert registration.token == ""


def test_a_token_in_the_query_string_is_never_read(mcp, person):
    tokens = _tokens(_base(mcp.url), person)
    response = httpx2.post(
        f"{mcp.url}?access_token={tokens['access_token']}",
        content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401


def _visit(person: Person, url: str) -> httpx2.Response:
    async def visit():
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            return await person._signed_in_page(http, url)

    return asyncio.run(visit())


def test_an_authorization_request_without_pkce_is_sent_back_to_the_client(mcp, person, caplog):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    with caplog.at_level(logging.WARNING, logger="errcatalog.oauth"):
        answer = _visit(person, _authorize_url(base, client_id, None))
    assert _messages(caplog, "errcatalog.oauth") == ["Authorization refused: invalid_request"]
    assert answer.status_code == 302
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert query["error"] == ["invalid_request"] and "code" not in query


@pytest.mark.parametrize("method", ["plain", None])
def test_plain_pkce_is_refused_before_anyone_is_asked_to_consent(mcp, person, method, caplog):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    url = _authorize_url(
        base, client_id, None, code_challenge=verifier, **({"code_challenge_method": method} if method else {})
    )
    with caplog.at_level(logging.WARNING, logger="errcatalog.oauth"):
        page = _visit(person, url)
    assert page.status_code == 400
    assert "S256" in page.text and "Allow" not in page.text
    assert len([record for record in caplog.records if record.name == "errcatalog.oauth"]) == 1


def _messages(caplog, logger: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == logger]


def test_a_code_works_once_and_only_with_its_verifier_and_redirect_uri(mcp, person, caplog):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    verifier, challenge = _pkce()
    code = _code(asyncio.run(person.consent(_authorize_url(base, client_id, challenge))))
    assert _exchange(base, client_id, code, "wrong-" + verifier).json()["error"] == "invalid_grant"

    verifier, challenge = _pkce()
    code = _code(asyncio.run(person.consent(_authorize_url(base, client_id, challenge))))
    other_redirect = _exchange(base, client_id, code, verifier, redirect_uri="http://127.0.0.1:9/other")
    assert other_redirect.status_code in (400, 401)

    verifier, challenge = _pkce()
    code = _code(asyncio.run(person.consent(_authorize_url(base, client_id, challenge))))
    assert _exchange(base, client_id, code, verifier).status_code == 200
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="errcatalog.oauth"):
        reused = _exchange(base, client_id, code, verifier)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    assert _messages(caplog, "errcatalog.oauth") == ["Token request refused with HTTP 400: invalid_grant"]


def test_a_redirect_uri_that_was_not_registered_gets_no_redirect(mcp, person, caplog):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    with caplog.at_level(logging.WARNING, logger="errcatalog.oauth"):
        page = _visit(
            person, _authorize_url(base, client_id, _pkce()[1], redirect_uri="https://attacker.example/steal")
        )
    assert _messages(caplog, "errcatalog.oauth") == ["Authorization refused: invalid_request"]
    assert page.status_code == 400  # an error page here, never a redirect to the unregistered URI
    assert "attacker.example" not in page.headers.get("location", "")


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://attacker.example/callback",
        "http://10.0.0.5/callback",
        "https://example.com/cb#fragment",
        # The consent page would read "send you back to claude.ai@attacker.example".
        "https://claude.ai@attacker.example/callback",
    ],
)
def test_registration_refuses_redirect_uris_a_code_could_leak_through(mcp, redirect_uri, caplog):
    with caplog.at_level(logging.WARNING, logger="errcatalog.oauth"):
        response = _register(_base(mcp.url), redirect_uris=[redirect_uri])
    assert response.status_code == 400
    assert response.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")
    assert len([r for r in caplog.records if r.name == "errcatalog.oauth"]) == 1


def test_loopback_and_desktop_app_redirect_uris_register(mcp):
    for uri in ("http://127.0.0.1:33418/callback", "http://localhost:6274/oauth/callback", "cursor://anysphere/cb"):
        response = _register(_base(mcp.url), redirect_uris=[uri])
        assert response.status_code == 201, (uri, response.text)


def test_a_registration_flood_from_one_address_is_answered_429(mcp, settings):
    settings.OAUTH = {**settings.OAUTH, "REGISTRATIONS_PER_HOUR": 3}
    statuses = [_register(_base(mcp.url)).status_code for _ in range(5)]
    assert statuses == [201, 201, 201, 429, 429]


def test_a_person_who_denies_consent_gives_the_client_nothing(mcp, django_user_model, catalog):
    django_user_model.objects.create_user(username="bob", password=PASSWORD)
    person = Person("bob", PASSWORD, allow=False)

    async def scenario():
        async with oauth_client(mcp.url, oauth_provider(mcp.url, person, storage=MemoryStorage())):
            pass

    with pytest.raises((PermissionError, OAuthFlowError, ExceptionGroup)):
        asyncio.run(scenario())
    assert not ClientToken.objects.filter(application__isnull=False).exists()


def test_the_rest_api_accepts_tokens_issued_for_it_by_scope(mcp, person):
    base = _base(mcp.url)
    codes = base + "/api/v1/codes/"

    def get(token: str) -> httpx2.Response:
        return httpx2.get(codes, headers={"Authorization": f"Bearer {token}"})

    reader = _tokens(base, person, resource=base + "/api/v1", scope="catalog:read")["access_token"]
    assert get(reader).status_code == 200
    written = httpx2.post(codes, json={"code": "X"}, headers={"Authorization": f"Bearer {reader}"})
    assert written.status_code == 403 and "catalog:write" in written.text
    # A step-up challenge, as at /mcp: what it holds and what it lacks.
    challenge = written.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="catalog:read catalog:write"' in challenge

    for_mcp = _tokens(base, person, resource=mcp.url)["access_token"]
    refused = get(for_mcp)
    assert refused.status_code == 401  # issued for /mcp, not for the API
    assert (
        f'resource_metadata="{base}/.well-known/oauth-protected-resource/api/v1"' in refused.headers["www-authenticate"]
    )

    no_reading = _tokens(base, person, resource=base + "/api/v1", scope="tools")["access_token"]
    assert get(no_reading).status_code == 403
    for reading in ("render", "classify"):  # a POST, and a read of the catalog all the same
        answer = httpx2.post(f"{base}/api/v1/{reading}/", json={}, headers={"Authorization": f"Bearer {no_reading}"})
        assert answer.status_code == 403 and "catalog:read" in answer.text, reading
    metrics = httpx2.get(base + "/api/v1/metrics/", headers={"Authorization": f"Bearer {reader}"})
    assert metrics.status_code == 403  # metrics:read was not granted


def test_a_client_made_by_hand_with_a_plain_http_redirect_off_loopback_is_refused_at_authorization(mcp, person):
    from oauth2_provider.models import Application

    insecure = "http://intranet.example/callback"
    Application.objects.create(
        client_id="by-hand",
        name="By Hand",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=insecure,
    )
    page = _visit(person, _authorize_url(_base(mcp.url), "by-hand", _pkce()[1], redirect_uri=insecure))
    assert page.status_code == 400 and "loopback" in page.text
    assert "location" not in page.headers


def test_a_client_asking_for_automatic_approval_is_still_shown_the_consent_page(mcp, person):
    base = _base(mcp.url)
    tokens = _tokens(base, person, resource=mcp.url + "/git")  # a live token: the toolkit's "auto" would skip the page
    grant = ClientToken.objects.get(application__client_id=tokens["client_id"])
    grant.can_call_tools = False  # taken away in admin: only the person's consent gives it back
    grant.save(update_fields=["can_call_tools"])

    page = _visit(person, _authorize_url(base, tokens["client_id"], _pkce()[1], approval_prompt="auto"))

    assert page.status_code == 200 and "Allow" in page.text  # asked, never sent back with a code
    grant.refresh_from_db()
    assert not grant.can_call_tools


def _authorize_url_without_redirect(base: str, client_id: str) -> str:
    url = _authorize_url(base, client_id, _pkce()[1])
    query = {key: values for key, values in parse_qs(urlsplit(url).query).items() if key != "redirect_uri"}
    return f"{base}/oauth/authorize/?{urlencode(query, doseq=True)}"


def test_a_plain_http_redirect_off_loopback_is_refused_when_the_request_names_no_redirect_uri(mcp, person):
    from oauth2_provider.models import Application

    Application.objects.create(
        client_id="by-hand",
        name="By Hand",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://intranet.example/callback",  # the only one, so the toolkit uses it when none is named
    )
    page = _visit(person, _authorize_url_without_redirect(_base(mcp.url), "by-hand"))
    assert page.status_code == 400 and "loopback" in page.text
    assert "location" not in page.headers


def test_a_registration_update_refuses_a_plain_http_redirect_off_loopback(mcp):
    registered = _register(_base(mcp.url)).json()
    body = {
        "client_name": "Hand Client",
        "redirect_uris": ["http://attacker.example/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    }
    headers = {"Authorization": f"Bearer {registered['registration_access_token']}"}
    response = httpx2.put(registered["registration_client_uri"], json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize("path", ["/%E2%82%AC", '/x",%20resource_metadata="https://attacker.example'])
def test_the_401_challenge_under_a_path_that_names_no_server_points_at_the_endpoints_metadata(mcp, path):
    refused = httpx2.post(mcp.url + path, content=b"{}", headers={"Content-Type": "application/json"})
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert f'resource_metadata="{_base(mcp.url)}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert "attacker.example" not in challenge


def test_no_code_or_token_is_logged_even_at_debug_level(mcp, person, caplog):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    verifier, challenge = _pkce()
    with caplog.at_level(logging.DEBUG):  # an operator's LOG_LEVEL=DEBUG
        code = _code(asyncio.run(person.consent(_authorize_url(base, client_id, challenge))))
        tokens = _exchange(base, client_id, code, verifier).json()
        assert _call(mcp, tokens["access_token"]).status_code == 200
    # The server's records, not those of the test's own HTTP client (which sees the redirect with the code).
    logged = "\n".join(record.getMessage() for record in caplog.records if not record.name.startswith("httpcore"))
    for secret in (code, verifier, tokens["access_token"], tokens["refresh_token"]):
        assert secret not in logged


def test_a_token_request_naming_another_service_is_refused_though_the_authorization_named_none(mcp, person):
    base = _base(mcp.url)
    client_id = _register(base).json()["client_id"]
    verifier, challenge = _pkce()
    code = _code(asyncio.run(person.consent(_authorize_url(base, client_id, challenge))))
    refused = _exchange(base, client_id, code, verifier, resource="https://elsewhere.example/mcp")
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target"


def test_the_rate_limit_counts_per_grant_beside_static_keys(mcp, person, settings):
    settings.MCP = {**settings.MCP, "RATE_LIMIT_PER_MINUTE": 2}

    async def calls(client, n: int) -> list[bool]:
        return [(await client.call_tool("whoami", {})).is_error for _ in range(n)]

    async def scenario():
        async with oauth_client(mcp.url, oauth_provider(mcp.url, person)) as client:
            granted = await calls(client, 3)
        async with mcp.client() as client:
            keyed = await calls(client, 1)
        return granted, keyed

    granted, keyed = asyncio.run(scenario())
    assert granted == [False, False, True]  # the grant's third call in the minute is the catalog's RATE_LIMIT
    assert keyed == [False]  # a static key has its own count


# --- Deep JSON and registrations that change what a client is ------------------------------------------------------

DEEP = "[" * 200_000 + "]" * 200_000  # 400 kB: under every size limit, far over any nesting a request needs


def test_a_deeply_nested_tool_call_from_a_token_without_the_tools_scope_is_answered_not_a_500(mcp, person):
    reader = _tokens(_base(mcp.url), person, scope="catalog:read")["access_token"]
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {"x": ' + DEEP
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {reader}",
        "MCP-Protocol-Version": "2026-07-28",
    }
    for tail in ("}}}", "}}}}"):  # valid JSON, and not
        response = httpx2.post(mcp.url, content=(body + tail).encode(), headers=headers, timeout=30)
        assert response.status_code < 500, response.text[:300]
        assert "whoami" not in response.text  # nothing of the call ran or was echoed


def test_a_deeply_nested_registration_is_refused_as_invalid_metadata(mcp, caplog):
    base = _base(mcp.url)
    body = '{"client_name": "Deep", "redirect_uris": ["http://127.0.0.1:9/cb"], "x": ' + DEEP + "}"
    with caplog.at_level(logging.WARNING, logger="errcatalog.oauth"):
        response = httpx2.post(base + "/oauth/register/", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_client_metadata",
        "error_description": "The client metadata nests deeper than 64 levels.",
    }
    registered = _register(base).json()
    update = httpx2.put(
        registered["registration_client_uri"],
        content=body,
        headers={"Authorization": f"Bearer {registered['registration_access_token']}"},
    )
    assert update.status_code == 400 and update.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize(
    "metadata, reason",
    [
        ({"grant_types": ["client_credentials"]}, "grant_types may name only authorization_code, refresh_token."),
        ({"grant_types": ["authorization_code", "password"]}, "grant_types may name only"),
        ({"grant_types": ["implicit"]}, "grant_types may name only"),
        ({"response_types": ["token"]}, "response_types may name only code."),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "token_endpoint_auth_method must be one of"),
    ],
)
def test_registration_and_its_update_refuse_what_this_server_does_not_offer(mcp, metadata, reason):
    base = _base(mcp.url)
    refused = _register(base, **metadata)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_client_metadata" and reason in refused.json()["error_description"]

    registered = _register(base).json()
    body = {
        "client_name": "Hand Client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    headers = {"Authorization": f"Bearer {registered['registration_access_token']}"}
    update = httpx2.put(registered["registration_client_uri"], json=body, headers=headers)
    assert update.status_code == 400 and reason in update.json()["error_description"]
    application = get_application_model().objects.get(client_id=registered["client_id"])
    assert application.authorization_grant_type == "authorization-code"
