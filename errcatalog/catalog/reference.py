"""The catalog as agents read it: each code's reference page, and each interactive code's question as a prompt.

Pure over a ``CatalogSnapshot``: no ORM, no I/O. ``mcpserver.reference`` serves both over MCP, as resources
(``errcatalog://codes/{CODE}``) and prompts; anything else could serve them the same way.

- ``catalog_reference(snapshot)`` lists every active code (title, description, and a digest of everything its
  page is made from, so that a server can tell which codes changed between snapshots); its ``page(code)`` gives the
  long explanation, retry advice and an example of each face (rendered from the locale-less variant that serves
  most, with ``preview_samples``' sample inputs), as markdown and as JSON.
- ``question_prompt`` renders an interactive code's question from a client's prompt arguments, through the same
  renderer a failing call goes through: the arguments become the failure's parameter, service and tool, screened
  as any tool schema's values are, so a client shows people exactly the question the model would get.

The URI is the only way in: ``code_of_uri`` accepts ``errcatalog://codes/`` followed by a name of the code
vocabulary and nothing else (no path, query, fragment, percent-encoding or second segment), so a read can look up
an active code of the snapshot and nothing more.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from errcatalog.caching import BoundedCache
from errcatalog.catalog.preview_samples import SAMPLE_TOOL, SAMPLE_UNKNOWN_TOOL, code_preview
from errcatalog.render import Failure, ParameterFault, render
from errcatalog.render.entries import CatalogSnapshot, CodeEntry
from errcatalog.safety import PLACEHOLDERS, template_placeholders
from errcatalog.vocabulary import CODE_PATTERN, is_json_number

URI_SCHEME = "errcatalog"
URI_PREFIX = "errcatalog://codes/"
URI_TEMPLATE = "errcatalog://codes/{code}"
MARKDOWN = "text/markdown"
JSON = "application/json"
# Pages of one snapshot kept rendered: enough for every code of a large catalog.
PAGE_CACHE_SIZE = 1024
# Codes are short names; a longer "code" is no code and is refused before any lookup.
CODE_MAX_CHARS = 64
_CODE = re.compile(CODE_PATTERN.removeprefix("^").removesuffix("$"))
# A listed resource's description: the explanation's first sentence, kept to one line of a client's list.
DESCRIPTION_MAX_CHARS = 200
_FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.DOTALL)

# Question placeholders a prompt's caller may give: the facts of a failure a client knows. The others
# (``received``, ``event_id``, ``status_text``, ``network_failure``) are the server's own and stay empty in a
# prompt; the renderer then leaves out the sentence that would name them, as it does for a failing call.
PROMPT_ARGUMENTS = (
    "tool_name",
    "parameter",
    "parameters",
    "parameter_description",
    "parameter_type",
    "expected_format",
    "minimum",
    "maximum",
    "service",
    "alternatives",
    "retry_after",
)
# Without these a question has nobody to ask about.
_REQUIRED_ARGUMENTS = frozenset({"parameter", "parameters", "service"})
# Argument values longer than this are no name, format or number; refused before rendering.
ARGUMENT_MAX_CHARS = 500
# Parameters named in one ``parameters`` argument: as many as one call's input schema sensibly misses.
MAX_PARAMETERS = 20
# As the catalog's own retry_after_seconds: at most a day.
MAX_RETRY_AFTER_SECONDS = 86_400


class InvalidCodeUri(ValueError):
    """A URI of our scheme that does not name a code (traversal, a query, a lower-case name...)."""


class PromptArgumentError(ValueError):
    """A prompt's arguments cannot be rendered: ``argument`` (one of ours, never the caller's) is missing or bad."""

    def __init__(self, argument: str, *, missing: bool) -> None:
        super().__init__(argument)
        self.argument = argument
        self.missing = missing


# --- URIs --------------------------------------------------------------------------------------------------


def code_uri(code: str) -> str:
    return f"{URI_PREFIX}{code}"


def is_catalog_uri(uri: str) -> bool:
    """Whether ``uri`` is of our scheme (whatever follows it); the other schemes belong to someone else."""
    return uri.partition(":")[0].lower() == URI_SCHEME


def code_of_uri(uri: str) -> str:
    """The code ``uri`` names. Raises ``InvalidCodeUri`` for anything but ``errcatalog://codes/`` and a code name."""
    code = uri.removeprefix(URI_PREFIX)
    if code == uri or len(code) > CODE_MAX_CHARS or _CODE.fullmatch(code) is None:
        raise InvalidCodeUri(uri)
    return code


