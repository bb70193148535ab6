"""Bodies the API cannot take are refused in its JSON error shape before parsing; no error is ever a debug page."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from errcatalog.input_limits import json_depth_exceeds
from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

NESTED_10000 = b"[" * 10_000 + b"]" * 10_000


def post_raw(client, path: str, body: bytes):
    return client.generic("POST", path, body, content_type="application/json")


@pytest.mark.parametrize("path", ["/api/v1/render/", "/api/v1/classify/", "/api/v1/codes/"])
def test_ten_thousand_levels_of_nesting_are_a_400(catalog, staff_client, path):
    error = assert_api_error(post_raw(staff_client, path, NESTED_10000), 400, "too_deep")

    assert "too deeply" in error["message"]


def test_deep_objects_inside_a_valid_request_are_refused_too(catalog, staff_client):
    deep = {"code": "NOT_FOUND", "partial_result": json.loads("[" * 500 + "]" * 500)}

    assert_api_error(post_raw(staff_client, "/api/v1/render/", json.dumps(deep).encode()), 400, "too_deep")


def test_an_oversize_body_is_a_413(catalog, staff_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"code": "NOT_FOUND", "tool_name": "x" * 20_000}).encode()

    error = assert_api_error(post_raw(staff_client, "/api/v1/render/", body), 413, "too_large")

    assert "larger than" in error["message"]


def test_a_normal_body_still_works(catalog, staff_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = {"code": "NOT_FOUND", "tool_name": "get_weather", "partial_result": {"rows": [[1, 2], [3, [4]]]}}

    response = post_raw(staff_client, "/api/v1/render/", json.dumps(body).encode())

    assert response.status_code == 200, response.content
    assert response.json()["code"] == "NOT_FOUND"


def test_brackets_inside_strings_do_not_count_as_nesting(catalog, staff_client):
    body = {"code": "NOT_FOUND", "tool_name": "get_weather", "partial_result": "[" * 200 + '\\"{' * 100}

    response = post_raw(staff_client, "/api/v1/render/", json.dumps(body).encode())

    assert response.status_code == 200, response.content


def test_invalid_json_is_still_a_parse_error_in_the_api_shape(catalog, staff_client):
    assert_api_error(post_raw(staff_client, "/api/v1/render/", b'{"code": "NOT_FOUND",'), 400, "parse_error")


@pytest.mark.parametrize(
    ("body", "limit", "exceeds"),
    [
        (b"[]", 1, False),
        (b"[[]]", 1, True),
        (b'{"a": [{"b": []}]}', 4, False),
        (b'{"a": [{"b": []}]}', 3, True),
        (b'"[[[[[["', 1, False),
        (b'["\\"[[[["]', 1, False),
        (b"]]]][[", 2, False),
    ],
)
def test_depth_scan(body, limit, exceeds):
    assert json_depth_exceeds(body, limit) is exceeds


def test_a_failing_view_answers_json_not_a_debug_page(catalog, staff_user, settings, monkeypatch):
    settings.DEBUG = True

    def broken(*args, **kwargs):
        raise RuntimeError("database password is hunter2")

    monkeypatch.setattr("errcatalog.web.api.views.classify.classification", broken)
    client = APIClient(raise_request_exception=False)
    client.force_login(staff_user)

    response = client.post("/api/v1/classify/", {"status_code": 500}, format="json")

    assert_api_error(response, 500, "server_error")
    assert response["Content-Type"] == "application/json"
    assert b"hunter2" not in response.content and b"Traceback" not in response.content


@given(
    st.recursive(
        st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_the_scan_measures_the_depth_of_any_json_exactly(value):
    def depth(node) -> int:
        if isinstance(node, list):
            return 1 + max(map(depth, node), default=0)
        if isinstance(node, dict):
            return 1 + max(map(depth, node.values()), default=0)
        return 0

    body = json.dumps(value).encode()
    actual = depth(value)
    assert not json_depth_exceeds(body, actual)
    if actual:
        assert json_depth_exceeds(body, actual - 1)
