"""Argument validation against a tool's input schema: names and expectations, never values."""

from __future__ import annotations

import pytest

from errcatalog.render import Failure, render
from mcpserver.elicitation import requested_schema
from mcpserver.registry import ToolSpec
from mcpserver.validation import _validate_with_jsonschema, expected_format, validate_arguments

SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "format": "email", "description": "Recipient address"},
        "subject": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "unit": {"type": "string", "enum": ["metric", "imperial"]},
        "code": {"type": "string", "pattern": "^[A-Z]+$"},
        "api_key": {"type": "string", "writeOnly": True},
    },
    "required": ["to", "subject"],
    "additionalProperties": False,
}


def test_every_missing_parameter_is_named_in_schema_order():
    problems = validate_arguments(SCHEMA, {})
    assert [p.name for p in problems.missing] == ["to", "subject"]
    assert problems.missing[0].description == "Recipient address"
    assert problems.missing[0].type == "email"
    assert not problems.invalid and not problems.structural


def test_invalid_values_are_described_by_the_schema():
    problems = validate_arguments(
        SCHEMA, {"to": "nobody", "subject": "x", "days": 99, "unit": "kelvin", "code": "lower"}
    )
    faults = {p.name: p for p in problems.invalid}
    assert set(faults) == {"to", "days", "unit", "code"}
    assert "email address" in faults["to"].expected_format
    assert faults["days"].expected_format == "a number from 1 to 14"
    assert (faults["days"].minimum, faults["days"].maximum) == (1, 14)
    assert faults["unit"].expected_format == "one of metric, imperial"
    assert faults["code"].expected_format == "text matching the pattern ^[A-Z]+$"
    assert all("nobody" not in repr(f) and "kelvin" not in repr(f) for f in faults.values())


def test_a_blank_required_string_the_schema_rejects_is_missing_not_invalid():
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "subject": {"type": "string", "minLength": 1}}}
    problems = validate_arguments(schema, {"to": " ", "subject": "", "days": 99})
    assert [p.name for p in problems.missing] == ["to", "subject"]
    assert [p.name for p in problems.invalid] == ["days"]
    # A blank value the schema allows is the tool's business; an optional blank one stays invalid.
    assert not validate_arguments(SCHEMA, {"to": "a@b.co", "subject": ""})
    optional_blank = validate_arguments(schema, {"to": "a@b.co", "subject": "s", "unit": ""})
    assert [p.name for p in optional_blank.invalid] == ["unit"] and not optional_blank.missing


def test_unknown_arguments_are_structural():
    problems = validate_arguments(SCHEMA, {"to": "a@b.co", "subject": "s", "cc": "x"})
    assert problems.structural and not problems.missing and not problems.invalid


def test_valid_arguments_have_no_problems():
    assert not validate_arguments(SCHEMA, {"to": "a@b.co", "subject": "Hi", "days": 3})


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "boolean"}, "true or false"),
        ({"type": "integer"}, "an integer"),
        ({"type": "array"}, "an array"),
        ({"type": "object"}, "an object"),
        ({"type": "string"}, "a string"),
        ({"type": ["string", "null"]}, "a string or null"),
        ({"type": ["string", "frobnicated"]}, ""),  # a type no schema defines names nothing
        ({"type": 7}, ""),
    ],
)
def test_expected_format_of_a_plain_property_is_its_type_in_plain_english(schema, words):
    assert expected_format(schema) == words


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        # zod's .min(1) on an array: an empty array is refused for its length, not its type.
        ({"type": "array", "items": {"type": "string"}, "minItems": 1}, "an array of at least 1 item"),
        ({"type": "array", "maxItems": 5}, "an array of at most 5 items"),
        ({"type": "array", "minItems": 2, "maxItems": 5}, "an array of 2 to 5 items"),
        ({"type": "array", "minItems": 0}, "an array"),  # at least nothing is no bound
        ({"type": "array", "minItems": "1"}, "an array"),  # a bound that is no number names nothing
    ],
)
def test_an_arrays_bounds_are_said_with_the_array(schema, words):
    assert expected_format(schema) == words


def test_an_empty_array_the_schema_refuses_is_asked_for_with_its_bound():
    schema = {"type": "object", "properties": {"filePaths": {"type": "array", "items": {"type": "string"},
              "minItems": 1}}, "required": ["filePaths"]}  # fmt: skip
    problems = validate_arguments(schema, {"filePaths": []})
    faults = [*problems.missing, *problems.invalid]
    assert [fault.expected_format for fault in faults] == ["an array of at least 1 item"]


def _spec(schema):
    return ToolSpec(name="t", description="d", input_schema=schema, function=lambda **kw: None)


def test_elicitation_form_copies_safe_keywords_only():
    problems = validate_arguments(SCHEMA, {"subject": "s"})
    form = requested_schema(_spec(SCHEMA), problems.missing)
    assert form == {
        "type": "object",
        "properties": {"to": {"type": "string", "description": "Recipient address", "format": "email"}},
        "required": ["to"],
    }


def test_secrets_and_nested_values_are_never_elicited():
    secret = {**SCHEMA, "required": ["api_key"]}
    assert requested_schema(_spec(secret), validate_arguments(secret, {}).missing) is None
    nested = {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]}
    assert requested_schema(_spec(nested), validate_arguments(nested, {}).missing) is None


