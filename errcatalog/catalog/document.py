"""The catalog document: the whole catalog as one YAML or JSON text. This module parses and serialises it; it
neither reads nor writes the database (``errcatalog.catalog.services.catalog_import`` writes a document through the
catalog's one write path, ``errcatalog.catalog.defaults`` loads the shipped one, and ``errcatalog.catalog.export``
builds one from the database).

A document (format ``errcatalog/v1``) is validated in two passes, and every problem of both is reported at once:
structure against ``data/catalog.schema.json`` (JSON Schema 2020-12), then the rules a schema cannot say: the
document's own consistency (uniqueness, references) and the catalog's row rules, the same functions the models'
``clean()`` runs for every other writer (placeholders, reserved JSON-RPC codes, rule conditions, names). A valid
document is normalised: defaults filled in, keys in the schema's order, lists sorted, so
``export.catalog_document_from_db`` after an import equals the imported document and export → import → export is
byte-identical.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml
from django.conf import settings
from jsonschema import Draft202012Validator, ValidationError

from errcatalog.caching import register_cache
from errcatalog.catalog import models
from errcatalog.gateway.models import named_server_problems, named_server_upstream_problems, upstream_problems
from errcatalog.input_limits import json_depth_exceeds, long_strings
from errcatalog.safety import template_errors

DATA_DIR = Path(__file__).resolve().parent / "data"
SCHEMA_PATH: Path = DATA_DIR / "catalog.schema.json"
FORMAT = "errcatalog/v1"
FORMATS = ("yaml", "json")
SUFFIX_FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}

# Fields that are templates: rendered with placeholders, so they must pass ``safety.template_errors``.
VARIANT_TEMPLATE_FIELDS = ("message", "cause", "instruction", "question")
CODE_TEMPLATE_FIELDS = ("setup_url", "guidance")
HINT_TEMPLATE_FIELDS = ("question",)

DocPath = tuple[str | int, ...]
Problem = tuple[DocPath, str]


class CatalogFileError(Exception):
    """A catalog document that cannot be used; the message lists every problem, one per line.

    Each line names the source, the entry and the field, e.g.
    ``catalog.yaml: codes[3] (NETWORK_ERROR) → variants[0].message: {x.y}: attribute access and indexing are
    not allowed in placeholders.``
    """

    def __init__(self, source: str, problems: Iterable[str]) -> None:
        self.source = source
        self.problems = list(problems)
        super().__init__("\n".join(f"{source}: {problem}" for problem in self.problems))


# --- Reading ----------------------------------------------------------------------------------------------


def read_catalog_file(path: str | Path) -> dict:
    """Read, validate and normalise a catalog file (.yaml, .yml or .json); raise ``CatalogFileError``.

    The file's size, nesting and strings are bounded (``ERRCATALOG["IMPORT_MAX_*"]``): a file past a limit is
    refused with a message naming the limit, before the part of the work the limit protects.
    """
    path = Path(path)
    source = str(path)
    fmt = SUFFIX_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise CatalogFileError(source, ["unknown file type; a catalog file ends in .yaml, .yml or .json."])
    text = read_import_text(path, source=source)
    return validate_catalog_document(parse_catalog_text(text, fmt, source=source), source=source)


def read_import_text(path: Path, *, source: str) -> str:
    """The text of an import file, read no further than ``ERRCATALOG["IMPORT_MAX_BYTES"]`` (a device or a pipe
    has no size to check first); raise ``CatalogFileError``."""
    limit = settings.ERRCATALOG["IMPORT_MAX_BYTES"]
    try:
        with path.open("rb") as file:
            data = file.read(limit + 1)
    except FileNotFoundError:
        raise CatalogFileError(source, ["no such file."]) from None
    except OSError as exc:
        raise CatalogFileError(source, [f"cannot read the file ({exc.strerror or exc})."]) from None
    if len(data) > limit:
        raise CatalogFileError(
            source,
            [f"the file is larger than {limit:,} bytes, the limit for an import file (ERRCATALOG_IMPORT_MAX_BYTES)."],
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogFileError(source, [f"not UTF-8 text (byte {exc.start})."]) from None


def parse_catalog_text(text: str, fmt: str, *, source: str = "<document>") -> Any:
    """Parse catalog text as YAML (safe loader, no anchors or aliases) or JSON, without validating it.

    Duplicate keys are errors. Nesting deeper than ``ERRCATALOG["IMPORT_MAX_DEPTH"]`` is refused before the parser
    that would recurse into it sees it, and a string longer than ``ERRCATALOG["IMPORT_MAX_FIELD_CHARS"]`` after;
    each with a ``CatalogFileError`` naming the limit (and the string's place).
    """
    max_depth = settings.ERRCATALOG["IMPORT_MAX_DEPTH"]
    if fmt == "yaml":
        try:
            _check_yaml_events(text, max_depth, source)
            # A SafeLoader subclass: it builds only plain data, like yaml.safe_load.
            doc = yaml.load(text, Loader=_CatalogYamlLoader)  # noqa: S506
        except yaml.YAMLError as exc:
            raise CatalogFileError(source, [_yaml_problem(exc)]) from None
    elif fmt == "json":
        if json_depth_exceeds(text.encode("utf-8", "surrogatepass"), max_depth):
            raise CatalogFileError(source, [_too_deep(max_depth)])
        try:
            doc = json.loads(text, object_pairs_hook=_json_object)
        except json.JSONDecodeError as exc:
            raise CatalogFileError(
                source, [f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}."]
            ) from None
        except _DuplicateKeyError as exc:
            raise CatalogFileError(source, [f"invalid JSON: duplicate key {exc.args[0]!r}."]) from None
    else:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}")
    max_chars = settings.ERRCATALOG["IMPORT_MAX_FIELD_CHARS"]
    long = list(long_strings(doc, max_chars))
    if long:
        # Placed without the entries' labels (a code's name): the label may be the long string itself.
        problems = [
            (found.path, f"{'has a key of' if found.is_key else 'is'} {found.length:,} characters; the limit is "
             f"{max_chars:,} (ERRCATALOG_IMPORT_MAX_FIELD_CHARS).")
            for found in long
        ]  # fmt: skip
        raise CatalogFileError(source, problem_lines({}, problems))
    return doc


def _too_deep(limit: int) -> str:
    return (
        f"nested deeper than {limit} levels (ERRCATALOG_IMPORT_MAX_DEPTH); a catalog document nests 5 levels, so "
        "this is not one."
    )


_ANCHORS_REFUSED = "uses YAML anchors/aliases, which catalog files do not allow; write each value out in full."


def _check_yaml_events(text: str, max_depth: int, source: str) -> None:
    """Read the YAML's events (libyaml's parser keeps its own stack and never recurses) as far as the first
    nesting past ``max_depth`` or the first anchor or alias, and refuse the text there; raise ``yaml.YAMLError``
    for text that is not YAML at all.

    Before the loader, whose composer (in C) and constructor recurse once per level: 50,000 levels overflow the
    C stack and kill the process. Anchors and aliases are refused rather than counted: an alias is a reference, so
    nine lines of them expand into a billion entries for anything that walks the document.
    """
    loader = _CatalogYamlLoader(text)
    depth = 0
    try:
        while not loader.check_event(yaml.StreamEndEvent):
            event = loader.get_event()
            kind = type(event)
            if kind is yaml.AliasEvent or getattr(event, "anchor", None) is not None:
                raise CatalogFileError(source, [f"{_mark(event.start_mark)}{_ANCHORS_REFUSED}"])
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                depth += 1
                if depth > max_depth:
                    raise CatalogFileError(source, [f"{_mark(event.start_mark)}{_too_deep(max_depth)}"])
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
    finally:
        loader.dispose()


def _mark(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


class _CatalogYamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """yaml's safe loader that refuses duplicate keys instead of silently keeping the last one.

    libyaml's parser when PyYAML has it (its wheels do): ten times faster on the default catalog than the pure
    Python one, with the same safe constructors.
    """


def _construct_mapping(loader: _CatalogYamlLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_CatalogYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    where = _mark(getattr(exc, "problem_mark", None))
    what = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    return f"{where}invalid YAML: {what}" + (f" ({context})" if context else "") + "."


class _DuplicateKeyError(ValueError):
    pass


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKeyError(key)
        obj[key] = value
    return obj


# --- Validation and normalisation -------------------------------------------------------------------------


@cache
def catalog_schema() -> Mapping[str, Any]:
    """The JSON Schema of catalog documents (``data/catalog.schema.json``)."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return schema


