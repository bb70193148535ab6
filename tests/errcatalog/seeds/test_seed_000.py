"""Seed 000 (tool error responses, ``toolError:v1``), example by example, through the public API.

Each example is rebuilt three ways: the renderer (``errcatalog.render``), the MCP endpoint through the SDK's
client over HTTP, and the REST API (``POST /api/v1/render/``). The catalog holds the seed's wording as a writer
would type it into admin (variants without a header, as seed 000's messages stand alone); with it every field
equals the seed's. Where errcatalog deliberately differs, the test name says ``differs_because`` and the test
asserts the documented difference (README, "Differences from the seeds").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from errcatalog.catalog.document import validate_catalog_document
from errcatalog.render import Failure, ParameterFault, render, tool_result
from errcatalog.render.entries import CatalogSnapshot
from tests.support.seeds import rest_render, seed_catalog

GOLDEN = Path(__file__).parent.parent / "golden"


def _code(code: str, message: str, *, retryable: bool = False, system: bool = False, status: list | None = None):
    # Seed 000's messages are one sentence: no cause, no separate next step, no header.
    variant = {"name": "default", "header": "", "message": message, "cause": "", "instruction": ""}
    return {
        "code": code,
        "category": "unknown",
        "retryable": retryable,
        "system": system,
        "http_statuses": status or [],
        "variants": [variant],
    }


# Seed 000's wording, typed in as catalog text.
SEED_000_CODES = [
    _code("NETWORK_ERROR", "Network error: {network_failure}", retryable=True, system=True),
    _code("AUTHENTICATION_ERROR", "Authentication required: Missing or invalid API key", status=[401]),
    _code("SERVER_ERROR", "Internal server error: Database connection failed", retryable=True, system=True),
    _code("CLIENT_ERROR", "Invalid request: {parameter} must be between {minimum} and {maximum}", status=[400]),
    _code("NOT_FOUND", "Resource not found: /api/patterns/invalid-resource", status=[404]),
    _code("UNKNOWN_ERROR", "Unknown error occurred", system=True),
]
SEED = CatalogSnapshot.from_document(validate_catalog_document({"format": "errcatalog/v1", "codes": SEED_000_CODES}))

# (golden file, failure, format, test tool on the endpoint)
EXAMPLES = [
    (
        "seed000_network_timeout_markdown.json",
        Failure("NETWORK_ERROR", network_failure="timeout"),
        "markdown",
        "seed000_timeout",
    ),
    (
        "seed000_network_timeout_both.json",
        Failure("NETWORK_ERROR", network_failure="timeout"),
        "both",
        "seed000_timeout",
    ),
    (
        "seed000_network_timeout_json.json",
        Failure("NETWORK_ERROR", network_failure="timeout"),
        "json",
        "seed000_timeout",
    ),
    (
        "seed000_authentication_401_markdown.json",
        Failure("AUTHENTICATION_ERROR", status_code=401),
        "markdown",
        "seed000_unauthorized",
    ),
    ("seed000_server_500_markdown.json", Failure("SERVER_ERROR", status_code=500), "markdown", "seed000_server_error"),
    (
        "seed000_client_400_markdown.json",
        Failure(
            "CLIENT_ERROR", status_code=400, parameters=(ParameterFault("limit", "invalid", minimum=1, maximum=100),)
        ),
        "markdown",
        None,  # the bounds come from the tool's schema; an upstream's 400 carries none (see the REST test)
    ),
    ("seed000_not_found_404_markdown.json", Failure("NOT_FOUND", status_code=404), "markdown", "seed000_not_found"),
    ("seed000_unknown_markdown.json", Failure("UNKNOWN_ERROR"), "markdown", "seed000_unknown"),
]
IDS = [e[0].removesuffix(".json") for e in EXAMPLES]


def seed_example(name: str) -> dict:
    """The seed's response as JSON (its ``//`` comments removed when the golden file was written)."""
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("golden_file", "failure", "fmt", "_tool"), EXAMPLES, ids=IDS)
def test_renderer_reproduces_the_example_field_by_field(golden_file, failure, fmt, _tool):
    expected = seed_example(golden_file)
    result = tool_result(render(SEED, failure), fmt)
    assert result["isError"] is expected["isError"] is True
    assert result["structuredContent"] == expected["structuredContent"]
    assert len(result["content"]) == len(expected["content"])
    for block, seed_block in zip(result["content"], expected["content"], strict=True):
        assert block == seed_block  # type, text and mimeType


def _call(mcp, tool: str, fmt: str):
    async def scenario(client):
        return await client.call_tool(tool, {"format": fmt})

    return mcp.run(scenario)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("golden_file", "failure", "fmt", "tool_name"),
    [e for e in EXAMPLES if e[3]],
    ids=[i for i, e in zip(IDS, EXAMPLES, strict=True) if e[3]],
)
def test_mcp_endpoint_reproduces_the_example_except_where_mime_type_goes(mcp, golden_file, failure, fmt, tool_name):
    seed_catalog({"codes": SEED_000_CODES})
    expected = seed_example(golden_file)
    for version, result in _call(mcp, tool_name, fmt).items():
        assert result.is_error is True, version
        assert result.structured_content == expected["structuredContent"], version
        assert [b.text for b in result.content] == [b["text"] for b in expected["content"]], version
        assert [b.type for b in result.content] == [b["type"] for b in expected["content"]], version


