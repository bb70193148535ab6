"""The MCP tool-result face (seed 000): format gating, the toolError:v1/needsInput:v1 envelope, isError."""

from __future__ import annotations

import json
from typing import Any

from errcatalog.render.core import RenderedError

FORMATS = ("markdown", "json", "both")


def envelope(rendered: RenderedError) -> dict[str, Any]:
    """The structured error: ``{"kind", "code", "message", "retryable", "details"?}``; absent values omitted."""
    body: dict[str, Any] = {
        "kind": rendered.envelope_kind,
        "code": rendered.code,
        "message": rendered.text,
        "retryable": rendered.retryable,
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
    if rendered.partial_result is not None:
        details["partialResult"] = rendered.partial_result
    if details:
        body["details"] = details
    return body


def envelope_json(rendered: RenderedError) -> str:
    """The JSON content block's text, laid out as in seed 000 (two-space indent, UTF-8 kept)."""
    return json.dumps(envelope(rendered), indent=2, ensure_ascii=False)


def tool_result(rendered: RenderedError, fmt: str = "markdown") -> dict[str, Any]:
    """A ``CallToolResult`` as a JSON-ready dict; ``fmt`` gates the content blocks exactly as seed 000."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    content = []
    if fmt in ("markdown", "both"):
        content.append({"type": "text", "text": rendered.text, "mimeType": "text/markdown"})
    if fmt in ("json", "both"):
        content.append({"type": "text", "text": envelope_json(rendered), "mimeType": "application/json"})
    return {"content": content, "structuredContent": envelope(rendered), "isError": True}
