"""The trust boundary of rendered text: the placeholder allow-list, template checks, identifier screening and
the length cap.

Rendered text reaches a model, so it may contain only catalog text and values the server itself controls
(the "trusted error messages only" rule of Sentry's error-handling
conventions). Templates are parsed with ``string.Formatter`` but never passed to
``str.format``: values are spliced in by name from plain strings, so no attribute access or indexing can run.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from errcatalog.caching import register_cache
from errcatalog.vocabulary import is_json_number, is_tool_name

REDACTED = "[REDACTED]"
ELLIPSIS = "…"

# Every name a template may use, with where its value comes from. All sources are server-controlled.
PLACEHOLDERS: Mapping[str, str] = {
    "tool_name": "the tool's registered name",
    "parameter": "the name of the parameter at fault, from the tool's input schema",
    "parameters": "the names of all missing parameters, joined (e.g. 'to, subject and body')",
    "parameter_description": "the parameter's description, from its hint or the tool's schema",
    "parameter_type": "the parameter's type (e.g. email_address)",
    "expected_format": "the expected format or an example value (e.g. user@domain.com)",
    "minimum": "the smallest allowed value, from the schema",
    "maximum": "the largest allowed value, from the schema",
    "status_code": "the HTTP status code",
    "status_text": "the standard HTTP reason phrase of the status (e.g. Bad Gateway)",
    "event_id": "the Sentry event ID of a captured system error",
    "alternatives": "names the caller may use instead (e.g. close tool names)",
    "retry_after": "seconds to wait before retrying",
    "service": "the name of the service behind the tool",
    "network_failure": "'Request timeout' or 'Connection failed'",
    "received": "the number or boolean sent for the parameter at fault, once validated as one (text is never shown)",
    "upstream_detail": "an upstream's own words about its failure, screened, in double quotes (the gateway's failures"
    " only); placed here, they are not repeated after the text",
    # A rule's sentence only: what the rule's pattern captured in an upstream's failure text, in its one shape.
    "name": "the identifier an upstream's failure is about (a table, column, key, entity, file), captured by the rule",
    "path": "the parameter or JSON path an upstream's failure names (entities[0].entityType), captured by the rule",
    "expected": "the type or values an upstream's failure says it accepts (e.g. true or false), captured by the rule",
}
# The placeholders only a rule's sentence fills (``RuleEntry.says``), from what its pattern captured.
FACT_PLACEHOLDERS = frozenset({"name", "path", "expected"})

_FORMATTER = string.Formatter()


def template_errors(template: str) -> list[str]:
    """Return what is wrong with a template, in words an editor can act on; empty when it is valid."""
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as exc:
        return [f"Braces do not match ({exc}). Write {{{{ and }}}} for literal braces."]
    problems: list[str] = []
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if field == "" or field.isdigit():
            problems.append("Positional placeholders like {} or {0} are not allowed; use a name from the list.")
        elif "." in field or "[" in field:
            problems.append(f"{{{field}}}: attribute access and indexing are not allowed in placeholders.")
        elif field not in PLACEHOLDERS:
            problems.append(f"{{{field}}} is not a known placeholder. Known: {', '.join(sorted(PLACEHOLDERS))}.")
        if conversion or spec:
            problems.append(f"{{{field}}}: conversions and format specs (!r, :>10) are not allowed.")
    return problems


def template_placeholders(template: str) -> list[str]:
    """Names used by a valid template, in order of first use."""
    names: list[str] = []
    for _literal, field, _spec, _conv in _FORMATTER.parse(template):
        if field and field not in names:
            names.append(field)
    return names


def safe_identifier(value: object) -> str:
    """Return ``value`` if it is a name of the tool-name vocabulary, otherwise the redaction marker.

    Tool and parameter names come from registries and schemas; a name that the caller typed (an unknown tool) is
    shown only if it is a name by the same rule the registry registers tools by (``errcatalog.vocabulary``), so it
    cannot carry sentences or markup, and every name a tool can have is shown as it is.
    """
    return value if is_tool_name(value) else REDACTED


# --- Tool metadata: what a schema says about a parameter, and a tool's partial output ---------------------------
#
# A parameter's description, type and expected format reach the model inside questions ("Please provide the
# recipient email address"). On the MCP path they come from a tool's input schema, on the REST render endpoint from
# the caller; both go through the same screen in the renderer (``errcatalog.render.core``). Schema text is shown
# only when it reads as one short line of plain words: no markup, braces, brackets, backticks, pipes, line breaks
# or control and direction characters (so it cannot open a tag, a template, a link, a table or a fake heading),
# and none of the stock phrases of prompt injection. Anything else is left out, and the catalog's own wording
# ("a value for to") stands in.

SCHEMA_TEXT_MAX_CHARS = 200
# Letters and digits of any script, the space, and the punctuation of plain sentences and example values
# (user@domain.com, 2026-01-31T09:30:00Z, London,UK, 1 to 100, 50%).
_SCHEMA_TEXT = re.compile(r"[\w .,;:'\"()/@+%=?!&#-]+")
_INSTRUCTION_LIKE = re.compile(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|instructions?)\b"
    r"|\bsystem\s+prompt\b|\byou\s+are\s+now\b|\bdeveloper\s+mode\b|\bjailbreak"
    r"|\b(system|assistant|developer|user)\s*:",
    re.IGNORECASE,
)
# A partial result is data, so it keeps its shape; these bound what the model is handed.
PARTIAL_RESULT_MAX_DEPTH = 4
PARTIAL_RESULT_MAX_NODES = 200


def safe_schema_text(value: object, *, limit: int = SCHEMA_TEXT_MAX_CHARS) -> str:
    """Return ``value`` if it reads as schema metadata (one short line of plain words), otherwise ``""``."""
    if not isinstance(value, str) or not value or len(value) > limit:
        return ""
    if not _SCHEMA_TEXT.fullmatch(value) or _INSTRUCTION_LIKE.search(value):
        return ""
    return value


def safe_partial_result(value: Any) -> Any:
    """A tool's partial output as the model may see it: JSON data whose strings pass ``safe_schema_text``.

    Numbers a double holds, booleans and null are kept (NaN, the infinities and 400-digit integers are not); a
    string that does not pass becomes the redaction marker; object keys that are not names are left out;
    containers deeper than ``PARTIAL_RESULT_MAX_DEPTH`` or past ``PARTIAL_RESULT_MAX_NODES`` values in all are cut.
    Any other Python value is left out.
    """
    budget = [PARTIAL_RESULT_MAX_NODES]

    def screen(node: Any, depth: int) -> Any:
        budget[0] -= 1
        if node is None or isinstance(node, bool):
            return node
        if isinstance(node, int | float):
            return node if is_json_number(node) else None
        if isinstance(node, str):
            return safe_schema_text(node) or REDACTED
        if depth >= PARTIAL_RESULT_MAX_DEPTH:
            return None
        if isinstance(node, list | tuple):
            items = []
            for item in node:
                if budget[0] <= 0:
                    break
                items.append(screen(item, depth + 1))
            return items
        if isinstance(node, dict):
            screened = {}
            for key, item in node.items():
                if budget[0] <= 0:
                    break
                if is_tool_name(key):
                    screened[key] = screen(item, depth + 1)
            return screened
        return None

    return None if value is None else screen(value, 0)


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of rendered text; placeholder values are atomic and are never cut in half."""

    text: str
    atomic: bool = False


