"""Integer fields through the REST API: the catalog's one range each (``INTEGER_RANGES``), as an import checks."""

from __future__ import annotations

import pytest

from errcatalog.catalog.models import INT32_MAX
from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("jsonrpc_code", [INT32_MAX + 1, 2**63 - 1, -(2**31) - 1])
def test_the_rest_api_refuses_a_jsonrpc_code_an_import_would_refuse(catalog, staff_client, jsonrpc_code):
    body = {
        "code": "WIDE_CODE",
        "category": "server",
        "jsonrpc_code": jsonrpc_code,
        "variants": [{"message": "Too wide.", "instruction": ""}],
    }
    error = assert_api_error(staff_client.post("/api/v1/codes/", body, format="json"), 400, "invalid")
    assert list(error["fields"]) == ["jsonrpc_code"]
    rule = {"position": 900, "code": "SERVER_ERROR", "status_min": 500, "jsonrpc_code": jsonrpc_code}
    error = assert_api_error(staff_client.post("/api/v1/rules/", rule, format="json"), 400, "invalid")
    assert list(error["fields"]) == ["jsonrpc_code"]


def test_a_rule_position_past_32_bits_is_refused(catalog, staff_client):
    rule = {"position": INT32_MAX + 1, "code": "SERVER_ERROR", "status_min": 500}
    error = assert_api_error(staff_client.post("/api/v1/rules/", rule, format="json"), 400, "invalid")
    assert list(error["fields"]) == ["position"]
