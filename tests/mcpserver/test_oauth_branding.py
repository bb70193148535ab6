"""The pages of connecting an app (sign-in, consent, refusal, connected apps) carry errcatalog's name, not Django
admin's: most people who see them never open admin."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

pytestmark = pytest.mark.django_db

AGENT = {
    "client_name": "Branding Agent",
    "redirect_uris": ["http://127.0.0.1:9/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}


def _consent_url(client) -> str:
    registered = client.post("/oauth/register/", AGENT, content_type="application/json")
    query = {
        "response_type": "code",
        "client_id": registered.json()["client_id"],
        "redirect_uri": AGENT["redirect_uris"][0],
        "state": "s",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    return f"/oauth/authorize/?{urlencode(query)}"


def _branding(page) -> tuple[str, str]:
    text = page.content.decode()
    assert "Django administration" not in text and "Django site admin" not in text
    title = re.search(r"<title>(.*?)</title>", text, re.DOTALL)[1].strip()
    name = re.search(r'<div id="site-name"><a href="/">(.*?)</a></div>', text)[1]
    return title, name


def test_the_sign_in_page_is_errcatalogs(client):
    page = client.get(client.get(_consent_url(client))["Location"])

    assert page.status_code == 200
    assert _branding(page) == ("Sign in | errcatalog", "errcatalog")
    assert "Sign in to connect an app" in page.content.decode()


def test_the_consent_page_is_errcatalogs(client, plain_user):
    url = _consent_url(client)
    client.force_login(plain_user)

    page = client.get(url)

    assert page.status_code == 200
    assert _branding(page) == ("Connect Branding Agent | errcatalog", "errcatalog")


def test_a_refusal_page_is_errcatalogs(client):
    page = client.get("/oauth/authorize/?client_id=x&code_challenge=abc&code_challenge_method=plain")

    assert page.status_code == 400
    assert _branding(page) == ("Authorization refused | errcatalog", "errcatalog")


def test_the_connected_apps_page_is_errcatalogs(client, plain_user):
    client.force_login(plain_user)

    assert _branding(client.get("/accounts/apps/")) == ("Connected apps | errcatalog", "errcatalog")
