"""Who may read and write through the API: 401 without credentials, 403 without rights."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from errcatalog.access.tokens import client_token_create, client_token_revoke
from errcatalog.catalog.models import ClassificationRule, ErrorCode
from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

NEW_CODE = {
    "code": "QUOTA_EXCEEDED",
    "category": "rate_limit",
    "retryable": True,
    "variants": [{"message": "The quota is used up.", "instruction": "Wait until tomorrow."}],
}


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/v1/codes/"),
        ("get", "/api/v1/codes/NOT_FOUND/"),
        ("post", "/api/v1/codes/"),
        ("get", "/api/v1/hints/"),
        ("get", "/api/v1/rules/"),
        ("post", "/api/v1/render/"),
        ("post", "/api/v1/classify/"),
    ],
)
def test_anonymous_callers_get_401_with_a_bearer_challenge(catalog, anonymous, method, url):
    response = getattr(anonymous, method)(url, {}, format="json")

    assert_api_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_key_gets_401(catalog, bearer):
    response = bearer("ec_" + "x" * 43).get("/api/v1/codes/")

    error = assert_api_error(response, 401, "authentication_failed")
    assert "x" * 10 not in error["message"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_malformed_authorization_header_gets_401(catalog, anonymous):
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer two parts")
    assert_api_error(anonymous.get("/api/v1/codes/"), 401, "authentication_failed")


def test_a_revoked_key_gets_401(catalog, plain_user, bearer):
    token, raw_key = client_token_create(user=plain_user, name="laptop")
    client = bearer(raw_key)
    assert client.get("/api/v1/codes/").status_code == 200

    client_token_revoke(token=token)

    assert_api_error(client.get("/api/v1/codes/"), 401, "authentication_failed")


def test_a_read_only_token_reads_but_cannot_write(catalog, reader_client):
    assert reader_client.get("/api/v1/codes/").status_code == 200
    assert reader_client.get("/api/v1/codes/NOT_FOUND/").status_code == 200
    assert reader_client.post("/api/v1/render/", {"code": "NOT_FOUND"}, format="json").status_code == 200
    assert reader_client.post("/api/v1/classify/", {"status_code": 404}, format="json").status_code == 200

    for response in (
        reader_client.post("/api/v1/codes/", NEW_CODE, format="json"),
        reader_client.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json"),
        reader_client.delete("/api/v1/codes/NOT_FOUND/"),
        reader_client.post("/api/v1/hints/", {"tool": "send_email", "parameter": "to"}, format="json"),
        reader_client.delete(f"/api/v1/rules/{ClassificationRule.objects.first().pk}/"),
    ):
        error = assert_api_error(response, 403, "permission_denied")
        assert "write" in error["message"]
    assert not ErrorCode.objects.filter(code="QUOTA_EXCEEDED").exists()
    assert not ErrorCode.objects.get(code="NOT_FOUND").retryable


def test_a_token_with_write_rights_writes(catalog, writer_client):
    assert writer_client.post("/api/v1/codes/", NEW_CODE, format="json").status_code == 201
    assert ErrorCode.objects.filter(code="QUOTA_EXCEEDED").exists()


def test_a_staff_session_writes(catalog, staff_client):
    assert staff_client.post("/api/v1/codes/", NEW_CODE, format="json").status_code == 201


def test_a_non_staff_session_reads_but_cannot_write(catalog, user_client):
    assert user_client.get("/api/v1/codes/").status_code == 200
    assert_api_error(user_client.post("/api/v1/codes/", NEW_CODE, format="json"), 403, "permission_denied")


def test_session_writes_need_the_csrf_token(catalog, staff_user):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(staff_user)

    assert_api_error(client.post("/api/v1/codes/", NEW_CODE, format="json"), 403, "permission_denied")
