"""External identity provider mode under attack: forged, confused, stale and malformed tokens, and a provider whose
key set or introspection endpoint is rotated, broken, hostile, slow or gone.

The provider is ``test_oauth_external``'s (a real HTTP server with an RSA and an EC key). ``ProviderEndpoint`` is one
more real server on 127.0.0.1 standing in for the provider's key set or introspection URL when it has to answer what
a working provider never would. What must hold: every token the provider did not issue for this service is a 401
carrying the challenge, answered by the guard before any tool (no grant is made); every answer the provider cannot
give in time is a 503 the client may retry; nothing is a 500; and however many tokens arrive, the provider is asked
a bounded number of times.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import RSAAlgorithm

from errcatalog.access import external as external_module
from errcatalog.access.external import IDENTITY_PROVIDER
from errcatalog.access.models import ClientToken
from errcatalog.caching import caches_reset
from errcatalog.dependencies import RETRY_SECONDS
from mcpserver.auth import UNAUTHORIZED_MESSAGE
from tests.mcpserver import test_oauth_external as provider_tests
from tests.mcpserver.test_oauth_external import (
    CLIENT,
    INTROSPECTION_CLIENT,
    LOGGER,
    IdentityProvider,
    _call,
    _external_settings,
    _refusals,
    _rsa_key,
)

pytestmark = pytest.mark.django_db(transaction=True)

# The fixtures of the mode's own tests: ``idp``, the provider; ``external``, the served app in external mode with it.
idp = provider_tests.idp
external = provider_tests.external

# What a provider's URL can answer instead of a usable document. Each is a 503 when the answer is needed, never a 500.
UNUSABLE_ANSWERS: dict[str, tuple[int, bytes]] = {
    "HTTP 500": (500, b'{"error": "server_error"}'),
    "an HTML page": (200, b"<html><body>502 Bad Gateway</body></html>"),
    "a JSON array": (200, b"[]"),
    "JSON nested past the decoder's recursion limit": (200, b"[" * 100_000 + b"]" * 100_000),
    "a document over the size limit": (200, b'{"keys": [], "padding": "' + b"x" * 600_000 + b'"}'),
    "a redirect": (302, b""),
}


class ProviderEndpoint:
    """One URL of the identity provider answering what the test sets: ``answer(request body)`` gives the status and
    body (a redirect points at ``redirect_to``); ``slowness`` "hang" sends nothing until the endpoint is closed, and
    "trickle" sends the whole answer a byte at a time, each byte well within a read timeout but the answer as a whole
    long after it."""

    TRICKLE_SECONDS = 0.05

    def __init__(self, answer: Callable[[bytes], tuple[int, bytes]]) -> None:
        self.answer = answer
        self.slowness: str | None = None
        self.redirect_to = ""
        self.requests = 0
        self.closed = threading.Event()
        self._count = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._answer(b"")

            def do_POST(self) -> None:
                self._answer(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def _answer(self, body: bytes) -> None:
                with endpoint._count:
                    endpoint.requests += 1
                if endpoint.slowness == "hang":
                    endpoint.closed.wait()
                    return
                status, content = endpoint.answer(body)
                location = f"Location: {endpoint.redirect_to}\r\n" if status in (301, 302, 307, 308) else ""
                # A head of over 500 bytes: trickled, it alone takes longer than a client waits for an answer.
                head = (
                    f"HTTP/1.0 {status} Answer\r\nContent-Type: application/json\r\n{location}"
                    f"X-Served-By: {'provider-' * 50}\r\n"
                    f"Content-Length: {len(content)}\r\nConnection: close\r\n\r\n"
                )
                message = head.encode() + content
                try:
                    if endpoint.slowness != "trickle":
                        self.wfile.write(message)
                        return
                    for index in range(len(message)):
                        if endpoint.closed.wait(endpoint.TRICKLE_SECONDS):
                            return
                        self.wfile.write(message[index : index + 1])
                except OSError:
                    pass  # the server gave up on the answer and closed the connection

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/provider"
        # Polled for shutdown every 50 ms (not the default half second): a test closes several.
        self.thread = threading.Thread(
            target=self.server.serve_forever, args=(0.05,), name="test-provider-endpoint", daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider_endpoint():
    """Makes ``ProviderEndpoint``s, closed after the test."""
    made: list[ProviderEndpoint] = []

    def make(answer: Callable[[bytes], tuple[int, bytes]]) -> ProviderEndpoint:
        made.append(ProviderEndpoint(answer))
        return made[-1]

    yield make
    for endpoint in made:
        endpoint.close()


def _serving_keys(provider: IdentityProvider) -> Callable[[bytes], tuple[int, bytes]]:
    return lambda body: (200, json.dumps(provider.jwks()).encode())


def _answering(document: object) -> Callable[[bytes], tuple[int, bytes]]:
    return lambda body: (200, json.dumps(document).encode())


def _break(endpoint: ProviderEndpoint, failure: str) -> None:
    if failure == "down":
        endpoint.close()
    else:
        endpoint.answer = lambda body: UNUSABLE_ANSWERS[failure]


def _part(document: object) -> str:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _signed(claims: dict, key, *, algorithm: str = "RS256", **header) -> str:
    """A token with exactly these claims and header fields, signed with ``key``: PyJWS signs the bytes as given, so
    claims PyJWT's own encoder would turn down (a string ``exp``, an ``iss`` list) can be signed too."""
    return jwt.api_jws.encode(json.dumps(claims).encode(), key, algorithm=algorithm, headers=header)


