"""The inbox of unclassified upstream failures in admin: who sees it, who makes a rule from a group, and what the
preview and the save do."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.urls import reverse

from errcatalog.catalog.models import ClassificationRule
from errcatalog.gateway import inbox
from errcatalog.gateway.models import UpstreamFailureGroup

pytestmark = pytest.mark.django_db(transaction=True)

ENOENT = "ENOENT-ish: cannot open '{}' (code 7)"


@pytest.fixture
def group() -> UpstreamFailureGroup:
    call_command("catalog_load_defaults", verbosity=0)
    inbox.reset()
    for path in ("/srv/a.txt", "/srv/b.txt", "<b>bold</b>"):
        inbox.note("files", "files__read", "tool_error", ENOENT.format(path), classified=False)
    assert inbox.flush()
    return UpstreamFailureGroup.objects.get()


def _staff(*codenames: str) -> User:
    user = User.objects.create_user(username="staff", password="pw-staff-1", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="errcatalog", codename__in=codenames))
    return User.objects.get(pk=user.pk)


def _make_rule_url(group: UpstreamFailureGroup) -> str:
    return reverse("admin:errcatalog_upstreamfailuregroup_make_rule", args=[group.pk])


ROLES = {
    "nothing": (),
    "view groups": ("view_upstreamfailuregroup",),
    "add rules": ("add_classificationrule",),
    "view groups and add rules": ("view_upstreamfailuregroup", "add_classificationrule"),
    "view and delete groups": ("view_upstreamfailuregroup", "delete_upstreamfailuregroup"),
}


@pytest.mark.parametrize("role", ROLES)
def test_making_a_rule_needs_both_the_group_and_the_rule_permission(client, group, role):
    client.force_login(_staff(*ROLES[role]))
    page = client.get(reverse("admin:errcatalog_upstreamfailuregroup_change", args=[group.pk]))
    assert page.status_code == (200 if "view_upstreamfailuregroup" in ROLES[role] else 403)
    may = role == "view groups and add rules"
    assert (page.status_code == 200 and _make_rule_url(group) in page.content.decode()) == may
    assert client.get(_make_rule_url(group)).status_code == (200 if may else 403)
    form = {"code": "NOT_FOUND", "pattern": "^ENOENT-ish", "position": "298", "preview": "1"}
    assert client.post(_make_rule_url(group), form).status_code == (200 if may else 403)
    assert not ClassificationRule.objects.filter(position=298).exists()


def test_samples_are_shown_escaped_to_staff(admin_client, group):
    page = admin_client.get(reverse("admin:errcatalog_upstreamfailuregroup_change", args=[group.pk])).content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    assert "UPSTREAM_TOOL_FAILED" in page  # what the rules make of it now


def test_a_group_a_generic_rule_answers_says_so_and_a_rule_that_knows_it_empties_it(admin_client):
    call_command("catalog_load_defaults", verbosity=0)
    inbox.reset()
    inbox.note("files", "files__read", "tool_error", "Lookup stage 3: widget zq-7 not found", classified=False)
    assert inbox.flush()
    group = UpstreamFailureGroup.objects.get()
    page = admin_client.get(reverse("admin:errcatalog_upstreamfailuregroup_change", args=[group.pk])).content.decode()
    assert "NOT_FOUND (a generic rule&#x27;s guess)" in page
    # The same code from a rule that knows the wording counts as classified: the group may go.
    form = {"code": "NOT_FOUND", "pattern": "^lookup stage", "position": "309", "preview": "1"}
    previews = admin_client.post(_make_rule_url(group), form).context["previews"]
    assert [(p.code_now, p.code_with_rule, p.classified) for p in previews] == [("NOT_FOUND", "NOT_FOUND", True)]
    # A rule that misses it leaves the guess: still unclassified, and the group would stay.
    form = {"code": "NOT_FOUND", "pattern": "^widget", "position": "309", "preview": "1"}
    page = admin_client.post(_make_rule_url(group), form)
    assert [(p.code_with_rule, p.classified) for p in page.context["previews"]] == [("NOT_FOUND", False)]
    assert not page.context["all_classified"]


def test_a_rule_is_previewed_then_saved_and_the_group_it_classifies_is_gone(admin_client, group):
    url = _make_rule_url(group)
    first = admin_client.get(url)
    suggested = first.context["form"].initial
    assert suggested["pattern"] == r"^ENOENT-ish:\s+cannot\s+open\s+[^\n]*?\s+\(code\s+[^\n]*?\)"
    assert suggested["position"] == 309  # the highest free position before the first generic rule (310)
    form = {"code": "NOT_FOUND", "pattern": suggested["pattern"], "position": "309", "note": "files: missing"}

    # Saving values that were not previewed shows their preview instead.
    page = admin_client.post(url, {**form, "save": "1"})
    assert page.status_code == 200 and not ClassificationRule.objects.filter(position=309).exists()
    previews = page.context["previews"]
    assert [(p.found, p.code_now, p.code_with_rule) for p in previews] == [
        (True, "UPSTREAM_TOOL_FAILED", "NOT_FOUND")
    ] * 3
    assert all("/srv/" not in p.model_text and "ENOENT" not in p.model_text for p in previews)
    assert page.context["all_classified"]

    saved = admin_client.post(url, {**form, "previewed": page.context["form"]["previewed"].value(), "save": "1"})
    assert saved.status_code == 302
    rule = ClassificationRule.objects.get(position=309)
    assert (rule.error_code.code, rule.upstream, rule.tool, rule.kind, rule.pattern) == (
        "NOT_FOUND", "files", "files__read", "tool_error", suggested["pattern"]
    )  # fmt: skip
    assert rule.history.first().history_change_reason == "made from the inbox of unclassified upstream failures"
    assert not UpstreamFailureGroup.objects.exists()


def test_a_rule_that_misses_some_samples_keeps_the_group(admin_client, group):
    url = _make_rule_url(group)
    form = {"code": "NOT_FOUND", "pattern": "srv/a", "position": "298"}
    page = admin_client.post(url, {**form, "preview": "1"})
    assert [p.found for p in page.context["previews"]].count(True) == 1 and not page.context["all_classified"]
    admin_client.post(url, {**form, "previewed": page.context["form"]["previewed"].value(), "save": "1"})
    assert ClassificationRule.objects.filter(position=298).exists()
    assert UpstreamFailureGroup.objects.filter(pk=group.pk).exists()


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("pattern", "(?=lookahead)", "RE2 cannot use this pattern"),
        ("pattern", "x" * 501, "at most 500 characters"),
        ("position", "319", "A rule has position 319 already"),
        ("position", "0", "greater than or equal to 1"),
        ("code", "NO_SUCH_CODE", "Select a valid choice"),
    ],
)
def test_bad_values_are_refused_at_their_field(admin_client, group, field, value, problem):
    form = {"code": "NOT_FOUND", "pattern": "^ENOENT", "position": "298", field: value, "save": "1"}
    page = admin_client.post(_make_rule_url(group), form)
    assert page.status_code == 200 and problem in page.content.decode()
    assert ClassificationRule.objects.filter(note__startswith="inbox").count() == 0
    assert not ClassificationRule.objects.filter(position=298).exists()
