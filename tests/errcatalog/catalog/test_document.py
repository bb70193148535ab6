"""The catalog document: the shipped defaults, validation with precise messages, normalisation and import."""

from __future__ import annotations

import copy

import pytest

from errcatalog.catalog import models
from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
from errcatalog.catalog.document import (
    CatalogFileError,
    catalog_schema,
    dump_catalog,
    parse_catalog_text,
    read_catalog_file,
    validate_catalog_document,
)
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.services import catalog_import
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.safety import template_errors
from errcatalog.vocabulary import CODE_PATTERN

IN, ERR = "Input Error", "Error"
# Every code the seeds name (DESIGN §3): code → (category, kind, retryable, system, jsonrpc_code, header).
SEED_CODES = {
    # the toolError:v1 envelope's codes
    "NETWORK_ERROR": ("network", "error", True, True, -31504, ERR),
    "SERVER_ERROR": ("server", "error", True, True, -31500, ERR),
    "CLIENT_ERROR": ("client", "error", False, False, -31400, IN),
    "NOT_FOUND": ("not_found", "error", False, False, -31404, IN),
    "AUTHENTICATION_ERROR": ("authentication", "error", False, False, -31401, IN),
    "UNKNOWN_ERROR": ("unknown", "error", False, True, -32603, ERR),
    # Sentry's error-handling conventions
    "PERMISSION_DENIED": ("authentication", "error", False, False, -31403, IN),
    "VALIDATION_ERROR": ("validation", "error", False, False, -32602, IN),
    "RATE_LIMIT": ("rate_limit", "error", True, False, -31429, IN),
    "USER_INPUT_ERROR": ("user_input", "error", False, False, -32602, IN),
    "CONFIGURATION_ERROR": ("configuration", "error", False, False, -31412, IN),
    "LLM_PROVIDER_ERROR": ("provider", "error", False, False, -31424, "AI Provider Error"),
    # function-calling failures
    "FUNCTION_NOT_FOUND": ("tool", "error", False, False, -32602, IN),
    "INVALID_ARGUMENTS": ("tool", "error", False, False, -32602, IN),
    "EXECUTION_FAILURE": ("tool", "error", False, True, -32603, ERR),
    # Not retryable: a narrower request may succeed, the same call would time out again.
    "TIMEOUT": ("tool", "error", False, True, -31408, ERR),
    "SERVICE_UNAVAILABLE": ("server", "error", True, True, -31503, ERR),
    # the question protocol
    "MISSING_PARAMETER": ("user_input", "needs_input", False, False, -32602, IN),
    "INVALID_PARAMETER": ("user_input", "needs_input", False, False, -32602, IN),
    "AUTHENTICATION_REQUIRED": ("authentication", "needs_input", False, False, -31401, IN),
    "SERVICE_CONFIGURATION": ("configuration", "needs_input", False, False, -31412, IN),
    # JSON-RPC and MCP
    "PARSE_ERROR": ("protocol", "error", False, False, -32700, IN),
    "INVALID_REQUEST": ("protocol", "error", False, False, -32600, IN),
    "METHOD_NOT_FOUND": ("protocol", "error", False, False, -32601, IN),
    "INVALID_PARAMS": ("protocol", "error", False, False, -32602, IN),
    "INTERNAL_ERROR": ("protocol", "error", False, True, -32603, ERR),
    "RESOURCE_NOT_FOUND": ("protocol", "error", False, False, -32002, IN),
    "MISSING_CLIENT_CAPABILITY": ("protocol", "error", False, False, -32021, IN),
    "UNSUPPORTED_PROTOCOL_VERSION": ("protocol", "error", False, False, -32022, IN),
}

MINIMAL = {
    "format": "errcatalog/v1",
    "codes": [{"code": "X_ERROR", "category": "unknown", "variants": [{"message": "m.", "instruction": "i."}]}],
}


def problems_of(doc, source="catalog.yaml") -> list[str]:
    with pytest.raises(CatalogFileError) as caught:
        validate_catalog_document(doc, source=source)
    lines = str(caught.value).splitlines()
    assert len(lines) == len(caught.value.problems)
    return lines


# --- The shipped default catalog --------------------------------------------------------------------------


