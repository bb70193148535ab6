"""Each way an upstream's call fails carries its kind and its cut, redacted text for the catalog's rules."""

from __future__ import annotations

import pytest

from errcatalog.render.classify import classify, facts_from_exception
from errcatalog.vocabulary import UPSTREAM_FAILURE_KINDS
from mcpserver.gateway.failures import (
    UpstreamConnectionError,
    UpstreamError,
    UpstreamHttpError,
    UpstreamJsonRpcError,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamToolError,
    UpstreamUnavailable,
)


@pytest.mark.parametrize(
    ("failure", "kind", "code"),
    [
        (
            UpstreamToolError("files", "EISDIR: illegal operation on a directory, read"),
            "tool_error",
            "INVALID_PARAMETER",
        ),
        (
            UpstreamToolError("files", "Widget exploded"),
            "tool_error",
            "UPSTREAM_TOOL_FAILED",
        ),
        (
            UpstreamJsonRpcError("git", "-31999: nope", said="nope", jsonrpc_code=-31999),
            "jsonrpc_error",
            "UPSTREAM_TOOL_FAILED",
        ),
        (
            UpstreamJsonRpcError("git", "-32602: Unknown tool: x", jsonrpc_code=-32602),
            "jsonrpc_error",
            "INVALID_PARAMS",
        ),
        (UpstreamHttpError("web", "HTTP 503", status_code=503), "http_status", "SERVICE_UNAVAILABLE"),
        (UpstreamTimeout("web", "no answer within 2 s"), "timeout", "NETWORK_ERROR"),
        (UpstreamConnectionError("local", "Connection closed"), "connection", "NETWORK_ERROR"),
        (UpstreamProtocolError("junk", "not JSON"), "malformed", "EXECUTION_FAILURE"),
        (UpstreamUnavailable("web", "circuit open", retry_after=3), "circuit_open", "SERVICE_UNAVAILABLE"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_each_failure_says_its_kind_and_the_default_catalog_classifies_it_by_kind(
    default_snapshot, failure, kind, code
):
    facts = facts_from_exception(failure, upstream=failure.upstream)
    assert facts.kind == kind and kind in UPSTREAM_FAILURE_KINDS
    assert classify(default_snapshot, facts) == code


def test_every_failure_class_names_a_kind_of_the_vocabulary():
    classes = UpstreamError.__subclasses__()
    assert len(classes) == 7
    assert {cls.failure_kind for cls in classes} == set(UPSTREAM_FAILURE_KINDS)


def test_the_text_rules_read_is_the_upstreams_own_words_cut_and_redacted():
    said = (
        "Error executing tool read_file: ENOENT: open '/x' token=ghp_abcdefghijklmnopqrstuvwxyz0123456789 " + "A" * 5000
    )
    facts = facts_from_exception(UpstreamToolError("files", said, tool="read_file", secrets=("abcd1234",)))
    # The Python SDK's wrapper (which names the tool) is taken off, so ^ anchors at what the tool said.
    assert facts.text.startswith("ENOENT: open '/x' ")
    assert "ghp_" not in facts.text and len(facts.text) <= 2000
    # Another tool's wrapper is the tool's own words: kept.
    other = facts_from_exception(UpstreamToolError("files", said, tool="write_file"))
    assert other.text.startswith("Error executing tool read_file: ")
    # FastMCP's wrapper is taken off the same way.
    fastmcp = "Error calling tool 'web_fetch': A valid HTTP/HTTPS URL is required"
    assert facts_from_exception(UpstreamToolError("web", fastmcp, tool="web_fetch")).text == (
        "A valid HTTP/HTTPS URL is required"
    )
    assert facts_from_exception(UpstreamToolError("web", fastmcp, tool="fetch")).text == fastmcp
    # A server that starts its words with the tool's name, inside the SDK's wrapper or not.
    named = 'Error executing tool get_node: get_node: Invalid mode "explain". Valid options: info, docs'
    assert facts_from_exception(UpstreamToolError("n8n", named, tool="get_node")).text.startswith("Invalid mode ")
    assert facts_from_exception(UpstreamToolError("n8n", named, tool="get")).text == named
    # Symbols a server puts before its words go, then a JavaScript error's word; symbols alone stay.
    for said, read in [("🌐 Network Error: fetch failed", "Network Error: fetch failed"),
                       ("❌ Error: Table 'x' doesn't exist", "Table 'x' doesn't exist"),
                       ("🔒 URL blocked by security policy", "URL blocked by security policy"),
                       ("⚠️", "⚠️"), ("→ 1", "→ 1")]:  # fmt: skip
        assert facts_from_exception(UpstreamToolError("web", said, tool="t")).text == read
    # A JSON-RPC error's text is its message, without the code our log line puts before it.
    rpc = UpstreamJsonRpcError("git", "-32602: Unknown tool: x", said="Unknown tool: x", jsonrpc_code=-32602)
    assert facts_from_exception(rpc).text == "Unknown tool: x"
    assert "Unknown tool" in str(rpc)  # the log keeps both