Piece = tuple[str, str | None]  # (literal text, allow-listed placeholder name or None)
_SENTENCE_END = re.compile(r"(?<=[.?!])(\s+)")


@lru_cache(maxsize=4096)
def _sentences(template: str) -> tuple[tuple[tuple[Piece, ...], frozenset[str]], ...]:
    """A template split into sentences, each with the placeholder names it uses.

    Cached: a catalog has a few hundred templates and each is parsed once per process. A name outside the
    allow-list becomes None and renders empty; malformed braces are dropped.
    """
    try:
        parsed = [(lit, f if f in PLACEHOLDERS else None) for lit, f, _spec, _conv in _FORMATTER.parse(template)]
    except ValueError:
        parsed = [(template.replace("{", "").replace("}", ""), None)]
    sentences: list[tuple[tuple[Piece, ...], frozenset[str]]] = []
    current: list[Piece] = []

    def close() -> None:
        if current:
            sentences.append((tuple(current), frozenset(f for _, f in current if f)))
            current.clear()

    for literal, field in parsed:
        for i, chunk in enumerate(_SENTENCE_END.split(literal)):
            if i % 2:  # the whitespace after a sentence's final punctuation ends that sentence
                current.append((chunk, None))
                close()
            elif chunk:
                current.append((chunk, None))
        if field:
            current.append(("", field))
    close()
    return tuple(sentences)


