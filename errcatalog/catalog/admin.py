"""Django admin for the people who write the catalog: codes, their wording, hints and classification rules
(client tokens have theirs in ``errcatalog.access.admin``).

Every catalog model keeps its history (django-simple-history), so each change can be inspected and reverted
from the object's History page. The ErrorCode change page shows, beside each variant's text, what a client shows
the model for a sample call of a served tool, and every face, rendered from the saved catalog
(``errcatalog.catalog.preview_samples``); ``static/errcatalog/preview.js`` re-renders them from the unsaved text
through the REST API's render endpoint while it is being edited. The code, variant and hint pages say, tool by tool,
which text the model gets: a needs-input code sends its question only, and a parameter hint's question replaces a
variant's (the renderer decides, ``RenderedError.text_source``).

The forms check each row with the model's own validation (the catalog's rules live in the models' ``clean()``), so
a problem is shown at its field; saving, deleting and reverting go through ``errcatalog.catalog.services``, the
write path the REST API and import use too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db import models
from django.db.models import Count, Prefetch
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse, reverse_lazy
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from errcatalog.admin_display import fixed_width_time
from errcatalog.catalog import services
from errcatalog.catalog.document import dump_catalog
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.lint import RowFinding, hint_findings, variant_findings
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.preview_samples import (
    SampleTool,
    ToolText,
    VariantPreview,
    code_preview,
    names_parameter,
    tool_texts,
)
from errcatalog.input_limits import depth_bounded_json_decoder
from errcatalog.outcomes.metrics import variant_retry_annotations
from errcatalog.render import ParameterFault
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.safety import PLACEHOLDERS
from errcatalog.versioned_admin import VersionedAdmin
from errcatalog.vocabulary import UPSTREAM_FAILURE_KINDS

# Admin's "View site" link: the site people come to the admin for is the outcomes dashboard (there is no "/").
# Lazy: the URLconf is not loaded yet when admin modules are imported; Django's stubs ask for a plain string.
admin.site.site_url = reverse_lazy("errcatalog-dashboard")  # type: ignore[assignment]
# The navigation sidebar repeats the admin index beside every list page and takes 280 of a 1366-pixel laptop
# screen's pixels, which the list pages' columns need (tests/errcatalog/test_first_hour_browser.py). The
# breadcrumbs and the index remain the way between models.
admin.site.enable_nav_sidebar = False

# Styles of the placeholder list, the length budget and the preview.
ADMIN_CSS = {"all": ("errcatalog/admin.css",)}

PLACEHOLDER_HELP = format_html(
    "<details><summary>Allowed placeholders</summary><dl class='errcatalog-placeholders'>{}</dl>"
    "<p>Anything else in braces is refused, and so are attribute access and indexing such as "
    "<code>{{x.__class__}}</code> or <code>{{0[1]}}</code>. Write <code>{{{{</code> and <code>}}}}</code> "
    "for literal braces.</p></details>",
    format_html_join("", "<dt><code>{{{}}}</code></dt><dd>{}</dd>", sorted(PLACEHOLDERS.items())),
)
_TEXTAREA = {"widget": forms.Textarea(attrs={"rows": 2, "cols": 90})}
# Short JSON lists ([400, 422], ["send_email"]) fit on one line. Deeper nesting than the REST API accepts is
# invalid JSON here too (the decoder would recurse into it and fail with a 500).
_JSON_LINE = {
    "widget": forms.TextInput(attrs={"size": 40}),
    "decoder": depth_bounded_json_decoder(settings.ERRCATALOG["API_MAX_JSON_DEPTH"]),
    "error_messages": {
        "invalid": f"Enter valid JSON, nested at most {settings.ERRCATALOG['API_MAX_JSON_DEPTH']} levels."
    },
}


@admin.display(description="Updated", ordering="updated_at")
def _updated(obj: ErrorCode | TemplateVariant) -> str:
    return fixed_width_time(obj.updated_at)


def _max_chars() -> int:
    return settings.ERRCATALOG["MAX_MESSAGE_CHARS"]


# The tools the server serves, as the previews call them. The MCP server's admin module sets it (this package may
# not import the server); without it the previews call the built-in sample tool.
sample_tools_source: Callable[[], tuple[SampleTool, ...]] | None = None


def _sample_tools() -> tuple[SampleTool, ...]:
    return sample_tools_source() if sample_tools_source is not None else ()


def _preview_snapshot(codes: Iterable[str] | None) -> CatalogSnapshot:
    """The saved catalog, built fresh from the rows (with every hint) rather than taken from the process's
    snapshot: a writer must see what they have just saved, whichever process serves the page."""
    return CatalogSnapshot.from_document(catalog_document_from_db(codes=codes), version="preview")


def _hint_links(snapshot: CatalogSnapshot) -> dict[tuple[str, str], str]:
    ids = ParameterHint.objects.values_list("tool", "parameter", "pk")
    return {
        (tool, parameter): reverse("admin:errcatalog_parameterhint_change", args=[pk]) for tool, parameter, pk in ids
    }


def _tool_table(texts: Iterable[ToolText], links: dict[tuple[str, str], str], *, code: bool = False) -> str:
    """Tool by tool, where the model's text comes from and what it reads; a hint's row links to the hint."""
    rows = []
    for t in texts:
        link = links.get((t.tool, t.parameter)) if t.from_hint else None
        words = format_html('<a href="{}">{}</a>', link, t.words) if link else t.words
        first = format_html("<code>{}</code> · {}", t.rendered.code, t.rendered.variant) if code else ""
        rows.append(
            format_html(
                '<tr class="{}">{}<td><code>{}</code></td><td><code>{}</code></td><td>{}</td>'
                '<td class="{}">{}</td></tr>',
                "errcatalog-from-hint" if t.from_hint else "",
                format_html("<td>{}</td>", first) if code else "",
                t.tool,
                t.parameter,
                words,
                "errcatalog-model-text",
                t.rendered.text,
            )
        )
    if not rows:
        return ""
    head = format_html(
        "<thead><tr>{}<th>Tool</th><th>Parameter</th><th>The model gets</th><th>Text</th></tr></thead>",
        mark_safe("<th>Code · variant</th>") if code else "",
    )
    return format_html(
        '<table class="errcatalog-tools">{}<tbody>{}</tbody></table>',
        head,
        format_html_join("", "{}", ((r,) for r in rows)),
    )


def _notices(preview: VariantPreview) -> list[str]:
    """What a writer of this variant must know about which text wins (shown beside the text)."""
    notices = []
    if preview.question_only:
        notices.append(
            "This code asks for input: the model gets the question only. The message, cause and instruction are "
            "not sent to it while a question is asked."
        )
    hinted = preview.hinted
    if hinted:
        named = ", ".join(f"{t.tool} · {t.parameter}" for t in hinted[:6]) + (" …" if len(hinted) > 6 else "")
        notices.append(
            f"For {len(hinted)} of {len(preview.tool_texts)} tool parameters a parameter hint's question replaces "
            f"this variant's question ({named}): editing this question does not change what those calls get; edit "
            "the hint instead (the table of which text each tool gets links to it)."
        )
    return notices


def _budget(variant: TemplateVariant) -> str:
    """Template characters against the cap; the live preview keeps these numbers current while typing."""
    limit = _max_chars()
    composed = len(" ".join(t for t in (variant.message, variant.cause, variant.instruction) if t))
    question = len(variant.question)
    return format_html(
        '<span class="errcatalog-budget" data-max="{}">'
        'Message + cause + instruction: <b data-count="composed" class="{}">{}</b> / {} · '
        'question: <b data-count="question" class="{}">{}</b> / {} characters, before placeholders are filled. '
        "Longer text is cut at the limit.</span>",
        limit,
        "errcatalog-over" if composed > limit else "",
        composed,
        limit,
        "errcatalog-over" if question > limit else "",
        question,
        limit,
    )


# The fields of a code and of its rules that decide which placeholders its failures fill (``lint``).
_LINTED_CODE_FIELDS = ("code", "category", "kind", "system", "retryable", "retry_after_seconds", "http_statuses")
_LINTED_RULE_FIELDS = ("status_min", "status_max", "transport", "kind")


# Fetches a code's active rules with a page's variants (``_variant_findings``), in one query for all of them.
ACTIVE_RULES = Prefetch(
    "error_code__rules", queryset=ClassificationRule.objects.filter(active=True), to_attr="active_rules"
)


def _variant_findings(variant: TemplateVariant) -> list[RowFinding]:
    code = variant.error_code
    active = getattr(code, "active_rules", None)
    rules = [
        {"code": code.code, **{name: getattr(rule, name) for name in _LINTED_RULE_FIELDS}}
        for rule in (active if active is not None else code.rules.filter(active=True))
    ]
    return variant_findings(
        {name: getattr(code, name) for name in _LINTED_CODE_FIELDS},
        {name: getattr(variant, name) for name in ("locale", "message", "cause", "instruction", "question")},
        rules,
        max_chars=_max_chars(),
    )


def _hint_findings(hint: ParameterHint) -> list[RowFinding]:
    return hint_findings({"question": hint.question}, max_chars=_max_chars())


def _lint_list(findings: list[RowFinding]) -> str:
    """The lint's warnings beside the wording they are about; saved rows only (the preview shows drafts)."""
    if not findings:
        return format_html('<span class="errcatalog-lint-clean">{}</span>', "No warnings.")
    return format_html(
        '<ul class="errcatalog-lint">{}</ul>',
        format_html_join("", "<li><b>{}</b> ({}): {}</li>", ((f, rule, text) for f, rule, text in findings)),
    )


