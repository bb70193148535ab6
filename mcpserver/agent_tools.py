"""``agentTool`` as Sentry's error-handling conventions define it: a tool that an AI agent calls inside another
tool answers ``{result}`` or ``{error}``.

An embedded agent reads a structured answer instead of an exception: ``{"result": <data>}`` on success
(``errcatalog.render.agent_result``), ``{"error": "<catalog text>"}`` for user-correctable failures
(UserInputError, ApiClientError, LLMProviderError) and for a service's 5xx (``ApiServerError``, captured in Sentry,
its event ID in the text). Any other exception is unexpected and propagates to the outer tool, which the
pipeline then renders and captures like any failure. The error text is catalog text only (the trust rule).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import sentry_sdk
from django.conf import settings

from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.errors import ApiServerError, http_status
from errcatalog.render import Failure, agent_error, agent_result, render
from errcatalog.render.classify import classify, facts_from_exception

logger = logging.getLogger("mcpserver.agent_tools")


def agent_tool(function: Callable[..., Any]) -> Callable[..., dict[str, Any]]:
    """Wrap a sync function for an embedded agent: ``{"result": value}`` or ``{"error": text}``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return agent_result(function(*args, **kwargs))
        except Exception as exc:
            snapshot = catalog_snapshot()
            entry = snapshot.entry(classify(snapshot, facts_from_exception(exc)))
            if entry.system and not isinstance(exc, ApiServerError):
                raise  # unexpected: the outer tool fails, and the pipeline captures it
            event_id = None
            if entry.system:
                event_id = sentry_sdk.capture_exception(exc, tags={"code": entry.code})
            else:
                # Expected and user-correctable: a log line for people, never a Sentry issue: nothing is broken.
                logger.warning("Agent tool %s answered with %s", function.__name__, entry.code)
            failure = Failure(entry.code, status_code=http_status(getattr(exc, "status_code", None)), event_id=event_id)
            return agent_error(render(snapshot, failure, max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"]))

    return wrapper
