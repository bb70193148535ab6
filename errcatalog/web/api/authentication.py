"""``Authorization: Bearer <key>`` authentication with client tokens (see ``errcatalog.access.tokens``)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from errcatalog.access.bearer import access_token_authenticate
from errcatalog.access.oauth import API_PATH, audience_allows, public_base, resource_metadata_url, token_narrowed_grant
from errcatalog.access.tokens import KEY_PREFIX, client_token_authenticate

KEYWORD = "Bearer"


class ClientTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates as the token's user; ``request.auth`` is the ``ClientToken``.

    A static key (``ec_…``) or an OAuth access token issued for the REST API (or for all of this service) by
    errcatalog's authorization server or, in external mode, the company's identity provider; for the latter
    ``request.auth`` is its grant as this token may use it, its rights narrowed to the token's scopes
    (``token_narrowed_grant``). Requests without a Bearer header are left to the other authentication classes (the
    admin's session).
    """

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != KEYWORD.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send the key as 'Authorization: Bearer <key>', with no spaces.")
        try:
            raw_key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token is invalid or has been revoked.") from None
        if raw_key.startswith(KEY_PREFIX) or settings.OAUTH["MODE"] == "off":
            token = client_token_authenticate(raw_key)
        else:
            token = self._oauth_grant(request, raw_key)
        if token is None:
            raise exceptions.AuthenticationFailed("The token is invalid or has been revoked.")
        return token.user, token

    @staticmethod
    def _oauth_grant(request, raw_token: str):
        # An unreachable identity provider (external mode) raises IdentityProviderUnavailable: the API's 503.
        access = access_token_authenticate(raw_token)
        if access is None or not audience_allows(access.resources, public_base(request) + request.path):
            return None
        return token_narrowed_grant(access)

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (with this challenge) rather than 403 when credentials are missing or wrong; with
        # OAuth on, it names the API's resource metadata (RFC 9728).
        if settings.OAUTH["MODE"] == "off":
            return f'{KEYWORD} realm="api"'
        metadata = resource_metadata_url(public_base(request), API_PATH)
        return f'{KEYWORD} realm="api", resource_metadata="{metadata}"'


class ClientTokenScheme(OpenApiAuthenticationExtension):
    """Describes the scheme in the OpenAPI document."""

    target_class = ClientTokenAuthentication
    name = "clientToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A client token (ec_…), created in admin or with `manage.py token_create`, or an OAuth "
            "access token issued for this API (resource `<base>/api/v1`) with the scopes the operation needs: "
            "`catalog:read` to read, `catalog:write` to change the catalog, `metrics:read` for metrics.",
        }
