"""From a failure and a catalog snapshot to one rendered error, the source of every face.

Pure: no ORM, no I/O. ``Failure`` has no field for free text, so what users type, exceptions and the database have no
way in; the names it does carry are screened by ``safe_identifier``, the tool's metadata (a parameter's description
and format, the sentence that describes the tool) by ``safe_schema_text`` and a partial result by
``safe_partial_result``, whoever built the failure. The one text from outside is an upstream's own words about its
failure (``UpstreamWords``), which only the gateway's screen makes (``errcatalog.gateway.detail``): it is quoted,
marked as the upstream's, after the catalog's whole text and never instead of any of it, and the renderer holds it to
the quote's shape once more (one line, no control or invisible characters, within its bound).

Which text the model gets is decided here and only here, and recorded on the result (``RenderedError.text_source``,
one of ``TEXT_SOURCES``) so that admin can say which row to edit instead of working it out again.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from types import MappingProxyType
from typing import Any

from errcatalog.render.entries import CatalogSnapshot, CodeEntry, HintEntry, VariantEntry
from errcatalog.render.locale import choose_locale
from errcatalog.render.people_text import people_markdown
from errcatalog.safety import (
    FACT_PLACEHOLDERS,
    REDACTED,
    compose_capped,
    fill_capped,
    safe_identifier,
    safe_partial_result,
    safe_schema_text,
    template_errors,
    template_placeholders,
)
from errcatalog.vocabulary import is_json_number

DEFAULT_MAX_CHARS = 500
NETWORK_FAILURES = {"timeout": "Request timeout", "connection": "Connection failed"}
KIND_ENVELOPES = {"error": "toolError:v1", "needs_input": "needsInput:v1"}

# Where a rendered error's model-facing text comes from. A needs-input code whose variant or hint asks a question is
# answered with the question alone (its message, cause and instruction are not sent); a question about one missing
# parameter is the parameter hint's when the hint has one, which replaces the variant's; several missing parameters
# whose hints all ask are asked as one question made of theirs. Every other error is the variant's message, cause and
# instruction.
TEXT_FROM_VARIANT = "variant"
TEXT_FROM_VARIANT_QUESTION = "variant_question"
TEXT_FROM_HINT_QUESTION = "hint_question"
TEXT_FROM_HINT_QUESTIONS = "hint_questions"
TEXT_SOURCES = (TEXT_FROM_VARIANT, TEXT_FROM_VARIANT_QUESTION, TEXT_FROM_HINT_QUESTION, TEXT_FROM_HINT_QUESTIONS)


@dataclass(frozen=True, slots=True)
class ParameterFault:
    """One parameter at fault, described from the tool's input schema (never from the rejected value)."""

    name: str
    problem: str = "missing"  # "missing" or "invalid"
    description: str = ""
    type: str = ""
    expected_format: str = ""
    minimum: int | float | None = None
    maximum: int | float | None = None
    # The number or boolean the caller sent, once validated as one ("got 30, the maximum is 14").
    # Strings are never carried: a string the caller typed could say anything.
    received: int | float | bool | None = None


@dataclass(frozen=True, slots=True)
class UpstreamWords:
    """What an upstream said of its own failure, screened for a model (``errcatalog.gateway.detail.screen_detail``):
    ``upstream`` is its name, ``text`` the quote."""

    upstream: str
    text: str


