"""The screen an upstream's tool metadata passes before a model may see it: pure, plain data in, flags out.

An upstream's tool description, title, annotations and the strings of its schemas are read by the model that lists
them, so they are text from outside reaching a model: the "tool poisoning" attack hides instructions there, and a
"rug pull" changes them after people looked. The gateway serves only metadata that was approved
(``errcatalog.gateway.models.UpstreamTool``); this module says what needs a person's eyes before it may be:
phrases known from tool-poisoning attacks, invisible or bidirectional characters, links, and fields over their size
caps. A flag names its kind, where it is and why in fixed words, never the offending text. Size flags are hard:
nobody can approve a field over its cap. No ORM, no I/O. An upstream's resources, resource templates and prompts are
screened by the same rules (``screen_offering``), with no approval: what it flags is not served.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# The metadata of a tool that ``tools/list`` serves, by their wire names; anything else an upstream lists (icons,
# ``_meta``, execution hints) is not served, so it is neither pinned nor screened.
SERVED_TOOL_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")

SIZE = "size"
PHRASE = "phrase"
UNICODE = "unicode"
LINK = "link"
# Flags no approval can overrule: a field over its cap is never served, whoever looked at it.
HARD_KINDS = frozenset({SIZE})
# A schema nested deeper than this is not walked further (and flagged): real tools' schemas are a few levels deep.
MAX_SCHEMA_DEPTH = 32
# The most flags kept for one tool: a hostile schema could otherwise make a flag of each of its strings.
MAX_FLAGS = 40


@dataclass(frozen=True, slots=True)
class ScreenLimits:
    """The hard size caps, in characters (schemas: bytes of their compact JSON). Defaults: settings.GATEWAY."""

    description_chars: int = 4096
    title_chars: int = 200
    parameter_description_chars: int = 1024
    schema_bytes: int = 65536


@dataclass(frozen=True, slots=True)
class Flag:
    """Why a field is held: ``kind`` (size, phrase, unicode, link), ``field`` (a path such as
    ``inputSchema.properties.path.description``) and ``reason`` in fixed words."""

    kind: str
    field: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "field": self.field, "reason": self.reason}


# Phrases of published tool-poisoning attacks (Invariant Labs' "<IMPORTANT>" block that asks for ~/.ssh and
# mcp.json "without telling the user", and the classic prompt injections), matched on text folded by NFKC with
# whitespace runs made single spaces. The instruction phrases are shared with the screen on an upstream's failure
# text (``errcatalog.gateway.detail``); the secret files are not, since a file server's error names the path asked
# for ("Access denied - path outside allowed directories: /etc/passwd").
INSTRUCTION_PHRASES: tuple[tuple[str, str], ...] = (
    (
        r"\b(?:ignore|disregard|forget|override|bypass)\b(?: \S+){0,4}? "
        r"(?:previous|prior|above|earlier|preceding|all|any|other|your|the)\b(?: \S+){0,3}? "
        r"(?:instructions?|prompts?|rules|directions|guidelines|context)\b",
        "asks to ignore instructions",
    ),
    (
        r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|assistant|prompt)\b[^>]{0,80}>",
        "an instruction block in tags",
    ),
    (
        r"\b(?:do not|don'?t|never|without)"
        r" (?:tell|telling|inform|informing|mention|mentioning|notify|notifying|reveal|revealing|alert|alerting)"
        r"(?: \S+){0,3}? (?:the )?(?:user|users|human|person|operator)\b",
        "asks to keep something from the user",
    ),
    (
        r"\bsystem prompt\b|\byou are now\b|\bdeveloper mode\b|\bjailbreak|\bnew instructions\b",
        "reads as instructions to the model",
    ),
)
# A chat role's name before a colon ("system:"), which the failure-text screen reads only where a turn would start:
# "Read-only file system: '/data/x'" is an error, not a turn.
ROLE_MARKER = (r"\b(?:system|assistant|developer) ?:", "reads as instructions to the model")
_SECRET_FILES = (
    r"~/\.ssh|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\bmcp\.json\b|/etc/(?:passwd|shadow)\b|\.aws/credentials",
    "names a secret file",
)
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), reason)
    for pattern, reason in (*INSTRUCTION_PHRASES, ROLE_MARKER, _SECRET_FILES)
)
_LINK = re.compile(
    r"\b(?:https?|ftp|file|wss?)://|\bjavascript:|\bdata:[a-z]+/[\w.+-]+[;,]|\bwww\.[a-z0-9-]+\.[a-z]"
    r"|\]\(\s*[^)\s]+\s*\)|<\s*a\s",
    re.IGNORECASE,
)
_WHITESPACE = re.compile(r"\s+")
_SAFE_KEY = re.compile(r"[A-Za-z0-9_.$-]{1,64}")
# Characters that show nothing or reorder what is shown: format characters (zero-width, bidirectional controls,
# Unicode tags), private use, surrogates, unassigned code points, and control characters other than line breaks
# and tabs. Variation selectors (a mark category) can smuggle bytes too.
_HIDDEN_CATEGORIES = frozenset({"Cf", "Co", "Cs", "Cn"})
_VISIBLE_CONTROLS = frozenset("\n\r\t")


def hidden(char: str) -> bool:
    """Whether ``char`` shows nothing or reorders what is shown (see above); line breaks and tabs do not."""
    category = unicodedata.category(char)
    if category in _HIDDEN_CATEGORIES:
        return True
    if category == "Cc":
        return char not in _VISIBLE_CONTROLS
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def tool_metadata(listed: Mapping[str, Any]) -> dict[str, Any]:
    """The served fields of a tool as listed (wire names, JSON values), without absent ones."""
    return {key: listed[key] for key in SERVED_TOOL_FIELDS if listed.get(key) is not None}


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def metadata_hash(metadata: Mapping[str, Any]) -> str:
    """What an approval is of: the SHA-256 of the metadata's canonical JSON."""
    return hashlib.sha256(canonical_json(metadata).encode("utf-8", "surrogatepass")).hexdigest()