register_cache("errcatalog.catalog.document.schema", catalog_schema.cache_clear)


def validate_catalog_document(doc: Any, *, source: str = "<document>") -> dict:
    """Validate a parsed catalog document and return it normalised; raise ``CatalogFileError`` listing every
    problem.

    Normalised: every key present (defaults filled), keys in canonical order, codes sorted by code, variants by
    (locale, name), hints by (tool, parameter), rules by position.
    """
    filled = _fill_defaults(doc, catalog_schema())
    problems = _schema_problems(doc) + _semantic_problems(filled)
    if problems:
        raise CatalogFileError(source, problem_lines(filled, problems))
    return _sorted_document(filled)


def problem_lines(doc: Any, problems: Iterable[Problem]) -> list[str]:
    """Problems at their places in ``doc`` as lines naming entry and field, in the document's order, each once."""
    unique = sorted(set(problems), key=lambda p: (_sort_key(p[0]), p[1]))
    return [f"{_location(doc, path)}: {text}" for path, text in unique]


@cache
def _schema_check() -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(dict(catalog_schema()))


register_cache("errcatalog.catalog.document.schema_check", _schema_check.cache_clear)


def _schema_problems(doc: Any) -> list[Problem]:
    """The document's problems of structure, each at its place.

    Two validators of the same schema: jsonschema-rs says whether the document is valid (milliseconds for a
    catalog of thousands of codes, where jsonschema takes seconds), and only a document it refuses is walked by
    jsonschema, whose errors carry what our problem lines name (the rule, the expected value, the schema's known
    keys). Should they ever disagree about a document, jsonschema-rs's own messages are reported.
    """
    if _schema_check().is_valid(doc):
        return []
    problems: list[Problem] = []
    for error in Draft202012Validator(catalog_schema()).iter_errors(doc):
        problems.extend(_describe_schema_error(error))
    if not problems:
        problems = [(tuple(error.instance_path), f"{error.message}.") for error in _schema_check().iter_errors(doc)]
    return problems


