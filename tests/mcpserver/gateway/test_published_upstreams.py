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
from mcp.shared.exceptions import MCPError

from tests.mcpserver.gateway.upstreams import everything_server, gateway_environment, time_server
from tests.support.mcp import McpTarget
from tests.support.processes import CeleryWorkerProcess
from tests.support.served_app import ServedApp, add_classification_rule, manage, new_token
from tests.support.waiting import wait_until

GREETING = "hello from the operator's record"


@pytest.fixture(scope="module")
def published(tmp_path_factory, everything_http) -> Iterator[tuple[ServedApp, str]]:
    folder = tmp_path_factory.mktemp("published")
    env = gateway_environment(
        folder / "data",
        EVERYTHING_GREETING=GREETING,
    )
    node, script = everything_server()
    servers = {
        "mcpServers": {
            "everything": {"command": node, "args": [script, "stdio"], "env": {"GREETING": "${EVERYTHING_GREETING}"}},
            "everything-http": {"type": "http", "url": everything_http.url},
            "time": {"command": time_server(), "args": ["--local-timezone", "Etc/UTC"]},
            "everything-quiet": {"command": node, "args": [script, "stdio"]},
        }
    }
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps(servers))
    manage(env, "catalog_import", str(servers_file))
    # Roots are relayed by default over each client's own upstream session: "everything" gives each client session a
    # child of its own. The quiet one keeps the default, one child for every client, to which roots are never
    # declared, and has sampling switched off.
    manage(env, "shell", "--no-imports", "-c", "from errcatalog.gateway.models import Upstream; "
           "Upstream.objects.filter(name='everything').update(session_mode='per_client'); "
           "Upstream.objects.filter(name='everything-quiet').update(relay_sampling=False)")  # fmt: skip
    key = new_token(env, "published")
    app = ServedApp(env, folder).start()
    wait_until(
        lambda: (
            {"everything__echo", "everything_http__echo", "time__get_current_time", "everything_quiet__echo"}
            <= _listed(app, key).keys()
        ),
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


def _direct(name: str, arguments: dict, **options) -> types.CallToolResult:
    """The same call made to server-everything directly, over stdio, without the gateway; ``options`` are the SDK
    client's (its callbacks, which declare the capabilities)."""

    async def call() -> types.CallToolResult:
        node, script = everything_server()
        params = StdioServerParameters(command=node, args=[script, "stdio"])
        async with Client(stdio_client(params), **options) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(call())


def _direct_tools(**options) -> set[str]:
    async def listing() -> set[str]:
        node, script = everything_server()
        params = StdioServerParameters(command=node, args=[script, "stdio"])
        async with Client(stdio_client(params), **options) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    return asyncio.run(listing())


def _call_with(app: ServedApp, key: str, name: str, arguments: dict, *, mode: str, **options) -> types.CallToolResult:
    async def call() -> types.CallToolResult:
        async with McpTarget(app.mcp_url, key).client(mode=mode, **options) as client:
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
    # The catalog's text first, whole; then the upstream's words, which name the fact, quoted and marked as its own.
    text = result.content[0].text
    assert text.endswith('''\n\nThe time server said: "Invalid timezone: 'No time zone found with key Mars/Olympus'"''')
    assert text.count("Mars") == 1

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
    # Another tool, with the default rules: its text names neither zone's parameter but quotes the value of one.
    assert other.structured_content["code"] == "INVALID_PARAMETER"
    assert other.structured_content["details"]["parameter"] == "source_timezone"


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
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_server_everythings_elicitation_is_relayed_to_a_client_that_can_answer(published, prefix, mode):
    # A 2025-11-25 upstream asks in mid-call, on its session: relayed while the call is its only one in flight, to a
    # 2025-11-25 client in mid-call too, to a 2026-07-28 client in a round trip while the upstream call waits.
    app, key = published
    asked: list[types.ElicitRequestFormParams] = []

    async def answer(context, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ana Lima", "check": True})

    async def call() -> types.CallToolResult:
        async with McpTarget(app.mcp_url, key).client(mode=mode, elicitation_callback=answer) as client:
            return await client.call_tool(f"{prefix}__trigger-elicitation-request", {})

    result = asyncio.run(call())
    (params,) = asked
    assert params.message == "Please provide inputs for the following fields:"
    assert params.requested_schema["required"] == ["name"]
    assert not result.is_error and "Ana Lima" in result.model_dump_json()

    declined = _call(app, key, f"{prefix}__trigger-elicitation-request", {}, mode=mode)  # no elicitation declared
    assert not declined.is_error and '"action": "decline"' in declined.model_dump_json().replace('\\"', '"')


# --- Sampling and roots, relayed -------------------------------------------------------------------------------------

MODEL_ANSWER = types.CreateMessageResult(
    role="assistant", content=types.TextContent(type="text", text="42"), model="test-model", stop_reason="endTurn"
)
LEAKED = "ghp_clientsAskedForThis1234567890abcdef"


@pytest.mark.parametrize("prefix", ["everything", "everything_http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_server_everythings_sampling_request_reaches_a_client_that_declared_sampling_naming_the_upstream(
    published, prefix, mode
):
    app, key = published
    asked: list[types.CreateMessageRequestParams] = []

    async def sample(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return MODEL_ANSWER

    prompt = f"What is six times seven? Authorization: Bearer {LEAKED}"
    arguments = {"prompt": prompt, "maxTokens": 50}
    result = _call_with(app, key, f"{prefix}__trigger-sampling-request", arguments, mode=mode,
                        sampling_callback=sample)  # fmt: skip
    (params,) = asked
    upstream = "everything" if prefix == "everything" else "everything-http"
    assert params.system_prompt.startswith(f'The MCP server "{upstream}" (behind the errcatalog gateway)')
    assert params.system_prompt.endswith("You are a helpful test server.")
    if mode == "legacy":  # a 2026-07-28 input request reaches the client's callback without its ``_meta``
        assert params.meta["dev.errcatalog/upstream"] == upstream
    assert params.max_tokens == 50 and params.temperature == 0.7
    text = params.messages[0].content.text
    assert "What is six times seven?" in text and LEAKED not in text and "[REDACTED]" in text

    # The model's answer goes back to the upstream unchanged: the tool's result is what it is directly.
    direct_asked: list[types.CreateMessageRequestParams] = []

    async def direct_sample(context, params):
        direct_asked.append(params)
        return MODEL_ANSWER

    expected = _direct("trigger-sampling-request", arguments, sampling_callback=direct_sample)
    assert not result.is_error and result.content == expected.content
    assert direct_asked[0].messages[0].content.text == f"Resource trigger-sampling-request context: {prompt}"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_sampling_request_the_client_cannot_take_fails_as_it_does_directly(published, mode):
    # Without sampling declared, the upstream hears what a client without sampling answers; its tool fails, and the
    # model gets catalog text.
    app, key = published
    result = _call(app, key, "everything__trigger-sampling-request", {"prompt": "hi"}, mode=mode)

    async def unsupported(context, params):
        return types.ErrorData(code=types.METHOD_NOT_FOUND, message="Sampling not supported")

    direct = _direct("trigger-sampling-request", {"prompt": "hi"}, sampling_callback=unsupported)
    assert direct.is_error
    assert result.is_error and result.structured_content["kind"] == "toolError:v1"
    # What the upstream said of it follows the catalog's text, marked, as the direct client reads it unmarked.
    detail = result.structured_content["details"]["upstream_detail"]
    assert detail["upstream"] == "everything" and "Sampling not supported" in detail["text"]


def test_a_users_rejection_of_the_sampling_request_reaches_the_upstream_as_it_does_directly(published):
    app, key = published

    async def reject(context, params):
        return types.ErrorData(code=-1, message="User rejected sampling request")

    result = _call_with(app, key, "everything__trigger-sampling-request", {"prompt": "hi"}, mode="legacy",
                        sampling_callback=reject)  # fmt: skip
    direct = _direct("trigger-sampling-request", {"prompt": "hi"}, sampling_callback=reject)
    assert direct.is_error and result.is_error
    # The upstream's failure text reaches the model only as the screened quote after the catalog's text.
    detail = result.structured_content["details"]["upstream_detail"]
    assert "User rejected" in detail["text"] and result.content[0].text.endswith(f'"{detail["text"]}"')


@pytest.mark.parametrize("prefix", ["everything", "everything_http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_server_everythings_roots_request_is_answered_with_the_calling_clients_roots(published, prefix, mode):
    app, key = published
    roots = types.ListRootsResult(roots=[types.Root(uri="file:///home/ana/project", name="project")])

    async def list_roots(context) -> types.ListRootsResult:
        return roots

    result = _call_with(app, key, f"{prefix}__get-roots-list", {}, mode=mode, list_roots_callback=list_roots)
    expected = _direct("get-roots-list", {}, list_roots_callback=list_roots)
    assert not result.is_error and "file:///home/ana/project" in result.content[0].text
    assert result.content == expected.content


def test_an_upstream_that_relays_no_sampling_or_roots_does_not_list_the_tools_that_need_them(published):
    # "everything-quiet": sampling switched off; roots switched on (the default), but its one stdio child serves
    # every client, so they are not declared to it.
    app, key = published
    tools = _listed(app, key)
    assert {"everything__trigger-sampling-request", "everything__get-roots-list"} <= tools.keys()
    quiet = {name.removeprefix("everything_quiet__") for name in tools if name.startswith("everything_quiet__")}

    async def unused(context, params=None):  # declares the capability; never called by a listing
        raise AssertionError

    # As server-everything lists its tools directly to a client with elicitation but without sampling or roots.
    assert quiet == _direct_tools(elicitation_callback=unused)
    assert "trigger-sampling-request" in _direct_tools(elicitation_callback=unused, sampling_callback=unused)


# --- URL elicitation, relayed --------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["everything", "everything_http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_server_everythings_url_elicitation_reaches_a_client_that_takes_urls(published, prefix, mode):
    app, key = published
    asked: list[types.ElicitRequestURLParams] = []

    async def answer(context, params) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept")

    arguments = {"url": "https://example.com/sign-in?step=1", "message": f"Sign in. password={LEAKED}",
                 "elicitationId": f"gateway-{prefix}"}  # fmt: skip
    result = _call_with(app, key, f"{prefix}__trigger-url-elicitation", arguments, mode=mode,
                        elicitation_callback=answer)  # fmt: skip
    (params,) = asked
    assert params.url == "https://example.com/sign-in?step=1"  # the upstream's own address, unchanged
    # 2026-07-28 has no elicitation ids (nor the completion notice that names one).
    assert params.elicitation_id == (f"gateway-{prefix}" if mode == "legacy" else None)
    assert params.message.startswith("Sign in.") and LEAKED not in params.message
    expected = _direct("trigger-url-elicitation", arguments, elicitation_callback=answer)
    assert not result.is_error and result.content == expected.content


def test_a_url_elicitation_to_an_address_that_is_not_https_is_declined(published):
    app, key = published
    asked: list = []

    async def answer(context, params) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept")

    async def decline(context, params) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    arguments = {"url": "http://example.com/sign-in", "elicitationId": "plain-http"}
    result = _call_with(app, key, "everything__trigger-url-elicitation", arguments, mode="legacy",
                        elicitation_callback=answer)  # fmt: skip
    assert not asked  # never put before the user
    assert result.content == _direct("trigger-url-elicitation", arguments, elicitation_callback=decline).content


def test_server_everythings_url_elicitation_required_error_reaches_a_client_that_takes_urls_as_that_error(published):
    app, key = published

    async def unused(context, params) -> types.ElicitResult:
        raise AssertionError("the error path sends no request")

    arguments = {"url": "https://example.com/needs-auth", "errorPath": True, "elicitationId": "through-gateway"}

    async def call() -> MCPError:
        async with McpTarget(app.mcp_url, key).client(mode="legacy", elicitation_callback=unused) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("everything__trigger-url-elicitation", arguments)
            return raised.value

    error = asyncio.run(call())
    assert error.code == types.URL_ELICITATION_REQUIRED and error.message == "URL elicitation required"
    (elicitation,) = error.data["elicitations"]
    assert elicitation["url"] == "https://modelcontextprotocol.io" and elicitation["mode"] == "url"

    async def direct() -> MCPError:
        node, script = everything_server()
        params = StdioServerParameters(command=node, args=[script, "stdio"])
        async with Client(stdio_client(params), elicitation_callback=unused) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("trigger-url-elicitation", {**arguments, "elicitationId": "direct"})
            return raised.value

    direct_error = asyncio.run(direct())
    assert direct_error.code == error.code
    assert direct_error.data["elicitations"][0]["url"] == elicitation["url"]


def test_the_url_elicitation_required_error_is_the_catalogs_authentication_text_for_a_2026_client(published):
    # 2026-07-28 has no -32042: the client gets the catalog's truthful needs-input code, never the upstream's words.
    app, key = published
    arguments = {"url": "https://example.com/needs-auth", "errorPath": True, "elicitationId": "modern-client"}
    result = _call(app, key, "everything__trigger-url-elicitation", arguments, mode="auto")
    assert result.is_error and result.structured_content["code"] == "AUTHENTICATION_REQUIRED"
    assert "browser-based" not in result.model_dump_json()


# --- Tasks, as far as the SDK goes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_server_everythings_task_support_is_listed_as_it_lists_it(published, mode):
    app, key = published

    async def listing() -> dict[str, types.Tool]:
        async with McpTarget(app.mcp_url, key).client(mode=mode) as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = asyncio.run(listing())
    if mode == "auto":  # 2026-07-28 moved tasks out of the protocol: its listings carry no execution hints
        assert tools["everything__simulate-research-query"].execution is None
        return
    assert tools["everything__simulate-research-query"].execution.task_support == "required"
    assert tools["everything_http__echo"].execution.task_support == "forbidden"
    assert tools["time__get_current_time"].execution is None  # lists none


@pytest.mark.parametrize("prefix", ["everything", "everything_http"])
def test_a_task_only_tool_fails_with_the_catalogs_missing_capability_text(published, prefix):
    # The SDK defines tasks' types only: neither the gateway's client nor its server can run one, and the upstream
    # refuses a plain call, as it refuses a direct client without tasks.
    app, key = published
    result = _call(app, key, f"{prefix}__simulate-research-query", {"topic": "tides"})
    assert _direct("simulate-research-query", {"topic": "tides"}).is_error
    assert result.is_error and result.structured_content["code"] == "MISSING_CLIENT_CAPABILITY"
    # The upstream's own words (it needs task augmentation) follow the catalog's, marked as its.
    assert "augmentation" in result.structured_content["details"]["upstream_detail"]["text"]
