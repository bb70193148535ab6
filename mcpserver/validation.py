"""Argument validation: a tool's input schema (JSON Schema 2020-12) against the arguments of one call.

The result names the parameters at fault and what the schema expects of them, never the rejected values, so it
can go straight into a catalog ``Failure`` (the rejected value is never echoed: what a caller typed could say anything).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from jsonschema import Draft202012Validator

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.render import ParameterFault
from errcatalog.vocabulary import is_json_number

# Keywords about a value's shape that a model can act on, in the order they are described.
_FORMAT_WORDS = {
    "email": "an email address such as user@domain.com",
    "date": "a date such as 2026-01-31",
    "date-time": "a date and time such as 2026-01-31T09:30:00Z",
    "uri": "a full URL such as https://example.com/page",
    "uuid": "a UUID such as 123e4567-e89b-12d3-a456-426614174000",
}


# JSON Schema's types as a sentence names them after "The expected format is".
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


@dataclass(frozen=True, slots=True)
class ArgumentProblems:
    """What is wrong with the arguments of one call: missing required parameters, then invalid ones."""

    missing: tuple[ParameterFault, ...] = ()
    invalid: tuple[ParameterFault, ...] = ()
    # Arguments the schema does not know, or problems not tied to one property (the model can fix these).
    structural: bool = False

    def __bool__(self) -> bool:
        return bool(self.missing or self.invalid or self.structural)


# Validators by schema identity: tool schemas live as long as the process, and building a validator per call
# would cost more than the validation itself. An entry holds its schema, so the id is not reused meanwhile; the
# bound only guards memory (a process serves tens of tools).
_validators: BoundedCache[int, tuple[Mapping[str, Any], Draft202012Validator]] = process_cache(
    "mcpserver.validation.validators", scope="process", max_entries=1024
)


def validator_for(schema: Mapping[str, Any]) -> Draft202012Validator:
    cached = _validators.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER))
        _validators.set(id(schema), cached)
    return cached[1]


def merged_schema(prop: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    """``prop`` with what its ``allOf`` parts require read as its own keywords (the part listed last, then ``prop``
    itself, winning a keyword they share): zod-to-json-schema writes a coerced number as ``{"allOf": [{"type":
    ["number", "string"]}, {"type": "number", "maximum": 10}]}``, whose bounds the caller must hear of."""
    parts = prop.get("allOf")
    if not isinstance(parts, list) or depth > 4:
        return prop
    merged: dict[str, Any] = {}
    for part in parts:
        if isinstance(part, Mapping):
            merged.update(merged_schema(part, depth + 1))
    merged.update((key, value) for key, value in prop.items() if key != "allOf")
    return merged


def expected_format(prop: Mapping[str, Any]) -> str:
    """Describe what a property accepts, from its schema only (format, pattern, enum, bounds of numbers, strings and
    arrays, those of its ``allOf`` parts included)."""
    prop = merged_schema(prop)
    parts: list[str] = []
    if "enum" in prop and isinstance(prop["enum"], list):
        parts.append("one of " + ", ".join(_num(v) for v in prop["enum"]))
    fmt = prop.get("format")
    if isinstance(fmt, str):
        parts.append(_FORMAT_WORDS.get(fmt, f"the {fmt} format"))
    if "pattern" in prop:
        parts.append(f"text matching the pattern {prop['pattern']}")
    low, high = _bound(prop.get("minimum")), _bound(prop.get("maximum"))
    if low is not None and high is not None:
        parts.append(f"a number from {_num(low)} to {_num(high)}")
    elif low is not None:
        parts.append(f"a number of at least {_num(low)}")
    elif high is not None:
        parts.append(f"a number of at most {_num(high)}")
    # Read aloud after "The expected format is": "from 1 to 100 characters", never "0 to any number of characters".
    low_len, high_len = _bound(prop.get("minLength")), _bound(prop.get("maxLength"))
    if low_len is not None and high_len is not None:
        parts.append(f"from {_num(low_len)} to {_num(high_len)} characters")
    elif low_len is not None:
        parts.append(f"at least {_num(low_len)} characters")
    elif high_len is not None:
        parts.append(f"at most {_num(high_len)} characters")
    # An array's bounds name the array itself ("an array of at least 1 item"): the type alone would read as if the
    # array were of the wrong type when it was only too short or too long.
    low_items, high_items = _bound(prop.get("minItems")), _bound(prop.get("maxItems"))
    low_items = low_items if low_items else None  # at least 0 items is no bound
    if low_items is not None and high_items is not None:
        parts.append(f"an array of {_num(low_items)} to {_items(high_items)}")
    elif low_items is not None:
        parts.append(f"an array of at least {_items(low_items)}")
    elif high_items is not None:
        parts.append(f"an array of at most {_items(high_items)}")
    if not parts:
        parts.append(type_words(prop.get("type")) or _alternatives_words(prop))
    return "; ".join(part for part in parts if part)


def _items(count: int | float) -> str:
    return f"{_num(count)} item" if count == 1 else f"{_num(count)} items"


def _alternatives_words(prop: Mapping[str, Any]) -> str:
    """What a property of alternative schemas accepts (``anyOf``, ``oneOf``: pydantic's ``int | None`` is
    ``{"anyOf": [{"type": "integer"}, {"type": "null"}]}``), "an integer or null"; "" when one of them says
    nothing."""
    alternatives = prop.get("anyOf", prop.get("oneOf"))
    if not isinstance(alternatives, list) or not 0 < len(alternatives) <= 8:
        return ""
    words = [expected_format(part) if isinstance(part, Mapping) else "" for part in alternatives]
    return " or ".join(dict.fromkeys(words)) if all(words) else ""


def type_words(schema_type: Any) -> str:
    """A property's ``type`` (one name or a list of them) in words: "an integer", "a string or null"; "" for
    anything else."""
    names = schema_type if isinstance(schema_type, list) else [schema_type]
    words = [_TYPE_WORDS[name] for name in names if isinstance(name, str) and name in _TYPE_WORDS]
    return " or ".join(dict.fromkeys(words)) if len(words) == len(names) else ""


def _num(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and not is_json_number(value):
        return "…"  # str() of an int past 4,300 digits raises, and no reader wants a 300-digit number
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _bound(value: Any) -> int | float | None:
    """A schema bound as a number a double holds; anything else (a string, 1e400, 400 digits) is no bound to name."""
    return value if is_json_number(value) else None


def received_value(value: Any) -> int | float | bool | None:
    """The value the caller sent, when it is a boolean or a number a double holds (an answer may name it: "got
    30"); else None.

    Strings, lists and objects are never carried: what a caller typed could say anything. The renderer bounds the
    number's length again (``errcatalog.render.core``).
    """
    return value if isinstance(value, bool) or is_json_number(value) else None


def parameter_fault(name: str, prop: Mapping[str, Any], problem: str, received: Any = None) -> ParameterFault:
    """A fault described from the property's schema (the catalog's parameter hint may override the words)."""
    prop = merged_schema(prop)
    prop_type = prop.get("type")
    return ParameterFault(
        name=name,
        problem=problem,
        description=str(prop.get("description", "")),
        type=str(prop.get("format") or (prop_type if isinstance(prop_type, str) else "")),
        expected_format=expected_format(prop),
        minimum=prop.get("minimum"),
        maximum=prop.get("maximum"),
        received=received_value(received),
    )


# --- A shortcut for plain schemas -----------------------------------------------------------------------
#
# Most tool schemas are an object of typed properties and a required list. For those, a handful of dict and
# isinstance checks decide whether the arguments are valid or only lack required properties; jsonschema is
# asked only when there is more to say (a wrong type, an unknown key, any keyword beyond these), and its
# answer is then the whole answer, so both paths name the same problems.

# The checks of JSON Schema's simple types; booleans are not numbers, and an integral float is an integer. A number
# no double holds fails them all, so jsonschema's path (which refuses it) answers for it.
_SIMPLE_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: is_json_number(v) and (isinstance(v, int) or v.is_integer()),
    "number": is_json_number,
}
# Keywords that only annotate (they never make a value invalid).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "$comment"})
_PLAIN_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "$schema"}) | _ANNOTATIONS


@dataclass(frozen=True, slots=True)
class _PlainSchema:
    checks: Mapping[str, Any]  # property name -> type check
    required: tuple[str, ...]
    # The answer for each set of missing properties, built once (faults are plain frozen data).
    missing_answers: dict[frozenset[str], ArgumentProblems]


# The shortcut's view of each schema, by identity as ``_validators``.
_plain: BoundedCache[int, tuple[Mapping[str, Any], _PlainSchema | None]] = process_cache(
    "mcpserver.validation.plain_schemas", scope="process", max_entries=1024
)


def _plain_schema(schema: Mapping[str, Any]) -> _PlainSchema | None:
    """The shortcut's view of ``schema``, or None when the schema uses anything beyond typed properties."""
    cached = _plain.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, _build_plain_schema(schema))
        _plain.set(id(schema), cached)
    return cached[1]