def _describe_schema_error(error: ValidationError) -> list[Problem]:
    path: DocPath = tuple(error.absolute_path)
    # Whatever the document held and the schema asked for: any JSON value, checked by shape below.
    value: Any = error.instance
    rule = error.validator
    given: Any = error.validator_value
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if rule == "required":
        return [((*path, key), "missing (required).") for key in given if key not in value]
    if rule == "additionalProperties":
        known = list(schema.get("properties", {}))
        problems = []
        for key in value:
            if key in known:
                continue
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else f" Known keys: {', '.join(known)}."
            problems.append(((*path, str(key)), f"unknown key.{hint}"))
        return problems
    if rule == "type":
        wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in ([given] if isinstance(given, str) else given))
        return [(path, f"must be {wanted}, not {_describe_value(value)}.")]
    if rule == "enum":
        return [(path, f"{_show(value)} is not one of: {', '.join(_show(v) for v in given)}.")]
    if rule in ("const", "pattern") and "errorMessage" in schema:
        return [(path, f"{_show(value)}: {schema['errorMessage']}.")]
    if rule == "maxLength":
        return [(path, f"is longer than {given} characters.")]
    if rule == "minLength":
        return [(path, "must not be empty." if given == 1 else f"is shorter than {given} characters.")]
    if rule == "minimum":
        return [(path, f"{_show(value)} is below the minimum, {given}.")]
    if rule == "maximum":
        return [(path, f"{_show(value)} is above the maximum, {given}.")]
    if rule == "uniqueItems":
        return [(path, "lists the same value twice.")]
    return [(path, f"{error.message}.")]


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "boolean": "true or false",
    "null": "null",
}


