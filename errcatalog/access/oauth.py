"""OAuth grants: the apps a user connected, and the access tokens they hold.

django-oauth-toolkit is the authorization server (codes, PKCE, tokens, refresh, revocation, registration); this
module is errcatalog's side of it. When a user consents to a client, the client gets a grant (a ``ClientToken``
row with ``application`` set): the one thing that stands for "this app, as this user" while its access tokens come
and go. A token is accepted only while its grant is live, and its rights are its scopes narrowed by its grant's
flags. Tokens are stored as hashes only (``COMPLIANT_BCP_RFC9700_TOKEN_STORAGE``) and looked up by hash.

Resource indicators (RFC 8707): a token names the servers it was issued for, as URLs on this service's public
base: ``<base>/mcp`` (which covers every server under it), ``<base>/mcp/<name>`` (one server), ``<base>/api/v1``
(the REST API). Nothing else is issued, so a token for another service's URL never exists here; one that names
none is for all of this service, as a static key is.
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import ipaddress
import json
import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, is_cimd_client_id, refresh_if_stale
from oauth2_provider.cimd import resolve_cimd_application as toolkit_resolve_cimd_application
from oauth2_provider.models import get_access_token_model, get_application_model
from oauth2_provider.settings import oauth2_settings

from errcatalog.access import scopes as scope_names
from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import KEY_PREFIX, LAST_USED_PRECISION
from errcatalog.dependencies import REDIS_ERRORS
from errcatalog.input_limits import json_depth_exceeds
from errcatalog.vocabulary import ROOT_SERVER, is_server_name

logger = logging.getLogger("errcatalog.access.oauth")

MCP_PATH = "/mcp"
API_PATH = "/api/v1"
# The server a resource indicator names when it is the REST API's (never a server name: those are identifiers).
API_RESOURCE = "api"
# Longer strings are not access tokens of ours (oauthlib's are 30 characters) and are refused without a query.
_MAX_TOKEN_LENGTH = 512
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
GRANT_NAME_MAX_CHARS = 100


WELL_KNOWN_RESOURCE = "/.well-known/oauth-protected-resource"


def public_base(request) -> str:
    """Where clients reach this service: ``OAUTH["PUBLIC_URL"]``, else a Django request's own scheme and host."""
    return settings.OAUTH["PUBLIC_URL"] or request.build_absolute_uri("/").rstrip("/")


def resource_metadata_url(base: str, path: str) -> str:
    """The RFC 9728 metadata document of the resource at ``path`` (``/mcp``, ``/mcp/<name>``, ``/api/v1``)."""
    return f"{base}{WELL_KNOWN_RESOURCE}{path}"


def scopes_held(token: ClientToken) -> set[str]:
    """The scopes a key's or grant's rights stand for (a narrowed grant's: its token's)."""
    rights = (
        (scope_names.TOOLS, token.can_call_tools),
        (scope_names.CATALOG_READ, token.can_read_catalog),
        (scope_names.CATALOG_WRITE, token.can_write_catalog),
        (scope_names.METRICS_READ, token.can_read_metrics),
    )
    return {scope for scope, held in rights if held}


def resource_server(resource: str, base: str) -> str | None:
    """The server a resource indicator names on this service (``ROOT_SERVER`` for /mcp, a name for /mcp/<name>,
    ``API_RESOURCE`` for the REST API), or None when it is not one of ours. A trailing slash makes no difference."""
    resource = resource.rstrip("/")
    if not resource.startswith(base + "/"):
        return None
    path = resource[len(base) :]
    if path == MCP_PATH:
        return ROOT_SERVER
    if path == API_PATH:
        return API_RESOURCE
    if path.startswith(MCP_PATH + "/"):
        name = path[len(MCP_PATH) + 1 :]
        return name if is_server_name(name) else None
    return None


def audience_allows(resources: tuple[str, ...], url: str) -> bool:
    """Whether a token issued for ``resources`` may be used at ``url`` (RFC 8707): at one of them or under it, so a
    token for /mcp serves every /mcp/<name> too, and one for /mcp/<name> serves only that server."""
    if not resources:
        return True
    url = url.rstrip("/")
    return any(url == resource or url.startswith(resource + "/") for resource in (r.rstrip("/") for r in resources))


