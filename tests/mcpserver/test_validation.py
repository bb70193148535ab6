"""Argument validation against a tool's input schema: names and expectations, never values."""

from __future__ import annotations

from mcpserver.elicitation import requested_schema
from mcpserver.registry import ToolSpec
from mcpserver.validation import expected_format, validate_arguments

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
    assert faults["code"].expected_format == "the pattern ^[A-Z]+$"
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


def test_expected_format_of_a_plain_property_is_its_type():
    assert expected_format({"type": "boolean"}) == "a boolean"


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
