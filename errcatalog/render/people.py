"""The faces of Sentry's error-handling conventions over a rendered error: the people's message and markdown,
and the ``agentTool`` ``{result}``/``{error}`` wrapper.

The markdown itself is built by the core renderer from ``errcatalog.render.people_text``; the MCP face shows the
same markdown.
"""

from __future__ import annotations

from typing import Any

from errcatalog.render.core import RenderedError
from errcatalog.render.people_text import INPUT_ERROR, PROVIDER_ERROR, client_message, sentences

# The closing sentences of Sentry's error-handling conventions, one per family.
_INPUT_CLOSE = "You may be able to resolve this by addressing the concern and trying again."
_SYSTEM_CLOSE = "This is a system error that cannot be resolved by retrying."
# A network error is retryable (the toolError:v1 envelope says so), which the fixed system sentence would
# contradict; a server's 5xx keeps that sentence word for word.
_TEMPORARY_SYSTEM_CLOSE = "This is a temporary system error; retrying later may succeed."
_PROVIDER_CLOSE = "This is a service availability issue that cannot be resolved by retrying."


def user_message(rendered: RenderedError) -> str:
    """``toUserMessage()`` for a rendered error."""
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
    # The template of Sentry's error-handling conventions is "Server Error (5xx): {message}. Event ID: {eventId}.
    # This is a system error that cannot be resolved by retrying.": what happened, then the fixed sentence, which
    # takes the place of the catalog's instruction so the retry advice is stated once.
    if status is not None and status >= 500:
        close = _SYSTEM_CLOSE
    else:
        close = _TEMPORARY_SYSTEM_CLOSE if rendered.retryable else _SYSTEM_CLOSE
    return {"error": f"{label}: {sentences(rendered.message or rendered.text, event, close)}"}


def agent_result(result: Any) -> dict[str, Any]:
    """The success half of the wrapper: what an embedded agent tool returns when it worked."""
    return {"result": result}
