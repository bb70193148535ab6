"""Seed 003 (the MCP client error response protocol), example by example, through the public faces.

Each concrete example of the seed is rebuilt through the MCP endpoint (the SDK's real client over HTTP, both
protocol generations, input errors on the JSON-RPC channel as the seed shows them), the REST API and the
outcome pipeline, and compared with the seed's text field by field. Where errcatalog deliberately differs the
test's name says ``differs_because_...`` and it asserts the documented difference (README, "Seeds: deliberate
differences").

The shipped catalog asks the seed's questions for send_email, create_document and web_search. The seed's
invalid-email, Gmail set-up and search-configuration sentences are catalog wording: a writer enters them (as in
admin) and the endpoint then says exactly that. A question's ``optional_parameters`` and ``guidance`` come from the
tool itself unless the code's catalog entry sets them.
"""

from __future__ import annotations

import pytest

from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
from errcatalog.catalog.document import read_catalog_file
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.lint import lint_catalog
from errcatalog.catalog.models import ErrorCode
from errcatalog.catalog.services import error_code_update
from errcatalog.catalog.snapshot import catalog_changed
from errcatalog.outcomes import ingest, recorder, rollups
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.metrics import TARGETS, compute_metrics
from errcatalog.outcomes.models import Episode
from tests.support.seeds import jsonrpc_error, post, tool_result, write_questions

pytestmark = pytest.mark.django_db(transaction=True)

# The seed's texts, verbatim.
TO_QUESTION = "Question: Who should I send this email to? Please provide the recipient email address."
SUBJECT_QUESTION = "Question: What should be the subject line of this email?"
BODY_QUESTION = "Question: What message content should I include in the email body?"
GMAIL_QUESTION = (
    "Question: Your Gmail service needs to be set up. "
    "Please ensure your Gmail integration is properly configured with valid credentials."
)
EMAIL_FORMAT_QUESTION = (
    "Question: There seems to be an issue with the email address format. Please check that the recipient email "
    "address is valid and follows the format user@domain.com."
)
SEARCH_CONFIG_QUESTION = (
    "Question: The search service needs to be configured. Please add your web search API key in the integration "
    "settings."
)
DOCUMENT_QUESTION = (
    "Question: What document content would you like me to create? Please provide the text content for the new document."
)
SEARCH_QUESTION = "Question: What would you like me to search for? Please provide a search query or topic."
COMPLETE_EMAIL = {"to": "ada@example.com", "subject": "Hello", "body": "Hi"}


@pytest.fixture
def jsonrpc_channel(settings):
    """Input errors as JSON-RPC errors, the channel every seed-003 example uses."""
    settings.ERRCATALOG = {**settings.ERRCATALOG, "INPUT_ERROR_CHANNEL": "jsonrpc"}


@pytest.fixture
def seed_wording(catalog):
    """The seed's sentences typed into the catalog by a writer."""
    write_questions(
        {
            "INVALID_PARAMETER": "Question: There seems to be an issue with the email address format. Please check "
            "that the {parameter_description} is valid and follows the format {expected_format}.",
            "AUTHENTICATION_REQUIRED": "Question: Your {service} service needs to be set up. Please ensure your "
            "{service} integration is properly configured with valid credentials.",
            "SERVICE_CONFIGURATION": SEARCH_CONFIG_QUESTION,
        }
    )


def without(arguments: dict, name: str) -> dict:
    return {key: value for key, value in arguments.items() if key != name}


# --- Protocol specification: "Error Response Format" -------------------------------------------------------


def test_missing_recipient_is_the_seeds_question_and_data(mcp, jsonrpc_channel):
    error = jsonrpc_error(mcp, "send_email", without(COMPLETE_EMAIL, "to"))
    assert error.message == TO_QUESTION
    seed_data = {"retry_capable": True, "error_category": "missing_parameter", "required_parameter": "to"}
    assert {key: error.data[key] for key in seed_data} == seed_data
    assert error.data["tool_name"] == "send_email"


def test_missing_recipient_code_differs_because_jsonrpc_defines_minus_32602_for_invalid_params(mcp, jsonrpc_channel):
    # The seed's first example says -32603 (internal error); its WebSocket and best-practice examples say -32602,
    # which is what JSON-RPC defines for a call with missing or invalid parameters.
    assert jsonrpc_error(mcp, "send_email", without(COMPLETE_EMAIL, "to")).code == -32602