def _hmac_signed(header: dict, claims: dict, secret: bytes) -> str:
    """A token MACed with ``secret`` by hand: PyJWT refuses to use anything that looks like a public key as an HMAC
    secret, so the algorithm-confusion tokens an attacker sends are built the way the attacker builds them."""
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[header["alg"]]
    signing_input = _part(header) + "." + _part(claims)
    signature = hmac.new(secret, signing_input.encode(), digest).digest()
    return signing_input + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


def _assert_refused(response: httpx2.Response, case: str = "") -> None:
    """The guard's 401: the challenge that sends a client to the resource metadata, and no tool's answer."""
    assert response.status_code == 401, (case, response.status_code, response.text[:300])
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'resource_metadata="' in challenge, challenge
    assert response.json() == {"error": UNAUTHORIZED_MESSAGE}


def _assert_unavailable(response: httpx2.Response, case: str = "") -> None:
    """The guard's 503 for a provider that cannot answer: retry later, no challenge (the token may be good)."""
    assert response.status_code == 503, (case, response.status_code, response.text[:300])
    assert response.headers["retry-after"] == "5"
    assert "www-authenticate" not in response.headers
    assert "result" not in response.json()


def _refused(url: str, token: str, caplog, reason: str, case: str = "") -> None:
    """``token`` gets the 401, and the log names ``reason`` but never the token (``case`` names it in failures)."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        response = _call(url, token)
    _assert_refused(response, case)
    logged = _refusals(caplog)
    assert any(reason in message for message in logged), (case, reason, logged)
    assert not any(token in message for message in logged), case


def _no_grant() -> bool:
    return not ClientToken.objects.filter(application__isnull=False).exists()


def _introspected_at(settings, url: str) -> None:
    _external_settings(
        settings,
        INTROSPECTION_URL=url,
        INTROSPECTION_CLIENT_ID=INTROSPECTION_CLIENT[0],
        INTROSPECTION_CLIENT_SECRET=INTROSPECTION_CLIENT[1],
    )


# --- Another audience, another issuer ---------------------------------------------------------------------------------


def test_a_token_for_another_resource_is_refused_however_its_audience_names_it(external, idp, caplog):
    base = external.url.removesuffix("/mcp")
    port = base.rsplit(":", 1)[1]
    audiences = {
        "another service": "https://elsewhere.example/mcp",
        "another service, in a list": ["https://elsewhere.example/mcp", "https://elsewhere.example/api"],
        "a path that only starts like ours": base + "/mcpx",
        "a path that climbs out of a server": base + "/mcp/../admin",
        "this host on another port": base.replace(port, str(int(port) + 1)) + "/mcp",
        "this host by another name": f"http://localhost:{port}/mcp",
        "https instead of http": base.replace("http://", "https://") + "/mcp",
        "the service root, no resource": base,
        "the client's id (an ID token)": CLIENT,
        "the provider itself (a refresh token)": idp.issuer,
        "an empty list": [],
        "a number": 42,
        "an object": {"aud": external.url},
    }
    for name, audience in audiences.items():
        _refused(external.url, idp.token(audience), caplog, "wrong audience", name)
    assert _no_grant()
    # Another resource of this service: the token is the provider's, for the REST API, and /mcp refuses it.
    _assert_refused(_call(external.url, idp.token(base + "/api/v1")))
    # The same provider's token for this endpoint is accepted: the refusals above were the audience's.
    assert _call(external.url, idp.token(external.url)).status_code == 200


def test_a_token_of_another_issuer_is_refused_before_any_key_is_fetched(external, idp, caplog):
    issuers = {
        "another realm of the same provider": idp.issuer.replace("/acme", "/other"),
        "the issuer with a trailing slash": idp.issuer + "/",
        "the issuer in other case": idp.issuer.replace("/realms/acme", "/realms/ACME"),
        "the issuer in a list": [idp.issuer],
        "no issuer": None,
    }
    for name, issuer in issuers.items():
        claims = idp.claims(external.url, iss=issuer)
        if issuer is None:
            del claims["iss"]
        _refused(external.url, _signed(claims, idp.keys["rsa-1"][0], kid="rsa-1"), caplog, "wrong issuer", name)
    assert idp.requests == []
    assert _no_grant()


def test_an_attackers_own_provider_and_key_headers_are_never_trusted(external, idp, caplog):
    """An attacker runs a provider of its own (the same key ids as ours), signs with its keys and points the token's
    ``jku``, ``x5u`` and embedded ``jwk`` headers at them: nothing the token says about keys is used."""
    attacker = IdentityProvider()
    try:
        _refused(external.url, attacker.token(external.url), caplog, "wrong issuer")
        attacker_key = attacker.keys["rsa-1"][0]
        attacker_certs = attacker.metadata()["jwks_uri"]
        attacker_jwk = {**RSAAlgorithm.to_jwk(attacker_key.public_key(), as_dict=True), "kid": "rsa-1"}
        for header in (
            {"jku": attacker_certs},
            {"x5u": attacker_certs},
            {"jwk": attacker_jwk},
            {"jku": attacker_certs, "jwk": attacker_jwk, "x5u": attacker_certs},
        ):
            token = _signed(idp.claims(external.url), attacker_key, kid="rsa-1", **header)
            _refused(external.url, token, caplog, "bad signature")
        assert attacker.requests == []
    finally:
        attacker.close()
    assert _no_grant()


# --- Unsigned tokens and algorithm confusion --------------------------------------------------------------------------


def test_an_unsigned_token_is_refused_in_every_spelling_of_none(external, idp, caplog):
    claims = idp.claims(external.url)
    for algorithm in ("none", "None", "NONE", "nOnE", "", None):
        for signature in ("", "c2lnbmF0dXJl"):
            header = {"alg": algorithm, "typ": "JWT", "kid": "rsa-1"}
            token = _part(header) + "." + _part(claims) + "." + signature
            _refused(external.url, token, caplog, "signature algorithm not accepted")
    # Without an alg at all.
    token = _part({"typ": "JWT", "kid": "rsa-1"}) + "." + _part(claims) + "."
    _refused(external.url, token, caplog, "signature algorithm not accepted")
    # Refused on the header alone: the provider's keys are not even fetched.
    assert idp.requests == []
    assert _no_grant()


def _public_key_forms(provider: IdentityProvider) -> dict[str, tuple[str, bytes]]:
    """Every form of the provider's public keys an attacker would try as an HMAC secret, with the key id to name."""
    pem, der = serialization.Encoding.PEM, serialization.Encoding.DER
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    rsa_public = provider.keys["rsa-1"][0].public_key()
    ec_public = provider.keys["ec-1"][0].public_key()
    published = {key["kid"]: key for key in provider.jwks()["keys"]}
    modulus = published["rsa-1"]["n"]
    return {
        "RSA, PEM (SubjectPublicKeyInfo)": ("rsa-1", rsa_public.public_bytes(pem, spki)),
        "RSA, PEM without its last newline": ("rsa-1", rsa_public.public_bytes(pem, spki).rstrip(b"\n")),
        "RSA, PEM (PKCS#1)": ("rsa-1", rsa_public.public_bytes(pem, serialization.PublicFormat.PKCS1)),
        "RSA, DER": ("rsa-1", rsa_public.public_bytes(der, spki)),
        "RSA, OpenSSH": (
            "rsa-1",
            rsa_public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH),
        ),
        "RSA, the JWK as published": ("rsa-1", json.dumps(published["rsa-1"]).encode()),
        "RSA, the JWK compact and sorted": (
            "rsa-1",
            json.dumps(published["rsa-1"], separators=(",", ":"), sort_keys=True).encode(),
        ),
        "RSA, the JWK's n as text": ("rsa-1", modulus.encode()),
        "RSA, the JWK's n as bytes": ("rsa-1", base64.urlsafe_b64decode(modulus + "=" * (-len(modulus) % 4))),
        "EC, PEM": ("ec-1", ec_public.public_bytes(pem, spki)),
        "EC, the JWK as published": ("ec-1", json.dumps(published["ec-1"]).encode()),
        "EC, the uncompressed point": (
            "ec-1",
            ec_public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint),
        ),
    }


