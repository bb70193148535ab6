"""Seed 004 (the MCP error response format spike), example by example, through the public faces.

The seed's JSON-RPC code table, its MCP-specific codes, FastMCP's exception mapping and the recommended
``CallToolResult(isError=True)`` pattern are rebuilt through the MCP endpoint (raw HTTP for protocol-level
errors, the SDK's real client for tool calls), the REST API's render and classify endpoints, and compared with
the seed's text. Where errcatalog deliberately differs the test's name says ``differs_because_...`` and it
asserts the documented difference (README, "Seeds: deliberate differences").
"""

from __future__ import annotations

import json

import pytest

from tests.support.seeds import post, tool_result

pytestmark = pytest.mark.django_db(transaction=True)

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
# The seed's "Standard JSON-RPC error codes" and the catalog codes that stand for them.
STANDARD_CODES = {
    "PARSE_ERROR": -32700,
    "INVALID_REQUEST": -32600,
    "METHOD_NOT_FOUND": -32601,
    "INVALID_PARAMS": -32602,
    "INTERNAL_ERROR": -32603,
}
# The seed's table of FastMCP's middleware: exception -> JSON-RPC code.
FASTMCP_TABLE = {
    "FileNotFoundError": -32001,
    "PermissionError": -32000,
    "TimeoutError": -32000,
    "ValueError": -32602,
    "TypeError": -32602,
    "RuntimeError": -32603,  # "Other exceptions"
}
RESERVED = range(-32768, -32000 + 1)


def auth(mcp) -> dict:
    return {"Authorization": f"Bearer {mcp.key}"}