def test_default_catalog_covers_every_seed_code_as_specified(default_document):
    codes = {c["code"]: c for c in default_document["codes"]}
    assert set(SEED_CODES) <= set(codes)
    for code, (category, kind, retryable, system, jsonrpc, header) in SEED_CODES.items():
        entry = codes[code]
        assert (entry["category"], entry["kind"], entry["retryable"], entry["system"], entry["jsonrpc_code"]) == (
            category,
            kind,
            retryable,
            system,
            jsonrpc,
        ), code
        # Every locale's variant carries the same header (interactive codes also ship a German variant).
        assert {v["header"] for v in entry["variants"]} == {header}, code
        assert [v["name"] for v in entry["variants"] if not v["locale"]] == ["default"], code


def test_default_catalog_asks_every_interactive_question_in_german_too(default_document):
    for entry in default_document["codes"]:
        german = [v for v in entry["variants"] if v["locale"] == "de"]
        if entry["kind"] == "needs_input":
            assert [v["name"] for v in german] == ["default"], entry["code"]
            # The question protocol's shape in German: "Frage: …? Bitte … ."
            assert german[0]["question"].startswith("Frage: "), entry["code"]
            assert "? " in german[0]["question"] and " Bitte " in german[0]["question"], entry["code"]
            assert german[0]["question"].endswith("."), entry["code"]
        else:
            assert german == [], entry["code"]


def test_default_http_statuses_follow_the_seeds(default_document):
    statuses = {c["code"]: c["http_statuses"] for c in default_document["codes"]}
    assert statuses["AUTHENTICATION_ERROR"] == [401]
    assert statuses["PERMISSION_DENIED"] == [403]
    assert statuses["NOT_FOUND"] == [404]
    assert statuses["VALIDATION_ERROR"] == [400, 422]
    assert statuses["RATE_LIMIT"] == [429]
    assert statuses["SERVICE_UNAVAILABLE"] == [503]
    assert 500 in statuses["SERVER_ERROR"]


def test_every_default_code_says_what_why_and_next_within_the_cap(default_document):
    for entry in default_document["codes"]:
        assert entry["explanation"] and entry["doc_url"] == ""
        for variant in entry["variants"]:
            assert variant["message"] and variant["cause"] and variant["instruction"], entry["code"]
            for name in ("message", "cause", "instruction", "question"):
                assert template_errors(variant[name]) == []
                assert len(variant[name]) < 300, (entry["code"], name)
            composed = " ".join((variant["message"], variant["cause"], variant["instruction"]))
            assert len(composed) < 450, entry["code"]
            if entry["kind"] == "needs_input":
                lead = {"": "Question: ", "de": "Frage: "}[variant["locale"]]
                assert variant["question"].startswith(lead), entry["code"]
            else:
                assert variant["question"] == "", entry["code"]


def test_default_wording_uses_the_placeholders_the_renderer_has(default_document):
    variants = {c["code"]: c["variants"][0] for c in default_document["codes"]}
    assert variants["NETWORK_ERROR"]["message"].startswith("Network error: {network_failure}")
    assert "{retry_after}" in variants["RATE_LIMIT"]["instruction"]
    assert "{alternatives}" in variants["FUNCTION_NOT_FOUND"]["instruction"]
    assert "{parameters}" in variants["MISSING_PARAMETER"]["question"]
    assert variants["INVALID_PARAMETER"]["question"].startswith("Question: What should I use for {parameter} instead?")
    # Read aloud: "The expected format is a number from 1 to 14." (never "follows the format a number from…").
    assert "The expected format is {expected_format}." in variants["INVALID_PARAMETER"]["question"]
    assert "The value {received} is not allowed." in variants["INVALID_PARAMETER"]["question"]
    questions = {code: variant["question"] for code, variant in variants.items()}
    assert questions["AUTHENTICATION_REQUIRED"].startswith("Question: Can you set up your {service} service?")
    assert questions["SERVICE_CONFIGURATION"].startswith("Question: Can you configure the {service} service?")


