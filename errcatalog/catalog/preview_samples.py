"""Sample inputs for a code, and every face of every variant rendered with them: the admin's preview.

Pure: no ORM, no I/O. The admin builds the snapshot from the saved rows and passes it in, with the tools the server
serves (``SampleTool``): the sample call is one of them missing one of its own parameters, and each variant shows,
tool by tool, which catalog text the model gets (``tool_texts``; the renderer decides, ``RenderedError.text_source``).
Each face also carries the body of the ``POST /api/v1/render/`` request that reproduces it
(``errcatalog.catalog.previews`` serves both), so the browser can re-render an unsaved draft of the same variant with
the same sample inputs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from errcatalog.catalog.previews import FaceOptions, face_output
from errcatalog.render import Failure, ParameterFault, RenderedError, render
from errcatalog.render.core import (
    TEXT_FROM_HINT_QUESTION,
    TEXT_FROM_HINT_QUESTIONS,
    TEXT_FROM_VARIANT,
    TEXT_FROM_VARIANT_QUESTION,
)
from errcatalog.render.entries import CatalogSnapshot, CodeEntry, VariantEntry
from errcatalog.safety import template_placeholders

SAMPLE_TOOL = "send_email"
# A misspelt tool name and the close names offered instead, as a "did you mean" answer shows them.
SAMPLE_UNKNOWN_TOOL = "get_wether"
SAMPLE_ALTERNATIVES = ("get_weather", "get_forecast")
# The parameter of renders made without the served tools (the catalog reference's examples): one without a hint, so
# they show the variant's own question. Admin calls a served tool's own parameter instead (``SampleTool``).
SAMPLE_PARAMETER = ParameterFault(
    name="reply_to",
    description="the reply-to email address",
    type="email_address",
    expected_format="user@domain.com",
)
SAMPLE_EVENT_ID = "abc123def456"
SAMPLE_SERVICE = "gmail"
# A rate-limited call usually carries Retry-After; this stands in when the code sets no default of its own.
SAMPLE_RETRY_AFTER = 30
SAMPLE_REQUEST_ID = 1

# Key (stable, used by the browser), label, face, and the face's options as the render API names them. The
# call ids have the shape each provider's function-calling format gives them.
FACES: tuple[tuple[str, str, str, Mapping[str, Any]], ...] = (
    ("tool_result_markdown", "MCP tool result · markdown", "tool_result", {"format": "markdown"}),
    ("tool_result_json", "MCP tool result · json", "tool_result", {"format": "json"}),
    ("tool_result_both", "MCP tool result · both", "tool_result", {"format": "both"}),
    ("jsonrpc", "JSON-RPC error", "jsonrpc", {"request_id": SAMPLE_REQUEST_ID}),
    ("markdown", "Markdown for people", "markdown", {}),
    ("agent", "Agent-tool wrapper", "agent", {}),
    ("anatomy", "Anatomy (what, why, next, alternatives)", "anatomy", {}),
    ("provider_openai", "OpenAI function_call_output", "provider", {"provider": "openai", "call_id": "call_abc123"}),
    ("provider_anthropic", "Anthropic tool_result", "provider", {"provider": "anthropic", "call_id": "toolu_xyz789"}),
    ("provider_gemini", "Gemini functionResponse", "provider", {"provider": "gemini"}),
)

_PARAMETER_PLACEHOLDERS = frozenset(
    {"parameter", "parameters", "parameter_description", "parameter_type", "expected_format", "minimum", "maximum"}
)


@dataclass(frozen=True, slots=True)
class SampleTool:
    """A tool the server serves, as the preview calls it: its served name and its required parameters, each
    described from its input schema as a real call's validation describes it."""

    name: str
    required: tuple[ParameterFault, ...] = ()
    upstream: str = ""  # the upstream MCP server it is forwarded to; "" for our own tools
    # What a call's failure carries of the tool itself (``Failure.optional_parameters`` and ``guidance``).
    optional: tuple[str, ...] = ()
    summary: str = ""