def test_missing_recipient_data_differs_because_it_also_carries_the_parameter_type(mcp, jsonrpc_channel):
    # The seed's examples each show some of tool_name and parameter_type; errcatalog always sends both.
    data = jsonrpc_error(mcp, "send_email", without(COMPLETE_EMAIL, "to")).data
    assert set(data) - {"retry_capable", "error_category", "required_parameter", "tool_name"} == {"parameter_type"}
    assert data["parameter_type"] == "email_address"


def test_rest_render_rebuilds_the_seeds_whole_jsonrpc_response(rest):
    body = {"code": "MISSING_PARAMETER", "tool_name": "send_email", "parameters": [{"name": "to"}]}
    response = post(rest, "/api/v1/render/", **body, face="jsonrpc", request_id=42)["output"]
    assert (response["jsonrpc"], response["id"]) == ("2.0", 42)
    assert response["error"]["message"] == TO_QUESTION
    assert response["error"]["data"] == {
        "retry_capable": True,
        "error_category": "missing_parameter",
        "required_parameter": "to",
        "parameter_type": "email_address",
        "tool_name": "send_email",
    }
    assert response["error"]["code"] == -32602  # the seed's -32603: see the test above


# --- Error categories: missing parameters -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "question", "parameter_type"),
    [("subject", SUBJECT_QUESTION, "string"), ("body", BODY_QUESTION, "text")],
)
def test_missing_subject_and_body_are_the_seeds_questions(mcp, jsonrpc_channel, missing, question, parameter_type):
    error = jsonrpc_error(mcp, "send_email", without(COMPLETE_EMAIL, missing))
    assert error.message == question
    seed_data = {"error_category": "missing_parameter", "required_parameter": missing, "parameter_type": parameter_type}
    assert {key: error.data[key] for key in seed_data} == seed_data
    assert error.code == -32602  # the seed's validateEmailParameters


# --- Error categories: authentication and configuration ----------------------------------------------------


def test_gmail_setup_question_differs_because_service_names_are_identifiers(mcp, jsonrpc_channel, seed_wording):
    # {service} is the tool's service identifier ("gmail", as in the seed's own data), never a display name
    # typed elsewhere: with the seed's sentence as the template, only the capital G differs.
    error = jsonrpc_error(mcp, "read_inbox", {})
    assert error.message == GMAIL_QUESTION.replace("Gmail", "gmail")
    assert {key: error.data[key] for key in ("error_category", "service")} == {
        "error_category": "authentication_required",
        "service": "gmail",
    }


def test_search_configuration_question_is_the_seeds(mcp, jsonrpc_channel, seed_wording, settings):
    settings.DEMO_SEARCH_API_KEY = ""
    error = jsonrpc_error(mcp, "web_search", {"query": "weather in Lisbon"})
    assert error.message == SEARCH_CONFIG_QUESTION
    assert {key: error.data[key] for key in ("error_category", "service")} == {
        "error_category": "service_configuration",
        "service": "web_search",
    }


def test_setup_and_configuration_errors_differ_because_their_codes_are_outside_the_reserved_range(
    mcp, jsonrpc_channel, settings
):
    # The seed gives these no code; the catalog's own codes stay outside JSON-RPC's reserved -32768..-32000.
    settings.DEMO_SEARCH_API_KEY = ""
    for tool, arguments in (("read_inbox", {}), ("web_search", {"query": "q"})):
        code = jsonrpc_error(mcp, tool, arguments).code
        assert not -32768 <= code <= -32000, (tool, code)


# --- Error categories: invalid data -------------------------------------------------------------------------


def test_invalid_email_is_the_seeds_question_with_the_value_redacted(mcp, jsonrpc_channel, seed_wording):
    error = jsonrpc_error(mcp, "send_email", {**COMPLETE_EMAIL, "to": "ada-at-example"})
    assert error.message == EMAIL_FORMAT_QUESTION
    seed_data = {
        "error_category": "invalid_parameter",
        "expected_format": "user@domain.com",
        "provided_value": "[REDACTED]",
        "retry_capable": True,
    }
    assert {key: error.data[key] for key in seed_data} == seed_data
    assert "ada-at-example" not in str(error.data) + error.message


def test_invalid_email_parameter_differs_because_it_names_the_argument_and_its_type_separately(
    mcp, jsonrpc_channel, seed_wording
):
    # The seed's category example says "parameter": "email_address" (a type); its validation template says
    # "parameter": "to" (the argument). errcatalog names the argument and gives the type as parameter_type.
    data = jsonrpc_error(mcp, "send_email", {**COMPLETE_EMAIL, "to": "ada-at-example"}).data
    assert (data["parameter"], data["parameter_type"]) == ("to", "email_address")