def redirect_uri_refusal(uri: str) -> str | None:
    """Why a client may not register ``uri`` as a redirect URI, or None. Plain http goes only to this machine
    (RFC 8252's loopback redirect, for command-line clients): anywhere else a code would travel in the clear."""
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return "A redirect URI must be an absolute URI."
    if parts.fragment:
        return "A redirect URI must not have a fragment."
    if parts.username is not None or parts.password is not None:
        # https://claude.ai@attacker.example goes to attacker.example, whatever a person reads first.
        return "A redirect URI must not name a user or password."
    if parts.scheme == "http" and (host or "").lower() not in _LOOPBACK_HOSTS and not _is_loopback_address(host):
        return "A redirect URI over plain http must point at a loopback address (127.0.0.1, [::1] or localhost)."
    return None


def client_metadata_refusal(metadata: dict) -> tuple[str, str] | None:
    """Why a client may not register with ``metadata`` (RFC 7591: by dynamic registration, its update, or a Client
    ID Metadata Document), as an RFC 7591 error code and a reason, or None. Its redirect URIs follow
    ``redirect_uri_refusal``; its grant types, response types and token endpoint authentication method must be ones
    this server offers (its metadata's ``*_supported`` lists): a client registered as ``client_credentials``, say,
    would hold tokens that no person consented to."""
    uris = metadata.get("redirect_uris")
    for uri in uris if isinstance(uris, list) else ():
        refusal = redirect_uri_refusal(uri) if isinstance(uri, str) else None
        if refusal is not None:
            return "invalid_redirect_uri", refusal
    offered = (
        ("grant_types", oauth2_settings.OAUTH2_GRANT_TYPES_SUPPORTED),
        ("response_types", oauth2_settings.OAUTH2_RESPONSE_TYPES_SUPPORTED),
    )
    for name, supported in offered:
        values = metadata.get(name, [])
        if not isinstance(values, list) or not all(isinstance(value, str) and value in supported for value in values):
            return "invalid_client_metadata", f"{name} may name only {', '.join(supported)}."
    method = metadata.get("token_endpoint_auth_method")
    supported = oauth2_settings.OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED
    if method is not None and method not in supported:
        return "invalid_client_metadata", f"token_endpoint_auth_method must be one of {', '.join(supported)}."
    return None


