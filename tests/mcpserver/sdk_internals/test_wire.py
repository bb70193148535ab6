"""A tool result in its wire form: what the SDK's runner would send, made once for a repeated failure.

The reach of ``mcpserver.sdk_internals.wire``: a copy of ``ServerRunner._serialize``, compared with the runner itself
(its private method: the oracle) for sample results of both generations."""

from __future__ import annotations

import copy
import inspect
import json
import logging

import mcp_types as types
import pytest
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import ServerRunner, _dump_result
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, JSONRPCResponse
from mcp_types.methods import validate_server_result
from pydantic import ValidationError

from errcatalog.caching import caches_invalidate
from errcatalog.render import Failure, ParameterFault, render
from mcpserver import pipeline
from mcpserver.gateway.results import without_protocol_meta
from mcpserver.sdk_internals import wire
from mcpserver.server import SERVER_INFO, SERVER_NAME, SERVER_VERSION
from tests.mcpserver.sdk_internals.support import revisit

VERSIONS = ("2026-07-28", "2025-11-25")
UPSTREAM = {"name": "upstream", "version": "7"}


def test_the_runners_serialisation_is_the_method_the_copy_follows():
    parameters = list(inspect.signature(ServerRunner._serialize).parameters)
    assert parameters == ["self", "method", "version", "result"], revisit(
        "wire", f"ServerRunner._serialize takes {parameters}"
    )


def sdk_form(result, version: str) -> dict:
    """What the SDK's own runner makes of a handler's ``result``: the oracle."""
    connection = Connection.from_envelope(version, None, None)
    runner = ServerRunner(Server(SERVER_NAME, version=SERVER_VERSION), connection, None)
    return runner._serialize("tools/call", version, result)


def repeated_failure(snapshot) -> types.CallToolResult:
    failure = Failure("MISSING_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to"),))
    return pipeline._result_of(render(snapshot, failure, pick=0.0), "markdown")


def results(snapshot) -> dict[str, types.CallToolResult | types.InputRequiredResult]:
    failure = Failure("SERVER_ERROR", tool_name="send_email", event_id="0123456789abcdef0123456789abcdef")
    return {
        "repeated failure": repeated_failure(snapshot),
        "failure with an event ID": pipeline._result_of(render(snapshot, failure, pick=0.0), "markdown"),
        "success": types.CallToolResult(content=[types.TextContent(type="text", text="hi")], structured_content={}),
        "upstream's own identity and meta": types.CallToolResult(
            content=[], meta={types.SERVER_INFO_META_KEY: UPSTREAM, "trace": "t1"}
        ),
        "upstream's meta": types.CallToolResult(content=[], meta={"trace": "t1"}),
    }


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "kind", ["repeated failure", "failure with an event ID", "success", "upstream's own identity and meta",
             "upstream's meta"],
)  # fmt: skip
def test_a_result_goes_out_as_the_sdks_runner_would_send_it(default_snapshot, kind, version):
    result = results(default_snapshot)[kind]
    expected = sdk_form(result, version)
    assert wire.wire_result(result, version, server_info=SERVER_INFO) == expected, revisit(
        "wire", f"the runner serialises a {version} {kind} result otherwise"
    )
    assert wire.wire_result(result, version, server_info=SERVER_INFO) == expected  # a second time, from memory
    if version == "2026-07-28":
        stamped = expected["_meta"][types.SERVER_INFO_META_KEY]
        assert stamped == (UPSTREAM if kind == "upstream's own identity and meta" else SERVER_INFO)


def test_a_question_of_a_2026_call_goes_out_as_the_sdks_runner_would_send_it():
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    question = types.ElicitRequest(params=types.ElicitRequestFormParams(message="To whom?", requested_schema=schema))
    result = types.InputRequiredResult(input_requests={"to": question}, request_state="state")
    assert wire.wire_result(result, "2026-07-28", server_info=SERVER_INFO) == sdk_form(result, "2026-07-28")


def test_only_a_remembered_result_has_a_kept_form(default_snapshot):
    kept = results(default_snapshot)
    assert wire.remembered_form(kept["repeated failure"], "2026-07-28", server_info=SERVER_INFO) is not None
    for kind in ("failure with an event ID", "success"):
        assert wire.remembered_form(kept[kind], "2026-07-28", server_info=SERVER_INFO) is None