# --- Reference pages ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CodeListing:
    """One code as resource lists show it, with a digest of everything its page is made from."""

    code: str
    uri: str
    title: str
    description: str
    digest: str  # changes whenever the code's page would (and, rarely, when it would not: then a needless notice)


@dataclass(frozen=True, slots=True)
class CodePage:
    """What a read of one code returns: the same page as markdown and as JSON."""

    code: str
    uri: str
    markdown: str
    document: Mapping[str, Any]
    json_text: str


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str
    required: bool


@dataclass(frozen=True, slots=True)
class QuestionPrompt:
    """An interactive code's question template as a prompt: its name is the code, its arguments the placeholders."""

    name: str
    title: str
    description: str
    arguments: tuple[PromptArgument, ...]


def _page_cache() -> BoundedCache[str, CodePage]:
    return BoundedCache("reference.pages", max_entries=PAGE_CACHE_SIZE)


@dataclass(frozen=True, slots=True)
class CatalogReference:
    """Everything agents can read of one snapshot: listings and prompts by code, in code order, and each code's
    page, rendered when first read (every face of every variant: a whole catalog's pages at once would hold up
    whoever asked for one)."""

    snapshot: CatalogSnapshot = field(repr=False, compare=False)
    codes: Mapping[str, CodeListing]
    prompts: Mapping[str, QuestionPrompt]
    max_chars: int
    legacy_codes: bool
    _pages: BoundedCache[str, CodePage] = field(default_factory=_page_cache, init=False, compare=False, repr=False)

    def page(self, code: str) -> CodePage | None:
        """The page of ``code``; None when the snapshot has no such active code."""
        if code not in self.codes:
            return None
        page = self._pages.get(code)
        if page is None:
            page = _code_page(self.snapshot, self.snapshot.codes[code], self.max_chars, self.legacy_codes)
            self._pages.set(code, page)
        return page

    @property
    def listing_digest(self) -> str:
        """Changes exactly when a resource list would (a code added, removed, retitled or redescribed)."""
        return _digest([(c.uri, c.title, c.description) for c in self.codes.values()])

    @property
    def prompts_digest(self) -> str:
        """Changes exactly when a prompt list would."""
        return _digest(
            [
                (p.name, p.title, p.description, [(a.name, a.description, a.required) for a in p.arguments])
                for p in self.prompts.values()
            ]
        )


def catalog_reference(snapshot: CatalogSnapshot, *, max_chars: int, legacy_codes: bool = False) -> CatalogReference:
    """The listings and prompts of every active code of ``snapshot``; pages follow on demand (``page``).

    ``max_chars`` and ``legacy_codes`` are the endpoint's settings, so the examples are what a client would get.
    """
    # A page's examples render the sample failures (``preview_samples``), which a hint of their tool can word.
    sample_hints = sorted(
        (key, repr(hint)) for key, hint in snapshot.hints.items() if key[0] in (SAMPLE_TOOL, SAMPLE_UNKNOWN_TOOL)
    )
    codes: dict[str, CodeListing] = {}
    prompts: dict[str, QuestionPrompt] = {}
    for code in sorted(snapshot.codes):
        entry = snapshot.codes[code]
        if not entry.active or not entry.variants:
            continue
        codes[code] = CodeListing(
            code=code,
            uri=code_uri(code),
            title=f"{code} ({entry.category})",
            description=_description(entry),
            # ``locales`` is derived from the variants, and a set's order is no content.
            digest=_digest([repr(dataclasses.replace(entry, locales=frozenset())), sample_hints, max_chars]),
        )
        prompt = _question_prompt(entry)
        if prompt is not None:
            prompts[code] = prompt
    return CatalogReference(
        snapshot=snapshot,
        codes=MappingProxyType(codes),
        prompts=MappingProxyType(prompts),
        max_chars=max_chars,
        legacy_codes=legacy_codes,
    )


