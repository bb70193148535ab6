"""The upstreams' resources, templates, prompts and completions, through /mcp and each upstream's own path.

npm's unmodified ``server-everything`` over stdio (``everything``) and Streamable HTTP (``everything-http``, prefix
``everything_http``), and ``upstream_server.py`` over HTTP (``web``: a resource and a prompt that fail with hostile
text, and some whose metadata the screen flags), behind production's served app (``offerings_app``, shared with
``test_upstream_subscriptions.py``). Every feature is compared with a direct connection to server-everything; the
client is the SDK's, in both protocol generations.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.errcatalog.outcomes.test_prometheus import value
from tests.mcpserver.gateway.test_gateway_calls import HOSTILE_MARKERS
from tests.mcpserver.gateway.upstreams import everything_server
from tests.support.mcp import McpTarget

MODES = ["auto", "legacy"]  # 2026-07-28, 2025-11-25
SCHEME = "errcatalog-upstream://"
STATIC = "demo://resource/static/document/architecture.md"
TEXT = "demo://resource/dynamic/text/1"
BLOB = "demo://resource/dynamic/blob/1"
# server-everything's dynamic resources name the time they were made: compared without it.
_TIME = re.compile(r"\d{1,2}:\d{2}:\d{2}( [AP]M)?")


@pytest.fixture(scope="module")
def served(offerings_app) -> dict:
    return offerings_app


def _at(served: dict, server: str = "", who: str = "all") -> McpTarget:
    return McpTarget(f"{served['app'].mcp_url}/{server}".rstrip("/"), served[who])


def _run(target: McpTarget, scenario, mode: str = "auto", **options):
    async def run():
        async with target.client(mode=mode, **options) as client:
            return await scenario(client)

    return asyncio.run(run())


def _direct(scenario):
    """``scenario`` against server-everything directly, over stdio, without the gateway."""

    async def run():
        node, script = everything_server()
        async with Client(stdio_client(StdioServerParameters(command=node, args=[script, "stdio"]))) as client:
            return await scenario(client)

    return asyncio.run(run())


def _error(target: McpTarget, scenario, mode: str = "auto") -> types.ErrorData:
    async def failing(client):
        with pytest.raises(MCPError) as raised:
            await scenario(client)
        return raised.value.error

    return _run(target, failing, mode)


def _dump(model) -> str:
    """``model`` as JSON without the times server-everything writes into its dynamic resources (blobs decoded)."""
    dumped = model.model_dump(mode="json", exclude={"meta"})
    for content in dumped.get("contents", ()):
        if "blob" in content:
            content["blob"] = base64.b64decode(content["blob"]).decode()
    return _TIME.sub("<time>", json.dumps(dumped, sort_keys=True))


async def _lists(client):
    return (
        (await client.list_resources()).resources,
        (await client.list_resource_templates()).resource_templates,
        (await client.list_prompts()).prompts,
    )


# --- Lists ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_mcp_lists_every_upstreams_offerings_namespaced_beside_the_catalogs(served, mode):
    resources, templates, prompts = _run(_at(served), _lists, mode)
    direct_resources, direct_templates, direct_prompts = _direct(_lists)
    uris = {r.uri for r in resources}
    for name in ("everything", "everything-http"):
        assert {f"{SCHEME}{name}/{r.uri}" for r in direct_resources} <= uris
        assert {f"{SCHEME}{name}/{t.uri_template}" for t in direct_templates} <= {t.uri_template for t in templates}
    for prefix in ("everything", "everything_http"):
        assert {f"{prefix}__{p.name}" for p in direct_prompts} <= {p.name for p in prompts}
    # Everything else about them is the upstream's own.
    listed = {r.uri: r for r in resources}
    for resource in direct_resources:
        mine = listed[f"{SCHEME}everything/{resource.uri}"]
        assert mine.model_dump(exclude={"uri"}) == resource.model_dump(exclude={"uri"})
    assert f"{SCHEME}web/note://greeting" in uris
    assert "errcatalog://codes/RATE_LIMIT" in uris  # the catalog's are still there
    assert len(uris) == len(resources)  # nothing collides


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", ["everything", "everything-http"])
def test_an_upstreams_path_lists_its_own_offerings_as_a_direct_connection_does(served, mode, server):
    mine = _run(_at(served, server), _lists, mode)
    direct = _direct(_lists)
    for ours, theirs in zip(mine, direct, strict=True):
        assert [_dump(item) for item in ours] == [_dump(item) for item in theirs]


# --- Reads, prompts, completions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("uri", [STATIC, TEXT, BLOB])
def test_a_resource_reads_through_mcp_and_the_upstreams_path_as_directly(served, mode, uri):
    direct = _direct(lambda client: client.read_resource(uri))
    at_root = _run(_at(served), lambda client: client.read_resource(f"{SCHEME}everything/{uri}"), mode)
    at_path = _run(_at(served, "everything-http"), lambda client: client.read_resource(uri), mode)
    assert _dump(at_root) == _dump(direct) == _dump(at_path)
    assert at_root.contents and at_root.contents[0].uri == uri  # the payload passes unchanged


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("prompt", "arguments"),
    [("args-prompt", {"city": "Lisbon", "state": "Lisboa"}), ("resource-prompt", {"resourceType": "Text",
                                                                                  "resourceId": "2"})],
)  # fmt: skip
def test_a_prompt_gets_through_mcp_and_the_upstreams_path_as_directly(served, mode, prompt, arguments):
    direct = _direct(lambda client: client.get_prompt(prompt, arguments))
    at_root = _run(_at(served), lambda client: client.get_prompt(f"everything_http__{prompt}", arguments), mode)
    at_path = _run(_at(served, "everything"), lambda client: client.get_prompt(prompt, arguments), mode)
    assert _dump(at_root) == _dump(direct) == _dump(at_path)


@pytest.mark.parametrize("mode", MODES)
def test_a_prompt_argument_completes_as_directly(served, mode):
    argument = {"name": "department", "value": "E"}

    def ref(name):
        return types.PromptReference(type="ref/prompt", name=name)

    direct = _direct(lambda client: client.complete(ref("completable-prompt"), argument))
    at_root = _run(_at(served), lambda client: client.complete(ref("everything__completable-prompt"), argument), mode)
    at_path = _run(_at(served, "everything"), lambda client: client.complete(ref("completable-prompt"), argument), mode)
    assert direct.completion.values == ["Engineering"]
    assert at_root.completion == direct.completion == at_path.completion


# --- A tool's resource links ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_tools_resource_link_reads_through_mcp_and_the_upstreams_path(served, mode):
    async def scenario(client):
        result = await client.call_tool("everything__get-resource-links", {"count": 2})
        links = [block for block in result.content if isinstance(block, types.ResourceLink)]
        return result, links, [await client.read_resource(link.uri) for link in links]

    result, links, reads = _run(_at(served), scenario, mode)
    direct = _direct(lambda client: client.call_tool("get-resource-links", {"count": 2}))
    assert result.content == direct.content  # the result passes unchanged: raw upstream URIs
    assert [link.uri for link in links] == ["demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/2"]
    for link, read in zip(links, reads, strict=True):
        assert _dump(read) == _dump(_direct(lambda client, uri=link.uri: client.read_resource(uri)))
        at_path = _run(_at(served, "everything"), lambda client, uri=link.uri: client.read_resource(uri), mode)
        assert _dump(at_path) == _dump(read)


def test_a_raw_uri_two_upstreams_claim_is_refused_unless_a_result_carried_it(served):
    # The "scoped" token never called a tool that linked it, and sees only everything's: one claim, read there.
    assert _run(_at(served, who="scoped"), lambda client: client.read_resource(TEXT)).contents
    # Another token sees both everything servers: two claims, refused with catalog text.
    error = _error(_at(served, who="all"), lambda client: client.read_resource("demo://resource/dynamic/text/9"))
    assert error.code == -32602 and "everything" not in error.message


# --- Subscriptions ----------------------------------------------------------------------------------------------


def test_a_2025_session_subscribed_at_mcp_hears_the_upstreams_updates_by_its_uri(served):
    uri = f"{SCHEME}everything/{TEXT}"
    heard: list[str] = []

    async def handler(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(message.params.uri)

    async def scenario(client):
        await client.subscribe_resource(uri)
        await client.call_tool("everything__toggle-subscriber-updates", {})  # every 5 s from now on
        try:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(15):
                    while not heard:
                        await asyncio.sleep(0.2)
                    raise TimeoutError  # heard one: leave the wait
        finally:
            await client.call_tool("everything__toggle-subscriber-updates", {})
            await client.unsubscribe_resource(uri)

    _run(_at(served), scenario, "legacy", message_handler=handler)
    assert heard and set(heard) == {uri}


def test_a_2026_listen_stream_at_the_upstreams_path_hears_its_updates(served):
    async def scenario(client):
        async with client.listen(resource_subscriptions=[TEXT]) as subscription:
            await client.call_tool("toggle-subscriber-updates", {})
            try:
                async with asyncio.timeout(15):
                    async for event in subscription:
                        return event
            finally:
                await client.call_tool("toggle-subscriber-updates", {})

    event = _run(_at(served, "everything"), scenario, "auto")
    assert getattr(event, "uri", None) == TEXT


# --- Failures ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("server", "scenario"),
    [
        ("", lambda client: client.read_resource(f"{SCHEME}web/note://fail")),
        ("web", lambda client: client.read_resource("note://fail")),
        ("", lambda client: client.get_prompt("web__fail_prompt")),
        ("web", lambda client: client.get_prompt("fail_prompt")),
    ],
)
def test_an_upstreams_failing_read_or_prompt_is_catalog_text(served, mode, server, scenario):
    error = _error(_at(served, server), scenario, mode)
    wire = error.model_dump_json()
    for marker in HOSTILE_MARKERS:
        assert marker not in wire, f"{marker!r} reached the client"
    # The upstream's -32603 is classified as a failed tool call's would be (a JSON-RPC error the text rules do not
    # know: UPSTREAM_TOOL_FAILED, whose JSON-RPC code is -32603 too).
    assert error.code == -32603 and error.message and "leak" not in wire


@pytest.mark.parametrize(("mode", "code"), [("auto", -32602), ("legacy", -32002)])
@pytest.mark.parametrize(
    "uri",
    [
        f"{SCHEME}nope/{TEXT}",  # an upstream that does not exist
        f"{SCHEME}everything",  # no URI of its own
        f"{SCHEME}everything/",
        f"{SCHEME}Everything/{TEXT}",  # not a server name
        f"{SCHEME}every thing/{TEXT}",
        f"{SCHEME}../{TEXT}",
        f"{SCHEME}everything/demo://" + "x" * 9000,  # longer than any URI read (a 2026 header carries it)
        "demo://nothing-claims-this",
    ],
)
def test_an_unknown_or_malformed_uri_is_an_unknown_resource(served, mode, code, uri):
    known = _error(_at(served), lambda client: client.read_resource("errcatalog://codes/NO_SUCH_CODE"), mode)
    error = _error(_at(served), lambda client: client.read_resource(uri), mode)
    assert (error.code, error.message) == (code, known.message)


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_prompt_of_an_upstream_is_an_unknown_prompt(served, mode):
    for name in ("nope__simple-prompt", "everything__", "__simple-prompt"):
        error = _error(_at(served), lambda client, name=name: client.get_prompt(name), mode)
        assert error.code == -32602, name
    # One the upstream does not have: its own -32602, classified as INVALID_PARAMS.
    error = _error(_at(served), lambda client: client.get_prompt("everything__nope"), mode)
    assert error.code == -32602 and "nope" not in error.message


# --- Who sees them ----------------------------------------------------------------------------------------------


def test_a_token_without_the_catalog_read_right_sees_no_upstream_offerings(served):
    resources, templates, prompts = _run(_at(served, who="blind"), _lists)
    assert resources == [] and templates == [] and prompts == []
    error = _error(_at(served, who="blind"), lambda client: client.read_resource(f"{SCHEME}everything/{STATIC}"))
    assert error.code == -32602
    assert _run(_at(served, "everything", "blind"), _lists) == ([], [], [])


def test_a_tool_scope_shows_the_offerings_of_the_upstreams_it_names(served):
    resources, _, prompts = _run(_at(served, who="scoped"), _lists)
    assert {r.uri.split("/")[2] for r in resources if r.uri.startswith(SCHEME)} == {"everything"}
    assert {p.name.split("__")[0] for p in prompts if "__" in p.name} == {"everything"}
    error = _error(_at(served, who="scoped"), lambda client: client.read_resource(f"{SCHEME}everything-http/{STATIC}"))
    assert error.code == -32602


def test_a_token_limited_to_one_server_reads_there_only(served):
    assert _run(_at(served, "everything", "everything_only"), lambda client: client.read_resource(STATIC)).contents
    refused = _at(served, "", "everything_only").raw(
        body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": {}}).encode(),
        headers={"Authorization": f"Bearer {served['everything_only']}", "MCP-Protocol-Version": "2026-07-28",
                 "Mcp-Method": "resources/list"},
    )  # fmt: skip
    assert refused.status_code == 404


# --- Counted, not recorded ------------------------------------------------------------------------------------


def test_relayed_requests_are_counted_by_upstream_method_and_code(served):
    def counted() -> tuple[float, float]:
        text = served["app"].get("/metrics", key=served["metrics"]).text
        metric = "errcatalog_upstream_requests_total"
        failed = value(text, metric, upstream="web", method="prompts/get", outcome="error", code="UPSTREAM_TOOL_FAILED")
        read = value(text, metric, upstream="web", method="resources/read", outcome="ok", code="")
        return failed, read

    failed, read = counted()
    _error(_at(served, "web"), lambda client: client.get_prompt("fail_prompt"))
    _error(_at(served), lambda client: client.get_prompt("web__fail_prompt"))  # /mcp counts under the same upstream
    assert _run(_at(served, "web"), lambda client: client.read_resource("note://greeting")).contents
    assert counted() == (failed + 2, read + 1)


# --- The screen -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", ["", "web"])
def test_resources_and_prompts_whose_metadata_the_screen_flags_are_not_served(served, mode, server):
    resources, _, prompts = _run(_at(served, server), _lists, mode)
    uris, names = {r.uri for r in resources}, {p.name for p in prompts}
    prefix, scheme = ("web__", f"{SCHEME}web/") if not server else ("", "")
    assert f"{scheme}note://greeting" in uris and f"{prefix}fail_prompt" in names  # the clean ones are
    assert f"{scheme}note://poisoned" not in uris  # a poisoned description
    assert f"{prefix}poisoned_prompt" not in names  # a poisoned argument description
    assert f"{prefix}hidden_title_prompt" not in names  # a right-to-left override in its title
    for poisoned in ("poisoned_prompt", "hidden_title_prompt"):  # and they are not served by name either
        error = _error(_at(served, server), lambda client, p=f"{prefix}{poisoned}": client.get_prompt(p, {}), mode)
        assert error.code == -32602 and "IMPORTANT" not in error.model_dump_json()


# --- Capabilities ------------------------------------------------------------------------------------------------


def test_the_capabilities_say_resources_subscriptions_prompts_and_completions(served):
    async def scenario(client):
        return client.server_capabilities

    for server in ("", "everything"):
        capabilities = _run(_at(served, server), scenario, "legacy")
        assert capabilities.resources.subscribe and capabilities.resources.list_changed
        assert capabilities.prompts.list_changed and capabilities.completions is not None


# Last: it takes the hostile upstream away (and brings it back for the modules that share the app).
def test_a_read_of_an_upstream_that_went_away_is_the_catalogs_network_error(served):
    served["hostile"].kill()
    try:
        error = _error(_at(served), lambda client: client.read_resource(f"{SCHEME}web/note://greeting"))
    finally:
        served["hostile"].start()
    assert error.message and error.code != -32602
    assert "ECONNREFUSED" not in error.model_dump_json() and "127.0.0.1" not in error.model_dump_json()
    assert sys.executable not in error.model_dump_json()
