"""Faces of seed 001: ``formatErrorForUser`` markdown and the ``agentTool`` ``{result}``/``{error}`` wrapper.

The header of the chosen variant picks the family: "Input Error" for user-correctable failures, "Error" for
system failures (with the Sentry event ID), "AI Provider Error" for LLM provider failures. A variant without a
header (seed 000's plain messages) shows its text alone. The markdown is built once, inside the cap, by the core
renderer (``people_markdown``); the MCP face shows the same markdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the core renderer imports this module to build its markdown
    from errcatalog.render.core import RenderedError

INPUT_ERROR = "Input Error"
SYSTEM_ERROR = "Error"
PROVIDER_ERROR = "AI Provider Error"

# Seed 001's closing sentences, one per family.
_INPUT_CLOSE = "You may be able to resolve this by addressing the concern and trying again."
_SYSTEM_CLOSE = "This is a system error that cannot be resolved by retrying."
# Seed 000 marks network errors retryable, which seed 001's sentence would contradict; a server's 5xx keeps the
# seed's sentence word for word.
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


def client_message(text: str, status_code: int | None, *, specific: bool) -> str:
    """Seed 001's ``toUserMessage()``: "API error (status): message" plus the 404 hint, for client errors.

    ``specific`` says the failure names what was not found (a parameter), which earns the short hint.
    """
    if status_code is None or not 400 <= status_code < 500:
        return text
    text = f"API error ({status_code}): {text}"
    if status_code == 404:
        text = sentences(text, NOT_FOUND_SPECIFIC_HINT if specific else NOT_FOUND_GENERIC_HINT)
    return text


def people_markdown(header: str, text: str, *, status_code: int | None, event_id: str | None, specific: bool) -> str:
    """Seed 001's ``formatErrorForUser`` for one rendered text (the core renderer keeps it under the cap)."""
    if header == INPUT_ERROR:
        return f"**{INPUT_ERROR}**\n\n{client_message(text, status_code, specific=specific)}"
    if header == PROVIDER_ERROR:
        return f"**{PROVIDER_ERROR}**\n\n{text}"
    body = f"**{header}**\n\n{text}" if header else text
    if event_id and event_id not in text:
        # The model quotes the event ID to people, as in seed 001's "Event ID: …" line.
        body += f"\n\nEvent ID: {event_id}"
    return body


def user_message(rendered: RenderedError) -> str:
    """Seed 001's ``toUserMessage()`` for a rendered error."""
    return client_message(rendered.text, rendered.status_code, specific=bool(rendered.parameters))


def user_markdown(rendered: RenderedError) -> str:
    """The markdown a person (or an MCP client that shows results) reads."""
    return rendered.markdown


def agent_error(rendered: RenderedError) -> dict[str, str]:
    """The ``{"error": ...}`` an embedded agent tool returns instead of raising."""
    if rendered.header == INPUT_ERROR:
        return {"error": f"{INPUT_ERROR}: {sentences(user_message(rendered), _INPUT_CLOSE)}"}
    if rendered.header == PROVIDER_ERROR:
        return {"error": f"{PROVIDER_ERROR}: {sentences(rendered.text, _PROVIDER_CLOSE)}"}
    status = rendered.status_code
    label = f"Server Error ({status})" if status else "Server Error"
    event = f"Event ID: {rendered.event_id}" if rendered.event_id else ""
    # Seed 001's template is "Server Error (5xx): {message}. Event ID: {eventId}. This is a system error that
    # cannot be resolved by retrying.": what happened, then the fixed sentence, which takes the place of the
    # catalog's instruction so the retry advice is stated once.
    if status is not None and status >= 500:
        close = _SYSTEM_CLOSE
    else:
        close = _TEMPORARY_SYSTEM_CLOSE if rendered.retryable else _SYSTEM_CLOSE
    return {"error": f"{label}: {sentences(rendered.message or rendered.text, event, close)}"}


def agent_result(result: Any) -> dict[str, Any]:
    """The success half of the wrapper: what an embedded agent tool returns when it worked."""
    return {"result": result}