def _is_loopback_address(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def grant_name(application) -> str:
    """How a grant is listed: the client's own name, else the host it sends people back to, else its id."""
    name = (application.name or "").strip()
    if not name:
        uris = (application.redirect_uris or "").split()
        name = (urlsplit(uris[0]).hostname or "") if uris else ""
    return (name or application.client_id)[:GRANT_NAME_MAX_CHARS]


def grant_consented(*, user, application, scopes) -> ClientToken:
    """Record that ``user`` consented to ``application`` with ``scopes``: its live grant, made now or raised to
    include them. A right the user took away in admin comes back only by consenting to it again, as here."""
    rights = scope_names.rights_of(scopes)
    wanted = {
        "can_call_tools": rights.call_tools,
        "can_read_catalog": rights.read_catalog,
        "can_write_catalog": rights.write_catalog,
        # Metrics are for staff, whatever a client asks (a consent cannot give what its user does not hold).
        "can_read_metrics": rights.read_metrics and user.is_staff,
    }
    for _attempt in range(2):
        try:
            with transaction.atomic():
                grant = (
                    ClientToken.objects.select_for_update()
                    .filter(user=user, application=application, revoked_at__isnull=True)
                    .first()
                )
                if grant is None:
                    return ClientToken.objects.create(
                        user=user, application=application, name=grant_name(application), **wanted
                    )
                changed = [field for field, value in wanted.items() if value and not getattr(grant, field)]
                for field in changed:
                    setattr(grant, field, True)
                if changed:
                    grant.save(update_fields=changed)
                return grant
        except IntegrityError:
            # Two consents at once both found no grant; the loser reads the winner's.
            continue
    raise RuntimeError("A grant could not be recorded")  # two integrity errors in a row: a bug, not a race


@dataclass(frozen=True, slots=True)
class OAuthAccess:
    """An accepted access token: its grant, and what this token may do there."""

    grant: ClientToken
    scopes: frozenset[str]
    resources: tuple[str, ...]
    expires: datetime

    @property
    def rights(self) -> scope_names.Rights:
        """The token's scopes, narrowed by its grant's flags."""
        held = scope_names.rights_of(self.scopes)
        grant = self.grant
        return scope_names.Rights(
            call_tools=held.call_tools and grant.can_call_tools,
            read_catalog=held.read_catalog and grant.can_read_catalog,
            write_catalog=held.write_catalog and grant.can_write_catalog,
            read_metrics=held.read_metrics and grant.can_read_metrics,
        )


def token_narrowed_grant(access: OAuthAccess) -> ClientToken:
    """The grant as this one token may use it: a copy whose rights are the token's (its scopes within the grant's
    flags). A request's view of its grant, never saved (``save`` refuses)."""
    narrowed = copy.copy(access.grant)
    rights = access.rights
    narrowed.can_call_tools = rights.call_tools
    narrowed.can_read_catalog = rights.read_catalog
    narrowed.can_write_catalog = rights.write_catalog
    narrowed.can_read_metrics = rights.read_metrics
    narrowed.save = _never_saved  # type: ignore[method-assign]  # this one instance must never be written
    return narrowed


def _never_saved(*args, **kwargs) -> None:
    raise RuntimeError("A token's narrowed view of its grant is never saved; save the grant itself")


def oauth_access_authenticate(raw_token: str) -> OAuthAccess | None:
    """The live access token ``raw_token`` is, or None: unknown, expired, revoked, of an inactive user, of a grant
    revoked since, or holding none of our scopes (the registration-management tokens DCR issues hold none)."""
    if not raw_token or len(raw_token) > _MAX_TOKEN_LENGTH or raw_token.startswith(KEY_PREFIX):
        return None
    checksum = hashlib.sha256(raw_token.encode()).hexdigest()
    token = (
        get_access_token_model().objects.select_related("user", "application").filter(token_checksum=checksum).first()
    )
    if token is None or token.user is None or token.application is None or token.is_expired():
        return None
    if not token.user.is_active:
        return None
    held = frozenset(token.scope.split()) & frozenset(scope_names.ALL)
    if not held:
        return None
    grant = (
        ClientToken.objects.select_related("user")
        .filter(user=token.user, application=token.application, revoked_at__isnull=True)
        .first()
    )
    if grant is None:
        return None
    now = timezone.now()
    if grant.last_used_at is None or now - grant.last_used_at >= LAST_USED_PRECISION:
        grant.last_used_at = now
        grant.save(update_fields=["last_used_at"])
    return OAuthAccess(grant=grant, scopes=held, resources=tuple(token.resource or ()), expires=token.expires)


@dataclass(frozen=True)
class _ReadResponse:
    """A fetched document's answer with its body already read, as the toolkit's ``_read_document`` reads one."""

    status: int
    headers: object
    body: bytes

    def read(self, amount: int | None = None) -> bytes:
        return self.body if amount is None else self.body[:amount]


# --- Why a Client ID Metadata Document cannot be used, in words a person can act on ----------------------------

# What is wrong with a document, by kind: what the page says after "The client's metadata document at <URL> ...",
# and what to do about it. Fixed words only: a document's own content never reaches the page (its URL does,
# escaped and cut to CLIENT_DOCUMENT_URL_SHOWN characters). ``{status}``, ``{bytes}``, ``{seconds}`` are numbers and
# ``{refusal}`` one of our own sentences (``client_metadata_refusal`` and ``_public_client_refusal``).
_ASK_THE_MAKER = "Ask the app's maker to fix its metadata document, then try again."
CLIENT_DOCUMENT_PROBLEMS: dict[str, tuple[str, str]] = {
    "url": (
        "is not at a URL a client ID may be: it must be an https URL with a host and a path, without a user name, "
        "password, fragment or '.' and '..' segments",
        "Check the client ID the app was set up with.",
    ),
    "unresolved": (
        "could not be fetched: the host name did not resolve",
        "Check the client ID URL for a typo; if it is right, its host is not in DNS (yet): ask the app's maker.",
    ),
    "private": (
        "could not be fetched: its host points to a private address, which this server does not fetch",
        "A client's metadata document must be on a public https address. Ask the app's maker, or your "
        "administrator for a development server.",
    ),
    "unreachable": (
        "could not be fetched: the connection failed or timed out (the server may be down, or its HTTPS "
        "certificate not valid)",
        "Try again in a minute; if it goes on failing, ask the app's maker.",
    ),
    "status": ("could not be fetched: its server answered HTTP {status}", _ASK_THE_MAKER),
    "not_json": (
        "is not JSON: its server must send it as application/json, and answered another content type",
        _ASK_THE_MAKER,
    ),
    "too_large": ("is larger than this server reads ({bytes} bytes)", _ASK_THE_MAKER),
    "too_slow": (
        "took longer than {seconds} seconds to fetch",
        "Try again in a minute; if it goes on, ask the app's maker.",
    ),
    "too_deep": ("nests too deeply to be a client's metadata", _ASK_THE_MAKER),
    "invalid_json": ("is not valid JSON", _ASK_THE_MAKER),
    "not_object": ("is not a JSON object", _ASK_THE_MAKER),
    "client_id": (
        "is not this client's: its client_id does not match the URL it was fetched from",
        "The document's client_id must be exactly its own URL. " + _ASK_THE_MAKER,
    ),
    "metadata": ("is refused: {refusal}", _ASK_THE_MAKER),
    "redirect_uri": (
        "does not name this redirect URI, so this server cannot send you back to the app with it",
        "Start the sign-in from the app again; if it goes on, its maker must add the redirect URI to the document.",
    ),
    "unusable": (
        "could not be used as a client here",
        "Try again in a minute; if it goes on, ask your administrator (the server's log says why).",
    ),
}
CLIENT_DOCUMENT_URL_SHOWN = 200


class ClientDocumentError(CIMDError):
    """A Client ID Metadata Document that cannot be used, by kind (``CLIENT_DOCUMENT_PROBLEMS``) and the numbers or
    our own sentence its words take. The message is for the log; ``problem`` is what a person reads."""

    def __init__(self, kind: str, message: str, **values: int | str) -> None:
        super().__init__(message)
        self.kind = kind
        self.values = values

    @property
    def problem(self) -> ClientDocumentProblem:
        return ClientDocumentProblem(kind=self.kind, values=tuple(sorted(self.values.items())))


@dataclass(frozen=True)
class ClientDocumentProblem:
    """Why a client ID URL's document cannot be used, as a person reads it on the authorization page."""

    kind: str
    values: tuple[tuple[str, int | str], ...] = ()

    def sentence(self, url: str) -> str:
        shown = url if len(url) <= CLIENT_DOCUMENT_URL_SHOWN else url[: CLIENT_DOCUMENT_URL_SHOWN - 1] + "…"
        words, _advice = CLIENT_DOCUMENT_PROBLEMS[self.kind]
        return f"The client's metadata document at {shown} {words.format(**dict(self.values)).rstrip('.')}."

    @property
    def advice(self) -> str:
        return CLIENT_DOCUMENT_PROBLEMS[self.kind][1]


# The failure the metadata fetcher met in this request (the toolkit's resolver logs it and answers "no client").
_fetch_failure: contextvars.ContextVar[ClientDocumentProblem | None] = contextvars.ContextVar(
    "errcatalog_cimd_fetch_failure", default=None
)
_FAILURE_CACHE_PREFIX = "errcatalog:oauth:cimd-failure:"


def _public_client_refusal(metadata: Mapping) -> str | None:
    """Why the toolkit would refuse ``metadata`` as a public client's (its rules for a metadata document, in our
    words), or None."""
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(uri, str) for uri in uris):
        return "redirect_uris must be a non-empty list of URIs."
    if metadata.get("token_endpoint_auth_method", "none") != "none":
        return "a client with a metadata document is public: token_endpoint_auth_method must be none."
    if "client_secret" in metadata or "client_secret_expires_at" in metadata:
        return "a client with a metadata document is public: it must not hold a client_secret."
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or [grant for grant in grants if grant != "refresh_token"] != [
        "authorization_code"
    ]:
        return "grant_types must name authorization_code (and may name refresh_token)."
    if not isinstance(metadata.get("client_name", ""), str):
        return "client_name must be a string."
    return None


