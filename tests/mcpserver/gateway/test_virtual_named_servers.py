"""Named servers staff compose of our tools and upstreams, served at /mcp/<name> behind /mcp's guard and pipeline.

The served app is the gateway tests' ``virtual_served`` (``conftest.py``): production's, with ``upstream_server.py`` as
``web`` (HTTP) and ``local`` (stdio), and the named servers of ``tests.support.gateway.NAMED_SERVERS``: ``support`` (our
``explain_error``, every tool of ``web``, ``local``'s ``echo``), ``notes`` (``web``'s ``echo`` only), ``live`` (changed
by a test) and ``paused`` (disabled). The client is the SDK's, in both protocol generations.
"""

from __future__ import annotations

import asyncio
import json
import re

import anyio
import mcp_types as types
import pytest
from mcp.server.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError

from mcpserver.server import INSTRUCTIONS
from tests.mcpserver.gateway.test_virtual_servers import MODES, _call, _post, _run, _tools
from tests.support.gateway import NAMED_SERVERS
from tests.support.mcp import McpTarget
from tests.support.served_app import manage
from tests.support.waiting import wait_until

NOT_HERE = {"error": "There is no MCP server at this path."}


@pytest.fixture
def served(virtual_served) -> dict:
    return virtual_served


def _at(served: dict, server: str, who: str = "all") -> McpTarget:
    return McpTarget(f"{served['app'].mcp_url}/{server}".rstrip("/"), served[who])


# --- Listing and calling --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_named_server_lists_exactly_its_composition_under_mcps_names(served, mode):
    root = _tools(_at(served, ""), mode)
    support = _tools(_at(served, "support"), mode)
    web = {name for name in root if name.startswith("web__")}
    assert set(support) == {"explain_error", "local__echo", *web}
    assert {"web__echo", "web__add"} <= web and "list_error_codes" in root and "local__add" in root
    for name, tool in support.items():  # as /mcp lists each
        assert tool == root[name], name
    assert set(_tools(_at(served, "notes"), mode)) == {"web__echo"}


@pytest.mark.parametrize("mode", MODES)
def test_a_named_servers_description_is_its_instructions(served, mode):
    async def scenario(client):
        return client.instructions

    description = NAMED_SERVERS["support"][0]
    assert _run(_at(served, "support"), scenario, mode) == f"{description}\n\n{INSTRUCTIONS}"
    assert _run(_at(served, ""), scenario, mode) == INSTRUCTIONS
    assert _run(_at(served, "web"), scenario, mode) == INSTRUCTIONS


@pytest.mark.parametrize("mode", MODES)
def test_a_named_server_calls_our_tool_and_its_upstreams_tools_as_mcp_does(served, mode):
    support, root = _at(served, "support"), _at(served, "")
    for name, arguments in (
        ("explain_error", {"code": "RATE_LIMIT"}),
        ("web__add", {"a": 2, "b": 40}),
        ("local__echo", {"text": "through support"}),
        ("web__fail_hostile", {}),
    ):
        at_root = _call(root, name, arguments, mode)
        composed = _call(support, name, arguments, mode)
        assert composed.model_dump_json() == at_root.model_dump_json(), name
    assert json.loads(_call(support, "web__add", {"a": 2, "b": 40}, mode).content[0].text) == {"sum": 42}
    assert _call(support, "local__echo", {"text": "hi"}, mode).content[0].text == "hi"


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_outside_the_composition_is_refused_as_an_unknown_tool(served, mode):
    support = _at(served, "support")
    composed = set(_tools(support, mode))
    # Ours not chosen, an upstream's not chosen, an upstream's tool by its own name, a name nothing serves.
    for name in ("list_error_codes", "local__add", "echo", "no_such_tool"):
        result = _call(support, name, {}, mode)
        assert result.is_error and result.structured_content["code"] == "FUNCTION_NOT_FOUND", name
        # Close names only, and only the composition's.
        alternatives = result.structured_content.get("details", {}).get("alternatives", [])
        assert set(alternatives) <= composed, (name, alternatives)
    echo = _call(support, "echo", {}, mode).structured_content["details"]["alternatives"]
    assert echo and set(echo) <= composed  # the upstream's own name for a composed tool finds it
    unknown_at_root = _call(_at(served, ""), "no_such_tool", {}, mode).structured_content
    assert _call(support, "no_such_tool", {}, mode).structured_content.keys() == unknown_at_root.keys()