def test_default_hints_ask_the_seed_003_questions(default_document):
    hints = {(h["tool"], h["parameter"]): h for h in default_document["hints"]}
    assert hints[("send_email", "to")] == {
        "tool": "send_email",
        "parameter": "to",
        "description": "recipient email address",
        "parameter_type": "email_address",
        "example": "user@domain.com",
        "question": "Question: Who should I send this email to? Please provide the recipient email address.",
    }
    assert hints[("send_email", "subject")]["question"] == "Question: What should be the subject line of this email?"
    assert hints[("send_email", "body")]["question"] == (
        "Question: What message content should I include in the email body?"
    )
    assert hints[("create_document", "content")]["parameter_type"] == "text"
    assert hints[("web_search", "query")]["question"] == (
        "Question: What would you like me to search for? Please provide a search query or topic."
    )


def test_default_rules_are_spaced_by_ten_and_keep_fastmcp_value_errors_off(default_document):
    rules = default_document["rules"]
    # Spaced by ten, except the rules inserted later so that installed catalogs keep every position they had:
    # between exception rules (33: a provider's unconverted APICallError, 36: SafetyRefusal); the gateway's answer
    # that is not MCP and its open circuit before the transport rules (104, 105); what the gateway cannot relay (275:
    # an upstream's URL elicitation required, 276: a task-only tool); the rules on an upstream's own failure text
    # (291-297) and, after them, the rules on a bare JSON-RPC code (301-305); the rules in the words of the engines
    # and libraries servers wrap (265-289, around the positions taken then); the rules on common words (306, 307),
    # before the fallback for a failed tool, which moved from 300 to 309 to make room for them; an HTTP status in an
    # HTTP client's words (253-259), where no position ever held another rule; credentials refused, Go's network
    # errors, a service down for now and Python's socket errors in the words servers pass on (261-264); the generic
    # rules (310-318), before both fallbacks, which moved to 319 and 320 to make room for them.
    upstream_text = set(range(291, 298))
    http_statuses = set(range(253, 260)) | {261, 262, 263, 264}
    dialects = {*range(265, 275), 277, 278, 279, *range(281, 290)}
    jsonrpc_codes = set(range(301, 306))
    common_words = {306, 307}
    generic = set(range(310, 319))
    inserted = (
        {33, 36, 104, 105, 275, 276, 319}
        | upstream_text
        | dialects
        | jsonrpc_codes
        | common_words
        | http_statuses
        | generic
    )
    original = [r["position"] for r in rules if r["position"] not in inserted]
    assert original == [*range(10, 211, 10), 280, 290, 320]
    assert [r["code"] for r in rules if r["position"] in inserted] == [
        "LLM_PROVIDER_ERROR",
        "SAFETY_REFUSAL",
        "EXECUTION_FAILURE",
        "SERVICE_UNAVAILABLE",
        "VALIDATION_ERROR",
        "AUTHENTICATION_ERROR",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "RATE_LIMIT",
        "SERVICE_UNAVAILABLE",
        "SERVER_ERROR",
        "AUTHENTICATION_ERROR",
        "NETWORK_ERROR",
        "SERVICE_UNAVAILABLE",
        "NETWORK_ERROR",
        "INVALID_PARAMETER",
        "VALIDATION_ERROR",
        "INVALID_PARAMETER",
        "PERMISSION_DENIED",
        "NETWORK_ERROR",
        "VALIDATION_ERROR",
        "PERMISSION_DENIED",
        "INVALID_PARAMETER",
        "NOT_FOUND",
        "INVALID_PARAMETER",
        "AUTHENTICATION_REQUIRED",
        "MISSING_CLIENT_CAPABILITY",
        "NOT_FOUND",
        "VALIDATION_ERROR",
        "NETWORK_ERROR",
        "INVALID_PARAMETER",
        "INVALID_PARAMETER",
        "FUNCTION_NOT_FOUND",
        "NOT_FOUND",
        "NOT_FOUND",
        "INVALID_PARAMETER",
        "PERMISSION_DENIED",
        "INVALID_PARAMETER",
        "INVALID_PARAMETER",
        "AUTHENTICATION_ERROR",
        "RATE_LIMIT",
        "PERMISSION_DENIED",
        "NETWORK_ERROR",
        "INVALID_PARAMETER",
        "INVALID_PARAMETER",
        "NOT_FOUND",
        "PARSE_ERROR",
        "INVALID_REQUEST",
        "METHOD_NOT_FOUND",
        "INVALID_PARAMS",
        "RESOURCE_NOT_FOUND",
        "NOT_FOUND",
        "INVALID_PARAMETER",
        "RATE_LIMIT",
        "AUTHENTICATION_ERROR",
        "PERMISSION_DENIED",
        "NETWORK_ERROR",
        "SERVICE_UNAVAILABLE",
        "TIMEOUT",
        "NOT_FOUND",
        "INVALID_PARAMETER",
        "INVALID_PARAMETER",
        "UPSTREAM_TOOL_FAILED",
    ]
    # Rules on an upstream's text read a tool's error result and a JSON-RPC error's message alike.
    assert all(
        not r["kind"] and r["pattern"].startswith("^") for r in rules if r["position"] in upstream_text | dialects
    )
    assert not any(r["code"] == "INTERNAL_ERROR" for r in rules)  # an upstream's -32603 is its failure, not ours
    off = [r for r in rules if not r["active"]]
    assert {(r["exception"], r["code"]) for r in off} == {
        ("ValueError", "INVALID_PARAMS"),
        ("TypeError", "INVALID_PARAMS"),
    }
    assert all("must reach Sentry" in r["note"] for r in off)
    # Exception-class rules come before transport and status rules, ranges after the statuses inside them.
    kinds = [
        "exception" if r["exception"] else "kind" if r["kind"] else "transport" if r["transport"] else "other"
        for r in rules[:15]
    ]
    assert kinds == ["exception"] * 12 + ["kind"] * 2 + ["transport"]
    by_status = [(r["status_min"], r["status_max"], r["code"]) for r in rules if r["status_min"] is not None]
    assert by_status.index((500, 599, "SERVER_ERROR")) > by_status.index((503, 503, "SERVICE_UNAVAILABLE"))
    assert by_status[-1] == (400, 499, "CLIENT_ERROR")


