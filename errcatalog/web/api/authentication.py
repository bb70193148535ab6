"""``Authorization: Bearer <key>`` authentication with client tokens (see ``errcatalog.access.tokens``)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from errcatalog.access.tokens import client_token_authenticate

KEYWORD = "Bearer"


class ClientTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates as the token's user; ``request.auth`` is the ``ClientToken``.

    Requests without a Bearer header are left to the other authentication classes (the admin's session).
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
        token = client_token_authenticate(raw_key)
        if token is None:
            raise exceptions.AuthenticationFailed("The token is invalid or has been revoked.")
        return token.user, token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (with this challenge) rather than 403 when credentials are missing or wrong.
        return f'{KEYWORD} realm="api"'


class ClientTokenScheme(OpenApiAuthenticationExtension):
    """Describes the scheme in the OpenAPI document."""

    target_class = ClientTokenAuthentication
    name = "clientToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A client token (ec_…), created in admin or with `manage.py token_create`.",
        }
