"""The reach of ``mcpserver.sdk_internals.poster``: the client session's private ``_stamp`` stamps a 2026-07-28
``tools/call`` as the SDK sends it, and the rest of what the poster copies from the SDK's client still holds.

That the poster's answers equal the SDK client's, call by call, is ``tests/mcpserver/gateway/test_connection.py``'s
(``test_a_2026_call_over_http_is_one_post_answered_as_the_sdks_client_answers_it``).
"""

from __future__ import annotations

import inspect

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.server import Server
from mcp_types.methods import validate_server_result

from mcpserver.sdk_internals.poster import POST_HEADERS, call_request, stamped
from tests.mcpserver.sdk_internals.support import revisit, sdk_source


def _stamped_call(mode: str) -> tuple[str, dict, dict[str, str]]:
    async def no_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def scenario() -> tuple[str, dict, dict[str, str]]:
        async with Client(Server("upstream", on_list_tools=no_tools), mode=mode) as client:
            data = types.CallToolRequest(
                params=types.CallToolRequestParams(name="echo", arguments={"text": "hi"})
            ).model_dump(by_alias=True, mode="json", exclude_none=True)
            headers = stamped(client.session, data)
            return client.protocol_version, data, headers

    return anyio.run(scenario)


def test_a_2026_call_is_stamped_with_its_meta_and_the_routing_headers():
    version, data, headers = _stamped_call("auto")
    assert version == "2026-07-28"
    meta = data["params"].get("_meta", {})
    expected_meta = {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
    }
    assert expected_meta <= meta.keys(), revisit("poster", f"_stamp fills _meta with {sorted(meta)}")
    assert meta["io.modelcontextprotocol/protocolVersion"] == version
    routing = {"mcp-protocol-version": version, "mcp-method": "tools/call", "mcp-name": "echo"}
    assert {k.lower(): v for k, v in headers.items() if k.lower() in routing} == routing, revisit(
        "poster", f"_stamp adds the headers {headers}"
    )


def test_a_call_request_is_built_as_the_sdk_dumps_its_model():
    arguments = {"text": "hi", "n": 2, "nested": {"list": [1, None, "x"]}, "none": None}
    sdk = types.CallToolRequest(params=types.CallToolRequestParams(name="echo", arguments=arguments)).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    assert call_request("echo", arguments) == sdk, revisit("poster", f"the SDK dumps a tools/call request as {sdk}")


def test_the_session_stamps_its_own_requests_with_the_same_private_stamp():
    source = inspect.getsource(ClientSession)
    assert "self._stamp(data, opts)" in source, revisit(
        "poster", "ClientSession no longer stamps its requests with self._stamp(data, opts)"
    )


def test_a_post_sends_the_headers_the_sdks_transport_sends():
    source = sdk_source("client/streamable_http.py")
    for name, value in POST_HEADERS.items():
        assert f'"{name}": "{value}"' in source, revisit(
            "poster", f"the SDK's transport no longer sends {name}: {value}"
        )


def test_the_answer_is_checked_with_what_the_session_checks_it_with():
    parameters = list(inspect.signature(validate_server_result).parameters)
    assert parameters[:3] == ["method", "version", "data"], revisit(
        "poster", f"validate_server_result takes {parameters}"
    )
    assert inspect.iscoroutinefunction(ClientSession.validate_tool_result), revisit(
        "poster", "ClientSession.validate_tool_result is gone or no longer async"
    )
    assert "validate_server_result(" in sdk_source("client/session.py"), revisit(
        "poster", "the SDK's client session no longer validates results with validate_server_result"
    )
    # ``wire.forwarded`` checks with serialize_server_result, keeping the form validate_server_result throws away.
    assert "serialize_server_result(method, version, data" in inspect.getsource(validate_server_result), revisit(
        "poster", "validate_server_result no longer checks with serialize_server_result"
    )
