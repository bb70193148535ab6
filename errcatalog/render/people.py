"""Faces of seed 001: ``formatErrorForUser`` markdown and the ``agentTool`` ``{result}``/``{error}`` wrapper.

The header of the chosen variant picks the family: "Input Error" for user-correctable failures, "Error" for
system failures (with the Sentry event ID), "AI Provider Error" for LLM provider failures.
"""

from __future__ import annotations

from typing import Any

from errcatalog.render.core import RenderedError

INPUT_ERROR = "Input Error"
SYSTEM_ERROR = "Error"
PROVIDER_ERROR = "AI Provider Error"

# Seed 001's closing sentences, one per family.
_INPUT_CLOSE = "You may be able to resolve this by addressing the concern and trying again."
_SYSTEM_CLOSE = "This is a system error that cannot be resolved by retrying."
# Seed 000 marks server and network errors retryable, which seed 001's sentence would contradict.
_TEMPORARY_SYSTEM_CLOSE = "This is a temporary system error; retrying later may succeed."
_PROVIDER_CLOSE = "This is a service availability issue that cannot be resolved by retrying."
# Seed 001's hints for 404s: a generic message gets the long one, a specific message (we know which
# parameter or resource) the short one.
NOT_FOUND_GENERIC_HINT = (
    "Please verify that the organization, project, or resource ID is correct and that you have access to it."
)
NOT_FOUND_SPECIFIC_HINT = "Please verify the parameters are correct."


def sentences(*parts: str) -> str:
    """Join sentences with one period between them, whether or not a part already ends with one."""
    kept = [p.strip() for p in parts if p and p.strip()]
    return " ".join(p if p.endswith((".", "?", "!")) else f"{p}." for p in kept)


def user_message(rendered: RenderedError) -> str:
    """Seed 001's ``toUserMessage()``: "API error (status): message" plus the 404 hint, for client errors."""
    text = rendered.text
    status = rendered.status_code
    if status is None or not 400 <= status < 500:
        return text
    text = f"API error ({status}): {text}"
    if status == 404:
        hint = NOT_FOUND_SPECIFIC_HINT if rendered.parameters else NOT_FOUND_GENERIC_HINT
        text = sentences(text, hint)
    return text


def user_markdown(rendered: RenderedError) -> str:
    """The markdown a person (or an MCP client that shows results) reads."""
    if rendered.header == INPUT_ERROR:
        return f"**{INPUT_ERROR}**\n\n{user_message(rendered)}"
    if rendered.header == PROVIDER_ERROR:
        return f"**{PROVIDER_ERROR}**\n\n{rendered.text}"
    body = f"**{SYSTEM_ERROR}**\n\n{rendered.text}"
    if rendered.event_id:
        body += f"\n\nEvent ID: {rendered.event_id}"
    return body


def agent_error(rendered: RenderedError) -> dict[str, str]:
    """The ``{"error": ...}`` an embedded agent tool returns instead of raising."""
    if rendered.header == INPUT_ERROR:
        return {"error": f"{INPUT_ERROR}: {sentences(user_message(rendered), _INPUT_CLOSE)}"}
    if rendered.header == PROVIDER_ERROR:
        return {"error": f"{PROVIDER_ERROR}: {sentences(rendered.text, _PROVIDER_CLOSE)}"}
    label = f"Server Error ({rendered.status_code})" if rendered.status_code else "Server Error"
    event = f"Event ID: {rendered.event_id}" if rendered.event_id else ""
    close = _TEMPORARY_SYSTEM_CLOSE if rendered.retryable else _SYSTEM_CLOSE
    return {"error": f"{label}: {sentences(rendered.text, event, close)}"}


def agent_result(result: Any) -> dict[str, Any]:
    """The success half of the wrapper."""
    return {"result": result}