def test_default_document_builds_a_snapshot():
    snapshot = CatalogSnapshot.from_document(read_catalog_file(DEFAULT_CATALOG_PATH))
    assert set(SEED_CODES) <= set(snapshot.codes)
    assert snapshot.hint("send_email", "to").example == "user@domain.com"
    assert snapshot.rules[0].position == 10


def test_schema_choices_match_the_models():
    defs = catalog_schema()["$defs"]
    assert defs["code"]["properties"]["category"]["enum"] == list(models.Category.values)
    assert defs["code"]["properties"]["kind"]["enum"] == list(models.Kind.values)
    assert defs["variant"]["properties"]["header"]["enum"] == list(models.Header.values)
    assert defs["rule"]["properties"]["transport"]["enum"] == list(models.Transport.values)
    assert defs["code"]["properties"]["code"]["pattern"] == CODE_PATTERN


# --- Normalisation ----------------------------------------------------------------------------------------


def test_missing_keys_are_filled_with_defaults_in_canonical_order():
    doc = validate_catalog_document(
        {**copy.deepcopy(MINIMAL), "rules": [{"code": "X_ERROR", "position": 5, "status_min": 500}]}
    )
    assert list(doc) == ["format", "codes", "hints", "rules"]
    code = doc["codes"][0]
    assert list(code) == list(catalog_schema()["$defs"]["code"]["properties"])
    assert code["kind"] == "error" and code["http_statuses"] == [] and code["jsonrpc_code"] is None
    assert code["variants"][0] == {
        "name": "default",
        "locale": "",
        "weight": 100,
        "header": "Error",
        "message": "m.",
        "cause": "",
        "instruction": "i.",
        "question": "",
        "active": True,
    }
    assert list(doc["rules"][0]) == list(catalog_schema()["$defs"]["rule"]["properties"])
    assert doc["rules"][0]["status_max"] is None and doc["hints"] == []


