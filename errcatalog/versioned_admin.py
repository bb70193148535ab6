"""Admin pages with a history, shared by every domain's admin: the catalog's (``errcatalog.catalog.admin``) and the
gateway's records' (``errcatalog.gateway.admin``, ``named_server_admin``).

It knows no domain: Django and django-simple-history only, so that a domain below the catalog may build on it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from simple_history.admin import SimpleHistoryAdmin


class VersionedAdmin(SimpleHistoryAdmin):
    """An admin page with a history whose revert needs the change permission, as the change page does.

    django-simple-history's revert page (``<id>/history/<version>/``) asks only for the view permission and then
    saves whatever is posted through ``save_model``: without this check a staff member who may only look at a row
    (or nobody, where admin never changes a row by hand, like a pinned upstream tool) could change it there. Every
    versioned page of ours uses it (the catalog's, the upstreams', their tools', the named servers').

    A revert saves the version over the row as stored, through the page's write path; a row deleted since is not
    re-created here (that would be adding it, and the write paths change stored rows only), so its versions can be
    read but not posted.
    """

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: Any = None
    ) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        if request.method == "POST" and (row is None or not self.has_change_permission(request, row)):
            raise PermissionDenied
        return super().history_form_view(request, object_id, version_id, extra_context)
