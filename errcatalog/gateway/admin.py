"""Django admin for upstreams: the records, their health in every serving process and a connection test; and their
tools' pinned metadata, reviewed (a diff and the screen's flags) and approved or rejected.

Each upstream's health is what the serving processes report (``errcatalog.gateway.models.UpstreamHealth``), so the
page shows every process's connections whichever process serves it. The "test connection" action connects as the
gateway would, with the SDK's client, which this package never imports: through ``live.probe_upstream``, the MCP
server's probe, handed over when the app starts. Header and variable values are entered as ``NAME: value`` lines and
stored sealed (or as the ``env:`` reference entered); they are never shown back, only where each comes from and
whether it is set. Only superusers may add, change or delete a stdio upstream.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from asgiref.sync import async_to_sync
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from errcatalog.gateway import live
from errcatalog.gateway.client_config import ClientConfigError, client_config_loads
from errcatalog.gateway.models import FailureWords, SessionMode, Transport, Upstream, UpstreamTool
from errcatalog.gateway.secrets import describe
from errcatalog.gateway.selectors import ProcessHealth, health_summary, process_health, upstream_config
from errcatalog.gateway.services import (
    TrustDenied,
    may_approve_upstream_tools,
    upstream_create,
    upstream_delete,
    upstream_tool_approve,
    upstream_tool_reject,
    upstream_update,
    upstream_validate,
    upstreams_import,
)
from errcatalog.gateway.targets import private_target
from errcatalog.versioned_admin import VersionedAdmin

_LINES = {"rows": 3, "cols": 60}
# The fields the form edits as they are; the others are entered as lines (headers, environment, arguments, tools).
_MODEL_FIELDS = ("name", "prefix", "enabled", "trusted", "transport", "url", "command", "cwd", "timeout_seconds",
                 "max_concurrency", "session_mode", "relay_sampling", "relay_roots", "failure_words")  # fmt: skip


def _pairs(text: str, what: str) -> dict[str, str]:
    pairs = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, separator, value = line.partition(":")
        if not separator or not name.strip():
            raise ValidationError(f"Line {number}: write {what} as NAME: value (or NAME: env:VARIABLE).")
        pairs[name.strip()] = value.strip()
    return pairs


class UpstreamForm(forms.ModelForm):
    user: Any = None  # the user saving the form, set by UpstreamAdmin.get_form
    headers_entry = forms.CharField(
        label="Headers",
        required=False,
        widget=forms.Textarea(attrs=_LINES),
        help_text="One per line, NAME: value or NAME: env:VARIABLE. Filled in, it replaces the stored headers; "
        "left empty, they are kept, unless the URL changes: then they are dropped (they were entered for the old "
        "address). Values are sealed for this upstream and never shown again.",
    )
    clear_headers = forms.BooleanField(required=False, help_text="Remove every stored header.")
    env_entry = forms.CharField(
        label="Environment",
        required=False,
        widget=forms.Textarea(attrs=_LINES),
        help_text="Variables the stdio process gets (and nothing else of ours), one per line, NAME: value or "
        "NAME: env:VARIABLE. Filled in, it replaces the stored ones; left empty, they are kept, unless the "
        "command changes: then they are dropped.",
    )
    clear_env = forms.BooleanField(required=False, help_text="Remove every stored variable.")
    args_entry = forms.CharField(
        label="Arguments", required=False, widget=forms.Textarea(attrs=_LINES), help_text="One argument per line."
    )
    tools_entry = forms.CharField(
        label="Exposed tools",
        required=False,
        widget=forms.Textarea(attrs=_LINES),
        help_text="The upstream's tool names, one per line; empty exposes every tool it lists.",
    )

    class Meta:
        model = Upstream
        fields = _MODEL_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "session_mode" in self.fields:  # a viewer's form has no editable fields
            self.fields["session_mode"].required = False
            self.fields["failure_words"].required = False
        if self.instance.pk:
            self.fields["args_entry"].initial = "\n".join(self.instance.args)
            self.fields["tools_entry"].initial = "\n".join(self.instance.tools)

    def upstream_fields(self) -> dict[str, Any]:
        """The fields to hand to the services, with the entered headers and variables when there are any."""
        data = self.cleaned_data
        fields = {name: data[name] for name in _MODEL_FIELDS}
        fields["session_mode"] = data["session_mode"] or SessionMode.SHARED  # HTTP upstreams need not say
        fields["failure_words"] = data["failure_words"] or FailureWords.QUOTED
        fields["args"] = [line for line in data["args_entry"].splitlines() if line.strip()]
        fields["tools"] = [line.strip() for line in data["tools_entry"].splitlines() if line.strip()]
        for field, entry, clear, what in (
            ("headers", "headers_entry", "clear_headers", "headers"),
            ("env", "env_entry", "clear_env", "variables"),
        ):
            if data[clear]:
                fields[field] = {}
            elif data[entry].strip():
                fields[field] = _pairs(data[entry], what)
            elif not self.instance.pk:
                fields[field] = {}
        return fields

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        for entry, what in (("headers_entry", "headers"), ("env_entry", "variables")):
            try:
                _pairs(data.get(entry) or "", what)
            except ValidationError as exc:
                self.add_error(entry, exc)
        if self.errors:
            return data
        # The services' own check, so that a problem shows at its field; they check again when saving. Against the
        # row as stored, not ``self.instance``: a revert from the history hands the form the version reverted to, and
        # the rules that compare with the stored row (keeping a private address, trusting) must see what changes.
        stored = Upstream.objects.filter(pk=self.instance.pk).first() if self.instance.pk else None
        try:
            upstream_validate(actor=self.user, upstream=stored, **self.upstream_fields())
        except TrustDenied as exc:
            self.add_error("trusted", str(exc))
        except PermissionDenied as exc:
            self.add_error("transport", str(exc))
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                shown_at = _FORM_FIELD.get(field, field)
                self.add_error(shown_at if shown_at in self.fields else None, errors)
        return data

    def _post_clean(self) -> None:
        # The model's rules run in ``clean`` through the services, on the sealed values; the form only parses.
        pass

    def save_m2m(self) -> None:
        # A revert from the history calls it after save_model; an upstream has no many-to-many field, and the
        # services saved everything (a form's own save, which would set it, never runs).
        pass


# Where a problem of a model field shows on the form.
_FORM_FIELD = {"headers": "headers_entry", "env": "env_entry", "args": "args_entry", "tools": "tools_entry"}


class ImportForm(forms.Form):
    block = forms.CharField(
        label="mcpServers block",
        widget=forms.Textarea(attrs={"rows": 16, "cols": 100, "spellcheck": "false"}),
        max_length=100_000,
        help_text='The JSON your MCP client keeps its servers in: {"mcpServers": {"name": {...}}} (VS Code: '
        '"servers"). Values named like secrets become env: references; the page names the variables to set.',
    )


@admin.register(Upstream)
class UpstreamAdmin(VersionedAdmin):
    form = UpstreamForm
    change_list_template = "admin/errcatalog/upstream/change_list.html"
    list_display = ("name", "prefix", "transport", "enabled", "health", "last_failure")
    list_filter = ("transport", "enabled")
    search_fields = ("name", "prefix", "url", "command")
    actions = ("test_connection",)
    readonly_fields = ("stored_headers", "stored_env", "health", "health_by_process", "last_failure", "updated_at",
                       "tools_to_review")  # fmt: skip
    fieldsets = (
        (None, {"fields": ("name", "prefix", "enabled", "transport", "timeout_seconds", "max_concurrency")}),
        ("Streamable HTTP", {"fields": ("url", "stored_headers", "headers_entry", "clear_headers")}),
        ("stdio (a command run on this server)",
         {"fields": ("command", "args_entry", "cwd", "stored_env", "env_entry", "clear_env", "session_mode")}),
        ("Tools", {"fields": ("tools_entry", "trusted", "tools_to_review", "failure_words")}),
        ("Relayed to the clients that declared them", {"fields": ("relay_sampling", "relay_roots")}),
        ("Health, as the serving processes report it", {"fields": ("health", "health_by_process", "last_failure",
                                                                  "updated_at")}),
    )  # fmt: skip

    # --- Permissions: a stdio upstream is a command run here ----------------------------------------------------

    def _stdio_allowed(self, request: Any, obj: Upstream | None) -> bool:
        return obj is None or obj.transport != Transport.STDIO or request.user.is_superuser

    def has_change_permission(self, request: Any, obj: Upstream | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._stdio_allowed(request, obj)

    def has_delete_permission(self, request: Any, obj: Upstream | None = None) -> bool:
        return super().has_delete_permission(request, obj) and self._stdio_allowed(request, obj)

    # --- Saving through the services ------------------------------------------------------------------------------

    def get_form(self, request: Any, obj: Upstream | None = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"user": request.user})

    def save_form(self, request: Any, form: UpstreamForm, change: bool) -> Upstream:
        return form.instance  # saved by save_model, through the services

    def save_model(self, request: Any, obj: Upstream, form: UpstreamForm, change: bool) -> None:
        fields = form.upstream_fields()
        if change:
            # The row as stored: ``obj`` may be a version from its history that staff revert to.
            stored = Upstream.objects.get(pk=obj.pk)
            had = {name: bool(getattr(stored, name)) for name in ("headers", "env")}
            changed = upstream_update(actor=request.user, upstream=stored, change_reason="admin", **fields)
            obj.__dict__.update(stored.__dict__)
            for name, what in (("headers", "headers"), ("env", "variables")):
                if had[name] and name in changed and name not in fields:
                    self.message_user(
                        request,
                        f"The stored {what} were dropped: they were entered for the old address. Enter them again.",
                        messages.WARNING,
                    )
        else:
            created = upstream_create(actor=request.user, change_reason="admin", **fields)
            obj.__dict__.update(created.__dict__)  # the admin goes on with obj (its messages, its redirect)

    def save_related(self, request: Any, form: UpstreamForm, formsets: Any, change: bool) -> None:
        pass  # no relations and no inlines: everything was saved by save_model

    def delete_model(self, request: Any, obj: Upstream) -> None:
        upstream_delete(actor=request.user, upstream=obj, change_reason="admin")

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        # An upstream's pinned tools go with it. Nobody holds the pins' own delete permission (they are never deleted
        # by hand), so without this no one, a superuser included, could delete an upstream that ever listed a tool.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        perms_needed.discard(UpstreamTool._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    # --- Importing an mcpServers block ------------------------------------------------------------------------------

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="errcatalog_upstream_import"), *super().get_urls()]

    def import_view(self, request: Any) -> Any:
        """Paste an MCP client's ``mcpServers`` block: one upstream per entry, created or updated by name. Open to
        staff who may add or change upstreams; each entry is written only as far as they may (the import service
        refuses the whole block otherwise)."""
        if not (self.has_add_permission(request) or self.has_change_permission(request)):
            raise PermissionDenied
        form = ImportForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                summary = upstreams_import(
                    client_config_loads(form.cleaned_data["block"]), actor=request.user, change_reason="admin import"
                )
            except ValueError as exc:  # not JSON, or not an mcpServers block (ClientConfigError)
                problem = str(exc) if isinstance(exc, ClientConfigError) else f"Not JSON: {exc}"
                form.add_error("block", problem)
            except ValidationError as exc:
                form.add_error("block", "; ".join(exc.messages))
            except PermissionDenied as exc:
                form.add_error("block", str(exc))
            else:
                self.message_user(request, f"Imported: {summary}.", messages.SUCCESS)
                for variable, replaces in sorted(summary.variables.items()):
                    self.message_user(
                        request, f"Set {variable} in the web processes' environment: it replaces {replaces}.",
                        messages.WARNING,
                    )  # fmt: skip
                return HttpResponseRedirect(reverse("admin:errcatalog_upstream_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "title": "Import upstreams",
            "form": form,
            "opts": self.model._meta,
        }
        return render(request, "admin/errcatalog/upstream/import.html", context)

    # --- What the serving processes report ----------------------------------------------------------------------

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).prefetch_related("health")

    def _health(self, obj: Upstream) -> list[ProcessHealth]:
        return [process_health(row) for row in obj.health.all()] if obj.pk else []

    @admin.display(description="health")
    def health(self, obj: Upstream) -> str:
        if not obj.enabled:
            return "disabled"
        return health_summary(self._health(obj))

    @admin.display(description="last failure")
    def last_failure(self, obj: Upstream) -> str:
        failed = [p for p in self._health(obj) if p.last_failure and p.last_failure_at]
        if not failed:
            return ""
        last = max(failed, key=lambda p: p.last_failure_at or p.reported_at)
        return f"{last.last_failure[:300]} ({last.process}, {last.last_failure_at:%Y-%m-%d %H:%M:%S} UTC)"

    @admin.display(description="by process")
    def health_by_process(self, obj: Upstream) -> Any:
        processes = self._health(obj)
        if not processes:
            return "No serving process has reported this upstream."
        return format_html_join(
            "",
            "<div><code>{}</code>: {}{}, {} tools, circuit {}; reported {} UTC</div>",
            (
                (p.process, p.state, f", protocol {p.protocol_version}" if p.protocol_version else "", p.tool_count,
                 p.circuit, f"{p.reported_at:%H:%M:%S}")
                for p in processes
            ),
        )  # fmt: skip

    @admin.display(description="stored headers")
    def stored_headers(self, obj: Upstream) -> str:
        return _described(obj.headers, obj.binding)

    @admin.display(description="stored environment")
    def stored_env(self, obj: Upstream) -> str:
        return _described(obj.env, obj.binding)

    @admin.display(description="Tool changes to review")
    def tools_to_review(self, obj: Upstream) -> Any:
        if obj.pk is None:
            return "—"
        waiting = obj.pins.exclude(status__in=[UpstreamTool.Status.APPROVED, UpstreamTool.Status.REJECTED]).count()
        url = reverse("admin:errcatalog_upstreamtool_changelist") + f"?upstream__id__exact={obj.pk}"
        return format_html('<a href="{}">{} waiting</a>', url, waiting)

    @admin.action(description="Test connection (connect, list tools, disconnect)", permissions=["change"])
    def test_connection(self, request: Any, queryset: Any) -> None:
        """Connect to each selected upstream as the gateway would. It sends the stored values to the upstream's
        address and, for stdio, runs its command: it needs the change permission, a superuser for stdio (and
        for an address on this network, unless the deployment allows them), and an enabled upstream."""
        for upstream in queryset:
            refusal = self._untestable(request, upstream)
            if refusal:
                self.message_user(request, f"Upstream {upstream.name}: {refusal}", messages.WARNING)
                continue
            result = async_to_sync(live.probe_upstream)(upstream_config(upstream), settings.GATEWAY)
            if result.ok:
                tools = ", ".join(result.tools[:20]) + (" …" if len(result.tools) > 20 else "")
                self.message_user(
                    request,
                    f"Upstream {upstream.name}: connected in {result.seconds:.1f} s, "
                    f"protocol {result.protocol_version}, {len(result.tools)} tools exposed: {tools or 'none'}",
                    messages.SUCCESS,
                )
            else:
                self.message_user(request, f"Upstream {upstream.name}: {result.failure}", messages.ERROR)

    def _untestable(self, request: Any, upstream: Upstream) -> str:
        """Why ``request``'s user may not test ``upstream`` now; empty when they may."""
        if not self.has_change_permission(request, upstream):
            return "only a superuser may test a stdio upstream" if upstream.transport == Transport.STDIO else (
                "you may not change it, so you may not test it")  # fmt: skip
        if not upstream.enabled:
            return "disabled, not tested (enable it first)"
        if upstream.transport == Transport.STDIO and not settings.GATEWAY["STDIO"]:
            return "stdio upstreams are turned off here"
        if (
            upstream.transport == Transport.HTTP
            and not request.user.is_superuser
            and not settings.GATEWAY["ALLOW_PRIVATE"]
            and private_target(upstream.url)
        ):
            # Checked again here: the name may resolve elsewhere now than when it was saved.
            return "only a superuser may test an upstream on a loopback, link-local or private address"
        return ""


