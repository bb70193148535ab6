"""Numbers no double holds, sent to the REST API: a 400 naming the field, never a 500.

Python's JSON decoder parses a 309-digit integer as an ``int`` (``math.isfinite`` raises OverflowError on it) and
``1e400`` as infinity; an integer of more than 4,300 digits cannot even be turned into text.
"""

from __future__ import annotations

import pytest

from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

HUGE = "1" + "0" * 309


def post_raw(client, path: str, body: str):
    return client.generic("POST", path, body.encode(), content_type="application/json")


@pytest.mark.parametrize("number", [HUGE, "-" + HUGE, "1e400", "-1e400"])
@pytest.mark.parametrize("field", ["received", "minimum", "maximum"])
def test_a_number_no_double_holds_is_refused_where_a_render_would_show_it(catalog, staff_client, number, field):
    body = '{"code": "INVALID_PARAMETER", "tool_name": "book", "parameters": [{"name": "people", "%s": %s}]}'
    response = post_raw(staff_client, "/api/v1/render/", body % (field, number))
    error = assert_api_error(response, 400, "invalid")
    assert list(error["fields"]) == [f"parameters.0.{field}"]


def test_a_long_but_finite_number_renders_without_naming_it(catalog, staff_client):
    body = '{"code": "INVALID_PARAMETER", "tool_name": "book", "parameters": [{"name": "people", "received": %s}]}'
    response = post_raw(staff_client, "/api/v1/render/", body % ("9" * 300))
    assert response.status_code == 200, response.content
    assert "99999" not in response.content.decode()


@pytest.mark.parametrize("number", [HUGE, "1e400", "7" * 5000])
def test_numbers_in_a_partial_result_never_break_the_render(catalog, staff_client, number):
    body = '{"code": "UPSTREAM_ERROR", "face": "tool_result", "format": "json", "partial_result": {"n": %s, "ok": 1}}'
    response = post_raw(staff_client, "/api/v1/render/", body % number)
    assert response.status_code in (200, 400), response.content
    assert number[:20] not in response.content.decode()


@pytest.mark.parametrize("number", ["7" * 5000, "1e400"])
def test_a_number_past_the_decoders_limits_in_classify_is_a_400(catalog, staff_client, number):
    response = post_raw(staff_client, "/api/v1/classify/", f'{{"jsonrpc_code": {number}}}')
    assert response.status_code == 400, response.content
