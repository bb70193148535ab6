"""Classification by the catalog's ordered rules, and the typed exceptions of Sentry's error-handling
conventions."""

from __future__ import annotations

import dataclasses

import pytest

from errcatalog.errors import (
    ApiAuthenticationError,
    ApiNotFoundError,
    ApiPermissionError,
    ApiRateLimitError,
    ApiServerError,
    ApiValidationError,
    ConfigurationError,
    LLMProviderError,
    UserInputError,
    create_api_error,
)
from errcatalog.render.classify import FailureFacts, _without_text, classify, facts_from_exception
from errcatalog.render.entries import CatalogSnapshot, RuleEntry


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, ApiValidationError),
        (401, ApiAuthenticationError),
        (403, ApiPermissionError),
        (404, ApiNotFoundError),
        (422, ApiValidationError),
        (429, ApiRateLimitError),
        (500, ApiServerError),
        (502, ApiServerError),
    ],
)
def test_api_error_factory_returns_typed_errors(status, cls):
    error = create_api_error(status, "upstream text")
    assert type(error) is cls
    assert error.status_code == status


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (create_api_error(401), "AUTHENTICATION_ERROR"),
        (create_api_error(403), "PERMISSION_DENIED"),
        (create_api_error(404), "NOT_FOUND"),
        (create_api_error(400), "VALIDATION_ERROR"),
        (create_api_error(422), "VALIDATION_ERROR"),
        (create_api_error(429, retry_after=5), "RATE_LIMIT"),
        (create_api_error(418), "CLIENT_ERROR"),
        (create_api_error(500), "SERVER_ERROR"),
        (create_api_error(502), "SERVER_ERROR"),
        (create_api_error(503), "SERVICE_UNAVAILABLE"),
        (TimeoutError("read timed out"), "NETWORK_ERROR"),
        (ConnectionRefusedError("refused"), "NETWORK_ERROR"),
        (UserInputError("bad slug"), "USER_INPUT_ERROR"),
        (UserInputError("no such param", code="MISSING_PARAMETER"), "MISSING_PARAMETER"),
        (ConfigurationError("no key", service="gmail"), "CONFIGURATION_ERROR"),
        (LLMProviderError("region"), "LLM_PROVIDER_ERROR"),
        (FileNotFoundError("x"), "RESOURCE_NOT_FOUND"),
        (PermissionError("x"), "PERMISSION_DENIED"),
        (ValueError("a bug, probably"), "UNKNOWN_ERROR"),
        (RuntimeError("boom"), "UNKNOWN_ERROR"),
    ],
)
def test_default_rules_follow_the_seeds(default_snapshot, exc, code):
    assert classify(default_snapshot, facts_from_exception(exc)) == code


@pytest.mark.parametrize(
    ("jsonrpc", "code"),
    [
        (-32700, "PARSE_ERROR"),
        (-32600, "INVALID_REQUEST"),
        (-32601, "METHOD_NOT_FOUND"),
        (-32602, "INVALID_PARAMS"),
        (-32002, "RESOURCE_NOT_FOUND"),
        # An upstream's internal error is its failure, and says nothing of the request: the fallback, which claims
        # no cause (seed 004's INTERNAL_ERROR is this server's own fault, which it is not).
        (-32603, "UPSTREAM_TOOL_FAILED"),
    ],
)
def test_upstream_jsonrpc_codes_map_to_seed_004_codes_except_an_upstreams_internal_error(
    default_snapshot, jsonrpc, code
):
    assert classify(default_snapshot, FailureFacts(jsonrpc_code=jsonrpc, kind="jsonrpc_error")) == code


@pytest.mark.parametrize(
    ("jsonrpc", "text", "code"),
    [
        (-32603, "no such table: users", "NOT_FOUND"),
        (-32603, "ENOENT: no such file or directory, open '/data/x.txt'", "NOT_FOUND"),
        (-32603, "Invalid timezone: 'Mars/Olympus'", "INVALID_PARAMETER"),
        (-32603, 'syntax error at or near "SELEC"', "INVALID_PARAMETER"),
        (-32603, "Widget exploded", "UPSTREAM_TOOL_FAILED"),
        (-32602, "Unknown tool: get_time", "FUNCTION_NOT_FOUND"),
        (-32602, "Tool arguments did not match", "INVALID_PARAMS"),
    ],
)
def test_an_upstreams_text_is_read_before_its_bare_jsonrpc_code(default_snapshot, jsonrpc, text, code):
    facts = FailureFacts(jsonrpc_code=jsonrpc, kind="jsonrpc_error", upstream="db", text=text)
    assert classify(default_snapshot, facts) == code


def test_facts_never_carry_the_message():
    facts = facts_from_exception(ApiServerError(502, "secret upstream text"))
    assert "secret" not in repr(facts)
    assert facts.status_code == 502
    assert facts.exception_types[:2] == ("ApiServerError", "ApiError")


def test_first_matching_rule_wins_and_empty_rules_never_match(default_snapshot):
    rules = (
        RuleEntry(position=1, code="UNKNOWN_ERROR"),  # no condition: ignored
        RuleEntry(position=2, code="RATE_LIMIT", status_min=429, status_max=429, upstream="weather"),
        RuleEntry(position=3, code="CLIENT_ERROR", status_min=400, status_max=499),
    )
    snapshot = CatalogSnapshot(codes=default_snapshot.codes, rules=rules)
    assert classify(snapshot, FailureFacts(status_code=429, upstream="weather")) == "RATE_LIMIT"
    assert classify(snapshot, FailureFacts(status_code=429, upstream="mail")) == "CLIENT_ERROR"
    assert classify(snapshot, FailureFacts(status_code=500)) == "UNKNOWN_ERROR"


def test_inactive_rules_and_unknown_codes_are_skipped(default_snapshot):
    rules = (
        RuleEntry(position=1, code="RATE_LIMIT", status_min=429, active=False),
        RuleEntry(position=2, code="NO_SUCH_CODE", status_min=429),
    )
    snapshot = CatalogSnapshot(codes=default_snapshot.codes, rules=rules)
    assert classify(snapshot, FailureFacts(status_code=429)) == "UNKNOWN_ERROR"


def test_a_code_named_by_the_raiser_wins_when_the_catalog_has_it(default_snapshot):
    assert classify(default_snapshot, FailureFacts(code="TIMEOUT", status_code=500)) == "TIMEOUT"
    assert classify(default_snapshot, FailureFacts(code="NOT_A_CODE", status_code=404)) == "NOT_FOUND"


def test_the_plans_key_is_every_fact_but_the_text():
    """Rules are narrowed once per set of facts without the text; a field added to FailureFacts and left out of
    that key would make one failure's plan answer for another's."""
    facts = FailureFacts(
        exception_types=("KeyError",), status_code=404, jsonrpc_code=-32602, upstream="files", tool="files__read",
        transport="timeout", code="NOT_FOUND", kind="tool_error", text="no such file",
    )  # fmt: skip
    # Every fact differs from its default, so that one left out of the key shows.
    assert all(getattr(facts, f.name) != f.default for f in dataclasses.fields(FailureFacts))
    assert _without_text(facts) == dataclasses.replace(facts, text="")