def test_an_hmac_token_keyed_with_the_providers_public_key_is_refused_in_every_form(external, idp, caplog):
    claims = idp.claims(external.url)
    for name, (kid, secret) in _public_key_forms(idp).items():
        for algorithm in ("HS256", "HS384", "HS512"):
            for header in ({"alg": algorithm, "typ": "JWT", "kid": kid}, {"alg": algorithm, "typ": "JWT"}):
                token = _hmac_signed(header, claims, secret)
                # The token is what the attack needs: its MAC checks out with the public key as the secret.
                assert jwt.algorithms.HMACAlgorithm(getattr(hashlib, f"sha{algorithm[2:]}")).verify(
                    token.rsplit(".", 1)[0].encode(), secret, jwt.utils.base64url_decode(token.rsplit(".", 1)[1])
                ), name
                _refused(external.url, token, caplog, "signature algorithm not accepted", f"{name}, {algorithm}")
    assert idp.requests == []
    assert _no_grant()


def test_a_key_id_naming_a_key_of_another_type_or_use_verifies_nothing(external, idp, caplog, monkeypatch):
    """The set also publishes an encryption key, a key for RS512 only and a symmetric key; a token signed with each
    (correctly, with that very key) and naming it, or naming a key of the other type, is refused."""
    encryption_key, rs512_key, ec_key = _rsa_key(), _rsa_key(), idp.keys["ec-1"][0]
    shared_secret = b"a secret the provider shares with its clients!!"
    published = idp.jwks
    monkeypatch.setattr(
        idp,
        "jwks",
        lambda: {
            "keys": [
                *published()["keys"],
                {**RSAAlgorithm.to_jwk(encryption_key.public_key(), as_dict=True), "kid": "rsa-enc", "use": "enc"},
                {**RSAAlgorithm.to_jwk(rs512_key.public_key(), as_dict=True), "kid": "rsa-512", "alg": "RS512"},
                {"kty": "oct", "kid": "shared", "alg": "HS256", "k": _part(shared_secret)},
            ]
        },
    )
    claims = idp.claims(external.url)
    refusals = {
        "an encryption key": (_signed(claims, encryption_key, kid="rsa-enc"), "unknown kid"),
        "a key for another algorithm": (_signed(claims, rs512_key, kid="rsa-512"), "unknown kid"),
        "an EC key, by an RSA algorithm": (_signed(claims, idp.keys["rsa-1"][0], kid="ec-1"), "unknown kid"),
        "an RSA key, by an EC algorithm": (_signed(claims, ec_key, algorithm="ES256", kid="rsa-1"), "unknown kid"),
        "a symmetric key, by an RSA algorithm": (_signed(claims, _rsa_key(), kid="shared"), "unknown kid"),
        "a symmetric key, by its own algorithm": (
            _hmac_signed({"alg": "HS256", "kid": "shared"}, claims, shared_secret),
            "signature algorithm not accepted",
        ),
    }
    for name, (token, reason) in refusals.items():
        _refused(external.url, token, caplog, reason, name)
    assert _no_grant()
    # One fetch, and one more for the key ids the set lacks; no more however many tokens named them.
    assert idp.fetched("/certs") == 2
    # The set itself is fine: a token of the provider's signing key is accepted.
    assert _call(external.url, idp.token(external.url)).status_code == 200


