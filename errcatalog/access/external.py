"""Access tokens of the company's identity provider (``ERRCATALOG_OAUTH=external``): errcatalog is a resource server.

Keycloak, Okta, Entra ID or Auth0 signs people in and issues the tokens; errcatalog checks each one and maps it onto
its own grants. The rules, in the order they are checked:

- A JWT is verified against the provider's published keys (JWKS, found through its OpenID configuration or RFC 8414
  metadata unless configured), with an algorithm of ``OAUTH["EXTERNAL"]["ALGORITHMS"]`` (asymmetric only, never
  ``none`` or HS*), then its issuer, expiry, not-before and issued-at (within the leeway) and audience are checked.
  With an introspection endpoint configured, every token is introspected instead (RFC 7662, for opaque tokens):
  ``active`` must be true, and the same claims are checked.
- Its audience must be one errcatalog expects (``OAUTH["EXTERNAL"]["AUDIENCES"]``): a resource URL of this service
  stands for that resource (so a token for ``/mcp/<name>`` serves that server only, as in builtin mode), any other
  expected value for all of this service.
- It must hold at least one of our scopes; others are ignored.
- Its user claim must name an active Django user: by email address for ``email`` (or a namespaced ``…/email``), else
  by username; created only when ``CREATE_USERS`` is on. An email the token says is unverified names nobody.
- Its client (``client_id``, ``azp``, ``cid`` or ``appid``) gets a grant for that user, as a consent does in builtin
  mode: a ``ClientToken`` row on a django-oauth-toolkit application named by the client id. The grant starts with
  every right (metrics for staff only): the provider decides what a token may do through its scopes, and the grant's
  flags only narrow that, so what a user or staff untick in admin stays unticked. A revoked grant stays revoked: no
  token of that user and client is accepted again until staff delete the revoked row in admin, since the client
  would otherwise come back with its next refreshed token.

Every refusal returns None (the guard's 401) and logs one warning naming the rule, never the token. When the
provider cannot be reached and the answer depends on it (no keys fetched yet, an introspection not cached),
``IdentityProviderUnavailable`` is raised: the guard and the REST API answer 503 with Retry-After, as for an
unreachable token database, since the client's token may well be good. Keys already fetched serve on through an
outage for ``KEYS_STALE_SECONDS``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import queue
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import jwt
import urllib3
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from oauth2_provider.models import get_application_model

from errcatalog.access import scopes as scope_names
from errcatalog.access.models import ClientToken
from errcatalog.access.oauth import API_PATH, MCP_PATH, OAuthAccess, audience_allows, grant_name, resource_server
from errcatalog.access.tokens import KEY_PREFIX, LAST_USED_PRECISION
from errcatalog.caching import BoundedCache, process_cache, register_cache
from errcatalog.dependencies import Dependency
from errcatalog.input_limits import json_depth_exceeds

logger = logging.getLogger("errcatalog.access.external")

# The provider, as the guard and the REST API see it: an outage is logged once, and while it lasts the provider is
# asked again once a second, not on every request.
IDENTITY_PROVIDER = Dependency("The identity provider")

# Entra ID's access tokens run to about 2,500 characters; a request head is at most 16 KiB anyway.
MAX_TOKEN_LENGTH = 8192
# Each request to the provider gives up after this long in all, however the provider answers meanwhile: a request
# waits on it only when keys must be fetched or a token introspected.
FETCH_TIMEOUT_SECONDS = 5.0
# Requests to the provider in flight at once in this process, as many as the connection pool keeps.
MAX_PROVIDER_REQUESTS = 4
# A key set or metadata document is a few kilobytes (Entra's, with its many keys, about 10).
MAX_DOCUMENT_BYTES = 512 * 1024
# A key set nests three levels (keys, a key, its x5c), an introspection answer four (Keycloak's resource_access, a
# client, its roles). A deeper answer is refused before the JSON decoder, which would raise RecursionError.
MAX_DOCUMENT_DEPTH = 32
# Keys are fetched again after this long, so a key the provider withdrew (rotated out, or compromised) stops
# working here within five minutes.
KEYS_FRESH_SECONDS = 300.0
# While the provider cannot be reached, the keys fetched last serve on for this long, then tokens get 503.
KEYS_STALE_SECONDS = 3600.0
# A token naming a key id not in the set makes the set be fetched again at once (the provider rotated its keys), but
# at most once in this many seconds: made-up key ids cannot make each request a fetch.
UNKNOWN_KEY_REFETCH_SECONDS = 10.0
# An introspection answer is kept this long (by the token's hash): a token the provider revokes is refused here
# within half a minute, and a busy client costs the provider one request per token and half minute.
INTROSPECTION_CACHE_SECONDS = 30.0
_INTROSPECTION_CACHE_MAX = 10_000
# Where providers name the client a token was issued to: RFC 9068, OpenID Connect (Keycloak, Entra v2, Auth0),
# Okta, Entra v1.
CLIENT_CLAIMS = ("client_id", "azp", "cid", "appid")
CLIENT_ID_MAX_CHARS = 255  # django-oauth-toolkit's Application.client_id
# The key type each accepted algorithm verifies with.
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


class IdentityProviderUnavailable(RuntimeError):
    """The identity provider cannot be reached (or answers nonsense), and the token cannot be checked without it."""


class _Refused(Exception):
    """A token that is not accepted; ``reason`` names the rule it broke (logged, never sent to the client)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _ProviderAnswerInvalid(Exception):
    """The provider answered, but not with what it should have (a status, a body that is not a JSON object)."""