def test_a_call_through_a_named_server_is_recorded_as_at_mcp(served):
    app = served["app"]

    def counted() -> dict[str, float]:
        scraped = app.get("/metrics", key=served["metrics"]).text
        pattern = r"^errcatalog_tool_calls_total\{([^}]*)\} (\S+)$"
        return {labels: float(value) for labels, value in re.findall(pattern, scraped, re.MULTILINE)}

    series = 'outcome="ok",tool="local__echo",upstream="local"'
    before = counted().get(series, 0.0)
    for mode in MODES:
        assert not _call(_at(served, "support"), "local__echo", {"text": "counted"}, mode).is_error
    wait_until(lambda: counted().get(series, 0.0) >= before + 2, seconds=10, what="the calls counted")


# --- Resources and prompts: /mcp's, with the composed upstreams' only --------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_named_server_offers_the_catalogs_and_its_upstreams_resources_and_prompts(served, mode):
    async def scenario(client):
        resources = {r.uri for r in (await client.list_resources()).resources}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        greeting = (await client.read_resource("errcatalog-upstream://web/note://greeting")).contents[0].text
        with pytest.raises(MCPError) as elsewhere:
            await client.read_resource("errcatalog-upstream://local/note://greeting")
        with pytest.raises(MCPError) as prompt_elsewhere:
            await client.get_prompt("local__fail_prompt", {})
        return resources, prompts, greeting, elsewhere.value.error.code, prompt_elsewhere.value.error

    resources, prompts, greeting, refused, prompt_refused = _run(_at(served, "notes"), scenario, mode)
    assert {"errcatalog://codes/RATE_LIMIT", "errcatalog-upstream://web/note://greeting"} <= resources
    assert not any(uri.startswith("errcatalog-upstream://local/") for uri in resources)
    assert "web__fail_prompt" in prompts and "local__fail_prompt" not in prompts
    assert greeting == "hello from the upstream"

    async def unknown_at_root(client):
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("errcatalog-upstream://nowhere/note://greeting")
        with pytest.raises(MCPError) as unknown_prompt:
            await client.get_prompt("nowhere__fail_prompt", {})
        return unknown.value.error, unknown_prompt.value.error

    # As /mcp answers for an upstream it does not serve.
    unknown_resource, unknown_prompt = _run(_at(served, ""), unknown_at_root, mode)
    assert refused == unknown_resource.code
    assert prompt_refused == unknown_prompt
    support = _run(_at(served, "support"), lambda client: client.list_resources(), mode)
    assert "errcatalog-upstream://local/note://greeting" in {r.uri for r in support.resources}


# --- Which servers there are, and who may use them -----------------------------------------------------------------


def test_a_disabled_or_unknown_named_server_is_the_same_404_as_an_unknown_server(served):
    base = served["app"].mcp_url
    for path in (f"{base}/paused", f"{base}/nowhere"):
        response = _post(path, served["all"])
        assert (response.status_code, response.json()) == (404, NOT_HERE), path


