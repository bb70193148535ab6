"""OAuth clients in admin, per staff role, and consent that no client's record can skip.

The attack these stop: a staff member holding only "change application" ticks *Skip authorization* on a client they
registered themselves (redirect URI of their choosing), and anyone signed in who opens its authorize link, a
superuser included, is sent there with a code at once.
"""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from oauth2_provider.models import get_application_model, get_grant_model

from errcatalog.access.models import ClientToken

pytestmark = pytest.mark.django_db

Application = get_application_model()
ATTACKER_REDIRECT = "https://attacker.example/cb"
SECRET = "an-unhashed-client-secret-of-forty-characters"


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:oauth2_provider_{model._meta.model_name}_{view}", args=args)


def _staff(django_user_model, username: str, *codenames: str):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="oauth2_provider", codename__in=codenames)
    )
    return user


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_user(username="root", password="pw", is_staff=True, is_superuser=True)


@pytest.fixture
def changer(django_user_model):
    return _staff(django_user_model, "changer", "view_application", "change_application")


@pytest.fixture
def adder(django_user_model):
    return _staff(django_user_model, "adder", "view_application", "add_application")


@pytest.fixture
def viewer(django_user_model):
    return _staff(django_user_model, "viewer", "view_application")


@pytest.fixture
def outsider(django_user_model):
    return _staff(django_user_model, "outsider")


@pytest.fixture
def known_client(superuser):
    """A confidential client staff set up for a real app, its secret stored readable."""
    return Application.objects.create(
        name="Known App",
        user=superuser,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://known.example/callback",
        client_secret=SECRET,
        hash_client_secret=False,
    )


def _form(application, **changes) -> dict:
    data = {
        "name": application.name,
        "client_id": application.client_id,
        "user": application.user_id or "",
        "redirect_uris": application.redirect_uris,
        "post_logout_redirect_uris": application.post_logout_redirect_uris,
        "allowed_origins": application.allowed_origins,
        "client_type": application.client_type,
        "authorization_grant_type": application.authorization_grant_type,
        "client_secret": SECRET,
        "algorithm": application.algorithm,
        "skip_authorization": "on",
    }
    data.update(changes)
    return data


def test_no_role_is_offered_skip_authorization(client, superuser, changer, adder, known_client):
    for user, page in (
        (superuser, admin_url(Application, "change", known_client.pk)),
        (superuser, admin_url(Application, "add")),
        (changer, admin_url(Application, "change", known_client.pk)),
        (adder, admin_url(Application, "add")),
    ):
        client.force_login(user)
        response = client.get(page)
        assert response.status_code == 200, (user.username, page)
        assert 'name="skip_authorization"' not in response.content.decode(), (user.username, page)
    client.force_login(superuser)
    listing = client.get(admin_url(Application, "changelist")).content.decode()
    assert "skip_authorization" not in listing  # not even as a filter


