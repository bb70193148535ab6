"""Every demo scenario over real HTTP with the SDK's client, in both protocol generations (issue 3, "Proof").

What is asserted is what the model receives: ``isError``, the structured envelope and the text of each content
block. Every error result also passes ``assert_clean_error``: a catalog envelope, and no traceback, exception
class name, file path or tool-internal log message in any block.
"""

from __future__ import annotations

import json
import re

import pytest
import sentry_sdk

from demo import documents
from errcatalog import errors
from tests.mcpserver.test_sentry import sentry_ingest  # noqa: F401  (fixture: Sentry's real transport)

pytestmark = pytest.mark.django_db(transaction=True)

GENERATIONS = {"2026-07-28", "2025-11-25"}
ENVELOPE_KINDS = {"toolError:v1", "needsInput:v1"}
# Exception classes a demo tool raises or that its backends raise on the way (urllib, smtplib, Django).
EXCEPTION_NAMES = {
    name for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, BaseException)
} | {
    "ConnectionError",
    "ConnectionRefusedError",
    "URLError",
    "HTTPError",
    "TimeoutError",
    "ValidationError",
    "SMTPRecipientsRefused",
    "InvalidToolOutput",
    "ValueError",
    "TypeError",
    "KeyError",
}
LEAKS = re.compile(r"Traceback|File \"|\w\.py\b|site-packages|(?<![\w/])/(?:work|usr|home|tmp|opt)/")
SEED_003_TO = "Question: Who should I send this email to? Please provide the recipient email address."
SEED_003_BODY = "Question: What message content should I include in the email body?"
EMAIL = {"to": "ada@example.com", "subject": "Minutes", "body": "Notes from today."}


def assert_clean_error(result, *never: str) -> dict:
    """An error result as the catalog renders it, with nothing internal in it; returns the envelope."""
    assert result.is_error
    envelope = result.structured_content
    assert envelope["kind"] in ENVELOPE_KINDS
    assert result.content, "an error always carries text for the model"
    faces = [block.text for block in result.content] + [json.dumps(envelope, ensure_ascii=False)]
    for text in faces:
        assert not LEAKS.search(text), text
        assert not {name for name in EXCEPTION_NAMES if re.search(rf"\b{name}\b", text)}, text
        for value in never:
            assert value not in text
    return envelope


def call_both(mcp, name: str, arguments: dict) -> dict:
    """``tools/call`` once per protocol generation; {protocol_version: CallToolResult}."""
    results = mcp.run(lambda client: client.call_tool(name, arguments))
    assert set(results) == GENERATIONS
    return results


def call_each(mcp, calls: list[tuple[str, dict]]) -> list:
    """Several ``tools/call`` in one session per generation (each test flushes the database: fewer tests run
    faster); a flat list of (call index, CallToolResult), both generations."""

    async def scenario(client):
        return [await client.call_tool(name, arguments) for name, arguments in calls]

    results = mcp.run(scenario)
    assert set(results) == GENERATIONS
    return [(index, result) for per_generation in results.values() for index, result in enumerate(per_generation)]


# --- send_email (seed 003) -----------------------------------------------------------------------------------


def test_send_email_sends_a_real_mail(mcp, mailoutbox, settings):
    for result in call_both(mcp, "send_email", EMAIL).values():
        assert not result.is_error
        assert result.structured_content == {"status": "sent", "to": "ada@example.com", "subject": "Minutes"}
    assert len(mailoutbox) == 2  # the server runs in this process: locmem's outbox is shared
    for message in mailoutbox:
        assert (message.to, message.subject, message.body) == (["ada@example.com"], "Minutes", "Notes from today.")
        assert message.from_email == settings.DEFAULT_FROM_EMAIL


def test_send_email_without_arguments_asks_one_question_made_of_the_three_hints(mcp, mailoutbox):
    for result in call_both(mcp, "send_email", {}).values():
        envelope = assert_clean_error(result)
        assert envelope["kind"] == "needsInput:v1"
        assert envelope["code"] == "MISSING_PARAMETER"
        assert envelope["details"]["required_parameters"] == ["to", "subject", "body"]
        assert len(result.content) == 1
        assert result.content[0].text == (
            "Question: Who should I send this email to, what should be the subject line of this email, and what "
            "message content should I include in the email body?"
        )
    assert mailoutbox == []


MISSING_ONE = [
    ({"subject": "Minutes", "body": "Notes."}, "to", SEED_003_TO),
    # A blank value is missing input too, whether the schema rejects it ("") or the tool does ("   ").
    ({**EMAIL, "to": ""}, "to", SEED_003_TO),
    ({**EMAIL, "body": "   "}, "body", SEED_003_BODY),
    ({**EMAIL, "body": ""}, "body", SEED_003_BODY),
]


