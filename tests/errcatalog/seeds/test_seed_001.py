"""Seed 001 (error handling in MCP tools: typed API errors, formatErrorForUser, agentTool), through the public API.

The concrete examples: agentTool's ``{error}`` strings for a 404 with a specific message, a 403 and a 502 with an
Event ID, its ``{result}`` on success, the closing sentence of each family, formatErrorForUser's headers and 404
hints, and the AI SDK's APICallError conversion (4xx → LLMProviderError, not in Sentry; 5xx → system error, in
Sentry). Each is rebuilt with the renderer, the MCP endpoint (SDK client) and the REST API. The wording of the
seed's messages ("Project not found") is typed into a test catalog as a writer would; the shipped catalog's own
wording differs by design (trust rule: Sentry's own message text is not ours to show).
"""

from __future__ import annotations

import pytest

from errcatalog.catalog.document import validate_catalog_document
from errcatalog.errors import APICallError, ApiServerError, LLMProviderError, llm_provider_error
from errcatalog.render import Failure, ParameterFault, agent_error, agent_result, render, tool_result
from errcatalog.render.classify import classify, facts_from_exception
from errcatalog.render.entries import CatalogSnapshot
from tests.support.seeds import rest_render, seed_catalog

INPUT_CLOSE = "You may be able to resolve this by addressing the concern and trying again."
SYSTEM_CLOSE = "This is a system error that cannot be resolved by retrying."
PROVIDER_CLOSE = "This is a service availability issue that cannot be resolved by retrying."
GENERIC_404 = "Please verify that the organization, project, or resource ID is correct and that you have access to it."
SPECIFIC_404 = "Please verify the parameters are correct."


def _code(code: str, header: str, message: str, instruction: str = "", *, system: bool = False) -> dict:
    variant = {"name": "default", "header": header, "message": message, "cause": "", "instruction": instruction}
    return {"code": code, "category": "unknown", "system": system, "variants": [variant]}


# The seed's example messages, typed in as catalog text.
SEED_001_CODES = [
    _code("NOT_FOUND", "Input Error", "Project not found"),
    _code(
        "PERMISSION_DENIED",
        "Input Error",
        "You do not have access to query across multiple projects.",
        "Please select a project for your query.",
    ),
    _code("SERVER_ERROR", "Error", "{status_text}", system=True),
    _code("USER_INPUT_ERROR", "Input Error", "Invalid organization slug format"),
    _code("LLM_PROVIDER_ERROR", "AI Provider Error", "The AI provider is not available in this region"),
]
SEED = CatalogSnapshot.from_document(validate_catalog_document({"format": "errcatalog/v1", "codes": SEED_001_CODES}))


# --- agentTool (embedded agent tools) -------------------------------------------------------------------------


def test_agent_error_for_a_specific_404_equals_the_seed():
    failure = Failure("NOT_FOUND", status_code=404, parameters=(ParameterFault("project", "invalid"),))
    assert agent_error(render(SEED, failure)) == {
        "error": "Input Error: API error (404): Project not found. Please verify the parameters are correct. "
        "You may be able to resolve this by addressing the concern and trying again."
    }


def test_agent_error_for_a_403_equals_the_seed():
    assert agent_error(render(SEED, Failure("PERMISSION_DENIED", status_code=403))) == {
        "error": "Input Error: API error (403): You do not have access to query across multiple projects. Please "
        "select a project for your query. You may be able to resolve this by addressing the concern and trying again."
    }


def test_agent_error_for_a_502_equals_the_seed():
    assert agent_error(render(SEED, Failure("SERVER_ERROR", status_code=502, event_id="abc123def456"))) == {
        "error": "Server Error (502): Bad Gateway. Event ID: abc123def456. "
        "This is a system error that cannot be resolved by retrying."
    }


