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

import copy
import hashlib
import ipaddress
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher
from oauth2_provider.models import get_access_token_model
from oauth2_provider.settings import oauth2_settings

from errcatalog.access import scopes as scope_names
from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import KEY_PREFIX, LAST_USED_PRECISION
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


class MetadataFetcher(SafeMetadataFetcher):
    """django-oauth-toolkit's SSRF-hardened fetcher of Client ID Metadata Documents (https only, public addresses
    only, no redirects, bounded in time and size), which also refuses a document that registration would refuse
    (``client_metadata_refusal``). With ``OAUTH["CIMD_ALLOW_PRIVATE"]`` (development and tests), loopback and private
    hosts are fetched too, still over verified https, without redirects and within the same bounds.

    The toolkit's fetch bounds each connect and read by the time left, but a server sending its body a byte at a time
    gets a fresh read each time: the body is read here against one deadline for the whole fetch (anyone may start a
    fetch, before signing in, by naming a client id URL), and measured for nesting before the JSON decoder sees it.
    The toolkit makes a fetcher per fetch, so the deadline is the fetch's own."""

    def fetch(self, client_id):
        self._deadline = time.monotonic() + oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        if settings.OAUTH["CIMD_ALLOW_PRIVATE"]:
            metadata, max_age = self._fetch_from_any_address(client_id)
        else:
            metadata, max_age = super().fetch(client_id)
        refusal = client_metadata_refusal(metadata)
        if refusal is not None:
            raise CIMDError(refusal[1])
        return metadata, max_age

    def _read_document(self, response):
        limit = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE + 1
        body = bytearray()
        while len(body) < limit:
            if time.monotonic() >= self._deadline:
                raise CIMDError("client_id document took longer than the fetch may")
            chunk = response.read1(limit - len(body))
            if not chunk:
                break
            body += chunk
        if json_depth_exceeds(bytes(body), settings.ERRCATALOG["API_MAX_JSON_DEPTH"]):
            raise CIMDError("client_id document nests too deeply")
        return super()._read_document(_ReadResponse(response.status, response.headers, bytes(body)))

    def _fetch_from_any_address(self, client_id):
        parts = urlsplit(client_id)
        if parts.scheme != "https" or not parts.hostname or parts.username or parts.password or parts.fragment:
            raise CIMDError("client_id URL must be an https URL without credentials or fragment")
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