# --- Unknown key ids --------------------------------------------------------------------------------------------------


def test_made_up_key_ids_cost_the_provider_one_fetch_however_many_tokens_name_them(external, idp):
    attacker_key = _rsa_key()
    attacker_ec_key = ec.generate_private_key(ec.SECP256R1())
    claims = idp.claims(external.url)
    tokens = [_signed(claims, attacker_key, kid=f"made-up-{number}") for number in range(48)]
    tokens += [_signed(claims, attacker_ec_key, algorithm="ES256", kid="rsa-1") for _ in range(8)]
    tokens += [_signed(claims, attacker_ec_key, algorithm="ES256", kid=f"ec-{number}") for number in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda token: _call(external.url, token), tokens))
    for response in responses:
        _assert_refused(response)
    # The first token fetches the set, the first unknown key id fetches it again; the rest wait for the interval.
    assert idp.fetched("/certs") == 2
    assert _no_grant()


def test_made_up_key_ids_keep_a_key_rotated_in_meanwhile_out_for_one_interval_at_most(
    external, idp, caplog, monkeypatch
):
    monkeypatch.setattr(external_module, "UNKNOWN_KEY_REFETCH_SECONDS", 2.0)
    assert _call(external.url, idp.token(external.url)).status_code == 200
    _refused(external.url, _signed(idp.claims(external.url), _rsa_key(), kid="made-up"), caplog, "unknown kid")
    refetched_at = time.monotonic()
    assert idp.fetched("/certs") == 2
    idp.keys["rsa-2"] = (_rsa_key(), "RS256")  # the provider rotates a key in right after the attacker's refetch
    _refused(external.url, idp.token(external.url, kid="rsa-2"), caplog, "unknown kid")
    assert idp.fetched("/certs") == 2
    time.sleep(max(0.0, refetched_at + 2.0 - time.monotonic()) + 0.1)
    assert _call(external.url, idp.token(external.url, kid="rsa-2")).status_code == 200
    assert idp.fetched("/certs") == 3


