"""The HTTP edge of /mcp: auth, Host/Origin, size limit, bad requests, rate limit, routing."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from errcatalog.access.tokens import client_token_create, client_token_revoke
from mcpserver.auth import HOST_VERDICTS_KEPT, UNAUTHORIZED_MESSAGE

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer ec_wrong"}, {"Authorization": "Basic abc"}])
def test_missing_or_wrong_token_is_401_with_one_message(mcp, headers):
    response = mcp.raw(body=json.dumps(INITIALIZE).encode(), headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": UNAUTHORIZED_MESSAGE}
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_revoked_token_is_401(mcp, token_owner):
    token, key = client_token_create(user=token_owner, name="soon-revoked")
    assert mcp.raw(body=json.dumps(INITIALIZE).encode(), headers=auth(key)).status_code == 200
    client_token_revoke(token=token)
    response = mcp.raw(body=json.dumps(INITIALIZE).encode(), headers=auth(key))
    assert response.status_code == 401
    assert response.json() == {"error": UNAUTHORIZED_MESSAGE}


def test_scoped_token_sees_and_calls_only_its_tools(mcp, token_owner):
    _token, key = client_token_create(user=token_owner, name="scoped", tool_scope=["explain_error"])

    async def scenario(client):
        names = [tool.name for tool in (await client.list_tools()).tools]
        denied = await client.call_tool("list_error_codes", {})
        allowed = await client.call_tool("explain_error", {"code": "NOT_FOUND"})
        return names, denied, allowed

    for names, denied, allowed in mcp.run(scenario, key=key).values():
        assert names == ["explain_error"]
        assert denied.structured_content["code"] == "FUNCTION_NOT_FOUND"
        assert not allowed.is_error


def test_a_key_that_calls_no_tool_lists_none_and_calls_none(mcp, token_owner):
    # ``token_create --no-tools``: a key for reading the catalog (its resources stay readable).
    _token, key = client_token_create(user=token_owner, name="reader", can_call_tools=False)

    async def scenario(client):
        names = [tool.name for tool in (await client.list_tools()).tools]
        denied = await client.call_tool("explain_error", {"code": "NOT_FOUND"})
        resources = (await client.list_resources()).resources
        return names, denied, resources

    for names, denied, resources in mcp.run(scenario, key=key).values():
        assert names == []
        assert denied.is_error and denied.structured_content["code"] == "FUNCTION_NOT_FOUND"
        assert resources


def test_a_scoped_token_gets_the_same_answer_for_a_hidden_tool_as_for_a_missing_one(mcp, token_owner):
    _token, key = client_token_create(user=token_owner, name="scoped", tool_scope=["explain_error"])

    async def scenario(client):
        # Both names are as far from the one tool the token may call, so both answers are the same.
        hidden = await client.call_tool("list_error_codes", {"format": "json"})
        missing = await client.call_tool("list_error_cotes", {"format": "json"})
        return hidden, missing

    for hidden, missing in mcp.run(scenario, key=key).values():
        assert hidden.is_error and missing.is_error
        assert hidden.structured_content == missing.structured_content
        assert [c.text for c in hidden.content] == [c.text for c in missing.content]
        # Neither name is close to the one tool the token may call: no alternatives either way.
        assert "alternatives" not in hidden.structured_content.get("details", {})
        assert "list_error_codes" not in json.dumps(hidden.structured_content) + hidden.content[0].text


def test_foreign_host_is_refused(mcp):
    response = mcp.raw(body=json.dumps(INITIALIZE).encode(), headers={"Host": "evil.example.com", **auth(mcp.key)})
    assert response.status_code == 421


def test_foreign_origin_is_refused(mcp):
    response = mcp.raw(
        body=json.dumps(INITIALIZE).encode(), headers={"Origin": "http://evil.example.com", **auth(mcp.key)}
    )
    assert response.status_code == 403


def _list_tools_2026() -> tuple[bytes, dict]:
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    return json.dumps(body).encode(), {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "127.0.0.1.evil.example.com:80"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "http://localhost.evil.example.com:80"}, 403),
        ({"Origin": "http://localhost:6274"}, 200),  # MCP Inspector's page on any local port is welcome
        # Whole host names and numeric ports, not prefixes of the allowed "127.0.0.1:*" / "http://localhost:*".
        ({"Host": "127.0.0.1:8000.evil.example.com"}, 421),
        ({"Host": "127.0.0.1:80@evil.example.com"}, 421),
        ({"Host": "127.0.0.1:"}, 421),
        ({"Origin": "http://localhost:6274.evil.example.com"}, 403),
        ({"Origin": "http://localhost:"}, 403),
        ({"Origin": "http://LocalHost:6274"}, 200),  # host names are case-insensitive
    ],
)
def test_host_and_origin_are_checked_on_the_stateless_generation_too(mcp, extra, status):
    # The guard is the endpoint's only Host/Origin check (the session managers' own is off), so the 2026-07-28
    # route must refuse exactly what the 2025 route refuses.
    body, headers = _list_tools_2026()
    response = mcp.raw(body=body, headers=auth(mcp.key) | headers | extra)
    assert response.status_code == status
    if status == 200:
        assert response.json()["result"]["tools"]


def test_host_verdicts_stay_right_past_what_the_guard_remembers_of_them(mcp):
    body, headers = _list_tools_2026()
    allowed = auth(mcp.key) | headers
    for n in range(HOST_VERDICTS_KEPT + 10):  # a client cycling through foreign Host values
        assert mcp.raw(body=body, headers=allowed | {"Host": f"evil{n}.example.com"}).status_code == 421
    assert mcp.raw(body=body, headers=allowed).status_code == 200
    assert mcp.raw(body=body, headers=allowed | {"Host": "evil0.example.com"}).status_code == 421
    assert mcp.raw(body=body, headers=allowed | {"Origin": "http://evil0.example.com"}).status_code == 403


def test_host_is_checked_before_the_token(mcp):
    body, headers = _list_tools_2026()
    response = mcp.raw(body=body, headers=headers | {"Host": "evil.example.com"})
    assert response.status_code == 421


def test_oversize_body_is_413_json(mcp, settings):
    body = json.dumps({**INITIALIZE, "padding": "x" * (settings.MCP["MAX_BODY_BYTES"] + 1)}).encode()
    response = mcp.raw(body=body, headers=auth(mcp.key))
    assert response.status_code == 413
    assert "larger" in response.json()["error"]


@pytest.mark.parametrize("version", [None, "2026-07-28"])
def test_malformed_json_is_a_parse_error(mcp, version):
    headers = auth(mcp.key) | ({"MCP-Protocol-Version": version} if version else {})
    response = mcp.raw(body=b'{"jsonrpc": "2.0", "id": 1, "method": ', headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


@pytest.mark.parametrize("version", [None, "2026-07-28"])
def test_wrong_content_type_is_refused_cleanly(mcp, version):
    headers = auth(mcp.key) | {"Content-Type": "text/plain"} | ({"MCP-Protocol-Version": version} if version else {})
    response = mcp.raw(body=json.dumps(INITIALIZE).encode(), headers=headers)
    assert response.status_code in (400, 415)
    assert "Traceback" not in response.text


def test_unknown_method_is_method_not_found(mcp):
    headers = auth(mcp.key) | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/frobnicate"}
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/frobnicate",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    response = mcp.raw(body=json.dumps(body).encode(), headers=headers)
    assert response.status_code in (200, 400, 404)
    assert response.json()["error"]["code"] == -32601


def test_get_without_session_is_not_a_server_error(mcp):
    response = mcp.raw("GET", headers=auth(mcp.key))
    assert 400 <= response.status_code < 500
    assert "Traceback" not in response.text


def test_other_paths_go_to_django(mcp):
    response = httpx2.get(mcp.url.replace("/mcp", "/mcpx"), timeout=5)
    assert response.status_code == 404
    assert "json" not in response.headers.get("content-type", "") or "error" not in response.text


def test_rate_limit_is_a_catalog_result_with_retry_after(mcp, settings):
    settings.MCP = {**settings.MCP, "RATE_LIMIT_PER_MINUTE": 2}

    async def scenario():
        async with mcp.client(mode="auto") as client:
            return [await client.call_tool("explain_error", {"code": "NOT_FOUND"}) for _ in range(3)]

    first, second, third = asyncio.run(scenario())
    assert not first.is_error and not second.is_error
    envelope = third.structured_content
    assert envelope["code"] == "RATE_LIMIT"
    assert envelope["retryable"] is True
    assert 1 <= envelope["details"]["retryAfterSeconds"] <= 60
    assert str(envelope["details"]["retryAfterSeconds"]) in third.content[0].text


def test_jsonrpc_channel_sends_input_errors_as_invalid_params(mcp, settings):
    settings.ERRCATALOG = {**settings.ERRCATALOG, "INPUT_ERROR_CHANNEL": "jsonrpc"}
    from mcp.shared.exceptions import MCPError

    async def scenario(client):
        with pytest.raises(MCPError) as caught:
            await client.call_tool("book_table", {"guest": "Ada", "people": 2})
        return caught.value

    for error in mcp.run(scenario).values():
        assert error.code == -32602
        assert error.message.startswith("Question: ")
        assert error.data["error_category"] == "missing_parameter"
        assert error.data["required_parameter"] == "email"
        assert error.data["tool_name"] == "book_table"
        assert error.data["retry_capable"] is True


def _call_2026(params: dict, name: str | None) -> tuple[bytes, dict]:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {**params, "_meta": envelope}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    return json.dumps(body).encode(), headers | ({"Mcp-Name": name} if name is not None else {})


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"name": "book_table", "arguments": "guest=Ada"}, "book_table"),
        ({"name": "book_table", "arguments": ["Ada"]}, "book_table"),
        ({"name": "book_table", "inputResponses": "yes"}, "book_table"),
        ({"arguments": {}}, None),
    ],
)
def test_a_malformed_2026_call_is_invalid_params_with_nothing_of_it_on_the_wire(mcp, params, name):
    # 2026-07-28 calls are served by our own server middleware (``ModernToolCalls``), which must refuse what the
    # SDK's runner refuses, the way it refuses it: INVALID_PARAMS, no pydantic text, no echo of the request.
    body, headers = _call_2026(params, name)
    response = mcp.raw(body=body, headers=auth(mcp.key) | headers)
    assert response.status_code in (200, 400)
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {"code": -32602, "message": "Invalid request parameters"},
    }


def test_a_well_formed_2026_call_is_answered_by_the_tool(mcp):
    body, headers = _call_2026({"name": "book_table", "arguments": {"guest": "Ada", "people": 2}}, "book_table")
    answer = mcp.raw(body=body, headers=auth(mcp.key) | headers).json()["result"]
    assert answer["resultType"] == "complete"
    assert answer["structuredContent"]["code"] == "MISSING_PARAMETER"
    assert answer["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "errcatalog", "version": "1"}}
