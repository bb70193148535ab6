"""Each upstream served alone at /mcp/<name>: its tools unprefixed, behind /mcp's guard, pipeline and outcomes.

The served app is the gateway tests' ``served`` (``conftest.py``): production's, with ``upstream_server.py`` over
Streamable HTTP (``web``) and over stdio (``local``), and ``off``, imported and then disabled. The client is the SDK's,
in both protocol generations.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcpserver.gateway.test_gateway_calls import HOSTILE_MARKERS
from tests.support.mcp import McpTarget
from tests.support.waiting import wait_until

MODES = ["auto", "legacy"]  # 2026-07-28, 2025-11-25
LEGACY_VERSION = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture
def served(virtual_served) -> dict:
    return virtual_served


def _at(served: dict, server: str, who: str = "all") -> McpTarget:
    """``server``'s path ("" for /mcp itself) with the token ``who``."""
    return McpTarget(f"{served['app'].mcp_url}/{server}".rstrip("/"), served[who])


def _run(target: McpTarget, scenario, mode: str):
    async def run():
        async with target.client(mode=mode) as client:
            return await scenario(client)

    return asyncio.run(run())


def _tools(target: McpTarget, mode: str = "auto") -> dict[str, types.Tool]:
    async def scenario(client):
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    return _run(target, scenario, mode)


def _call(target: McpTarget, name: str, arguments: dict, mode: str = "auto") -> types.CallToolResult:
    async def scenario(client):
        return await client.call_tool(name, arguments)

    return _run(target, scenario, mode)


# --- Listing and calling --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_an_upstreams_server_lists_its_tools_unprefixed_as_mcp_serves_them(served, mode):
    root = _tools(_at(served, ""), mode)
    view = _tools(_at(served, "web"), mode)
    expected = {name.removeprefix("web__"): tool for name, tool in root.items() if name.startswith("web__")}
    assert set(view) == set(expected) and {"echo", "add", "send_note", "fail_hostile"} <= set(view)
    for name, tool in view.items():
        assert tool.model_dump(exclude={"name"}) == expected[name].model_dump(exclude={"name"})
    # Neither our own tools nor another upstream's.
    assert "explain_error" in root and "explain_error" not in view
    assert not any("__" in name for name in view)
    assert set(_tools(_at(served, "local"), mode)) == set(view)


@pytest.mark.parametrize("mode", MODES)
def test_a_call_by_the_unprefixed_name_answers_as_the_prefixed_call_at_mcp(served, mode):
    at_root = _call(_at(served, ""), "web__add", {"a": 2, "b": 40}, mode)
    in_view = _call(_at(served, "web"), "add", {"a": 2, "b": 40}, mode)
    assert not in_view.is_error
    assert in_view.model_dump_json() == at_root.model_dump_json()
    assert json.loads(in_view.content[0].text) == {"sum": 42}


@pytest.mark.parametrize("mode", MODES)
def test_an_upstream_failure_is_catalog_text_naming_the_tool_as_the_model_called_it(served, mode):
    result = _call(_at(served, "web"), "fail_hostile", {}, mode)
    assert result.is_error and result.structured_content["code"] == "UPSTREAM_TOOL_FAILED"
    wire = result.model_dump_json()
    assert "fail_hostile" in result.structured_content["message"]
    assert "web__" not in wire
    for marker in HOSTILE_MARKERS:
        assert marker not in wire, f"{marker!r} reached the model"
    question = _call(_at(served, "web"), "send_note", {"to": "ana@example.com"}, mode)
    assert question.structured_content["code"] == "MISSING_PARAMETER"
    assert "subject" in question.structured_content["message"]
    assert "web__" not in question.model_dump_json()


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tools_alternatives_are_the_servers_own_names(served, mode):
    view = _at(served, "web")
    for name in ("ech", "web__echo", "explain_error"):  # a typo, /mcp's name of it, one of our own tools
        result = _call(view, name, {}, mode)
        assert result.structured_content["code"] == "FUNCTION_NOT_FOUND", name
        # Only this server's names, and only close ones (none is close to explain_error here).
        alternatives = result.structured_content.get("details", {}).get("alternatives", [])
        assert set(alternatives) <= set(_tools(view)), (name, alternatives)
    assert "echo" in _call(view, "ech", {}, mode).structured_content["details"]["alternatives"]
    assert "echo" in _call(view, "web__echo", {}, mode).structured_content["details"]["alternatives"]