def test_lists_are_sorted_and_normalising_twice_changes_nothing():
    variant = {"message": "m.", "instruction": "i."}
    doc = validate_catalog_document(
        {
            "format": "errcatalog/v1",
            "codes": [
                {"code": "B_ERROR", "category": "unknown", "variants": [{**variant, "name": "z"}, variant]},
                {"code": "A_ERROR", "category": "unknown", "variants": [{**variant, "locale": "de"}, variant]},
            ],
            "hints": [{"tool": "t", "parameter": "b"}, {"tool": "t", "parameter": "a"}],
            "rules": [
                {"position": 20, "code": "A_ERROR", "exception": "E"},
                {"position": 10, "code": "B_ERROR", "exception": "E"},
            ],
        }
    )
    assert [c["code"] for c in doc["codes"]] == ["A_ERROR", "B_ERROR"]
    assert [(v["locale"], v["name"]) for v in doc["codes"][0]["variants"]] == [("", "default"), ("de", "default")]
    assert [v["name"] for v in doc["codes"][1]["variants"]] == ["default", "z"]
    assert [h["parameter"] for h in doc["hints"]] == ["a", "b"]
    assert [r["position"] for r in doc["rules"]] == [10, 20]
    assert validate_catalog_document(doc) == doc


def test_whole_floats_in_integer_fields_become_integers():
    doc = copy.deepcopy(MINIMAL)
    doc["codes"][0]["retry_after_seconds"] = 30.0
    assert validate_catalog_document(doc)["codes"][0]["retry_after_seconds"] == 30


# --- Validation messages ----------------------------------------------------------------------------------


def test_every_problem_is_listed_with_entry_and_field_in_schema_order():
    doc = copy.deepcopy(MINIMAL)
    doc["codes"][0]["variants"][0]["message"] = "Bad {x.__class__}."
    doc["codes"][0]["colour"] = "red"
    doc["codes"].append({"code": "lower_case", "category": "unknown", "variants": []})
    doc["rules"] = [{"position": 1, "code": "NOPE", "status_min": 400}]
    lines = problems_of(doc)
    assert lines == [
        "catalog.yaml: codes[0] (X_ERROR) → variants[0] (default).message: {x.__class__}: attribute access and "
        "indexing are not allowed in placeholders.",
        "catalog.yaml: codes[0] (X_ERROR) → colour: unknown key. Known keys: code, category, kind, retryable, "
        "retry_after_seconds, http_statuses, jsonrpc_code, system, doc_url, explanation, setup_url, action_required, "
        "optional_parameters, guidance, active, allocation, allocation_frozen, variants.",
        "catalog.yaml: codes[1] (lower_case) → code: 'lower_case': must be UPPER_SNAKE_CASE, e.g. NETWORK_ERROR.",
        "catalog.yaml: codes[1] (lower_case) → variants: a code needs at least one variant.",
        "catalog.yaml: rules[0] (position 1) → code: NOPE is not a code of this document.",
    ]


def test_a_valid_document_is_checked_without_the_slow_validator(default_document, monkeypatch):
    # jsonschema-rs decides validity; jsonschema (seconds for thousands of codes) only describes problems.
    def refuse(*args, **kwargs):
        raise AssertionError("jsonschema walked a valid document")

    catalog_schema()  # loaded (and checked) before jsonschema goes
    monkeypatch.setattr("errcatalog.catalog.document.Draft202012Validator", refuse)
    assert validate_catalog_document(default_document) == default_document


def test_if_the_two_validators_disagree_the_fast_ones_problems_are_reported(monkeypatch):
    class FindsNothing:
        def __init__(self, schema):
            pass

        def iter_errors(self, doc):
            return iter(())

    catalog_schema()
    monkeypatch.setattr("errcatalog.catalog.document.Draft202012Validator", FindsNothing)
    doc = copy.deepcopy(MINIMAL)
    doc["codes"][0]["retryable"] = "yes"
    assert problems_of(doc) == ['catalog.yaml: codes[0] (X_ERROR) → retryable: "yes" is not of type "boolean".']