def _key(key: object) -> str:
    return key if isinstance(key, str) and _SAFE_KEY.fullmatch(key) else "…"


def _text_flags(text: str, field: str, *, cap: int | None, links: bool) -> Iterator[Flag]:
    if cap is not None and len(text) > cap:
        yield Flag(SIZE, field, f"longer than {cap} characters")
        text = text[: cap * 2]  # the rest is never served; screening it would only cost time
    if any(hidden(char) for char in text):
        yield Flag(UNICODE, field, "invisible or bidirectional characters")
    folded = _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text))
    for pattern, reason in _PHRASES:
        if pattern.search(folded):
            yield Flag(PHRASE, field, reason)
            break
    if links and _LINK.search(folded):
        yield Flag(LINK, field, "a link")


def _schema_flags(schema: Any, field: str, limits: ScreenLimits, depth: int = 0) -> Iterator[Flag]:
    if depth > MAX_SCHEMA_DEPTH:
        yield Flag(SIZE, field, f"nested deeper than {MAX_SCHEMA_DEPTH} levels")
        return
    if isinstance(schema, str):
        name = field.rsplit(".", 1)[-1]
        if name == "description":
            yield from _text_flags(schema, field, cap=limits.parameter_description_chars, links=True)
        elif name == "title":
            yield from _text_flags(schema, field, cap=limits.title_chars, links=True)
        else:  # enum values, defaults, examples, patterns, formats: shown to the model too, without a cap of their own
            yield from _text_flags(schema, field, cap=None, links=False)
    elif isinstance(schema, Mapping):
        for key, value in schema.items():
            path = f"{field}.{_key(key)}"
            if isinstance(key, str):  # property names reach the model as well
                yield from _text_flags(key, f"{path} (name)", cap=None, links=False)
            yield from _schema_flags(value, path, limits, depth + 1)
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _schema_flags(item, f"{field}[{index}]", limits, depth + 1)