def test_empty_search_query_differs_because_an_empty_required_string_is_asked_for_as_missing(mcp, jsonrpc_channel):
    # The seed's "issue with the search parameters ... or valid URLs to scrape" belongs to a scraper tool; an
    # empty query is a missing one, so the search tool asks the seed's own search question instead.
    error = jsonrpc_error(mcp, "web_search", {"query": ""})
    assert error.message == SEARCH_QUESTION
    assert (error.data["error_category"], error.data["required_parameter"]) == ("missing_parameter", "query")
    assert "validation_error" not in error.data


# --- Implementation examples ---------------------------------------------------------------------------------


def test_create_document_question_is_the_seeds(mcp, jsonrpc_channel):
    error = jsonrpc_error(mcp, "create_document", {})
    assert error.message == DOCUMENT_QUESTION
    seed_data = {"retry_capable": True, "error_category": "missing_parameter", "tool_name": "create_document"}
    assert {key: error.data[key] for key in seed_data} == seed_data


def test_create_document_lists_required_and_optional_parameters_as_the_seeds_zapier_example(mcp, jsonrpc_channel):
    # The seed's Zapier example lists ["content"] beside the optional parameters and a guidance sentence. The
    # catalog entry sets neither, so both come from the tool: its schema's optional property and the first sentence
    # of its description. One missing parameter is also "required_parameter", as in every other seed example. The
    # code is -32602, not -32603.
    error = jsonrpc_error(mcp, "create_document", {})
    assert error.data["required_parameter"] == "content"
    assert error.data["required_parameters"] == ["content"]
    assert error.data["optional_parameters"] == ["title"]
    assert error.data["guidance"] == "Create a new text document and store it."
    assert error.code == -32602


def test_a_catalog_entry_overrides_the_tools_optional_parameters_and_guidance(mcp, jsonrpc_channel):
    # A writer sets seed 003's Zapier wording on the code: it replaces what the tool's schema and description say.
    error_code_update(
        error_code=ErrorCode.objects.get(code="MISSING_PARAMETER"),
        optional_parameters=["title", "format"],
        guidance="Document creation requires content. You can also specify a title and format.",
    )
    catalog_changed()
    error = jsonrpc_error(mcp, "create_document", {})
    assert error.data["required_parameters"] == ["content"]
    assert error.data["optional_parameters"] == ["title", "format"]
    assert error.data["guidance"] == "Document creation requires content. You can also specify a title and format."


def test_a_tool_without_optional_parameters_adds_no_guidance(mcp, jsonrpc_channel):
    # send_email requires all it takes: its question and required parameter say everything, as in the seed.
    error = jsonrpc_error(mcp, "send_email", {"subject": "Hi", "body": "Hello"})
    assert error.data["required_parameter"] == "to"
    assert not {"required_parameters", "optional_parameters", "guidance"} & set(error.data)


def test_agentopia_edge_function_shape_differs_because_mcp_carries_it_as_a_tool_result(mcp):
    # {"success": false, "error": question, "metadata": {...}} is an edge function's own shape; on MCP the same
    # facts are an isError result whose text is the question and whose structuredContent carries the metadata.
    result = tool_result(mcp, "web_search", {})
    assert result.is_error is True
    assert result.content[0].text == SEARCH_QUESTION
    details = result.structured_content["details"]
    metadata = {"tool_name": "web_search", "error_category": "missing_parameter", "retry_capable": True}
    assert {key: details[key] for key in metadata} == metadata
    assert details["required_parameter"] == "query"


def test_websocket_example_differs_because_one_question_names_every_missing_parameter(mcp, jsonrpc_channel):
    # The seed answers {"arguments": {}} with the recipient question alone while listing all three as
    # missing_parameters; errcatalog asks for all three in one question made of the seed's three questions, listed
    # as required_parameters.
    error = jsonrpc_error(mcp, "send_email", {})
    assert error.code == -32602 and error.data["retry_capable"] is True
    assert error.data["required_parameters"] == ["to", "subject", "body"]
    assert error.message == (
        "Question: Who should I send this email to, what should be the subject line of this email, and what message "
        "content should I include in the email body?"
    )


# --- Client retry behaviour -----------------------------------------------------------------------------------


