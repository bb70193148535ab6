"""The MCP tool-result face: format gating, the toolError:v1/needsInput:v1 envelope, isError."""

from __future__ import annotations

import json
from typing import Any

from errcatalog.render.core import RenderedError

FORMATS = ("markdown", "json", "both")
SETUP_FIELDS = ("setup_url", "action_required")
# The categories of error codes whose envelope names the parameter at fault in its details.
_NAMED_IN_DETAILS = frozenset({"not_found", "authentication", "network"})


def envelope(rendered: RenderedError) -> dict[str, Any]:
    """The structured error: ``{"kind", "code", "message", "retryable", "details"?}``; absent values omitted."""
    body: dict[str, Any] = {
        "kind": rendered.envelope_kind,
        "code": rendered.code,
        "message": rendered.text,
        # A question is answered by calling again (the question protocol's retry_capable): the envelope must not
        # say otherwise.
        "retryable": rendered.retryable or bool(rendered.data.get("retry_capable")),
    }
    details: dict[str, Any] = {}
    if rendered.status_code is not None:
        details["statusCode"] = rendered.status_code
    if rendered.retry_after is not None:
        details["retryAfterSeconds"] = rendered.retry_after
    if rendered.event_id:
        details["eventId"] = rendered.event_id
    if rendered.alternatives:
        details["alternatives"] = list(rendered.alternatives)
    if rendered.kind == "needs_input":
        details.update(rendered.data)
    else:
        # The question protocol's setup fields belong to authentication and configuration errors of either kind.
        details.update({k: rendered.data[k] for k in SETUP_FIELDS if k in rendered.data})
        if rendered.parameters and rendered.category in _NAMED_IN_DETAILS:
            # Which argument matched nothing, was refused or could not be reached, by name as a question's data names
            # a parameter: the model then knows which value to change. Input codes' texts name theirs (the
            # toolError:v1 examples' details carry no parameter).
            details["parameter"] = rendered.parameters[0].name
    if rendered.partial_result is not None:
        details["partialResult"] = rendered.partial_result
    if rendered.upstream_words is not None:
        # The upstream's own words, apart from the catalog's, named as its: a client can show or drop them.
        words = rendered.upstream_words
        details["upstream_detail"] = {"upstream": words.upstream, "text": words.text}
    if details:
        body["details"] = details
    return body


# json.dumps(indent=...) falls back to the pure-Python encoder; indenting ourselves around the C encoder's output
# for scalars gives the identical text several times faster (tests compare the two).
_encode_str = json.encoder.encode_basestring  # the C encoder for strings, UTF-8 kept


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _encode_str(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)


def indented_json(value: Any, level: int = 0) -> str:
    """Exactly ``json.dumps(value, indent=2, ensure_ascii=False)``, for JSON-ready values."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        pad = "\n" + "  " * (level + 1)
        parts = []
        for key, item in value.items():
            text = indented_json(item, level + 1) if isinstance(item, (dict, list, tuple)) else _scalar(item)
            parts.append(f"{pad}{_scalar(str(key))}: {text}")
        return "{" + ",".join(parts) + "\n" + "  " * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        pad = "\n" + "  " * (level + 1)
        parts = [pad + indented_json(item, level + 1) for item in value]
        return "[" + ",".join(parts) + "\n" + "  " * level + "]"
    return _scalar(value)


def envelope_json(rendered: RenderedError) -> str:
    """The JSON content block's text, laid out as the toolError:v1 envelope shows it (two-space indent,
    UTF-8 kept)."""
    return indented_json(envelope(rendered))


def tool_result(rendered: RenderedError, fmt: str = "markdown") -> dict[str, Any]:
    """A ``CallToolResult`` as a JSON-ready dict; ``fmt`` gates the content blocks as the toolError:v1 envelope's
    format gating does for successful results too, so a client reads errors where it reads answers.

    The markdown block is the people-facing markdown (a header, the 404 hint and the Event ID line, as Sentry's
    error-handling conventions lay them out, inside the cap); a variant without a header gives the plain message.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    content = []
    if fmt in ("markdown", "both"):
        content.append({"type": "text", "text": rendered.markdown, "mimeType": "text/markdown"})
    if fmt in ("json", "both"):
        content.append({"type": "text", "text": envelope_json(rendered), "mimeType": "application/json"})
    return {"content": content, "structuredContent": envelope(rendered), "isError": True}