# --- Rotated, removed and broken key sets -----------------------------------------------------------------------------


def test_a_key_rotated_out_is_refused_as_soon_as_the_new_set_is_fetched(external, idp, caplog):
    assert _call(external.url, idp.token(external.url)).status_code == 200
    withdrawn, _algorithm = idp.keys.pop("rsa-1")
    idp.keys["rsa-2"] = (_rsa_key(), "RS256")
    assert _call(external.url, idp.token(external.url, kid="rsa-2")).status_code == 200  # the set is fetched again
    _refused(external.url, idp.token(external.url, kid="rsa-1", key=withdrawn), caplog, "unknown kid")
    assert idp.fetched("/certs") == 2


def test_a_key_removed_from_the_set_serves_until_the_next_scheduled_fetch_only(external, idp, caplog, monkeypatch):
    assert _call(external.url, idp.token(external.url)).status_code == 200
    withdrawn, _algorithm = idp.keys.pop("rsa-1")
    # Until the set is fetched again (KEYS_FRESH_SECONDS), the key fetched last serves.
    assert _call(external.url, idp.token(external.url, kid="rsa-1", key=withdrawn)).status_code == 200
    monkeypatch.setattr(external_module, "KEYS_FRESH_SECONDS", 0.0)
    _refused(external.url, idp.token(external.url, kid="rsa-1", key=withdrawn), caplog, "unknown kid")
    assert _call(external.url, idp.token(external.url, kid="ec-1")).status_code == 200