# The mark that says whose words follow; the quote stays inside its straight double quotes.
UPSTREAM_WORDS_LINE = 'The {upstream} server said: "{text}"'
UPSTREAM_WORDS_MAX_CHARS = 1000  # the renderer's own bound on a quote, above any the screen is configured with


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong, as the server knows it. Every field is server-controlled or screened."""

    code: str
    tool_name: str | None = None
    parameters: tuple[ParameterFault, ...] = ()
    status_code: int | None = None
    event_id: str | None = None
    retry_after: int | None = None
    alternatives: tuple[str, ...] = ()
    network_failure: str | None = None  # a key of NETWORK_FAILURES
    service: str | None = None
    # Partial output of the tool itself, passed along like a successful result would be: the model can
    # use what was done before the failure.
    partial_result: Any = None
    # What the tool itself says of its input, for a question's data when the code's catalog entry sets none: the
    # names of its optional parameters and one sentence of its description (screened like schema text).
    optional_parameters: tuple[str, ...] = ()
    guidance: str = ""
    # An upstream's own words about its failure, screened: quoted after the catalog's text.
    upstream_words: UpstreamWords | None = None
    # The sentence of the rule that classified the failure (``RuleEntry.says``) and the facts its pattern captured
    # (``errcatalog.render.patterns.captured_facts``: each in its one shape), which the sentence may place.
    rule_sentence: str = ""
    captured: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RenderedError:
    """One failure rendered from one catalog variant; faces only arrange these fields."""

    code: str
    kind: str  # "error" or "needs_input"
    category: str
    header: str
    variant: str
    message: str  # what happened
    cause: str  # why
    instruction: str  # what to do next
    question: str  # for interactive codes, else ""
    text: str  # the composed model-facing text
    # The people-facing markdown (``formatErrorForUser`` of Sentry's error-handling conventions): the variant's
    # header, the text, the 404 hint and the Event ID line, all inside the cap. It is also the markdown block of the
    # MCP face.
    markdown: str
    retryable: bool
    system: bool
    tool_name: str | None = None
    status_code: int | None = None
    jsonrpc_code: int | None = None
    event_id: str | None = None
    retry_after: int | None = None
    alternatives: tuple[str, ...] = ()
    parameters: tuple[ParameterFault, ...] = ()
    partial_result: Any = None
    # The locale of the variant served; "" is the catalog default (variants without a locale).
    locale: str = ""
    # The question protocol's data fields. Shared by every face of a cached render: faces copy it, never change it.
    data: Mapping[str, Any] = field(default_factory=dict)
    # Which catalog text ``text`` is made of: one of ``TEXT_SOURCES``.
    text_source: str = TEXT_FROM_VARIANT
    # The upstream's own words, quoted at the end of ``text`` and ``markdown`` (``UPSTREAM_WORDS_LINE``).
    upstream_words: UpstreamWords | None = None

    @property
    def envelope_kind(self) -> str:
        return KIND_ENVELOPES[self.kind]

    @property
    def interactive(self) -> bool:
        """Rendered as a question, which is what the interactive-error rate counts."""
        return bool(self.question)

    @property
    def error_category(self) -> str:
        """The lower-case name the question protocol and the anatomy face use (``missing_parameter``,
        ``function_not_found``)."""
        return self.code.lower()


def render(
    snapshot: CatalogSnapshot,
    failure: Failure,
    *,
    variant: str | None = None,
    locale: str = "",
    locales: tuple[str, ...] = (),
    pick: float = 0.0,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> RenderedError:
    """Render ``failure`` with the catalog entry of its code.

    ``variant`` forces a variant by name (previews); otherwise ``pick`` in [0, 1) chooses one by weight.
    ``locale`` asks for one catalog locale exactly; ``locales`` are a client's language ranges, best first
    (``requested_locales``), matched against the locales the code has. Every text field is capped at
    ``max_chars`` without cutting a placeholder value; the rule's sentence and the upstream's quote follow the capped
    text, each within its own bound, so that neither crowds out the code's cause and instruction.
    """
    entry = snapshot.entry(failure.code)
    if locales and entry.locales:
        locale = choose_locale(entry.locales, locales)
    chosen = entry.variant(name=variant, locale=locale, pick=pick)
    # The same failure recurs (one tool, one missing parameter), and a snapshot never changes, so its renders
    # are cached with it. Failures carrying an unhashable partial result are rendered each time.
    key = (failure, chosen.name, chosen.locale, max_chars)
    try:
        cached: RenderedError | None = snapshot.render_cache.get(key)
    except TypeError:
        return _render(snapshot, failure, entry, chosen, max_chars)
    if cached is None:
        cached = _render(snapshot, failure, entry, chosen, max_chars)
        snapshot.render_cache.set(key, cached)
    return cached


def _render(
    snapshot: CatalogSnapshot, failure: Failure, entry: CodeEntry, chosen: VariantEntry, max_chars: int
) -> RenderedError:
    tool = safe_identifier(failure.tool_name) if failure.tool_name is not None else None
    params = tuple(_screen(p) for p in failure.parameters)
    hint = snapshot.hint(tool, params[0].name) if params else None
    words = _quotable(failure.upstream_words)
    values = _values(failure, entry, tool, params, hint, chosen.locale)
    values["upstream_detail"] = f'"{words.text}"' if words is not None else ""
    asked = _hint_questions(snapshot, failure, entry, tool, params) if not chosen.locale else ()

    message = fill_capped(chosen.message, values, max_chars)
    cause = fill_capped(chosen.cause, values, max_chars)
    instruction = fill_capped(chosen.instruction, values, max_chars)
    question, question_source = _question(chosen, hint, params, values, max_chars, asked)
    text_source = question_source if question and entry.kind == "needs_input" else TEXT_FROM_VARIANT
    text = _text(entry, chosen, hint, params, values, (message, cause, instruction, question), max_chars, asked)
    event_id = _event_id(failure.event_id)
    # A question stands alone (a helpful assistant asking, not a system reporting a failure); every other
    # text is led by its variant's header.
    header = "" if question and entry.kind == "needs_input" else chosen.header
    markdown = people_markdown(header, text, status_code=failure.status_code, event_id=event_id, specific=bool(params))
    if len(markdown) > max_chars:
        # The header, the 404 hint and the Event ID line count inside the cap (a model reads a short message whole):
        # the text gives up the room they take, cut the same way as any capped text.
        room = max(1, max_chars - (len(markdown) - len(text)))
        shorter = _text(entry, chosen, hint, params, values, None, room, asked)
        markdown = people_markdown(
            header, shorter, status_code=failure.status_code, event_id=event_id, specific=bool(params)
        )
    retry_after = failure.retry_after if failure.retry_after is not None else entry.retry_after_seconds
    sentence = _rule_sentence(failure, values, max_chars)
    if sentence:
        # The catalog's own words for what the failure's text says, as facts of fixed shapes: after the code's text,
        # and said even when the upstream's words are not quoted.
        text, markdown = f"{text}\n\n{sentence}", f"{markdown}\n\n{sentence}"
    if words is not None and values["upstream_detail"] not in text:
        # After the catalog's whole text (its cap is the catalog's, the quote has its own bound), so that the
        # upstream's words can neither crowd out nor stand in for the code's cause and instruction; unless a
        # template placed them ({upstream_detail}) and they fit within the cap, where they are said once.
        said = UPSTREAM_WORDS_LINE.format(upstream=words.upstream, text=words.text)
        text, markdown = f"{text}\n\n{said}", f"{markdown}\n\n{said}"

    return RenderedError(
        code=entry.code,
        kind=entry.kind,
        category=entry.category,
        header=chosen.header,
        variant=chosen.name,
        message=message,
        cause=cause,
        instruction=instruction,
        question=question,
        text=text,
        markdown=markdown,
        retryable=entry.retryable,
        system=entry.system,
        tool_name=tool,
        status_code=failure.status_code,
        jsonrpc_code=entry.jsonrpc_code,
        event_id=event_id,
        retry_after=retry_after if entry.retryable else None,
        alternatives=tuple(a for a in map(safe_identifier, failure.alternatives) if a != REDACTED),
        parameters=params,
        partial_result=safe_partial_result(failure.partial_result),
        locale=chosen.locale,
        data=MappingProxyType(_data(entry, tool, params, hint, failure, bool(question), values, max_chars)),
        text_source=text_source,
        upstream_words=words,
    )


def _rule_sentence(failure: Failure, values: dict[str, str], max_chars: int) -> str:
    """The rule's sentence filled with the captured facts and the failure's values; "" when it uses a placeholder
    that has no value (a sentence about a column needs the column's name)."""
    if not failure.rule_sentence or template_errors(failure.rule_sentence):
        return ""
    filled = {**values, **{name: value for name, value in failure.captured if name in FACT_PLACEHOLDERS}}
    if not all(filled.get(name) for name in template_placeholders(failure.rule_sentence)):
        return ""
    return fill_capped(failure.rule_sentence, filled, max_chars)


_NOT_IN_A_QUOTE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def _quotable(words: UpstreamWords | None) -> UpstreamWords | None:
    """``words`` held to the quote's shape whoever made them: the upstream's name an identifier, the text one line
    without control, invisible or bidirectional characters, its double quotes single (so none ends the quote early),
    within ``UPSTREAM_WORDS_MAX_CHARS``; None when nothing is left to quote."""
    if words is None:
        return None
    upstream = safe_identifier(words.upstream)
    shown = _NOT_IN_A_QUOTE.sub(" ", words.text[: UPSTREAM_WORDS_MAX_CHARS * 2]).replace('"', "'")
    text = " ".join(shown.split())
    if not text or upstream == REDACTED:
        return None
    if len(text) > UPSTREAM_WORDS_MAX_CHARS:
        text = text[: UPSTREAM_WORDS_MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return UpstreamWords(upstream, text)


def _text(
    entry: CodeEntry,
    chosen: VariantEntry,
    hint: HintEntry | None,
    params: tuple[ParameterFault, ...],
    values: dict[str, str],
    filled: tuple[str, str, str, str] | None,
    limit: int,
    asked: tuple[str, ...] = (),
) -> str:
    """The model-facing text under ``limit``: the question of an interactive code, else what happened, why and
    what to do next. ``filled`` holds the parts already filled under the full cap, when ``limit`` is that cap."""
    if filled is None:
        filled = (
            fill_capped(chosen.message, values, limit),
            fill_capped(chosen.cause, values, limit),
            fill_capped(chosen.instruction, values, limit),
            _question(chosen, hint, params, values, limit, asked)[0],
        )
    message, cause, instruction, question = filled
    if question and entry.kind == "needs_input":
        return question
    templates = (chosen.message, chosen.cause, chosen.instruction)
    return compose_capped(templates, (message, cause, instruction), values, limit)


def did_you_mean(name: str, known: Iterable[str], *, limit: int = 3) -> tuple[str, ...]:
    """The known names closest to ``name``, best first, for "did you mean" alternatives.

    Similar spellings come first (``get_wether`` → ``get_weather``); names that share the part after a
    namespace prefix (``weather.get_forecast`` for ``get_forecast``) are added after them, and names that contain a
    name of four characters or more (``git__git_status`` for ``git_status``): a shorter one is inside too many names
    to mean any of them.
    """
    candidates = list(dict.fromkeys(known))
    close = _close_spellings(name, candidates, limit)
    lowered = name.lower()
    for candidate in candidates:
        if len(close) >= limit:
            break
        tail = candidate.rsplit(".", 1)[-1].lower()
        contains = len(lowered) >= 4 and lowered in candidate.lower()
        if candidate not in close and lowered and (tail == lowered.rsplit(".", 1)[-1] or contains):
            close.append(candidate)
    return tuple(close)


# What separates a namespace from a name: the gateway's ``upstream__tool`` and dotted names.
_NAMESPACE = re.compile(r"^(.*(?:__|\.))([^.]*?)$")


def _close_spellings(name: str, candidates: list[str], limit: int, cutoff: float = 0.6) -> list[str]:
    """``difflib.get_close_matches``, except that two names in the same namespace are compared by what follows it:
    ``everything__add`` is not close to ``everything__echo`` because both start with ``everything__``."""
    own = _NAMESPACE.match(name)
    scored = []
    matcher = difflib.SequenceMatcher()
    for candidate in candidates:
        theirs = _NAMESPACE.match(candidate)
        same_space = own is not None and theirs is not None and own.group(1) == theirs.group(1)
        first, second = (own.group(2), theirs.group(2)) if same_space and own and theirs else (name, candidate)
        matcher.set_seqs(second, first)
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff and matcher.ratio() >= cutoff:
            scored.append((matcher.ratio(), candidate))
    scored.sort(key=lambda pair: -pair[0])
    return [candidate for _ratio, candidate in scored[:limit]]


def _screen(p: ParameterFault) -> ParameterFault:
    """The fault as the model may see it: the same screen whether it came from a tool's schema or an API caller."""
    parameter_type = safe_identifier(p.type) if p.type else ""
    return ParameterFault(
        name=safe_identifier(p.name),
        problem=p.problem if p.problem in ("missing", "invalid") else "invalid",
        description=safe_schema_text(p.description),
        type="" if parameter_type == REDACTED else parameter_type,
        expected_format=safe_schema_text(p.expected_format),
        minimum=_bound(p.minimum),
        maximum=_bound(p.maximum),
        received=_received(p.received),
    )


# A number is named only while it is short: a 300-digit integer is no help to anyone reading it. Received values
# and schema bounds alike, so neither can crowd the rest of a capped message out.
RECEIVED_MAX_CHARS = 24


def _received(value: object) -> int | float | bool | None:
    """A value the caller sent, if it is a boolean or a finite number of bounded length; else None."""
    if isinstance(value, bool):
        return value
    return _shown_number(value)


def _received_text(value: int | float | bool | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"  # as the caller wrote it, in JSON
    return _number(value)


def _bound(value: object) -> int | float | None:
    """A schema bound that is a finite number of bounded length, else None."""
    return _shown_number(value)


def _shown_number(value: object) -> int | float | None:
    """``value`` if it is a number a double holds whose text is at most ``RECEIVED_MAX_CHARS`` long, else None.

    The size is checked before the number becomes text: ``str()`` of an int past 4,300 digits raises ValueError.
    """
    if not is_json_number(value):
        return None
    return value if len(_number(value)) <= RECEIVED_MAX_CHARS else None


def _number(value: int | float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        value = int(value)
    return str(value)


# The word that joins the last two names of a list ("to and subject"), by a variant locale's language; the catalog
# default's is English.
_LIST_AND = {"": "and", "de": "und", "fr": "et"}


def _join_names(names: list[str], locale: str = "") -> str:
    if len(names) <= 1:
        return "".join(names)
    conjunction = _LIST_AND.get(locale.split("-", 1)[0].lower(), "and")
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def _values(
    failure: Failure,
    entry: CodeEntry,
    tool: str | None,
    params: tuple[ParameterFault, ...],
    hint: HintEntry | None,
    locale: str = "",
) -> dict[str, str]:
    first = params[0] if params else None
    status = failure.status_code
    values = {
        "tool_name": tool or "",
        "parameter": first.name if first else "",
        "parameters": _join_names([p.name for p in params], locale),
        "parameter_description": (hint and hint.description) or (first and first.description) or "",
        "parameter_type": (hint and hint.parameter_type) or (first and first.type) or "",
        "expected_format": (hint and hint.example) or (first and first.expected_format) or "",
        "minimum": _number(first.minimum) if first else "",
        "maximum": _number(first.maximum) if first else "",
        "status_code": str(status) if status else "",
        "status_text": _status_text(status),
        "event_id": _event_id(failure.event_id) or "",
        "alternatives": ", ".join(a for a in map(safe_identifier, failure.alternatives) if a != REDACTED),
        "retry_after": str(failure.retry_after if failure.retry_after is not None else entry.retry_after_seconds or ""),
        "service": safe_identifier(failure.service) if failure.service else "",
        "network_failure": NETWORK_FAILURES.get(failure.network_failure or "", ""),
        "received": _received_text(first.received) if first else "",
    }
    if values["parameter_description"] == "" and first:
        values["parameter_description"] = f"a value for {first.name}"
    return values


_STATUS_PHRASES = {status.value: status.phrase for status in HTTPStatus}


def _status_text(status: int | None) -> str:
    return _STATUS_PHRASES.get(status, "") if status else ""


# Sentry event IDs are 32 hex digits, which may start with a digit (so they are not identifier-shaped).
_HEX_EVENT_ID = re.compile(r"[0-9a-fA-F]{8,64}")


def _event_id(event_id: str | None) -> str | None:
    if not event_id:
        return None
    if isinstance(event_id, str) and _HEX_EVENT_ID.fullmatch(event_id):
        return event_id
    screened = safe_identifier(event_id)
    return None if screened == REDACTED else screened


def _question(
    chosen: VariantEntry,
    hint: HintEntry | None,
    params: tuple[ParameterFault, ...],
    values: dict[str, str],
    max_chars: int,
    asked: tuple[str, ...] = (),
) -> tuple[str, str]:
    """The question and where it comes from (a ``TEXT_FROM_*`` name); ``("", "")`` when nothing asks."""
    # A hint's question asks for one missing parameter; several missing parameters whose hints all ask get one
    # question made of theirs (``asked``), others the code's question, which names them all; an invalid value gets
    # the code's question about its format. A hint's question is written in the catalog default's language: a
    # variant of another locale asks its own.
    asks_for_one = len(params) == 1 and params[0].problem == "missing" and not chosen.locale
    if asked and chosen.question:  # only a code that asks questions asks this one
        combined = _joined_question(asked)
        if len(combined) <= max_chars:
            return combined, TEXT_FROM_HINT_QUESTIONS
    if hint and hint.question and asks_for_one:
        template, source = hint.question, TEXT_FROM_HINT_QUESTION
    else:
        template, source = chosen.question, TEXT_FROM_VARIANT_QUESTION
    question = fill_capped(template, values, max_chars) if template else ""
    return (question, source) if question else ("", "")


# A hint's question as the question protocol writes it: "Question: Who should I send this email to? Please provide
# …". Its first
# sentence, without the label and the question mark, is what a question about several parameters is made of.
_HINT_QUESTION = re.compile(r"Question:\s*(?P<asks>[^?]+?)\?(?:\s|$)")
# Words that open a question and are written in lower case inside a sentence ("…, and what should …").
_QUESTION_WORDS = frozenset(
    ("who", "what", "which", "where", "when", "why", "how", "should", "do", "does", "is", "are", "can", "could")
)


def _hint_questions(
    snapshot: CatalogSnapshot, failure: Failure, entry: CodeEntry, tool: str | None, params: tuple[ParameterFault, ...]
) -> tuple[str, ...]:
    """What each hint asks, when several parameters are missing and every one has a hint with a question; else ()."""
    if len(params) < 2 or any(p.problem != "missing" for p in params):
        return ()
    asked = []
    for param in params:
        hint = snapshot.hint(tool, param.name)
        if hint is None or not hint.question:
            return ()
        text = fill_capped(hint.question, _values(failure, entry, tool, (param,), hint), 1 << 16)
        match = _HINT_QUESTION.match(text)
        if match is None:
            return ()
        asked.append(match["asks"].strip())
    return tuple(asked)


def _joined_question(asked: tuple[str, ...]) -> str:
    """What several hints ask, as one question: "Question: Who should I send this email to, and what should be
    the subject line of this email?"."""
    first, *rest = asked
    rest = [_in_sentence(part) for part in rest]
    listed = ", ".join([first, *rest[:-1]])
    return f"Question: {listed}, and {rest[-1]}?"


def _in_sentence(part: str) -> str:
    word = part.split(" ", 1)[0]
    return part[0].lower() + part[1:] if word.lower() in _QUESTION_WORDS else part


def _tool_optional(failure: Failure) -> tuple[str, ...]:
    """The tool's optional parameter names that are names by the registry's rule; the others are left out."""
    return tuple(n for n in map(safe_identifier, failure.optional_parameters) if n != REDACTED)


def _tool_guidance(failure: Failure) -> str:
    """The tool's sentence about itself, if it reads as schema text (one short line of plain words); else ""."""
    return safe_schema_text(failure.guidance)


def _data(
    entry: CodeEntry,
    tool: str | None,
    params: tuple[ParameterFault, ...],
    hint: HintEntry | None,
    failure: Failure,
    interactive: bool,
    values: dict[str, str],
    max_chars: int,
) -> dict[str, Any]:
    """The ``data`` fields of the question protocol: what a client's retry logic reads.

    ``setup_url``, ``action_required``, ``optional_parameters`` and ``guidance`` come from the code's catalog
    entry (filled only with server-controlled placeholder values). A question's ``optional_parameters`` and
    ``guidance`` the entry leaves unset come from the tool itself (``Failure``), through the same screens as its
    schema's names and text; the entry overrides each of them.
    """
    data: dict[str, Any] = {
        "retry_capable": entry.retryable or interactive,
        "error_category": entry.code.lower(),
    }
    missing = [p for p in params if p.problem == "missing"]
    invalid = [p for p in params if p.problem == "invalid"]
    param_type = (hint and hint.parameter_type) or (params[0].type if params else "")
    if len(missing) == 1 and not invalid:
        data["required_parameter"] = missing[0].name
    optional = (entry.optional_parameters or _tool_optional(failure)) if missing else ()
    guidance = ""
    if missing:
        # The tool's sentence goes with the optional parameters it explains, as in the question protocol's
        # example: a question about a tool that takes nothing else says all in its question and required parameter.
        guidance = fill_capped(entry.guidance, values, max_chars) if entry.guidance else ""
        if not entry.guidance and optional:
            guidance = _tool_guidance(failure)
    if missing and (len(missing) > 1 or invalid or optional or entry.guidance or guidance):
        # Required parameters are listed beside the optional ones and the guidance, so a client asks for all at once.
        data["required_parameters"] = [p.name for p in missing]
    if optional:
        named = {p.name for p in missing}
        data["optional_parameters"] = [n for n in optional if n not in named]
    if guidance:
        data["guidance"] = guidance
    if invalid:
        data["parameter"] = invalid[0].name
        expected = (hint and hint.example) or invalid[0].expected_format
        if expected:
            data["expected_format"] = expected
        data["provided_value"] = REDACTED
    if param_type and len(params) == 1:
        data["parameter_type"] = param_type
    if failure.service:
        data["service"] = safe_identifier(failure.service)
    if entry.setup_url and all(values.get(name) for name in template_placeholders(entry.setup_url)):
        # Only a complete link: "/integrations/{service}" without a service would point nowhere.
        setup_url = fill_capped(entry.setup_url, values, max_chars)
        # A redacted name has no place in a link: the field is left out rather than pointing somewhere wrong.
        if setup_url and REDACTED not in setup_url:
            data["setup_url"] = setup_url
    if entry.action_required:
        data["action_required"] = entry.action_required
    if tool:
        data["tool_name"] = tool
    return data