@pytest.mark.parametrize("mode", MODES)
def test_a_token_limited_to_a_named_server_uses_that_one_only(served, mode):
    assert "explain_error" in _tools(_at(served, "support", "support_only"), mode)
    echoed = _call(_at(served, "support", "support_only"), "local__echo", {"text": "mine"}, mode)
    assert echoed.content[0].text == "mine"
    for elsewhere in ("", "web", "notes"):
        # The SDK's client reads the guard's 404 as its "Not Found" and gives up at its first request.
        with pytest.raises(ExceptionGroup) as refused:
            _tools(_at(served, elsewhere, "support_only"), mode)
        assert refused.group_contains(MCPError, match="^Not Found$"), elsewhere
    base = served["app"].mcp_url
    for path in (base, f"{base}/web", f"{base}/notes"):
        response = _post(path, served["support_only"])
        assert (response.status_code, response.json()) == (404, NOT_HERE), path
    # And a token limited to an upstream's path may not use a named server composed of it.
    assert _post(f"{base}/support", served["web_only"]).status_code == 404


def test_a_session_opened_at_a_named_server_is_refused_at_mcp(served):
    # The rule is the virtual servers' (tested there for upstreams' paths): a session is held to its path.
    base, key = served["app"].mcp_url, served["all"]
    session = _post(f"{base}/support", key).headers["mcp-session-id"]
    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    assert _post(base, key, body=listed, session=session).status_code == 404


# --- Completions: the composed upstreams' arguments only --------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_named_server_completes_the_arguments_of_its_upstreams_prompts_only(served, mode):
    def completed(server: str, prompt: str) -> list[str]:
        async def scenario(client):
            ref = types.PromptReference(type="ref/prompt", name=prompt)
            return (await client.complete(ref, {"name": "team", "value": "S"})).completion.values

        return _run(_at(served, server), scenario, mode)

    # ``notes`` composes web alone, ``support`` web and local; /mcp serves both.
    assert completed("notes", "web__greet") == ["Sales", "Support"]
    assert completed("", "local__greet") == ["Sales", "Support"]
    assert completed("support", "local__greet") == ["Sales", "Support"]
    # An upstream it does not compose completes nothing, as /mcp answers for an upstream it lacks.
    assert completed("notes", "local__greet") == completed("", "nowhere__greet") == []


# --- Staff change a composition: connected clients hear that the tool list changed ---------------------------------

CHANGE = """
from errcatalog.gateway.models import NamedServer
from errcatalog.gateway.named_servers import named_server_update
named_server_update(actor=None, server=NamedServer.objects.get(name="live"), tools=TOOLS, upstreams=UPSTREAMS)
"""


def test_a_listener_and_a_2025_session_hear_when_a_named_servers_composition_changes(served):
    live = _at(served, "live")
    session_heard: list[str] = []

    async def handler(message) -> None:
        if hasattr(message, "method"):
            session_heard.append(message.method)

    async def scenario():
        async with live.client() as client, live.client(mode="legacy", message_handler=handler) as session:
            assert session.protocol_version == "2025-11-25"
            before = {tool.name for tool in (await session.list_tools()).tools}
            # Our tool in, the upstream's out (or back, whichever this package's run left it at): the composition.
            composed = {"explain_error"} if "explain_error" not in before else {"web__echo"}
            tools = ["explain_error"] if composed == {"explain_error"} else []
            upstreams = {} if composed == {"explain_error"} else {"web": ["echo"]}
            change = f"TOOLS = {tools!r}\nUPSTREAMS = {upstreams!r}\n{CHANGE}"
            async with client.listen(tools_list_changed=True) as subscription:
                await asyncio.to_thread(manage, served["env"], "shell", "--no-imports", "-c", change)
                with anyio.fail_after(30):
                    async for event in subscription:
                        heard = event
                        break
                    while "notifications/tools/list_changed" not in session_heard:
                        await anyio.sleep(0.05)
            after = {tool.name for tool in (await session.list_tools()).tools}
            listed = {tool.name for tool in (await client.list_tools()).tools}
        return before, heard, composed, after, listed

    before, heard, composed, after, listed = asyncio.run(scenario())
    assert before in ({"web__echo"}, {"explain_error"})
    assert heard == ToolsListChanged()
    assert after == listed == composed