def test_a_misspelt_key_gets_a_suggestion():
    doc = copy.deepcopy(MINIMAL)
    doc["codes"][0]["variants"][0]["instructions"] = doc["codes"][0]["variants"][0].pop("instruction")
    assert problems_of(doc) == [
        "catalog.yaml: codes[0] (X_ERROR) → variants[0] (default).instruction: missing (required).",
        "catalog.yaml: codes[0] (X_ERROR) → variants[0] (default).instructions: unknown key. "
        "Did you mean 'instruction'?",
    ]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d["codes"][0]["variants"][0].update(cause="{0[1]}"),
            "codes[0] (X_ERROR) → variants[0] (default).cause: {0[1]}: attribute access and indexing are not allowed",
        ),
        (
            lambda d: d["codes"][0]["variants"][0].update(question="Question: {user_email}?"),
            "codes[0] (X_ERROR) → variants[0] (default).question: {user_email} is not a known placeholder.",
        ),
        (
            lambda d: d["codes"][0]["variants"][0].update(instruction="{tool_name!r}"),
            "variants[0] (default).instruction: {tool_name}: conversions and format specs (!r, :>10) are not allowed.",
        ),
        (
            lambda d: d["codes"][0].update(jsonrpc_code=-32050),
            "codes[0] (X_ERROR) → jsonrpc_code: -32050 is in the range JSON-RPC reserves (-32768..-32000)",
        ),
        (lambda d: d["codes"][0].update(http_statuses=[700]), "http_statuses[0]: 700 is above the maximum, 599."),
        (lambda d: d["codes"][0].update(retryable="yes"), "→ retryable: must be true or false, not the string 'yes'."),
        (lambda d: d["codes"][0].update(kind="warning"), "→ kind: 'warning' is not one of: 'error', 'needs_input'."),
        (lambda d: d["codes"].append(copy.deepcopy(d["codes"][0])), "codes[1] (X_ERROR) → code: duplicate code;"),
        (
            lambda d: d["codes"][0]["variants"].append(copy.deepcopy(d["codes"][0]["variants"][0])),
            "variants[1] (default).name: duplicate variant 'default' for locale ''; variants[0] already uses it.",
        ),
        (
            lambda d: d.update(hints=[{"tool": "t", "parameter": "p"}, {"tool": "t", "parameter": "p"}]),
            "hints[1] (t.p) → parameter: duplicate hint",
        ),
        (
            lambda d: d.update(hints=[{"tool": "t", "parameter": "p", "question": "{x.y}"}]),
            "hints[0] (t.p) → question: {x.y}: attribute access",
        ),
        (
            lambda d: d.update(rules=[{"position": 7, "code": "X_ERROR"}, {"position": 7, "code": "X_ERROR"}]),
            "rules[1] (position 7) → position: duplicate position; rules[0] already uses it.",
        ),
        (
            lambda d: d.update(rules=[{"position": 7, "code": "X_ERROR", "status_min": 500, "status_max": 400}]),
            "rules[0] (position 7) → status_max: 400 is below status_min (500).",
        ),
        (
            lambda d: d.update(rules=[{"position": 7, "code": "X_ERROR", "kind": "tool_error", "pattern": "(?<=x)a"}]),
            "rules[0] (position 7) → pattern: RE2 cannot use this pattern",
        ),
        (
            lambda d: d.update(rules=[{"position": 7, "code": "X_ERROR", "kind": "UpstreamToolError"}]),
            "rules[0] (position 7) → kind: 'UpstreamToolError' is not one of: '', 'tool_error'",
        ),
        (lambda d: d.update(format="errcatalog/v2"), "format: 'errcatalog/v2': must be errcatalog/v1"),
        (lambda d: d.pop("codes"), "catalog.yaml: codes: missing (required)."),
    ],
)
def test_invalid_documents_are_refused_with_a_precise_message(mutate, expected):
    doc = copy.deepcopy(MINIMAL)
    mutate(doc)
    assert any(expected in line for line in problems_of(doc)), problems_of(doc)


@pytest.mark.parametrize("code", [-32700, -32602, -32002, -32021, -32001, -32000, -31999, -32769, 1])
def test_jsonrpc_codes_defined_by_json_rpc_and_mcp_or_outside_the_reserved_range_are_allowed(code):
    doc = copy.deepcopy(MINIMAL)
    doc["codes"][0]["jsonrpc_code"] = code
    assert validate_catalog_document(doc)["codes"][0]["jsonrpc_code"] == code


def test_a_document_that_is_not_a_mapping_is_refused():
    assert problems_of(None) == ["catalog.yaml: document: must be a mapping, not null (empty)."]
    assert problems_of(["codes"]) == ["catalog.yaml: document: must be a mapping, not a list."]


