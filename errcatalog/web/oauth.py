"""The OAuth 2.1 authorization server's pages and endpoints, on django-oauth-toolkit.

What is ours on top of the toolkit: resource identifiers on this service's public base, a consent page that names
the client, where it sends people back to and what it may do in plain words, a grant recorded per consent
(``errcatalog.access.oauth``), open but rate-limited Dynamic Client Registration, and redirect URIs over plain http
for loopback addresses only. Each refusal is a 4xx with a clear reason, logged once as a warning.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.cache import cache
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import TemplateView
from oauth2_provider import views as oauth_views
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings

from errcatalog.access import scopes
from errcatalog.access.models import ClientToken
from errcatalog.access.oauth import (
    API_RESOURCE,
    client_document_problem,
    client_metadata_refusal,
    grant_consented,
    public_base,
    redirect_uri_refusal,
    resource_server,
    scopes_held,
)
from errcatalog.access.tokens import client_token_revoke
from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS_ERRORS
from errcatalog.input_limits import json_depth_exceeds
from errcatalog.vocabulary import ROOT_SERVER

logger = logging.getLogger("errcatalog.oauth")

REGISTRATION_WINDOW_SECONDS = 3600
STORE_DOWN_MESSAGE = "The token store is unavailable right now; try again."
STORE_RETRY_SECONDS = 5
# The name of the key or app the connected-apps page revoked last, shown once on the page it redirects to.
REVOKED_SESSION_KEY = "errcatalog.oauth.revoked"
PLAIN_PKCE_MESSAGE = (
    "This app signs in with a method that is no longer accepted (PKCE without S256). Ask its maker to update it."
)
FOREIGN_RESOURCE_MESSAGE = (
    "This client asked for access to a resource that is not served here. Only this service's MCP endpoint "
    "(/mcp and the servers under it) and its REST API (/api/v1) can be authorized."
)


# These pages are errcatalog's to whoever signs in to connect an app, most of whom never see admin: its name heads
# them and their titles, not Django's default "Django administration".
SITE_NAME = "errcatalog"


def _page(request: HttpRequest) -> dict:
    """What the admin's base template needs (site header, title), which these pages extend, in errcatalog's name."""
    return {**admin.site.each_context(request), "site_header": SITE_NAME, "site_title": SITE_NAME}


def _client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


class ResourceMetadataView(oauth_views.OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata of /mcp (also at the root form), each server under it and the REST API.

    A server name answers whether or not such a server exists, so the document tells a caller without a token
    nothing the 401 did not (the MCP endpoint answers 404 for an unknown server only after the token).
    """

    def get(self, request, *args, resource_path: str = "mcp", **kwargs):
        self.resource = f"{public_base(request)}/{resource_path.strip('/')}"
        self.server = resource_server(self.resource, public_base(request))
        if self.server is None:
            raise Http404("No protected resource here.")
        return super().get(request, *args, **kwargs)

    def get_resource(self, request):
        return self.resource

    def get_authorization_servers(self, request):
        if settings.OAUTH["MODE"] == "external":
            return [settings.OAUTH["EXTERNAL"]["ISSUER"]]
        return [public_base(request)]

    def get_scopes_supported(self):
        return list(scopes.API if self.server == API_RESOURCE else scopes.MCP)

    def get_resource_name(self):
        if self.server == API_RESOURCE:
            return "errcatalog REST API"
        return "errcatalog" if self.server == ROOT_SERVER else f"errcatalog: {self.server}"


class TokenView(oauth_views.TokenView):
    """The token endpoint; each refusal is logged once, by its OAuth error code (never the request's values)."""

    def post(self, request, *args, **kwargs):
        # The toolkit checks a token request's resources against the authorization's only when that named some; one
        # that named none (all of this service) could otherwise be narrowed to another service's URL.
        base = public_base(request)
        if any(resource_server(resource, base) is None for resource in request.POST.getlist("resource")):
            response = JsonResponse(
                {"error": "invalid_target", "error_description": FOREIGN_RESOURCE_MESSAGE}, status=400
            )
        else:
            try:
                response = super().post(request, *args, **kwargs)
            except DATABASE_ERRORS as exc:
                # The tokens are in the database: without it none is issued or refreshed. A client retries a 503 (an
                # MCP client already holding a token goes on calling: the guard accepts it from memory a while).
                DATABASE.failed(exc)
                response = JsonResponse(
                    {"error": "temporarily_unavailable", "error_description": STORE_DOWN_MESSAGE}, status=503
                )
                response["Retry-After"] = str(STORE_RETRY_SECONDS)
        _log_refusal("Token request", response)
        return response


