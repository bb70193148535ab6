"""Django admin for the inbox of unclassified upstream failures: the groups, their samples, and a rule from a group.

A group is read-only (the serving processes write it, ``errcatalog.gateway.inbox``); staff who may view it see its
recent samples, which are the upstream's own text, cut and with credentials redacted, escaped on the page and never
sent to a model. Staff who may also add classification rules make a rule from a group: pattern, upstream, kind and
tool preset, a code chosen, previewed against the group's samples before it is saved (``inbox_rules``). Deleting a
group dismisses it until its failure happens again.

The groups are the gateway's records (``errcatalog.gateway.models``), but the page is the catalog's: it shows what the
catalog's rules make of each group now and writes a classification rule, which the gateway, a layer below the
catalog, may not know.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from errcatalog.catalog import inbox_rules
from errcatalog.catalog.models import ClassificationRule
from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.gateway.models import UpstreamFailureGroup
from errcatalog.render.classify import FailureFacts, classification, known
from errcatalog.render.patterns import PATTERN_MAX_CHARS, pattern_problems
from errcatalog.vocabulary import UPSTREAM_FAILURE_KINDS

RULE_PERMISSION = "errcatalog.add_classificationrule"


class RuleFromGroupForm(forms.Form):
    code = forms.ChoiceField(help_text="The catalog code these failures get: its text is what the model reads.")
    pattern = forms.CharField(
        max_length=PATTERN_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text="Case-insensitive, RE2 syntax, over the failure text's first 2,000 characters; ^ anchors at its "
        "start. Suggested from the group's signature: each masked value is [^\\n]*?.",
    )
    any_tool = forms.BooleanField(required=False, label="Any tool of this upstream (not only this tool)")
    position = forms.IntegerField(min_value=1, help_text="Rules are tried by ascending position.")
    note = forms.CharField(max_length=200, required=False)
    previewed = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, codes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["code"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "—")] + [(code, code) for code in codes]

    def clean_pattern(self) -> str:
        pattern = self.cleaned_data["pattern"].strip()
        problems = pattern_problems(pattern)
        if problems:
            raise ValidationError(problems)
        return pattern

    def clean_position(self) -> int:
        position = self.cleaned_data["position"]
        if ClassificationRule.objects.filter(position=position).exists():
            raise ValidationError(f"A rule has position {position} already; choose a free one.")
        return position

    def fingerprint(self) -> str:
        """Which values were previewed: a save goes through only for the values the page showed a preview of."""
        values = (self.cleaned_data.get(name) for name in ("code", "pattern", "any_tool", "position"))
        return hashlib.sha256(repr(tuple(values)).encode()).hexdigest()[:32]


def _short(moment: datetime) -> str:
    """A moment as a list column shows it: day, month and time of day in the server's time zone (the group's page
    has it whole)."""
    return f"{timezone.localtime(moment):%d %b %H:%M}"


class SpokeToTheModel(admin.SimpleListFilter):
    """The groups with failures whose text spoke to the model (withheld from it): an upstream to look at."""

    title = "text withheld from the model"
    parameter_name = "withheld"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes: it spoke to the model"), ("no", "No")]

    def queryset(self, request: Any, queryset: Any) -> Any:
        if self.value() == "yes":
            return queryset.filter(withheld__gt=0)
        if self.value() == "no":
            return queryset.filter(withheld=0)
        return queryset


@admin.register(UpstreamFailureGroup)
class UpstreamFailureGroupAdmin(admin.ModelAdmin):
    """Upstream failures no specific rule classified, or whose text was withheld from the model because it spoke to
    it, newest first, with what the rules make of them now."""

    list_display = ("signature_short", "upstream", "tool", "kind", "count", "withheld", "first", "last", "now")
    list_filter = ("upstream", "kind", SpokeToTheModel)
    search_fields = ("signature", "tool", "upstream")
    fields = (
        "upstream", "tool", "kind", "signature", "count", "withheld", "first_seen", "last_seen", "now", "sample_list"
    )  # fmt: skip
    readonly_fields = fields
    list_per_page = 50

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).prefetch_related("samples")

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: UpstreamFailureGroup | None = None) -> bool:
        return False

    @admin.display(description="signature", ordering="signature")
    def signature_short(self, obj: UpstreamFailureGroup) -> str:
        return obj.signature if len(obj.signature) <= 60 else f"{obj.signature[:59]}…"

    @admin.display(description="first seen", ordering="first_seen")
    def first(self, obj: UpstreamFailureGroup) -> str:
        return _short(obj.first_seen)

    @admin.display(description="last seen", ordering="last_seen")
    def last(self, obj: UpstreamFailureGroup) -> str:
        return _short(obj.last_seen)

    @admin.display(description="the rules now say")
    def now(self, obj: UpstreamFailureGroup) -> str:
        samples = list(obj.samples.all())
        if not samples:
            return "—"
        snapshot = catalog_snapshot()
        facts = FailureFacts(upstream=obj.upstream, tool=obj.tool, kind=obj.kind, text=samples[0].text)
        try:
            found = classification(snapshot, facts)
            code = snapshot.entry(found.code).code
        except LookupError:  # a catalog without UNKNOWN_ERROR (emptied by hand) answers nothing
            return "—"
        if known(code, found.rule):
            return f"{code} (classified now)"
        return f"{code} (a generic rule's guess)" if found.rule and found.rule.generic else code

    @admin.display(description="recent samples (the upstream's text, redacted; staff only)")
    def sample_list(self, obj: UpstreamFailureGroup) -> Any:
        return (
            format_html_join(
                "",
                '<div><small>{}</small><pre style="white-space: pre-wrap; max-width: 60rem">{}</pre></div>',
                ((sample.seen_at, sample.text) for sample in obj.samples.all()),
            )
            or "none"
        )

    def change_view(self, request: Any, object_id: str, form_url: str = "", extra_context: Any = None) -> Any:
        extra_context = dict(extra_context or {})
        if request.user.has_perm(RULE_PERMISSION):
            extra_context["make_rule_url"] = reverse(
                "admin:errcatalog_upstreamfailuregroup_make_rule", args=[object_id]
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.make_rule_view)
        return [
            path("<int:pk>/make-rule/", view, name="errcatalog_upstreamfailuregroup_make_rule"),
            *super().get_urls(),
        ]

    def make_rule_view(self, request: Any, pk: int) -> Any:
        if not (self.has_view_permission(request) and request.user.has_perm(RULE_PERMISSION)):
            raise PermissionDenied
        group = get_object_or_404(UpstreamFailureGroup.objects.prefetch_related("samples"), pk=pk)
        snapshot = catalog_snapshot()
        codes = sorted(code for code, entry in snapshot.codes.items() if entry.active)
        samples = [sample.text for sample in group.samples.all()]
        previews = None
        if request.method == "POST":
            form = RuleFromGroupForm(request.POST, codes=codes)
            if form.is_valid():
                rule = inbox_rules.candidate_rule(
                    group,
                    code=form.cleaned_data["code"],
                    pattern=form.cleaned_data["pattern"],
                    position=form.cleaned_data["position"],
                    any_tool=form.cleaned_data["any_tool"],
                )
                previews = inbox_rules.preview(snapshot, group, rule, samples)
                if "save" in request.POST and form.cleaned_data["previewed"] == form.fingerprint():
                    return self._save(request, group, rule, previews, form.cleaned_data["note"])
                data = request.POST.copy()
                data["previewed"] = form.fingerprint()
                form = RuleFromGroupForm(data, codes=codes)
                form.is_valid()
        else:
            form = RuleFromGroupForm(
                initial={**inbox_rules.suggestion(group, snapshot), "note": f"inbox: {group.signature[:190]}"},
                codes=codes,
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Make a rule from unclassified failures",
            "group": group,
            "kind_words": UPSTREAM_FAILURE_KINDS.get(group.kind, group.kind),
            "form": form,
            "previews": previews,
            "all_classified": previews is not None and all(p.classified for p in previews),
        }
        return render(request, "admin/errcatalog/upstreamfailuregroup/make_rule.html", context)

    def _save(self, request: Any, group: UpstreamFailureGroup, rule: Any, previews: Any, note: str) -> Any:
        try:
            created, emptied = inbox_rules.rule_from_group(group, rule, previews, note=note)
        except (ValidationError, IntegrityError) as exc:
            problem = exc.messages[0] if isinstance(exc, ValidationError) else "the position was taken meanwhile"
            self.message_user(request, f"The rule was not saved: {problem}", messages.ERROR)
            return HttpResponseRedirect(request.path)
        rule_url = reverse("admin:errcatalog_classificationrule_change", args=[created.pk])
        if emptied:
            self.message_user(
                request,
                format_html(
                    'Rule <a href="{}">{}</a> saved; it classifies every sample, so the group is gone.',
                    rule_url,
                    created,
                ),
                messages.SUCCESS,
            )
            return HttpResponseRedirect(reverse("admin:errcatalog_upstreamfailuregroup_changelist"))
        self.message_user(
            request,
            format_html(
                'Rule <a href="{}">{}</a> saved. Some samples still fall to the fallback, so the group stays.',
                rule_url,
                created,
            ),
            messages.WARNING,
        )
        return HttpResponseRedirect(reverse("admin:errcatalog_upstreamfailuregroup_change", args=[group.pk]))