def _describe_value(value: Any) -> str:
    if value is None:
        return "null (empty)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {_show(value)}"
    return f"{type(value).__name__} {_show(value)}"


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    """``doc[key]`` when it is a list, else no entries (the schema pass reports a malformed part)."""
    entries = doc.get(key)
    return entries if isinstance(entries, list) else []


def _semantic_problems(doc: Any) -> list[Problem]:
    """What the schema cannot say. Tolerates malformed parts (the schema pass reports those)."""
    if not isinstance(doc, dict):
        return []
    problems: list[Problem] = []
    codes = _list(doc, "codes")
    defined: dict[str, int] = {}
    for i, entry in enumerate(codes):
        if not isinstance(entry, dict):
            continue
        at: DocPath = ("codes", i)
        code = entry.get("code")
        if isinstance(code, str):
            if code in defined:
                problems.append(((*at, "code"), f"duplicate code; codes[{defined[code]}] already defines {code}."))
            else:
                defined[code] = i
        jsonrpc_problems = models.jsonrpc_code_problems(entry.get("jsonrpc_code"))
        problems.extend(((*at, "jsonrpc_code"), text) for text in jsonrpc_problems)
        problems.extend(_template_problems(entry, CODE_TEMPLATE_FIELDS, at))
        variants = entry.get("variants")
        if not isinstance(variants, list):
            continue
        if not variants:
            problems.append(((*at, "variants"), "a code needs at least one variant."))
        seen_variants: dict[tuple[Any, Any], int] = {}
        for j, variant in enumerate(variants):
            if not isinstance(variant, dict):
                continue
            key = (variant.get("locale"), variant.get("name"))
            if key in seen_variants:
                problems.append(
                    (
                        (*at, "variants", j, "name"),
                        f"duplicate variant {key[1]!r} for locale {key[0]!r}; variants[{seen_variants[key]}] "
                        "already uses it.",
                    )
                )
            else:
                seen_variants[key] = j
            problems.extend(_template_problems(variant, VARIANT_TEMPLATE_FIELDS, (*at, "variants", j)))

    hints = _list(doc, "hints")
    seen_hints: dict[tuple[Any, Any], int] = {}
    for i, hint in enumerate(hints):
        if not isinstance(hint, dict):
            continue
        key = (hint.get("tool"), hint.get("parameter"))
        if key in seen_hints:
            problems.append(
                (
                    ("hints", i, "parameter"),
                    f"duplicate hint; hints[{seen_hints[key]}] is for the same tool and parameter.",
                )
            )
        else:
            seen_hints[key] = i
        problems.extend(_template_problems(hint, HINT_TEMPLATE_FIELDS, ("hints", i)))
        problems.extend(_row_problems(models.parameter_hint_problems(hint), ("hints", i)))

    rules = _list(doc, "rules")
    seen_positions: dict[Any, int] = {}
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        position = rule.get("position")
        if _is_int(position):
            if position in seen_positions:
                problems.append(
                    (
                        ("rules", i, "position"),
                        f"duplicate position; rules[{seen_positions[position]}] already uses it.",
                    )
                )
            else:
                seen_positions[position] = i
        code = rule.get("code")
        if isinstance(code, str) and code not in defined:
            problems.append((("rules", i, "code"), f"{code} is not a code of this document."))
        problems.extend(_row_problems(models.classification_rule_problems(rule), ("rules", i)))
    problems.extend(_upstream_problems(doc))
    problems.extend(_named_server_problems(doc))
    return problems