def _warn(request, row: models.Model, findings: list[RowFinding]) -> None:
    """Tell the writer, after a save, what the lint finds in what they saved (it was saved all the same)."""
    for field_name, rule, text in findings:
        messages.warning(request, f"{row} · {field_name}: {text} [{rule}]")


def _rule_conditions(rule: ClassificationRule) -> str:
    parts = []
    if rule.exception:
        parts.append(f"exception {rule.exception}")
    if rule.status_min is not None or rule.status_max is not None:
        low, high = rule.status_min, rule.status_max
        parts.append(f"status {low}" if low == high else f"status {low or 100}-{high or 599}")
    if rule.jsonrpc_code is not None:
        parts.append(f"JSON-RPC {rule.jsonrpc_code}")
    if rule.transport:
        parts.append(rule.get_transport_display().lower())
    if rule.upstream:
        parts.append(f"upstream {rule.upstream}")
    if rule.tool:
        parts.append(f"tool {rule.tool}")
    if rule.kind:
        parts.append(UPSTREAM_FAILURE_KINDS.get(rule.kind, rule.kind))
    if rule.pattern:
        # A pattern is one long run of characters with few places to wrap: the list shows its start, the rule's
        # page all of it.
        shown = rule.pattern if len(rule.pattern) <= _PATTERN_SHOWN else rule.pattern[: _PATTERN_SHOWN - 1] + "…"
        parts.append(f"text matches {shown!r}")
    return ", ".join(parts) or "any failure"


