"""Django admin for named servers: staff compose some of our tools and some upstreams into a server at ``/mcp/<name>``.

Our tools to choose from are the MCP server's registry's, which this package never imports: the MCP server says
which they are when the app starts (``live.own_tool_names``). The upstreams are rows of the server (an inline), each
with the tools it serves (all by default). Whoever may change a named server may change its upstreams: they are part
of it, not a model of their own.
Everything is saved through the named servers' one write path (``errcatalog.gateway.named_servers``), whose rules
(a name in the server-name rule, never an upstream's or a reserved one) the form shows at their fields; after a save
the page warns about chosen upstream tools that will not be served as staff may expect.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from errcatalog.gateway import live
from errcatalog.gateway.models import NamedServer, NamedServerUpstream
from errcatalog.gateway.named_servers import (
    FIELDS,
    named_server_create,
    named_server_delete,
    named_server_tool_warnings,
    named_server_update,
    named_server_upstreams,
    named_server_validate,
)
from errcatalog.versioned_admin import VersionedAdmin
from errcatalog.vocabulary import TOOL_NAME_RULE, is_tool_name

# Tool names are entered on one line, separated by commas or spaces (neither occurs in a tool name).
_SEPARATORS = re.compile(r"[\s,]+")
# A tool list longer than this is not a choice of tools.
_MAX_TOOLS = 500


def _own_tool_choices(chosen: list[str]) -> list[tuple[str, str]]:
    """Our tools this deployment serves, and any already chosen that it no longer serves, marked, so that they can
    be unticked."""
    served = live.own_tool_names()
    choices = [(name, name) for name in sorted(served)]
    choices += [(name, f"{name} (not served here)") for name in chosen if name not in served and is_tool_name(name)]
    return choices


class NamedServerForm(forms.ModelForm):
    tools = forms.MultipleChoiceField(
        label="Our tools",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Served under the names /mcp serves them by.",
    )

    class Meta:
        model = NamedServer
        fields = ("name", "enabled", "description", "tools")
        widgets = {"description": forms.Textarea(attrs={"rows": 4, "cols": 80})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields.get("tools")  # a viewer's form has no editable fields
        if isinstance(field, forms.MultipleChoiceField):
            chosen = self.instance.tools if isinstance(self.instance.tools, list) else []
            field.choices = _own_tool_choices(chosen)

    def server_fields(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in FIELDS}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        if self.errors:
            return data
        # The services' own check, so that a problem shows at its field; they check again when saving.
        try:
            named_server_validate(server=self.instance if self.instance.pk else None,
                                  known_tools=live.own_tool_names(), **self.server_fields())  # fmt: skip
        except ValidationError as exc:
            for name, errors in exc.message_dict.items():
                self.add_error(name if name in self.fields else None, errors)
        return data

    def _post_clean(self) -> None:
        # The model's rules run in ``clean`` through the services; the instance stays as stored until they save it.
        pass

    def save_m2m(self) -> None:
        # A revert from the history calls it after save_model; a named server has no many-to-many field, and the
        # services saved everything (a form's own save, which would set it, never runs).
        pass


class NamedServerUpstreamForm(forms.ModelForm):
    tools = forms.CharField(
        label="Its tools",
        required=False,
        max_length=20_000,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="Its own tool names, separated by commas or spaces; empty serves every tool /mcp serves of it.",
    )

    class Meta:
        model = NamedServerUpstream
        fields = ("upstream", "tools")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "tools" in self.fields and isinstance(self.instance.tools, list):
            self.initial["tools"] = ", ".join(self.instance.tools)

    def clean_tools(self) -> list[str]:
        names = [name for name in _SEPARATORS.split(self.cleaned_data.get("tools") or "") if name]
        bad = next((name for name in names if not is_tool_name(name)), None)
        if bad is not None:
            raise ValidationError(f"{bad[:40]!r} is not a tool name ({TOOL_NAME_RULE}).")
        if len(names) > _MAX_TOOLS:
            raise ValidationError(f"Choose at most {_MAX_TOOLS} tools, or leave it empty for all.")
        return names


class NamedServerUpstreamInline(admin.TabularInline):
    """A named server's upstreams: part of the server, so its permissions are the server's."""

    model = NamedServerUpstream
    form = NamedServerUpstreamForm
    extra = 1

    @staticmethod
    def _may(request: Any, verb: str) -> bool:
        return request.user.has_perm(f"errcatalog.{verb}_namedserver")

    def has_view_permission(self, request: Any, obj: Any = None) -> bool:
        return self._may(request, "view") or self._may(request, "change")

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return self._may(request, "change" if obj is not None else "add")

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return self._may(request, "change" if obj is not None else "add")

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return self._may(request, "change" if obj is not None else "add")


@admin.register(NamedServer)
class NamedServerAdmin(VersionedAdmin):
    form = NamedServerForm
    inlines = (NamedServerUpstreamInline,)
    list_display = ("name", "path", "enabled", "own_tools", "upstream_names", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    readonly_fields = ("path", "updated_at")
    fields = ("name", "path", "enabled", "description", "tools", "updated_at")

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).prefetch_related("members__upstream")

    # --- Saving through the services -------------------------------------------------------------------------------

    def save_form(self, request: Any, form: NamedServerForm, change: bool) -> NamedServer:
        return form.instance  # saved by save_model and save_related, through the services

    def save_model(self, request: Any, obj: NamedServer, form: NamedServerForm, change: bool) -> None:
        known = live.own_tool_names()
        if change:
            # The row as stored: ``obj`` may be a version from its history that staff revert to.
            server = NamedServer.objects.get(pk=obj.pk)
            named_server_update(actor=request.user, server=server, known_tools=known, change_reason="admin",
                                **form.server_fields())  # fmt: skip
        else:
            server = named_server_create(actor=request.user, known_tools=known, change_reason="admin",
                                         **form.server_fields())  # fmt: skip
        obj.__dict__.update(server.__dict__)  # the admin goes on with obj (its messages, its redirect)

    def save_related(self, request: Any, form: NamedServerForm, formsets: Any, change: bool) -> None:
        server = form.instance
        upstreams = _composed(formsets) if formsets else named_server_upstreams(server)
        if formsets:
            before = {m.upstream.name: m for m in server.members.select_related("upstream")}
            named_server_update(actor=request.user, server=server, upstreams=upstreams, change_reason="admin")
            after = {m.upstream.name: m for m in server.members.select_related("upstream")}
            # What admin's change message and log entry say of the rows (a formset's save would have set these).
            for formset in formsets:
                formset.new_objects = [after[name] for name in sorted(after.keys() - before.keys())]
                formset.deleted_objects = [before[name] for name in sorted(before.keys() - after.keys())]
                formset.changed_objects = [
                    (after[name], ["tools"]) for name in sorted(after.keys() & before.keys())
                    if after[name].tools != before[name].tools
                ]  # fmt: skip
        for warning in named_server_tool_warnings(upstreams):
            self.message_user(request, warning, messages.WARNING)

    def delete_model(self, request: Any, obj: NamedServer) -> None:
        named_server_delete(actor=request.user, server=obj, change_reason="admin")

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        for server in queryset:
            named_server_delete(actor=request.user, server=server, change_reason="admin")

    # --- The list ---------------------------------------------------------------------------------------------------

    @admin.display(description="Path")
    def path(self, obj: NamedServer) -> str:
        return f"/mcp/{obj.name}" if obj.name else ""

    @admin.display(description="Our tools")
    def own_tools(self, obj: NamedServer) -> str:
        return ", ".join(obj.tools) if isinstance(obj.tools, list) else ""

    @admin.display(description="Upstreams")
    def upstream_names(self, obj: NamedServer) -> str:
        return ", ".join(member.upstream.name for member in obj.members.all())


def _composed(formsets: Any) -> dict[str, list[str]]:
    """The upstreams the inline's rows give, by upstream name, without the rows marked for deletion and the empty
    extra ones."""
    upstreams = {}
    for formset in formsets:
        for row in formset.forms:
            data = getattr(row, "cleaned_data", None)
            if not data or data.get("DELETE") or data.get("upstream") is None:
                continue
            upstreams[data["upstream"].name] = list(data.get("tools") or [])
    return upstreams