class RevokeView(oauth_views.RevokeTokenView):
    """Token revocation (RFC 7009); each refusal is logged once, by its OAuth error code."""

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        _log_refusal("Revocation", response)
        return response


def _only_redirect_uri(query) -> str | None:
    """The redirect URI the toolkit uses when a request names none: its client's only registered one."""
    application = get_application_model().objects.filter(client_id=query.get("client_id") or "").first()
    uris = (application.redirect_uris or "").split() if application is not None else []
    return uris[0] if len(uris) == 1 else None


def _log_refusal(what: str, response) -> None:
    if response.status_code < 400:
        return
    try:
        error = json.loads(response.content).get("error", "")
    except (ValueError, AttributeError):
        error = ""
    # The error code is oauthlib's own word; anything else is not logged.
    logger.warning("%s refused with HTTP %d: %s", what, response.status_code, error if error.isidentifier() else "?")


class ServerMetadataView(oauth_views.OAuthServerMetadataView):
    """RFC 8414 metadata; the issuer is this service's public base."""


class _ConsentSkipped(Exception):
    """The toolkit tried to issue a code without asking the person."""


class AuthorizeView(oauth_views.AuthorizationView):
    """The consent page: who asks, where they send you back to, what for, and a grant recorded when you allow."""

    template_name = "oauth/authorize.html"

    def dispatch(self, request, *args, **kwargs):
        # A request that cannot be authorized is refused before anyone is asked to sign in: after signing in, a person
        # would only learn that it was in vain. The cheap checks come before the client's document is fetched.
        if request.method == "GET":
            refusal = (
                self._plain_pkce(request.GET)
                or self._foreign_resource(request.GET.getlist("resource"))
                or self._unusable_client_document(request)
                or self._insecure_redirect(request.GET.get("redirect_uri") or _only_redirect_uri(request.GET))
            )
            if refusal is not None:
                return refusal
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, *args, **kwargs):
        if "approval_prompt" in request.GET:
            # The person is asked every time: the toolkit's approval_prompt=auto would skip this page for a client
            # holding any live token with these scopes, whatever resource it asks for now, and would give back a
            # right taken away from its grant without anyone being asked.
            request.GET = request.GET.copy()
            del request.GET["approval_prompt"]
        try:
            return super().get(request, *args, **kwargs)
        except _ConsentSkipped:
            # The client's record says "skip authorization" (set in a shell, an old admin or a data import): never
            # honoured, since whoever may edit a client's record would otherwise hold a code for anyone who opens its
            # link. The toolkit had the page's context ready (``oauth2_data``) when it tried to skip it.
            logger.warning("A client marked to skip consent asked for authorization: the person is asked")
            return self.render_to_response(self.get_context_data(**self.oauth2_data))

    def _plain_pkce(self, query):
        # The toolkit refuses "plain" only once the person has consented; refused here, nobody is asked in vain.
        # (A challenge without a method is "plain" by RFC 7636.)
        if "code_challenge" not in query or query.get("code_challenge_method") == "S256":
            return None
        logger.warning("Authorization refused: PKCE method other than S256")
        return self._refused(PLAIN_PKCE_MESSAGE)

    def _unusable_client_document(self, request):
        # A client id that is a URL names the client's metadata document: one that cannot be fetched or used is said
        # here in plain words, never sent to a redirect URI that no document vouched for. (The toolkit's own answer
        # is "invalid client_id", after sign-in, with the reason in the log only.)
        client_id = request.GET.get("client_id") or ""
        try:
            problem = client_document_problem(client_id, request.GET.get("redirect_uri"), headers=request.headers)
        except DATABASE_ERRORS as exc:
            DATABASE.failed(exc)
            return self._refused(STORE_DOWN_MESSAGE, status=503)
        if problem is None:
            return None
        logger.warning("Authorization refused: the client's metadata document cannot be used (%s)", problem.kind)
        return self._refused(problem.sentence(client_id), advice=problem.advice)

    def post(self, request, *args, **kwargs):
        refusal = self._foreign_resource(request.POST.get("resource", "").split())
        return refusal or super().post(request, *args, **kwargs)

    def _insecure_redirect(self, redirect_uri: str | None):
        # Registration refuses these already; a client made by hand in admin is held to the same rule here.
        refusal = redirect_uri_refusal(redirect_uri) if redirect_uri else None
        if refusal is None:
            return None
        logger.warning("Authorization refused: a plain-http redirect URI off the loopback address")
        return self._refused(refusal)

    def _foreign_resource(self, resources: list[str]):
        base = public_base(self.request)
        foreign = [resource for resource in resources if resource_server(resource, base) is None]
        if not foreign:
            return None
        logger.warning("Authorization refused: a resource indicator names another service")
        return self._refused(FOREIGN_RESOURCE_MESSAGE)

    def _refused(self, reason: str, *, advice: str = "", status: int = 400):
        """A refusal before any redirect: nothing is sent to the client's redirect URI, the person reads why (and,
        when there is something to do about it, what)."""
        context = {**_page(self.request), "reason": reason, "advice": advice}
        return render(self.request, "oauth/refused.html", context, status=status)

    def get_context_data(self, **kwargs):
        context = {**_page(self.request), **super().get_context_data(**kwargs)}
        redirect_uri = context.get("redirect_uri") or ""
        context["redirect_host"] = urlsplit(redirect_uri).netloc or redirect_uri
        base = public_base(self.request)
        servers = [resource_server(resource, base) for resource in (context.get("resource") or "").split()]
        context["servers"] = [
            "the REST API" if server == API_RESOURCE else ("/mcp" if server == ROOT_SERVER else f"/mcp/{server}")
            for server in servers
        ] or ["all of errcatalog"]
        context["scope_lines"] = list(
            zip(context.get("scopes") or (), context.get("scopes_descriptions") or (), strict=True)
        )
        return context

    def error_response(self, error, application, **kwargs):
        # An authorization request the toolkit refused (an unknown client, a redirect URI not registered, missing
        # PKCE...): logged once, by its OAuth error code.
        code = getattr(error.oauthlib_error, "error", "") or ""
        logger.warning("Authorization refused: %s", code if code.isidentifier() else "?")
        return super().error_response(error, application, **kwargs)

    def create_authorization_response(self, request, scopes, credentials, allow):
        # A code is issued only for a person's answer to the consent page, which is a POST: the toolkit's GET issues
        # one at once for a client whose record says to skip the page.
        if request.method != "POST":
            raise _ConsentSkipped
        response = super().create_authorization_response(
            request=request, scopes=scopes, credentials=credentials, allow=allow
        )
        if allow:
            granted = scopes.split() if isinstance(scopes, str) else list(scopes)
            application = get_application_model().objects.get(client_id=credentials["client_id"])
            grant_consented(user=request.user, application=application, scopes=granted)
        return response

    def redirect(self, redirect_to, application):
        # RFC 9207: every authorization response names its issuer, a refusal too (the toolkit adds it to codes only),
        # or a client that checks it cannot tell a denial from a mix-up.
        parts = urlsplit(redirect_to)
        names = {pair.partition("=")[0] for pair in parts.query.split("&")}
        if oauth2_settings.COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS and "iss" not in names:
            issuer = urlencode({"iss": oauth2_settings.oauth2_authorization_server_issuer(self.request)})
            redirect_to = parts._replace(query=f"{parts.query}&{issuer}" if parts.query else issuer).geturl()
        return super().redirect(redirect_to, application)