def test_keys_fetched_before_the_key_set_broke_serve_on_for_a_bounded_time(
    external, idp, settings, provider_endpoint, monkeypatch, caplog
):
    fresh, stale = external_module.KEYS_FRESH_SECONDS, external_module.KEYS_STALE_SECONDS
    for failure in [*UNUSABLE_ANSWERS, "down"]:
        caches_reset()
        IDENTITY_PROVIDER.reset()
        monkeypatch.setattr(external_module, "KEYS_FRESH_SECONDS", fresh)
        monkeypatch.setattr(external_module, "KEYS_STALE_SECONDS", stale)
        keys = provider_endpoint(_serving_keys(idp))
        keys.redirect_to = idp.metadata()["jwks_uri"]
        _external_settings(settings, JWKS_URL=keys.url)
        assert _call(external.url, idp.token(external.url)).status_code == 200, failure
        _break(keys, failure)
        monkeypatch.setattr(external_module, "KEYS_FRESH_SECONDS", 0.0)  # every token now wants the set again
        started = time.monotonic()
        for kid in ("rsa-1", "ec-1") * 3:
            assert _call(external.url, idp.token(external.url, kid=kid)).status_code == 200, failure
        # A key the set never had is refused (a 401, not a 503: the keys in hand say enough).
        _refused(external.url, idp.token(external.url, kid="rsa-9", key=_rsa_key()), caplog, "unknown kid", failure)
        # While it is broken the set is asked for once a second, not once a token.
        assert keys.requests - 1 <= 1 + (time.monotonic() - started) / RETRY_SECONDS, failure
        monkeypatch.setattr(external_module, "KEYS_STALE_SECONDS", 0.0)  # the outage has lasted too long
        IDENTITY_PROVIDER.reset()
        _assert_unavailable(_call(external.url, idp.token(external.url)), failure)
    assert idp.fetched("/certs") == 0  # a redirect is not followed


def test_without_keys_in_hand_a_broken_key_set_is_a_503_never_a_401_or_500(external, idp, settings, provider_endpoint):
    for failure in [*UNUSABLE_ANSWERS, "not a key set", "down"]:
        caches_reset()
        IDENTITY_PROVIDER.reset()
        keys = provider_endpoint(_serving_keys(idp))
        _external_settings(settings, JWKS_URL=keys.url)
        if failure == "not a key set":
            keys.answer = _answering({"keys": {"rsa-1": idp.jwks()["keys"][0]}})
        else:
            _break(keys, failure)
        response = _call(external.url, idp.token(external.url))
        assert response.status_code == 503, (failure, response.status_code)
        _assert_unavailable(response)
    assert _no_grant()


def test_a_key_set_of_unusable_keys_refuses_tokens_without_a_500(external, idp, settings, provider_endpoint, caplog):
    good = {key["kid"]: key for key in idp.jwks()["keys"]}
    keys = provider_endpoint(
        _answering(
            {
                "keys": [
                    {**good["rsa-1"], "n": "!!not base64!!"},
                    {**good["ec-1"], "x": 42, "y": ["not", "a", "coordinate"]},
                    {"kid": "rsa-2", "kty": "RSA", "n": "AQAB", "e": "AQAB"},
                    {"kid": "ec-2", "kty": "EC", "crv": "P-999", "x": "AA", "y": "AA"},
                    {"kid": ["rsa-3"], "kty": "RSA"},
                    "rsa-4",
                    None,
                    [],
                ]
            }
        )
    )
    _external_settings(settings, JWKS_URL=keys.url)
    for kid in ("rsa-1", "ec-1"):
        _refused(external.url, idp.token(external.url, kid=kid), caplog, "does not fit")
    for kid in ("rsa-2", "ec-2"):
        key, algorithm = (_rsa_key(), "RS256") if kid.startswith("rsa") else (idp.keys["ec-1"][0], "ES256")
        token = _signed(idp.claims(external.url), key, algorithm=algorithm, kid=kid)
        _refused(external.url, token, caplog, "does not fit")
    assert _no_grant()


@pytest.mark.parametrize("slowness", ["hang", "trickle"])
def test_a_key_set_that_hangs_or_trickles_is_given_up_at_the_fetch_timeout(
    external, idp, settings, provider_endpoint, monkeypatch, slowness
):
    monkeypatch.setattr(external_module, "FETCH_TIMEOUT_SECONDS", 1.0)
    keys = provider_endpoint(_serving_keys(idp))
    _external_settings(settings, JWKS_URL=keys.url)
    assert _call(external.url, idp.token(external.url)).status_code == 200
    keys.slowness = slowness
    monkeypatch.setattr(external_module, "KEYS_FRESH_SECONDS", 0.0)
    # With keys in hand the token is checked against them once the fetch is given up (the client waits 10 s at most).
    assert _call(external.url, idp.token(external.url)).status_code == 200
    # With none, it is a 503, in as little time.
    caches_reset()
    IDENTITY_PROVIDER.reset()
    _assert_unavailable(_call(external.url, idp.token(external.url)))
    assert keys.requests == 3


