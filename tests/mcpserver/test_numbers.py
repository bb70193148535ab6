"""Numbers no float can hold, sent as tool arguments over real HTTP: refused as invalid parameters, and counted.

JSON puts no bound on a number's size; Python parses a 309-digit integer as an ``int`` and ``1e400`` as infinity.
Neither is a value a tool can be given or a message can name (I-JSON, RFC 7493: numbers beyond an IEEE 754
double do not interoperate).
"""

from __future__ import annotations

import json

import pytest

from errcatalog.access.tokens import client_token_create
from tests.errcatalog.outcomes.test_prometheus import value
from tests.mcpserver.test_http import _call_2026, auth
from tests.mcpserver.test_metrics_http import exposition

pytestmark = pytest.mark.django_db(transaction=True)


def invalid_parameter_count(mcp_url: str, scraper: str) -> float:
    text = exposition(mcp_url, scraper)
    labels = {"tool": "book_table", "upstream": "", "code": "INVALID_PARAMETER"}
    return sum(value(text, "errcatalog_tool_errors_total", **labels, interactive=i) for i in ("true", "false"))


@pytest.mark.parametrize("people", [10**309, -(10**309), int("7" * 4299)], ids=["309 digits", "negative", "4299"])
def test_a_number_too_large_for_a_float_is_an_invalid_parameter_and_is_counted(mcp, staff_user, people):
    scraper = client_token_create(user=staff_user, name="prometheus")[1]
    before = invalid_parameter_count(mcp.url, scraper)

    async def scenario(client):
        return await client.call_tool("book_table", {"guest": "Ada", "email": "ada@example.com", "people": people})

    for result in mcp.run(scenario).values():
        assert result.is_error
        assert result.structured_content["code"] == "INVALID_PARAMETER"
        assert result.structured_content["details"]["parameter"] == "people"
        assert "1 to 12" in result.content[0].text
        assert "77777" not in result.content[0].text and "00000" not in result.content[0].text
    after = invalid_parameter_count(mcp.url, scraper)
    assert after - before == 2  # once per protocol generation: the call is recorded like any refused one


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_a_number_that_parses_as_infinity_is_an_invalid_parameter(mcp, number):
    params = {"name": "book_table", "arguments": {"guest": "Ada", "email": "ada@example.com", "people": 123456789}}
    body, headers = _call_2026(params, "book_table")
    body = body.replace(b"123456789", number.encode())
    response = mcp.raw(body=body, headers=auth(mcp.key) | headers)
    assert response.status_code == 200
    result = json.loads(response.text)["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["code"] == "INVALID_PARAMETER"
    assert "inf" not in result["content"][0]["text"].lower()
