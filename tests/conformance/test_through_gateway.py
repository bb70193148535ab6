"""The conformance fixtures through the gateway: the fixtures' app is the HTTP upstream ``fixtures`` of a second app,
and the SDK's real client calls that app's ``/mcp/fixtures`` in both protocol generations, as ``./dev conformance``'s
second run does with the official suite.

The gateway speaks 2026-07-28 to the fixtures' app, whose tools then ask for sampling and elicitation in input round
trips (``mcpserver.tool_rounds``). A 2025-11-25 client is asked in mid-call on its session's stream, through the SDK
client's callbacks on the gateway's upstream connection (``mcpserver.gateway.sampling``, ``elicitation``); a
2026-07-28 client in round trips of the gateway's own, which carry the upstream's state (``gateway.round_trip``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp.client import Client

from conformance import mcp_tools as conformance
from tests.support.conformance import prepared, serve

GENERATIONS = ("legacy", "auto")  # 2025-11-25, 2026-07-28


@pytest.fixture(scope="module")
def gateway_url(conformance_url, tmp_path_factory) -> Iterator[str]:
    """A second app (the catalog's tools only) whose upstream ``fixtures`` is the fixtures' app: its /mcp/fixtures."""
    folder = tmp_path_factory.mktemp("gateway-data")
    upstreams = folder / "upstreams.json"
    upstreams.write_text(json.dumps({"mcpServers": {"fixtures": {"type": "http", "url": conformance_url}}}))
    prepared(folder, f"call_command('upstream_import', {str(Path(upstreams))!r}, verbosity=0)")
    for url in serve(folder, ERRCATALOG_MCP_TOOLSETS="catalog"):
        asyncio.run(_listed(f"{url}/fixtures", "test_sampling"))
        yield f"{url}/fixtures"


async def _listed(url: str, name: str) -> None:
    """Until the gateway lists the upstream's tool ``name`` (it connects in the background)."""
    for _ in range(100):
        async with Client(url) as client:
            if name in {tool.name for tool in (await client.list_tools()).tools}:
                return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name} was not served at {url}")


def _each_generation(url: str, scenario, **callbacks) -> dict[str, object]:
    async def both():
        results = {}
        for mode in GENERATIONS:
            async with Client(url, mode=mode, **callbacks) as client:
                results[client.protocol_version] = await scenario(client)
        return results

    return asyncio.run(both())


def test_the_fixtures_sampling_reaches_each_generations_client_through_the_gateway(gateway_url):
    asked = []

    async def sample(context, params: types.CreateMessageRequestParams):
        asked.append((params.system_prompt, params.messages[0].content.text, params.max_tokens))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="a reply"), model="test-model"
        )

    results = _each_generation(
        gateway_url, lambda client: client.call_tool("test_sampling", {"prompt": "Say hi"}), sampling_callback=sample
    )
    assert set(results) == {"2025-11-25", "2026-07-28"}
    for result in results.values():
        assert not result.is_error
        assert result.content[0].text == "LLM response: a reply"
    assert [text for _, text, _ in asked] == ["Say hi", "Say hi"]
    # The gateway names the upstream that asks, for the user's approval (mcpserver.gateway.sampling).
    assert all("fixtures" in (system or "") and tokens == 100 for system, _, tokens in asked)


def test_the_fixtures_elicitations_reach_each_generations_client_through_the_gateway(gateway_url):
    forms = []

    async def answer(context, params):
        forms.append((params.message, params.requested_schema))
        schema = params.requested_schema["properties"]
        if "username" in schema:
            return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})
        return types.ElicitResult(action="decline")

    async def scenario(client: Client):
        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        defaults = await client.call_tool("test_elicitation_sep1034_defaults", {})
        return elicited.content[0].text, defaults.content[0].text

    results = _each_generation(gateway_url, scenario, elicitation_callback=answer)
    for elicited, defaults in results.values():
        assert elicited == 'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
        assert defaults == "Elicitation completed: action=decline, content={}"
    assert [message for message, _ in forms] == ["Who are you?", "Please provide user information"] * 2
    # The forms arrive as the fixtures ask them, defaults included (SEP-1034).
    defaults_forms = [schema for message, schema in forms if message == "Please provide user information"]
    assert all(schema == dict(conformance.DEFAULTS_SCHEMA) for schema in defaults_forms)


def test_without_the_capability_each_generations_client_gets_the_catalogs_error(gateway_url):
    results = _each_generation(gateway_url, lambda client: client.call_tool("test_sampling", {"prompt": "Say hi"}))
    for result in results.values():
        assert result.is_error
        assert result.structured_content["kind"] == "toolError:v1"
