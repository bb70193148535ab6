"""The faces for a model's function calling: the what/why/next/alternatives anatomy and the OpenAI, Anthropic and
Gemini result formats."""

from __future__ import annotations

import json
import re
from typing import Any

from errcatalog.render.core import RenderedError

PROVIDERS = ("openai", "anthropic", "gemini")
_RETRY_NOTE = "You may retry this call."
_PARTIAL_NOTE = "Partial data is available in 'partial_result'."
# An instruction that already gives retry advice ("Retry once after a short pause", "do not retry for at least
# 30 seconds") is not followed by the generic note: a message states its retry advice once.
_GIVES_RETRY_ADVICE = re.compile(r"\bretry|\bretrying\b|\btry again\b", re.IGNORECASE)


def anatomy(rendered: RenderedError) -> dict[str, Any]:
    """The error payload for a model, keys in the anatomy's order (what, why, next, alternatives); optional keys
    only when they have a value."""
    instruction = rendered.instruction
    if rendered.retryable and not _GIVES_RETRY_ADVICE.search(instruction):
        instruction = f"{instruction} {_RETRY_NOTE}".strip()
    if rendered.partial_result is not None:
        instruction = f"{instruction} {_PARTIAL_NOTE}".strip()
    payload: dict[str, Any] = {
        "error": True,
        "error_type": rendered.error_category,
        "function": rendered.tool_name or "",
        "message": rendered.message,
    }
    if rendered.cause:
        payload["reason"] = rendered.cause
    if rendered.question:
        payload["question"] = rendered.question
    payload["instruction"] = instruction
    details = _details(rendered)
    if details:
        payload["details"] = details
    if rendered.alternatives:
        payload["alternatives"] = list(rendered.alternatives)
    if rendered.retryable:
        payload["is_temporary"] = True
    if rendered.partial_result is not None:
        payload["partial_result"] = rendered.partial_result
    return payload


def _details(rendered: RenderedError) -> dict[str, Any]:
    details: dict[str, Any] = {}
    invalid = [p for p in rendered.parameters if p.problem == "invalid"]
    if invalid:
        p = invalid[0]
        details["field"] = p.name
        # A rejected string is never echoed (it could say anything); a validated number or boolean is.
        details["received"] = p.received if p.received is not None else "[REDACTED]"
        if p.minimum is not None:
            details["min"] = p.minimum
        if p.maximum is not None:
            details["max"] = p.maximum
    missing = [p.name for p in rendered.parameters if p.problem == "missing"]
    if missing:
        details["missing"] = missing
    if rendered.status_code is not None:
        details["status_code"] = rendered.status_code
    if rendered.retry_after is not None:
        details["retry_after_seconds"] = rendered.retry_after
    if rendered.event_id:
        details["event_id"] = rendered.event_id
    return details


def provider_result(rendered: RenderedError, provider: str, call_id: str = "") -> dict[str, Any]:
    """The error as the given provider's tool-result item."""
    payload = anatomy(rendered)
    if provider == "openai":
        return {"type": "function_call_output", "call_id": call_id, "output": json.dumps(payload)}
    if provider == "anthropic":
        return {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": json.dumps(payload),
            "is_error": True,
        }
    if provider == "gemini":
        return {"functionResponse": {"name": payload["function"], "response": payload}}
    raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}")