# How much of a rule's pattern its conditions show in lists.
_PATTERN_SHOWN = 40


@dataclass(frozen=True)
class CatalogWrites:
    """The services an admin page writes its rows through; ``row`` is the keyword naming the row to change."""

    create: Callable[..., models.Model]
    update: Callable[..., models.Model]
    delete: Callable[..., None]
    row: str


def _form_values(obj: models.Model, form: forms.BaseForm) -> dict[str, Any]:
    """The model fields a form edits, with the values the form has put on ``obj`` (the form has validated them)."""
    return {
        f.name: getattr(obj, f.name)
        for f in obj._meta.concrete_fields
        if f.name in form.fields and not f.primary_key and f.editable
    }


def _current[M: models.Model](obj: M) -> M:
    # The form has already put its values on ``obj``; the service compares them with the row as saved, so that it
    # writes (and history records) only what changed.
    return type(obj)._default_manager.get(pk=obj.pk)


def _save_through(writes: CatalogWrites, obj: models.Model, form: forms.BaseForm, change: bool) -> None:
    values = _form_values(obj, form)
    if change:
        writes.update(**{writes.row: _current(obj)}, **values)
        return
    saved = writes.create(**values)
    # The admin goes on with the object its form built (inlines point to it, the log entry names it).
    obj.pk = saved.pk
    obj._state.adding = False
    obj._state.db = saved._state.db


