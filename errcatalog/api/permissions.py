"""Who may read and who may change the catalog through the API."""

from __future__ import annotations

from rest_framework import permissions

from errcatalog.models import ClientToken


def can_write_catalog(request) -> bool:
    """A token's own write flag decides for token requests; a session needs a staff user.

    The token's flag wins over its user's staff status so that a read-only key handed to a client stays
    read-only whoever created it.
    """
    if isinstance(request.auth, ClientToken):
        return request.auth.can_write_catalog
    user = request.user
    return bool(user and user.is_authenticated and user.is_staff)


class CatalogAccess(permissions.BasePermission):
    """Reads for every authenticated caller, writes for staff sessions and tokens with catalog write rights."""

    message = "Changing the catalog needs a staff account or a token with catalog write rights."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or can_write_catalog(request)
