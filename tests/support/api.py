"""REST API clients with a token, and staff permissions granted by name."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant


def bearer_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


CATALOG_MODELS = (ErrorCode, TemplateVariant, ParameterHint, ClassificationRule)


def grant(user, *codenames: str) -> None:
    """Give ``user`` the named catalog permissions ("add_errorcode", ...) and drop Django's cached copy."""
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="errcatalog", codename__in=codenames))
    for cache in ("_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(cache, None)
