"""Django admin for client tokens (static keys and OAuth grants): a key is created by the token service and shown
once; a grant is made by consenting to an OAuth client."""

from __future__ import annotations

from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from errcatalog import input_limits
from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create, client_token_grant_denial, client_token_revoke
from errcatalog.admin_display import fixed_width_time
from errcatalog.vocabulary import ROOT_SERVER, SERVER_NAME_RULE, TOOL_NAME_RULE, is_server_name, is_tool_name

# Short JSON lists (["send_email"]) fit on one line. Deeper nesting than the REST API accepts is
# invalid JSON here too (the decoder would recurse into it and fail with a 500).
_JSON_LINE = {
    "widget": forms.TextInput(attrs={"size": 40}),
    "decoder": input_limits.depth_bounded_json_decoder(settings.ERRCATALOG["API_MAX_JSON_DEPTH"]),
    "error_messages": {
        "invalid": f"Enter valid JSON, nested at most {settings.ERRCATALOG['API_MAX_JSON_DEPTH']} levels."
    },
}
# What a token may do.
_RIGHTS = (
    "can_call_tools",
    "can_write_catalog",
    "can_read_metrics",
    "can_read_catalog",
    "can_report_outcomes",
    "outcomes_count_for_allocation",
)


class ClientTokenForm(forms.ModelForm):
    # The person saving the form, set by ``ClientTokenAdmin.get_form``: a token must be within their rights.
    grantor = None

    class Meta:
        model = ClientToken
        fields = ("name", "user", "tool_scope", "servers", *_RIGHTS)

    def clean(self):
        cleaned = super().clean() or {}
        owner = cleaned.get("user") if "user" in self.fields else self.instance.user
        if owner is None or self.grantor is None:
            return cleaned
        # Only rights being given now are checked: a right a superuser gave stays when its owner renames the token.
        denial = client_token_grant_denial(
            grantor=self.grantor,
            owner=owner,
            can_read_metrics=self._given("can_read_metrics"),
            outcomes_count_for_allocation=self._given("outcomes_count_for_allocation"),
        )
        if denial is not None:
            raise ValidationError(denial)
        return cleaned

    def _given(self, right: str) -> bool:
        return bool(self.cleaned_data.get(right)) and right in self.changed_data

    def clean_tool_scope(self):
        scope = self.cleaned_data["tool_scope"]
        if not isinstance(scope, list) or not all(is_tool_name(tool) for tool in scope):
            raise ValidationError(
                f'Give a list of tool names ({TOOL_NAME_RULE}), e.g. ["send_email"], or [] for every tool.'
            )
        return scope

    def clean_servers(self):
        # An empty box is every server, as [] is.
        servers = self.cleaned_data["servers"] if self.cleaned_data.get("servers") is not None else []
        # Names only, never checked against the upstreams there are now: a token may be made before its upstream,
        # and a server it names that is not served is answered as unknown (404) like any other.
        if not isinstance(servers, list) or not all(is_server_name(server) for server in servers):
            raise ValidationError(
                f'Give a list of server names ({SERVER_NAME_RULE}), e.g. ["", "git"], or [] for every server.'
            )
        return servers


# An OAuth client's tokens are reached through its grant (a client token row): revoking the grant revokes them. Their
# own pages would list hashes and offer edits that bypass the grant, so only the clients themselves stay in admin.
for _model in (get_access_token_model(), get_refresh_token_model(), get_grant_model(), get_id_token_model()):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


