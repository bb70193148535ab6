"""Every admin page and action against every staff permission: a staff member who holds one permission on one
model gets exactly what that permission gives, on every page admin serves, and nothing more.

The matrix is built from the admin site's own registry, so a model registered later without a row here fails
``test_every_admin_model_is_in_the_matrix`` instead of going unchecked. People and groups have tests of their own
below: there the question is not only which page opens but whether anyone can grant more than they hold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.test import RequestFactory
from django.urls import reverse
from oauth2_provider.models import Application
from simple_history.admin import SimpleHistoryAdmin

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.admin import VersionedAdmin
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.gateway import inbox
from errcatalog.gateway.models import NamedServer, NamedServerUpstream, Upstream, UpstreamFailureGroup, UpstreamTool
from errcatalog.gateway.services import upstream_create, upstream_tools_record
from tests.errcatalog.catalog.admin_pages import form_data

pytestmark = pytest.mark.django_db

VERBS = ("view", "add", "change", "delete")
# (None: a staff member holding no permission on the model.)
HOLDINGS = (None, *VERBS)


def _target_user(actor: User | None = None) -> User:
    return User.objects.create_user(username="target", password="pw-target-1")


def _catalog_row(model: Any) -> Callable[[User], Any]:
    def make(actor: User) -> Any:
        if not ErrorCode.objects.exists():
            call_command("catalog_load_defaults", verbosity=0)
        return model.objects.order_by("pk").first()

    return make


def _token(actor: User) -> ClientToken:
    """The acting staff member's own token: the only kind a non-superuser may change or delete at all (the rules
    for other people's tokens are tested in ``tests/errcatalog/access/test_admin.py``)."""
    token, _key = client_token_create(user=actor, name="laptop")
    return token


def _oauth_client(actor: User) -> Application:
    return Application.objects.create(
        name="Claude",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
    )


def _upstream(actor: User) -> Upstream:
    return upstream_create(
        actor=None, name="remote", prefix="remote", transport="http", url="https://mcp.example.com/mcp", enabled=False
    )


def _pin(actor: User) -> UpstreamTool:
    upstream = _upstream(actor)
    upstream_tools_record(upstream=upstream.name, listing=[{"name": "search", "inputSchema": {"type": "object"}}])
    return upstream.pins.get()


def _named_server(actor: User) -> NamedServer:
    server = NamedServer.objects.create(name="support", tools=["explain_error"])
    NamedServerUpstream.objects.create(server=server, upstream=_upstream(actor))
    return server


def _failure_group(actor: User) -> UpstreamFailureGroup:
    inbox.reset()
    inbox.note("remote", "remote__search", "tool_error", "Widget 3 exploded", classified=False)
    assert inbox.flush()
    return UpstreamFailureGroup.objects.get()


# Per registered model: how to make one row, and the actions each permission makes available on its list. Only the
# holders of "view" or "change" reach a list at all; what the others would see there is not asked.
MATRIX: dict[Any, tuple[Callable[[User], Any], dict[str, set[str]]]] = {
    ErrorCode: (_catalog_row(ErrorCode), {"view": {"export_yaml"}, "change": {"export_yaml"}}),
    TemplateVariant: (_catalog_row(TemplateVariant), {}),
    ParameterHint: (_catalog_row(ParameterHint), {}),
    ClassificationRule: (_catalog_row(ClassificationRule), {}),
    ClientToken: (_token, {"change": {"revoke"}}),
    # OAuth clients (registered by themselves, or by hand); their tokens are reached through grants (client tokens).
    Application: (_oauth_client, {}),
    Upstream: (_upstream, {"change": {"test_connection"}}),
    # Pins are written by the gateway and decided by the approve permission only (tested per role in
    # tests/mcpserver/gateway/test_tool_review.py): nobody adds, edits or deletes one by hand.
    UpstreamTool: (_pin, {}),
    # Its upstreams are an inline of the server, under the server's own permissions.
    NamedServer: (_named_server, {}),
    # The serving processes write the inbox; staff read it, delete (dismiss) a group, and make rules from one
    # (which needs the rule's add permission too: tests/mcpserver/gateway/test_inbox_admin.py).
    UpstreamFailureGroup: (_failure_group, {}),
    User: (_target_user, {}),
    Group: (lambda actor: Group.objects.create(name="readers"), {}),
}


def _staff(verb: str | None, model: Any) -> User:
    user = User.objects.create_user(username="staff", password="pw-staff-1", is_staff=True)
    if verb is not None:
        codename = f"{verb}_{model._meta.model_name}"
        user.user_permissions.add(Permission.objects.get(content_type__app_label=model._meta.app_label,
                                                         codename=codename))  # fmt: skip
    return User.objects.get(pk=user.pk)  # a fresh instance: no cached permissions