def is_retry_capable_error(message: str, data: dict | None) -> bool:
    """The seed's isRetryCapableError, line for line."""
    text = (message or "").lower()
    return (
        "question:" in text
        or "what " in text
        or "please provide" in text
        or "which " in text
        or "how " in text
        or "missing" in text
        or (data or {}).get("retry_capable") is True
    )


def test_every_input_error_triggers_the_seeds_retry_detection(mcp, jsonrpc_channel, settings):
    settings.DEMO_SEARCH_API_KEY = ""
    calls = [
        ("send_email", {}),
        ("send_email", without(COMPLETE_EMAIL, "subject")),
        ("send_email", {**COMPLETE_EMAIL, "to": "nope"}),
        ("create_document", {}),
        ("web_search", {}),
        ("web_search", {"query": "q"}),
        ("read_inbox", {}),
    ]
    for tool, arguments in calls:
        error = jsonrpc_error(mcp, tool, arguments)
        assert is_retry_capable_error(error.message, error.data), (tool, arguments)
        assert error.message.startswith("Question: ") and error.data["retry_capable"] is True


def test_integration_test_curl_gets_an_interactive_error_with_retry_capable(mcp):
    # "Test 1: Missing parameters should trigger retry ... Expected: Interactive error message with
    # retry_capable: true", on the default (tool result) channel.
    result = tool_result(mcp, "send_email", {})
    assert result.is_error is True
    assert result.structured_content["kind"] == "needsInput:v1"
    assert result.structured_content["details"]["retry_capable"] is True
    assert is_retry_capable_error(result.content[0].text, None)


@pytest.fixture
def outcome_buffer(settings, redis_url):
    """The outcome buffer on this test's Redis database, as in the outcomes API tests."""
    settings.REDIS_URL = redis_url
    recorder.reset()
    yield
    recorder.reset()


def test_a_client_with_max_retry_attempts_3_ends_its_episode_exhausted_at_the_fourth_failed_call(rest, outcome_buffer):
    # The seed's loop: one failed call, then retries while retryAttempts < MAX_RETRY_ATTEMPTS (3), all failing.
    # The outcomes of those four calls, reported through the REST API, are ingested into one exhausted episode.
    import time
    import uuid

    now = time.time()
    events = [
        {"id": uuid.uuid4().hex, "ts": now - 40 + n, "tool": "send_email", "outcome": "error",
         "code": "MISSING_PARAMETER", "variant": "default", "interactive": True, "client": "agentopia"}
        for n in range(4)
    ]  # fmt: skip
    response = rest.post("/api/v1/outcomes/", {"events": events}, format="json")
    assert response.status_code == 202, response.content
    ingest.drain()
    episode = Episode.objects.get(tool="send_email")
    assert (episode.ending, episode.retries, episode.recovered_at_attempt) == ("exhausted", 3, None)


# --- Success metrics ------------------------------------------------------------------------------------------


def test_metrics_carry_the_seeds_targets_and_user_resolution_time(rest):
    assert TARGETS == {"retry_success_rate": 0.6, "interactive_error_rate": 0.8}  # "> 60 %", "> 80 %"
    now = __import__("time").time()
    ingest.ingest_events(
        [
            OutcomeEvent(tool="send_email", client="c", outcome="error", code="MISSING_PARAMETER", ts=now - 30),
            OutcomeEvent(tool="send_email", client="c", outcome="ok", ts=now - 10),
        ]
    )
    rollups.compute_due()
    totals = compute_metrics("24h")["totals"]
    # "User Resolution Time": first failed call to the recovering call, 20 s, read from the rollups' bins.
    assert 20 / 1.45 <= totals["resolution_p50_seconds"] <= 20 * 1.45
    assert totals["retry_success_rate"] == 1.0


def test_setup_and_format_questions_differ_because_a_question_ends_its_first_sentence_with_a_question_mark(
    seed_wording,
):
    # The seed's statements render exactly (the tests above) but are not questions: the lint says so, while the
    # shipped catalog's own wording of the same three codes asks.
    codes = {"INVALID_PARAMETER", "AUTHENTICATION_REQUIRED", "SERVICE_CONFIGURATION"}
    written = catalog_document_from_db(codes=sorted(codes))
    warned = {written["codes"][f.path[1]]["code"] for f in lint_catalog(written, max_chars=500) if f.rule == "question"}
    assert warned == codes
    assert lint_catalog(read_catalog_file(DEFAULT_CATALOG_PATH), max_chars=500) == []
