"""External identity provider mode end to end: a provider of the test's own, the served app, real tokens.

The provider is a local HTTP server in a thread: an OpenID configuration, a key set (JWKS) of RSA and EC keys made
here, and an RFC 7662 introspection endpoint. Its tokens are signed with those keys; bad tokens are made the way an
attacker or a misconfigured provider would make them, and each must be refused with a 401 and one warning.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from oauth2_provider.models import get_application_model

from errcatalog.access import external as external_module
from errcatalog.access.external import IDENTITY_PROVIDER, external_access_authenticate
from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_revoke
from errcatalog.caching import caches_reset
from tests.support.mcp import McpTarget
from tests.support.oauth_flow import call_whoami

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT = "claude-desktop"
INTROSPECTION_CLIENT = ("errcatalog", "s3cret:with/odd chars")
LOGGER = "errcatalog.access.external"


def _rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class IdentityProvider:
    """A Keycloak-like provider: issuer ``<origin>/realms/acme``, keys at its certs URL, tokens it introspects."""

    def __init__(self) -> None:
        # kid -> (private key, algorithm): what the key set publishes.
        self.keys: dict[str, tuple[object, str]] = {
            "rsa-1": (_rsa_key(), "RS256"),
            "ec-1": (ec.generate_private_key(ec.SECP256R1()), "ES256"),
        }
        self.introspected: dict[str, dict] = {}  # token -> the answer; any other token is inactive
        self.requests: list[str] = []
        self.delay = 0.0  # seconds each answer waits, so that requests in flight overlap
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                provider.requests.append(self.path)
                time.sleep(provider.delay)
                if self.path == "/realms/acme/.well-known/openid-configuration":
                    self._json(200, provider.metadata())
                elif self.path == "/realms/acme/protocol/openid-connect/certs":
                    self._json(200, provider.jwks())
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                provider.requests.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                expected = "Basic " + base64.b64encode(b"errcatalog:s3cret%3Awith%2Fodd%20chars").decode()
                if self.headers.get("Authorization") != expected:
                    self._json(401, {"error": "invalid_client"})
                    return
                token = parse_qs(body).get("token", [""])[0]
                self._json(200, provider.introspected.get(token, {"active": False}))

            def _json(self, status: int, document: dict) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_port}/realms/acme"
        self.introspection_url = self.issuer + "/protocol/openid-connect/token/introspect"
        self.thread = threading.Thread(target=self.server.serve_forever, name="test-identity-provider", daemon=True)
        self.thread.start()

    def metadata(self) -> dict:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.issuer + "/protocol/openid-connect/certs",
            "introspection_endpoint": self.introspection_url,
        }

    def jwks(self) -> dict:
        keys = []
        for kid, (key, algorithm) in self.keys.items():
            codec = RSAAlgorithm if algorithm.startswith("RS") else ECAlgorithm
            keys.append({**codec.to_jwk(key.public_key(), as_dict=True), "kid": kid, "use": "sig", "alg": algorithm})
        return {"keys": keys}

    def fetched(self, what: str) -> int:
        return sum(1 for path in self.requests if path.endswith(what))

    def claims(self, audience: str | list[str], **claims) -> dict:
        now = int(time.time())
        return {
            "iss": self.issuer,
            "sub": "f3b6a1c2",
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": uuid.uuid4().hex,
            "azp": CLIENT,
            "scope": "openid tools catalog:read",
            "email": "ada@example.com",
            "email_verified": True,
            **claims,
        }

    def token(self, audience: str | list[str], *, kid: str = "rsa-1", key=None, drop=(), **claims) -> str:
        payload = {name: value for name, value in self.claims(audience, **claims).items() if name not in drop}
        signing_key, algorithm = self.keys.get(kid, (None, "RS256"))
        return jwt.encode(payload, key or signing_key, algorithm=algorithm, headers={"kid": kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def idp():
    provider = IdentityProvider()
    yield provider
    provider.close()


@pytest.fixture
def external(mcp, idp, settings, django_user_model):
    """The served app in external mode with ``idp`` as its provider, and Ada, who has a Django user."""
    IDENTITY_PROVIDER.reset()
    base = mcp.url.removesuffix("/mcp")
    settings.OAUTH = {
        **settings.OAUTH,
        "MODE": "external",
        "PUBLIC_URL": base,
        "EXTERNAL": {**settings.OAUTH["EXTERNAL"], "ISSUER": idp.issuer, "ALLOW_HTTP": True},
    }
    django_user_model.objects.create_user(username="ada", email="Ada@example.com")
    yield mcp
    IDENTITY_PROVIDER.reset()


def _external_settings(settings, **values) -> None:
    settings.OAUTH = {**settings.OAUTH, "EXTERNAL": {**settings.OAUTH["EXTERNAL"], **values}}


def _call(url: str, token: str) -> httpx2.Response:
    return call_whoami(url, token)


def _refusals(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER]


@pytest.mark.parametrize("kid", ["rsa-1", "ec-1"])
def test_a_token_of_the_identity_provider_calls_a_tool_in_both_generations(external, idp, kid):
    token = idp.token(external.url, kid=kid)

    async def whoami(client):
        result = await client.call_tool("whoami", {})
        assert not result.is_error, result
        return result.structured_content["client"]

    assert McpTarget(external.url, token).run(whoami) == {"2026-07-28": CLIENT, "2025-11-25": CLIENT}

    grant = ClientToken.objects.get(application__isnull=False)
    assert (grant.user.username, grant.name, grant.key_hash, grant.revoked_at) == ("ada", CLIENT, None, None)
    assert grant.last_used_at is not None
    application = grant.application
    assert (application.client_id, application.name, application.redirect_uris) == (CLIENT, CLIENT, "")
    assert application.client_type == get_application_model().CLIENT_PUBLIC
    assert application.registration_source == "manual"
    # Another token of the same person and client: the same grant, and the keys are not fetched again.
    assert _call(external.url, idp.token(external.url, kid=kid)).status_code == 200
    assert ClientToken.objects.filter(application__isnull=False).count() == 1
    assert idp.fetched("/openid-configuration") == 1 and idp.fetched("/certs") == 1


def _hs256_with_the_public_key(idp, audience: str) -> str:
    """The algorithm-confusion attack: HS256 keyed with the provider's public RSA key, which anyone can read."""
    public = (
        idp.keys["rsa-1"][0]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )

    def part(document: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()

    signing_input = part({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}) + "." + part(idp.claims(audience))
    signature = base64.urlsafe_b64encode(hmac.new(public, signing_input.encode(), hashlib.sha256).digest())
    return signing_input + "." + signature.rstrip(b"=").decode()


BAD_TOKENS = {
    "wrong issuer": lambda idp, url: idp.token(url, iss="http://127.0.0.1:9/realms/other"),
    "wrong audience": lambda idp, url: idp.token("https://elsewhere.example/mcp"),
    "expired": lambda idp, url: idp.token(url, iat=int(time.time()) - 900, exp=int(time.time()) - 120),
    "not valid yet": lambda idp, url: idp.token(url, nbf=int(time.time()) + 600),
    "bad signature": lambda idp, url: idp.token(url, key=_rsa_key()),  # another key under the provider's kid
    "signature algorithm not accepted": lambda idp, url: jwt.encode(idp.claims(url), None, algorithm="none"),
    "signature algorithm not accepted (HS256)": _hs256_with_the_public_key,
    "unknown kid": lambda idp, url: idp.token(url, kid="rsa-9", key=_rsa_key()),
    "none of errcatalog's scopes": lambda idp, url: idp.token(url, scope="openid profile email"),
    "unknown user": lambda idp, url: idp.token(url, email="eve@example.com"),
    "unverified email": lambda idp, url: idp.token(url, email_verified=False),
    "no client claim": lambda idp, url: idp.token(url, drop=("azp",)),
    "no aud claim": lambda idp, url: idp.token(url, drop=("aud",)),
    "not a well-formed JWT": lambda idp, url: "not-a-jwt-at-all",
}


@pytest.mark.parametrize("reason", BAD_TOKENS)
def test_each_bad_token_is_refused_with_401_and_one_warning_naming_the_reason(external, idp, reason, caplog):
    token = BAD_TOKENS[reason](idp, external.url)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        refused = _call(external.url, token)
    assert refused.status_code == 401
    assert 'resource_metadata="' in refused.headers["www-authenticate"]
    logged = _refusals(caplog)
    assert len(logged) == 1, logged
    assert reason.split(" (")[0] in logged[0]
    assert token not in logged[0]
    assert not ClientToken.objects.filter(application__isnull=False).exists()


def test_an_unknown_person_gets_a_user_when_the_setting_allows(external, idp, settings, django_user_model):
    _external_settings(settings, CREATE_USERS=True)
    assert _call(external.url, idp.token(external.url, email="bob@example.com")).status_code == 200
    bob = django_user_model.objects.get(email="bob@example.com")
    assert (bob.username, bob.is_staff, bob.is_superuser, bob.has_usable_password()) == (
        "bob@example.com",
        False,
        False,
        False,
    )
    assert ClientToken.objects.get(application__isnull=False).user == bob


def test_another_user_claim_names_a_username(external, idp, settings, django_user_model):
    _external_settings(settings, USER_CLAIM="preferred_username", SCOPE_CLAIM="scp")
    django_user_model.objects.create_user(username="grace")
    token = idp.token(external.url, preferred_username="grace", scp=["tools", "catalog:read"], scope="")
    assert _call(external.url, token).status_code == 200
    assert ClientToken.objects.get(application__isnull=False).user.username == "grace"


def test_a_namespaced_email_claim_names_a_user_by_email_address(external, idp, settings):
    claim = "https://errors.example.com/email"
    _external_settings(settings, USER_CLAIM=claim)
    token = idp.token(external.url, drop=("email",), **{claim: "ADA@example.com"})
    assert _call(external.url, token).status_code == 200
    assert ClientToken.objects.get(application__isnull=False).user.username == "ada"


def test_a_rotated_key_is_fetched_when_a_token_names_it_and_made_up_key_ids_fetch_nothing(external, idp, caplog):
    assert _call(external.url, idp.token(external.url)).status_code == 200
    assert idp.fetched("/certs") == 1
    idp.keys = {"rsa-2": (_rsa_key(), "RS256")}  # the provider rotated its key
    assert _call(external.url, idp.token(external.url, kid="rsa-2")).status_code == 200
    assert idp.fetched("/certs") == 2
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        refused = _call(external.url, idp.token(external.url, kid="made-up", key=_rsa_key()))
    assert refused.status_code == 401
    assert idp.fetched("/certs") == 2  # a refetch was made a moment ago: not again
    assert "unknown kid" in _refusals(caplog)[0]


def _introspection(settings, idp) -> None:
    _external_settings(
        settings,
        INTROSPECTION_URL=idp.introspection_url,
        INTROSPECTION_CLIENT_ID=INTROSPECTION_CLIENT[0],
        INTROSPECTION_CLIENT_SECRET=INTROSPECTION_CLIENT[1],
    )


def test_an_opaque_token_is_accepted_while_introspection_says_it_is_active(external, idp, settings, caplog):
    _introspection(settings, idp)
    idp.introspected["opaque-good"] = {"active": True, **idp.claims(external.url), "client_id": CLIENT}
    idp.introspected["opaque-revoked"] = {"active": False}
    assert _call(external.url, "opaque-good").status_code == 200
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert _call(external.url, "opaque-revoked").status_code == 401
        assert _call(external.url, "opaque-never-issued").status_code == 401
    assert ["inactive" in message for message in _refusals(caplog)] == [True, True]
    # An answer is kept for a short while: the same token again costs the provider nothing.
    asked = idp.fetched("/introspect")
    assert external_access_authenticate("opaque-good") is not None
    assert idp.fetched("/introspect") == asked


def test_an_active_token_for_another_audience_is_refused_by_introspection_too(external, idp, settings):
    _introspection(settings, idp)
    idp.introspected["opaque-other"] = {"active": True, **idp.claims("https://elsewhere.example/mcp")}
    assert _call(external.url, "opaque-other").status_code == 401


def test_a_token_for_a_named_server_serves_only_that_server(external, idp):
    for_git = idp.token(external.url + "/git")
    assert _call(external.url, for_git).status_code == 401
    # Accepted at /mcp/git (which serves nothing here: 404 after the token, as for any caller).
    assert _call(external.url + "/git", for_git).status_code == 404
    for_root = idp.token(external.url)
    assert _call(external.url, for_root).status_code == 200
    assert _call(external.url + "/git", for_root).status_code == 404


def test_an_audience_that_names_the_whole_service_serves_the_endpoint_and_the_api(external, idp, settings):
    _external_settings(settings, AUDIENCES=("api://errcatalog",))
    token = idp.token("api://errcatalog", scope="tools catalog:read")
    assert _call(external.url, token).status_code == 200
    base = external.url.removesuffix("/mcp")
    assert httpx2.get(base + "/api/v1/codes/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    # The default audiences (the resource URLs) are no longer expected.
    assert _call(external.url, idp.token(external.url)).status_code == 401


def test_the_rest_api_accepts_a_token_issued_for_it(external, idp):
    base = external.url.removesuffix("/mcp")
    codes = base + "/api/v1/codes/"

    def get(token: str) -> httpx2.Response:
        return httpx2.get(codes, headers={"Authorization": f"Bearer {token}"})

    for_api = idp.token(base + "/api/v1", scope="catalog:read")
    assert get(for_api).status_code == 200
    written = httpx2.post(codes, json={"code": "X"}, headers={"Authorization": f"Bearer {for_api}"})
    assert written.status_code == 403 and "catalog:write" in written.text
    refused = get(idp.token(external.url))
    assert refused.status_code == 401  # issued for /mcp, not for the API
    assert "/.well-known/oauth-protected-resource/api/v1" in refused.headers["www-authenticate"]


def test_a_revoked_grant_stays_revoked_until_staff_delete_it(external, idp, caplog):
    assert _call(external.url, idp.token(external.url)).status_code == 200
    grant = ClientToken.objects.get(application__isnull=False)
    client_token_revoke(token=grant)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert _call(external.url, idp.token(external.url)).status_code == 401
    assert "grant revoked" in _refusals(caplog)[0]
    grant.delete()
    assert _call(external.url, idp.token(external.url)).status_code == 200
    assert ClientToken.objects.get(application__isnull=False).pk != grant.pk


def test_an_unreachable_provider_is_a_503_the_client_may_retry(external, idp, settings):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    _external_settings(settings, JWKS_URL=f"http://127.0.0.1:{closed_port}/certs")
    token = idp.token(external.url)
    unavailable = _call(external.url, token)
    assert unavailable.status_code == 503
    assert unavailable.headers["retry-after"] == "5"
    api = httpx2.get(external.url.removesuffix("/mcp") + "/api/v1/codes/", headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 503
    assert api.json()["error"]["code"] == "identity_provider_unavailable"
    assert api.headers["retry-after"] == "5"


def test_keys_fetched_before_an_outage_serve_on_for_a_bounded_time(external, idp, monkeypatch):
    assert _call(external.url, idp.token(external.url)).status_code == 200
    monkeypatch.setattr(external_module, "KEYS_FRESH_SECONDS", 0.0)  # every check now wants the keys fetched again
    idp.close()
    assert _call(external.url, idp.token(external.url)).status_code == 200
    monkeypatch.setattr(external_module, "KEYS_STALE_SECONDS", 0.0)  # and the outage has lasted too long
    assert _call(external.url, idp.token(external.url)).status_code == 503


def test_two_users_with_the_address_a_token_names_are_refused(external, idp, django_user_model, caplog):
    django_user_model.objects.create_user(username="ada2", email="ada@example.com")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert _call(external.url, idp.token(external.url)).status_code == 401
    assert "several users" in _refusals(caplog)[0]


def test_introspection_the_provider_refuses_is_a_503_not_a_401(external, idp, settings):
    _introspection(settings, idp)
    _external_settings(settings, INTROSPECTION_CLIENT_SECRET="wrong")
    idp.introspected["opaque-good"] = {"active": True, **idp.claims(external.url)}
    assert _call(external.url, "opaque-good").status_code == 503


def test_keys_are_fetched_over_https_only_unless_plain_http_is_allowed(external, idp, settings):
    _external_settings(settings, ALLOW_HTTP=False)
    assert _call(external.url, idp.token(external.url)).status_code == 503
    assert idp.requests == []


def test_the_resource_metadata_names_the_identity_provider(external, idp):
    base = external.url.removesuffix("/mcp")
    document = httpx2.get(base + "/.well-known/oauth-protected-resource/mcp").json()
    assert document["resource"] == external.url
    assert document["authorization_servers"] == [idp.issuer]


def test_static_keys_keep_working_in_external_mode(external):
    assert _call(external.url, external.key).status_code == 200


def test_tokens_checked_at_once_share_one_fetch_of_the_keys(external, idp):
    # The grant is made first: the test database (SQLite in memory) refuses a second writer at the same moment.
    assert external_access_authenticate(idp.token(external.url)) is not None
    caches_reset()
    idp.requests.clear()
    idp.delay = 0.3
    tokens = [idp.token(external.url) for _ in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda token: _call(external.url, token).status_code, tokens))
    assert statuses == [200] * 8
    assert idp.fetched("/certs") == 1