def test_agent_error_closing_sentences_equal_the_seed():
    assert agent_error(render(SEED, Failure("USER_INPUT_ERROR")))["error"] == (
        f"Input Error: Invalid organization slug format. {INPUT_CLOSE}"
    )
    assert agent_error(render(SEED, Failure("LLM_PROVIDER_ERROR")))["error"] == (
        f"AI Provider Error: The AI provider is not available in this region. {PROVIDER_CLOSE}"
    )


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_default_catalog_5xx_agent_string_ends_exactly_as_the_seed(default_snapshot, status):
    code = "SERVICE_UNAVAILABLE" if status == 503 else "SERVER_ERROR"
    error = agent_error(render(default_snapshot, Failure(code, status_code=status, event_id="abc123def456")))["error"]
    assert error.startswith(f"Server Error ({status}): ")
    assert error.endswith(f"Event ID: abc123def456. {SYSTEM_CLOSE}")
    # The retry advice is the seed's sentence alone: the catalog's "Retry the same call once" is not repeated.
    assert "Retry the same call" not in error


def test_agent_result_on_success_equals_the_seed():
    assert agent_result([{"id": 1}]) == {"result": [{"id": 1}]}


@pytest.mark.django_db(transaction=True)
def test_demo_agent_tool_answers_result_and_error_over_mcp(mcp):
    async def scenario(client):
        ok = await client.call_tool("agent_search_events", {"project": "demo"})
        refused = await client.call_tool("agent_search_events", {})
        return ok, refused

    for version, (ok, refused) in mcp.run(scenario).items():
        # An agent tool never fails: both answers are successful tool results holding {result} or {error}.
        assert ok.is_error is False and refused.is_error is False, version
        assert set(ok.structured_content) == {"result"}, version
        assert ok.structured_content["result"]["project"] == "demo", version
        error = refused.structured_content["error"]
        assert error.startswith("Input Error: API error (403): "), version
        assert error.endswith(INPUT_CLOSE), version


# --- formatErrorForUser on the MCP face ------------------------------------------------------------------------


def test_markdown_headers_and_404_hints_equal_the_seed():
    assert tool_result(render(SEED, Failure("NOT_FOUND", status_code=404)))["content"][0]["text"] == (
        f"**Input Error**\n\nAPI error (404): Project not found. {GENERIC_404}"
    )
    specific = Failure("NOT_FOUND", status_code=404, parameters=(ParameterFault("project", "invalid"),))
    assert tool_result(render(SEED, specific))["content"][0]["text"] == (
        f"**Input Error**\n\nAPI error (404): Project not found. {SPECIFIC_404}"
    )
    system = Failure("SERVER_ERROR", status_code=502, event_id="abc123def456")
    assert (
        tool_result(render(SEED, system))["content"][0]["text"] == "**Error**\n\nBad Gateway\n\nEvent ID: abc123def456"
    )
    provider = tool_result(render(SEED, Failure("LLM_PROVIDER_ERROR")))["content"][0]["text"]
    assert provider == "**AI Provider Error**\n\nThe AI provider is not available in this region"


def test_envelope_message_differs_because_the_header_belongs_to_the_markdown_block_only():
    result = tool_result(render(SEED, Failure("NOT_FOUND", status_code=404)), "both")
    # structuredContent and the JSON block keep seed 000's plain message; seed 001's decoration is for the reader.
    assert result["structuredContent"]["message"] == "Project not found"
    assert result["content"][0]["text"].startswith("**Input Error**\n\n")


@pytest.mark.django_db(transaction=True)
def test_mcp_endpoint_shows_the_headers_and_hints(mcp):
    seed_catalog({"codes": SEED_001_CODES})

    async def scenario(client):
        return (
            await client.call_tool("record_missing", {}),  # ApiNotFoundError(404), generic message
            await client.call_tool("upstream_broken", {}),  # ApiServerError(502)
            await client.call_tool("summarize_text", {"text": "A long text."}),  # provider 403 → LLMProviderError
        )

    for version, (missing, broken, provider) in mcp.run(scenario).items():
        assert missing.content[0].text == f"**Input Error**\n\nAPI error (404): Project not found. {GENERIC_404}"
        assert broken.content[0].text == "**Error**\n\nBad Gateway", version  # no Sentry here: no Event ID
        assert provider.content[0].text == (
            "**AI Provider Error**\n\nThe AI provider is not available in this region"
        ), version
        assert provider.structured_content["code"] == "LLM_PROVIDER_ERROR", version


