"""Golden tests: our faces reproduce the seeds' own examples.

Two catalogs are used. ``SEED_CATALOG`` holds the wording each seed example shows, typed in as a writer would
enter it in admin; with it, the renderer must reproduce the example byte for byte (structure, key order, JSON
layout). The shipped default catalog reproduces the seed examples listed in DEFAULTS_REPRODUCE below.

Pinned examples, by seed:
- 000: network timeout (markdown, json, both), authentication 401, server 500, client 400, not found 404,
  unknown — the complete CallToolResult of each.
- 001: agentTool errors for a 404 with a specific message, a 403, a 502 with an Event ID; the closing sentences
  of the Input Error, Server Error and AI Provider Error families; formatErrorForUser headers and 404 hints.
- 002: the anatomy payloads for function_not_found, service_unavailable, timeout (with partial_result); the
  OpenAI, Anthropic and Gemini results of the universal formatter; Anthropic's query_database example.
- 003: missing to/subject/body questions, invalid email format, create_document's missing content, several
  missing parameters in one question, as JSON-RPC errors.
- 004: the JSON-RPC code table, and FastMCP's legacy -32001/-32000 as an option.

Seed 000's variants have no header: a variant's header (seed 001) leads the markdown block, and seed 000's
messages stand alone. The per-seed modules in tests/errcatalog/seeds/ rebuild the same examples through the MCP
endpoint and the REST API as well.

Deliberate deviations, each pinned by a test here: a rejected string is "[REDACTED]" instead of echoed (seed 002
shows ``"received": 30``, which is shown when the value was validated as a number), several missing parameters
are listed as ``required_parameters`` (seed 003 uses both that and ``missing_parameters``), and JSON-RPC errors
carry both ``parameter_type`` and ``tool_name`` (seed 003's examples each show one or the other).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from errcatalog.render import (
    Failure,
    ParameterFault,
    agent_error,
    anatomy,
    error_object,
    error_response,
    provider_result,
    render,
    tool_result,
    user_markdown,
)
from errcatalog.render.entries import CatalogSnapshot

GOLDEN = Path(__file__).parent.parent / "golden"


def golden(name: str):
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


def _code(code, message, *, retryable=False, kind="error", system=False, instruction="", header="Error", **extra):
    variant = {"name": "default", "message": message, "instruction": instruction, "header": header}
    variant.update({k: extra.pop(k) for k in ("cause", "question") if k in extra})
    return {
        "code": code,
        "category": "unknown",
        "kind": kind,
        "retryable": retryable,
        "system": system,
        "variants": [variant],
        **extra,
    }


def _with_variant(code: dict, name: str, message: str, instruction: str) -> dict:
    extra = dict(code["variants"][0], name=name, message=message, instruction=instruction)
    return dict(code, variants=[*code["variants"], extra])


SEED_CATALOG = CatalogSnapshot.from_document(
    {
        "codes": [
            # Seed 000. Its messages stand alone, so these variants have no header (seed 001's headers lead the
            # markdown block of variants that have one).
            _code("NETWORK_ERROR", "Network error: {network_failure}", retryable=True, system=True, header=""),
            _code("AUTHENTICATION_ERROR", "Authentication required: Missing or invalid API key", header=""),
            _code(
                "SERVER_ERROR",
                "Internal server error: Database connection failed",
                retryable=True,
                system=True,
                header="",
            ),
            _code("CLIENT_ERROR", "Invalid request: {parameter} must be between {minimum} and {maximum}", header=""),
            _code("NOT_FOUND", "Resource not found: /api/patterns/invalid-resource", header=""),
            _code("UNKNOWN_ERROR", "Unknown error occurred", system=True, header=""),
            # Seed 001.
            _code("PROJECT_NOT_FOUND", "Project not found", header="Input Error"),
            _code(
                "PERMISSION_DENIED",
                "You do not have access to query across multiple projects.",
                instruction="Please select a project for your query.",
                header="Input Error",
            ),
            _code("BAD_GATEWAY", "{status_text}", system=True),
            _code("USER_INPUT_ERROR", "Invalid organization slug format", header="Input Error"),
            _code("LLM_PROVIDER_ERROR", "The AI provider is not available in this region", header="AI Provider Error"),
            # Seed 002.
            _code(
                "FUNCTION_NOT_FOUND",
                "Function '{tool_name}' does not exist.",
                instruction="Use 'get_weather' instead.",
                header="Input Error",
            ),
            _code(
                "SERVICE_UNAVAILABLE",
                "Weather API returned 503 Service Unavailable.",
                instruction="Inform the user that the weather service is temporarily down.",
                retryable=True,
            ),
            _code(
                "TIMEOUT",
                "Search timed out after 10 seconds.",
                instruction="Present the partial results to the user and offer to search again.",
            ),
            _with_variant(
                _code(
                    "EXECUTION_FAILURE",
                    "Weather API returned 503.",
                    instruction="Inform the user that this operation failed. Try an alternative approach if available.",
                    retryable=True,
                ),
                "database",
                "Database connection timed out.",
                "Inform the user the database is temporarily unavailable.",
            ),
            _code(
                "INVALID_ARGUMENTS",
                "Parameter '{parameter}' must be between {minimum} and {maximum}.",
                instruction="Retry with '{parameter}' set to {maximum} or less.",
            ),
            # Seed 003.
            _code(
                "MISSING_PARAMETER",
                "A required parameter is missing.",
                kind="needs_input",
                question="Question: What should I use for {parameters}? Please provide each of them.",
                header="Input Error",
                jsonrpc_code=-32602,
            ),
            _code(
                "INVALID_PARAMETER",
                "A parameter has the wrong format.",
                kind="needs_input",
                question="Question: There seems to be an issue with the email address format. Please check that "
                "the {parameter_description} is valid and follows the format {expected_format}.",
                header="Input Error",
                jsonrpc_code=-32602,
            ),
            # Seed 004.
            _code("PARSE_ERROR", "The request is not valid JSON.", jsonrpc_code=-32700),
            _code("RESOURCE_NOT_FOUND", "The resource does not exist.", jsonrpc_code=-32002),
            _code("INTERNAL_ERROR", "Internal error.", system=True, jsonrpc_code=-32603),
        ],
        "hints": [
            {
                "tool": "send_email",
                "parameter": "to",
                "description": "recipient email address",
                "parameter_type": "email_address",
                "example": "user@domain.com",
                "question": "Question: Who should I send this email to? Please provide the recipient email address.",
            },
        ],
    }
)


# --- Seed 000: MCP tool results --------------------------------------------------------------------------

SEED_000 = [
    ("seed000_network_timeout_markdown.json", Failure("NETWORK_ERROR", network_failure="timeout"), "markdown"),
    ("seed000_network_timeout_both.json", Failure("NETWORK_ERROR", network_failure="timeout"), "both"),
    ("seed000_network_timeout_json.json", Failure("NETWORK_ERROR", network_failure="timeout"), "json"),
    ("seed000_authentication_401_markdown.json", Failure("AUTHENTICATION_ERROR", status_code=401), "markdown"),
    ("seed000_server_500_markdown.json", Failure("SERVER_ERROR", status_code=500), "markdown"),
    (
        "seed000_client_400_markdown.json",
        Failure(
            "CLIENT_ERROR", status_code=400, parameters=(ParameterFault("limit", "invalid", minimum=1, maximum=100),)
        ),
        "markdown",
    ),
    ("seed000_not_found_404_markdown.json", Failure("NOT_FOUND", status_code=404), "markdown"),
    ("seed000_unknown_markdown.json", Failure("UNKNOWN_ERROR"), "markdown"),
]


@pytest.mark.parametrize(("golden_file", "failure", "fmt"), SEED_000, ids=[c[0] for c in SEED_000])
def test_tool_result_matches_seed_000_byte_for_byte(golden_file, failure, fmt):
    result = tool_result(render(SEED_CATALOG, failure), fmt)
    expected_text = (GOLDEN / golden_file).read_text(encoding="utf-8")
    assert json.dumps(result, indent=2, ensure_ascii=False) + "\n" == expected_text


def test_markdown_default_has_no_json_block_and_json_has_no_markdown_block():
    failure = Failure("NETWORK_ERROR", network_failure="timeout")
    markdown = tool_result(render(SEED_CATALOG, failure))
    assert [c["mimeType"] for c in markdown["content"]] == ["text/markdown"]
    as_json = tool_result(render(SEED_CATALOG, failure), "json")
    assert [c["mimeType"] for c in as_json["content"]] == ["application/json"]
    assert json.loads(as_json["content"][0]["text"])["kind"] == "toolError:v1"


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="format must be one of"):
        tool_result(render(SEED_CATALOG, Failure("UNKNOWN_ERROR")), "html")


def test_details_omit_absent_status_code():
    result = tool_result(render(SEED_CATALOG, Failure("NETWORK_ERROR", network_failure="connection")))
    assert "details" not in result["structuredContent"]
    assert result["structuredContent"]["message"] == "Network error: Connection failed"


def test_interactive_failure_carries_needs_input_envelope():
    failure = Failure("MISSING_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to"),))
    result = tool_result(render(SEED_CATALOG, failure), "both")
    envelope = result["structuredContent"]
    assert envelope["kind"] == "needsInput:v1"
    assert (
        envelope["message"] == "Question: Who should I send this email to? Please provide the recipient email address."
    )
    assert envelope["details"]["required_parameter"] == "to"
    assert json.loads(result["content"][1]["text"]) == envelope


# --- Seed 001: agentTool wrapper and formatErrorForUser --------------------------------------------------

SEED_001 = [
    (
        "client_404_specific",
        Failure("PROJECT_NOT_FOUND", status_code=404, parameters=(ParameterFault("project", "invalid"),)),
    ),
    ("permission_403", Failure("PERMISSION_DENIED", status_code=403)),
    ("server_502", Failure("BAD_GATEWAY", status_code=502, event_id="abc123def456")),
]


@pytest.mark.parametrize(("case", "failure"), SEED_001, ids=[c[0] for c in SEED_001])
def test_agent_wrapper_matches_seed_001(case, failure):
    assert agent_error(render(SEED_CATALOG, failure)) == golden("seed001_agent.json")[case]


def test_user_input_error_gets_the_input_error_sentence_once():
    result = agent_error(render(SEED_CATALOG, Failure("USER_INPUT_ERROR")))
    assert result == {
        "error": "Input Error: Invalid organization slug format. "
        "You may be able to resolve this by addressing the concern and trying again."
    }


def test_provider_error_gets_the_ai_provider_sentence():
    result = agent_error(render(SEED_CATALOG, Failure("LLM_PROVIDER_ERROR")))
    assert result == {
        "error": "AI Provider Error: The AI provider is not available in this region. "
        "This is a service availability issue that cannot be resolved by retrying."
    }


def test_user_markdown_headers_by_family():
    assert user_markdown(render(SEED_CATALOG, Failure("USER_INPUT_ERROR"))).startswith("**Input Error**\n\n")
    assert user_markdown(render(SEED_CATALOG, Failure("LLM_PROVIDER_ERROR"))).startswith("**AI Provider Error**\n\n")
    system = user_markdown(render(SEED_CATALOG, Failure("BAD_GATEWAY", status_code=502, event_id="abc123def456")))
    assert system == "**Error**\n\nBad Gateway\n\nEvent ID: abc123def456"


def test_404_hint_is_long_for_generic_and_short_for_specific_messages():
    generic = user_markdown(render(SEED_CATALOG, Failure("PROJECT_NOT_FOUND", status_code=404)))
    assert generic == (
        "**Input Error**\n\nAPI error (404): Project not found. Please verify that the organization, project, or "
        "resource ID is correct and that you have access to it."
    )
    specific = user_markdown(
        render(SEED_CATALOG, Failure("PROJECT_NOT_FOUND", status_code=404, parameters=(ParameterFault("project"),)))
    )
    assert specific.endswith("API error (404): Project not found. Please verify the parameters are correct.")


# --- Seed 002: anatomy and provider formats ---------------------------------------------------------------


def test_function_not_found_anatomy_matches_seed_002():
    failure = Failure("FUNCTION_NOT_FOUND", tool_name="get_wether", alternatives=("get_weather", "get_forecast"))
    assert anatomy(render(SEED_CATALOG, failure)) == golden("seed002_anatomy.json")["FUNCTION_NOT_FOUND"]


def test_transient_error_says_it_may_be_retried():
    payload = anatomy(render(SEED_CATALOG, Failure("SERVICE_UNAVAILABLE", tool_name="get_weather")))
    assert payload == golden("seed002_anatomy.json")["SERVICE_UNAVAILABLE"]
    assert list(payload) == list(golden("seed002_anatomy.json")["SERVICE_UNAVAILABLE"])


def test_partial_results_are_passed_along():
    failure = Failure("TIMEOUT", tool_name="search_documents", partial_result=[{"title": "Python Basics", "id": 1}])
    assert anatomy(render(SEED_CATALOG, failure)) == golden("seed002_anatomy.json")["TIMEOUT"]


def test_invalid_argument_details_redact_the_received_value():
    fault = ParameterFault("days", "invalid", minimum=1, maximum=14)
    payload = anatomy(render(SEED_CATALOG, Failure("INVALID_ARGUMENTS", tool_name="get_forecast", parameters=(fault,))))
    assert payload["message"] == "Parameter 'days' must be between 1 and 14."
    assert payload["instruction"] == "Retry with 'days' set to 14 or less."
    # Without a validated number to name (seed 002's "received": 30), nothing the caller sent is echoed.
    assert payload["details"] == {"field": "days", "received": "[REDACTED]", "min": 1, "max": 14}


def test_provider_formats_match_seed_002_byte_for_byte():
    rendered = render(SEED_CATALOG, Failure("EXECUTION_FAILURE", tool_name="get_weather"))
    expected = golden("seed002_providers.json")
    assert provider_result(rendered, "openai", "call_123") == expected["openai"]
    assert provider_result(rendered, "anthropic", "call_123") == expected["anthropic"]
    gemini = provider_result(rendered, "gemini")
    assert gemini == {"functionResponse": {"name": "get_weather", "response": expected["gemini_response"]}}


def test_anthropic_result_sets_is_error():
    rendered = render(SEED_CATALOG, Failure("EXECUTION_FAILURE", tool_name="query_database"), variant="database")
    result = provider_result(rendered, "anthropic", "toolu_xyz789")
    assert result == golden("seed002_providers.json")["anthropic_query_database"]


def test_unknown_provider_is_refused():
    with pytest.raises(ValueError, match="provider must be one of"):
        provider_result(render(SEED_CATALOG, Failure("TIMEOUT")), "mistral")


# --- Seed 003: questions as JSON-RPC errors ---------------------------------------------------------------


def test_missing_recipient_becomes_question():
    failure = Failure("MISSING_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to", type="string"),))
    response = error_response(render(SEED_CATALOG, failure), 42)
    expected = golden("seed003_jsonrpc.json")["missing_to"]
    assert response == expected
    assert list(response["error"]["data"]) == list(expected["error"]["data"])


def test_invalid_email_becomes_question_without_the_value():
    failure = Failure("INVALID_PARAMETER", tool_name="send_email", parameters=(ParameterFault("to", "invalid"),))
    assert error_object(render(SEED_CATALOG, failure)) == golden("seed003_jsonrpc.json")["invalid_email"]


def test_several_missing_parameters_become_one_question_naming_them_all():
    params = tuple(ParameterFault(n) for n in ("to", "subject", "body"))
    error = error_object(render(SEED_CATALOG, Failure("MISSING_PARAMETER", tool_name="send_email", parameters=params)))
    assert error["code"] == -32602
    assert error["message"] == "Question: What should I use for to, subject and body? Please provide each of them."
    assert error["data"]["required_parameters"] == ["to", "subject", "body"]
    assert error["data"]["retry_capable"] is True


# --- Seed 004: JSON-RPC codes ------------------------------------------------------------------------------


def test_jsonrpc_codes_are_used_as_defined():
    assert error_object(render(SEED_CATALOG, Failure("PARSE_ERROR")))["code"] == -32700
    assert error_object(render(SEED_CATALOG, Failure("INTERNAL_ERROR")))["code"] == -32603
    assert error_object(render(SEED_CATALOG, Failure("RESOURCE_NOT_FOUND")))["code"] == -32002


def test_missing_resource_is_invalid_params_on_2026_protocol():
    rendered = render(SEED_CATALOG, Failure("RESOURCE_NOT_FOUND"))
    assert error_object(rendered, protocol_version="2025-11-25")["code"] == -32002
    assert error_object(rendered, protocol_version="2026-07-28")["code"] == -32602


def test_fastmcp_legacy_codes_are_an_option():
    rendered = render(SEED_CATALOG, Failure("RESOURCE_NOT_FOUND"))
    assert error_object(rendered, legacy=True)["code"] == -32001
    assert error_object(render(SEED_CATALOG, Failure("PERMISSION_DENIED")), legacy=True)["code"] == -32000


def test_codes_without_their_own_number_use_internal_or_invalid_params():
    assert error_object(render(SEED_CATALOG, Failure("SERVER_ERROR")))["code"] == -32603
    assert error_object(render(SEED_CATALOG, Failure("USER_INPUT_ERROR")))["code"] == -32602


# --- The shipped default catalog ----------------------------------------------------------------------------

DEFAULTS_REPRODUCE = [
    # (seed, tool, parameter, expected question)
    (
        "003",
        "send_email",
        "to",
        "Question: Who should I send this email to? Please provide the recipient email address.",
    ),
    ("003", "send_email", "subject", "Question: What should be the subject line of this email?"),
    ("003", "send_email", "body", "Question: What message content should I include in the email body?"),
    (
        "003",
        "create_document",
        "content",
        "Question: What document content would you like me to create? "
        "Please provide the text content for the new document.",
    ),
    (
        "003",
        "web_search",
        "query",
        "Question: What would you like me to search for? Please provide a search query or topic.",
    ),
]


@pytest.mark.parametrize(("seed", "tool", "parameter", "question"), DEFAULTS_REPRODUCE)
def test_default_catalog_asks_the_seed_questions(default_snapshot, seed, tool, parameter, question):
    failure = Failure("MISSING_PARAMETER", tool_name=tool, parameters=(ParameterFault(parameter),))
    error = error_object(render(default_snapshot, failure))
    assert error["message"] == question
    assert error["code"] == -32602
    assert error["data"]["required_parameter"] == parameter
    assert error["data"]["error_category"] == "missing_parameter"
    assert error["data"]["retry_capable"] is True


def test_default_network_error_names_the_timeout(default_snapshot):
    rendered = render(default_snapshot, Failure("NETWORK_ERROR", network_failure="timeout"))
    assert rendered.message.startswith("Network error: Request timeout")
    envelope = tool_result(rendered)["structuredContent"]
    assert envelope["kind"] == "toolError:v1"
    assert envelope["retryable"] is True


def test_default_agent_wrapper_uses_seed_001_sentences(default_snapshot):
    user = agent_error(render(default_snapshot, Failure("USER_INPUT_ERROR")))["error"]
    assert user.startswith("Input Error: ")
    assert user.endswith(". You may be able to resolve this by addressing the concern and trying again.")
    system = agent_error(render(default_snapshot, Failure("SERVER_ERROR", status_code=502, event_id="abc123def456")))
    assert system["error"].startswith("Server Error (502): ")
    # A 5xx ends exactly as seed 001's does, and its text is what happened only: the catalog's retry instruction
    # would contradict the fixed sentence, and a message states its retry advice once.
    assert system["error"] == (
        "Server Error (502): Internal server error: the service behind this tool failed while handling the request. "
        "Event ID: abc123def456. This is a system error that cannot be resolved by retrying."
    )
    network = agent_error(render(default_snapshot, Failure("NETWORK_ERROR", network_failure="timeout")))["error"]
    # Without a status, a retryable system error (seed 000's network errors) keeps the temporary close.
    assert network == (
        "Server Error: Network error: Request timeout. This is a temporary system error; retrying later may succeed."
    )
    unknown = agent_error(render(default_snapshot, Failure("UNKNOWN_ERROR", event_id="abc123def456")))["error"]
    assert unknown.endswith("Event ID: abc123def456. This is a system error that cannot be resolved by retrying.")
    provider = agent_error(render(default_snapshot, Failure("LLM_PROVIDER_ERROR")))["error"]
    assert provider.startswith("AI Provider Error: ")
    assert provider.endswith("This is a service availability issue that cannot be resolved by retrying.")


def test_unknown_tool_gets_did_you_mean_alternatives(default_snapshot):
    from errcatalog.render import did_you_mean

    known = ["get_weather", "get_forecast", "send_email", "weather.get_alerts"]
    assert did_you_mean("get_wether", known) == ("get_weather",)
    assert did_you_mean("get_alerts", known)[0] == "weather.get_alerts"
    assert did_you_mean("completely_unrelated", known) == ()
    # A short name inside many names means none of them; a longer one names the tools that contain it.
    assert did_you_mean("get", ["get_document", "get_weather", "forget_all"]) == ()
    assert did_you_mean("git_status", ["git__git_status", "git__git_log"]) == ("git__git_status",)
    alternatives = did_you_mean("get_wether", known)
    payload = anatomy(
        render(default_snapshot, Failure("FUNCTION_NOT_FOUND", tool_name="get_wether", alternatives=alternatives))
    )
    assert payload["alternatives"] == ["get_weather"]
    assert "get_weather" in payload["instruction"]