def test_a_repeated_failures_form_is_made_once_per_version_and_serving_leaves_it_as_it_was(default_snapshot):
    result = repeated_failure(default_snapshot)
    forms = {version: wire.wire_result(result, version, server_info=SERVER_INFO) for version in VERSIONS}
    assert "_meta" not in forms["2025-11-25"] and "resultType" not in forms["2025-11-25"]
    assert forms["2026-07-28"]["resultType"] == "complete"
    before, identity = copy.deepcopy(forms), copy.deepcopy(SERVER_INFO)
    for _ in range(2):
        for version in VERSIONS:
            form = wire.wire_result(result, version, server_info=SERVER_INFO)
            assert form is forms[version]
            # What the SDK does with the form on the way out: copies it into a response, which it dumps.
            sent = JSONRPCResponse(jsonrpc="2.0", id=1, result=_dump_result(form)).model_dump(by_alias=True)
            sent["result"]["content"][0]["text"] = "changed on the way out"
            sent["result"].get("_meta", {})[types.SERVER_INFO_META_KEY] = {"name": "changed too"}
    assert forms == before
    assert identity == SERVER_INFO


def test_the_kept_forms_go_with_the_catalog(default_snapshot):
    result = repeated_failure(default_snapshot)
    assert wire.remembered_form(result, "2026-07-28", server_info=SERVER_INFO) is not None
    caches_invalidate(scope="catalog")
    assert wire.remembered_form(result, "2026-07-28", server_info=SERVER_INFO) is None


def test_a_result_that_does_not_fit_the_versions_schema_is_an_internal_error_and_stays_in_the_log(caplog):
    # A question is a 2026-07-28 result only; a 2025-11-25 call cannot carry it.
    schema = {"type": "object", "properties": {}}
    question = types.ElicitRequest(params=types.ElicitRequestFormParams(message="x", requested_schema=schema))
    result = types.InputRequiredResult(input_requests={"secret-in-the-result": question})
    with caplog.at_level(logging.ERROR, logger="mcpserver.sdk_internals.wire"), pytest.raises(MCPError) as raised:
        wire.wire_result(result, "2025-11-25", server_info=SERVER_INFO)
    assert raised.value.error.code == INTERNAL_ERROR
    assert raised.value.error.message == "Handler returned an invalid result"
    assert "secret-in-the-result" not in json.dumps(raised.value.error.model_dump(mode="json"))
    assert "does not fit the 2025-11-25 schema" in caplog.text


# Results as upstreams send them (2026-07-28, whose results carry ``resultType``), one per kind of content, with the
# upstream's identity in ``_meta``.
UPSTREAM_ANSWERS = [
    {"content": [{"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}}]},
    {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}], "isError": False},
    {"content": [{"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}]},
    {"content": [{"type": "resource_link", "uri": "file:///a.txt", "name": "a", "size": 2}]},
    {"content": [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a", "mimeType": "text/plain"}}]},
    {"content": [], "structuredContent": {"n": 1, "nested": {"list": [1.5, None, "x"]}}, "extra": "dropped"},
]


@pytest.mark.parametrize("raw", UPSTREAM_ANSWERS)
def test_a_forwarded_result_goes_out_as_the_same_result_read_plainly_would(raw):
    version = "2026-07-28"
    raw = {**raw, "resultType": "complete", "_meta": {types.SERVER_INFO_META_KEY: UPSTREAM, "trace": "t1"}}
    plain = without_protocol_meta(types.CallToolResult.model_validate(raw, by_name=False))
    forwarded = without_protocol_meta(wire.forwarded(raw, version))
    assert wire._surface_form(forwarded, version) is not None  # the kept form is the one sent
    assert wire.wire_result(forwarded, version, server_info=SERVER_INFO) == sdk_form(plain, version)
    # Changed in any other way than its _meta, or sent to a client of another version: dumped and checked afresh.
    changed = forwarded.model_copy(update={"content": [types.TextContent(type="text", text="other")]})
    assert wire._surface_form(changed, version) is None
    assert wire.wire_result(changed, version, server_info=SERVER_INFO) == sdk_form(
        plain.model_copy(update={"content": changed.content}), version
    )
    assert wire._surface_form(forwarded, "2025-11-25") is None
    assert wire.wire_result(forwarded, "2025-11-25", server_info=SERVER_INFO) == sdk_form(plain, "2025-11-25")


def test_a_forwarded_result_is_checked_as_the_sdks_client_checks_one():
    with pytest.raises(ValidationError):
        wire.forwarded({"content": "not a list"}, "2026-07-28")
    with pytest.raises(ValidationError):
        validate_server_result("tools/call", "2026-07-28", {"content": "not a list"})