def test_send_email_asks_seed_003s_question_for_one_missing_value(mcp, mailoutbox):
    for index, result in call_each(mcp, [("send_email", arguments) for arguments, _, _ in MISSING_ONE]):
        _, parameter, question = MISSING_ONE[index]
        envelope = assert_clean_error(result)
        assert envelope["kind"] == "needsInput:v1"
        assert envelope["code"] == "MISSING_PARAMETER"
        assert envelope["details"]["required_parameter"] == parameter
        assert [block.text for block in result.content] == [question]
    assert mailoutbox == []


# Refused by the schema's format check; refused only by Django's validator in the tool.
MALFORMED_ADDRESSES = ["not-an-email", "ada@"]


def test_send_email_with_a_malformed_recipient_names_the_format_and_never_echoes_it(mcp, mailoutbox):
    for index, result in call_each(mcp, [("send_email", {**EMAIL, "to": a}) for a in MALFORMED_ADDRESSES]):
        envelope = assert_clean_error(result, MALFORMED_ADDRESSES[index], "invalid recipient address")
        assert envelope["kind"] == "needsInput:v1"
        assert envelope["code"] == "INVALID_PARAMETER"
        assert envelope["details"]["parameter"] == "to"
        assert envelope["details"]["expected_format"] == "user@domain.com"
        assert envelope["details"]["provided_value"] == "[REDACTED]"
        assert "user@domain.com" in result.content[0].text
    assert mailoutbox == []


# --- Documents (seeds 000, 001, 003) -------------------------------------------------------------------------


def test_create_then_get_document(mcp):
    async def scenario(client):
        created = await client.call_tool("create_document", {"content": "Agenda\n\n- budget", "title": "Board"})
        fetched = await client.call_tool("get_document", {"document_id": created.structured_content["id"]})
        return created, fetched

    for created, fetched in mcp.run(scenario).values():
        assert not created.is_error and not fetched.is_error
        assert created.structured_content["status"] == "created"
        assert fetched.structured_content["id"] == created.structured_content["id"]
        assert fetched.structured_content["title"] == "Board"
        assert fetched.structured_content["content"] == "Agenda\n\n- budget"


def test_get_unknown_document_is_not_found(mcp, default_document):
    variant = next(entry for entry in default_document["codes"] if entry["code"] == "NOT_FOUND")["variants"][0]
    assert variant["header"] == "Input Error"  # a user error: the people's face says so, no Sentry event
    for result in call_both(mcp, "get_document", {"document_id": 999_999}).values():
        envelope = assert_clean_error(result, "999999", "no such document")
        assert envelope["kind"] == "toolError:v1"
        assert envelope["code"] == "NOT_FOUND"
        assert envelope["retryable"] is False
        assert envelope["details"] == {"statusCode": 404}
        # Seed 001's formatErrorForUser on the MCP face: the header, "API error (404): …" and the generic 404 hint.
        assert result.content[0].text.startswith(f"**Input Error**\n\nAPI error (404): {variant['message']}")
        assert variant["instruction"].split()[0] in result.content[0].text
        assert result.content[0].text.endswith(
            "Please verify that the organization, project, or resource ID is correct and that you have access to it."
        )


def test_search_limit_out_of_bounds_names_the_bounds(mcp):
    for result in call_both(mcp, "search_documents", {"query": "notes", "limit": 500}).values():
        envelope = assert_clean_error(result)
        assert "The value 500 is not allowed." in result.content[0].text  # a number sent may be named (seed 002)
        assert envelope["code"] == "INVALID_PARAMETER"
        assert envelope["details"]["parameter"] == "limit"
        assert envelope["details"]["expected_format"] == "a number from 1 to 100"
        assert "1 to 100" in result.content[0].text


FORMATS = [("markdown", ["markdown"]), ("json", ["json"]), ("both", ["markdown", "json"])]


def test_search_format_gates_the_blocks_of_a_success(mcp):
    documents.document_create(content="Quarterly notes for the board.", title="Q3 notes")
    calls = [("search_documents", {"query": "quarterly", "format": fmt}) for fmt, _ in FORMATS]
    for index, result in call_each(mcp, calls):
        assert not result.is_error
        assert result.structured_content["count"] == 1
        assert result.structured_content["documents"][0]["title"] == "Q3 notes"
        texts = [block.text for block in result.content]
        faces = FORMATS[index][1]
        assert len(texts) == len(faces)
        for text, face in zip(texts, faces, strict=True):
            if face == "json":
                assert json.loads(text) == result.structured_content
            else:
                assert text.startswith("Found 1 document:") and "**Q3 notes**" in text


