"""Seed 002 (communicating errors to the model), example by example, through the public API.

The concrete examples: ``create_error_response`` for function_not_found, invalid_arguments, service_unavailable
and timeout (with partial_result); the OpenAI, Anthropic and Gemini results of the universal formatter
(execution_failure of get_weather, Anthropic's query_database); the instruction patterns per error type; the
500-character advice. Rebuilt with the renderer, the REST API (face=anatomy/provider) and the MCP endpoint. The
seed's wording is typed into a test catalog as a writer would; deliberate differences say ``differs_because``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from errcatalog.catalog.document import validate_catalog_document
from errcatalog.errors import SafetyRefusal
from errcatalog.render import Failure, ParameterFault, anatomy, provider_result, render, tool_result
from errcatalog.render.classify import classify, facts_from_exception
from errcatalog.render.entries import CatalogSnapshot
from tests.support.seeds import rest_render, seed_catalog

GOLDEN = Path(__file__).parent.parent / "golden"
RETRY_NOTE = "You may retry this call."


def golden(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


def _code(code: str, message: str, instruction: str, *, retryable: bool = False, variants: tuple = ()) -> dict:
    first = {"name": "default", "header": "Error", "message": message, "cause": "", "instruction": instruction}
    return {
        "code": code,
        "category": "tool",
        "retryable": retryable,
        "variants": [first, *({**first, **v} for v in variants)],
    }


SEED_002_CODES = [
    _code("FUNCTION_NOT_FOUND", "Function '{tool_name}' does not exist.", "Use 'get_weather' instead."),
    _code(
        "INVALID_ARGUMENTS",
        "Parameter '{parameter}' must be between {minimum} and {maximum}.",
        "Retry with '{parameter}' set to {maximum} or less.",
    ),
    _code(
        "SERVICE_UNAVAILABLE",
        "Weather API returned 503 Service Unavailable.",
        "Inform the user that the weather service is temporarily down.",
        retryable=True,
    ),
    _code(
        "TIMEOUT",
        "Search timed out after 10 seconds.",
        "Present the partial results to the user and offer to search again.",
    ),
    _code(
        "EXECUTION_FAILURE",
        "Weather API returned 503.",
        "Inform the user that this operation failed. Try an alternative approach if available.",
        retryable=True,
        variants=(
            {
                "name": "database",
                "message": "Database connection timed out.",
                "instruction": "Inform the user the database is temporarily unavailable.",
            },
        ),
    ),
]
SEED = CatalogSnapshot.from_document(validate_catalog_document({"format": "errcatalog/v1", "codes": SEED_002_CODES}))
FORECAST_DAYS = ParameterFault("days", "invalid", minimum=1, maximum=14, received=30)


# --- create_error_response ------------------------------------------------------------------------------------


def test_function_not_found_equals_the_seed():
    # The renderer reproduces the seed's face, typed name included, when it is handed the name.
    failure = Failure("FUNCTION_NOT_FOUND", tool_name="get_wether", alternatives=("get_weather", "get_forecast"))
    assert anatomy(render(SEED, failure)) == golden("seed002_anatomy.json")["FUNCTION_NOT_FOUND"]


@pytest.mark.django_db(transaction=True)
def test_function_not_found_at_the_endpoint_differs_because_a_typed_name_is_never_repeated(mcp):
    # The endpoint never hands the renderer a name nothing serves: a model would read back whatever a caller (or an
    # injected instruction) put in the name. With the seed's own wording, the name is left out and only the real,
    # close tools are named.
    seed_catalog({"codes": SEED_002_CODES})

    async def scenario(client):
        return await client.call_tool("get_wether", {"format": "both"})

    for version, result in mcp.run(scenario).items():
        said = json.dumps(result.structured_content) + result.content[0].text
        assert result.structured_content["code"] == "FUNCTION_NOT_FOUND", version
        assert "get_wether" not in said, version
        assert result.structured_content["details"]["alternatives"][0] == "get_weather", version


def test_service_unavailable_equals_the_seed_keys_in_order():
    payload = anatomy(render(SEED, Failure("SERVICE_UNAVAILABLE", tool_name="get_weather")))
    assert list(payload.items()) == list(golden("seed002_anatomy.json")["SERVICE_UNAVAILABLE"].items())


def test_timeout_with_partial_result_equals_the_seed():
    failure = Failure("TIMEOUT", tool_name="search_documents", partial_result=[{"title": "Python Basics", "id": 1}])
    assert anatomy(render(SEED, failure)) == golden("seed002_anatomy.json")["TIMEOUT"]


def test_invalid_arguments_message_and_instruction_equal_the_seed():
    payload = anatomy(render(SEED, Failure("INVALID_ARGUMENTS", tool_name="get_forecast", parameters=(FORECAST_DAYS,))))
    assert payload["error_type"] == "invalid_arguments"
    assert payload["message"] == "Parameter 'days' must be between 1 and 14."
    assert payload["instruction"] == "Retry with 'days' set to 14 or less."
    assert payload["details"]["received"] == 30  # seed 002 names the number the caller sent
    assert payload["details"]["field"] == "days"
    assert payload["details"]["max"] == 14


def test_invalid_arguments_details_differ_because_the_minimum_is_named_too():
    payload = anatomy(render(SEED, Failure("INVALID_ARGUMENTS", tool_name="get_forecast", parameters=(FORECAST_DAYS,))))
    # Seed 002: {"field": "days", "received": 30, "max": 14}. The schema's minimum is named as well.
    assert payload["details"] == {"field": "days", "received": 30, "min": 1, "max": 14}


@pytest.mark.parametrize("sent", ["thirty", ["30"], {"n": 30}, None])
def test_received_text_differs_because_strings_are_never_echoed(sent):
    fault = ParameterFault("days", "invalid", minimum=1, maximum=14, received=sent)  # what a careless caller passes
    payload = anatomy(render(SEED, Failure("INVALID_ARGUMENTS", tool_name="get_forecast", parameters=(fault,))))
    assert payload["details"]["received"] == "[REDACTED]"


def test_received_numbers_are_bounded_in_length():
    fault = ParameterFault("days", "invalid", maximum=14, received=10**40)
    payload = anatomy(render(SEED, Failure("INVALID_ARGUMENTS", tool_name="get_forecast", parameters=(fault,))))
    assert payload["details"]["received"] == "[REDACTED]"


# --- Provider formats --------------------------------------------------------------------------------------------


def test_provider_results_equal_the_seed_byte_for_byte():
    rendered = render(SEED, Failure("EXECUTION_FAILURE", tool_name="get_weather"), variant="default")
    expected = golden("seed002_providers.json")
    assert provider_result(rendered, "openai", "call_123") == expected["openai"]
    assert provider_result(rendered, "anthropic", "call_123") == expected["anthropic"]
    assert provider_result(rendered, "gemini")["functionResponse"]["response"] == expected["gemini_response"]
    database = render(SEED, Failure("EXECUTION_FAILURE", tool_name="query_database"), variant="database")
    assert provider_result(database, "anthropic", "toolu_xyz789") == expected["anthropic_query_database"]


@pytest.mark.django_db(transaction=True)
def test_rest_provider_face_equals_the_seed(rest, catalog):
    seed_catalog({"codes": SEED_002_CODES})
    expected = golden("seed002_providers.json")
    for provider, call_id in (("openai", "call_123"), ("anthropic", "call_123")):
        body = rest_render(
            rest,
            code="EXECUTION_FAILURE",
            variant="default",
            tool_name="get_weather",
            face="provider",
            provider=provider,
            call_id=call_id,
        )
        assert body["output"] == expected[provider]
    anatomy_body = rest_render(
        rest,
        code="INVALID_ARGUMENTS",
        tool_name="get_forecast",
        face="anatomy",
        parameters=[{"name": "days", "problem": "invalid", "minimum": 1, "maximum": 14, "received": 30}],
    )
    assert anatomy_body["output"]["details"]["received"] == 30
    refused = rest.post(
        "/api/v1/render/",
        {"code": "INVALID_ARGUMENTS", "parameters": [{"name": "days", "problem": "invalid", "received": "thirty"}]},
        format="json",
    )
    assert refused.status_code == 400  # text is refused at the door, not shown


# --- Retry advice: each error type's, stated once ---------------------------------------------------------------

_ADVICE = re.compile(r"\bretry|\bretrying\b|\btry again\b", re.IGNORECASE)


def test_every_default_code_states_its_retry_advice_once(default_snapshot):
    for code in default_snapshot.codes:
        rendered = render(default_snapshot, Failure(code, tool_name="get_weather"))
        instruction = anatomy(rendered)["instruction"]
        assert instruction.count(RETRY_NOTE) <= 1, code
        if rendered.retryable:
            # Either the catalog's own advice or the generic note, never both.
            assert (RETRY_NOTE in instruction) != bool(_ADVICE.search(rendered.instruction)), (code, instruction)


def test_execution_failure_carries_the_seed_advice(default_snapshot):
    entry = default_snapshot.entry("EXECUTION_FAILURE")
    payload = anatomy(render(default_snapshot, Failure("EXECUTION_FAILURE", tool_name="get_weather")))
    # Seed 002's default for execution_failure; a transient one (503, a dropped connection) is classified as
    # SERVICE_UNAVAILABLE or NETWORK_ERROR, which are the retryable ones.
    assert entry.retryable is False
    assert payload["instruction"].startswith(
        "Inform the user that this operation failed. Try an alternative approach if available"
    )
    assert "is_temporary" not in payload


def test_timeout_carries_the_seed_advice(default_snapshot):
    failure = Failure("TIMEOUT", tool_name="search_documents", partial_result=[{"title": "Python Basics", "id": 1}])
    payload = anatomy(render(default_snapshot, failure))
    # Seed 002: "Present the partial results to the user and offer to search again"; not a temporary error.
    assert payload["instruction"].startswith(
        "Present any partial results to the user first, then offer to search again"
    )
    assert payload["instruction"].endswith("Partial data is available in 'partial_result'.")
    assert "is_temporary" not in payload
    assert payload["partial_result"] == [{"title": "Python Basics", "id": 1}]


def test_rate_limit_and_service_unavailable_carry_the_seed_advice_with_its_delay(default_snapshot):
    rate = anatomy(render(default_snapshot, Failure("RATE_LIMIT", tool_name="get_weather")))
    assert "do not retry for at least 30 seconds" in rate["instruction"]  # seed 002's rate-limit pattern
    assert rate["details"]["retry_after_seconds"] == 30
    assert RETRY_NOTE not in rate["instruction"]
    down = anatomy(render(default_snapshot, Failure("SERVICE_UNAVAILABLE", tool_name="get_weather")))
    assert down["is_temporary"] is True
    assert RETRY_NOTE not in down["instruction"]
    assert "retry once after a pause" in down["instruction"]


# --- Safety refusals -----------------------------------------------------------------------------------------------


def test_safety_refusal_has_its_own_code(default_snapshot):
    code = classify(default_snapshot, facts_from_exception(SafetyRefusal("finishReason SAFETY")))
    assert code == "SAFETY_REFUSAL"
    entry = default_snapshot.entry(code)
    assert (entry.retryable, entry.system) == (False, False)
    payload = anatomy(render(default_snapshot, Failure(code, tool_name="summarize_text")))
    assert payload["error_type"] == "safety_refusal"  # seed 002's name for the error type
    assert payload["message"].startswith("Safety refusal: ")
    assert "Do not repeat the same request" in payload["instruction"]
    assert "is_temporary" not in payload


# --- Numbers the caller sent, and the MCP face ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_mcp_names_the_number_sent_and_never_the_text(mcp):
    async def scenario(client):
        return (
            await client.call_tool("get_forecast", {"location": "London", "days": 30, "format": "both"}),
            await client.call_tool("get_forecast", {"location": "London", "days": "thirty days please"}),
        )

    for version, (number, text) in mcp.run(scenario).items():
        message = number.structured_content["message"]
        assert "The value 30 is not allowed." in message, version
        assert "The expected format is a number from 1 to 14." in message, version
        assert "follows the format" not in message, version
        # A question is answered by calling again: the envelope says retryable wherever retry_capable is true.
        assert number.structured_content["kind"] == "needsInput:v1", version
        assert number.structured_content["retryable"] is True, version
        assert number.structured_content["details"]["retry_capable"] is True, version
        assert "thirty" not in json.dumps(text.structured_content), version
        assert "thirty" not in text.content[0].text, version


def test_messages_stay_under_500_characters(default_snapshot):
    for code in default_snapshot.codes:
        rendered = render(default_snapshot, Failure(code, tool_name="get_weather", event_id="0" * 32, status_code=502))
        assert len(rendered.text) <= 500, code
        assert len(tool_result(rendered)["content"][0]["text"]) <= 500, code