@lru_cache(maxsize=4096)
def _static_text(template: str) -> str | None:
    """The rendered text of a template that uses no placeholder (most instructions), else None."""
    sentences = _sentences(template)
    if any(names for _pieces, names in sentences) or any(f for p, _ in sentences for _, f in p):
        return None
    return "".join(lit for pieces, _names in sentences for lit, _ in pieces).rstrip()


# Pure functions of template text: functools caches them, and the tests reset them with every other cache.
register_cache("errcatalog.safety.template_sentences", _sentences.cache_clear)
register_cache("errcatalog.safety.static_texts", _static_text.cache_clear)


def _kept_pieces(template: str, values: Mapping[str, str]) -> list[Piece]:
    """The pieces to render: a sentence that uses a placeholder without a value is left out, so optional facts
    ("the closest matches are: {alternatives}.") disappear cleanly; if that would leave nothing, all is kept."""
    sentences = _sentences(template)
    kept = [pieces for pieces, names in sentences if all(values.get(n) for n in names)]
    if not kept:
        kept = [pieces for pieces, _names in sentences]
    return [piece for pieces in kept for piece in pieces]


def fill(template: str, values: Mapping[str, str]) -> list[Segment]:
    """Substitute allow-listed placeholders by name, leaving out sentences whose values are missing."""
    segments: list[Segment] = []
    for literal, field in _kept_pieces(template, values):
        if literal:
            segments.append(Segment(literal))
        if field and values.get(field):
            segments.append(Segment(values[field], atomic=True))
    if segments and not segments[-1].atomic and segments[-1].text != segments[-1].text.rstrip():
        segments[-1] = Segment(segments[-1].text.rstrip())
    return segments


def fill_capped(template: str, values: Mapping[str, str], limit: int) -> str:
    """``cap(fill(template, values), limit)``, without building segments when the text fits (the usual case)."""
    static = _static_text(template)
    if static is not None and len(static) <= limit:
        return static
    text = "".join(lit + (values.get(field, "") if field else "") for lit, field in _kept_pieces(template, values))
    text = text.rstrip()
    return text if len(text) <= limit else cap(fill(template, values), limit)


def compose_capped(templates: Sequence[str], texts: Sequence[str], values: Mapping[str, str], limit: int) -> str:
    """Join already-filled ``texts`` of ``templates`` with spaces under ``limit``.

    When the joined text is too long it is rebuilt from segments, so that the cut never halves a value.
    """
    joined = " ".join(t for t in texts if t)
    if len(joined) <= limit:
        return joined
    segments: list[Segment] = []
    for template in templates:
        part = fill(template, values)
        if not part:
            continue
        if segments:
            segments.append(Segment(" "))
        segments.extend(part)
    return cap(segments, limit)


def cap(segments: Sequence[Segment], limit: int) -> str:
    """Join segments into at most ``limit`` characters.

    Literal text is cut at a word boundary where one is near; an atomic value that does not fit is dropped
    whole. A cut text ends with an ellipsis, which counts toward the limit.
    """
    total = sum(len(s.text) for s in segments)
    if total <= limit:
        return "".join(s.text for s in segments)
    budget = limit - len(ELLIPSIS)
    out: list[str] = []
    used = 0
    for seg in segments:
        room = budget - used
        if len(seg.text) <= room:
            out.append(seg.text)
            used += len(seg.text)
            continue
        if not seg.atomic and room > 0:
            piece = seg.text[:room]
            space = piece.rfind(" ")
            if space >= room // 2:
                piece = piece[:space]
            out.append(piece)
        break
    return "".join(out).rstrip() + ELLIPSIS


# --- Text for people, from outside -------------------------------------------------------------------------