def retry_advice(entry: CodeEntry) -> str:
    """What a client's retry logic should do with a failure of this code, from the code's own fields."""
    if entry.kind == "needs_input":
        return (
            "Do not retry on your own: put the question to the user, then call the tool again with their answer. "
            "Clients retry at most 3 times."
        )
    if entry.retryable and entry.retry_after_seconds:
        return (
            f"Retryable: call again after the wait the error gives (retry_after_seconds), "
            f"{entry.retry_after_seconds} seconds when it gives none."
        )
    if entry.retryable:
        return "Retryable: the same call may succeed when made again; wait a little longer before each new attempt."
    if entry.system:
        return (
            "Not retryable: a system error that repeating the call cannot fix. Tell the user, with the Event ID, "
            "that the service has a problem."
        )
    return "Not retryable as it is: change the call as the instruction says before calling again."


def _code_page(snapshot: CatalogSnapshot, entry: CodeEntry, max_chars: int, legacy_codes: bool) -> CodePage:
    previews = code_preview(snapshot, entry.code, max_chars=max_chars, legacy_codes=legacy_codes)
    # The example comes from the locale-less variant that serves the largest share (the first such on a tie).
    example = max(
        (p for p in previews if not p.variant.locale),
        key=lambda p: (p.variant.active, p.variant.weight),
        default=previews[0],
    )
    live = [v for v in entry.variants if v.active and v.weight > 0]
    document: dict[str, Any] = {
        "uri": code_uri(entry.code),
        "code": entry.code,
        "category": entry.category,
        "kind": entry.kind,
        "retryable": entry.retryable,
        "retry_after_seconds": entry.retry_after_seconds,
        "http_statuses": list(entry.http_statuses),
        "jsonrpc_code": entry.jsonrpc_code,
        "system": entry.system,
        "doc_url": entry.doc_url,
        "explanation": entry.explanation,
        "retry_advice": retry_advice(entry),
        "variants": [
            {
                "name": v.name,
                "locale": v.locale,
                "share": round(v.weight / sum(w.weight for w in live if w.locale == v.locale), 4) if v in live else 0.0,
            }
            for v in entry.variants
        ],
        "example": {
            "variant": example.variant.name,
            "locale": example.variant.locale,
            "faces": {face.key: face.output for face in example.faces},
        },
    }
    json_text = json.dumps(document, indent=2, ensure_ascii=False)
    markdown = _markdown(entry, document, example.faces)
    return CodePage(
        code=entry.code,
        uri=document["uri"],
        markdown=markdown,
        document=MappingProxyType(document),
        json_text=json_text,
    )