def test_a_tool_scope_names_tools_as_mcp_serves_them_at_every_server(served):
    view = _at(served, "web", "echo_only")
    assert set(_tools(view)) == {"echo"}
    assert _call(view, "echo", {"text": "hi"}).content[0].text == "hi"
    hidden = _call(view, "add", {"a": 1, "b": 2})
    assert hidden.structured_content["code"] == "FUNCTION_NOT_FOUND"
    assert "alternatives" not in hidden.structured_content.get("details", {})  # nothing the token may call is close
    near = _call(view, "echoo", {"text": "hi"})
    assert near.structured_content["details"]["alternatives"] == ["echo"]
    assert _tools(_at(served, "local", "echo_only")) == {}


@pytest.mark.parametrize("mode", MODES)
def test_an_upstreams_server_serves_its_own_resources_and_prompts_not_the_catalogs(served, mode):
    async def scenario(client):
        resources = (await client.list_resources()).resources
        prompts = (await client.list_prompts()).prompts
        greeting = await client.read_resource("note://greeting")
        with pytest.raises(MCPError) as read:
            await client.read_resource("errcatalog://codes/RATE_LIMIT")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("MISSING_PARAMETER", {})
        return resources, prompts, greeting, read.value.error.code, prompt.value.error.code

    resources, prompts, greeting, read_code, prompt_code = _run(_at(served, "web"), scenario, mode)
    assert {r.uri for r in resources} == {"note://greeting", "note://fail"}
    assert {p.name for p in prompts} == {"fail_prompt", "greet"}
    assert greeting.contents[0].text == "hello from the upstream"
    # The upstream's own answers, classified by the catalog's rules: the SDK's MCPServer says -32602 for an unknown
    # resource and -32603 for an unknown prompt.
    assert read_code in (-32002, -32602) and prompt_code == -32603
    # /mcp itself still serves the catalog's, and the upstream's beside them.
    root_resources = _run(_at(served, ""), lambda client: client.list_resources(), mode).resources
    assert {"errcatalog://codes/RATE_LIMIT", "errcatalog-upstream://web/note://greeting"} <= {
        r.uri for r in root_resources
    }


def test_the_outcome_is_recorded_under_the_tools_name_at_mcp(served):
    app = served["app"]

    def counted() -> dict[str, float]:
        scraped = app.get("/metrics", key=served["metrics"]).text
        pattern = r"^errcatalog_tool_calls_total\{([^}]*)\} (\S+)$"
        return {labels: float(value) for labels, value in re.findall(pattern, scraped, re.MULTILINE)}

    series = 'outcome="ok",tool="web__echo",upstream="web"'
    before = counted().get(series, 0.0)
    for mode in MODES:
        assert not _call(_at(served, "web"), "echo", {"text": "counted"}, mode).is_error
    wait_until(lambda: counted().get(series, 0.0) >= before + 2, seconds=10, what="the calls counted")
    # Never under the unprefixed name, which would split one tool's metrics by the path it was called at.
    assert not any('tool="echo"' in labels for labels in counted())


# --- Which servers there are, and who may use them -----------------------------------------------------------------


def _post(url: str, key: str | None, *, body: dict = INITIALIZE, session: str | None = None) -> httpx2.Response:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    headers["MCP-Protocol-Version"] = LEGACY_VERSION
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if session:
        headers["Mcp-Session-Id"] = session
    return httpx2.post(url, json=body, headers=headers, timeout=10)


def test_an_unknown_a_disabled_and_a_forbidden_server_get_the_same_404(served):
    base = served["app"].mcp_url
    answers = {
        "unknown": _post(f"{base}/nope", served["all"]),
        "disabled": _post(f"{base}/off", served["all"]),
        "forbidden": _post(f"{base}/local", served["web_only"]),
        "forbidden root": _post(base, served["web_only"]),
        "forbidden upstream": _post(f"{base}/web", served["root_only"]),
    }
    for what, response in answers.items():
        assert response.status_code == 404, what
        assert response.json() == {"error": "There is no MCP server at this path."}, what
        assert response.headers["content-type"] == "application/json", what
    assert len({(r.status_code, r.content) for r in answers.values()}) == 1
    # Without a token nothing is told about which servers exist: the same 401 everywhere.
    unauthorized = {_post(f"{base}/{name}", None).content for name in ("web", "off", "nope")}
    assert len(unauthorized) == 1 and b"bearer token" in unauthorized.pop()