def _classified(exc: CIMDError) -> ClientDocumentError:
    """A failure the toolkit's fetch raised, by its kind: the address checks and the connection are the toolkit's."""
    if isinstance(exc, ClientDocumentError):
        return exc
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__ or getattr(cause, "reason", None)
    message = str(exc)
    if any(isinstance(link, socket.gaierror | urllib3.exceptions.NameResolutionError) for link in chain) or (
        "did not resolve" in message
    ):
        return ClientDocumentError("unresolved", message)
    # The toolkit's words for its refusal of a loopback, private, link-local or reserved address (pinned by a test).
    if "non-public address" in message:
        return ClientDocumentError("private", message)
    return ClientDocumentError("unreachable", message)


class MetadataFetcher(SafeMetadataFetcher):
    """django-oauth-toolkit's SSRF-hardened fetcher of Client ID Metadata Documents (https only, public addresses
    only, no redirects, bounded in time and size), which also refuses a document that registration would refuse
    (``client_metadata_refusal``). With ``OAUTH["CIMD_ALLOW_PRIVATE"]`` (development and tests), loopback and private
    hosts are fetched too, still over verified https, without redirects and within the same bounds.

    The toolkit's fetch bounds each connect and read by the time left, but a server sending its body a byte at a time
    gets a fresh read each time: the body is read here against one deadline for the whole fetch (anyone may start a
    fetch, before signing in, by naming a client id URL), and measured for nesting before the JSON decoder sees it.
    The toolkit makes a fetcher per fetch, so the deadline is the fetch's own.

    Every failure is a ``ClientDocumentError`` of a kind, recorded for the request (``client_document_problem``
    reads it): the toolkit's resolver logs a failure and answers "no such client", which tells a person nothing."""

    def fetch(self, client_id):
        try:
            return self._fetch_checked(client_id)
        except CIMDError as exc:
            failure = _classified(exc)
            _fetch_failure.set(failure.problem)
            if failure is exc:
                raise
            raise failure from exc

    def _fetch_checked(self, client_id):
        self._deadline = time.monotonic() + oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        if client_id_url_refusal(client_id) is not None:
            raise ClientDocumentError("url", "client_id URL is not one a client ID may be")
        if settings.OAUTH["CIMD_ALLOW_PRIVATE"]:
            metadata, max_age = self._fetch_from_any_address(client_id)
        else:
            metadata, max_age = super().fetch(client_id)
        if metadata.get("client_id") != client_id:
            raise ClientDocumentError("client_id", "document client_id does not match the client_id URL")
        refusal = client_metadata_refusal(metadata)
        refused = refusal[1] if refusal is not None else _public_client_refusal(metadata)
        if refused is not None:
            raise ClientDocumentError("metadata", refused, refusal=refused)
        return metadata, max_age

    def _read_document(self, response):
        if response.status != 200:
            raise ClientDocumentError(
                "status", f"client_id document returned HTTP {response.status}", status=response.status
            )
        media_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media_type != "application/json" and not (
            media_type.startswith("application/") and media_type.endswith("+json")
        ):
            raise ClientDocumentError("not_json", "client_id document is not JSON")
        size = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE
        body = bytearray()
        while len(body) <= size:
            if time.monotonic() >= self._deadline:
                seconds = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
                raise ClientDocumentError(
                    "too_slow", "client_id document took longer than the fetch may", seconds=seconds
                )
            chunk = response.read1(size + 1 - len(body))
            if not chunk:
                break
            body += chunk
        if len(body) > size:
            raise ClientDocumentError("too_large", "client_id document exceeds the maximum allowed size", bytes=size)
        if json_depth_exceeds(bytes(body), settings.ERRCATALOG["API_MAX_JSON_DEPTH"]):
            raise ClientDocumentError("too_deep", "client_id document nests too deeply")
        try:
            document = json.loads(bytes(body))
        except ValueError:
            raise ClientDocumentError("invalid_json", "client_id document is not valid JSON") from None
        if not isinstance(document, dict):
            raise ClientDocumentError("not_object", "client_id document must be a JSON object")
        # The toolkit's own reading, which now passes, for its cache lifetime from the answer's Cache-Control.
        return super()._read_document(_ReadResponse(response.status, response.headers, bytes(body)))

    def _fetch_from_any_address(self, client_id):
        seconds = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        pool = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=seconds, read=seconds, total=seconds), retries=False, maxsize=1
        )
        try:
            response = pool.request(
                "GET",
                client_id,
                headers={"Accept": "application/json, application/*+json"},
                redirect=False,
                preload_content=False,
            )
            try:
                return self._read_document(response)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise CIMDError(f"could not fetch client_id document: {exc}") from exc
        finally:
            pool.clear()