# What an upstream's own error text is cut to before it reaches a log line, Sentry or admin.
UNTRUSTED_TEXT_MAX_CHARS = 2000
_CREDENTIAL_LIKE = re.compile(
    r"(?i)(?:bearer|basic|token)\s+[\w.~+/=-]{8,}"  # Authorization header values
    r"|\b(?:gh[pousr]_|github_pat_|sk-|sk_live_|rk_live_|xox[abprs]-|AKIA|ASIA|AIza)[\w-]{8,}"  # vendors' key forms
    r"|\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}"  # JWTs
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|(?i:\b(?:password|passwd|secret|api[_-]?key|access[_-]?key|token|auth)\b\s*[=:]\s*)[^\s,;&]+"
    r"|\b[A-Fa-f0-9]{32,}\b|(?P<run>\b[A-Za-z0-9+/_-]{40,}={0,2})"  # long hex or base64 runs
)
# A URL's or DSN's password (postgres://app:secret@db): redacted, its scheme, user and host kept for people to read;
# a password that holds an "@" to the last one before the host (p@ss@db), else to the first. Apart from the pattern
# above, bounded, and starting at its literal "://", which Python's engine finds fast.
_URL_PASSWORD = re.compile(r"(://[^\s/@:]{0,128}:)(?:[^\s/?#]{1,256}|[^\s/@]{1,256})@")
# A long run that is a file path (folders of lower-case words, each maybe capitalised) and not base64: kept, since
# the path is often the fact a failure is about. Base64 mixes cases and digits within its segments.
_PATH_RUN = re.compile(r"(?:[A-Z]?[a-z0-9_-]{0,39}/)+[A-Z]?[a-z0-9_-]{0,39}")


def _redaction(match: re.Match[str]) -> str:
    if match.group("run") and _PATH_RUN.fullmatch(match.group()):
        return match.group()
    return REDACTED


def _candidates_pattern() -> bytes:
    r"""``_CREDENTIAL_LIKE`` for RE2, matching every text Python's matches (and maybe more): most texts hold no
    credential, and RE2 says so about a hundred times faster than Python's engine tries the alternatives at every
    position.

    RE2 reads the text's UTF-8 bytes one by one (Latin-1 mode, which keeps its automaton small), so the pattern is
    widened where Python's Unicode reading would match more: ``\w`` and ``\s`` also take every byte of a non-ASCII
    character, word boundaries are dropped (Python's notion of a word is Unicode), and the four non-ASCII letters
    Python's case-insensitive matching folds onto ASCII ones are folded in the text (``credential_candidate_bytes``).
    A character is at least one byte, so "at least N characters" still holds of the bytes."""
    byte = r"\x80-\xff"
    pattern = _CREDENTIAL_LIKE.pattern.replace(r"[\w", rf"[0-9A-Za-z_{byte}").replace(r"\w", rf"[0-9A-Za-z_{byte}]")
    space = rf"[\s\v\x1c-\x1f{byte}]"
    pattern = pattern.replace(r"\s+", f"{space}+").replace(r"\s*", f"{space}*").replace(r"\b", "")
    return pattern.encode("latin-1")


# For a caller that makes an RE2 pass of its own over a text (Latin-1 mode, over ``credential_candidate_bytes``): this
# pattern in it says what ``credentials_redacted``'s own pass would, so that the text is read once.
CREDENTIAL_CANDIDATES = _candidates_pattern()


def _prefilter() -> re2._Regexp:
    """``CREDENTIAL_CANDIDATES`` without its capturing group: only where a match starts is read, and RE2 finds that
    faster when it has no group to fill."""
    options = re2.Options()
    options.log_errors = False
    options.encoding = re2.Options.Encoding.LATIN1
    return re2.compile(CREDENTIAL_CANDIDATES.replace(b"(?P<run>", b"(?:"), options)


_CREDENTIAL_PREFILTER = _prefilter()
# Capital I with a dot, dotless i, long s and the Kelvin sign match i, i, s and k in Python's case-insensitive
# matching.
_ASCII_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_ASCII_FOLD_PAIRS = tuple((chr(code), folded) for code, folded in _ASCII_FOLDS.items())


def _folded(value: str) -> str:
    """``value`` with the four letters of ``_ASCII_FOLDS`` folded, as many characters long."""
    if not value.isascii():
        # One replace per letter present: str.translate reads every character through a dictionary, a replace
        # copies only where its letter is.
        for char, folded in _ASCII_FOLD_PAIRS:
            if char in value:
                value = value.replace(char, folded)
    return value


def credential_candidate_bytes(value: str) -> bytes:
    """``value`` as the RE2 pass of ``CREDENTIAL_CANDIDATES`` reads it: the four letters of ``_ASCII_FOLDS`` folded,
    encoded as UTF-8 with lone surrogates (valid JSON, invalid UTF-8) kept as bytes of their own."""
    return _folded(value).encode("utf-8", "surrogatepass")