def error_of(response) -> dict:
    """The JSON-RPC error (or result) of a JSON or SSE answer."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return json.loads(data[-1])
    return response.json()


def jsonrpc_face(rest, code: str, **options) -> dict:
    return post(rest, "/api/v1/render/", code=code, face="jsonrpc", request_id=1, **options)["output"]["error"]


# --- Finding 1: the JSON-RPC error format and codes ---------------------------------------------------------


def test_parse_error_is_minus_32700_with_the_jsonrpc_shape(mcp):
    answer = error_of(mcp.raw(body=b"{not json", headers=auth(mcp)))
    assert set(answer) == {"jsonrpc", "id", "error"} and answer["jsonrpc"] == "2.0"
    assert answer["error"] == {"code": -32700, "message": "Parse error"}


def test_invalid_request_is_minus_32600(mcp):
    answer = error_of(mcp.raw(body=b'{"jsonrpc": "2.0", "id": 1}', headers=auth(mcp)))
    assert answer["error"]["code"] == -32600


def test_unknown_method_is_minus_32601(mcp):
    headers = auth(mcp) | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/frobnicate"}
    body = {"jsonrpc": "2.0", "id": 7, "method": "resources/frobnicate", "params": {"_meta": MODERN_META}}
    answer = error_of(mcp.raw(body=json.dumps(body).encode(), headers=headers))
    assert answer["id"] == 7 and answer["error"]["code"] == -32601


def test_the_catalogs_standard_codes_render_the_seeds_numbers(rest):
    for code, number in STANDARD_CODES.items():
        error = jsonrpc_face(rest, code)
        assert error["code"] == number, code
        assert set(error) <= {"code", "message", "data"} and error["message"]


def test_unsupported_protocol_version_differs_because_initialize_negotiates_a_supported_version(mcp):
    # The seed quotes an error {-32602, "Unsupported protocol version", data: {supported, requested}}; the MCP
    # lifecycle (2025-06-18 onwards) has the server answer initialize with a version it supports instead, and the
    # client decides whether to go on.
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "1.0.0", "capabilities": {}, "clientInfo": {"name": "seed-004", "version": "1"}},
    }
    answer = error_of(mcp.raw(body=json.dumps(body).encode(), headers=auth(mcp)))
    assert "error" not in answer
    assert answer["result"]["protocolVersion"] == "2025-11-25"


# --- MCP-specific codes: -32001 and -32000 ------------------------------------------------------------------


def test_missing_resource_differs_because_mcp_defines_minus_32002_and_2026_uses_invalid_params(rest):
    # The seed's -32001 "Resource not found" is FastMCP's; the MCP specification says -32002 on 2025-era
    # requests and -32602 on 2026-07-28.
    assert jsonrpc_face(rest, "RESOURCE_NOT_FOUND", protocol_version="2025-11-25")["code"] == -32002
    assert jsonrpc_face(rest, "RESOURCE_NOT_FOUND", protocol_version="2026-07-28")["code"] == -32602


def test_fastmcp_legacy_codes_reproduce_the_seeds_minus_32001_and_minus_32000_as_an_option(rest):
    assert jsonrpc_face(rest, "RESOURCE_NOT_FOUND", legacy_codes=True)["code"] == -32001
    assert jsonrpc_face(rest, "NOT_FOUND", legacy_codes=True)["code"] == -32001
    assert jsonrpc_face(rest, "PERMISSION_DENIED", legacy_codes=True)["code"] == -32000
    assert jsonrpc_face(rest, "TIMEOUT", legacy_codes=True)["code"] == -32000


def test_permission_and_timeout_differ_because_invented_codes_stay_outside_the_reserved_range(rest, settings):
    # -32000 is inside JSON-RPC's reserved -32768..-32000 (for implementation-defined server errors); the
    # catalog's own numbers for these stay outside it unless the legacy option is on, which is off by default.
    assert settings.ERRCATALOG["LEGACY_JSONRPC_CODES"] is False
    for code in ("PERMISSION_DENIED", "TIMEOUT", "NOT_FOUND"):
        assert jsonrpc_face(rest, code)["code"] not in RESERVED, code


# --- Finding 2: FastMCP's exception mapping -----------------------------------------------------------------


def test_file_not_found_permission_and_other_exceptions_map_as_the_seeds_table(rest):
    # FileNotFoundError -> -32001 and PermissionError -> -32000 with the legacy option (the seed's numbers);
    # any other exception -> -32603, by default.
    expected = {
        "FileNotFoundError": ("RESOURCE_NOT_FOUND", True),
        "PermissionError": ("PERMISSION_DENIED", True),
        "RuntimeError": ("UNKNOWN_ERROR", False),
    }
    for exception, (code, legacy) in expected.items():
        assert post(rest, "/api/v1/classify/", exception=[exception])["code"] == code, exception
        assert jsonrpc_face(rest, code, legacy_codes=legacy)["code"] == FASTMCP_TABLE[exception], exception


def test_timeout_error_differs_because_a_timeout_is_a_retryable_network_error(rest):
    # FastMCP folds TimeoutError into the generic -32000; the catalog classifies it with seed 000's timeouts.
    answer = post(rest, "/api/v1/classify/", exception=["TimeoutError"])
    assert (answer["code"], answer["retryable"]) == ("NETWORK_ERROR", True)


def test_value_and_type_errors_differ_because_inside_a_tool_they_are_bugs_that_reach_sentry(rest):
    # The seed maps them to -32602 "Invalid params"; the catalog ships that rule switched off, so they stay
    # UNKNOWN_ERROR: a system error, captured in Sentry, -32603 on the JSON-RPC channel.
    for exception in ("ValueError", "TypeError"):
        answer = post(rest, "/api/v1/classify/", exception=[exception])
        assert (answer["code"], answer["system"]) == ("UNKNOWN_ERROR", True), exception
        assert jsonrpc_face(rest, answer["code"])["code"] == -32603


def test_exception_text_differs_because_the_trust_rule_never_lets_it_reach_the_model(mcp):
    # FastMCP's messages embed str(error) ("Invalid params: {str(error)}", "Internal error: {message}") and the
    # MCPcat pattern returns f"Error: {str(e)}"; here a tool whose upstream says "<html>secret stack trace</html>"
    # fails with the catalog's text only.
    result = tool_result(mcp, "upstream_broken", {})
    text = " ".join(block.text for block in result.content) + json.dumps(result.structured_content)
    assert "secret stack trace" not in text and "upstream said" not in text
    assert result.structured_content["code"] == "SERVER_ERROR"


# --- Finding 3: tool errors are CallToolResult(isError=True) ------------------------------------------------


def test_tool_failures_are_call_tool_results_with_is_error_as_the_seed_recommends(mcp):
    for tool in ("upstream_broken", "record_missing"):
        result = tool_result(mcp, tool, {})  # a result, not a JSON-RPC error
        assert result.is_error is True, tool
        assert result.structured_content["kind"] == "toolError:v1"
    assert tool_result(mcp, "record_missing", {}).structured_content["code"] == "NOT_FOUND"
