"""The demo tool set (toolset ``demo``): every scenario of the seeds, with real backends.

Enabled by the embedded default and off in production. Each tool either does its job for real (email through
Django's mail backend, documents in the database, a deterministic forecast) or fails the way a real integration
fails, so that every catalog face can be seen from an MCP client:

=====================  ==========================================================================================
send_email             seed 003 missing_parameter questions for to/subject/body; invalid ``to`` → invalid_parameter
create_document        seed 003's Zapier example (content required)
get_document           seed 000/001 NOT_FOUND (404) for an unknown id
search_documents       seed 000 ``format`` gating of successes; ``limit`` 1..100; seed 002 TIMEOUT with partial results
get_forecast           seed 002 ``days`` bounded 1..14; ``format`` gating
get_weather            seed 002 "did you mean get_weather" and an upstream that is down: NETWORK_ERROR, 5xx/503
web_search             seed 003 service_configuration (no API key)
read_inbox             seed 003 authentication_required (Gmail not connected)
summarize_text         seed 001 LLMProviderError ("AI Provider Error")
search_events          seed 001 ApiPermissionError (403) when querying across all projects
agent_search_events    seed 001's embedded agent tool: the same search answering {result} or {error} (agentTool)
=====================  ==========================================================================================

Failures are raised as the typed exceptions of ``errcatalog.errors`` (or the standard library's TimeoutError and
ConnectionError); their messages are for logs only. Upstream response bodies are never read into an exception.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import smtplib
import urllib.error
import urllib.parse
import urllib.request
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.utils import timezone

from demo import documents
from demo.models import Document
from errcatalog.errors import (
    APICallError,
    ConfigurationError,
    ToolTimeout,
    UserInputError,
    create_api_error,
    llm_provider_error,
)
from errcatalog.render.mcp import FORMATS, indented_json
from mcpserver.agent_tools import agent_tool
from mcpserver.registry import ToolOutput, tool

logger = logging.getLogger(__name__)

TOOLSET = "demo"
# Bounds the seeds use: seed 000's "limit must be between 1 and 100", seed 002's "days must be between 1 and 14".
SEARCH_LIMIT_MAX = 100
FORECAST_DAYS_MAX = 14
# The demo has a single project; seed 001's 403 is for queries across several.
DEMO_PROJECT = "demo"
SNIPPET_CHARS = 160
UPSTREAM_BODY_MAX_BYTES = 1_000_000

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
READ_ONLY_REMOTE = {**READ_ONLY, "openWorldHint": True}


# --- Format gating of successful results (seed 000) ---------------------------------------------------------


def format_output(fmt: str | None, *, markdown: str, data: dict[str, Any]) -> ToolOutput:
    """A successful result gated by ``format`` exactly like errors are (seed 000).

    ``markdown`` gives the human block only, ``json`` the JSON block only, ``both`` the two; structured content
    always carries ``data``. ``None`` means the configured default format.
    """
    fmt = fmt or settings.ERRCATALOG["DEFAULT_FORMAT"]
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    content = []
    if fmt in ("markdown", "both"):
        content.append({"type": "text", "text": markdown, "mimeType": "text/markdown"})
    if fmt in ("json", "both"):
        content.append({"type": "text", "text": indented_json(data), "mimeType": "application/json"})
    return ToolOutput(content=content, structured=data)


# --- Email --------------------------------------------------------------------------------------------------


@tool(
    toolset=TOOLSET,
    title="Send email",
    description="""
        Send an email to one recipient through this server's mail service.

        Use it when the user asks you to email someone. All three arguments are required and must come from the
        user or the conversation: never guess a recipient address. The message is sent as plain text.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "to": {
                "type": "string",
                "format": "email",
                "maxLength": 254,
                "description": "Recipient email address, such as user@domain.com.",
            },
            "subject": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Subject line of the email: one line of text.",
            },
            "body": {
                "type": "string",
                "minLength": 1,
                "maxLength": 50_000,
                "description": "Message content of the email, as plain text.",
            },
        },
        "required": ["to", "subject", "body"],
        "additionalProperties": False,
    },
    annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True},
    elicit=True,
)
def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
    # JSON Schema's "email" format only asks for an "@"; Django's validator is the one the mail backend agrees with.
    try:
        validate_email(to)
    except ValidationError:
        raise UserInputError(
            "send_email: invalid recipient address",
            code="INVALID_PARAMETER",
            parameter="to",
            expected_format="user@domain.com",
        ) from None
    if "\n" in subject or "\r" in subject:
        raise UserInputError(
            "send_email: multi-line subject",
            code="INVALID_PARAMETER",
            parameter="subject",
            expected_format="a single line of text",
        )
    if not body.strip():
        raise UserInputError("send_email: blank body", code="MISSING_PARAMETER", parameter="body")
    try:
        send_mail(subject, body, None, [to])
    except smtplib.SMTPRecipientsRefused:
        raise UserInputError(
            "send_email: the mail server refused the recipient",
            code="INVALID_PARAMETER",
            parameter="to",
            expected_format="user@domain.com",
        ) from None
    return {"status": "sent", "to": to, "subject": subject}


