"""The ``conformance`` toolset: off unless named, and when on, the fixtures the official suite calls.

Each server here is the real app (``uvicorn config.asgi:application``, as ``./dev up`` and ``./dev conformance``
run it) in its own process, because toolsets and the server's capabilities are fixed when the process starts.
The full suite itself runs in CI through ``./dev conformance``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from conformance import mcp_tools as conformance

ROOT = Path(__file__).resolve().parents[2]
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# One process for both commands: each Django start-up costs seconds.
PREPARE_DATABASE = (
    "import django; django.setup(); from django.core.management import call_command; "
    "call_command('migrate', interactive=False, verbosity=0); call_command('catalog_load_defaults', verbosity=0)"
)


def _environ(data_dir: Path, **env: str) -> dict[str, str]:
    # Only the settings given here: no toolsets, database or auth choice leaks in from the caller's environment.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ERRCATALOG_") and k != "DATABASE_URL"}
    return environ | {"DJANGO_SETTINGS_MODULE": "config.settings", "ERRCATALOG_DATA_DIR": str(data_dir)} | env


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A migrated SQLite database with the default catalog, shared by this module's servers."""
    path = tmp_path_factory.mktemp("conformance-data")
    subprocess.run(  # noqa: S603 (our own interpreter and a fixed script)
        [sys.executable, "-c", PREPARE_DATABASE], cwd=ROOT, env=_environ(path), check=True, capture_output=True
    )
    return path


def _serve(data_dir: Path, **env: str) -> Iterator[str]:
    """Run the app on a free port against ``data_dir``; yield its /mcp URL."""
    environ = _environ(data_dir, ERRCATALOG_MCP_AUTH="0", **env)
    port = _free_port()
    uvicorn = Path(sys.executable).with_name("uvicorn")
    log_path = data_dir / f"server-{port}.log"
    log = log_path.open("w")
    server = subprocess.Popen(  # noqa: S603 (the venv's uvicorn, as ./dev up runs it)
        [str(uvicorn), "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=environ,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"The app did not start: {log_path.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def default_url(data_dir) -> Iterator[str]:
    yield from _serve(data_dir)


@pytest.fixture(scope="module")
def conformance_url(data_dir) -> Iterator[str]:
    yield from _serve(data_dir, ERRCATALOG_MCP_TOOLSETS="catalog,conformance")


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