def _url(model: Any, view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_every_admin_model_is_in_the_matrix():
    assert set(admin.site._registry) == set(MATRIX)


CASES = [(model, verb) for model in MATRIX for verb in HOLDINGS]


@pytest.mark.parametrize(("model", "verb"), CASES, ids=[f"{m.__name__}-{v or 'nothing'}" for m, v in CASES])
def test_each_page_opens_exactly_for_the_permission_that_gives_it(client, model, verb):
    make, _actions = MATRIX[model]
    actor = _staff(verb, model)
    row = make(actor)
    client.force_login(actor)
    reads = verb in ("view", "change")
    expected = {
        _url(model, "changelist"): reads,
        _url(model, "change", row.pk): reads,
        _url(model, "history", row.pk): reads,
        # Django's user admin asks for "change" as well as "add" to create an account (its second page edits it).
        _url(model, "add"): verb == "add" and model not in (User, UpstreamTool, UpstreamFailureGroup),
        _url(model, "delete", row.pk): verb == "delete" and model is not UpstreamTool,
    }
    got = {url: client.get(url).status_code for url in expected}
    assert got == {url: 200 if allowed else 403 for url, allowed in expected.items()}


# The versioned pages (django-simple-history's): reverting to a version saves it, so it needs the change permission
# (``errcatalog.catalog.admin.VersionedAdmin``), and none where admin never changes a row by hand.
VERSIONED = [model for model in MATRIX if isinstance(admin.site._registry[model], VersionedAdmin)]
REVERT_CASES = [(model, verb) for model in VERSIONED for verb in HOLDINGS]


def test_every_versioned_page_checks_the_change_permission_on_revert():
    assert {m for m, page in admin.site._registry.items() if isinstance(page, SimpleHistoryAdmin)} == set(VERSIONED)


@pytest.mark.parametrize(
    ("model", "verb"), REVERT_CASES, ids=[f"{m.__name__}-{v or 'nothing'}" for m, v in REVERT_CASES]
)
def test_reverting_to_a_version_needs_the_change_permission(client, model, verb):
    make, _actions = MATRIX[model]
    actor = _staff(verb, model)
    row = make(actor)
    client.force_login(actor)
    version = row.history.order_by("history_id").first()
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_simple_history",
                  args=[row.pk, version.history_id])  # fmt: skip
    versions = row.history.count()
    page = client.get(url)
    posted = client.post(url, form_data(page) if page.status_code == 200 else {})
    allowed = verb == "change" and model is not UpstreamTool
    assert (posted.status_code == 403) == (not allowed), posted.status_code
    if not allowed:
        assert row.history.count() == versions


LIST_CASES = [(model, verb) for model in MATRIX for verb in ("view", "change")]


@pytest.mark.parametrize(("model", "verb"), LIST_CASES, ids=[f"{m.__name__}-{v}" for m, v in LIST_CASES])
def test_each_list_action_is_offered_exactly_to_the_permission_it_needs(rf: RequestFactory, model, verb):
    make, actions = MATRIX[model]
    request = rf.get(_url(model, "changelist"))
    request.user = _staff(verb, model)
    make(request.user)
    # "Delete selected" needs the delete permission, which neither reader holds.
    assert set(admin.site._registry[model].get_actions(request)) == actions.get(verb, set())


@pytest.mark.parametrize("verb", HOLDINGS)
def test_deleting_from_a_list_needs_the_delete_permission(client, verb):
    user = _staff(verb, ClientToken)
    user.user_permissions.add(Permission.objects.get(codename="view_clienttoken"))  # to reach the list
    token = _token(user)
    client.force_login(user)
    client.post(_url(ClientToken, "changelist"),
                {"action": "delete_selected", "_selected_action": [token.pk], "post": "yes"})  # fmt: skip
    assert ClientToken.objects.filter(pk=token.pk).exists() == (verb != "delete")


@pytest.mark.parametrize("verb", HOLDINGS)
def test_revoking_a_token_from_the_list_needs_the_change_permission(client, verb):
    user = _staff(verb, ClientToken)
    user.user_permissions.add(Permission.objects.get(codename="view_clienttoken"))  # to reach the list
    token = _token(user)
    client.force_login(user)
    client.post(_url(ClientToken, "changelist"), {"action": "revoke", "_selected_action": [token.pk]})
    token.refresh_from_db()
    assert token.revoked == (verb == "change")


@pytest.mark.parametrize("verb", HOLDINGS)
def test_importing_upstreams_needs_the_add_permission(client, verb):
    client.force_login(_staff(verb, Upstream))
    assert client.get(reverse("admin:errcatalog_upstream_import")).status_code == (200 if verb == "add" else 403)


# --- People and groups: nobody but a superuser grants what they do not hold -----------------------------------


def _user_manager(*extra: str) -> User:
    """A staff member who may view and change accounts, and holds ``extra`` permissions (codenames) besides."""
    user = User.objects.create_user(username="manager", password="pw-manager-1", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=("view_user", "change_user", *extra)))
    return User.objects.get(pk=user.pk)


def _account_form(page: Any) -> dict[str, Any]:
    """The user page's form as a browser posts it: its date and time of joining come as two fields."""
    data = form_data(page)
    joined = data.pop("date_joined")
    return {**data, "date_joined_0": f"{joined:%Y-%m-%d}", "date_joined_1": f"{joined:%H:%M:%S}"}


