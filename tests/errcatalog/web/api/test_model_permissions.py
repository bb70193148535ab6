"""Catalog writes follow Django's model permissions, per model and verb, for sessions and tokens alike.

Each case is run twice per way of authenticating: by a staff user who holds every catalog permission except the
ones the request needs (refused with 403, nothing changes), then after those are granted (it goes through).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from django.forms.models import model_to_dict
from rest_framework.test import APIClient

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from tests.errcatalog.web.api.error_shape import assert_api_error
from tests.support.api import CATALOG_MODELS, bearer_client, grant

pytestmark = pytest.mark.django_db

ALL_CATALOG_PERMISSIONS = tuple(
    f"{action}_{model._meta.model_name}" for model in CATALOG_MODELS for action in ("add", "change", "delete")
)
VARIANT = {"message": "The quota is used up.", "instruction": "Wait until tomorrow."}


def _catalog_state() -> list[Any]:
    """Every catalog row's values: a refused write must leave all of them as they were."""
    return [
        sorted((model_to_dict(row) for row in model.objects.all()), key=lambda r: r["id"]) for model in CATALOG_MODELS
    ]


@pytest.fixture
def spare_code(catalog) -> ErrorCode:
    """A code no rule points to, with one variant, so it can be deleted."""
    code = ErrorCode.objects.create(code="QUOTA_EXCEEDED", category="rate_limit")
    TemplateVariant.objects.create(error_code=code, **VARIANT)
    return code


@pytest.fixture
def hint(catalog) -> ParameterHint:
    return ParameterHint.objects.create(tool="send_email", parameter="cc", description="who else gets a copy")


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    url: str
    body: dict | None
    needs: tuple[str, ...]
    ok: int
    fixtures: tuple[str, ...] = field(default=())


def _rule_url(request) -> str:
    return f"/api/v1/rules/{ClassificationRule.objects.order_by('position').first().pk}/"


CASES = [
    # Error codes and their nested variants.
    Case(
        "create a code with a variant",
        "post",
        "/api/v1/codes/",
        {"code": "QUOTA_GONE", "category": "rate_limit", "variants": [VARIANT]},
        ("add_errorcode", "add_templatevariant"),
        201,
    ),
    Case(
        "replace a code's fields",
        "put",
        "/api/v1/codes/QUOTA_EXCEEDED/",
        {"code": "QUOTA_EXCEEDED", "category": "rate_limit", "retryable": True},
        ("change_errorcode",),
        200,
        ("spare_code",),
    ),
    Case(
        "change a code's field",
        "patch",
        "/api/v1/codes/QUOTA_EXCEEDED/",
        {"retryable": True},
        ("change_errorcode",),
        200,
        ("spare_code",),
    ),
    Case(
        "delete a code with its variant",
        "delete",
        "/api/v1/codes/QUOTA_EXCEEDED/",
        None,
        ("delete_errorcode", "delete_templatevariant"),
        204,
        ("spare_code",),
    ),
    Case(
        "add a variant to a code",
        "patch",
        "/api/v1/codes/QUOTA_EXCEEDED/",
        {"variants": [{**VARIANT, "name": "terse", "message": "Quota used up."}]},
        ("change_errorcode", "add_templatevariant"),
        200,
        ("spare_code",),
    ),
    Case(
        "reword a variant of a code",
        "patch",
        "/api/v1/codes/QUOTA_EXCEEDED/",
        {"variants": [{"name": "default", "message": "The daily quota is used up."}]},
        ("change_errorcode", "change_templatevariant"),
        200,
        ("spare_code",),
    ),
    Case(
        "replace a code's variants, dropping one",
        "put",
        "/api/v1/codes/QUOTA_EXCEEDED/",
        {"code": "QUOTA_EXCEEDED", "category": "rate_limit", "variants": [{**VARIANT, "name": "terse"}]},
        ("change_errorcode", "add_templatevariant", "delete_templatevariant"),
        200,
        ("spare_code",),
    ),
    # Parameter hints.
    Case(
        "create a hint",
        "post",
        "/api/v1/hints/",
        {"tool": "send_email", "parameter": "bcc"},
        ("add_parameterhint",),
        201,
    ),
    Case(
        "replace a hint",
        "put",
        "hint",
        {"tool": "send_email", "parameter": "cc", "description": "copies"},
        ("change_parameterhint",),
        200,
        ("hint",),
    ),
    Case("change a hint", "patch", "hint", {"example": "a@b.example"}, ("change_parameterhint",), 200, ("hint",)),
    Case("delete a hint", "delete", "hint", None, ("delete_parameterhint",), 204, ("hint",)),
    # Classification rules.
    Case(
        "create a rule",
        "post",
        "/api/v1/rules/",
        {"position": 9999, "code": "NOT_FOUND", "status_min": 410, "status_max": 410},
        ("add_classificationrule",),
        201,
    ),
    Case(
        "replace a rule",
        "put",
        "rule",
        {"position": 9998, "code": "NOT_FOUND", "status_min": 410, "status_max": 410},
        ("change_classificationrule",),
        200,
    ),
    Case("change a rule", "patch", "rule", {"note": "checked"}, ("change_classificationrule",), 200),
    Case("delete a rule", "delete", "rule", None, ("delete_classificationrule",), 204),
]


