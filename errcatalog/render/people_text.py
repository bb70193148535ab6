"""The people-facing text of one failure: the ``formatErrorForUser`` markdown and ``toUserMessage()`` of Sentry's
error-handling conventions.

The header of the chosen variant picks the family: "Input Error" for user-correctable failures, "Error" for
system failures (with the Sentry event ID), "AI Provider Error" for LLM provider failures. A variant without a
header (a plain toolError:v1 message) shows its text alone. The core renderer builds the markdown once, inside the
cap (``people_markdown``); the faces over a rendered error (``errcatalog.render.people``) reuse these pieces.
"""

from __future__ import annotations

INPUT_ERROR = "Input Error"
SYSTEM_ERROR = "Error"
PROVIDER_ERROR = "AI Provider Error"

# The hints for 404s: a generic message gets the long one, a specific message (we know which
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
    """``toUserMessage()``: "API error (status): message" plus the 404 hint, for client errors.

    ``specific`` says the failure names what was not found (a parameter), which earns the short hint.
    """
    if status_code is None or not 400 <= status_code < 500:
        return text
    text = f"API error ({status_code}): {text}"
    if status_code == 404:
        text = sentences(text, NOT_FOUND_SPECIFIC_HINT if specific else NOT_FOUND_GENERIC_HINT)
    return text


def people_markdown(header: str, text: str, *, status_code: int | None, event_id: str | None, specific: bool) -> str:
    """``formatErrorForUser`` for one rendered text (the core renderer keeps it under the cap)."""
    if header == INPUT_ERROR:
        return f"**{INPUT_ERROR}**\n\n{client_message(text, status_code, specific=specific)}"
    if header == PROVIDER_ERROR:
        return f"**{PROVIDER_ERROR}**\n\n{text}"
    body = f"**{header}**\n\n{text}" if header else text
    if event_id and event_id not in text:
        # The model quotes the event ID to people, who give it to whoever looks the failure up in Sentry.
        body += f"\n\nEvent ID: {event_id}"
    return body
