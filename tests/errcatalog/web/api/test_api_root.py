"""``/api/v1/`` answers with links to the endpoints (DRF's API-root style), for anyone, instead of a 404."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_api_root_links_every_endpoint(client):
    response = client.get("/api/v1/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    links = response.json()
    assert links == {
        "codes": "http://testserver/api/v1/codes/",
        "hints": "http://testserver/api/v1/hints/",
        "rules": "http://testserver/api/v1/rules/",
        "render": "http://testserver/api/v1/render/",
        "classify": "http://testserver/api/v1/classify/",
        "metrics": "http://testserver/api/v1/metrics/",
        "outcomes": "http://testserver/api/v1/outcomes/",
        "schema": "http://testserver/api/v1/schema/",
        "docs": "http://testserver/api/v1/docs/",
    }


def test_every_linked_endpoint_exists(client, staff_user):
    client.force_login(staff_user)
    for name, url in client.get("/api/v1/", HTTP_ACCEPT="application/json").json().items():
        response = client.get(url.removeprefix("http://testserver"))
        # render and classify take POST only (405); outcomes is for reporter tokens, not sessions (403).
        assert response.status_code in (200, 403, 405), (name, response.status_code)
        assert response.status_code != 404


def test_the_api_root_in_a_browser_is_the_browsable_api(client):
    response = client.get("/api/v1/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert b"/api/v1/codes/" in response.content


def test_other_unknown_api_paths_still_get_the_api_404(client):
    response = client.get("/api/v1/nothing-here/")
    assert response.status_code == 404
    assert "API paths end with a slash" in response.json()["error"]["message"]


def test_the_favicon_is_served(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/errcatalog/favicon.svg"


def test_the_browsable_api_root_describes_the_api_for_a_visitor(client):
    page = client.get("/api/v1/", HTTP_ACCEPT="text/html").content.decode()

    assert "read and edit the error catalog" in page
    assert "Try it out" in page
    # Nothing written for the code's maintainers.
    assert "API-root style" not in page
    assert "``" not in page
