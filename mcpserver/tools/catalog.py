"""The ``catalog`` toolset: the error catalog itself, readable by a model (like ``rustc --explain``)."""

from __future__ import annotations

import json
from typing import Any

from errcatalog.catalog.models import Category
from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.errors import UserInputError
from errcatalog.render import did_you_mean
from errcatalog.render.entries import CodeEntry
from mcpserver.registry import ToolOutput, tool

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


class UnknownCodeError(UserInputError):
    """The code is not in the catalog; ``alternatives`` holds the closest ones."""

    def __init__(self, alternatives: tuple[str, ...]) -> None:
        examples = ", ".join(alternatives) or "MISSING_PARAMETER"
        super().__init__(
            "unknown catalog code",
            code="INVALID_PARAMETER",
            parameter="code",
            expected_format=f"an error code from list_error_codes, such as {examples}",
        )
        self.alternatives = alternatives


def _summary(entry: CodeEntry) -> dict[str, Any]:
    variant = entry.variant()
    return {
        "code": entry.code,
        "category": entry.category,
        "kind": entry.kind,
        "retryable": entry.retryable,
        "message": variant.message,
    }


def _output(markdown: str, data: dict[str, Any], fmt: str) -> ToolOutput:
    content = []
    if fmt in ("markdown", "both"):
        content.append({"type": "text", "text": markdown})
    if fmt in ("json", "both"):
        content.append({"type": "text", "text": json.dumps(data, indent=2, ensure_ascii=False)})
    return ToolOutput(content=content, structured=data)


@tool(
    toolset="catalog",
    title="Explain an error code",
    description="""
        Explain an errcatalog error code, like `rustc --explain`: what it means, its usual causes and how to
        fix or recover from it, whether retrying helps, and the message templates clients see. Use it when a
        tool result carries a `code` (for example MISSING_PARAMETER or RATE_LIMIT) and you need to know what
        to do next.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The error code, e.g. RATE_LIMIT (as in a toolError:v1 or needsInput:v1 result)",
                "minLength": 1,
                "maxLength": 64,
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
    formats=True,
)
def explain_error(code: str, format: str = "markdown") -> ToolOutput:
    snapshot = catalog_snapshot()
    wanted = code.strip().upper()
    entry = snapshot.codes.get(wanted)
    if entry is None or not entry.active:
        active = [c for c, e in snapshot.codes.items() if e.active]
        raise UnknownCodeError(did_you_mean(wanted, active) or tuple(sorted(active)[:3]))
    variant = entry.variant()
    data = {
        **_summary(entry),
        "system": entry.system,
        "retryAfterSeconds": entry.retry_after_seconds,
        "httpStatuses": list(entry.http_statuses),
        "jsonrpcCode": entry.jsonrpc_code,
        "explanation": entry.explanation,
        "docUrl": entry.doc_url or None,
        "templates": {
            "variant": variant.name,
            "message": variant.message,
            "cause": variant.cause,
            "instruction": variant.instruction,
            "question": variant.question or None,
        },
    }
    facts = [
        f"category {entry.category}",
        f"kind {entry.kind}",
        "retryable" + (f" after {entry.retry_after_seconds}s" if entry.retry_after_seconds else "")
        if entry.retryable
        else "not retryable",
        "system error (captured in Sentry)" if entry.system else "user-correctable (not sent to Sentry)",
    ]
    if entry.http_statuses:
        facts.append("HTTP " + ", ".join(map(str, entry.http_statuses)))
    if entry.jsonrpc_code is not None:
        facts.append(f"JSON-RPC {entry.jsonrpc_code}")
    lines = [f"# {entry.code}", "", "; ".join(facts) + ".", "", entry.explanation, ""]
    lines += [
        f"**What happened:** {variant.message}",
        f"**Why:** {variant.cause}",
        f"**What to do:** {variant.instruction}",
    ]
    if variant.question:
        lines.append(f"**Question:** {variant.question}")
    if entry.doc_url:
        lines += ["", f"More: {entry.doc_url}"]
    return _output("\n".join(lines), data, format)


@tool(
    toolset="catalog",
    title="List error codes",
    description="""
        List the error codes of the errcatalog catalog with their category, kind (error or needs_input),
        whether they are retryable, and a one-line message. Optionally only one category. Use explain_error
        for the full explanation of one code.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "category": {
                "type": "string",
                "enum": [c.value for c in Category],
                "description": "Only codes of this category",
            }
        },
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
    formats=True,
)
def list_error_codes(category: str | None = None, format: str = "markdown") -> ToolOutput:
    snapshot = catalog_snapshot()
    entries = [
        e
        for e in sorted(snapshot.codes.values(), key=lambda e: (e.category, e.code))
        if e.active and (category is None or e.category == category)
    ]
    codes = [_summary(e) for e in entries]
    lines = [
        f"- **{c['code']}** ({c['category']}, {c['kind']}, {'retryable' if c['retryable'] else 'not retryable'}): "
        f"{c['message']}"
        for c in codes
    ]
    markdown = "\n".join(lines) if lines else "No codes in this category."
    return _output(markdown, {"codes": codes}, format)