class CatalogRowAdmin(VersionedAdmin):
    """An admin page whose saves, deletions, reverts and list edits go through the catalog's services."""

    writes: CatalogWrites

    def save_model(self, request, obj, form, change) -> None:
        _save_through(self.writes, obj, form, change)

    def delete_model(self, request, obj) -> None:
        self.writes.delete(**{self.writes.row: obj})

    def delete_queryset(self, request, queryset) -> None:
        for obj in queryset:
            self.writes.delete(**{self.writes.row: obj})


VARIANT_WRITES = CatalogWrites(
    services.template_variant_create,
    services.template_variant_update,
    services.template_variant_delete,
    "variant",
)


# --- Error codes ------------------------------------------------------------------------------------------


class TemplateVariantInline(admin.StackedInline):
    """Each variant's fields with its preview beside them (``variant_inline.html``)."""

    model = TemplateVariant
    template = "admin/errcatalog/errorcode/variant_inline.html"
    extra = 0
    show_change_link = True  # each variant's own page has its history and revert
    formfield_overrides = {models.TextField: _TEXTAREA}
    readonly_fields = ("budget", "lint")
    fieldsets = (
        (None, {"fields": (("name", "locale", "weight", "header", "active"),)}),
        (
            "Wording",
            {
                "fields": ("message", "cause", "instruction", "question", "budget", "lint"),
                "description": PLACEHOLDER_HELP,
            },
        ),
    )

    def get_queryset(self, request):
        # Each variant's title names its code, and its lint reads the code's rules: fetched with the variants, not
        # once per variant.
        return super().get_queryset(request).select_related("error_code").prefetch_related(ACTIVE_RULES)

    @admin.display(description="Length")
    def budget(self, obj: TemplateVariant) -> str:
        return _budget(obj)

    @admin.display(description="Writing rules")
    def lint(self, obj: TemplateVariant) -> str:
        return _lint_list(_variant_findings(obj)) if obj.pk else "—"


class ClassificationRuleInline(admin.TabularInline):
    """The rules that lead to this code, for reference; they are edited on their own page, in order."""

    model = ClassificationRule
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("position", "conditions", "note", "active")
    readonly_fields = fields
    ordering = ("position",)
    verbose_name_plural = "Classification rules that choose this code"
    classes = ("collapse",)  # for reference: closed, so the variants and their previews come first

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("error_code")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Conditions")
    def conditions(self, obj: ClassificationRule) -> str:
        return _rule_conditions(obj)