# --- Forecast and weather (seed 002) -------------------------------------------------------------------------


def test_forecast_days_out_of_bounds_then_in_bounds(mcp):
    async def scenario(client):
        too_many = await client.call_tool("get_forecast", {"location": "London,UK", "days": 30, "format": "both"})
        three = await client.call_tool("get_forecast", {"location": "London,UK", "days": 3})
        return too_many, three

    for too_many, three in mcp.run(scenario).values():
        envelope = assert_clean_error(too_many)
        assert "The value 30 is not allowed." in too_many.content[0].text  # seed 002: "got 30, the maximum is 14"
        assert envelope["code"] == "INVALID_PARAMETER"
        assert envelope["details"]["parameter"] == "days"
        assert envelope["details"]["expected_format"] == "a number from 1 to 14"
        assert "1 to 14" in too_many.content[0].text
        assert json.loads(too_many.content[1].text) == envelope  # format=both gates errors too

        assert not three.is_error
        assert len(three.structured_content["days"]) == 3
        assert three.content[0].text.startswith("Forecast for London,UK:")


def test_weather_upstream_down_is_a_retryable_network_error(mcp):
    for result in call_both(mcp, "get_weather", {"location": "London,UK"}).values():
        envelope = assert_clean_error(result, "upstream unreachable", "127.0.0.1")
        assert envelope["kind"] == "toolError:v1"
        assert envelope["code"] == "NETWORK_ERROR"
        assert envelope["retryable"] is True


def test_weather_upstream_down_is_captured_as_a_system_error(mcp, sentry_ingest):  # noqa: F811 (the fixture)
    results = call_both(mcp, "get_weather", {"location": "London,UK"})
    sentry_sdk.get_client().flush(timeout=5)

    by_id = {event["event_id"]: event for event in sentry_ingest.events}
    assert len(by_id) == 2  # one per generation
    for result in results.values():
        envelope = assert_clean_error(result, "upstream unreachable")
        assert envelope["code"] == "NETWORK_ERROR"
        event_id = envelope["details"]["eventId"]
        assert event_id in result.content[0].text
        assert by_id[event_id]["fingerprint"] == ["errcatalog", "NETWORK_ERROR"]
        assert by_id[event_id]["tags"]["tool"] == "get_weather"


# --- Integrations and permissions (seeds 001, 003) -----------------------------------------------------------


INTEGRATION_FAILURES = [
    ("web_search", {"query": "mcp spec"}, "needsInput:v1", "SERVICE_CONFIGURATION", "DEMO_SEARCH_API_KEY"),
    ("read_inbox", {}, "needsInput:v1", "AUTHENTICATION_REQUIRED", "not connected"),
    ("summarize_text", {"text": "A long text."}, "toolError:v1", "LLM_PROVIDER_ERROR", "no LLM provider"),
    ("search_events", {}, "toolError:v1", "PERMISSION_DENIED", "multi-project"),
]


def test_integration_failures_reach_the_model_as_catalog_errors(mcp):
    seen = set()
    for index, result in call_each(mcp, [(tool, arguments) for tool, arguments, *_ in INTEGRATION_FAILURES]):
        _, _, kind, code, never = INTEGRATION_FAILURES[index]
        envelope = assert_clean_error(result, never)
        assert (envelope["kind"], envelope["code"]) == (kind, code)
        # A question is answered by calling again, so a needsInput:v1 result says retryable (seed 003 retry_capable).
        assert envelope["retryable"] is (kind == "needsInput:v1")
        text = result.content[0].text
        if code == "SERVICE_CONFIGURATION":
            assert envelope["details"]["service"] == "web_search"
            assert text.startswith("Question: Can you configure the web_search service?")
        elif code == "AUTHENTICATION_REQUIRED":
            assert envelope["details"]["service"] == "gmail"
            assert text.startswith("Question: Can you set up your gmail service?")
        elif code == "PERMISSION_DENIED":
            assert envelope["details"]["statusCode"] == 403
            assert "single project" in text
        # LLM_PROVIDER_ERROR: its "AI Provider Error" header is for people (markdown face); the code is the signal.
        seen.add(code)
    assert len(seen) == len(INTEGRATION_FAILURES)


def test_misspelled_demo_tool_suggests_the_real_one(mcp):
    for result in call_both(mcp, "get_wether", {"location": "London,UK"}).values():
        envelope = assert_clean_error(result)
        assert envelope["code"] == "FUNCTION_NOT_FOUND"
        assert "get_weather" in envelope["details"]["alternatives"]
        assert "get_weather" in result.content[0].text