def _upstream_problems(doc: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[tuple[str, Any], int] = {}
    for i, upstream in enumerate(_list(doc, "upstreams")):
        if not isinstance(upstream, dict):
            continue
        for key in ("name", "prefix"):
            value = upstream.get(key)
            if not isinstance(value, str):
                continue
            if (key, value) in seen:
                problems.append(
                    (("upstreams", i, key), f"duplicate {key}; upstreams[{seen[key, value]}] already uses it.")
                )
            else:
                seen[key, value] = i
        texts = upstream_problems(upstream, clear_values=True)
        problems.extend((("upstreams", i, name), text) for name, text in texts.items())
    return problems


def _named_server_problems(doc: dict[str, Any]) -> list[Problem]:
    """A named server's own rules, its upstreams' tools, and its name never one of the document's upstreams' (the
    services check the database's, and that each upstream it names exists, when the document is imported)."""
    problems: list[Problem] = []
    upstream_names = {u.get("name") for u in _list(doc, "upstreams") if isinstance(u, dict)}
    seen: dict[Any, int] = {}
    for i, server in enumerate(_list(doc, "named_servers")):
        if not isinstance(server, dict):
            continue
        at: DocPath = ("named_servers", i)
        name = server.get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(((*at, "name"), f"duplicate name; named_servers[{seen[name]}] already uses it."))
            else:
                seen[name] = i
        texts = named_server_problems(server)
        problems.extend(((*at, key), text) for key, text in texts.items())
        if "name" not in texts and name in upstream_names:
            problems.append(((*at, "name"), f"{name} is an upstream's name in this document: it is that upstream's "
                             "path, /mcp/<name>. Choose another."))  # fmt: skip
        members: dict[Any, int] = {}
        for j, member in enumerate(_list(server, "upstreams")):
            if not isinstance(member, dict):
                continue
            upstream = member.get("name")
            if isinstance(upstream, str) and upstream in members:
                problems.append(((*at, "upstreams", j, "name"),
                                 f"duplicate upstream; upstreams[{members[upstream]}] already names it."))  # fmt: skip
            elif isinstance(upstream, str):
                members[upstream] = j
            texts = named_server_upstream_problems(member)
            problems.extend(((*at, "upstreams", j, key), text) for key, text in texts.items())
    return problems


def _template_problems(entry: Mapping[str, Any], fields: Iterable[str], at: DocPath) -> list[Problem]:
    problems: list[Problem] = []
    for name in fields:
        value = entry.get(name)
        if isinstance(value, str):
            problems.extend(((*at, name), problem) for problem in template_errors(value))
    return problems


def _row_problems(problems: models.Problems, at: DocPath) -> list[Problem]:
    """A row rule's problems (``errcatalog.catalog.models``) at their place in the document."""
    return [((*at, name) if name else at, text) for name, texts in problems.items() for text in texts]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sort_key(path: DocPath) -> tuple:
    """Order problems as the document reads: list entries by index, keys in the schema's order."""
    schema: Mapping[str, Any] = catalog_schema()
    key = []
    for part in path:
        schema = _resolve(schema)
        if isinstance(part, int):
            key.append((0, part, ""))
            schema = schema.get("items", {})
        else:
            properties = list(schema.get("properties", {}))
            key.append((1, properties.index(part) if part in properties else len(properties), part))
            schema = schema.get("properties", {}).get(part, {})
    return tuple(key)


def _location(doc: Any, path: DocPath) -> str:
    """``codes[3] (NETWORK_ERROR) → variants[0].message``: where a problem is, in words a person can find."""
    if not path:
        return "document"
    head, rest = path[0], path[1:]
    text = str(head)
    node = doc.get(head) if isinstance(doc, dict) else None
    if rest and isinstance(rest[0], int):
        index, rest = rest[0], rest[1:]
        text += f"[{index}]"
        entry = node[index] if isinstance(node, list) and index < len(node) else None
        label = _entry_label(head, entry)
        if label:
            text += f" ({label})"
        if rest:
            text += " → " + _dotted(rest)
            variant = _variant_label(entry, rest)
            if variant:
                text = text.replace(f"variants[{rest[1]}]", f"variants[{rest[1]}] ({variant})", 1)
    elif rest:
        text += "." + _dotted(rest)
    return text


def _entry_label(section: Any, entry: Any) -> str:
    if not isinstance(entry, dict):
        return ""
    if section == "codes" and isinstance(entry.get("code"), str):
        return entry["code"]
    if section == "hints" and isinstance(entry.get("tool"), str) and isinstance(entry.get("parameter"), str):
        return f"{entry['tool']}.{entry['parameter']}"
    if section == "rules" and _is_int(entry.get("position")):
        return f"position {entry['position']}"
    if section in ("upstreams", "named_servers") and isinstance(entry.get("name"), str):
        return entry["name"]
    return ""


def _variant_label(entry: Any, rest: DocPath) -> str:
    """``default, de``: the name and locale of the variant a code's path goes into, if it does."""
    if len(rest) < 2 or rest[0] != "variants" or not isinstance(rest[1], int) or not isinstance(entry, dict):
        return ""
    variants = entry.get("variants")
    variant = variants[rest[1]] if isinstance(variants, list) and rest[1] < len(variants) else None
    if not isinstance(variant, dict) or not isinstance(variant.get("name"), str):
        return ""
    locale = variant.get("locale")
    return f"{variant['name']}, {locale}" if isinstance(locale, str) and locale else variant["name"]


def _dotted(path: DocPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """Inline a local ``$ref`` (the only kind the catalog schema uses), keeping sibling keywords."""
    ref = schema.get("$ref")
    if not ref:
        return schema
    target: Any = catalog_schema()
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    merged = {**_resolve(target), **schema}
    merged.pop("$ref")
    return merged


def _fill_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of ``value`` with the schema's defaults filled in and keys in the schema's order.

    Malformed parts are passed through unchanged (the schema pass reports them); unknown keys are dropped.
    """
    schema = _resolve(schema)
    properties = schema.get("properties")
    if properties is not None and isinstance(value, dict):
        out = {}
        for key, sub in properties.items():
            if key in value:
                out[key] = _fill_defaults(value[key], sub)
            elif "default" in _resolve(sub):
                out[key] = copy.deepcopy(_resolve(sub)["default"])
        return out
    if "items" in schema and isinstance(value, list):
        return [_fill_defaults(item, schema["items"]) for item in value]
    types = schema.get("type", ())
    types = (types,) if isinstance(types, str) else types
    if "integer" in types and isinstance(value, float) and value.is_integer():
        return int(value)  # 30.0 in a document means 30; keep the normal form an int
    return copy.deepcopy(value)


def _sorted_document(doc: dict) -> dict:
    for entry in doc["codes"]:
        entry["variants"].sort(key=lambda v: (v["locale"], v["name"]))
    doc["codes"].sort(key=lambda c: c["code"])
    doc["hints"].sort(key=lambda h: (h["tool"], h["parameter"]))
    doc["rules"].sort(key=lambda r: r["position"])
    if "upstreams" in doc:
        for upstream in doc["upstreams"]:
            upstream["timeout_seconds"] = float(upstream["timeout_seconds"])
        doc["upstreams"].sort(key=lambda u: u["name"])
    if "named_servers" in doc:
        for server in doc["named_servers"]:
            server["upstreams"].sort(key=lambda m: m["name"])
        doc["named_servers"].sort(key=lambda s: s["name"])
    return doc


def entry_fields(definition: str) -> tuple[str, ...]:
    """The keys of one kind of entry (``code``, ``variant``, ``hint``, ``rule``, ``upstream``, ``named_server``,
    ``named_server_upstream``), in the schema's order."""
    return tuple(catalog_schema()["$defs"][definition]["properties"])


def dump_catalog(doc: Mapping[str, Any], fmt: str = "yaml") -> str:
    """Deterministic text of a document: the same document always gives the same bytes."""
    if fmt == "yaml":
        return yaml.dump(
            doc, Dumper=_CatalogYamlDumper, sort_keys=False, allow_unicode=True, width=100000, default_flow_style=False
        )
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    raise ValueError(f"fmt must be one of {', '.join(FORMATS)}")


class _CatalogYamlDumper(yaml.SafeDumper):
    """yaml's safe dumper that writes a value seen twice out in full, never as an anchor and alias: catalog files
    may not hold those (``parse_catalog_text``), so an export must import."""

    def ignore_aliases(self, data: Any) -> bool:
        return True