@admin.register(ErrorCode)
class ErrorCodeAdmin(CatalogRowAdmin):
    list_display = ("code", "category", "kind", "retryable", "system", "active", "variant_count", _updated)
    list_filter = ("category", "kind", "retryable", "system", "active", "allocation")
    search_fields = ("code", "explanation", "variants__message")
    # The model's own ordering is dropped from the list's counting query (GROUP BY), and the variant and rule pages'
    # code search pages through this query: without an order of its own its pages could repeat or skip codes.
    ordering = ("code",)
    readonly_fields = ("updated_at",)
    fieldsets = (
        # One line, so that the variants and their previews start high on a laptop screen; the fieldsets that
        # follow are collapsed and shown after the variants (``errorcode/change_form.html``).
        (None, {"fields": (("code", "category", "kind", "active"),)}),
        (
            "Behaviour",
            {
                "classes": ("collapse",),
                "fields": (("retryable", "retry_after_seconds"), "system", "http_statuses", "jsonrpc_code"),
            },
        ),
        (
            "Variants' shares",
            {
                "classes": ("collapse",),
                "description": "Fixed: each variant is rendered in proportion to its weight. Adaptive: a periodic "
                "task sets the weights from each variant's recovery rate (every change is in the variants' history, "
                "by errcatalog-system); freeze to keep them where they are.",
                "fields": (("allocation", "allocation_frozen"),),
            },
        ),
        ("Explanation", {"classes": ("collapse",), "fields": ("doc_url", "explanation", "updated_at")}),
        (
            "Data for clients (the question protocol)",
            {
                "classes": ("collapse",),
                "description": "Sent in the error's data: setup fields for authentication and configuration errors, "
                "optional parameters and guidance for missing input. Left empty, a question takes the optional "
                "parameters from the tool's input schema and, for our own tools that have optional parameters, the "
                "guidance from the first sentence of the tool's description; set here, they replace the tool's for "
                "every tool.",
                "fields": (("setup_url", "action_required"), "optional_parameters", "guidance"),
            },
        ),
    )
    inlines = (TemplateVariantInline, ClassificationRuleInline)
    actions = ("export_yaml",)
    formfield_overrides = {models.JSONField: _JSON_LINE}
    writes = CatalogWrites(
        services.error_code_create, services.error_code_update, services.error_code_delete, "error_code"
    )

    class Media:
        css = ADMIN_CSS
        js = ("errcatalog/preview.js",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(variant_count=Count("variants"))

    def save_formset(self, request, form, formset, change) -> None:
        if formset.model is not TemplateVariant:
            # The rules inline is read-only: its rows are edited on their own page.
            super().save_formset(request, form, formset, change)
            return
        formset.save(commit=False)  # puts each form's values on its row (new rows point to the code), writes nothing
        fields = formset.empty_form  # every form of the formset edits the same fields
        for variant in formset.deleted_objects:
            VARIANT_WRITES.delete(variant=variant)
        for variant in formset.new_objects:
            created = services.template_variant_create(**_form_values(variant, fields))
            _warn(request, created, _variant_findings(created))
        for variant, _changed in formset.changed_objects:
            saved = services.template_variant_update(variant=_current(variant), **_form_values(variant, fields))
            _warn(request, saved, _variant_findings(saved))

    @admin.display(description="Variants", ordering="variant_count")
    def variant_count(self, obj: ErrorCode) -> int:
        count: int = getattr(obj, "variant_count")  # noqa: B009 (annotated by get_queryset, unknown to the model)
        return count

    @admin.action(description="Export selected codes as YAML")
    def export_yaml(self, request, queryset) -> HttpResponse:
        # A catalog document of just these codes and their variants; importing it adds or updates them.
        document = catalog_document_from_db(codes=queryset.values_list("code", flat=True))
        document.update(hints=[], rules=[])
        response = HttpResponse(dump_catalog(document, "yaml"), content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="errcatalog-codes.yaml"'
        return response

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # The preview shows the saved catalog, built fresh from this code's rows (``_preview_snapshot``): a catalog
        # of thousands of codes must not be read for one.
        if obj is not None and obj.pk:
            snapshot = _preview_snapshot([obj.code])
            previews = code_preview(
                snapshot,
                obj.code,
                max_chars=_max_chars(),
                legacy_codes=settings.ERRCATALOG["LEGACY_JSONRPC_CODES"],
                tools=_sample_tools(),
                default_format=settings.ERRCATALOG["DEFAULT_FORMAT"],
            )
            ids = {(name, locale): pk for name, locale, pk in obj.variants.values_list("name", "locale", "pk")}
            context["variant_previews"] = [(ids.get((p.variant.name, p.variant.locale)), p) for p in previews]
            links = _hint_links(snapshot)
            by_id = {
                ids.get((p.variant.name, p.variant.locale)): {
                    "preview": p,
                    "notices": _notices(p),
                    "tools": _tool_table(p.tool_texts, links),
                }
                for p in previews
            }
            # Each variant's form carries its preview, which the inline template shows beside its fields.
            for formset in context.get("inline_admin_formsets", ()):
                if formset.formset.model is TemplateVariant:
                    for form in formset.formset.forms:
                        form.errcatalog_preview = by_id.get(form.instance.pk)
            try:
                context["render_url"] = reverse("api-render")
            except NoReverseMatch:  # without the REST API the page keeps the preview of the saved catalog
                context["render_url"] = ""
        return super().render_change_form(request, context, add, change, form_url, obj)


# --- Template variants ------------------------------------------------------------------------------------


def _variant_model_text(variant: TemplateVariant) -> str:
    """The sample call's text, the notices about which text wins, and the tool-by-tool table, for one saved variant."""
    code = variant.error_code.code
    snapshot = _preview_snapshot([code])
    previews = code_preview(snapshot, code, max_chars=_max_chars(), tools=_sample_tools())
    preview = next((p for p in previews if (p.variant.name, p.variant.locale) == (variant.name, variant.locale)), None)
    if preview is None:
        return "—"
    failure = preview.failure
    call = format_html("<code>{}</code>", failure.tool_name or "")
    if failure.parameters:
        call = format_html(
            "{} with <code>{}</code> {}", call, failure.parameters[0].name, failure.parameters[0].problem
        )
    return format_html(
        '<div class="errcatalog-which"><p>Sample call: {}. The model gets {}:</p>'
        '<pre class="errcatalog-client">{}</pre>{}{}</div>',
        call,
        preview.source_words,
        preview.client_text,
        format_html_join("", '<p class="errcatalog-notice">{}</p>', ((n,) for n in _notices(preview))),
        _tool_table(preview.tool_texts, _hint_links(snapshot)),
    )


@admin.register(TemplateVariant)
class TemplateVariantAdmin(CatalogRowAdmin):
    list_display = ("code", "name", "locale", "weight", "header", "active", "retry_success", _updated)
    list_filter = ("header", "active", "locale", "error_code__category", "error_code__kind")
    search_fields = ("error_code__code", "name", "message", "cause", "instruction", "question")
    list_select_related = ("error_code",)
    autocomplete_fields = ("error_code",)
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 3, "cols": 90})}}
    readonly_fields = ("budget", "lint", "updated_at", "model_text")
    writes = VARIANT_WRITES
    fieldsets = (
        (None, {"fields": ("error_code", ("name", "locale"), ("weight", "header"), "active")}),
        (
            "Wording",
            {
                "fields": ("message", "cause", "instruction", "question", "budget", "lint", "updated_at"),
                "description": PLACEHOLDER_HELP,
            },
        ),
        ("What the model gets (saved text)", {"fields": ("model_text",)}),
    )

    class Media:
        css = ADMIN_CSS

    @admin.display(description="Code", ordering="error_code__code")
    def code(self, obj: TemplateVariant) -> str:
        return obj.error_code.code

    def get_queryset(self, request):
        # The live retry success rate, from the daily rollups, in the page's own query (no query per row).
        annotations = variant_retry_annotations(code_ref="error_code__code", variant_ref="name")
        return super().get_queryset(request).annotate(**annotations)

    @admin.display(description="Retry success (30 d)")
    def retry_success(self, obj: TemplateVariant) -> str:
        """Recovered / retried-and-ended episodes over 30 days (errcatalog.outcomes.metrics); "—" without any."""
        retried = getattr(obj, "retry_episodes_30d", None) or 0
        if retried <= 0:
            return "—"
        recovered = getattr(obj, "retry_recovered_30d", None) or 0
        return f"{round(100 * recovered / retried)}% of {retried}"

    @admin.display(description="Length")
    def budget(self, obj: TemplateVariant) -> str:
        return _budget(obj)

    @admin.display(description="Writing rules")
    def lint(self, obj: TemplateVariant) -> str:
        return _lint_list(_variant_findings(obj)) if obj.pk else "—"

    @admin.display(description="Which text wins")
    def model_text(self, obj: TemplateVariant) -> str:
        if not obj.pk:
            return "—"
        return _variant_model_text(obj)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        _warn(request, obj, _variant_findings(TemplateVariant.objects.select_related("error_code").get(pk=obj.pk)))