def _url(case: Case, request) -> str:
    if case.url == "hint":
        return f"/api/v1/hints/{ParameterHint.objects.get(tool='send_email', parameter='cc').pk}/"
    if case.url == "rule":
        return _rule_url(request)
    return case.url


def _client(user, auth: str) -> APIClient:
    if auth == "token":
        return bearer_client(client_token_create(user=user, name="editor-key", can_write_catalog=True)[1])
    client = APIClient()
    client.force_login(user)
    return client


@pytest.mark.parametrize("auth", ["session", "token"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_write_needs_its_model_permissions(request, catalog, django_user_model, case, auth):
    for fixture in case.fixtures:
        request.getfixturevalue(fixture)
    user = django_user_model.objects.create_user(username="staff-editor", password="pw", is_staff=True)
    grant(user, *(p for p in ALL_CATALOG_PERMISSIONS if p not in case.needs))
    client = _client(user, auth)
    url = _url(case, request)
    before = _catalog_state()

    # Each needed permission on its own is missing once; every one of them is named in the refusal.
    refused = getattr(client, case.method)(url, case.body, format="json")
    error = assert_api_error(refused, 403, "permission_denied")
    assert any(f"errcatalog.{needed}" in error["message"] for needed in case.needs), error
    assert _catalog_state() == before

    for index, needed in enumerate(case.needs):
        grant(user, *case.needs[:index], *case.needs[index + 1 :])
        assert getattr(client, case.method)(url, case.body, format="json").status_code == 403, needed
        assert _catalog_state() == before
        user.user_permissions.clear()
        grant(user, *(p for p in ALL_CATALOG_PERMISSIONS if p not in case.needs))

    grant(user, *case.needs)
    response = getattr(client, case.method)(url, case.body, format="json")
    assert response.status_code == case.ok, response.content
    assert _catalog_state() != before


@pytest.mark.parametrize("auth", ["session", "token"])
def test_a_staff_user_without_any_catalog_permission_reads_but_cannot_write(catalog, django_user_model, auth):
    user = django_user_model.objects.create_user(username="staff-reader", password="pw", is_staff=True)
    client = _client(user, auth)

    assert client.get("/api/v1/codes/").status_code == 200
    assert client.get("/api/v1/codes/NOT_FOUND/").status_code == 200
    assert client.get("/api/v1/hints/").status_code == 200
    assert client.get("/api/v1/rules/").status_code == 200
    assert client.post("/api/v1/render/", {"code": "NOT_FOUND"}, format="json").status_code == 200
    assert client.post("/api/v1/classify/", {"status_code": 404}, format="json").status_code == 200
    error = assert_api_error(
        client.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json"), 403, "permission_denied"
    )
    assert "errcatalog.change_errorcode" in error["message"]
    assert not ErrorCode.objects.get(code="NOT_FOUND").retryable


def test_a_token_never_exceeds_its_user_nor_its_own_write_flag(catalog, catalog_editor, django_user_model):
    # The user may write, but the key was made read-only: the key stays read-only.
    read_only = bearer_client(client_token_create(user=catalog_editor, name="ro")[1])
    error = assert_api_error(
        read_only.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json"), 403, "permission_denied"
    )
    assert "read-only" in error["message"]

    # The key may write, but its user lost the permission: the key loses it too.
    key = client_token_create(user=catalog_editor, name="rw", can_write_catalog=True)[1]
    writer = bearer_client(key)
    assert writer.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json").status_code == 200
    catalog_editor.user_permissions.clear()
    assert_api_error(
        writer.patch("/api/v1/codes/NOT_FOUND/", {"retryable": False}, format="json"), 403, "permission_denied"
    )
    assert ErrorCode.objects.get(code="NOT_FOUND").retryable


def test_a_superuser_holds_every_permission(catalog, staff_user):
    client = _client(staff_user, "token")
    assert client.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json").status_code == 200