def credentials_redacted(value: str, *, candidates: bool | None = None) -> str:
    """``value`` with what ``_CREDENTIAL_LIKE`` finds replaced by ``[REDACTED]`` (a URL's password only, a file
    path's run of folders never), exactly as ``_CREDENTIAL_LIKE.sub`` would replace it.

    Python's engine tries every alternative at every position, so it is only asked where RE2's wider pattern starts
    a match: a position where that pattern does not match is one where Python's does not either. ``candidates``:
    what the caller's own RE2 pass with ``CREDENTIAL_CANDIDATES`` found, when it made one (False: nothing to look
    for); None: this function looks.
    """
    if "://" in value:
        value = _URL_PASSWORD.sub(rf"\g<1>{REDACTED}@", value)
    if candidates is False:
        return value
    folded = _folded(value)
    data = folded.encode("utf-8", "surrogatepass")
    one_byte_each = len(data) == len(value)
    pieces: list[str] = []
    kept_from = at = at_byte = 0
    while (found := _CREDENTIAL_PREFILTER.search(data, at_byte)) is not None:
        # Every alternative starts with an ASCII character, so a match starts at a character's first byte.
        start_byte = found.start()
        if one_byte_each:
            at = start_byte
        else:
            at += len(data[at_byte:start_byte].decode("utf-8", "surrogatepass"))
        match = _CREDENTIAL_LIKE.match(value, at)
        if match is None and at + 1 < len(value):
            # RE2's pattern has no word boundaries: where Python's fails on one ("'/srv/..." starts no run, "srv/..."
            # does), it is tried on the next character at once.
            at += 1
            match = _CREDENTIAL_LIKE.match(value, at)
            start_byte += len(folded[at - 1].encode("utf-8", "surrogatepass"))
        end = match.end() if match else at + 1
        if match:
            pieces += (value[kept_from:at], _redaction(match))
            kept_from = end
        at_byte = end if one_byte_each else start_byte + len(folded[at:end].encode("utf-8", "surrogatepass"))
        at = end
    if not pieces:
        return value
    pieces.append(value[kept_from:])
    return "".join(pieces)


def redacted_for_people(text: object, *, known: Sequence[str] = (), limit: int = UNTRUSTED_TEXT_MAX_CHARS) -> str:
    """Text from outside (an upstream's error message) as logs, Sentry and staff see it, and as the screen
    (``errcatalog.gateway.detail``) reads it before a model may read a quote of it: cut to ``limit``, with control
    characters escaped, ``known`` secrets (the values we sent) and anything that looks like a credential replaced by
    ``[REDACTED]``. A Python traceback too long to keep whole keeps its start and its last line, the exception."""
    value = text if isinstance(text, str) else _repr(text)
    last = _exception_line(value, limit)
    if last:
        head = _redacted(value[: limit * 4], known)
        if len(head) > limit:
            tail = _redacted(last, known)
            return head[: max(limit - len(tail) - 2, 0)] + ELLIPSIS + "\n" + tail
        return head
    value = _redacted(value[: limit * 4], known)
    return value if len(value) <= limit else value[: limit - 1] + ELLIPSIS


_PYTHON_TRACEBACK = "Traceback (most recent call last):"


def _exception_line(value: str, limit: int) -> str:
    """The last line of a Python traceback that starts within ``value``'s first ``limit`` characters and is longer
    than ``limit`` (its exception and message, at most a quarter of ``limit``), else an empty string."""
    if len(value) <= limit or _PYTHON_TRACEBACK not in value[:limit]:
        return ""
    last = value.rstrip().rpartition("\n")[2]
    return last[: limit // 4] if last[:1].strip() else ""


def _redacted(value: str, known: Sequence[str]) -> str:
    for secret in known:
        if len(secret) >= 4:
            value = value.replace(secret, REDACTED)
    value = credentials_redacted(value)
    return "".join(c if c.isprintable() or c in "\n\t" else f"\\x{ord(c):02x}" for c in value)


def _repr(value: object) -> str:
    try:
        return repr(value)
    except ValueError:  # an int past Python's 4,300-digit limit for conversion to text, somewhere inside
        return f"<{type(value).__name__} that cannot be shown>"
