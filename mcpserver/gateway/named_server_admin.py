"""Django admin for named servers: staff compose some of our tools and some upstreams into a server at ``/mcp/<name>``.

It lives with the MCP server because the tools to choose from are the registry's (``mcpserver.registry``), which
``errcatalog`` never imports. The upstreams are rows of the server (an inline), each with the tools it serves (all by
default). Whoever may change a named server may change its upstreams: they are part of it, not a model of their own.
The rules are the models' (``errcatalog.gateway.models``): a name in the server-name rule, never an upstream's or a
reserved one.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import ValidationError
from simple_history.admin import SimpleHistoryAdmin

from errcatalog.gateway.models import NamedServer, NamedServerUpstream
from errcatalog.vocabulary import TOOL_NAME_RULE, is_tool_name
from mcpserver.registry import autodiscover, registry

# Tool names are entered on one line, separated by commas or spaces (neither occurs in a tool name).
_SEPARATORS = re.compile(r"[\s,]+")
# A tool list longer than this is not a choice of tools.
_MAX_TOOLS = 500


def _own_tool_choices(chosen: list[str]) -> list[tuple[str, str]]:
    """Our tools this deployment serves at ``/mcp`` (``MCP["TOOLSETS"]``), and any already chosen that it no longer
    serves, marked, so that they can be unticked."""
    autodiscover()  # the tool modules register on import; a process that has not served /mcp yet has not
    served = registry.enabled_by_name(settings.MCP["TOOLSETS"])
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
class NamedServerAdmin(SimpleHistoryAdmin):
    form = NamedServerForm
    inlines = (NamedServerUpstreamInline,)
    list_display = ("name", "path", "enabled", "own_tools", "upstream_names", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    readonly_fields = ("path", "updated_at")
    fields = ("name", "path", "enabled", "description", "tools", "updated_at")

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).prefetch_related("members__upstream")

    @admin.display(description="Path")
    def path(self, obj: NamedServer) -> str:
        return f"/mcp/{obj.name}" if obj.name else ""

    @admin.display(description="Our tools")
    def own_tools(self, obj: NamedServer) -> str:
        return ", ".join(obj.tools) if isinstance(obj.tools, list) else ""

    @admin.display(description="Upstreams")
    def upstream_names(self, obj: NamedServer) -> str:
        return ", ".join(member.upstream.name for member in obj.members.all())
