"""Sample inputs for a code, and every face of every variant rendered with them: the admin's preview.

Pure: no ORM, no I/O. The admin builds the snapshot from the saved rows and passes it in. Each face also
carries the body of the ``POST /api/v1/render/`` request that reproduces it (``errcatalog.catalog.previews`` serves
both), so the browser can re-render an unsaved draft of the same variant with the same sample inputs.
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
from errcatalog.render.entries import CatalogSnapshot, CodeEntry, VariantEntry
from errcatalog.safety import template_placeholders

SAMPLE_TOOL = "send_email"
# A misspelt tool name and the close names offered instead, as a "did you mean" answer shows them.
SAMPLE_UNKNOWN_TOOL = "get_wether"
SAMPLE_ALTERNATIVES = ("get_weather", "get_forecast")
# A parameter without a hint in the default catalog, so the preview shows the variant's own question: a hint
# with a question of its own (send_email.to has one) would replace it.
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

    @property
    def over_budget(self) -> bool:
        return self.full_length > self.max_chars


def sample_failure(entry: CodeEntry) -> Failure:
    """A plausible failure of ``entry``'s code, with a sample value for every placeholder its templates use."""
    used = {name for v in entry.variants for t in _templates(v) for name in template_placeholders(t)}
    wants_parameter = entry.kind == "needs_input" or bool(used & _PARAMETER_PLACEHOLDERS)
    # Codes about a malformed value report an invalid parameter (the question protocol's invalid_parameter); the
    # rest a missing one (its missing_parameter).
    invalid = "INVALID" in entry.code or entry.category == "validation"
    parameter = dataclasses.replace(SAMPLE_PARAMETER, problem="invalid" if invalid else "missing")
    not_found = "alternatives" in used or entry.code == "FUNCTION_NOT_FOUND"
    retry_after = entry.retry_after_seconds
    if retry_after is None and entry.category == "rate_limit":
        retry_after = SAMPLE_RETRY_AFTER
    return Failure(
        code=entry.code,
        tool_name=SAMPLE_UNKNOWN_TOOL if not_found else SAMPLE_TOOL,
        parameters=(parameter,) if wants_parameter else (),
        status_code=entry.http_statuses[0] if entry.http_statuses else None,
        event_id=SAMPLE_EVENT_ID if entry.system else None,
        retry_after=retry_after,
        alternatives=SAMPLE_ALTERNATIVES if not_found else (),
        network_failure="timeout" if entry.category == "network" or "network_failure" in used else None,
        service=SAMPLE_SERVICE if "service" in used else None,
    )


def code_preview(
    snapshot: CatalogSnapshot, code: str, *, max_chars: int, legacy_codes: bool = False
) -> list[VariantPreview]:
    """Every variant of ``code`` with all its faces; empty when the snapshot does not have the code.

    ``max_chars`` and ``legacy_codes`` are the endpoint's settings, so the faces are those a client would get.
    """
    entry = snapshot.codes.get(code)
    if entry is None:
        return []
    failure = sample_failure(entry)
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