def _build_plain_schema(schema: Mapping[str, Any]) -> _PlainSchema | None:
    properties = schema.get("properties", {})
    required = schema.get("required", ())
    if schema.get("type") != "object" or not set(schema) <= _PLAIN_OBJECT_KEYWORDS:
        return None
    # Unknown keys always go to jsonschema, so either answer about them is its answer.
    if not isinstance(schema.get("additionalProperties", True), bool):
        return None
    if not isinstance(properties, Mapping) or not isinstance(required, list | tuple):
        return None
    if not all(isinstance(name, str) and name in properties for name in required):
        return None
    checks = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping) or not set(prop) <= _ANNOTATIONS | {"type"}:
            return None
        prop_type = prop.get("type")
        check = _SIMPLE_TYPES.get(prop_type) if isinstance(prop_type, str) else None
        if check is None:
            return None
        checks[name] = check
    return _PlainSchema(checks=checks, required=tuple(required), missing_answers={})


def _plain_answer(
    plain: _PlainSchema, schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> ArgumentProblems | None:
    """The problems of ``arguments`` when they are at most missing required properties; None otherwise."""
    checks = plain.checks
    for name, value in arguments.items():
        check = checks.get(name)
        if check is None or not check(value):
            return None
    missing = frozenset(name for name in plain.required if name not in arguments)
    if not missing:
        return _VALID
    answer = plain.missing_answers.get(missing)
    if answer is None:
        properties = schema["properties"]
        faults = tuple(parameter_fault(n, properties[n], "missing") for n in plain.required if n in missing)
        answer = plain.missing_answers[missing] = ArgumentProblems(missing=faults)
    return answer


_VALID = ArgumentProblems()


def validate_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> ArgumentProblems:
    """Check ``arguments`` against ``schema``; every missing required property and every invalid one is named."""
    plain = _plain_schema(schema)
    if plain is not None:
        answer = _plain_answer(plain, schema, arguments)
        if answer is not None:
            return answer
    return _validate_with_jsonschema(schema, arguments)


def _validate_with_jsonschema(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> ArgumentProblems:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = tuple(name for name in schema.get("required", ()) if isinstance(name, str))
    missing: set[str] = set()
    invalid: dict[str, ParameterFault] = {}
    structural = False
    for argument, value in arguments.items():
        # A number no double holds (1e400 parses as infinity, 10**309 as an int) is no value a tool can take, whatever
        # the schema says; its name is the parameter at fault, and it is never named back.
        if isinstance(value, int | float) and not isinstance(value, bool) and not is_json_number(value):
            if argument in properties:
                invalid[argument] = parameter_fault(argument, properties[argument], "invalid")
            else:
                structural = True
    try:
        errors = list(validator_for(schema).iter_errors(dict(arguments)))
    except (OverflowError, ValueError):
        # Such a number deeper inside an argument: some keywords (multipleOf) divide it by a float.
        errors = []
        structural = structural or not invalid
    for error in errors:
        if error.validator == "required" and not error.absolute_path:
            missing.update(name for name in required if name not in arguments)
            continue
        path = list(error.absolute_path)
        name = path[0] if path and isinstance(path[0], str) else None
        if name is None or name not in properties:
            structural = True
            continue
        if name in required and _blank(arguments.get(name)):
            # A required string the schema rejects for being empty ("" against minLength, an email format…) is
            # missing input: the catalog asks its question for it (the question protocol), as tools do for whitespace.
            missing.add(name)
            continue
        fault = parameter_fault(name, properties[name], "invalid", arguments.get(name))
        inside = _nested_problem(error) if len(path) > 1 or error.validator == "required" else ""
        if inside and name not in invalid:
            # What is wrong inside the value, by its path ("entities.0.entityType is required"): the property's
            # own expectation ("an array") was met, and saying it again alone would send the model the wrong way.
            fault = replace(fault, expected_format="; ".join(part for part in (fault.expected_format, inside) if part))
        invalid.setdefault(name, fault)
    return ArgumentProblems(
        missing=tuple(parameter_fault(n, properties.get(n, {}), "missing") for n in required if n in missing),
        invalid=tuple(invalid.values()),
        structural=structural,
    )


# A key the caller sent is named in a path only when it is a plain name: what a caller typed could say anything.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def _json_path(path: Sequence[Any]) -> str:
    """``entities.0.entityType``: the instance path of an error, a key that is not a plain name shown as ``?``.
    Dots only: the screen every schema text passes (``safe_schema_text``) takes no brackets, which a markdown link
    needs."""
    steps = [str(step) if isinstance(step, int) or _PLAIN_KEY.fullmatch(str(step)) else "?" for step in path]
    return ".".join(steps)


def _nested_problem(error: Any) -> str:
    """What an error inside an argument says, in words from the schema: a required property missing at a path, or
    what the value at a path must be; "" when the schema gives nothing to say."""
    where = _json_path(list(error.absolute_path))
    if error.validator == "required" and isinstance(error.validator_value, list) and isinstance(error.instance, dict):
        absent = [n for n in error.validator_value if isinstance(n, str) and n not in error.instance]
        named = [f"{where}.{n}" for n in absent if _PLAIN_KEY.fullmatch(n)]
        return f"{', '.join(named)} {'is' if len(named) == 1 else 'are'} required" if named else ""
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    expected = expected_format(schema)
    return f"{where} must be {expected}" if expected and where else ""


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()