@pytest.mark.django_db(transaction=True)
def test_mime_type_travels_in_meta_differs_because_sdk_text_content_has_no_mime_type_field(mcp):
    # MCP's TextContent has no mimeType; the SDK drops unknown fields on the wire. The seed itself calls the
    # field best-effort ("may be stripped by transports/clients"); errcatalog carries it in the block's _meta.
    import mcp_types

    assert "mime_type" not in mcp_types.TextContent.model_fields
    seed_catalog({"codes": SEED_000_CODES})
    for version, result in _call(mcp, "seed000_timeout", "both").items():
        assert [b.meta for b in result.content] == [
            {"mimeType": "text/markdown"},
            {"mimeType": "application/json"},
        ], version
        assert json.loads(result.content[1].text)["kind"] == "toolError:v1"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("golden_file", "failure", "fmt", "_tool"), EXAMPLES, ids=IDS)
def test_rest_render_reproduces_the_example_byte_for_byte(rest, catalog, golden_file, failure, fmt, _tool):
    seed_catalog({"codes": SEED_000_CODES})
    body = {"code": failure.code, "face": "tool_result", "format": fmt}
    if failure.status_code:
        body["status_code"] = failure.status_code
    if failure.network_failure:
        body["network_failure"] = failure.network_failure
    if failure.parameters:
        p = failure.parameters[0]
        body["parameters"] = [{"name": p.name, "problem": p.problem, "minimum": p.minimum, "maximum": p.maximum}]
    output = rest_render(rest, **body)["output"]
    assert output == seed_example(golden_file)


# --- Deliberate differences with the shipped default catalog -------------------------------------------------


def test_default_network_timeout_differs_because_header_and_next_step_join_the_message(default_snapshot):
    result = tool_result(render(default_snapshot, Failure("NETWORK_ERROR", network_failure="timeout")), "both")
    envelope = result["structuredContent"]
    # Equal: kind, code, retryable, no details, the opening words and the block layout.
    assert {k: envelope[k] for k in ("kind", "code", "retryable")} == {
        "kind": "toolError:v1",
        "code": "NETWORK_ERROR",
        "retryable": True,
    }
    assert "details" not in envelope
    assert envelope["message"].startswith("Network error: Request timeout.")
    # Different: seed 002's anatomy (why, what next) follows, and seed 001's **Error** header leads the markdown.
    assert envelope["message"] != "Network error: Request timeout"
    assert "Retry the same call once" in envelope["message"]
    assert result["content"][0]["text"] == f"**Error**\n\n{envelope['message']}"
    assert json.loads(result["content"][1]["text"]) == envelope


def test_default_not_found_differs_because_the_path_is_never_echoed(default_snapshot):
    result = tool_result(render(default_snapshot, Failure("NOT_FOUND", status_code=404)))
    assert result["structuredContent"]["details"] == {"statusCode": 404}
    assert "/api/patterns" not in json.dumps(result)
    assert result["structuredContent"]["message"].startswith("Resource not found: ")
    # Seed 001's toUserMessage() on the markdown block: the status and the generic 404 hint.
    assert result["content"][0]["text"].startswith("**Input Error**\n\nAPI error (404): Resource not found: ")
    assert result["content"][0]["text"].endswith("that you have access to it.")


def test_default_client_error_differs_because_upstream_text_is_never_echoed(default_snapshot):
    rendered = render(default_snapshot, Failure("CLIENT_ERROR", status_code=400))
    assert rendered.text.startswith("Invalid request: ")
    assert "limit must be between" not in rendered.text


@pytest.mark.parametrize("max_chars", [500, 180])
def test_event_id_line_counts_inside_the_cap(default_snapshot, max_chars):
    event_id = "0123456789abcdef0123456789abcdef"
    rendered = render(
        default_snapshot, Failure("SERVER_ERROR", status_code=500, event_id=event_id), max_chars=max_chars
    )
    markdown = tool_result(rendered)["content"][0]["text"]
    assert markdown.endswith(f"\n\nEvent ID: {event_id}")
    assert markdown.startswith("**Error**\n\n")
    assert len(markdown) <= max_chars


@pytest.mark.django_db(transaction=True)
def test_event_id_line_counts_inside_the_cap_on_the_mcp_endpoint(mcp, settings):
    # A long variant: without the Event ID line inside the cap, the markdown block would pass 500 characters.
    long_message = "Internal server error: " + " ".join(["the service failed while handling the request."] * 12)
    seed_catalog({"codes": [_code("SERVER_ERROR", long_message[:480], retryable=True, system=True, status=[500])]})
    import sentry_sdk
    from sentry_sdk.transport import Transport

    class Memory(Transport):
        def capture_envelope(self, envelope):  # events stay in the test process
            pass

    sentry_sdk.init(dsn="https://key@sentry.invalid/1", transport=Memory(), default_integrations=False)
    try:
        results = _call(mcp, "seed000_server_error", "markdown")
    finally:
        sentry_sdk.init(dsn=None)
    for version, result in results.items():
        text = result.content[0].text
        assert "\n\nEvent ID: " in text, version
        assert len(text) <= settings.ERRCATALOG["MAX_MESSAGE_CHARS"], version