def _description(entry: CodeEntry) -> str:
    explanation = " ".join(entry.explanation.split())
    match = _FIRST_SENTENCE.match(explanation)
    sentence = match.group(1) if match else explanation
    if len(sentence) > DESCRIPTION_MAX_CHARS:
        sentence = sentence[: DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"
    return sentence or f"The catalog's {entry.code} error."


def _markdown(entry: CodeEntry, document: Mapping[str, Any], faces: Any) -> str:
    kind = "needs input (a question for the user)" if entry.kind == "needs_input" else "error"
    facts = [f"**Category:** {entry.category}", f"**Kind:** {kind}"]
    if entry.jsonrpc_code is not None:
        facts.append(f"**JSON-RPC code:** {entry.jsonrpc_code}")
    if entry.http_statuses:
        facts.append(f"**HTTP status:** {', '.join(map(str, entry.http_statuses))}")
    facts.append(f"**System error:** {'yes (reported with an Event ID)' if entry.system else 'no'}")
    lines = [f"# {entry.code}", "", " · ".join(facts), ""]
    if entry.explanation:
        lines += [entry.explanation, ""]
    if entry.doc_url:
        lines += [f"More: {entry.doc_url}", ""]
    lines += ["## Retry advice", "", document["retry_advice"], ""]
    example = document["example"]
    locale = f", locale {example['locale']}" if example["locale"] else ""
    lines += [
        "## What a client gets",
        "",
        f"Each face as the catalog renders it (variant {example['variant']}{locale}, sample inputs).",
        "",
    ]
    for face in faces:
        fence = "text" if isinstance(face.output, str) else "json"
        lines += [f"### {face.label}", "", f"```{fence}", face.text, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode()).hexdigest()


# --- Question prompts --------------------------------------------------------------------------------------


def _question_prompt(entry: CodeEntry) -> QuestionPrompt | None:
    """The prompt of an interactive code whose active variants ask a question; None for any other code."""
    questions = [v.question for v in entry.variants if v.active and v.question]
    if entry.kind != "needs_input" or not questions:
        return None
    used = {name for question in questions for name in template_placeholders(question)}
    names = ["tool_name", *(n for n in PROMPT_ARGUMENTS if n in used and n != "tool_name")]
    arguments = tuple(
        PromptArgument(
            name=name,
            description=_argument_description(name),
            required=name in _REQUIRED_ARGUMENTS,
        )
        for name in names
    )
    return QuestionPrompt(
        name=entry.code,
        title=f"The {entry.code} question",
        description=(
            f"The question the model gets when a tool call fails with {entry.code}, for people to see as the model "
            f"does. {_description(entry)}"
        ),
        arguments=arguments,
    )


def _argument_description(name: str) -> str:
    if name == "tool_name":
        return "The tool that was called (its parameter hints may word the question); optional."
    if name == "parameters":
        return "The names of the missing parameters, separated by commas (e.g. to, subject)."
    return PLACEHOLDERS[name][0].upper() + PLACEHOLDERS[name][1:] + "."


def question_prompt(
    snapshot: CatalogSnapshot,
    prompt: QuestionPrompt,
    arguments: Mapping[str, str],
    *,
    locales: tuple[str, ...] = (),
    max_chars: int,
) -> str:
    """``prompt``'s question rendered from ``arguments`` as a failing call renders it, in the client's locale.

    Raises ``PromptArgumentError`` for a required argument that is missing or empty, or a value that is too long
    or not a number where one is expected. Names are screened by the renderer: one outside the name vocabulary
    comes out as ``[REDACTED]``.
    """
    known = {a.name for a in prompt.arguments}
    values = {name: str(value).strip() for name, value in arguments.items() if name in known}
    for argument in prompt.arguments:
        value = values.get(argument.name, "")
        if len(value) > ARGUMENT_MAX_CHARS:
            raise PromptArgumentError(argument.name, missing=False)
        if argument.required and not value:
            raise PromptArgumentError(argument.name, missing=True)
    failure = Failure(
        code=prompt.name,
        tool_name=values.get("tool_name") or None,
        parameters=_parameters(prompt.name, values),
        service=values.get("service") or None,
        retry_after=_seconds(values.get("retry_after", "")),
        alternatives=tuple(a.strip() for a in values.get("alternatives", "").split(",") if a.strip()),
    )
    rendered = render(snapshot, failure, locales=locales, max_chars=max_chars)
    return rendered.question or rendered.text


def _parameters(code: str, values: Mapping[str, str]) -> tuple[ParameterFault, ...]:
    problem = "invalid" if "INVALID" in code else "missing"
    names = [n.strip() for n in values.get("parameters", "").split(",") if n.strip()]
    if len(names) > MAX_PARAMETERS:
        raise PromptArgumentError("parameters", missing=False)
    if values.get("parameter"):
        names = [values["parameter"], *(n for n in names if n != values["parameter"])]
    if not names:
        return ()
    # The details describe the parameter at fault, the first one (as a failing call's first missing parameter).
    first = ParameterFault(
        name=names[0],
        problem=problem,
        description=values.get("parameter_description", ""),
        type=values.get("parameter_type", ""),
        expected_format=values.get("expected_format", ""),
        minimum=_number(values, "minimum"),
        maximum=_number(values, "maximum"),
    )
    return (first, *(ParameterFault(name=name, problem=problem) for name in names[1:]))


def _number(values: Mapping[str, str], name: str) -> int | float | None:
    value = values.get(name, "")
    if not value:
        return None
    try:
        number = int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        raise PromptArgumentError(name, missing=False) from None
    if not is_json_number(number):  # NaN, the infinities and integers no double holds are no bound
        raise PromptArgumentError(name, missing=False)
    return number


def _seconds(value: str) -> int | None:
    if not value:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_RETRY_AFTER_SECONDS:
        raise PromptArgumentError("retry_after", missing=False)
    return int(value)