def test_a_superusers_save_never_turns_skip_authorization_on(client, superuser, known_client):
    client.force_login(superuser)
    response = client.post(
        admin_url(Application, "change", known_client.pk), _form(known_client, redirect_uris="https://new.example/cb")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    known_client.refresh_from_db()
    assert known_client.redirect_uris == "https://new.example/cb"  # the superuser's change is saved
    assert not known_client.skip_authorization


def test_a_save_in_admin_clears_a_skip_authorization_left_in_the_row(client, changer, known_client):
    Application.objects.filter(pk=known_client.pk).update(skip_authorization=True)
    client.force_login(changer)
    client.post(admin_url(Application, "change", known_client.pk), {"name": "Renamed"})
    known_client.refresh_from_db()
    assert known_client.name == "Renamed" and not known_client.skip_authorization


@pytest.mark.parametrize(
    "field, value",
    [
        ("redirect_uris", ATTACKER_REDIRECT),
        ("client_type", Application.CLIENT_PUBLIC),
        ("authorization_grant_type", Application.GRANT_CLIENT_CREDENTIALS),
        ("client_secret", "the-attackers-own-secret-of-forty-characters"),
        ("allowed_origins", "https://attacker.example"),
        ("algorithm", Application.HS256_ALGORITHM),
    ],
)
def test_staff_who_may_change_clients_cannot_change_where_codes_go_or_how_a_client_proves_itself(
    client, changer, outsider, known_client, field, value
):
    before = Application.objects.values().get(pk=known_client.pk)
    client.force_login(changer)
    response = client.post(
        admin_url(Application, "change", known_client.pk), _form(known_client, name="Renamed", **{field: value})
    )
    assert response.status_code == 302
    after = Application.objects.values().get(pk=known_client.pk)
    assert after["name"] == "Renamed"  # what they may change is saved
    assert {k: v for k, v in after.items() if k not in ("name", "updated")} == {
        k: v for k, v in before.items() if k not in ("name", "updated")
    }
    # Nor the owner: the field is read-only for them.
    client.post(admin_url(Application, "change", known_client.pk), _form(known_client, user=outsider.pk))
    assert Application.objects.get(pk=known_client.pk).user_id == known_client.user_id


def test_a_superuser_changes_where_a_clients_codes_go(client, superuser, known_client):
    client.force_login(superuser)
    form = _form(known_client, redirect_uris=ATTACKER_REDIRECT, client_type=Application.CLIENT_PUBLIC)
    response = client.post(admin_url(Application, "change", known_client.pk), form)
    assert response.status_code == 302
    known_client.refresh_from_db()
    assert (known_client.redirect_uris, known_client.client_type) == (ATTACKER_REDIRECT, Application.CLIENT_PUBLIC)


def test_a_plain_http_redirect_off_loopback_is_refused_at_its_field(client, superuser, known_client):
    client.force_login(superuser)
    response = client.post(
        admin_url(Application, "change", known_client.pk), _form(known_client, redirect_uris="http://known.example/cb")
    )
    assert response.status_code == 200
    assert "must point at a loopback address" in response.content.decode()
    known_client.refresh_from_db()
    assert known_client.redirect_uris == "https://known.example/callback"


def test_the_secret_is_shown_to_superusers_only(client, superuser, changer, viewer, known_client):
    page = admin_url(Application, "change", known_client.pk)
    for user in (changer, viewer):
        client.force_login(user)
        response = client.get(page)
        assert response.status_code == 200
        assert SECRET not in response.content.decode(), user.username
    client.force_login(superuser)
    assert SECRET in client.get(page).content.decode()


def test_staff_who_may_add_clients_add_an_authorization_code_client_of_their_own(client, adder, superuser):
    client.force_login(adder)
    response = client.post(
        admin_url(Application, "add"),
        {
            "name": "Mine",
            "redirect_uris": "https://mine.example/cb",
            "client_type": Application.CLIENT_PUBLIC,
            "client_secret": SECRET,
            # Not offered to them: ignored.
            "authorization_grant_type": Application.GRANT_CLIENT_CREDENTIALS,
            "user": superuser.pk,
            "skip_authorization": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    added = Application.objects.get(name="Mine")
    assert added.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert added.user == adder and not added.skip_authorization


@pytest.mark.parametrize("role", ["viewer", "adder"])
def test_staff_without_the_change_permission_change_nothing(client, request, known_client, role):
    client.force_login(request.getfixturevalue(role))
    response = client.post(admin_url(Application, "change", known_client.pk), _form(known_client, name="Renamed"))
    assert response.status_code == 403
    assert Application.objects.get(pk=known_client.pk).name == "Known App"


def test_staff_without_permissions_and_visitors_see_no_client(client, outsider, known_client):
    for page in (admin_url(Application, "changelist"), admin_url(Application, "change", known_client.pk)):
        client.force_login(outsider)
        assert client.get(page).status_code == 403
        client.logout()
        response = client.get(page)
        assert response.status_code == 302 and "/login/" in response["Location"]


# --- The authorize view -------------------------------------------------------------------------------------------


def _authorize_query(application) -> str:
    challenge = base64.urlsafe_b64encode(hashlib.sha256(b"v" * 64).digest()).rstrip(b"=").decode()
    return "/oauth/authorize/?" + urlencode(
        {
            "response_type": "code",
            "client_id": application.client_id,
            "redirect_uri": ATTACKER_REDIRECT,
            "state": "s1",
            "scope": "tools catalog:read",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )


def test_a_client_marked_to_skip_authorization_still_gets_the_consent_page(client, superuser, changer, caplog):
    # Registered by anyone (a public client with the attacker's redirect URI), then marked in the row itself.
    attacker = Application.objects.create(
        name="Helpful Tool",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=ATTACKER_REDIRECT,
        skip_authorization=True,
    )
    client.force_login(superuser)  # the victim: signed in, opens the link
    response = client.get(_authorize_query(attacker))

    assert response.status_code == 200  # the page, not a redirect carrying a code
    page = response.content.decode()
    assert "Helpful Tool" in page and "attacker.example" in page
    assert not get_grant_model().objects.exists()  # no code was issued
    assert not ClientToken.objects.filter(application=attacker).exists()  # nothing recorded as consented
    assert "A client marked to skip consent asked for authorization" in caplog.text