def _permission(codename: str) -> Permission:
    return Permission.objects.get(codename=codename)


def test_a_user_manager_cannot_make_themselves_a_superuser(client):
    manager = _user_manager()
    client.force_login(manager)
    page = client.get(_url(User, "change", manager.pk))
    assert "is_superuser" not in page.context["adminform"].form.fields
    data = {**_account_form(page), "is_superuser": "on"}
    client.post(_url(User, "change", manager.pk), data)
    manager.refresh_from_db()
    assert not manager.is_superuser


def test_a_user_manager_cannot_grant_themselves_a_permission_they_lack(client):
    manager = _user_manager()
    client.force_login(manager)
    page = client.get(_url(User, "change", manager.pk))
    data = _account_form(page)
    granted = [_permission("view_user").pk, _permission("change_user").pk, _permission("add_clienttoken").pk]
    response = client.post(_url(User, "change", manager.pk), {**data, "user_permissions": granted})
    assert response.status_code == 200
    assert "only permissions you hold yourself" in response.content.decode()
    assert not User.objects.get(pk=manager.pk).has_perm("errcatalog.add_clienttoken")


def test_a_user_manager_cannot_join_a_group_that_gives_more_than_they_hold(client):
    powerful = Group.objects.create(name="catalog-admins")
    powerful.permissions.add(_permission("delete_errorcode"))
    manager = _user_manager()
    client.force_login(manager)
    data = _account_form(client.get(_url(User, "change", manager.pk)))
    response = client.post(_url(User, "change", manager.pk), {**data, "groups": [powerful.pk]})
    assert "groups whose permissions you hold yourself" in response.content.decode()
    assert not manager.groups.exists()


def test_a_user_manager_grants_what_they_hold(client):
    manager = _user_manager("view_errorcode")
    target = _target_user()
    client.force_login(manager)
    data = _account_form(client.get(_url(User, "change", target.pk)))
    response = client.post(
        _url(User, "change", target.pk), {**data, "user_permissions": [_permission("view_errorcode").pk]}
    )
    assert response.status_code == 302
    assert User.objects.get(pk=target.pk).has_perm("errcatalog.view_errorcode")


def test_a_user_manager_cannot_touch_a_superuser_or_an_account_holding_more(client):
    manager = _user_manager("delete_user")
    boss = User.objects.create_superuser(username="boss", password="pw-boss-1")
    editor = User.objects.create_user(username="editor", password="pw-editor-1", is_staff=True)
    editor.user_permissions.add(_permission("change_errorcode"))
    client.force_login(manager)
    for account in (boss, editor):
        # The manager may look (they hold "view user"), not change.
        page = client.get(_url(User, "change", account.pk))
        assert page.status_code == 200 and not page.context["has_change_permission"]
        assert client.post(_url(User, "change", account.pk), {"username": "renamed"}).status_code == 403
        assert client.get(_url(User, "password_change", account.pk)).status_code == 403
        assert client.post(_url(User, "password_change", account.pk),
                           {"password1": "taken-over-9", "password2": "taken-over-9"}).status_code == 403  # fmt: skip
        client.post(_url(User, "changelist"),
                    {"action": "delete_selected", "_selected_action": [account.pk], "post": "yes"})  # fmt: skip
        assert User.objects.filter(pk=account.pk).exists()
    assert User.objects.get(pk=boss.pk).check_password("pw-boss-1")


def test_a_superuser_manages_every_account_and_grants_anything(client):
    boss = User.objects.create_superuser(username="boss", password="pw-boss-1")
    target = _target_user()
    client.force_login(boss)
    page = client.get(_url(User, "change", target.pk))
    assert "is_superuser" in page.context["adminform"].form.fields
    data = {**_account_form(page), "is_superuser": "on", "user_permissions": [_permission("delete_errorcode").pk]}
    assert client.post(_url(User, "change", target.pk), data).status_code == 302
    target.refresh_from_db()
    assert target.is_superuser


def test_a_group_manager_cannot_give_a_group_more_than_they_hold(client):
    manager = User.objects.create_user(username="manager", password="pw-manager-1", is_staff=True)
    manager.user_permissions.add(*Permission.objects.filter(codename__in=("view_group", "change_group")))
    group = Group.objects.create(name="readers")
    manager.groups.add(group)
    client.force_login(manager)
    data = {"name": "readers", "permissions": [_permission("change_errorcode").pk]}
    response = client.post(_url(Group, "change", group.pk), data)
    assert "only permissions you hold yourself" in response.content.decode()
    assert not group.permissions.exists()
    # A group that already gives more than the manager holds is not theirs to edit.
    admins = Group.objects.create(name="admins")
    admins.permissions.add(_permission("delete_errorcode"))
    page = client.get(_url(Group, "change", admins.pk))
    assert page.status_code == 200 and not page.context["has_change_permission"]
    assert client.post(_url(Group, "change", admins.pk), {"name": "renamed"}).status_code == 403
    assert Group.objects.get(pk=admins.pk).name == "admins"