def screen_tool(metadata: Mapping[str, Any], limits: ScreenLimits) -> tuple[Flag, ...]:
    """What in a tool's served metadata (``tool_metadata``) is held for a person to look at; empty: nothing."""
    found: list[Flag] = []

    def flags() -> Iterator[Flag]:
        name = metadata.get("name")
        if isinstance(name, str):
            yield from _text_flags(name, "name", cap=None, links=False)
        for field, cap in (("title", limits.title_chars), ("description", limits.description_chars)):
            value = metadata.get(field)
            if isinstance(value, str):
                yield from _text_flags(value, field, cap=cap, links=True)
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping):
            yield from _schema_flags(annotations, "annotations", limits)
        for field in ("inputSchema", "outputSchema"):
            schema = metadata.get(field)
            if schema is None:
                continue
            size = len(canonical_json(schema).encode("utf-8", "surrogatepass"))
            if size > limits.schema_bytes:
                yield Flag(SIZE, field, f"larger than {limits.schema_bytes} bytes")
            else:
                yield from _schema_flags(schema, field, limits)

    seen: set[tuple[str, str, str]] = set()
    for flag in flags():
        key = (flag.kind, flag.field, flag.reason)
        if key not in seen:
            seen.add(key)
            found.append(flag)
            if len(found) >= MAX_FLAGS:
                break
    return tuple(found)


# The listed metadata of a resource, resource template or prompt that reaches a model, by wire names: the texts
# (screened as a tool's name, title and description are) and the URI or URI template (screened for phrases and hidden
# characters; a URI is a link by nature). A prompt's arguments are screened one by one.
_OFFERING_URIS = ("uri", "uriTemplate")
_OFFERING_TEXTS = ("mimeType",)


def screen_offering(metadata: Mapping[str, Any], limits: ScreenLimits) -> tuple[Flag, ...]:
    """What in the listed metadata of an upstream's resource, resource template or prompt (wire names, JSON values)
    is flagged; empty: nothing. The caps are a tool's (a prompt argument's description is a parameter's)."""
    found: list[Flag] = []

    def flags() -> Iterator[Flag]:
        for field in ("name", *_OFFERING_URIS, *_OFFERING_TEXTS):
            value = metadata.get(field)
            if isinstance(value, str):
                yield from _text_flags(value, field, cap=None, links=False)
        for field, cap in (("title", limits.title_chars), ("description", limits.description_chars)):
            value = metadata.get(field)
            if isinstance(value, str):
                yield from _text_flags(value, field, cap=cap, links=True)
        arguments = metadata.get("arguments")
        for index, argument in enumerate(arguments if isinstance(arguments, list) else ()):
            if not isinstance(argument, Mapping):
                continue
            where = f"arguments[{index}]"
            name = argument.get("name")
            if isinstance(name, str):
                yield from _text_flags(name, f"{where}.name", cap=None, links=False)
            for field, cap in (("title", limits.title_chars), ("description", limits.parameter_description_chars)):
                value = argument.get(field)
                if isinstance(value, str):
                    yield from _text_flags(value, f"{where}.{field}", cap=cap, links=True)

    for flag in flags():
        if flag not in found:
            found.append(flag)
            if len(found) >= MAX_FLAGS:
                break
    return tuple(found)


def approvable(flags: tuple[Flag, ...] | list[Mapping[str, str]]) -> bool:
    """Whether a person may approve metadata with these flags: not when any is a hard one (a size cap)."""
    return not any((f.kind if isinstance(f, Flag) else f.get("kind")) in HARD_KINDS for f in flags)


def bounded_for_review(metadata: Mapping[str, Any], limits: ScreenLimits) -> dict[str, Any]:
    """The metadata as it is kept for review: strings past their caps cut, a schema past its cap left out, so a
    hostile listing's megabytes are not stored. Never served (what is over a cap cannot be approved)."""
    cap = max(limits.description_chars, limits.parameter_description_chars, limits.title_chars)

    def cut(value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return value if len(value) <= cap else value[:cap] + "…"
        if depth > MAX_SCHEMA_DEPTH:
            return None
        if isinstance(value, Mapping):
            return {str(k)[:cap]: cut(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v, depth + 1) for v in value]
        return value

    kept: dict[str, Any] = {}
    for field, value in metadata.items():
        too_large = len(canonical_json(value).encode("utf-8", "surrogatepass")) > limits.schema_bytes
        if field in ("inputSchema", "outputSchema") and too_large:
            kept[field] = {"left out": f"larger than {limits.schema_bytes} bytes"}
        else:
            kept[field] = cut(value, 0)
    return kept