def external_access_authenticate(raw_token: str) -> OAuthAccess | None:
    """The access ``raw_token`` gives, as the identity provider issued it, or None (logged once, with the reason).

    Raises ``IdentityProviderUnavailable`` when the provider must be asked and cannot be.
    """
    if not raw_token or raw_token.startswith(KEY_PREFIX):
        return None
    config = settings.OAUTH["EXTERNAL"]
    try:
        if len(raw_token) > MAX_TOKEN_LENGTH:
            raise _Refused("longer than any access token")
        claims = (
            _introspected_claims(raw_token, config)
            if config["INTROSPECTION_URL"]
            else _verified_claims(raw_token, config)
        )
        return _access(claims, config)
    except _Refused as refusal:
        logger.warning("External access token refused: %s", refusal.reason)
        return None


# --- Claims: a verified JWT, or an introspection answer -------------------------------------------------------------


def _verified_claims(raw_token: str, config: dict[str, Any]) -> dict[str, Any]:
    try:
        header = jwt.get_unverified_header(raw_token)
        unverified = jwt.decode(raw_token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise _Refused("not a well-formed JWT") from None
    algorithm = header.get("alg")
    if not isinstance(algorithm, str) or algorithm not in config["ALGORITHMS"] or algorithm[:2] not in _KEY_TYPES:
        raise _Refused("signature algorithm not accepted")
    # Before any key is looked up, so a token of another issuer never makes the keys be fetched again.
    if unverified.get("iss") != config["ISSUER"]:
        raise _Refused("wrong issuer")
    kid = header.get("kid")
    jwk = _signing_keys.key(config, kid if isinstance(kid, str) else None, algorithm)
    try:
        key = jwt.PyJWK(jwk, algorithm=algorithm)
    except jwt.PyJWTError:
        raise _Refused("the provider's key does not fit the token's algorithm") from None
    try:
        claims = jwt.decode(
            raw_token,
            key=key,
            algorithms=[algorithm],
            issuer=config["ISSUER"],
            leeway=config["LEEWAY_SECONDS"],
            # The audience is checked by ``_resources``: a resource URL covers the servers under it.
            options={"require": ["exp", "iss", "aud"], "verify_aud": False},
        )
    except jwt.ExpiredSignatureError:
        raise _Refused("expired") from None
    except jwt.ImmatureSignatureError:
        raise _Refused("not valid yet (nbf or iat in the future)") from None
    except jwt.InvalidSignatureError:
        raise _Refused("bad signature") from None
    except jwt.InvalidIssuerError:
        raise _Refused("wrong issuer") from None
    except jwt.MissingRequiredClaimError as missing:
        raise _Refused(f"no {missing.claim} claim") from None
    except jwt.PyJWTError as exc:
        raise _Refused(f"invalid JWT ({type(exc).__name__})") from None
    # PyJWT takes a numeric string (or true) for exp, nbf and iat; a NumericDate is a JSON number (RFC 7519).
    _check_times(claims, config["LEEWAY_SECONDS"])
    return claims


_introspections: BoundedCache[tuple[str, str], dict[str, Any]] = process_cache(
    "errcatalog.access.external.introspections",
    scope="process",
    max_entries=_INTROSPECTION_CACHE_MAX,
    max_age=INTROSPECTION_CACHE_SECONDS,
)


def _introspected_claims(raw_token: str, config: dict[str, Any]) -> dict[str, Any]:
    key = (config["INTROSPECTION_URL"], hashlib.sha256(raw_token.encode()).hexdigest())
    answer = _introspections.get(key)
    if answer is None:
        try:
            answer = _introspection(raw_token, config)
        except _ProviderAnswerInvalid as exc:
            _provider_failed(exc)
            IDENTITY_PROVIDER.degraded("tokens not introspected before get 503")
            raise IdentityProviderUnavailable("the provider cannot introspect tokens now") from exc
        _introspections.set(key, answer)
    if answer.get("active") is not True:
        raise _Refused("inactive (introspection)")
    # RFC 7662 makes every claim but "active" optional; the issuer, when named, must be ours, and an audience is
    # required as for a JWT (a token for no audience in particular is not one for this service).
    if "iss" in answer and answer["iss"] != config["ISSUER"]:
        raise _Refused("wrong issuer")
    if not answer.get("aud"):
        raise _Refused("no aud claim")
    _check_times(answer, config["LEEWAY_SECONDS"])
    return answer


def _introspection(raw_token: str, config: dict[str, Any]) -> dict[str, Any]:
    # RFC 6749 section 2.3.1: the client id and secret are form-encoded before they are joined for Basic.
    credentials = (
        f"{quote(config['INTROSPECTION_CLIENT_ID'], safe='')}:{quote(config['INTROSPECTION_CLIENT_SECRET'], safe='')}"
    )
    headers = {
        "Authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
        "Content-Type": "application/x-www-form-urlencoded",
    }
    body = urlencode({"token": raw_token, "token_type_hint": "access_token"}).encode()
    return _provider_json(config["INTROSPECTION_URL"], config, method="POST", body=body, headers=headers)


def _check_times(claims: dict[str, Any], leeway: int) -> None:
    now = time.time()
    for name in ("exp", "nbf", "iat"):
        value = claims.get(name)
        if name in claims and (
            isinstance(value, bool) or not (isinstance(value, int | float) and math.isfinite(value))
        ):
            raise _Refused(f"malformed {name} claim")
    if "exp" in claims and claims["exp"] <= now - leeway:
        raise _Refused("expired")
    if any(name in claims and claims[name] > now + leeway for name in ("nbf", "iat")):
        raise _Refused("not valid yet (nbf or iat in the future)")


# --- The provider's keys ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _KeySet:
    source: tuple[str, str]  # (issuer, configured JWKS URL): a change of settings is a different key set
    keys: tuple[dict[str, Any], ...]
    fetched_at: float  # time.monotonic()


class _SigningKeys:
    """The provider's public keys in this process: fetched when first needed, again after ``KEYS_FRESH_SECONDS``
    and when a token names a key id the set lacks (at most once per ``UNKNOWN_KEY_REFETCH_SECONDS``); one fetch at a
    time, the other threads wait for its result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: _KeySet | None = None
        self._unknown_refetch_at = -math.inf

    def clear(self) -> None:
        with self._lock:
            self._current = None
            self._unknown_refetch_at = -math.inf

    def key(self, config: dict[str, Any], kid: str | None, algorithm: str) -> dict[str, Any]:
        """The JWK that verifies a token of ``algorithm`` naming ``kid``; ``_Refused`` when the provider has none."""
        source = (config["ISSUER"], config["JWKS_URL"])
        current = self._current
        if current is None or current.source != source or time.monotonic() - current.fetched_at >= KEYS_FRESH_SECONDS:
            current = self._refreshed(config, source, seen=current)
        jwk = _key_for(current.keys, kid, algorithm)
        if jwk is None and time.monotonic() - self._unknown_refetch_at >= UNKNOWN_KEY_REFETCH_SECONDS:
            current = self._refreshed(config, source, seen=current, unknown_key=True)
            jwk = _key_for(current.keys, kid, algorithm)
        if jwk is None:
            raise _Refused("signed with a key the provider does not publish (unknown kid)")
        return jwk

    def _refreshed(
        self, config: dict[str, Any], source: tuple[str, str], *, seen: _KeySet | None, unknown_key: bool = False
    ) -> _KeySet:
        with self._lock:
            current = self._current if self._current is not None and self._current.source == source else None
            if current is not None and current is not seen:
                return current  # another thread fetched them while this one waited
            if unknown_key:
                if time.monotonic() - self._unknown_refetch_at < UNKNOWN_KEY_REFETCH_SECONDS:
                    return current if current is not None else _no_keys(source)
                self._unknown_refetch_at = time.monotonic()
            try:
                keys = _fetched_keys(config)
            except (IdentityProviderUnavailable, _ProviderAnswerInvalid) as exc:
                if isinstance(exc, _ProviderAnswerInvalid):
                    _provider_failed(exc)
                if current is not None and time.monotonic() - current.fetched_at < KEYS_STALE_SECONDS:
                    IDENTITY_PROVIDER.degraded("tokens are checked against the keys fetched before the outage")
                    return current
                IDENTITY_PROVIDER.degraded("new tokens cannot be checked and get 503")
                raise IdentityProviderUnavailable("the provider's keys cannot be fetched") from exc
            IDENTITY_PROVIDER.succeeded()
            self._current = _KeySet(source=source, keys=keys, fetched_at=time.monotonic())
            return self._current


def _no_keys(source: tuple[str, str]) -> _KeySet:
    return _KeySet(source=source, keys=(), fetched_at=-math.inf)


_signing_keys = _SigningKeys()
register_cache("errcatalog.access.external.signing_keys", _signing_keys.clear)


def _key_for(keys: tuple[dict[str, Any], ...], kid: str | None, algorithm: str) -> dict[str, Any] | None:
    """The signing key named ``kid`` of the type ``algorithm`` verifies with; without a kid, the only such key."""
    fitting = [
        key
        for key in keys
        if key.get("kty") == _KEY_TYPES[algorithm[:2]]
        and key.get("use", "sig") == "sig"
        and key.get("alg", algorithm) == algorithm
    ]
    if kid is not None:
        return next((key for key in fitting if key.get("kid") == kid), None)
    return fitting[0] if len(fitting) == 1 else None


def _fetched_keys(config: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    url = config["JWKS_URL"] or _discovered_jwks_url(config)
    document = _provider_json(url, config)
    keys = document.get("keys")
    if not isinstance(keys, list):
        raise _ProviderAnswerInvalid("the key set has no keys list")
    return tuple(key for key in keys if isinstance(key, dict))


def _discovered_jwks_url(config: dict[str, Any]) -> str:
    """The ``jwks_uri`` of the provider's OpenID configuration, else of its RFC 8414 metadata; either must name the
    configured issuer as its own (OpenID Connect Discovery 4.3, RFC 8414 section 3.3)."""
    issuer = config["ISSUER"].rstrip("/")
    parts = urlsplit(issuer)
    candidates = (
        issuer + "/.well-known/openid-configuration",
        f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path}",
    )
    failure: Exception | None = None
    for url in candidates:
        try:
            metadata = _provider_json(url, config)
        except _ProviderAnswerInvalid as exc:
            failure = exc
            continue
        if metadata.get("issuer") != config["ISSUER"]:
            raise _ProviderAnswerInvalid("the provider's metadata names another issuer")
        jwks_uri = metadata.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri:
            raise _ProviderAnswerInvalid("the provider's metadata names no jwks_uri")
        return jwks_uri
    raise _ProviderAnswerInvalid("the provider publishes no metadata") from failure


# --- Talking to the provider -----------------------------------------------------------------------------------------

# Shared by the worker threads (urllib3's pool manager is thread-safe). Verified TLS with the system's certificates;
# no retries and no redirects: a key set or an introspection answer comes from the URL configured or published.
_http = urllib3.PoolManager(
    timeout=urllib3.Timeout(total=FETCH_TIMEOUT_SECONDS), retries=False, maxsize=MAX_PROVIDER_REQUESTS
)
# urllib3's timeouts bound each connect and each read, not a request: a provider (or a proxy before it) sending a
# byte every few seconds would hold the request that waits for it, and for the keys every token check queued behind
# their lock, for as long as it went on. So each request runs on a thread of its own, which the waiting request gives
# up on at the deadline. The thread stops reading a body at the deadline too; one held in a trickled head ends when
# the provider stops or a read times out, and the slots bound how many can be held so.
_request_slots = threading.BoundedSemaphore(MAX_PROVIDER_REQUESTS)


def _provider_failed(exc: _ProviderAnswerInvalid) -> None:
    # The outage is logged once by IDENTITY_PROVIDER, with the exception's class only; what was wrong is ours to say.
    logger.warning("The identity provider's answer is unusable: %s", exc)
    IDENTITY_PROVIDER.failed(exc)


def _provider_json(
    url: str,
    config: dict[str, Any],
    *,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A JSON object from the provider; raises ``IdentityProviderUnavailable`` when it cannot be had, reporting the
    outage to ``IDENTITY_PROVIDER`` (a document that says the wrong thing is ``_ProviderAnswerInvalid``)."""
    scheme = urlsplit(url).scheme
    if scheme != "https" and not (scheme == "http" and config["ALLOW_HTTP"]):
        raise _ProviderAnswerInvalid("a URL of the provider is not https")
    if not IDENTITY_PROVIDER.available():
        raise IdentityProviderUnavailable("skipped while the provider is down")
    try:
        status, content = _answer_in_time(
            method, url, body=body, headers={"Accept": "application/json", **(headers or {})}
        )
    except (urllib3.exceptions.HTTPError, TimeoutError) as exc:
        IDENTITY_PROVIDER.failed(exc)
        raise IdentityProviderUnavailable("the provider cannot be reached") from exc
    if status != 200:
        raise _ProviderAnswerInvalid(f"the provider answered HTTP {status}")
    if len(content) > MAX_DOCUMENT_BYTES:
        raise _ProviderAnswerInvalid("the provider's answer is too large")
    if json_depth_exceeds(content, MAX_DOCUMENT_DEPTH):
        raise _ProviderAnswerInvalid("the provider's answer nests too deep")
    try:
        document = json.loads(content)
    except ValueError:
        raise _ProviderAnswerInvalid("the provider's answer is not JSON") from None
    if not isinstance(document, dict):
        raise _ProviderAnswerInvalid("the provider's answer is not a JSON object")
    IDENTITY_PROVIDER.succeeded()
    return document


def _answer_in_time(method: str, url: str, *, body: bytes | None, headers: dict[str, str]) -> tuple[int, bytes]:
    """The status and body (at most ``MAX_DOCUMENT_BYTES`` + 1 bytes) of one request to the provider, had within
    ``FETCH_TIMEOUT_SECONDS``: ``TimeoutError`` past them, urllib3's ``HTTPError`` when the request fails. Redirects are
    answers like any other (never followed)."""
    deadline = time.monotonic() + FETCH_TIMEOUT_SECONDS
    if not _request_slots.acquire(timeout=FETCH_TIMEOUT_SECONDS):
        raise TimeoutError("every request slot is held by a request the provider has not answered")
    answers: queue.SimpleQueue[tuple[int, bytes] | Exception] = queue.SimpleQueue()

    def request() -> None:
        try:
            answers.put(_answer(method, url, body=body, headers=headers, deadline=deadline))
        except Exception as exc:  # re-raised by the waiting request, if it still waits
            answers.put(exc)
        finally:
            _request_slots.release()

    threading.Thread(target=request, name="identity-provider-request", daemon=True).start()
    try:
        answer = answers.get(timeout=max(deadline - time.monotonic(), 0.0))
    except queue.Empty:
        raise TimeoutError("the provider did not answer in time") from None
    if isinstance(answer, Exception):
        raise answer
    return answer


def _answer(
    method: str, url: str, *, body: bytes | None, headers: dict[str, str], deadline: float
) -> tuple[int, bytes]:
    response = _http.request(
        method,
        url,
        body=body,
        headers=headers,
        redirect=False,
        preload_content=False,
        timeout=urllib3.Timeout(total=max(deadline - time.monotonic(), 0.001)),
    )
    content = bytearray()
    try:
        while len(content) <= MAX_DOCUMENT_BYTES:
            if time.monotonic() >= deadline:
                response.close()  # half read: the connection is not used again
                raise TimeoutError("the provider's answer took too long")
            chunk = response.read1(MAX_DOCUMENT_BYTES + 1 - len(content))
            if not chunk:
                return response.status, bytes(content)
            content += chunk
        response.close()  # too large: the rest is never read
        return response.status, bytes(content)
    finally:
        response.release_conn()


# --- From claims to a grant ------------------------------------------------------------------------------------------


def _access(claims: dict[str, Any], config: dict[str, Any]) -> OAuthAccess:
    resources = _resources(claims.get("aud"), config)
    held = _scopes(claims.get(config["SCOPE_CLAIM"]))
    if not held:
        raise _Refused("none of errcatalog's scopes")
    client_id = next(
        (value for name in CLIENT_CLAIMS if isinstance(value := claims.get(name), str) and value.strip()), None
    )
    if client_id is None or len(client_id) > CLIENT_ID_MAX_CHARS:
        raise _Refused("no client claim (client_id, azp, cid or appid)")
    now = timezone.now()
    # The expiry is read before a user or grant is written: a token refused for its claims leaves no row behind.
    try:
        expires = (
            datetime.fromtimestamp(claims["exp"], tz=UTC)
            if "exp" in claims
            else now + timedelta(seconds=INTROSPECTION_CACHE_SECONDS)
        )
    except (OverflowError, OSError, ValueError):
        raise _Refused("malformed exp claim") from None
    user = _user(claims, config)
    grant = _grant(user=user, client_id=client_id)
    if grant.last_used_at is None or now - grant.last_used_at >= LAST_USED_PRECISION:
        grant.last_used_at = now
        grant.save(update_fields=["last_used_at"])
    return OAuthAccess(grant=grant, scopes=held, resources=resources, expires=expires)


def _resources(audience: object, config: dict[str, Any]) -> tuple[str, ...]:
    """The resource URLs the token's audience names on this service; () for all of it. ``_Refused`` when it names
    none that is expected."""
    base = settings.OAUTH["PUBLIC_URL"]
    values = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    expected = config["AUDIENCES"] or (base + MCP_PATH, base + API_PATH)
    resources: list[str] = []
    for value in (value for value in values if isinstance(value, str)):
        for allowed in expected:
            if resource_server(allowed, base) is None:
                if value == allowed:
                    return ()  # an audience that names this service as a whole (an Entra app id URI, say)
            elif resource_server(value, base) is not None and audience_allows((allowed,), value):
                resources.append(value.rstrip("/"))
                break
    if not resources:
        raise _Refused("wrong audience")
    return tuple(dict.fromkeys(resources))


def _scopes(value: object) -> frozenset[str]:
    names = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
    return frozenset(name for name in names if isinstance(name, str)) & frozenset(scope_names.ALL)


def _user(claims: dict[str, Any], config: dict[str, Any]):
    claim = config["USER_CLAIM"]
    value = claims.get(claim)
    if not isinstance(value, str) or not value.strip() or len(value) > 150:  # 150: Django's username length
        raise _Refused(f"no {claim} claim")
    if _names_email(claim) and claims.get("email_verified") in (False, "false"):
        # An address anyone could type into their profile at the provider names nobody here.
        raise _Refused("unverified email")
    user = _user_named(claim, value)
    if user is None:
        if not config["CREATE_USERS"]:
            raise _Refused("unknown user")
        user = _user_created(claim, value)
    if not user.is_active:
        raise _Refused("inactive user")
    return user


def _names_email(claim: str) -> bool:
    """Whether the user claim is an email address: ``email``, or a namespaced claim such as Auth0's custom claims
    (``https://errors.example.com/email``)."""
    return claim == "email" or claim.endswith("/email")


def _user_named(claim: str, value: str):
    users = get_user_model().objects
    found = list((users.filter(email__iexact=value) if _names_email(claim) else users.filter(username=value))[:2])
    if len(found) > 1:
        raise _Refused("several users have that email address")
    return found[0] if found else None


def _user_created(claim: str, value: str):
    """A new user for ``value``: its username, and its email address when the claim is one. No password (they sign
    in at the provider) and no staff rights."""
    try:
        with transaction.atomic():
            email = value if _names_email(claim) else ""
            user = get_user_model().objects.create_user(username=value, email=email)
    except IntegrityError:
        # Made meanwhile by another request, or the username is someone else's: only the same rule finds a user.
        user = _user_named(claim, value)
        if user is None:
            raise _Refused("unknown user (its name is another user's username)") from None
        return user
    logger.info("Created user %s for a person the identity provider signed in", user.pk)
    return user


def _grant(*, user, client_id: str) -> ClientToken:
    """The live grant of ``user`` to the provider's client ``client_id``, made on first sight; ``_Refused`` when one
    was revoked."""
    application_model = get_application_model()
    application, _created = application_model.objects.get_or_create(
        client_id=client_id,
        defaults={
            "name": client_id,
            "client_type": application_model.CLIENT_PUBLIC,
            "authorization_grant_type": application_model.GRANT_AUTHORIZATION_CODE,
            "redirect_uris": "",
            "client_secret": "",
            "hash_client_secret": False,
            "registration_source": application_model.RegistrationSource.MANUAL,
        },
    )
    held = ClientToken.objects.select_related("user").filter(user=user, application=application)
    for _attempt in range(2):
        grant = held.order_by(F("revoked_at").asc(nulls_first=True)).first()
        if grant is not None and grant.revoked_at is not None:
            raise _Refused("grant revoked (staff delete the revoked grant in admin to let this client in again)")
        if grant is not None:
            return grant
        try:
            with transaction.atomic():
                return ClientToken.objects.create(
                    user=user,
                    application=application,
                    name=grant_name(application),
                    can_call_tools=True,
                    can_read_catalog=True,
                    can_write_catalog=True,
                    # Metrics are for staff, whatever a token's scopes say.
                    can_read_metrics=user.is_staff,
                )
        except IntegrityError:
            continue  # two first requests at once: the other one's grant is read
    raise RuntimeError("A grant could not be recorded")  # two integrity errors in a row: a bug, not a race