@pytest.mark.django_db(transaction=True)
def test_rest_markdown_face_shows_the_header_and_hint(rest, catalog):
    seed_catalog({"codes": SEED_001_CODES})
    body = rest_render(rest, code="NOT_FOUND", status_code=404, face="markdown")
    assert body["output"] == f"**Input Error**\n\nAPI error (404): Project not found. {GENERIC_404}"
    agent = rest_render(rest, code="SERVER_ERROR", status_code=502, event_id="abc123def456", face="agent")
    assert agent["output"] == {
        "error": f"Server Error (502): Bad Gateway. Event ID: abc123def456. {SYSTEM_CLOSE}",
    }


# --- The AI SDK's APICallError ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 429])
def test_provider_4xx_converts_to_llm_provider_error(default_snapshot, status):
    converted = llm_provider_error(APICallError(status, "openai", "unsupported_country_region_territory"))
    assert isinstance(converted, LLMProviderError)
    assert converted.provider == "openai"
    entry = default_snapshot.entry(classify(default_snapshot, facts_from_exception(converted)))
    assert (entry.code, entry.system) == ("LLM_PROVIDER_ERROR", False)  # user-facing: not sent to Sentry
    assert render(default_snapshot, Failure(entry.code)).header == "AI Provider Error"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_provider_5xx_stays_a_system_error(default_snapshot, status):
    converted = llm_provider_error(APICallError(status, "anthropic", "overloaded"))
    assert isinstance(converted, ApiServerError)
    entry = default_snapshot.entry(classify(default_snapshot, facts_from_exception(converted)))
    assert entry.system is True  # captured in Sentry by the pipeline


def test_an_unconverted_provider_4xx_is_still_classified_as_a_provider_error(default_snapshot):
    # Seed 001's "defensive handling … for any that slip through".
    facts = facts_from_exception(APICallError(403, "openai", "region"))
    assert classify(default_snapshot, facts) == "LLM_PROVIDER_ERROR"
    assert default_snapshot.entry(classify(default_snapshot, facts_from_exception(APICallError(502, "x")))).system


@pytest.mark.django_db(transaction=True)
def test_provider_5xx_is_captured_in_sentry_and_4xx_is_not(mcp):
    import sentry_sdk
    from sentry_sdk.transport import Transport

    from mcpserver.registry import registry

    captured: list = []

    class Memory(Transport):
        def capture_envelope(self, envelope):
            captured.extend(item.payload.json for item in envelope.items if item.type == "event")

    spec = registry.get("summarize_text")
    original = spec.function
    sentry_sdk.init(dsn="https://key@sentry.invalid/1", transport=Memory(), default_integrations=False)

    def provider_down(text: str) -> dict:
        raise llm_provider_error(APICallError(500, "openai", "upstream failed"))

    async def scenario(client):
        return await client.call_tool("summarize_text", {"text": "A long text."})

    try:
        refused = mcp.run(scenario)  # the demo's 403: LLMProviderError
        before = len(captured)
        object.__setattr__(spec, "function", provider_down)
        down = mcp.run(scenario)
        sentry_sdk.flush()
    finally:
        object.__setattr__(spec, "function", original)
        sentry_sdk.init(dsn=None)
    assert before == 0
    assert {r.structured_content["code"] for r in refused.values()} == {"LLM_PROVIDER_ERROR"}
    assert {r.structured_content["code"] for r in down.values()} == {"SERVER_ERROR"}
    assert len(captured) == 2  # one event per protocol generation's call
    for result in down.values():
        assert "Event ID: " in result.content[0].text
