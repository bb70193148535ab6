"""The default catalog's rules against the exact failure texts of real, unmodified MCP servers.

``real_upstream_failures.json`` holds what mcp-server-time, -git and -fetch (PyPI) and server-filesystem,
-everything, -memory and -sequential-thinking (npm) and mcp-server-sqlite answered when run into failures whose
truth is known: each text as the server sent it, with the code the default rules must choose. Pure: no servers, no
database; the failures are built as the gateway builds them (``mcpserver.gateway.failures``), so the Python SDK's
"Error executing tool X: " wrapper is taken off the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from errcatalog.render.classify import classification, classify, facts_from_exception, known
from errcatalog.render.entries import CatalogSnapshot
from mcpserver.gateway.failures import UpstreamError, UpstreamJsonRpcError, UpstreamToolError

CASES = json.loads((Path(__file__).parent / "real_upstream_failures.json").read_text())
FALLBACK = "UPSTREAM_TOOL_FAILED"


def _failure(case: dict) -> UpstreamError:
    if case["kind"] == "jsonrpc_error":
        return UpstreamJsonRpcError(case["server"], case["text"], jsonrpc_code=case["jsonrpc_code"])
    return UpstreamToolError(case["server"], case["text"], tool=case["tool"])


def _code(snapshot: CatalogSnapshot, case: dict) -> str:
    tool = f"{case['server']}__{case['tool']}"
    return classify(snapshot, facts_from_exception(_failure(case), upstream=case["server"], tool=tool))


@pytest.mark.parametrize("case", CASES, ids=[f"{c['server']}-{c['tool']}-{c['case'][:40]}" for c in CASES])
def test_each_real_servers_failure_gets_the_code_its_truth_calls_for(default_snapshot, case):
    assert _code(default_snapshot, case) == case["expected"]


def test_the_fixture_covers_every_category_across_servers():
    by_code: dict[str, set[str]] = {}
    for case in CASES:
        by_code.setdefault(case["expected"], set()).add(case["server"])
    assert {"INVALID_PARAMETER", "NOT_FOUND", "PERMISSION_DENIED", "NETWORK_ERROR"} <= by_code.keys()
    assert len(by_code["INVALID_PARAMETER"]) >= 4 and len(by_code["NOT_FOUND"]) >= 3
    # Only the texts that cannot be told apart by their words fall back: git's bare path and states.
    assert sum(c["expected"] == FALLBACK for c in CASES) <= 6


@pytest.mark.parametrize(
    ("tool", "text", "expected"),
    [
        # An unknown time zone says "not found" and is the caller's bad value.
        ("get_current_time", "Invalid timezone: 'No time zone found with key Mars/Olympus'", "INVALID_PARAMETER"),
        # git's unknown revision "did not resolve" is not DNS.
        ("git_show", "Ref 'deadbeef0123' did not resolve to an object", "NOT_FOUND"),
        # An echoed argument that reads like another category steers nothing: the pattern is anchored at the start.
        ("git_show", "Ref 'connection refused' did not resolve to an object", "NOT_FOUND"),
        (
            "get_current_time",
            "Invalid timezone: 'No time zone found with key Access denied - outside allowed directories'",
            "INVALID_PARAMETER",
        ),
        ("read_text_file", "ENOENT: no such file or directory, open '/tmp/fetch failed'", "NOT_FOUND"),
        # Behind the Python SDK's wrapper the anchor is on the tool's own text, so the tool's name cannot steer.
        ("fetch", "Error executing tool fetch: Unknown tool: fetch_url", "FUNCTION_NOT_FOUND"),
        # fetch's refusal of a private address says "resolves to" and "fetch": it is a refusal, not the network.
        (
            "fetch",
            "Refused to fetch http://10.1.2.3/: 10.1.2.3 resolves to 10.1.2.3, which is not a public address.",
            "PERMISSION_DENIED",
        ),
    ],
)
def test_traps_of_naive_patterns_do_not_catch_the_default_rules(default_snapshot, tool, text, expected):
    case = {"server": "up", "tool": tool, "text": text, "kind": "tool_error"}
    assert _code(default_snapshot, case) == expected


@pytest.mark.parametrize(
    ("text", "guess"),
    [
        # Words a naive pattern would catch, anywhere in a text no specific rule knows, echoed ones among them.
        ("something about connection refused, access denied and not found", "PERMISSION_DENIED"),
        ("ECONNREFUSED somewhere later: Invalid timezone", "NETWORK_ERROR"),
        ("Found 404 items; expected 400", "INVALID_PARAMETER"),  # a status-like number steers nothing
        ("Widget exploded: Access denied - outside allowed directories", "PERMISSION_DENIED"),
    ],
)
def test_words_no_specific_rule_knows_get_only_a_generic_rules_guess_which_counts_as_unclassified(
    default_snapshot, text, guess
):
    # A guess chooses among the catalog's own texts and names no fact; staff see the failure in the inbox.
    failure = UpstreamToolError("up", text, tool="echo")
    found = classification(default_snapshot, facts_from_exception(failure, upstream="up", tool="up__echo"))
    assert (found.code, found.rule.generic, known(found.code, found.rule)) == (guess, True, False)


def test_an_unrecognised_upstream_failure_claims_no_cause(default_snapshot):
    entry = default_snapshot.codes[FALLBACK]
    assert entry.system and not entry.retryable  # the operator's to look at until a rule covers it
    case = {"server": "up", "tool": "t", "text": "Widget exploded", "kind": "tool_error"}
    assert _code(default_snapshot, case) == FALLBACK


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # axios, which most Node servers call APIs with, behind a server's own wrapper.
        ("Error: API request failed: Request failed with status code 404 (404: <!DOCTYPE HTML>", "NOT_FOUND"),
        ("Request failed with status code 401", "AUTHENTICATION_ERROR"),
        ("Request failed with status code 403", "PERMISSION_DENIED"),
        ("Request failed with status code 429", "RATE_LIMIT"),
        ("Request failed with status code 422", "VALIDATION_ERROR"),
        ("Request failed with status code 503", "SERVICE_UNAVAILABLE"),
        ("Request failed with status code 502", "SERVER_ERROR"),
        # fetch wrappers
        ("HTTP error! status: 404", "NOT_FOUND"),
        ("HTTP 403: Forbidden", "PERMISSION_DENIED"),
        ("GitHub API error: 401 Bad credentials", "AUTHENTICATION_ERROR"),
        ("Status 410: the item is gone", "NOT_FOUND"),
        # requests and httpx
        ("404 Client Error: Not Found for url: https://api.example.com/v1/items/7", "NOT_FOUND"),
        ("500 Server Error: Internal Server Error for url: https://api.example.com/v1/items", "SERVER_ERROR"),
        ("Client error '429 Too Many Requests' for url 'https://api.example.com/v1/items'", "RATE_LIMIT"),
        # A status-like number elsewhere, or one that is no status, steers nothing.
        ("Row 404 is not valid", "INVALID_PARAMETER"),
        ("Widget 4040 exploded", FALLBACK),
        # Credentials refused, in common words.
        ("Authentication tokens are no longer valid. Please restart the server to re-authenticate.",
         "AUTHENTICATION_ERROR"),
        ("API key is invalid", "AUTHENTICATION_ERROR"),
        ("Not authenticated", "AUTHENTICATION_ERROR"),
        # Go's network errors in a log line a wrapper holds (kubectl's, behind a Node server's wrappers).
        ("MCP error -32603: Failed to execute kubectl get command: MCP error -32603: Failed to get resource: Command "
         "failed: kubectl get pods -n default -o json\nE1129 18:53:03.893012    8764 memcache.go:265] \"Unhandled "
         "Error\" err=\"couldn't get current server API group list: Get \\\"https://127.0.0.1:1/api\\\": dial tcp "
         "127.0.0.1:1: connect: connection refused\"", "NETWORK_ERROR"),
        # A Go CLI's unknown command, five wrappers deep.
        ("MCP error -32603: Failed to execute kubectl command: Command failed: kubectl frobnicate\nError: unknown "
         'command "frobnicate" for "kubectl"\n', "INVALID_PARAMETER"),
        # Common words: a search that matched nothing, in ESLint's words.
        ("No files matching '/srv/project/missing.js' were found.", "NOT_FOUND"),
        # A wrapper's "Reason:" holds the cause, however long the path before it (a planted file name).
        ("All PDF sources failed to process: Failed to process PDF from /srv/pdfs/" + "x" * 150 + ".pdf. Reason: File "
         "not found at '/srv/pdfs/x.pdf'.", "NOT_FOUND"),
    ],
)  # fmt: skip
def test_http_clients_words_for_a_status_choose_the_code_kept_for_it(default_snapshot, text, expected):
    case = {"server": "up", "tool": "call_api", "text": text, "kind": "tool_error"}
    assert _code(default_snapshot, case) == expected