@method_decorator(csrf_exempt, name="dispatch")
class RegisterView(oauth_views.DynamicClientRegistrationView):
    """Dynamic Client Registration (RFC 7591), open to anyone as MCP clients expect, within a rate per address."""

    def post(self, request, *args, **kwargs):
        limit = settings.OAUTH["REGISTRATIONS_PER_HOUR"]
        if not self._within_rate(_client_address(request), limit):
            logger.warning("Client registration refused: more than %d from one address in an hour", limit)
            response = JsonResponse(
                {
                    "error": "too_many_requests",
                    "error_description": f"At most {limit} client registrations per address and hour; try later.",
                },
                status=429,
            )
            response["Retry-After"] = str(REGISTRATION_WINDOW_SECONDS)
            return response
        refusal = _metadata_refusal(request.body)
        if refusal is not None:
            return refusal
        response = super().post(request, *args, **kwargs)
        if response.status_code >= 400:
            logger.warning("Client registration refused with HTTP %d", response.status_code)
        return response

    @staticmethod
    def _within_rate(address: str, limit: int) -> bool:
        key = f"errcatalog:oauth:registrations:{address}"
        try:
            cache.add(key, 0, REGISTRATION_WINDOW_SECONDS)
            return cache.incr(key) <= limit
        except REDIS_ERRORS:
            # The cache (Redis) is down: registering goes on, as every other request does without it.
            return True