# --- Documents ----------------------------------------------------------------------------------------------


def _document_data(document: Document, *, with_content: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": document.pk,
        "title": document.title,
        "created_at": document.created_at.isoformat(),
        "updated_at": document.updated_at.isoformat(),
    }
    if with_content:
        data["content"] = document.content
    else:
        snippet = " ".join(document.content.split())
        data["snippet"] = snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1] + "…"
    return data


@tool(
    toolset=TOOLSET,
    title="Create document",
    description="""
        Create a new text document and store it. Returns the new document's id, which get_document and
        search_documents use.

        Use it when the user wants to save notes, a draft or any text for later. `content` is required and must
        come from the user or the conversation; `title` is optional (the first line of the content is used when
        it is left out).
    """,
    input_schema={
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100_000,
                "description": "Text content of the new document (plain text or markdown).",
            },
            "title": {
                "type": "string",
                "maxLength": documents.TITLE_MAX_CHARS,
                "description": "Short title of the document. Optional.",
            },
        },
        "required": ["content"],
        "additionalProperties": False,
    },
    annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False},
    elicit=True,
)
def create_document(content: str, title: str = "") -> dict[str, Any]:
    if not content.strip():
        # Blank content is missing content: the catalog asks seed 003's question for it.
        raise UserInputError("create_document: blank content", code="MISSING_PARAMETER", parameter="content")
    document = documents.document_create(content=content, title=title)
    return {"status": "created", **_document_data(document, with_content=False)}


@tool(
    toolset=TOOLSET,
    title="Get document",
    description="""
        Fetch one stored document by its id, with its full content.

        Use it after create_document or search_documents have given you an id. If you do not know the id, call
        search_documents first instead of guessing one.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "document_id": {
                "type": "integer",
                "minimum": 1,
                "description": "Id of the document, as returned by create_document or search_documents.",
            },
        },
        "required": ["document_id"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
)
def get_document(document_id: int) -> dict[str, Any]:
    document = documents.document_get(document_id=document_id)
    if document is None:
        raise create_api_error(404, "get_document: no such document")
    return _document_data(document, with_content=True)


@tool(
    toolset=TOOLSET,
    title="Search documents",
    description="""
        Search the stored documents for a word or phrase in their title or content (case-insensitive).
        Returns the most recently updated matches first, each with its id, title and a short snippet.

        Use it to find a document when you do not know its id. If the search takes too long, the matches found
        so far are returned with the error; a more specific query is faster.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Word or phrase to look for in document titles and content.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_LIMIT_MAX,
                "default": 10,
                "description": f"Maximum number of documents to return, from 1 to {SEARCH_LIMIT_MAX}. Default 10.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
    formats=True,
)
def search_documents(query: str, limit: int = 10, format: str | None = None) -> ToolOutput:
    found = documents.document_search(query=query, limit=limit, time_budget=settings.DEMO_DOCUMENT_SEARCH_SECONDS)
    if not found.complete:
        # Seed 002: a timeout passes along what was found, in the shape of a successful result's items.
        partial = [{"id": d.pk, "title": d.title} for d in found.documents]
        raise ToolTimeout("search_documents: time budget spent", partial_result=partial)
    items = [_document_data(d, with_content=False) for d in found.documents]
    data = {"count": len(items), "documents": items}
    if items:
        lines = [f"Found {len(items)} document{'s' if len(items) != 1 else ''}:", ""]
        lines += [f"- **{item['title']}** (id {item['id']}): {item['snippet']}" for item in items]
        markdown = "\n".join(lines)
    else:
        markdown = "No documents match this query."
    return format_output(format, markdown=markdown, data=data)


# --- Forecast and weather -----------------------------------------------------------------------------------

_CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "rain", "thunderstorms", "fog", "snow")


