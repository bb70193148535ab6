"""Who may read and who may change the catalog through the API.

Reads are open to every authenticated caller (session or client key; an OAuth token with catalog:read). Writes
follow Django's model permissions, exactly the ones the admin checks: POST needs ``add_<model>``, PUT and PATCH
``change_<model>``, DELETE ``delete_<model>``, and an error code's nested variants need the ``TemplateVariant``
permissions for what a request does to them (``catalog_write_denial``). Superusers hold every permission.

A client token acts as its user and can never do more than that user: a token write needs the token's own
``can_write_catalog`` flag *and* the user's model permission. The flag can only take rights away, so a
read-only key handed to a client stays read-only whoever created it, and a write key stops writing when its
user loses the permission.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models
from rest_framework import exceptions, permissions

from errcatalog.access import scopes
from errcatalog.access.models import ClientToken
from errcatalog.access.oauth import API_PATH, public_base, resource_metadata_url, scopes_held

WRITE_FLAG_MISSING_MESSAGE = "This token is read-only: create one with catalog write rights to change the catalog."
WRITE_SCOPE_MISSING_MESSAGE = "Changing the catalog needs the catalog:write scope: authorize the client with it."
READ_SCOPE_MISSING_MESSAGE = "Reading the catalog needs the catalog:read scope: authorize the client with it."
MISSING_PERMISSION_MESSAGE = "Changing the catalog needs the matching model permission ({permissions})."


class InsufficientScope(exceptions.PermissionDenied):
    """An OAuth token without the scope an operation needs: 403 with a step-up challenge (RFC 6750 §3.1, as the MCP
    endpoint's) naming every scope the client should hold from now on, so it can ask its person again."""

    def __init__(self, message: str, request, *, needed: str) -> None:
        super().__init__(message)
        metadata = resource_metadata_url(public_base(request), API_PATH)
        wanted = scopes.scope_string({*scopes_held(request.auth), needed})
        # DRF's handler sends ``auth_header`` as WWW-Authenticate.
        self.auth_header = f'Bearer error="insufficient_scope", scope="{wanted}", resource_metadata="{metadata}"'


def permission_name(model: type[models.Model], action: str) -> str:
    """``errcatalog.add_errorcode`` for ``(ErrorCode, "add")``: the name Django's permission checks take."""
    opts = model._meta
    return f"{opts.app_label}.{action}_{opts.model_name}"


def catalog_write_denial(user, model: type[models.Model], actions: Iterable[str]) -> str | None:
    """The refusal message when ``user`` lacks one of the ``actions`` on ``model``, or None when it may act.

    The message names only our own permission codenames, never anything from the request.
    """
    wanted = (permission_name(model, action) for action in sorted(set(actions)))
    missing = [name for name in wanted if not user.has_perm(name)]
    if not missing:
        return None
    return MISSING_PERMISSION_MESSAGE.format(permissions=", ".join(missing))


class CatalogReadAccess(permissions.IsAuthenticated):
    """Rendering and classifying read the catalog, though sent as POST: an OAuth token needs catalog:read for them
    as for any other read (a static key always may)."""

    def has_permission(self, request, view) -> bool:
        token = request.auth
        if isinstance(token, ClientToken) and token.is_grant and not token.can_read_catalog:
            raise InsufficientScope(READ_SCOPE_MISSING_MESSAGE, request, needed=scopes.CATALOG_READ)
        return super().has_permission(request, view)


class CatalogModelPermissions(permissions.DjangoModelPermissions):
    """Reads for every authenticated caller; writes need the model permission (and a write token, for tokens).

    DRF's ``DjangoModelPermissions`` maps the HTTP method to ``add``/``change``/``delete`` of the view's queryset
    model and asks ``user.has_perms``, the same backend the admin uses; reads need no model permission here
    because every client token reads the catalog (the MCP tools and the render preview are built on it).
    """

    message = "Changing the catalog needs the matching model permission (add, change or delete)."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in permissions.SAFE_METHODS:
            # An OAuth token reads the catalog only with catalog:read (a static key always may).
            if isinstance(request.auth, ClientToken) and request.auth.is_grant and not request.auth.can_read_catalog:
                raise InsufficientScope(READ_SCOPE_MISSING_MESSAGE, request, needed=scopes.CATALOG_READ)
            return True
        if isinstance(request.auth, ClientToken) and not request.auth.can_write_catalog:
            if request.auth.is_grant:
                raise InsufficientScope(WRITE_SCOPE_MISSING_MESSAGE, request, needed=scopes.CATALOG_WRITE)
            # DRF builds permission instances per request, so the message is this request's own.
            self.message = WRITE_FLAG_MISSING_MESSAGE
            return False
        if super().has_permission(request, view):
            return True
        model = view.get_queryset().model
        self.message = MISSING_PERMISSION_MESSAGE.format(
            permissions=", ".join(self.get_required_permissions(request.method, model))
        )
        return False