def test_a_token_limited_to_one_server_uses_that_one_only(served):
    assert set(_tools(_at(served, "web", "web_only"))) >= {"echo", "add"}
    assert json.loads(_call(_at(served, "web", "web_only"), "add", {"a": 1, "b": 1}).content[0].text) == {"sum": 2}
    assert "explain_error" in _tools(_at(served, "", "root_only"))
    base = served["app"].mcp_url
    for path, who in ((base, "web_only"), (f"{base}/local", "web_only"), (f"{base}/web", "root_only")):
        assert _post(path, served[who]).status_code == 404, (path, who)


@pytest.mark.parametrize(
    "path",
    [
        "/mcp/..",
        "/mcp/../mcp",
        "/mcp/web/..",
        "/mcp/web%2Fx",
        "/mcp/web%2F",
        "/mcp/web/",
        "/mcp/",
        "/mcp//web",
        "/mcp/web/tools",
        "/mcp/WEB",
        "/mcp/Web",
        "/mcp/" + "w" * 65,
        "/mcp/" + "w" * 5000,
        "/mcp/web%00",
        "/mcp/%3Cscript%3E",
        "/mcp/web;x",
        "/mcp/.web",
    ],
)
def test_a_path_that_names_no_server_is_a_404_that_does_not_repeat_it(served, path):
    target = urlsplit(served["app"].mcp_url)
    # http.client sends the path as it is (an HTTP library would normalise the dots).
    connection = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
    body = json.dumps(INITIALIZE)
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {served['all']}",
    }
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        status, content = response.status, response.read()
    finally:
        connection.close()
    assert status == 404, (path, content[:200])
    assert json.loads(content) == {"error": "There is no MCP server at this path."}


def test_a_path_beside_mcp_is_still_djangos(served):
    assert served["app"].get("/mcpx").status_code == 404
    assert b"There is no MCP server" not in served["app"].get("/mcpx").content


# --- Sessions stay on their path ----------------------------------------------------------------------------------


def _open_session(url: str, key: str) -> str:
    opened = _post(url, key)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(url, key, body=initialized, session=session).status_code == 202
    return session


LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def test_a_session_is_refused_on_any_other_path_as_an_unknown_session_is(served):
    base, key = served["app"].mcp_url, served["all"]
    unknown = _post(base, key, body=LIST, session="0" * 32)
    assert unknown.status_code == 404
    at_web = _open_session(f"{base}/web", key)
    at_root = _open_session(base, key)
    for session, elsewhere in ((at_web, base), (at_web, f"{base}/local"), (at_root, f"{base}/web")):
        refused = _post(elsewhere, key, body=LIST, session=session)
        assert (refused.status_code, refused.content) == (unknown.status_code, unknown.content), elsewhere
    # Where it was opened, it serves on (refusals elsewhere did not end it).
    listed = _post(f"{base}/web", key, body=LIST, session=at_web)
    assert listed.status_code == 200 and '"echo"' in listed.text and "web__echo" not in listed.text
    assert "web__echo" in _post(base, key, body=LIST, session=at_root).text


# --- The SDK's 2026-07-28 header validation reads the server's tools ----------------------------------------------


def test_the_sdks_tool_schema_lookup_runs_in_the_requests_server(mcp, monkeypatch):
    """The SDK asks ``get_tool_input_schema`` with a tool's name only: the server is the request's, through a
    context variable set around the modern manager (this checks the SDK calls it within the request's context)."""
    import config.asgi
    from mcpserver import server as mcp_server

    app = config.asgi.application.mcp
    seen: list[tuple[str, str]] = []
    lookup = app.server.get_tool_input_schema

    def recording(name: str):
        seen.append((name, mcp_server._modern_server.get()))
        return lookup(name)

    monkeypatch.setattr(app.server, "get_tool_input_schema", recording)
    # A server nobody registered, let past the guard for this test only: its view is empty.
    monkeypatch.setattr(app.guard, "serves", lambda server: server == "ghost")
    result = _call(McpTarget(f"{mcp.url}/ghost", mcp.key), "echo", {"text": "x"})
    assert result.structured_content["code"] == "FUNCTION_NOT_FOUND"
    assert ("echo", "ghost") in seen
    seen.clear()
    _call(McpTarget(mcp.url, mcp.key), "explain_error", {"code": "RATE_LIMIT"})
    assert ("explain_error", "") in seen