def _described(values: dict[str, str], binding: str) -> Any:
    if not values:
        return "none"
    described = ((k, describe(v, binding=binding)) for k, v in values.items())
    return format_html_join("", "<div><code>{}</code>: {}</div>", described)


@admin.register(UpstreamTool)
class UpstreamToolAdmin(VersionedAdmin):
    """Upstream tools' pinned metadata: what is served, what changed (a diff) and what the screen found.

    Read-only but for the approve and reject actions, which need the approve permission (``approve_upstreamtool``).
    Nothing here is deleted by hand: an upstream whose pins were all gone would have its next listing approved as a
    first one.
    """

    list_display = ("name", "upstream", "status", "flag_summary", "approved_how", "approved_at", "listed_at")
    list_filter = ("status", "upstream")
    list_select_related = ("upstream", "approved_by")
    search_fields = ("name", "upstream__name")
    actions = ("approve", "reject")
    fields = ("upstream", "kind", "name", "status", "flag_list", "changes", "approved_how", "approved_by",
              "approved_at", "listed_at")  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: UpstreamTool | None = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: UpstreamTool | None = None) -> bool:
        return False

    def has_approve_permission(self, request: Any) -> bool:
        return may_approve_upstream_tools(request.user)

    @admin.display(description="flags")
    def flag_summary(self, obj: UpstreamTool) -> str:
        return ", ".join(sorted({flag.get("kind", "?") for flag in obj.flags})) or "—"

    @admin.display(description="what the screen found")
    def flag_list(self, obj: UpstreamTool) -> Any:
        if not obj.flags:
            return "nothing"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", "<li>{} at <code>{}</code>: {}</li>", ((f["kind"], f["field"], f["reason"]) for f in obj.flags)
            ),
        )

    @admin.display(description="served → listed now")
    def changes(self, obj: UpstreamTool) -> Any:
        if obj.pending is None:
            return "no change: the listed metadata is the approved one"
        before = json.dumps(obj.approved, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
        after = json.dumps(obj.pending, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
        if obj.approved is None:
            before = []
        diff = difflib.unified_diff(before, after, "approved", "listed", lineterm="", n=3)
        # Escaped by format_html; invisible characters made visible, as a reviewer must see them.
        text = "\n".join(diff).encode("unicode_escape").decode("ascii").replace("\\n", "\n")
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)

    @admin.action(description="Approve the listed metadata (serve it)", permissions=["approve"])
    def approve(self, request: Any, queryset: Any) -> None:
        self._decide(request, queryset, upstream_tool_approve, "approved")

    @admin.action(description="Reject the listed metadata (keep serving what was approved)", permissions=["approve"])
    def reject(self, request: Any, queryset: Any) -> None:
        self._decide(request, queryset, upstream_tool_reject, "rejected")

    def _decide(self, request: Any, queryset: Any, service: Any, done: str) -> None:
        for pin in queryset.select_related("upstream"):
            try:
                changed = service(actor=request.user, pin=pin)
            except ValidationError as exc:
                self.message_user(request, f"{pin.upstream.name}: {pin.name}: {exc.messages[0]}", messages.ERROR)
                continue
            if changed:
                self.message_user(request, f"{pin.upstream.name}: {pin.name}: {done}", messages.SUCCESS)
            else:
                self.message_user(request, f"{pin.upstream.name}: {pin.name}: nothing to decide", messages.WARNING)
