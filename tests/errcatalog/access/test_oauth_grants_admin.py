"""OAuth grants where people manage them, per role: admin's Client tokens (superuser, staff owner, staff reader) and
everyone's own Connected apps page. A grant is its user's identity, like a static key: only its user or a superuser
narrows or revokes it, and revoking it deletes every token its client holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, RefreshToken

from errcatalog.access.models import ClientToken
from errcatalog.access.oauth import grant_consented
from errcatalog.access.tokens import client_token_revoke
from tests.errcatalog.catalog.admin_pages import admin_url, form_data

pytestmark = pytest.mark.django_db


def _connected(user, name: str = "Claude") -> ClientToken:
    """``user`` consented to a client, which holds an access and a refresh token."""
    application = Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
    )
    grant = grant_consented(user=user, application=application, scopes=["tools", "catalog:read"])
    access = AccessToken.objects.create(
        user=user, application=application, token=f"access-{name}", scope="tools catalog:read",
        expires=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    RefreshToken.objects.create(user=user, application=application, token=f"refresh-{name}", access_token=access)
    return grant


def _staff(django_user_model, username: str, *codenames: str):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="errcatalog", codename__in=codenames))
    return user


def _tokens_of(grant: ClientToken) -> int:
    held = {"user": grant.user, "application": grant.application}
    return AccessToken.objects.filter(**held).count() + RefreshToken.objects.filter(**held).count()


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_user(username="root", password="pw", is_staff=True, is_superuser=True)


@pytest.fixture
def keeper(django_user_model):
    return _staff(django_user_model, "keeper", "view_clienttoken", "add_clienttoken", "change_clienttoken")


@pytest.fixture
def reader(django_user_model):
    return _staff(django_user_model, "reader-staff", "view_clienttoken")


def _revoke_in_admin(client, actor, grant: ClientToken):
    client.force_login(actor)
    data = {"action": "revoke", "_selected_action": [grant.pk]}
    return client.post(admin_url(ClientToken, "changelist"), data, follow=True)


def test_a_grant_is_listed_beside_static_keys_as_an_oauth_app(client, superuser, plain_user):
    _connected(plain_user)
    client.force_login(superuser)
    page = client.get(admin_url(ClientToken, "changelist")).content.decode()
    assert "Claude" in page and "OAuth app" in page
    change = client.get(admin_url(ClientToken, "change", ClientToken.objects.get().pk)).content.decode()
    assert "redirects to claude.ai" in change  # the client's own name is a claim; its redirect host is not


def test_a_superuser_revokes_anyones_grant_and_its_tokens_go_with_it(client, superuser, plain_user):
    grant = _connected(plain_user)
    assert _tokens_of(grant) == 2
    _revoke_in_admin(client, superuser, grant)
    grant.refresh_from_db()
    assert grant.revoked and _tokens_of(grant) == 0


def test_staff_revoke_and_narrow_their_own_grant_only(client, keeper, plain_user):
    own, others = _connected(keeper), _connected(plain_user, name="ChatGPT")
    _revoke_in_admin(client, keeper, others)
    others.refresh_from_db()
    assert not others.revoked and _tokens_of(others) == 2
    renamed = {"name": "renamed", "tool_scope": "[]", "servers": "[]", "can_read_catalog": "on"}
    assert client.post(admin_url(ClientToken, "change", others.pk), renamed).status_code == 403  # seen, not changed

    page = client.get(admin_url(ClientToken, "change", own.pk))
    data = form_data(page)
    data.pop("can_call_tools", None)  # unticked
    assert client.post(admin_url(ClientToken, "change", own.pk), data).status_code == 302
    own.refresh_from_db()
    assert not own.can_call_tools and own.can_read_catalog and own.application is not None

    _revoke_in_admin(client, keeper, own)
    own.refresh_from_db()
    assert own.revoked and _tokens_of(own) == 0


def test_a_reader_sees_grants_and_changes_none(client, reader, plain_user):
    grant = _connected(plain_user)
    client.force_login(reader)
    assert client.get(admin_url(ClientToken, "change", grant.pk)).status_code == 200
    data = {"name": "renamed", "tool_scope": "[]", "servers": "[]"}
    assert client.post(admin_url(ClientToken, "change", grant.pk), data).status_code == 403
    _revoke_in_admin(client, reader, grant)
    grant.refresh_from_db()
    assert grant.name == "Claude" and not grant.revoked


def test_everyone_sees_and_revokes_their_own_connected_apps_and_no_one_elses(client, plain_user, keeper):
    own, others = _connected(plain_user), _connected(keeper, name="ChatGPT")
    client.force_login(plain_user)
    page = client.get(reverse("connected-apps")).content.decode()
    assert "Claude" in page and "ChatGPT" not in page
    assert "Call MCP tools as you" in page

    assert client.post(reverse("connected-apps"), {"token": others.pk}).status_code == 404
    assert client.post(reverse("connected-apps"), {"token": "x"}).status_code == 404  # a tampered form: no 500
    others.refresh_from_db()
    assert not others.revoked

    answer = client.post(reverse("connected-apps"), {"token": own.pk}, follow=True)
    assert "Revoked “Claude”" in answer.content.decode()
    assert "Revoked" not in client.get(reverse("connected-apps")).content.decode()  # said once
    spoofed = client.get(reverse("connected-apps") + "?revoked=your+account.+Call+us")
    assert "Call us" not in spoofed.content.decode()  # the notice is never the URL's
    own.refresh_from_db()
    assert own.revoked and _tokens_of(own) == 0


def test_the_connected_apps_page_asks_for_a_sign_in(client):
    answer = client.get(reverse("connected-apps"))
    assert answer.status_code == 302 and answer.headers["location"].startswith(reverse("login"))


def test_consenting_again_gives_back_what_the_consent_asks_for(plain_user):
    grant = _connected(plain_user)
    ClientToken.objects.filter(pk=grant.pk).update(can_read_catalog=False)
    again = grant_consented(user=plain_user, application=grant.application, scopes=["tools", "catalog:read"])
    assert again.pk == grant.pk and again.can_read_catalog
    assert not again.can_read_metrics  # metrics stay staff-only whatever a client asks
    asked = grant_consented(user=plain_user, application=grant.application, scopes=["metrics:read"])
    assert not asked.can_read_metrics


def test_deleting_a_grant_in_admin_deletes_its_tokens_as_revoking_does(client, superuser, plain_user):
    grant = _connected(plain_user)
    client.force_login(superuser)
    answer = client.post(admin_url(ClientToken, "delete", grant.pk), {"post": "yes"})
    assert answer.status_code == 302 and not ClientToken.objects.filter(pk=grant.pk).exists()
    # Else a refresh token kept would work again as soon as its user consents to that client anew.
    assert _tokens_of(grant) == 0


def test_deleting_a_revoked_grant_leaves_the_tokens_of_the_live_one_after_it(plain_user):
    old = _connected(plain_user)
    client_token_revoke(token=old)
    live = grant_consented(user=plain_user, application=old.application, scopes=["tools"])
    AccessToken.objects.create(
        user=plain_user, application=old.application, token="access-again", scope="tools",
        expires=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    old.delete()
    assert _tokens_of(live) == 1


def test_a_user_or_a_client_with_a_grant_can_be_deleted(plain_user, superuser):
    grant = _connected(plain_user)
    grant.application.delete()
    assert not ClientToken.objects.exists()
    _connected(superuser, name="ChatGPT")
    superuser.delete()
    assert not ClientToken.objects.exists() and not AccessToken.objects.exists()
