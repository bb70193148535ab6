"""The ``conformance`` toolset: off unless named, and when on, the fixtures the official suite calls.

Each server here is the real app (``uvicorn config.asgi:application``, as ``./dev up`` and ``./dev conformance``
run it) in its own process, because toolsets and the server's capabilities are fixed when the process starts.
The full suite itself runs in CI through ``./dev conformance``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator

import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conformance import mcp_tools as conformance
from tests.support.conformance import serve

FIXTURE_TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
}


@pytest.fixture(scope="module")
def default_url(data_dir) -> Iterator[str]:
    yield from serve(data_dir)


@contextlib.asynccontextmanager
async def legacy_client(url: str, **options) -> AsyncIterator[Client]:
    """A 2025-11-25 session, the protocol generation the conformance suite speaks."""
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(20)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", **options) as client,
    ):
        yield client


def run(url: str, scenario, **options):
    async def go():
        async with legacy_client(url, **options) as client:
            return await scenario(client)

    return asyncio.run(go())


def test_conformance_toolset_is_off_by_default(default_url):
    async def scenario(client: Client):
        names = {tool.name for tool in (await client.list_tools()).tools}
        return names, client.server_capabilities

    names, capabilities = run(default_url, scenario)
    assert "explain_error" in names
    assert not names & FIXTURE_TOOLS
    # Without the fixtures the server serves tools, the catalog's own resources and prompts, logging (the level per
    # session, for the upstreams' log messages: mcpserver.gateway.log_relay) and completions (the upstreams' prompt
    # and template arguments: mcpserver.offerings), nothing more.
    assert capabilities.resources is not None and capabilities.prompts is not None
    assert capabilities.completions is not None
    assert capabilities.logging is not None
    assert capabilities.tasks is None and capabilities.experimental is None


def test_fixtures_are_listed_when_enabled(conformance_url):
    async def scenario(client: Client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        return tools, resources, prompts, client.server_capabilities

    tools, resources, prompts, capabilities = run(conformance_url, scenario)
    assert set(tools) >= FIXTURE_TOOLS
    schema = tools["json_schema_2020_12_tool"].input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"] and schema["additionalProperties"] is False
    # The fixtures' beside the catalog's own (mcpserver.reference).
    fixtures = {r for r in resources if not r.startswith("errcatalog://codes/")}
    assert fixtures == {"test://static-text", "test://static-binary", "test://watched-resource"}
    assert "errcatalog://codes/MISSING_PARAMETER" in resources
    assert prompts == {p["name"] for p in conformance.PROMPTS} | {
        "MISSING_PARAMETER",
        "INVALID_PARAMETER",
        "AUTHENTICATION_REQUIRED",
        "SERVICE_CONFIGURATION",
    }
    assert capabilities.resources.subscribe is True
    assert capabilities.logging is not None and capabilities.completions is not None


# resources/subscribe is a 2025-11-25 method, and the suite calls it there; the SDK client warns on every use.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_resources_prompts_and_completion_answer_with_the_fixture_payloads(conformance_url):
    async def scenario(client: Client):
        template = await client.read_resource("test://template/123/data")
        prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "par"},
        )
        await client.subscribe_resource("test://watched-resource")
        await client.unsubscribe_resource("test://watched-resource")
        await client.set_logging_level("info")
        return template, prompt, completion

    template, prompt, completion = run(conformance_url, scenario)
    assert template.contents[0].text == '{"id": "123", "templateTest": true, "data": "Data for ID: 123"}'
    assert prompt.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'"
    assert completion.completion.values == ["paris", "park", "party"]


def test_error_fixture_is_rendered_from_the_catalog(conformance_url):
    result = run(conformance_url, lambda client: client.call_tool("test_error_handling", {}))
    assert result.is_error
    assert result.structured_content["code"] == "CLIENT_ERROR"
    assert "intentionally" not in result.content[0].text  # the exception's text stays in the logs


def test_sampling_and_elicitation_reach_the_client(conformance_url):
    async def sample(context, params: types.CreateMessageRequestParams):
        assert params.max_tokens == 100
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="a reply"), model="test-model"
        )

    async def answer(context, params):
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async def scenario(client: Client):
        sampled = await client.call_tool("test_sampling", {"prompt": "Say something"})
        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        return sampled, elicited

    sampled, elicited = run(conformance_url, scenario, sampling_callback=sample, elicitation_callback=answer)
    assert sampled.content[0].text == "LLM response: a reply"
    assert elicited.content[0].text == (
        'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
    )


def test_sampling_without_the_capability_is_a_catalog_error(conformance_url):
    result = run(conformance_url, lambda client: client.call_tool("test_sampling", {"prompt": "Say something"}))
    assert result.is_error
    assert result.structured_content["code"] == "CLIENT_ERROR"


def test_reconnection_fixture_answers_after_closing_its_stream(conformance_url):
    logs = []

    async def on_log(params):
        logs.append(params.data)

    result = run(conformance_url, lambda client: client.call_tool("test_reconnection", {}), logging_callback=on_log)
    assert not result.is_error
    assert result.content[0].text == "Reconnection test completed"
    assert logs == ["Before disconnect", "After reconnect"]


def test_sampling_and_elicitation_reach_a_2026_client_in_round_trips(conformance_url):
    # 2026-07-28 has no back channel: each request comes back as an InputRequiredResult, which the SDK's client
    # answers, calling again with the answer; the tool then runs again and goes on past its request.
    prompts, forms = [], []

    async def sample(context, params: types.CreateMessageRequestParams):
        prompts.append((params.messages[0].content.text, params.max_tokens))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="a reply"), model="test-model"
        )

    async def answer(context, params):
        forms.append(params.requested_schema)
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async def go():
        async with Client(conformance_url, sampling_callback=sample, elicitation_callback=answer) as client:
            assert client.protocol_version == "2026-07-28"
            sampled = await client.call_tool("test_sampling", {"prompt": "Say something"})
            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            # Driven by hand: the first answer is the request, with our state sealed.
            first = await client.session.call_tool("test_elicitation", {"message": "Who?"}, allow_input_required=True)
            return sampled, elicited, first

    sampled, elicited, first = asyncio.run(go())
    assert sampled.content[0].text == "LLM response: a reply"
    assert prompts == [("Say something", 100)]
    assert elicited.content[0].text == (
        'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
    )
    assert forms[0]["required"] == ["username", "email"]
    assert isinstance(first, types.InputRequiredResult)
    (request,) = first.input_requests.values()
    assert request.params.message == "Who?"
    assert "tool_rounds" not in first.request_state  # sealed: the client cannot read or change it


def test_a_2026_round_trip_with_state_changed_by_the_client_is_refused(conformance_url):
    async def go():
        async with Client(conformance_url) as client:
            try:
                await client.session.call_tool(
                    "test_elicitation",
                    {"message": "Who?"},
                    input_responses={"errcatalog_tool_request": {"action": "accept", "content": {"username": "x"}}},
                    request_state='{"tool_rounds": {"v": 1, "answered": [], "asked": "forged"}}',
                    allow_input_required=True,
                )
            except MCPError as exc:
                return exc
        return None

    refused = asyncio.run(go())
    assert refused is not None and refused.code == types.INVALID_PARAMS


def test_sampling_without_the_capability_is_a_catalog_error_for_a_2026_client(conformance_url):
    async def go():
        async with Client(conformance_url) as client:
            return await client.call_tool("test_sampling", {"prompt": "Say something"})

    result = asyncio.run(go())
    assert result.is_error
    assert result.structured_content["code"] == "CLIENT_ERROR"


# --- Resumable streams (mcpserver.streams), by hand over HTTP as a 2025-11-25 client ---------------------------

PROTOCOL = {"MCP-Protocol-Version": "2025-11-25"}
SSE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _events(lines) -> Iterator[dict[str, str]]:
    """The SSE events of a stream of lines, each as its fields."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
            continue
        name, _, value = line.partition(":")
        event[name] = event.get(name, "") + value.removeprefix(" ")
    if event:
        yield event


