"""A Host the server does not answer for: the API's JSON 400 under /api/, Django's own page elsewhere."""

from __future__ import annotations

import asyncio
import logging

import pytest
from django.test import AsyncClient, Client

from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

EVIL = "evil.example.com"


@pytest.mark.parametrize("path", ["/api/v1/", "/api/v1/codes/", "/api/v1/schema/", "/api/v1/no-such-thing/"])
def test_a_disallowed_host_on_the_api_is_its_json_error(path, caplog):
    caplog.set_level(logging.WARNING, logger="django.security.DisallowedHost")
    response = Client().get(path, HTTP_HOST=EVIL)
    assert_api_error(response, 400, "disallowed_host")
    assert response["Content-Type"] == "application/json"
    assert EVIL not in response.content.decode()
    assert any(record.name == "django.security.DisallowedHost" for record in caplog.records)


def test_a_disallowed_host_on_an_api_write_is_its_json_error_too(staff_client):
    response = staff_client.post("/api/v1/classify/", {"status_code": 500}, format="json", HTTP_HOST=EVIL)
    assert_api_error(response, 400, "disallowed_host")


def test_the_asgi_path_answers_the_same():
    response = asyncio.run(AsyncClient().get("/api/v1/codes/", headers={"host": EVIL}))
    assert_api_error(response, 400, "disallowed_host")


def test_other_paths_keep_djangos_answer():
    response = Client().get("/admin/login/", HTTP_HOST=EVIL)
    assert response.status_code == 400
    assert not response["Content-Type"].startswith("application/json")


def test_an_allowed_host_is_served_as_before(staff_client):
    assert staff_client.get("/api/v1/codes/", HTTP_HOST="localhost").status_code == 200