def test_duplicate_keys_are_refused_in_yaml_and_json():
    with pytest.raises(CatalogFileError, match=r"^c\.yaml: line 3, column 1: invalid YAML: found duplicate key"):
        parse_catalog_text("format: errcatalog/v1\ncodes: []\ncodes: []\n", "yaml", source="c.yaml")
    with pytest.raises(CatalogFileError, match=r"^c\.json: invalid JSON: duplicate key 'codes'\.$"):
        parse_catalog_text('{"codes": [], "codes": []}', "json", source="c.json")


def test_yaml_is_read_safely():
    with pytest.raises(CatalogFileError, match="could not determine a constructor"):
        parse_catalog_text("!!python/object/apply:os.system ['true']", "yaml", source="evil.yaml")


def test_unreadable_files_are_reported(tmp_path):
    with pytest.raises(CatalogFileError, match=r"missing\.yaml: no such file\."):
        read_catalog_file(tmp_path / "missing.yaml")
    (tmp_path / "catalog.txt").write_text("format: errcatalog/v1\n")
    with pytest.raises(CatalogFileError, match="unknown file type"):
        read_catalog_file(tmp_path / "catalog.txt")


def test_dump_is_deterministic_text():
    doc = validate_catalog_document(copy.deepcopy(MINIMAL))
    assert dump_catalog(doc, "json").endswith("}\n")
    assert dump_catalog(doc, "yaml").startswith("format: errcatalog/v1\ncodes:\n- code: X_ERROR\n")
    assert parse_catalog_text(dump_catalog(doc, "yaml"), "yaml") == doc
    with pytest.raises(ValueError, match="fmt must be one of"):
        dump_catalog(doc, "toml")


# --- Import and export against the database ---------------------------------------------------------------


@pytest.mark.django_db
def test_document_from_db_after_import_equals_the_normalised_document(default_document):
    summary = catalog_import(default_document)
    assert summary.created == models.ErrorCode.objects.count() + models.TemplateVariant.objects.count() + (
        models.ParameterHint.objects.count() + models.ClassificationRule.objects.count()
    )
    assert catalog_document_from_db() == default_document


@pytest.mark.django_db
def test_importing_the_same_document_again_writes_no_history(default_document):
    catalog_import(default_document)
    before = models.TemplateVariant.history.count() + models.ErrorCode.history.count()
    summary = catalog_import(default_document)
    assert (summary.created, summary.updated, summary.deleted) == (0, 0, 0)
    assert not summary.changed
    assert models.TemplateVariant.history.count() + models.ErrorCode.history.count() == before


@pytest.mark.django_db
def test_an_edit_updates_only_the_changed_fields_with_a_change_reason(default_document):
    catalog_import(default_document)
    doc = copy.deepcopy(default_document)
    network = next(c for c in doc["codes"] if c["code"] == "NETWORK_ERROR")
    network["variants"][0]["instruction"] = "Retry once, then tell the user."
    summary = catalog_import(doc, reason="sync from git")
    assert (summary.created, summary.updated, summary.deleted) == (0, 1, 0)
    assert summary.changes == ["update variant NETWORK_ERROR/default: instruction"]
    latest = models.TemplateVariant.history.filter(error_code__code="NETWORK_ERROR").latest("history_date")
    assert latest.history_type == "~" and latest.history_change_reason == "sync from git"
    assert latest.instruction == "Retry once, then tell the user."


@pytest.mark.django_db
def test_a_rule_can_move_to_another_code(default_document):
    catalog_import(default_document)
    doc = copy.deepcopy(default_document)
    doc["rules"][0]["code"] = "CLIENT_ERROR"
    summary = catalog_import(doc)
    assert summary.changes == ["update rule #10 → CLIENT_ERROR: error_code"]
    assert models.ClassificationRule.objects.get(position=10).error_code.code == "CLIENT_ERROR"


@pytest.mark.django_db
def test_an_invalid_document_writes_nothing(default_document):
    doc = copy.deepcopy(default_document)
    doc["codes"][-1]["variants"][0]["message"] = "{x.__class__}"
    with pytest.raises(CatalogFileError, match=r"variants\[0\] \(default\)\.message: \{x\.__class__\}"):
        catalog_import(doc)
    assert not models.ErrorCode.objects.exists()
