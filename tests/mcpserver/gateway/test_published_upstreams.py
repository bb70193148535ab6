"""Real, unmodified published MCP servers behind /mcp, run as their users run them.

npm's ``@modelcontextprotocol/server-everything`` over stdio and over Streamable HTTP (its own process on
127.0.0.1), and PyPI's ``mcp-server-time`` over stdio from a virtual environment of its own, imported the way an
operator does (``manage.py catalog_import`` of an ``mcpServers`` block) into production's served app. The client is
the SDK's. Their results pass through unchanged; their failures, their missing input and their death mid-call
reach the model as catalog text only.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.config.served_app import ServedApp, add_classification_rule, embedded_environment, manage, new_token
from tests.errcatalog.outcomes.conftest import CeleryWorkerProcess, wait_until
from tests.mcpserver.conftest import McpTarget
from tests.mcpserver.gateway.upstreams import UpstreamProcess, everything_server, time_server

GREETING = "hello from the operator's record"


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory) -> Iterator[UpstreamProcess]:
    log = tmp_path_factory.mktemp("everything") / "log"
    upstream = UpstreamProcess.command_line([*everything_server(), "streamableHttp"], log=log).start()
    yield upstream
    upstream.kill()


@pytest.fixture(scope="module")
def published(tmp_path_factory, everything_http) -> Iterator[tuple[ServedApp, str]]:
    folder = tmp_path_factory.mktemp("published")
    env = embedded_environment(
        folder / "data",
        ERRCATALOG_MCP_TOOLSETS="catalog",
        ERRCATALOG_MCP_RATE_LIMIT="1000000",
        ERRCATALOG_GATEWAY_RECONNECT_MAX_SECONDS="1",
        EVERYTHING_GREETING=GREETING,
    )
    node, script = everything_server()
    servers = {
        "mcpServers": {
            "everything": {"command": node, "args": [script, "stdio"], "env": {"GREETING": "${EVERYTHING_GREETING}"}},
            "everything-http": {"type": "http", "url": everything_http.url},
            "time": {"command": time_server(), "args": ["--local-timezone", "Etc/UTC"]},
        }
    }
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps(servers))
    manage(env, "catalog_import", str(servers_file))
    key = new_token(env, "published")
    app = ServedApp(env, folder).start()
    wait_until(
        lambda: {"everything__echo", "everything_http__echo", "time__get_current_time"} <= _listed(app, key).keys(),
        seconds=90,
        what="the published servers' tools",
    )
    yield app, key
    app.stop()


def _listed(app: ServedApp, key: str) -> dict[str, types.Tool]:
    async def listing() -> dict[str, types.Tool]:
        async with McpTarget(app.mcp_url, key).client() as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    return asyncio.run(listing())


def _call(app: ServedApp, key: str, name: str, arguments: dict, *, mode: str = "auto") -> types.CallToolResult:
    async def call() -> types.CallToolResult:
        async with McpTarget(app.mcp_url, key).client(mode=mode) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(call())


def _direct(name: str, arguments: dict) -> types.CallToolResult:
    """The same call made to server-everything directly, over stdio, without the gateway."""

    async def call() -> types.CallToolResult:
        node, script = everything_server()
        async with Client(stdio_client(StdioServerParameters(command=node, args=[script, "stdio"]))) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(call())


def test_their_tools_are_served_under_their_prefixes_with_their_own_schemas(published):
    app, key = published
    tools = _listed(app, key)
    for prefix in ("everything", "everything_http"):
        assert tools[f"{prefix}__get-sum"].input_schema["required"] == ["a", "b"]
        assert tools[f"{prefix}__echo"].description == "Echoes back the input string"
    assert "timezone" in tools["time__get_current_time"].input_schema["properties"]
    assert "explain_error" in tools  # ours are still there


@pytest.mark.parametrize("prefix", ["everything", "everything_http"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("echo", {"message": "through the gateway"}), ("get-sum", {"a": 2, "b": 40}), ("get-tiny-image", {})],
)
def test_their_results_pass_through_unchanged(published, prefix, mode, tool, arguments):
    app, key = published
    result = _call(app, key, f"{prefix}__{tool}", arguments, mode=mode)
    expected = _direct(tool, arguments)
    assert not result.is_error
    assert result.content == expected.content
    assert result.structured_content == expected.structured_content


def test_mcp_server_time_answers_through_the_gateway(published):
    app, key = published
    result = _call(app, key, "time__get_current_time", {"timezone": "Asia/Tokyo"})
    assert not result.is_error
    assert result.structured_content["timezone"] == "Asia/Tokyo"
    assert result.structured_content["datetime"].endswith("+09:00")


def test_a_stdio_child_gets_only_the_environment_its_record_names(published):
    app, key = published
    result = _call(app, key, "everything__get-env", {})
    environment = json.loads(result.content[0].text)
    assert environment["GREETING"] == GREETING  # named by the record, read from our environment
    # The web process's own settings never reach the child.
    assert not {"DJANGO_SETTINGS_MODULE", "ERRCATALOG_DATA_DIR", "EVERYTHING_GREETING"} & environment.keys()


@pytest.mark.parametrize(
    ("name", "arguments", "code", "named"),
    [
        ("everything__get-sum", {"a": 1}, "MISSING_PARAMETER", "b"),
        ("everything_http__get-sum", {"a": 1}, "MISSING_PARAMETER", "b"),
        ("time__get_current_time", {}, "MISSING_PARAMETER", "timezone"),
        ("everything__get-sum", {"a": "one", "b": 2}, "INVALID_PARAMETER", "a"),
    ],
)
def test_missing_and_invalid_input_become_the_catalogs_question(published, name, arguments, code, named):
    app, key = published
    result = _call(app, key, name, arguments)
    assert result.is_error
    assert result.structured_content["code"] == code
    assert result.structured_content["message"].startswith("Question:")
    assert named in result.structured_content["message"]


def test_a_failing_published_tool_reaches_the_model_as_catalog_text_and_a_rule_can_reclassify_it(published):
    app, key = published
    result = _call(app, key, "time__get_current_time", {"timezone": "Mars/Olympus"})
    assert result.is_error and result.structured_content["code"] == "INVALID_PARAMETER"  # the default rules
    assert "Mars" not in result.model_dump_json() and "Invalid timezone" not in result.model_dump_json()

    # An operator's rule on the upstream, its tool, the failure's kind and its text (README's example), before the
    # default rules: when this tool reports an invalid time zone, its arguments do not match its schema.
    add_classification_rule(
        app.env,
        position=5,
        code="INVALID_ARGUMENTS",
        kind="tool_error",
        pattern="^Invalid timezone",
        upstream="time",
        tool="time__get_current_time",
    )

    def reclassified() -> bool:
        again = _call(app, key, "time__get_current_time", {"timezone": "Mars/Olympus"})
        return again.structured_content["code"] == "INVALID_ARGUMENTS"

    wait_until(reclassified, what="the rule served")
    other = _call(app, key, "time__convert_time", {"source_timezone": "Mars/Olympus", "time": "12:00",
                                                   "target_timezone": "Etc/UTC"})  # fmt: skip
    assert other.structured_content["code"] == "VALIDATION_ERROR"  # another tool: its text names neither zone


def test_an_http_server_killed_mid_call_is_answered_from_the_catalog_and_the_gateway_reconnects(
    published, everything_http
):
    app, key = published
    results: list[types.CallToolResult] = []
    call = threading.Thread(
        target=lambda: results.append(
            _call(app, key, "everything_http__trigger-long-running-operation", {"duration": 10, "steps": 10})
        )
    )
    call.start()
    time.sleep(2)
    everything_http.kill()
    call.join(timeout=60)

    (result,) = results
    assert result.is_error and result.structured_content["code"] == "NETWORK_ERROR"
    assert result.structured_content["retryable"] is True
    # The other upstreams keep serving while this one is down, and it is served again once it is back.
    assert not _call(app, key, "everything__echo", {"message": "meanwhile"}).is_error
    everything_http.start()

    def echoes() -> bool:
        return not _call(app, key, "everything_http__echo", {"message": "back"}).is_error

    wait_until(echoes, seconds=30, what="the gateway to reconnect to the restarted server")


def test_their_outcomes_are_recorded_under_their_upstream_and_measured_by_it(published, tmp_path):
    app, key = published
    worker = CeleryWorkerProcess(app.env, tmp_path).start()  # ingests what the web process recorded
    try:
        assert not _call(app, key, "time__get_current_time", {"timezone": "Etc/UTC"}).is_error
        assert _call(app, key, "time__get_current_time", {"timezone": "Mars/Olympus"}).is_error
        assert not _call(app, key, "everything__echo", {"message": "counted"}).is_error

        def stored() -> dict:
            return json.loads(
                manage(
                    app.env,
                    "shell",
                    "--no-imports",
                    "-c",
                    "import json; from django.db.models import Count; "
                    "from errcatalog.outcomes.models import OutcomeRecord; "
                    "print(json.dumps({f\"{r['tool']}|{r['upstream']}|{r['outcome']}\": r['n'] for r in "
                    "OutcomeRecord.objects.values('tool', 'upstream', 'outcome').annotate(n=Count('pk'))}))",
                ).splitlines()[-1]
            )

        wait_until(lambda: "everything__echo|everything|ok" in stored(), seconds=60, what="the events ingested")
        rows = stored()
        assert rows["time__get_current_time|time|ok"] >= 1
        assert rows["time__get_current_time|time|error"] >= 1
        # Every call of an upstream's tool carries that upstream's name; any other call carries none.
        names = {"everything": "everything", "everything_http": "everything-http", "time": "time"}
        for stored_key in rows:
            tool, upstream, _ = stored_key.split("|")
            prefix = tool.split("__")[0] if "__" in tool else None
            assert upstream == names.get(prefix, ""), stored_key
        metrics = json.loads(
            manage(
                app.env,
                "shell",
                "--no-imports",
                "-c",
                "import json; from errcatalog.outcomes.rollups import compute_due; "
                "from errcatalog.outcomes.metrics import compute_metrics; compute_due(); "
                "print(json.dumps(compute_metrics('1h', upstream='time')))",
            ).splitlines()[-1]
        )
    finally:
        worker.stop()
    assert metrics["filters"]["upstream"] == "time"
    assert {row["key"] for row in metrics["breakdowns"]["upstream"]} == {"time"}
    assert {row["key"] for row in metrics["breakdowns"]["tool"]} <= {"time__get_current_time", "time__convert_time"}
    assert metrics["totals"]["errors"] >= 1


@pytest.mark.parametrize("prefix", ["everything", "everything_http"])
def test_server_everythings_elicitation_is_relayed_to_a_client_that_can_answer(published, prefix):
    # A 2025-11-25 upstream asks in mid-call, on its session: relayed while the call is its only one in flight.
    app, key = published
    asked: list[types.ElicitRequestFormParams] = []

    async def answer(context, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ana Lima", "check": True})

    async def call() -> types.CallToolResult:
        async with McpTarget(app.mcp_url, key).client(mode="legacy", elicitation_callback=answer) as client:
            return await client.call_tool(f"{prefix}__trigger-elicitation-request", {})

    result = asyncio.run(call())
    (params,) = asked
    assert params.message == "Please provide inputs for the following fields:"
    assert params.requested_schema["required"] == ["name"]
    assert not result.is_error and "Ana Lima" in result.model_dump_json()

    declined = _call(app, key, f"{prefix}__trigger-elicitation-request", {}, mode="auto")  # no back channel
    assert not declined.is_error and '"action": "decline"' in declined.model_dump_json().replace('\\"', '"')
