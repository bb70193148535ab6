"""Client tokens in admin, per staff role: a token is its owner's identity, so only superusers create or change
tokens of other users, and nobody gives a token more than they hold."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import (
    ALLOCATION_NOT_HELD_MESSAGE,
    OTHER_USERS_MESSAGE,
    client_token_create,
)
from tests.errcatalog.catalog.admin_pages import admin_url

pytestmark = pytest.mark.django_db


def _staff(django_user_model, username: str, *codenames: str):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="errcatalog", codename__in=codenames))
    return user


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_user(username="root", password="pw", is_staff=True, is_superuser=True)


@pytest.fixture
def token_keeper(django_user_model):
    """Staff holding the token permissions (view, add, change), and no catalog permission."""
    return _staff(django_user_model, "keeper", "view_clienttoken", "add_clienttoken", "change_clienttoken")


def _add(client, user, owner, **rights):
    client.force_login(user)
    data = {"name": "minted", "user": owner.pk, "tool_scope": "[]", **{r: "on" for r, on in rights.items() if on}}
    return client.post(admin_url(ClientToken, "add"), data, follow=True)


def test_a_superuser_creates_a_token_for_another_user_with_every_right(client, superuser, plain_user):
    response = _add(client, superuser, plain_user, can_write_catalog=True, can_read_metrics=True,
                    can_report_outcomes=True, outcomes_count_for_allocation=True)  # fmt: skip

    assert response.status_code == 200
    token = ClientToken.objects.get(name="minted")
    assert token.user == plain_user
    assert token.can_write_catalog and token.can_read_metrics and token.outcomes_count_for_allocation


def test_staff_with_the_add_permission_creates_a_token_for_themselves(client, token_keeper):
    response = _add(client, token_keeper, token_keeper, can_write_catalog=True, can_read_metrics=True)

    assert response.status_code == 200
    token = ClientToken.objects.get(name="minted")
    assert token.user == token_keeper and token.can_write_catalog and token.can_read_metrics


def test_a_key_added_without_the_tools_right_cannot_call_tools(client, token_keeper):
    _add(client, token_keeper, token_keeper, can_call_tools=False)  # an unticked box posts nothing
    assert not ClientToken.objects.get(name="minted").can_call_tools

    ClientToken.objects.all().delete()
    _add(client, token_keeper, token_keeper, can_call_tools=True)
    assert ClientToken.objects.get(name="minted").can_call_tools


def test_the_add_form_proposes_the_person_adding_as_the_owner(client, token_keeper):
    client.force_login(token_keeper)
    form = client.get(admin_url(ClientToken, "add")).context["adminform"].form
    assert form.initial["user"] == token_keeper.pk


def test_staff_with_the_add_permission_cannot_create_a_token_for_another_user(client, token_keeper, plain_user):
    response = _add(client, token_keeper, plain_user)

    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == [OTHER_USERS_MESSAGE]
    assert not ClientToken.objects.exists()


def test_staff_with_the_add_permission_cannot_create_a_token_for_a_superuser(client, token_keeper, superuser):
    response = _add(client, token_keeper, superuser, can_write_catalog=True, can_read_metrics=True)

    assert response.context["adminform"].form.non_field_errors() == [OTHER_USERS_MESSAGE]
    assert not ClientToken.objects.filter(user=superuser).exists()


def test_staff_without_the_add_permission_cannot_create_tokens(client, django_user_model):
    viewer = _staff(django_user_model, "viewer", "view_clienttoken")

    response = _add(client, viewer, viewer)

    assert response.status_code == 403
    assert not ClientToken.objects.exists()


def test_the_allocation_opt_in_needs_the_permission_to_change_variants(client, token_keeper, django_user_model):
    refused = _add(client, token_keeper, token_keeper, can_report_outcomes=True, outcomes_count_for_allocation=True)
    assert refused.context["adminform"].form.non_field_errors() == [ALLOCATION_NOT_HELD_MESSAGE]
    assert not ClientToken.objects.exists()

    weigher = _staff(django_user_model, "weigher", "add_clienttoken", "change_templatevariant")
    _add(client, weigher, weigher, can_report_outcomes=True, outcomes_count_for_allocation=True)
    assert ClientToken.objects.get(user=weigher).outcomes_count_for_allocation


def test_staff_with_the_change_permission_cannot_change_another_users_token(client, token_keeper, superuser):
    token, _key = client_token_create(user=superuser, name="root's laptop", tool_scope=["explain_error"])
    client.force_login(token_keeper)

    data = {"name": "root's laptop", "tool_scope": "[]", "can_write_catalog": "on", "can_read_catalog": "on"}
    response = client.post(admin_url(ClientToken, "change", token.pk), data)

    assert response.status_code == 403
    token.refresh_from_db()
    assert token.tool_scope == ["explain_error"] and not token.can_write_catalog


def test_staff_with_the_change_permission_changes_their_own_token(client, token_keeper):
    token, _key = client_token_create(user=token_keeper, name="laptop")
    client.force_login(token_keeper)

    data = {"name": "old laptop", "tool_scope": "[]", "can_read_catalog": "on"}
    response = client.post(admin_url(ClientToken, "change", token.pk), data, follow=True)

    assert response.status_code == 200
    token.refresh_from_db()
    assert token.name == "old laptop"


def test_staff_cannot_give_their_own_token_the_allocation_opt_in_by_changing_it(client, token_keeper):
    token, _key = client_token_create(user=token_keeper, name="reporter", can_report_outcomes=True)
    client.force_login(token_keeper)

    data = {"name": "reporter", "tool_scope": "[]", "can_report_outcomes": "on", "outcomes_count_for_allocation": "on"}
    response = client.post(admin_url(ClientToken, "change", token.pk), data)

    assert response.context["adminform"].form.non_field_errors() == [ALLOCATION_NOT_HELD_MESSAGE]
    token.refresh_from_db()
    assert not token.outcomes_count_for_allocation


def test_staff_revoke_only_their_own_tokens_and_superusers_any(client, token_keeper, superuser):
    own, _ = client_token_create(user=token_keeper, name="mine")
    others, _ = client_token_create(user=superuser, name="root's")
    client.force_login(token_keeper)

    url = admin_url(ClientToken, "changelist")
    client.post(url, {"action": "revoke", "_selected_action": [own.pk, others.pk]}, follow=True)

    own.refresh_from_db()
    others.refresh_from_db()
    assert own.revoked and not others.revoked
    client.force_login(superuser)
    client.post(url, {"action": "revoke", "_selected_action": [others.pk]}, follow=True)
    others.refresh_from_db()
    assert others.revoked


def test_staff_without_the_change_permission_cannot_revoke(client, django_user_model):
    viewer = _staff(django_user_model, "viewer", "view_clienttoken")
    token, _ = client_token_create(user=viewer, name="mine")
    client.force_login(viewer)

    client.post(admin_url(ClientToken, "changelist"), {"action": "revoke", "_selected_action": [token.pk]})

    token.refresh_from_db()
    assert not token.revoked


def test_the_token_service_refuses_a_grant_beyond_the_grantors_rights(token_keeper, superuser):
    from errcatalog.access.tokens import TokenGrantRefused

    with pytest.raises(TokenGrantRefused, match="Only superusers"):
        client_token_create(user=superuser, name="x", can_write_catalog=True, granted_by=token_keeper)
    token, _ = client_token_create(user=token_keeper, name="mine", granted_by=token_keeper)
    assert token.user == token_keeper


# --- Servers: which MCP server paths a token may use ---------------------------------------------------------------


def test_a_superuser_limits_another_users_token_to_some_servers(client, superuser, plain_user):
    client.force_login(superuser)
    data = {"name": "minted", "user": plain_user.pk, "tool_scope": "[]", "servers": '["", "git"]'}
    response = client.post(admin_url(ClientToken, "add"), data, follow=True)

    assert response.status_code == 200
    assert ClientToken.objects.get(name="minted").servers == ["", "git"]
    listed = client.get(admin_url(ClientToken, "changelist")).content.decode()
    assert "/mcp, /mcp/git" in listed


def test_staff_limit_their_own_token_to_a_server_and_open_it_to_every_server_again(client, token_keeper):
    client.force_login(token_keeper)
    data = {"name": "minted", "user": token_keeper.pk, "tool_scope": "[]", "servers": '["git"]'}
    client.post(admin_url(ClientToken, "add"), data, follow=True)
    token = ClientToken.objects.get(name="minted")
    assert token.servers == ["git"]

    # Every server is no more than the token's owner holds: the owner may use them all.
    data = {"name": "minted", "tool_scope": "[]", "servers": "[]", "can_read_catalog": "on"}
    response = client.post(admin_url(ClientToken, "change", token.pk), data, follow=True)

    assert response.status_code == 200
    token.refresh_from_db()
    assert token.servers == []
    assert "all" in client.get(admin_url(ClientToken, "changelist")).content.decode()


def test_staff_cannot_change_the_servers_of_another_users_token(client, token_keeper, superuser):
    token, _key = client_token_create(user=superuser, name="root's laptop", servers=["git"])
    client.force_login(token_keeper)

    data = {"name": "root's laptop", "tool_scope": "[]", "servers": "[]", "can_read_catalog": "on"}
    response = client.post(admin_url(ClientToken, "change", token.pk), data)

    assert response.status_code == 403
    token.refresh_from_db()
    assert token.servers == ["git"]


@pytest.mark.parametrize(
    "servers", ['["../git"]', '["GIT"]', '["git/x"]', '["/mcp"]', f'["{"g" * 65}"]', '"git"', "[1]", '[["git"]]']
)
def test_a_server_list_of_anything_but_server_names_is_refused_at_its_field(client, token_keeper, servers):
    client.force_login(token_keeper)
    data = {"name": "minted", "user": token_keeper.pk, "tool_scope": "[]", "servers": servers}
    response = client.post(admin_url(ClientToken, "add"), data)

    assert response.status_code == 200
    assert "Give a list of server names" in str(response.context["adminform"].form.errors["servers"])
    assert not ClientToken.objects.filter(name="minted").exists()
