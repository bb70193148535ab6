"""The MCP endpoint over real HTTP with the SDK's client, in both protocol generations."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

GENERATIONS = {"2026-07-28", "2025-11-25"}


def test_lists_enabled_tools_with_format_argument(mcp):
    async def scenario(client):
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    results = mcp.run(scenario)
    assert set(results) == GENERATIONS
    for tools in results.values():
        assert {"explain_error", "list_error_codes", "upstream_broken", "book_table"} <= set(tools)
        assert "send_email" in tools  # the demo toolset is served too (test_demo_http.py)
        explain = tools["explain_error"]
        assert explain.input_schema["properties"]["format"]["enum"] == ["markdown", "json", "both"]
        assert explain.input_schema["required"] == ["code"]
        assert explain.annotations.read_only_hint is True
        assert "format" not in tools["upstream_broken"].input_schema["properties"]


def test_explain_error_explains_a_code(mcp):
    async def scenario(client):
        return await client.call_tool("explain_error", {"code": "rate_limit"})

    for result in mcp.run(scenario).values():
        assert not result.is_error
        assert result.content[0].text.startswith("# RATE_LIMIT")
        assert "retryable after 30s" in result.content[0].text
        assert result.structured_content["code"] == "RATE_LIMIT"


def test_unknown_tool_is_function_not_found_with_alternatives(mcp):
    async def scenario(client):
        return await client.call_tool("explain_eror", {"code": "X"})

    for result in mcp.run(scenario).values():
        assert result.is_error
        envelope = result.structured_content
        assert envelope["kind"] == "toolError:v1"
        assert envelope["code"] == "FUNCTION_NOT_FOUND"
        assert envelope["details"]["alternatives"][0] == "explain_error"
        assert "explain_error" in result.content[0].text


def test_an_unknown_tool_is_never_named_back_to_the_model_only_the_real_close_ones(mcp):
    async def scenario(client):
        return await client.call_tool("explain_eror", {"code": "X", "format": "both"})

    for result in mcp.run(scenario).values():
        said = json.dumps(result.structured_content) + "".join(c.text for c in result.content)
        assert "explain_eror" not in said
        assert result.structured_content["details"]["alternatives"][0] == "explain_error"
        assert "No tool of that name exists on this server." in said


def test_an_unknown_tool_without_close_names_gets_no_made_up_closest_matches(mcp):
    async def scenario(client):
        return await client.call_tool("zzzz", {})

    for result in mcp.run(scenario).values():
        assert result.structured_content["code"] == "FUNCTION_NOT_FOUND"
        assert "alternatives" not in result.structured_content.get("details", {})
        assert "closest matches" not in result.content[0].text
        assert "No tool of that name exists on this server." in result.content[0].text


def test_several_missing_arguments_become_one_question(mcp):
    async def scenario(client):
        return await client.call_tool("book_table", {"guest": "Ada"})

    for result in mcp.run(scenario).values():
        assert result.is_error
        envelope = result.structured_content
        assert envelope["kind"] == "needsInput:v1"
        assert envelope["code"] == "MISSING_PARAMETER"
        assert envelope["details"]["required_parameters"] == ["email", "people"]
        assert result.content[0].text.startswith("Question: ")
        assert "email and people" in result.content[0].text
        assert len(result.content) == 1  # markdown by default


def test_invalid_argument_names_the_format_and_never_echoes_the_value(mcp):
    async def scenario(client):
        return await client.call_tool(
            "book_table", {"guest": "Ada", "email": "not-an-address-4711", "people": 2, "format": "both"}
        )

    for result in mcp.run(scenario).values():
        envelope = result.structured_content
        assert envelope["code"] == "INVALID_PARAMETER"
        assert envelope["details"]["parameter"] == "email"
        assert envelope["details"]["provided_value"] == "[REDACTED]"
        assert "email address" in result.content[0].text
        assert all("4711" not in block.text for block in result.content)


def test_out_of_range_number_names_the_bounds(mcp):
    async def scenario(client):
        return await client.call_tool("book_table", {"guest": "Ada", "email": "ada@example.com", "people": 40})

    for result in mcp.run(scenario).values():
        assert result.structured_content["code"] == "INVALID_PARAMETER"
        assert "1 to 12" in result.content[0].text
        # A number the caller sent may be named ("got 30, the maximum is 14"); text never is.
        assert "The value 40 is not allowed." in result.content[0].text


@pytest.mark.parametrize(
    ("fmt", "mime_count"),
    [("markdown", 1), ("json", 1), ("both", 2)],
)
def test_format_argument_gates_error_blocks(mcp, fmt, mime_count):
    async def scenario(client):
        return await client.call_tool("explain_error", {"code": "NO_SUCH_CODE_AT_ALL", "format": fmt})

    for result in mcp.run(scenario).values():
        assert result.is_error
        assert result.structured_content["code"] == "INVALID_PARAMETER"
        assert len(result.content) == mime_count
        texts = [block.text for block in result.content]
        if fmt == "json":
            assert json.loads(texts[0])["code"] == "INVALID_PARAMETER"
        if fmt == "both":
            assert texts[0].startswith("Question:")
            assert json.loads(texts[1]) == result.structured_content


def test_unknown_code_in_explain_error_suggests_close_codes(mcp):
    async def scenario(client):
        return await client.call_tool("explain_error", {"code": "RATE_LIMITED"})

    for result in mcp.run(scenario).values():
        envelope = result.structured_content
        assert envelope["code"] == "INVALID_PARAMETER"
        assert "RATE_LIMIT" in envelope["details"]["alternatives"]
        assert "RATE_LIMIT" in result.content[0].text


def test_list_error_codes_by_category(mcp):
    async def scenario(client):
        return await client.call_tool("list_error_codes", {"category": "rate_limit", "format": "json"})

    for result in mcp.run(scenario).values():
        codes = json.loads(result.content[0].text)["codes"]
        assert [c["code"] for c in codes] == ["RATE_LIMIT"]
        assert codes[0]["retryable"] is True


def test_user_error_from_a_tool_is_rendered_from_the_catalog(mcp, caplog):
    async def scenario(client):
        return await client.call_tool("record_missing", {})

    with caplog.at_level("WARNING", logger="mcpserver.pipeline"):
        results = mcp.run(scenario)
    for result in results.values():
        envelope = result.structured_content
        assert envelope["code"] == "NOT_FOUND"
        assert "user-supplied-id-123" not in result.content[0].text
        assert "eventId" not in envelope.get("details", {})
    assert any("NOT_FOUND" in r.getMessage() for r in caplog.records)


def test_unexpected_argument_is_invalid_arguments(mcp):
    async def scenario(client):
        return await client.call_tool("explain_error", {"code": "NOT_FOUND", "verbose": True})

    for result in mcp.run(scenario).values():
        assert result.structured_content["code"] == "INVALID_ARGUMENTS"
        assert "explain_error" in result.content[0].text


def test_extra_arguments_a_schema_allows_are_not_passed_to_the_function(mcp):
    async def scenario(client):
        return await client.call_tool("record_missing", {"unused": 1})

    for result in mcp.run(scenario).values():
        assert result.structured_content["code"] == "NOT_FOUND"  # not a TypeError turned UNKNOWN_ERROR


def test_session_is_bound_to_the_token_that_opened_it(mcp, token_owner):
    """A 2025 session opened with one token answers 404 to a request with another (the SDK's owner check)."""
    from errcatalog.access.tokens import client_token_create

    _token, other_key = client_token_create(user=token_owner, name="other")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    opened = mcp.raw(body=json.dumps(initialize).encode(), headers={"Authorization": f"Bearer {mcp.key}"})
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    list_tools = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()

    stolen = mcp.raw(body=list_tools, headers={"Authorization": f"Bearer {other_key}", **session})
    assert stolen.status_code == 404
    own = mcp.raw(body=list_tools, headers={"Authorization": f"Bearer {mcp.key}", **session})
    assert own.status_code != 404


def test_tool_context_knows_the_client_and_can_log(mcp):
    logged = []

    async def on_log(params):
        logged.append(params.data)

    async def scenario(client):
        return await client.call_tool("whoami", {})

    results = mcp.run(scenario, logging_callback=on_log)
    assert results["2025-11-25"].structured_content == {"client": "tests", "session": True}
    assert results["2026-07-28"].structured_content == {"client": "tests", "session": False}
    assert "looking up the caller" in logged  # 2025 sends log messages without an opt-in


def test_invalid_tool_output_is_an_execution_failure_not_a_protocol_error(mcp):
    async def scenario(client):
        return await client.call_tool("broken_output", {})

    for result in mcp.run(scenario).values():
        assert result.is_error
        assert result.structured_content["code"] == "EXECUTION_FAILURE"
        assert "hologram" not in result.content[0].text