@admin.register(ClientToken)
class ClientTokenAdmin(admin.ModelAdmin):
    """Static keys and OAuth grants in one list. Keys are created by the token service and shown once; the stored
    hash is never displayed. Grants are made by consenting to a client; here their rights can only be narrowed
    (a right ticked on again is still capped by what the client's tokens were granted) and they can be revoked."""

    form = ClientTokenForm
    formfield_overrides = {models.JSONField: _JSON_LINE}
    list_display = (
        "name",
        "user",
        "kind",
        "key_prefix",
        # Reading the catalog is the default: the column would only make the list wider (it is a filter).
        "can_write_catalog",
        "can_read_metrics",
        "servers_allowed",
        "created",
        "last_used",
        "revoked",
    )
    list_filter = (*_RIGHTS, ("application", admin.EmptyFieldListFilter), ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "key_prefix", "user__username")
    list_select_related = ("user", "application")
    autocomplete_fields = ("user",)
    actions = ("revoke",)
    add_fieldsets = ((None, {"fields": ("name", "user", "tool_scope", "servers", *_RIGHTS)}),)
    fieldsets = (
        (None, {"fields": ("name", "user", "key_prefix", "tool_scope", "servers", *_RIGHTS)}),
        ("Use", {"fields": ("created_at", "last_used_at", "revoked_at")}),
    )
    grant_fieldsets = (
        (None, {"fields": ("name", "user", "client", "tool_scope", "servers", *_RIGHTS)}),
        ("Use", {"fields": ("created_at", "last_used_at", "revoked_at")}),
    )

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"grantor": request.user})

    def get_changeform_initial_data(self, request):
        # Most people create tokens for themselves, and only superusers may create them for anyone else.
        return {"user": request.user.pk, **super().get_changeform_initial_data(request)}

    def has_change_permission(self, request, obj=None) -> bool:
        return super().has_change_permission(request, obj) and self._own_or_superuser(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and self._own_or_superuser(request, obj)

    @staticmethod
    def _own_or_superuser(request, obj: ClientToken | None) -> bool:
        # A token is its owner's identity: others' tokens are for superusers to change, revoke or delete.
        return obj is None or request.user.is_superuser or obj.user_id == request.user.pk

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return self.add_fieldsets
        return self.grant_fieldsets if obj.is_grant else self.fieldsets

    def get_readonly_fields(self, request, obj=None):
        # A key belongs to one user for life, and revoking is final: it goes through the action only.
        if obj is None:
            return ()
        if obj.is_grant:
            return ("user", "client", "created_at", "last_used_at", "revoked_at")
        return ("user", "key_prefix", "created_at", "last_used_at", "revoked_at")

    @admin.display(description="Kind", ordering="application")
    def kind(self, obj: ClientToken) -> str:
        return "OAuth app" if obj.is_grant else "Key"

    @admin.display(description="OAuth client")
    def client(self, obj: ClientToken) -> str:
        """The client's id and where it sends people back to: its name is its own claim, its redirect is not."""
        application = obj.application
        if application is None:
            return "-"
        hosts = sorted({urlsplit(uri).netloc or uri for uri in (application.redirect_uris or "").split()})
        return f"{application.client_id} (redirects to {', '.join(hosts) or 'nowhere'})"

    @admin.display(description="Servers")
    def servers_allowed(self, obj: ClientToken) -> str:
        """The paths the key may use: every server, or its list (as paths, so /mcp itself reads as one)."""
        if not obj.servers:
            return "all"
        return ", ".join("/mcp" if server == ROOT_SERVER else f"/mcp/{server}" for server in obj.servers)

    @admin.display(description="Created at", ordering="created_at")
    def created(self, obj: ClientToken) -> str:
        return fixed_width_time(obj.created_at)

    @admin.display(description="Last used at", ordering="last_used_at")
    def last_used(self, obj: ClientToken) -> str:
        return fixed_width_time(obj.last_used_at)

    @admin.display(description="Revoked", boolean=True, ordering="revoked_at")
    def revoked(self, obj: ClientToken) -> bool:
        return obj.revoked

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        token, raw_key = client_token_create(
            user=obj.user,
            name=obj.name,
            tool_scope=obj.tool_scope,
            servers=obj.servers,
            can_call_tools=obj.can_call_tools,
            can_write_catalog=obj.can_write_catalog,
            can_read_metrics=obj.can_read_metrics,
            can_read_catalog=obj.can_read_catalog,
            can_report_outcomes=obj.can_report_outcomes,
            outcomes_count_for_allocation=obj.outcomes_count_for_allocation,
            granted_by=request.user,
        )
        # The admin's own add flow (log entry, redirect) continues with ``obj``, so it becomes the created row.
        obj.pk = token.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"The key of “{token.name}” is shown only this once; copy it now: {raw_key}",
            messages.WARNING,
        )

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset) -> None:
        if not request.user.is_superuser:
            queryset = queryset.filter(user=request.user)
        tokens = list(queryset.filter(revoked_at__isnull=True))
        for token in tokens:
            client_token_revoke(token=token)
        self.message_user(request, f"Revoked {len(tokens)} token(s).", messages.SUCCESS)