def _session(http: httpx2.Client, url: str) -> dict[str, str]:
    """A 2025-11-25 session opened by hand: its headers for the next requests."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "by-hand", "version": "1"},
        },
    }
    opened = http.post(url, json=initialize, headers=SSE)
    headers = {**SSE, **PROTOCOL, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
    http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def _resume(http: httpx2.Client, url: str, headers: dict[str, str], last_event_id: str) -> list[dict]:
    """The messages a GET with ``Last-Event-ID`` is sent, up to the first response."""
    messages = []
    resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
    with http.stream("GET", url, headers=resume) as response:
        assert response.status_code == 200
        for event in _events(response.iter_lines()):
            if event.get("data"):
                messages.append(json.loads(event["data"]))
                if "result" in messages[-1]:
                    break
    return messages


def test_a_stream_the_client_lost_mid_call_resumes_from_its_last_event(conformance_url):
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}},
    }
    with httpx2.Client(timeout=10) as http:
        headers = _session(http, conformance_url)
        with http.stream("POST", conformance_url, json=call, headers=headers) as response:
            first = next(_events(response.iter_lines()))
        # The client went away after the priming event: an id, no data, and how long to wait before reconnecting.
        assert first["id"] and not first.get("data")
        assert first["retry"] == "1000"
        time.sleep(conformance.STEP_SECONDS * 4)  # the call goes on and finishes meanwhile
        messages = _resume(http, conformance_url, headers, first["id"])
    progress = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress == [0, 50, 100]
    assert messages[-1]["id"] == 1
    assert messages[-1]["result"]["content"][0]["text"] == "Tool with progress executed successfully"


def test_a_made_up_or_another_sessions_event_id_replays_nothing(conformance_url):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}}
    with httpx2.Client(timeout=10) as http:
        alice = _session(http, conformance_url)
        with http.stream("POST", conformance_url, json=call, headers=alice) as response:
            alices = [event["id"] for event in _events(response.iter_lines()) if event.get("id")]
        bob = _session(http, conformance_url)
        # Each replay stream ends at once, empty: nothing of alice's reaches bob, whose request ids are hers too.
        assert _resume(http, conformance_url, bob, alices[0]) == []
        assert _resume(http, conformance_url, bob, "made-up") == []
        assert _resume(http, conformance_url, alice, "x" * 5000) == []
        assert _resume(http, conformance_url, alice, alices[0])[-1]["result"]["content"][0]["text"].startswith(
            "This is a simple text"
        )


class _CutAfterFirstEvent(httpx2.AsyncBaseTransport):
    """HTTP as usual, except that the SSE answer to a ``tools/call`` POST is cut after its first event, as a proxy or
    a network change cuts a connection."""

    def __init__(self) -> None:
        self._http = httpx2.AsyncHTTPTransport()
        self.cut = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._http.handle_async_request(request)
        cut = request.method == "POST" and b'"tools/call"' in request.content
        if not cut or not response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        self.cut += 1

        class FirstEvent(httpx2.AsyncByteStream):
            async def __aiter__(self):
                seen = b""
                async for chunk in response.stream:
                    seen += chunk
                    if b"\n\n" in seen or b"\r\n\r\n" in seen:
                        yield seen
                        break
                await response.aclose()  # the connection is gone: the client sees the stream end

            async def aclose(self) -> None:
                await response.aclose()

        return httpx2.Response(response.status_code, headers=response.headers, stream=FirstEvent())

    async def aclose(self) -> None:
        await self._http.aclose()


def test_the_sdks_client_resumes_a_call_whose_stream_was_cut(conformance_url):
    transport = _CutAfterFirstEvent()
    progress = []

    async def on_progress(value, total, message):
        progress.append(value)

    async def go():
        async with (
            httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(20)) as http,
            Client(streamable_http_client(conformance_url, http_client=http), mode="legacy") as client,
        ):
            return await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)

    result = asyncio.run(go())
    assert transport.cut == 1  # the call's own stream ended after its priming event
    assert result.content[0].text == "Tool with progress executed successfully"
    assert progress == [0, 50, 100]  # each sent while the client was away, replayed when it came back
