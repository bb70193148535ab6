"""OAuth access tokens by mode: which check a bearer token that is not a static key gets.

Builtin mode: errcatalog's own authorization server issued it (``errcatalog.access.oauth``); external mode: the
company's identity provider did (``errcatalog.access.external``, which builds on the former's grants and resources).
"""

from __future__ import annotations

from django.conf import settings

from errcatalog.access.external import external_access_authenticate
from errcatalog.access.oauth import OAuthAccess, oauth_access_authenticate


def access_token_authenticate(raw_token: str) -> OAuthAccess | None:
    """The OAuth access token ``raw_token`` is, from this service's authorization server or, in external mode, the
    company's identity provider; None when it is not a live one. In external mode, raises
    ``IdentityProviderUnavailable`` when the provider must be asked and cannot be."""
    if settings.OAUTH["MODE"] == "external":
        return external_access_authenticate(raw_token)
    return oauth_access_authenticate(raw_token)
