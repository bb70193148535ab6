"""Template lint: the rules for writing error text a model can act on, and the question protocol's shape of a
question, over every variant and hint of a catalog.

A template that breaks one still renders, so these are warnings, shown to the person who wrote it: in admin beside
the variant, by ``catalog_import`` and by ``manage.py catalog_lint`` (which CI runs over the shipped catalog, which
has none). What must never go live is a row rule instead (``errcatalog.catalog.models``: a question for a
secret-looking parameter), refused by every writer.

The rules, each with its name as the command prints it:

- ``no-instruction``: the variant does not say what to do next (a model that is not told what to do guesses).
- ``over-cap``: a text is longer than the cap once its placeholders hold the longest values they may take, so
  the renderer would cut it (a model reads a short message whole; the cap keeps it under 500 characters).
- ``raw-status`` and ``exception-name``: an HTTP status number or a Python exception's name in model-facing text
  (the model cannot act on status codes and tracebacks).
- ``generic``: phrasing that tells the model nothing ("an error occurred", "invalid parameter", or an instruction
  that is only a bare label such as "Not found").
- ``question``: an interactive code's question (or a hint's) that does not start with ``Question:`` (``Frage:``
  and the like in another locale) or whose first sentence does not end with ``?`` (the question protocol: clients
  recognise a question by them).
- ``unprovided-placeholder``: a placeholder that no failure of the code fills, so its sentence is never shown.

Pure: no ORM, no I/O. It reads a catalog document (``errcatalog.catalog.document``), or one row's values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from errcatalog.safety import PLACEHOLDERS, SCHEMA_TEXT_MAX_CHARS, fill_capped, template_errors, template_placeholders
from errcatalog.vocabulary import TOOL_NAME_MAX_LENGTH

DocPath = tuple[str | int, ...]
# What a row's rules find: the field, the rule's name, and the sentence the writer reads.
RowFinding = tuple[str, str, str]

VARIANT_FIELDS = ("message", "cause", "instruction", "question")

# The longest value each placeholder can take, as the renderer builds them (``errcatalog.render.core._values``):
# names are tool-name vocabulary (128 characters), schema text is cut at 200, a received number at 24 digits, and
# lists hold the three names ``did_you_mean`` offers (missing parameters: three as well, which covers nearly every
# tool; a longer list is cut whole).
_NAME = "n" * TOOL_NAME_MAX_LENGTH
_THREE_NAMES = ", ".join([_NAME] * 3)
LONGEST_VALUES: Mapping[str, str] = {
    "tool_name": _NAME,
    "parameter": _NAME,
    "parameters": f"{_NAME}, {_NAME} and {_NAME}",
    "parameter_description": "d" * SCHEMA_TEXT_MAX_CHARS,
    "parameter_type": _NAME,
    "expected_format": "e" * SCHEMA_TEXT_MAX_CHARS,
    "minimum": "9" * 24,
    "maximum": "9" * 24,
    "status_code": "599",
    "status_text": max((s.phrase for s in HTTPStatus), key=len),
    "event_id": "f" * 32,
    "alternatives": _THREE_NAMES,
    "retry_after": "86400",
    "service": _NAME,
    "network_failure": "Connection failed",
    "received": "9" * 24,
    # The screened quote, at the gateway's default bound, in its quotes.
    "upstream_detail": '"' + "w" * 300 + '"',
    # What a rule's pattern captures, at the most its shape keeps (errcatalog.render.patterns.FACT_SHAPES).
    "name": "n" * 80,
    "path": "p" * 297,
    "expected": "e" * 314,
}

# The categories whose failures name the parameter at fault (besides interactive codes): a refusal (authentication)
# and an unreachable place (network) name the one whose value they quote back.
_PARAMETER_CATEGORIES = frozenset(
    {"user_input", "validation", "client", "tool", "protocol", "not_found", "authentication", "network"}
)
_PARAMETER_PLACEHOLDERS = frozenset(
    {
        "parameter",
        "parameters",
        "parameter_description",
        "parameter_type",
        "expected_format",
        "minimum",
        "maximum",
        "received",
    }
)

# "HTTP 503", "status 404", "status code: 500", "error 502", "503 Service Unavailable", and the placeholder.
_RAW_STATUS = re.compile(
    r"\b(?:HTTP|status(?:\s+code)?|error|code)\s*:?\s*[1-5]\d\d\b"
    r"|\b[1-5]\d\d\s+(?:" + "|".join(re.escape(s.phrase) for s in HTTPStatus) + r")\b"
    r"|\{status_code\}",
    re.IGNORECASE,
)
# ValueError, requests.exceptions.ConnectionError, KeyError, a "Traceback (most recent call last)".
_EXCEPTION_NAME = re.compile(r"\b(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b")
_GENERIC_PHRASES = re.compile(r"\ban error (?:has )?occurred\b|\binvalid parameters?\b", re.IGNORECASE)
# Bare labels that read as an instruction but name no next step, where the model needs one.
_BARE_LABELS = frozenset(
    {"function not found", "invalid arguments", "timed out", "rate limited", "service unavailable", "not found"}
)
# The label a question starts with: "Question:" in the catalog default's language (English), a word and a colon in
# another ("Frage:").
_QUESTION_LABEL = {"": re.compile(r"Question:\s"), "en": re.compile(r"Question:\s")}
_ANY_LABEL = re.compile(r"\w+\s?:\s")
_FIRST_SENTENCE = re.compile(r".*?[.?!](?=\s|$)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Finding:
    """One warning about a catalog document: where (a document path), which rule, and what to do about it."""

    path: DocPath
    rule: str
    message: str


def provided_placeholders(code: Mapping[str, Any], rules: Iterable[Mapping[str, Any]] = ()) -> frozenset[str]:
    """The placeholders that some failure of ``code`` fills, judged from the code and the rules that lead to it.

    The renderer fills a value from the failure; who builds failures of which code is the server's own code
    (``mcpserver.pipeline``, the gateway, the tools' exceptions), so this follows what they carry: every failure
    names its tool; parameters to interactive, input, not-found, refusal and network codes; an event ID to system
    codes; a retry-after to retryable ones; a status to codes with HTTP statuses or a status rule; a network failure
    to network codes or a transport rule (or a rule on an upstream's timeout or connection kind); alternatives to tool
    and not-found codes; a service to interactive, authentication, configuration and provider codes.
    """
    category, kind = code.get("category"), code.get("kind")
    rules = [r for r in rules if r.get("code") == code.get("code")]
    # An upstream's words can come with any code a rule gives its failures.
    provided = {"tool_name", "upstream_detail"}
    if kind == "needs_input" or category in _PARAMETER_CATEGORIES:
        provided |= _PARAMETER_PLACEHOLDERS
    if code.get("system"):
        provided.add("event_id")
    if code.get("retryable") or code.get("retry_after_seconds"):
        provided.add("retry_after")
    if code.get("http_statuses") or any(r.get("status_min") or r.get("status_max") for r in rules):
        provided |= {"status_code", "status_text"}
    if category == "network" or any(r.get("transport") or r.get("kind") in ("timeout", "connection") for r in rules):
        provided.add("network_failure")
    if category in ("tool", "not_found"):
        provided.add("alternatives")
    if kind == "needs_input" or category in ("authentication", "configuration", "provider"):
        provided.add("service")
    return frozenset(provided)


def variant_findings(
    code: Mapping[str, Any], variant: Mapping[str, Any], rules: Iterable[Mapping[str, Any]] = (), *, max_chars: int
) -> list[RowFinding]:
    """The warnings about one variant of ``code`` (a document's code entry, or a row's values)."""
    findings: list[RowFinding] = []
    texts = {name: variant.get(name) or "" for name in VARIANT_FIELDS}
    if any(template_errors(text) for text in texts.values()):
        return findings  # a template that does not parse is refused before it is linted
    if not texts["instruction"].strip():
        findings.append(
            (
                "instruction",
                "no-instruction",
                "Say what to do next (retry, ask the user, use another tool): without an instruction the model "
                "guesses.",
            )
        )
    provided = provided_placeholders(code, rules)
    for name, text in texts.items():
        if text:
            findings.extend((name, rule, message) for rule, message in text_findings(text, max_chars=max_chars))
            findings.extend((name, "unprovided-placeholder", m) for m in _unprovided(text, code, provided))
    if code.get("kind") == "needs_input":
        locale = str(variant.get("locale") or "")
        findings.extend(("question", "question", message) for message in question_findings(texts["question"], locale))
    return findings


def hint_findings(hint: Mapping[str, Any], *, max_chars: int) -> list[RowFinding]:
    """The warnings about a parameter hint's question (written in the catalog default's language)."""
    question = hint.get("question") or ""
    if not question or template_errors(question):
        return []
    findings = [("question", rule, message) for rule, message in text_findings(question, max_chars=max_chars)]
    findings.extend(("question", "question", message) for message in question_findings(question, ""))
    return findings


def text_findings(text: str, *, max_chars: int) -> list[tuple[str, str]]:
    """The rules about one model-facing template, as (rule, message)."""
    findings: list[tuple[str, str]] = []
    longest = fill_capped(text, LONGEST_VALUES, 1 << 20)
    if len(longest) > max_chars:
        findings.append(
            (
                "over-cap",
                f"{len(longest)} characters once its placeholders hold the longest values they may take, over the "
                f"cap of {max_chars}: shorten it, or the end is cut.",
            )
        )
    if match := _RAW_STATUS.search(text):
        findings.append(
            (
                "raw-status",
                f"{match.group(0)!r} is an HTTP status: say what it means for the model instead; clients "
                "get the number in the error's data.",
            )
        )
    if match := _EXCEPTION_NAME.search(text):
        findings.append(("exception-name", f"{match.group(0)!r} names an exception: describe the failure in words."))
    if match := _GENERIC_PHRASES.search(text):
        findings.append(("generic", f"{match.group(0)!r} is generic: say what went wrong and what to do."))
    elif text.strip().rstrip(".!").lower() in _BARE_LABELS:
        findings.append(("generic", f"{text.strip()!r} is a label, not a next step: say what to do."))
    return findings


def question_findings(question: str, locale: str) -> list[str]:
    """What keeps ``question`` from reading as the question protocol's questions do, in a variant of ``locale``."""
    if not question.strip():
        return ["An interactive code asks a question: write one, e.g. 'Question: Who should I send this to?'."]
    findings = []
    label = _QUESTION_LABEL.get(locale.split("-", 1)[0].lower(), _ANY_LABEL) if locale else _QUESTION_LABEL[""]
    if not label.match(question):
        expected = "'Question:'" if label is not _ANY_LABEL else "its language's label and a colon ('Frage:')"
        findings.append(f"Start with {expected}, as clients recognise a question by it.")
    first = _FIRST_SENTENCE.match(question.strip())
    if first is None or not first.group(0).endswith("?"):
        findings.append("End the first sentence with '?': ask, then say what to provide.")
    return findings


def _unprovided(text: str, code: Mapping[str, Any], provided: frozenset[str]) -> list[str]:
    return [
        f"{{{name}}}: no failure of {code.get('code') or 'this code'} fills it, so its sentence is never shown."
        for name in template_placeholders(text)
        if name in PLACEHOLDERS and name not in provided
    ]


def lint_catalog(doc: Mapping[str, Any], *, max_chars: int) -> list[Finding]:
    """Every warning about a (validated) catalog document, in document order."""
    findings: list[Finding] = []
    rules: Sequence[Mapping[str, Any]] = [r for r in doc.get("rules", ()) if r.get("active", True)]
    for i, code in enumerate(doc.get("codes", ())):
        for j, variant in enumerate(code.get("variants", ())):
            at: DocPath = ("codes", i, "variants", j)
            for name, rule, message in variant_findings(code, variant, rules, max_chars=max_chars):
                findings.append(Finding((*at, name), rule, message))
    for i, hint in enumerate(doc.get("hints", ())):
        for name, rule, message in hint_findings(hint, max_chars=max_chars):
            findings.append(Finding(("hints", i, name), rule, message))
    return findings