def client_id_url_refusal(client_id: str) -> str | None:
    """Why ``client_id`` is not a URL a client ID may be (the Client ID Metadata Document draft, section 3: https, a
    host, a valid port and a path; no user, password, fragment, '.' or '..' segments), or None."""
    try:
        parts = urlsplit(client_id)
        parts.port  # noqa: B018  # an out-of-range port raises here
    except ValueError:
        return "invalid"
    if parts.scheme.lower() != "https" or not parts.hostname or not parts.path:
        return "not an https URL with a host and a path"
    if parts.username is not None or parts.password is not None or parts.fragment:
        return "a user, password or fragment"
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return "dot segments"
    return None


@dataclass(frozen=True)
class _HeadersOnly:
    """What the toolkit's registration permission classes read of the oauthlib request a client id came on."""

    headers: Mapping[str, str]


def client_document_problem(
    client_id: str, redirect_uri: str | None, *, headers: Mapping[str, str]
) -> ClientDocumentProblem | None:
    """Why the client ID URL ``client_id`` cannot be used for an authorization request to ``redirect_uri``, or None:
    when it can, or when ``client_id`` is no such URL (the toolkit checks other clients as usual).

    A URL not seen before (or whose document is stale) is resolved as the toolkit's authorization request resolves
    it, with the same bounds, backoff and cap; the client it makes is the one the request then uses. The failure is
    remembered for as long as the toolkit's backoff refuses to fetch the URL again, so a page reloaded meanwhile
    still says why. ``headers`` are the request's, for the toolkit's registration permission classes.
    """
    if not oauth2_settings.CIMD_ENABLED or not is_cimd_client_id(client_id):
        return None
    application = get_application_model().objects.filter(client_id=client_id).first()
    request = _HeadersOnly(headers=headers)
    if application is None:
        token = _fetch_failure.set(None)
        try:
            application = toolkit_resolve_cimd_application(client_id, request)
            problem = _fetch_failure.get()
        finally:
            _fetch_failure.reset(token)
        if application is None:
            return _remembered_failure(client_id, problem) or ClientDocumentProblem(kind="unusable")
    elif application.registration_source != application.RegistrationSource.CIMD:
        return None
    else:
        # A stale document is fetched again; when that fails the last good one is kept, as the toolkit keeps it.
        application = refresh_if_stale(application, request)
    if redirect_uri and not application.redirect_uri_allowed(redirect_uri):
        return ClientDocumentProblem(kind="redirect_uri")
    return None


def _remembered_failure(client_id: str, problem: ClientDocumentProblem | None) -> ClientDocumentProblem | None:
    """``problem`` remembered for ``client_id`` while the toolkit backs off from fetching it; without one (the
    backoff answered), the one remembered."""
    key = _FAILURE_CACHE_PREFIX + hashlib.sha256(client_id.encode()).hexdigest()
    try:
        if problem is not None:
            cache.set(key, (problem.kind, problem.values), oauth2_settings.CIMD_FAILURE_BACKOFF_SECONDS)
            return problem
        remembered = cache.get(key)
    except REDIS_ERRORS:
        return problem
    try:
        kind, values = remembered
        return (
            ClientDocumentProblem(kind=kind, values=tuple((str(k), v) for k, v in values))
            if kind in CLIENT_DOCUMENT_PROBLEMS
            else None
        )
    except (TypeError, ValueError):
        return None