# --- Introspection ----------------------------------------------------------------------------------------------------


def test_introspection_that_cannot_be_had_is_a_503_and_reaches_no_tool(external, idp, settings, provider_endpoint):
    good = {"active": True, **idp.claims(external.url), "client_id": CLIENT}
    idp.introspected["opaque-good"] = good
    for failure in [*UNUSABLE_ANSWERS, "down"]:
        caches_reset()
        IDENTITY_PROVIDER.reset()
        endpoint = provider_endpoint(_answering(good))
        endpoint.redirect_to = idp.introspection_url
        _introspected_at(settings, endpoint.url)
        _break(endpoint, failure)
        _assert_unavailable(_call(external.url, "opaque-good"), failure)
    assert idp.fetched("/introspect") == 0  # a redirect is not followed
    assert _no_grant()


@pytest.mark.parametrize("slowness", ["hang", "trickle"])
def test_introspection_that_hangs_or_trickles_is_given_up_at_the_fetch_timeout(
    external, idp, settings, provider_endpoint, monkeypatch, slowness
):
    monkeypatch.setattr(external_module, "FETCH_TIMEOUT_SECONDS", 1.0)
    endpoint = provider_endpoint(_answering({"active": True, **idp.claims(external.url), "client_id": CLIENT}))
    _introspected_at(settings, endpoint.url)
    endpoint.slowness = slowness
    _assert_unavailable(_call(external.url, "opaque-good"))  # the client waits 10 s at most
    assert endpoint.requests == 1
    assert _no_grant()


def test_an_active_introspection_answer_not_for_this_service_is_refused(
    external, idp, settings, provider_endpoint, caplog
):
    now = int(time.time())
    good = {"active": True, **idp.claims(external.url), "client_id": CLIENT}
    answers = {
        "active is the string true": ({**good, "active": "true"}, "inactive"),
        "active is 1": ({**good, "active": 1}, "inactive"),
        "no active": ({key: value for key, value in good.items() if key != "active"}, "inactive"),
        "no audience": ({key: value for key, value in good.items() if key != "aud"}, "no aud claim"),
        "another audience": ({**good, "aud": "https://elsewhere.example/mcp"}, "wrong audience"),
        "the client's id as audience": ({**good, "aud": CLIENT}, "wrong audience"),
        "another issuer": ({**good, "iss": idp.issuer.replace("/acme", "/other")}, "wrong issuer"),
        "expired": ({**good, "exp": now - 600}, "expired"),
        "exp not a number": ({**good, "exp": "tomorrow"}, "malformed exp claim"),
        "exp infinite": ({**good, "exp": math.inf}, "malformed exp claim"),
        "not valid yet": ({**good, "nbf": now + 600}, "not valid yet"),
        "none of our scopes": ({**good, "scope": "openid profile email"}, "none of errcatalog's scopes"),
        "no client": (
            {key: value for key, value in good.items() if key not in ("client_id", "azp")},
            "no client claim",
        ),
        "an unverified email": ({**good, "email_verified": False}, "unverified email"),
    }
    endpoint = provider_endpoint(_answering(good))
    _introspected_at(settings, endpoint.url)
    for number, (name, (answer, reason)) in enumerate(answers.items()):
        endpoint.answer = _answering(answer)
        _refused(external.url, f"opaque-{number}", caplog, reason, name)
    assert _no_grant()
    endpoint.answer = _answering(good)
    assert _call(external.url, "opaque-good").status_code == 200
    assert endpoint.requests == len(answers) + 1


# --- Expiry, malformed and oversized tokens ---------------------------------------------------------------------------