# --- Parameter hints and classification rules -------------------------------------------------------------


@admin.register(ParameterHint)
class ParameterHintAdmin(CatalogRowAdmin):
    list_display = ("tool", "parameter", "description", "parameter_type", "example", "has_question")
    list_filter = ("tool", "parameter_type")
    search_fields = ("tool", "parameter", "description", "question")
    formfield_overrides = {models.TextField: _TEXTAREA}
    writes = CatalogWrites(
        services.parameter_hint_create, services.parameter_hint_update, services.parameter_hint_delete, "hint"
    )
    readonly_fields = ("lint", "model_text")
    fieldsets = (
        (None, {"fields": (("tool", "parameter"), "description", ("parameter_type", "example"))}),
        (
            "Question override",
            {
                "fields": ("question", "lint"),
                "description": format_html(
                    "<p>A question here replaces the variant's question of every code that asks for this one missing "
                    "parameter of this tool; the model then gets this question only.</p>{}",
                    PLACEHOLDER_HELP,
                ),
            },
        ),
        ("What the model gets (saved text)", {"fields": ("model_text",)}),
    )

    class Media:
        css = ADMIN_CSS

    @admin.display(description="Writing rules")
    def lint(self, obj: ParameterHint) -> str:
        return _lint_list(_hint_findings(obj)) if obj.pk else "—"

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        _warn(request, obj, _hint_findings(obj))

    @admin.display(description="Which text wins")
    def model_text(self, obj: ParameterHint) -> str:
        if not obj.pk:
            return "—"
        snapshot = _preview_snapshot(None)
        served = {t.name: t for t in _sample_tools()}
        fault = (
            next((p for p in served[obj.tool].required if p.name == obj.parameter), None)
            if obj.tool in served
            else None
        )
        tool = SampleTool(name=obj.tool, required=(fault or ParameterFault(name=obj.parameter),))
        texts = [
            text
            for code, entry in sorted(snapshot.codes.items())
            if entry.active and entry.variants and names_parameter(entry)
            for text in tool_texts(snapshot, code, entry.variant(), (tool,), max_chars=_max_chars())
        ]
        note = (
            ""
            if obj.tool in served
            else format_html(
                "<p class='errcatalog-notice'>No served tool is named <code>{}</code>: no call uses this hint.</p>",
                obj.tool,
            )
        )
        return format_html("{}{}", note, _tool_table(texts, {}, code=True))

    @admin.display(description="Own question", boolean=True)
    def has_question(self, obj: ParameterHint) -> bool:
        return bool(obj.question)