@tool(
    toolset=TOOLSET,
    title="Weather forecast",
    description="""
        Get the daily weather forecast for a place: conditions, high and low temperature (°C) and chance of
        rain, for 1 to 14 days starting today.

        Use it for questions about the coming days. For current conditions use get_weather.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100,
                "description": "City or place name, as specific as possible, such as London,UK.",
            },
            "days": {
                "type": "integer",
                "minimum": 1,
                "maximum": FORECAST_DAYS_MAX,
                "description": f"Number of days to forecast, from 1 to {FORECAST_DAYS_MAX}.",
            },
        },
        "required": ["location", "days"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
    formats=True,
)
def get_forecast(location: str, days: int, format: str | None = None) -> ToolOutput:
    # Made up but stable: the same place and date always get the same weather, with no network involved.
    place = " ".join(location.split())
    today = timezone.localdate()
    forecast = []
    for offset in range(days):
        day = today + timedelta(days=offset)
        digest = hashlib.sha256(f"{place.casefold()}|{day.isoformat()}".encode()).digest()
        low = digest[0] % 25 - 5
        forecast.append(
            {
                "date": day.isoformat(),
                "conditions": _CONDITIONS[digest[1] % len(_CONDITIONS)],
                "high_c": low + 3 + digest[2] % 10,
                "low_c": low,
                "precipitation_chance": digest[3] % 101,
            }
        )
    data = {"location": place, "days": forecast}
    rows = [f"Forecast for {place}:", "", "| Date | Conditions | High °C | Low °C | Rain |", "|---|---|---|---|---|"]
    rows += [
        f"| {d['date']} | {d['conditions']} | {d['high_c']} | {d['low_c']} | {d['precipitation_chance']}% |"
        for d in forecast
    ]
    return format_output(format, markdown="\n".join(rows), data=data)


# Headers that carry credentials: never sent on to another origin than the one they were meant for.
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default_port


class _SameOriginCredentials(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but drops credential headers when one leads to another origin.

    urllib copies every header of the request onto the redirected one, so an API key meant for the weather service
    would go to any host its answer redirects to (an open redirect there, or a compromised upstream).
    """

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(new.full_url) != _origin(req.full_url):
            for name in [name for name in new.headers if name.lower() in CREDENTIAL_HEADERS]:
                del new.headers[name]
            for name in [name for name in new.unredirected_hdrs if name.lower() in CREDENTIAL_HEADERS]:
                del new.unredirected_hdrs[name]
        return new


_opener = urllib.request.build_opener(_SameOriginCredentials)


def _fetch_json(url: str, *, params: dict[str, str], headers: dict[str, str], timeout: float, service: str) -> Any:
    """GET ``url`` and decode its JSON answer, raising what the classifier understands on failure.

    Connection failures become ConnectionError, timeouts TimeoutError (both NETWORK_ERROR), error statuses the
    typed error of ``create_api_error`` (with Retry-After), and an answer that is not HTTP or not JSON a 502. The
    body of an error answer is never read, and upstream text never goes into an exception: it is untrusted.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ConfigurationError(f"{service}: the upstream URL must be http or https", service=service)
    query = "&".join(q for q in (parts.query, urllib.parse.urlencode(params)) if q)
    request = urllib.request.Request(  # noqa: S310 (the scheme is checked above)
        urllib.parse.urlunsplit(parts._replace(query=query)), headers={"Accept": "application/json", **headers}
    )
    try:
        with _opener.open(request, timeout=timeout) as response:
            raw = response.read(UPSTREAM_BODY_MAX_BYTES)
    except urllib.error.HTTPError as exc:
        # Both are the upstream's: create_api_error bounds them (a status outside 100-599 is unknown, a
        # Retry-After of any shape becomes whole seconds or nothing).
        retry_after = exc.headers.get("Retry-After") if exc.headers is not None else None
        exc.close()
        raise create_api_error(exc.code, f"{service}: upstream answered {exc.code}", retry_after=retry_after) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise TimeoutError(f"{service}: upstream did not answer in {timeout}s") from exc
        raise ConnectionError(f"{service}: upstream unreachable") from exc
    except (ConnectionError, TimeoutError):
        raise  # a dropped connection or a slow answer: already what the classifier understands
    except http.client.HTTPException:
        # Not HTTP at all; the exception would quote the upstream's bytes, so it is not chained.
        raise create_api_error(502, f"{service}: upstream answer is not HTTP") from None
    try:
        return json.loads(raw)
    except ValueError:
        raise create_api_error(502, f"{service}: upstream answer is not JSON") from None


@tool(
    toolset=TOOLSET,
    title="Current weather",
    description="""
        Get the current weather for a place from the live weather service: temperature, conditions and wind.

        Use it for questions about the weather right now. For the coming days use get_forecast.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100,
                "description": "City or place name, as specific as possible, such as London,UK.",
            },
        },
        "required": ["location"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY_REMOTE,
)
def get_weather(location: str) -> dict[str, Any]:
    weather = _fetch_json(
        settings.DEMO_WEATHER_URL,
        params={"location": location},
        headers={},
        timeout=settings.DEMO_UPSTREAM_TIMEOUT_SECONDS,
        service="weather",
    )
    return {"location": location, "weather": weather}


# --- Integrations that need the user's setup (seed 003) -----------------------------------------------------