def test_expired_premature_and_undated_tokens_are_refused(external, idp, settings, caplog):
    now, leeway = int(time.time()), settings.OAUTH["EXTERNAL"]["LEEWAY_SECONDS"]
    claims = idp.claims(external.url)
    undated = {key: value for key, value in claims.items() if key != "exp"}
    cases = {
        "expired beyond the leeway": ({**claims, "exp": now - leeway - 60}, "expired"),
        "exp true (1970)": ({**claims, "exp": True}, "expired"),
        "not before, beyond the leeway": ({**claims, "nbf": now + leeway + 60}, "not valid yet"),
        "issued in the future": ({**claims, "iat": now + leeway + 60}, "not valid yet"),
        "no exp": (undated, "no exp claim"),
        "exp null": ({**claims, "exp": None}, "no exp claim"),
        "exp a numeric string": ({**claims, "exp": str(now + 300)}, "malformed exp claim"),
        "iat a numeric string": ({**claims, "iat": str(now)}, "malformed iat claim"),
        "exp a word": ({**claims, "exp": "never"}, "invalid JWT"),
        "exp past the calendar": ({**claims, "exp": 10**20}, "malformed exp claim"),
        "exp not a number": ({**claims, "exp": math.nan}, "invalid JWT"),
        "nbf a numeric string, in the future": ({**claims, "nbf": str(now + 600)}, "not valid yet"),
    }
    for name, (token_claims, reason) in cases.items():
        _refused(external.url, _signed(token_claims, idp.keys["rsa-1"][0], kid="rsa-1"), caplog, reason, name)
    assert _no_grant()


def test_a_token_longer_than_any_access_token_is_refused_before_it_is_parsed(external, idp, caplog):
    long_signed = idp.token(external.url, padding="x" * external_module.MAX_TOKEN_LENGTH)
    _refused(external.url, long_signed, caplog, "longer than any access token")
    assert idp.requests == []
    # A long token within the limit is checked as any other.
    assert _call(external.url, idp.token(external.url, padding="x" * 5000)).status_code == 200


def test_a_request_head_larger_than_the_server_takes_is_a_431_never_a_500(external, idp):
    for length in (20_000, 100_000):
        response = _call(external.url, "e" * length)
        assert response.status_code == 431, (length, response.status_code)
    assert idp.requests == []
    assert _call(external.url, idp.token(external.url)).status_code == 200  # the server is still fine


def test_malformed_tokens_are_refused_without_a_fetch_or_a_500(external, idp, caplog):
    claims = idp.claims(external.url)
    rs256 = {"alg": "RS256", "kid": "rsa-1"}
    deep = b"[" * 3000 + b"]" * 3000
    tokens = {
        "three dots": "...",
        "empty parts": "..",
        "one part": _part(rs256),
        "two parts": _part(rs256) + "." + _part(claims),
        "five parts (a JWE)": ".".join([_part({"alg": "RSA-OAEP", "enc": "A256GCM"}), "a", "b", "c", "d"]),
        "not base64": "!!!.@@@.###",
        "a header that is not JSON": _part(b"not json") + "." + _part(claims) + ".c2ln",
        "a header that is a list": _part(["RS256"]) + "." + _part(claims) + ".c2ln",
        "a header nested deep": _part(deep) + "." + _part(claims) + ".c2ln",
        # 1,000 levels: as deep as Python's decoder goes, within the longest token taken (8192 characters).
        "claims nested deep": _part(rs256) + "." + _part(b'{"a":' * 1000 + b"1" + b"}" * 1000) + ".c2ln",
        "claims that are a list": _part(rs256) + "." + _part([claims]) + ".c2ln",
        "claims that are not JSON": _part(rs256) + "." + _part(b"\xff\xfe") + ".c2ln",
        "alg a list": _part({"alg": ["RS256"], "kid": "rsa-1"}) + "." + _part(claims) + ".c2ln",
        "kid an object": _part({"alg": "RS256", "kid": {"$ne": ""}}) + "." + _part(claims) + ".c2ln",
        "an unencoded payload (b64 false)": _part({**rs256, "b64": False, "crit": ["b64"]}) + ".." + "c2ln",
        "a static key's prefix": "ec_" + "x" * 40,
    }
    for name, token in tokens.items():
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            response = _call(external.url, token)
        _assert_refused(response, name)
        assert not any(token in message for message in _refusals(caplog)), name
    # Bytes no token has (the header is read as Latin-1): refused the same way.
    latin1 = httpx2.post(
        external.url, content=b"{}", headers={"Authorization": "Bearer çà.ü.ö".encode("latin-1")}, timeout=10
    )
    _assert_refused(latin1, "Latin-1 letters")
    assert idp.requests == []
    assert _no_grant()