# What each ``text_source`` means to a writer: which row's text the model reads.
TEXT_SOURCE_WORDS = {
    TEXT_FROM_VARIANT: "this variant's message, cause and instruction",
    TEXT_FROM_VARIANT_QUESTION: "this variant's question only (its message, cause and instruction are not sent)",
    TEXT_FROM_HINT_QUESTION: "the parameter hint's question, which replaces this variant's question",
    TEXT_FROM_HINT_QUESTIONS: "one question made of the parameter hints' questions, instead of this variant's",
}


@dataclass(frozen=True, slots=True)
class ToolText:
    """What the model reads when ``tool`` fails with a code, missing ``parameter`` for codes about one."""

    tool: str
    parameter: str
    rendered: RenderedError

    @property
    def source(self) -> str:
        return self.rendered.text_source

    @property
    def from_hint(self) -> bool:
        return self.source in (TEXT_FROM_HINT_QUESTION, TEXT_FROM_HINT_QUESTIONS)

    @property
    def words(self) -> str:
        return TEXT_SOURCE_WORDS[self.source]


@dataclass(frozen=True, slots=True)
class Face:
    """One rendered face: ``output`` is what leaves the server, ``request`` how the render API reproduces it."""

    key: str
    label: str
    output: Any
    request: Mapping[str, Any]

    @property
    def text(self) -> str:
        """The output as a person reads it: strings as they are, structures as indented JSON."""
        if isinstance(self.output, str):
            return self.output
        return json.dumps(self.output, indent=2, ensure_ascii=False)

    @property
    def request_json(self) -> str:
        return json.dumps(self.request, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class VariantPreview:
    variant: VariantEntry
    failure: Failure
    rendered: RenderedError
    faces: tuple[Face, ...]
    # Length of the model-facing text before the cap, against the budget (settings MAX_MESSAGE_CHARS).
    full_length: int
    max_chars: int
    # Tool by tool, which text the model gets from this variant (empty without served tools).
    tool_texts: tuple[ToolText, ...] = ()
    # The face a client shows first: the MCP tool result in the server's default format.
    client_face: str = "tool_result_markdown"

    @property
    def over_budget(self) -> bool:
        return self.full_length > self.max_chars

    @property
    def client(self) -> Face:
        return next(f for f in self.faces if f.key == self.client_face)

    @property
    def client_text(self) -> str:
        """What a client that drops structuredContent shows: the text of the result's content blocks."""
        output = self.client.output
        return "\n\n".join(block["text"] for block in output["content"] if block.get("type") == "text")

    @property
    def structured_text(self) -> str:
        return json.dumps(self.client.output.get("structuredContent"), indent=2, ensure_ascii=False)

    @property
    def hinted(self) -> tuple[ToolText, ...]:
        """The tools whose question comes from a parameter hint, not from this variant."""
        return tuple(t for t in self.tool_texts if t.from_hint)

    @property
    def source_words(self) -> str:
        return TEXT_SOURCE_WORDS[self.rendered.text_source]

    @property
    def question_only(self) -> bool:
        """A needs-input code answered with a question: the variant's message, cause and instruction are not sent."""
        return self.rendered.text_source != TEXT_FROM_VARIANT


def wants_parameter(entry: CodeEntry) -> bool:
    """Whether ``entry``'s failures are about one parameter (a question for it, or templates that name it)."""
    used = {name for v in entry.variants for t in _templates(v) for name in template_placeholders(t)}
    return entry.kind == "needs_input" or bool(used & _PARAMETER_PLACEHOLDERS)


def names_parameter(entry: CodeEntry) -> bool:
    """Whether ``entry``'s templates name the parameter at fault: a code a call's missing or invalid parameter
    leads to (a needs-input code about a service is asked about the service, whatever the call left out)."""
    used = {name for v in entry.variants for t in _templates(v) for name in template_placeholders(t)}
    return bool(used & _PARAMETER_PLACEHOLDERS)


def _problem(entry: CodeEntry) -> str:
    # Codes about a malformed value report an invalid parameter (the question protocol's invalid_parameter); the
    # rest a missing one (its missing_parameter).
    return "invalid" if "INVALID" in entry.code or entry.category == "validation" else "missing"


def _guide_first(tools: tuple[SampleTool, ...]) -> list[SampleTool]:
    """``tools`` with ``SAMPLE_TOOL`` first when it is served: the example every guide uses."""
    return sorted(tools, key=lambda t: t.name != SAMPLE_TOOL)


def sample_call(
    snapshot: CatalogSnapshot, entry: CodeEntry, tools: tuple[SampleTool, ...]
) -> tuple[SampleTool, ParameterFault]:
    """The served tool and parameter the preview calls: the first required parameter without a hint question (so
    the preview shows the variant's own text), else the first required parameter; the built-in sample without tools.
    ``send_email`` comes first when it is served: the example every guide uses. A code about no parameter calls the
    first tool."""
    ordered = _guide_first(tools)
    if ordered and not wants_parameter(entry):  # only the tool's name is used
        return ordered[0], SAMPLE_PARAMETER
    calls = [(t, p) for t in ordered for p in t.required]
    for tool, parameter in calls:
        hint = snapshot.hint(tool.name, parameter.name)
        if hint is None or not hint.question:
            return tool, parameter
    return calls[0] if calls else (SampleTool(SAMPLE_TOOL), SAMPLE_PARAMETER)


def sample_failure(
    entry: CodeEntry,
    *,
    snapshot: CatalogSnapshot | None = None,
    tools: tuple[SampleTool, ...] = (),
    call: tuple[SampleTool, ParameterFault] | None = None,
) -> Failure:
    """A plausible failure of ``entry``'s code, with a sample value for every placeholder its templates use.

    With served ``tools`` (and the ``snapshot`` whose hints word their parameters) the call is one of them, missing
    or misusing one of its own parameters; ``call`` names the tool and parameter outright.
    """
    used = {name for v in entry.variants for t in _templates(v) for name in template_placeholders(t)}
    not_found = "alternatives" in used or entry.code == "FUNCTION_NOT_FOUND"
    if call is None:
        if tools and snapshot is not None:
            call = sample_call(snapshot, entry, tools)
        else:
            call = (SampleTool(SAMPLE_TOOL), SAMPLE_PARAMETER)
    tool, parameter = call
    parameter = dataclasses.replace(parameter, problem=_problem(entry))
    retry_after = entry.retry_after_seconds
    if retry_after is None and entry.category == "rate_limit":
        retry_after = SAMPLE_RETRY_AFTER
    return Failure(
        code=entry.code,
        tool_name=SAMPLE_UNKNOWN_TOOL if not_found else tool.name,
        parameters=(parameter,) if wants_parameter(entry) else (),
        status_code=entry.http_statuses[0] if entry.http_statuses else None,
        event_id=SAMPLE_EVENT_ID if entry.system else None,
        retry_after=retry_after,
        alternatives=SAMPLE_ALTERNATIVES if not_found else (),
        network_failure="timeout" if entry.category == "network" or "network_failure" in used else None,
        service=SAMPLE_SERVICE if "service" in used else None,
        optional_parameters=() if not_found else tool.optional,
        guidance="" if not_found else tool.summary,
    )


def tool_texts(
    snapshot: CatalogSnapshot,
    code: str,
    variant: VariantEntry,
    tools: tuple[SampleTool, ...],
    *,
    max_chars: int,
    parameter: str | None = None,
) -> tuple[ToolText, ...]:
    """For each served tool, what the model reads when it fails with ``code`` rendered from ``variant``.

    A code about one parameter is rendered once per required parameter of each tool (only ``parameter`` when
    given); a code whose templates name no parameter has no rows, every tool getting the same text. Which text
    wins is the renderer's answer (``text_source``), never worked out here.
    """
    entry = snapshot.codes.get(code)
    if entry is None or not names_parameter(entry):
        return ()
    alone = _with_only(snapshot, entry, variant)
    texts = []
    for tool in _guide_first(tools):
        for fault in tool.required:
            if parameter is not None and fault.name != parameter:
                continue
            failure = sample_failure(entry, call=(tool, fault))
            rendered = render(alone, failure, variant=variant.name, locale=variant.locale, max_chars=max_chars)
            texts.append(ToolText(tool=tool.name, parameter=fault.name, rendered=rendered))
    return tuple(texts)


def code_preview(
    snapshot: CatalogSnapshot,
    code: str,
    *,
    max_chars: int,
    legacy_codes: bool = False,
    tools: tuple[SampleTool, ...] = (),
    default_format: str = "markdown",
) -> list[VariantPreview]:
    """Every variant of ``code`` with all its faces; empty when the snapshot does not have the code.

    ``max_chars``, ``legacy_codes`` and ``default_format`` are the endpoint's settings, so the faces are those a
    client would get. With the served ``tools``, the sample call is one of theirs and each variant lists, tool by
    tool, which text the model gets.
    """
    entry = snapshot.codes.get(code)
    if entry is None:
        return []
    failure = sample_failure(entry, snapshot=snapshot, tools=tools)
    previews = []
    for variant in entry.variants:
        alone = _with_only(snapshot, entry, variant)
        rendered = render(alone, failure, variant=variant.name, locale=variant.locale, max_chars=max_chars)
        uncapped = render(alone, failure, variant=variant.name, locale=variant.locale, max_chars=1 << 20)
        previews.append(
            VariantPreview(
                variant=variant,
                failure=failure,
                rendered=rendered,
                faces=_faces(rendered, _request_base(failure, variant), legacy_codes=legacy_codes),
                full_length=len(uncapped.text),
                max_chars=max_chars,
                tool_texts=tool_texts(snapshot, code, variant, tools, max_chars=max_chars),
                client_face=f"tool_result_{default_format}",
            )
        )
    return previews


def _with_only(snapshot: CatalogSnapshot, entry: CodeEntry, variant: VariantEntry) -> CatalogSnapshot:
    """``snapshot`` in which ``entry`` has just ``variant`` and is active.

    A lookup by name may otherwise find a same-named variant of another locale, and the renderer answers an
    inactive code with UNKNOWN_ERROR, while a writer still wants to see this one.
    """
    alone = dataclasses.replace(entry, active=True, variants=(variant,))
    return dataclasses.replace(snapshot, codes=MappingProxyType({**snapshot.codes, entry.code: alone}))


def _templates(variant: VariantEntry) -> tuple[str, ...]:
    return (variant.message, variant.cause, variant.instruction, variant.question)


def _request_base(failure: Failure, variant: VariantEntry) -> dict[str, Any]:
    """The sample inputs in the render API's vocabulary (absent values left out)."""
    body: dict[str, Any] = {"code": failure.code, "variant": variant.name, "tool_name": failure.tool_name}
    if variant.locale:
        body["locale"] = variant.locale
    if failure.parameters:
        body["parameters"] = [
            {k: v for k, v in dataclasses.asdict(p).items() if v not in (None, "")} for p in failure.parameters
        ]
    optional = {
        "status_code": failure.status_code,
        "event_id": failure.event_id,
        "retry_after": failure.retry_after,
        "alternatives": list(failure.alternatives),
        "network_failure": failure.network_failure,
        "service": failure.service,
        "optional_parameters": list(failure.optional_parameters),
        "guidance": failure.guidance,
    }
    body.update({k: v for k, v in optional.items() if v})
    return body


def _faces(rendered: RenderedError, base: dict[str, Any], *, legacy_codes: bool) -> tuple[Face, ...]:
    faces = []
    for key, label, face, options in FACES:
        if face == "jsonrpc":
            options = {**options, "legacy_codes": legacy_codes}
        output = face_output(rendered, face, FaceOptions(**options))
        faces.append(Face(key=key, label=label, output=output, request={**base, "face": face, **options}))
    return tuple(faces)