def _metadata_refusal(body: bytes) -> JsonResponse | None:
    """The answer to a registration or update whose client metadata is refused here (``client_metadata_refusal``),
    logged once, or None.

    The body is held to the JSON depth every other body is held to before anything reads it: the toolkit's reading
    would end a deeper one in a ``RecursionError`` (a 500). What is not JSON, or not an object, is the toolkit's to
    refuse."""
    limit = settings.ERRCATALOG["API_MAX_JSON_DEPTH"]
    if json_depth_exceeds(body, limit):
        refusal: tuple[str, str] | None = (
            "invalid_client_metadata",
            f"The client metadata nests deeper than {limit} levels.",
        )
    else:
        try:
            metadata = json.loads(body)
        except ValueError:
            return None
        refusal = client_metadata_refusal(metadata) if isinstance(metadata, dict) else None
    if refusal is None:
        return None
    error, reason = refusal
    logger.warning("Client registration refused: %s", reason)
    return JsonResponse({"error": error, "error_description": reason}, status=400)


class RegistrationManagementView(oauth_views.DynamicClientRegistrationManagementView):
    """RFC 7592: a registered client reads, updates or deletes its registration with the token it was given; an
    update is held to registration's rules (``client_metadata_refusal``)."""

    def put(self, request, *args, **kwargs):
        return _metadata_refusal(request.body) or super().put(request, *args, **kwargs)


class ConnectedAppsView(LoginRequiredMixin, TemplateView):
    """Everyone's own list of what acts as them: the apps they connected with OAuth and their static keys, each
    with what it may do, when it was made and last used, and a button that revokes it at once."""

    template_name = "oauth/apps.html"

    def get_context_data(self, **kwargs):
        held = _live_tokens_of(self.request.user).select_related("application")
        return {
            **_page(self.request),
            **super().get_context_data(**kwargs),
            "grants": [(token, _rights_in_words(token)) for token in held if token.is_grant],
            "keys": [(token, _rights_in_words(token)) for token in held if not token.is_grant],
            # From this person's own revocation just before, never from the URL: a link could make the page say
            # anything there.
            "revoked": self.request.session.pop(REVOKED_SESSION_KEY, ""),
        }

    def post(self, request, *args, **kwargs):
        token_id = request.POST.get("token", "")
        if not token_id.isdecimal():
            raise Http404("No such key or app.")
        token = get_object_or_404(_live_tokens_of(request.user), pk=int(token_id))
        client_token_revoke(token=token)
        request.session[REVOKED_SESSION_KEY] = token.name
        return redirect("connected-apps")


def _live_tokens_of(user: Any) -> QuerySet[ClientToken]:
    """The signed-in person's live keys and grants (the views that call it require a sign-in)."""
    return ClientToken.objects.filter(user=user, revoked_at__isnull=True)


def _rights_in_words(token: ClientToken) -> list[str]:
    words, held = settings.OAUTH2_PROVIDER["SCOPES"], scopes_held(token)
    return [words[scope] for scope in scopes.ALL if scope in held]


class LoginView(auth_views.LoginView):
    """Signing in with a Django account, on the way to a consent page."""

    template_name = "oauth/login.html"
    redirect_authenticated_user = True
    # Signed in with no page to go back to (or already signed in): the person's own apps, not Django's default
    # /accounts/profile/, which does not exist here.
    next_page = "connected-apps"

    def get_context_data(self, **kwargs):
        return {
            **_page(self.request),
            **super().get_context_data(**kwargs),
            "title": "Sign in",
            "app_path": self.request.get_full_path(),
        }


def urlpatterns() -> list:
    """The authorization server's routes, under the toolkit's URL namespace (its metadata view reverses them)."""
    if settings.OAUTH["MODE"] == "off":
        return []
    # The resource metadata, in both modes: it names the authorization server clients go to.
    resource = [
        path(".well-known/oauth-protected-resource", ResourceMetadataView.as_view(), name="oauth-resource-metadata"),
        path(
            ".well-known/oauth-protected-resource/<path:resource_path>",
            ResourceMetadataView.as_view(),
            name="oauth-resource-metadata-path",
        ),
    ]
    if settings.OAUTH["MODE"] == "external":
        return resource
    return (
        resource
        + [
            path(".well-known/oauth-authorization-server", ServerMetadataView.as_view(), name="oauth-server-metadata"),
            path("oauth/authorize/", AuthorizeView.as_view(), name="authorize"),
            path("oauth/token/", TokenView.as_view(), name="token"),
            path("oauth/revoke/", RevokeView.as_view(), name="revoke-token"),
        ]
        + (
            [
                path("oauth/register/", RegisterView.as_view(), name="dcr-register"),
                # RFC 7592: a registered client reads, updates or deletes its registration with the token it was given.
                path(
                    "oauth/register/<str:client_id>/",
                    RegistrationManagementView.as_view(),
                    name="dcr-register-management",
                ),
            ]
            if oauth2_settings.DCR_ENABLED
            else []
        )
    )