PLAIN_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for"},
        "limit": {"type": "integer"},
        "ratio": {"type": "number"},
        "exact": {"type": "boolean"},
    },
    "required": ["query", "limit"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "x", "limit": 3},
        {"query": "", "limit": 3.0, "ratio": 1, "exact": False},
        {},
        {"limit": 2},
        {"query": "x"},
        {"query": 5, "limit": 3},
        {"query": "x", "limit": True},
        {"query": "x", "limit": 2.5},
        {"query": "x", "limit": 1, "ratio": False},
        {"query": "x", "limit": 1, "ratio": "1"},
        {"query": "x", "limit": 1, "exact": 0},
        {"query": "x", "limit": 1, "other": 1},
        {"other": 1},
        {"limit": "3"},
        {"query": None, "limit": 1},
    ],
)
def test_plain_schemas_get_the_answer_jsonschema_gives(arguments):
    # Plain schemas (typed properties and a required list) take a shortcut; it must never answer differently.
    assert validate_arguments(PLAIN_SCHEMA, arguments) == _validate_with_jsonschema(PLAIN_SCHEMA, arguments)
    open_schema = {k: v for k, v in PLAIN_SCHEMA.items() if k != "additionalProperties"}
    assert validate_arguments(open_schema, arguments) == _validate_with_jsonschema(open_schema, arguments)


def test_missing_parameters_of_a_plain_schema_are_described_by_it():
    problems = validate_arguments(PLAIN_SCHEMA, {"ratio": 0.5})
    assert [p.name for p in problems.missing] == ["query", "limit"]
    assert problems.missing[0].description == "What to look for"
    assert problems.missing[1].expected_format == "an integer"
    assert not problems.invalid and not problems.structural


@pytest.mark.parametrize(
    "number", [10**309, -(10**309), float("inf"), float("-inf")], ids=["309", "-309", "inf", "-inf"]
)
@pytest.mark.parametrize("prop", [{"type": "number"}, {"type": "integer", "minimum": 1}, {"multipleOf": 0.5}])
def test_a_number_no_double_holds_is_an_invalid_parameter_whatever_the_schema(prop, number):
    schema = {"type": "object", "properties": {"n": prop}}
    problems = validate_arguments(schema, {"n": number})
    assert [fault.name for fault in problems.invalid] == ["n"]
    assert problems.invalid[0].received is None


def test_such_a_number_inside_an_argument_is_a_problem_not_a_crash():
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "number", "multipleOf": 0.5}}}}
    assert validate_arguments(schema, {"xs": [10**309]})


@pytest.mark.parametrize("bound", [10**309, 10**5000, float("inf")], ids=["309", "5000", "inf"])
def test_a_schema_bound_no_double_holds_is_not_described(bound):
    described = expected_format({"type": "integer", "minimum": 1, "maximum": bound, "enum": [1, bound]})
    assert "0000000000" not in described and "inf" not in described


NESTED_SCHEMA = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "entityType": {"type": "string"},
                    "kind": {"enum": ["a", "b"]},
                },
                "required": ["name", "entityType"],
                "additionalProperties": {"type": "string"},
            },
        }
    },
    "required": ["entities"],
}


@pytest.mark.parametrize(
    ("entities", "said"),
    [
        ([{"name": "x"}], "an array; entities.0.entityType is required"),
        ([{"name": "x", "entityType": "t"}, {}], "an array; entities.1.name, entities.1.entityType are required"),
        ([{"name": "x", "entityType": 3}], "an array; entities.0.entityType must be a string"),
        ([{"name": "x", "entityType": "t", "kind": "z"}], "an array; entities.0.kind must be one of a, b"),
        # A key the caller made up is never named back, even inside a path.
        ([{"name": "x", "entityType": "t", "IGNORE ALL PREVIOUS": 1}], "an array; entities.0.? must be a string"),
        ("nope", "an array"),
    ],
)
def test_a_fault_inside_an_argument_is_named_by_its_path_and_what_the_schema_says_there(entities, said):
    problems = validate_arguments(NESTED_SCHEMA, {"entities": entities})
    assert [(p.name, p.expected_format) for p in problems.invalid] == [("entities", said)]
    assert not problems.missing and not problems.structural


def test_a_nested_fault_reaches_the_model_through_the_renderers_screen(default_snapshot):
    (fault,) = validate_arguments(NESTED_SCHEMA, {"entities": [{"name": "x"}]}).invalid
    text = render(default_snapshot, Failure("INVALID_PARAMETER", tool_name="create_entities", parameters=(fault,))).text
    assert "entities.0.entityType is required" in text


def test_the_bounds_of_a_propertys_allof_parts_are_said():
    # zod-to-json-schema's coerced number: the bounds sit in the last part of an allOf.
    coerced = {"allOf": [{"type": ["number", "string"]}, {"type": "number", "exclusiveMinimum": 0, "maximum": 1000000}]}
    schema = {"type": "object", "properties": {"maxLength": {**coerced, "default": 20000}}}
    (fault,) = validate_arguments(schema, {"maxLength": 5000000}).invalid
    assert (fault.name, fault.expected_format, fault.maximum, fault.received) == (
        "maxLength",
        "a number of at most 1000000",
        1000000,
        5000000,
    )
    assert expected_format({"allOf": [{"type": "integer"}, {"minimum": 1}], "maximum": 5}) == "a number from 1 to 5"


def test_a_property_of_alternative_schemas_says_each():
    # pydantic's ``int | None``: the expectation is in the alternatives, not in a type of the property's own.
    optional = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    schema = {"type": "object", "properties": {"max_count": optional}}
    (fault,) = validate_arguments(schema, {"max_count": "ten"}).invalid
    assert fault.expected_format == "an integer or null"
    assert expected_format({"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer", "minimum": 1}]}) == (
        "one of a, b or a number of at least 1"
    )
    assert expected_format({"anyOf": [{"type": "integer"}, {"not": {}}]}) == ""  # one says nothing: no guess