@admin.register(ClassificationRule)
class ClassificationRuleAdmin(CatalogRowAdmin):
    class Media:
        css = ADMIN_CSS  # a pattern's conditions wrap anywhere in the list

    list_display = ("position", "code", "conditions", "note", "active")
    list_display_links = ("position",)
    list_editable = ("active",)
    list_filter = ("active", "generic", "kind", "transport", "error_code__category")
    search_fields = ("error_code__code", "exception", "upstream", "tool", "pattern", "says", "note")
    list_select_related = ("error_code",)
    autocomplete_fields = ("error_code",)
    ordering = ("position",)
    writes = CatalogWrites(
        services.classification_rule_create,
        services.classification_rule_update,
        services.classification_rule_delete,
        "rule",
    )
    fieldsets = (
        (None, {"fields": ("position", "error_code", "active", "note")}),
        (
            "Conditions (all that are set must hold)",
            {
                "fields": (
                    "upstream",
                    "tool",
                    "kind",
                    "pattern",
                    "exception",
                    ("status_min", "status_max"),
                    "jsonrpc_code",
                    "transport",
                )
            },
        ),
        ("What the answer adds (may place what the pattern captures)", {"fields": ("says",)}),
        ("A guess, not a wording it knows", {"fields": ("generic",)}),
    )

    @admin.display(description="Code", ordering="error_code__code")
    def code(self, obj: ClassificationRule) -> str:
        return obj.error_code.code

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "pattern" and field is not None:
            field.strip = False  # a pattern's spaces are part of it ("^ENOENT: ")
        return field

    @admin.display(description="Conditions")
    def conditions(self, obj: ClassificationRule) -> str:
        return _rule_conditions(obj)