@tool(
    toolset=TOOLSET,
    title="Web search",
    description="""
        Search the web and return the top results with their titles, URLs and snippets.

        Use it for current events or facts that are not in the conversation or the stored documents.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 400,
                "description": "Search query or topic, in plain words.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY_REMOTE,
)
def web_search(query: str) -> dict[str, Any]:
    if not settings.DEMO_SEARCH_API_KEY or not settings.DEMO_SEARCH_URL:
        raise ConfigurationError(
            "web_search: DEMO_SEARCH_API_KEY/DEMO_SEARCH_URL not set",
            code="SERVICE_CONFIGURATION",
            service="web_search",
        )
    results = _fetch_json(
        settings.DEMO_SEARCH_URL,
        params={"q": query},
        headers={"Authorization": f"Bearer {settings.DEMO_SEARCH_API_KEY}"},
        timeout=settings.DEMO_UPSTREAM_TIMEOUT_SECONDS,
        service="web_search",
    )
    return {"query": query, "results": results}


@tool(
    toolset=TOOLSET,
    title="Read Gmail inbox",
    description="""
        List the most recent messages in the user's Gmail inbox: sender, subject, date and a short preview.

        Use it when the user asks about their email. It needs the user's Gmail integration to be connected.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "default": 10,
                "description": "Maximum number of messages to list, from 1 to 50. Default 10.",
            },
        },
        "additionalProperties": False,
    },
    annotations=READ_ONLY_REMOTE,
)
def read_inbox(limit: int = 10) -> dict[str, Any]:
    # The demo has no Gmail integration to connect, so this is always seed 003's "needs to be set up" case.
    raise ConfigurationError("read_inbox: Gmail is not connected", code="AUTHENTICATION_REQUIRED", service="gmail")


@tool(
    toolset=TOOLSET,
    title="Summarize text",
    description="""
        Summarize a text in a few sentences with the server's AI provider.

        Use it for long texts the user wants condensed. Pass the text itself, not a link to it.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100_000,
                "description": "The text to summarize.",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    annotations={**READ_ONLY_REMOTE, "idempotentHint": False},
)
def summarize_text(text: str) -> dict[str, Any]:
    # The demo's provider call is always refused the way OpenAI refuses an unsupported region: the AI SDK's
    # APICallError with a 403, converted to seed 001's LLMProviderError right after the call, which retrying cannot
    # fix (a 5xx would stay a system error, captured in Sentry).
    refused = APICallError(403, "openai", "summarize_text: unsupported_country_region_territory")
    raise llm_provider_error(refused)


# The project argument of both event-search tools.
PROJECT_PROPERTY = {
    "type": "string",
    "minLength": 1,
    "maxLength": 100,
    "description": f'Slug of the project whose events to search, such as "{DEMO_PROJECT}".',
}


@tool(
    toolset=TOOLSET,
    title="Search events",
    description=f"""
        Search the activity events (documents created or updated) of a project, newest first.

        Use it to see what changed recently. Name the project: querying across all projects is not allowed.
        The demo has one project, "{DEMO_PROJECT}".
    """,
    input_schema={
        "type": "object",
        "properties": {
            "project": PROJECT_PROPERTY,
            "query": {
                "type": "string",
                "maxLength": 200,
                "description": "Only events of documents whose title contains these words. Optional.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_LIMIT_MAX,
                "default": 10,
                "description": f"Maximum number of events to return, from 1 to {SEARCH_LIMIT_MAX}. Default 10.",
            },
        },
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
)
def search_events(project: str | None = None, query: str = "", limit: int = 10) -> dict[str, Any]:
    if project is None:
        # Seed 001's example: a token without multi-project access asked to query across all projects.
        raise create_api_error(403, "search_events: no multi-project access")
    if project != DEMO_PROJECT:
        raise create_api_error(404, "search_events: unknown project")
    events = documents.document_events(title_contains=query, limit=limit)
    return {"project": project, "count": len(events), "events": events}


# Seed 001's embedded agent tool: what an AI agent inside another tool calls. It never fails: it answers
# {"result": …} or {"error": "Input Error: …"} (``mcpserver.agent_tools``).
_search_events_for_agent = agent_tool(search_events)


@tool(
    toolset=TOOLSET,
    title="Search events (agent tool)",
    description=f"""
        Search the activity events of a project the way an embedded agent tool does (seed 001's agentTool).

        It always answers with an object: "result" holds the events; "error" says what went wrong and whether
        trying again can help. Name the project ("{DEMO_PROJECT}"): querying across all projects is not allowed.
    """,
    input_schema={
        "type": "object",
        "properties": {
            "project": PROJECT_PROPERTY,
        },
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
)
def agent_search_events(project: str | None = None) -> dict[str, Any]:
    return _search_events_for_agent(project=project)
