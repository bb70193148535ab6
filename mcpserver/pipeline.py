"""One tool call, from the request to the result: the spine of the MCP endpoint.

``call_tool`` reads top to bottom: rate limit → known tool within the scope → argument validation → elicitation of
missing input → run → result. Every failure on the way becomes a ``Failure`` rendered from the catalog
(``errcatalog.render``), so what reaches the model is catalog text and server-controlled values only.
Each call ends in one ``OutcomeEvent`` handed to the outcome recorder (``errcatalog.outcomes``).
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import mcp_types as types
import sentry_sdk
from django.db import close_old_connections
from sentry_sdk.integrations.logging import ignore_logger

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.catalog.snapshot import acatalog_snapshot
from errcatalog.errors import ErrcatalogError, bounded_retry_after, http_status, parse_retry_after
from errcatalog.gateway import inbox
from errcatalog.gateway.detail import screen_detail
from errcatalog.outcomes import prometheus, recorder
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.render import Failure, ParameterFault, RenderedError, UpstreamWords, did_you_mean, render, tool_result
from errcatalog.render.classify import FailureFacts, classification, facts_from_exception, known
from errcatalog.render.entries import CatalogSnapshot, CodeEntry
from errcatalog.render.patterns import captured_facts, inner_texts, parameter_named_in
from errcatalog.safety import safe_identifier
from errcatalog.vocabulary import recorded_tool_name
from mcpserver import elicitation, tracing
from mcpserver.call_settings import call_settings
from mcpserver.calls import RelayedProtocolError, ToolCall, current_tool_call
from mcpserver.gateway import server_tools
from mcpserver.gateway.results import NO_TEXT
from mcpserver.jsonrpc_errors import rendered_error
from mcpserver.ratelimit import rate_limit_retry_after
from mcpserver.registry import ToolOutput, ToolSpec, registry
from mcpserver.sdk_internals import wire
from mcpserver.tool_rounds import InputNeeded
from mcpserver.tool_threads import run_in_thread
from mcpserver.validation import parameter_fault, validate_arguments

logger = logging.getLogger("mcpserver.pipeline")
# Sentry's logging integration would turn the ERROR line of a system failure into a second event: the pipeline
# captures exactly one event per system failure itself, and user errors never.
ignore_logger(logger.name)

# Codes that are the caller's input problem: these may go out on the JSON-RPC channel (the question protocol).
INPUT_ERROR_CODES = frozenset({"INVALID_ARGUMENTS"})


async def call_tool(call: ToolCall) -> types.CallToolResult | types.InputRequiredResult:
    """Serve one tool call. Raises ``MCPError`` only when input errors go out on the JSON-RPC channel."""
    if not tracing.tracing_on():
        return await _serve(call)
    call.traced = True
    with tracing.tool_call_span(call):
        return await _serve(call)


async def _serve(call: ToolCall) -> types.CallToolResult | types.InputRequiredResult:
    mcp = call_settings.MCP
    # The tools of the server the request was sent to, by the names it serves them under (``/mcp``: every tool;
    # ``/mcp/<upstream>``: that upstream's, unprefixed); each spec's own name is the tool's served name at /mcp.
    enabled = server_tools(registry.enabled_by_name(mcp["TOOLSETS"]), call.server)
    spec = enabled.get(call.name)
    if spec is not None:
        call.upstream = spec.upstream
        call.served = True
        call.served_name = spec.name
    # A tool outside the token's scope is answered exactly as a tool that does not exist (same code, same face,
    # alternatives from the tools the token may call): a scoped token learns nothing of the tools hidden from it.
    # Scopes name tools as /mcp serves them, whichever server the call was sent to.
    if spec is not None and call.client is not None and not call.client.allows_tool(spec.name):
        spec = None
    fmt = _format(spec, call.arguments)
    # Only a tool the caller may call is named back to the model, by the name the model called it (its server's
    # name for it: unprefixed at an upstream's own path); never a name the caller typed that nothing serves.
    tool_name = call.name if spec is not None else None

    # Every call counts against the rate limit, before anything else is decided: calls outside the token's scope
    # and of unknown tools cost a refusal to answer, so they must not be free to repeat.
    if call.client is not None:
        retry_after = await rate_limit_retry_after(call.client.key, per_minute=mcp["RATE_LIMIT_PER_MINUTE"])
        if retry_after is not None:
            return await _fail(call, Failure("RATE_LIMIT", tool_name=tool_name, retry_after=retry_after), fmt)

    if spec is None:
        visible = [name for name, tool in enabled.items() if call.client is None or call.client.allows_tool(tool.name)]
        # Only names close to the one asked for: the catalog calls them "the closest matches", and a list of
        # unrelated tools under that name sends the model to the wrong one (tools/list says what there is).
        alternatives = did_you_mean(call.name, visible)
        return await _fail(call, Failure("FUNCTION_NOT_FOUND", alternatives=alternatives), fmt)

    arguments = dict(call.arguments)
    # Answers our elicitation added in an earlier round of this call, before the tool asked for more input.
    added = elicitation.carried_arguments(call) if call.modern else {}
    for name, value in added.items():
        arguments.setdefault(name, value)
    problems = validate_arguments(spec.listed_input_schema, arguments)
    elicited = None
    if problems.missing and not problems.invalid and _may_elicit(spec, call):
        question = await _question(spec, call.name, problems.missing, call.locales)
        answer = await elicitation.ask(spec, call, problems.missing, question)
        if isinstance(answer, types.InputRequiredResult):
            _record(call, None, elicited="requested", outcome="input_required")
            return answer
        if answer is not None:
            elicited = answer.action
            if answer.action != "accept":
                # Declined or dismissed: the model gets the question, to put to the user in its own words.
                return await _fail(call, _missing_failure(spec, call.name, problems.missing), fmt, elicited=elicited)
            arguments.update(answer.content)
            added.update(answer.content)
            problems = validate_arguments(spec.listed_input_schema, arguments)
    if problems.missing:
        return await _fail(call, _missing_failure(spec, call.name, problems.missing), fmt, elicited=elicited)
    if problems.invalid:
        return await _fail(
            call, Failure("INVALID_PARAMETER", tool_name=tool_name, parameters=problems.invalid[:1]), fmt
        )
    if problems.structural:
        return await _fail(call, Failure("INVALID_ARGUMENTS", tool_name=tool_name), fmt)

    try:
        output = await _run(spec, arguments, call)
        if isinstance(output, types.InputRequiredResult):  # our tool or an upstream asks a 2026-07-28 client
            _record(call, None, elicited="requested", outcome="input_required")
            return elicitation.carrying(output, added) if added else output
        result = _success(output)
    except RelayedProtocolError as exc:  # the client's protocol says what this is: no catalog text
        _record(call, None, elicited="requested", outcome="input_required")
        raise exc.error from None
    except Exception as exc:
        try:
            return await _fail_with_exception(call, spec, exc, fmt, elicited=elicited)
        finally:
            # Logged and captured by now. The traceback holds the frames of this call, which hold the exception:
            # a reference cycle that only the cyclic garbage collector would free, and at this rate its passes
            # cost more than the rest of a failed call.
            exc.__traceback__ = None
    _record(call, None, elicited=elicited)
    return result


# --- Steps ---------------------------------------------------------------------------------------------------


def _format(spec: ToolSpec | None, arguments: Mapping[str, Any]) -> str:
    default = call_settings.ERRCATALOG["DEFAULT_FORMAT"]
    if spec is None or not spec.formats:
        return default
    requested = arguments.get("format")
    return requested if requested in ("markdown", "json", "both") else default


def _may_elicit(spec: ToolSpec, call: ToolCall) -> bool:
    if not (spec.elicit and call.can_elicit and call_settings.MCP["ELICITATION"]):
        return False
    return call.modern or call.elicit_form is not None


# The same missing input recurs (a model that keeps leaving out one argument), and validation answers it with the
# same tuple each time (``mcpserver.validation``): its failure is built once (a frozen dataclass of ten fields
# costs microseconds to make). Keyed by identity (and the name the tool was called by), and the entry holds both, so
# an ID cannot be reused meanwhile.
_missing_failures: BoundedCache[tuple[int, int, str], tuple[ToolSpec, tuple[ParameterFault, ...], Failure]] = (
    process_cache("mcpserver.pipeline.missing_failures", scope="process", max_entries=1024)
)


def _missing_failure(spec: ToolSpec, called: str, missing: tuple[ParameterFault, ...]) -> Failure:
    """The failure for ``missing`` input of ``spec``, called by the name ``called`` (its server's name for it)."""
    key = (id(spec), id(missing), called)
    hit = _missing_failures.get(key)
    if hit is not None and hit[0] is spec and hit[1] is missing:
        return hit[2]
    failure = Failure(
        "MISSING_PARAMETER",
        tool_name=called,
        parameters=missing,
        optional_parameters=spec.optional_parameters,
        guidance=spec.guidance,
    )
    _missing_failures.set(key, (spec, missing, failure))
    return failure


async def _question(
    spec: ToolSpec, called: str, missing: tuple[ParameterFault, ...], locales: tuple[str, ...] = ()
) -> str:
    """The catalog's question for the missing parameters: also the message of an elicitation."""
    return _render(await acatalog_snapshot(), _missing_failure(spec, called, missing), locales).text


async def _run(spec: ToolSpec, arguments: dict[str, Any], call: ToolCall) -> Any:
    # Arguments the schema lets through but the function does not take (``format``, or extra properties when
    # the schema allows them) are dropped: a TypeError here would be our bug reported as the caller's failure.
    accepted = spec.accepted_arguments
    kwargs = {k: v for k, v in arguments.items() if accepted is None or k in accepted}
    if spec.wants_context:
        kwargs["context"] = call.context
    if spec.upstream:
        # A gateway forwarder takes no ``context`` (the name may be an upstream argument): it reads the call here.
        token = current_tool_call.set(call)
        try:
            return await spec.function(**kwargs)
        finally:
            current_tool_call.reset(token)
    if spec.is_async:
        try:
            return await spec.function(**kwargs)
        except InputNeeded as needed:  # the tool asked its 2026-07-28 client for input (``tool_rounds``)
            return needed.result
    return await run_in_thread(_call_in_thread, spec.function, kwargs)


def _call_in_thread(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    # Tool calls do not pass through Django's request cycle, so the worker thread tidies its connection
    # the way Django does around each request.
    close_old_connections()
    try:
        return function(**kwargs)
    finally:
        close_old_connections()


class InvalidToolOutput(ErrcatalogError):
    """A tool returned content blocks that are not valid MCP content: a bug in the tool, not the caller's fault."""

    code = "EXECUTION_FAILURE"


def sdk_content_block(block: Any) -> Any:
    """A content block as the SDK can carry it: a text block's ``mimeType`` moves into its ``_meta``.

    The toolError:v1 envelope puts ``mimeType`` on text blocks, but MCP's ``TextContent`` has no such field and the
    SDK drops unknown fields; ``_meta`` is the place the protocol leaves for such metadata, so clients still find it
    there.
    """
    if not isinstance(block, dict) or block.get("type") != "text" or "mimeType" not in block:
        return block
    block = dict(block)
    mime_type = block.pop("mimeType")
    meta = block.get("_meta")
    block["_meta"] = {**meta, "mimeType": mime_type} if isinstance(meta, dict) else {"mimeType": mime_type}
    return block


def _success(output: Any) -> types.CallToolResult:
    if isinstance(output, types.CallToolResult):  # an upstream's result: the tool's data, passed on unchanged
        return output
    if isinstance(output, ToolOutput):
        try:
            return types.CallToolResult.model_validate(
                {"content": [sdk_content_block(b) for b in output.content], "structuredContent": output.structured},
                by_name=False,
            )
        except ValueError as exc:  # pydantic's ValidationError; its text names the tool's own output only
            raise InvalidToolOutput("tool returned invalid MCP content") from exc
    if isinstance(output, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=output)])
    if isinstance(output, dict | list):
        text = json.dumps(output, ensure_ascii=False, default=str)
        structured = output if isinstance(output, dict) else None
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)
    if output is None:
        return types.CallToolResult(content=[])
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(output))])


async def _fail_with_exception(
    call: ToolCall, spec: ToolSpec, exc: Exception, fmt: str, *, elicited: str | None
) -> types.CallToolResult:
    snapshot = await acatalog_snapshot()
    # Rules may name an upstream and one of its tools; our own tools' failures are classified by what they raise.
    facts = facts_from_exception(exc, upstream=spec.upstream, tool=spec.name if spec.upstream else "")
    found = classification(snapshot, facts)
    code, rule = found.code, found.rule
    entry = snapshot.entry(code)
    words_allowed = getattr(exc, "words", "") if facts.kind else ""
    # The screen reads the words whenever anything of them may reach the model: quoted, or their facts.
    words, withheld = _upstream_words(spec, facts) if words_allowed in ("quoted", "facts") else (None, False)
    if words_allowed != "quoted":
        words = None
    if facts.kind:
        # An upstream's failure: counted, and when no specific rule knew it or its text spoke to the model, kept for
        # staff (the text goes to admin's inbox, cut and redacted; never to the model).
        inbox.note(
            spec.upstream,
            spec.name,
            facts.kind,
            facts.text,
            classified=known(entry.code, rule),
            withheld=withheld,
        )
    # What the rule's pattern captured (an identifier, a path, the values accepted), each in its one shape: read
    # unless the upstream's words are withheld (by staff, or by the screen: they spoke to the model), like the
    # parameter its text names.
    facts_allowed = words_allowed != "withheld" and not withheld
    captured = captured_facts(rule.pattern, found.text) if rule and facts_allowed else ()
    parameters = _exception_parameters(exc) or (
        _parameters_named(spec, facts.text, entry, call.arguments, captured, found.text)
        if words_allowed != "withheld"
        else ()
    )
    if code == "INVALID_PARAMETER" and not parameters and _FOR_NO_PARAMETER in snapshot.codes:
        # INVALID_PARAMETER's text is about one parameter; when the failure names none of the tool's, the values
        # as a whole were rejected, which is what VALIDATION_ERROR says.
        entry = snapshot.entry(_FOR_NO_PARAMETER)
    event_id = None
    if entry.system:
        # The exception (message, traceback) goes to Sentry, never to the model; the model gets the event ID.
        if sentry_sdk.get_client().is_active():
            event_id = sentry_sdk.capture_exception(
                exc, fingerprint=["errcatalog", entry.code], tags={"tool": spec.name, "code": entry.code}
            )
            # Sentry keeps the traceback; formatting it again for the log would double the cost of a failure. The
            # exception's own words (an upstream's: already cut and redacted) stay in the log all the same.
            logger.error(
                "Tool %s failed with %s (Sentry event %s): %s: %.2000s",
                spec.name,
                entry.code,
                event_id,
                type(exc).__name__,
                exc,
            )
        elif _traceback_due(spec.name, entry.code):
            # Without Sentry (capture_exception would still build a whole event), the log keeps the traceback.
            logger.error("Tool %s failed with %s", spec.name, entry.code, exc_info=exc)
        else:
            logger.error(
                "Tool %s failed with %s again (traceback logged at most once a minute per tool and code)",
                spec.name,
                entry.code,
            )
    failure = Failure(
        entry.code,
        # The name the model called the tool by (its server's); rules, the inbox, logs and Sentry know its served one.
        tool_name=call.name,
        status_code=http_status(getattr(exc, "status_code", None)),
        event_id=event_id,
        retry_after=_retry_hint(getattr(exc, "retry_after", None), entry),
        service=getattr(exc, "service", None) if isinstance(getattr(exc, "service", None), str) else None,
        parameters=parameters,
        alternatives=tuple(a for a in getattr(exc, "alternatives", ()) if isinstance(a, str)),
        network_failure=facts.transport or _network_failure_said(facts, entry),
        # The tool's own partial output (what a timed-out tool finished), never text taken from the exception.
        partial_result=getattr(exc, "partial_result", None) if isinstance(exc, ErrcatalogError) else None,
        # Read only when a parameter is missing: what else the tool takes, and what it is for.
        optional_parameters=spec.optional_parameters if parameters else (),
        guidance=spec.guidance if parameters else "",
        upstream_words=words,
        rule_sentence=rule.says if rule else "",
        captured=captured,
    )
    return await _fail(call, failure, fmt, elicited=elicited, snapshot=snapshot)


# The failures whose text an upstream wrote about its tool's failure, for the model: a tool's error result (written
# for the model, by the MCP specification) and a JSON-RPC error's message. An HTTP error page, a timeout or an answer
# that is not MCP carry our words or a proxy's, not the upstream's.
_QUOTED_KINDS = frozenset({"tool_error", "jsonrpc_error"})


def _upstream_words(spec: ToolSpec, facts: FailureFacts) -> tuple[UpstreamWords | None, bool]:
    """The upstream's own words about its failure, screened for the model (``errcatalog.gateway.detail``), or None:
    none were said, or the screen withheld them (they spoke to the model: then True, and the log says so in fixed
    words and the inbox counts it for staff)."""
    if facts.kind not in _QUOTED_KINDS or not facts.text or facts.text == NO_TEXT:
        return None, False
    screened = screen_detail(facts.text, max_chars=call_settings.GATEWAY["FAILURE_WORDS_MAX_CHARS"])
    if screened.withheld:
        logger.warning(
            "Upstream %s: the failure text of its tool %s was withheld from the model (%s)",
            spec.upstream,
            spec.upstream_tool or spec.name,
            ", ".join(screened.flags) or screened.withheld,
        )
        return None, True
    return (UpstreamWords(spec.upstream, screened.text) if screened.text else None), False


# A failing tool can fail thousands of times a minute; one traceback per tool and code and minute tells an
# operator as much as all of them, and formatting each costs more than the rest of the call.
TRACEBACK_INTERVAL_SECONDS = 60.0
# One entry per tool and code that failed within the interval; the bound only guards memory.
_tracebacks_logged: BoundedCache[tuple[str, str], bool] = process_cache(
    "mcpserver.pipeline.tracebacks_logged", scope="process", max_entries=4096, max_age=TRACEBACK_INTERVAL_SECONDS
)


def _traceback_due(tool: str, code: str) -> bool:
    if _tracebacks_logged.get((tool, code)) is not None:
        return False
    _tracebacks_logged.set((tool, code), True)
    return True


def _retry_hint(raw: object, entry: CodeEntry) -> int | None:
    """The retry-after hint for a failure of ``entry``: the raiser's value (any shape an upstream sends) or, when
    that says nothing usable, the catalog's, always within 1 s and ``MAX_RETRY_AFTER_SECONDS``."""
    if not entry.retryable:
        return None
    seconds = parse_retry_after(raw)
    if seconds is None:
        seconds = entry.retry_after_seconds
    return bounded_retry_after(seconds, maximum=call_settings.ERRCATALOG["MAX_RETRY_AFTER_SECONDS"])


def _exception_parameters(exc: Exception) -> tuple[ParameterFault, ...]:
    name = getattr(exc, "parameter", None)
    if not isinstance(name, str):
        return ()
    expected = getattr(exc, "expected_format", None)
    # A tool that finds a required value blank raises MISSING_PARAMETER: the parameter is then missing, so the
    # catalog's question for it (the parameter hint) is asked, rather than a question about its format.
    problem = "missing" if getattr(exc, "code", None) == "MISSING_PARAMETER" else "invalid"
    return (ParameterFault(name, problem=problem, expected_format=expected if isinstance(expected, str) else ""),)


def _network_failure_said(facts: FailureFacts, entry: CodeEntry) -> str | None:
    """An upstream tool's own report of a network failure (a rule on its text chose a network code): its connection
    to the service behind it failed, as far as we know; our connection to the upstream was fine."""
    return "connection" if facts.kind == "tool_error" and entry.category == "network" else None


# The code for a failure a rule calls INVALID_PARAMETER whose text names none of the tool's parameters.
_FOR_NO_PARAMETER = "VALIDATION_ERROR"


# The codes whose failures carry parameters (the catalog's lint counts both sets below, errcatalog.catalog.lint):
# interactive codes and those of these categories.
_PARAMETER_CATEGORIES = frozenset({"user_input", "validation", "client", "tool", "protocol", "not_found"})
# A refusal (a path outside the allowed folders, a private address) and a place that cannot be reached (a URL, a
# host) name the parameter only by the value they quote back: their words are about who may do what and what
# answered, and name no parameter of the tool.
_ECHO_ONLY_CATEGORIES = frozenset({"authentication", "network"})


def _parameters_named(
    spec: ToolSpec,
    text: str,
    entry: CodeEntry,
    arguments: Mapping[str, Any],
    captured: tuple[tuple[str, str], ...] = (),
    matched: str = "",
) -> tuple[ParameterFault, ...]:
    """The tool's input property an upstream's failure is about, described from the tool's schema, when the code
    chosen says the input was wrong, names nothing that exists or was refused.

    In order: the property at the start of the path the rule captured; the property the words the rule matched name
    (``matched``: words a wrapper holds, "url: Invalid URL"); the one argument whose value the text quotes back (an
    identifier that matches nothing, a path), which says more than a property's name met in the text's prose
    ("Invalid time zone specified: Europe/Londn" is about the zone, not a ``time`` property); a property the text
    names; the path of a validation issue in a JSON error body the text holds; the tool's one text property (a
    query, a command) when it has at most one other, which then holds whatever the text found wrong. The text only
    picks among the schema's names: nothing of it is rendered.
    """
    if not text:
        return ()
    properties = spec.listed_input_schema.get("properties")
    if not isinstance(properties, Mapping):
        return ()
    described = {n: p for n, p in properties.items() if isinstance(n, str) and isinstance(p, Mapping)}
    if entry.kind != "needs_input" and entry.category in _ECHO_ONLY_CATEGORIES:
        echoed = _parameter_echoed(text, described, arguments)
        return (replace(parameter_fault(echoed, described[echoed], "invalid"), expected_format=""),) if echoed else ()
    if entry.system or not (entry.kind == "needs_input" or entry.category in _PARAMETER_CATEGORIES):
        return ()
    name = (
        _property_at(dict(captured).get("path", ""), described)
        or (parameter_named_in(matched, described) if matched and matched != text else None)
        or _parameter_echoed(text, described, arguments)
        or parameter_named_in(text, described)
        or next(filter(None, (_property_at(path, described) for path in _paths_in(text))), None)
    )
    if name is None:
        texts = [n for n, p in described.items() if p.get("type") == "string" and "enum" not in p]
        name = texts[0] if len(texts) == 1 and len(described) <= 2 else None
    if name is None:
        return ()
    # The call met the schema before it was forwarded, so what the schema says of the value (a string, one of these,
    # from 1 to 10) is what the upstream refused it despite: saying it again would point the model the wrong way.
    # What the upstream expects is in its own words, quoted after the catalog's.
    return (replace(parameter_fault(name, described[name], "invalid"), expected_format=""),)


def _property_at(path: str, properties: Mapping[str, Any]) -> str | None:
    """The property at the start of a parameter or JSON path (``entities[0].name``, ``/url``), matched as the schema
    writes it or else regardless of case (a sentence starts "Query must be ..." for ``query``)."""
    top = re.split(r"[./\[]", path.lstrip("/"), maxsplit=1)[0]
    if not top or top in properties:
        return top or None
    folded = [name for name in properties if name.lower() == top.lower()]
    return folded[0] if len(folded) == 1 else None


# A validation library's issue as ``inner_texts`` words it: its message, then " at " and the path of the value.
_AT_PATH = re.compile(r" at ([A-Za-z0-9_$-]{1,64}(?:[.\[][A-Za-z0-9_$\]-]{0,64}){0,8})$")


def _paths_in(text: str) -> Iterator[str]:
    """The paths of the validation issues a JSON error body in ``text`` holds (``[{"path": ["url"], ...}]``)."""
    for inner in inner_texts(text):
        found = _AT_PATH.search(inner)
        if found:
            yield found.group(1)


# An argument's value quoted back in a failure's text names its parameter only when it is this long: shorter ones
# ("1", "ab") turn up in texts by chance.
_ECHO_MIN_CHARS = 3


# How many strings of one argument are looked for in a text: an entity's name inside a list of objects is found, and
# a large argument costs no more than this.
_ECHO_MAX_STRINGS = 64


def _parameter_echoed(text: str, properties: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """The one property whose argument (a string, or a string inside its lists and objects) the text contains, else
    None (none does, or several do)."""
    echoed = [
        name
        for name, value in arguments.items()
        if name in properties
        and any(len(s) >= _ECHO_MIN_CHARS and s in text for s in itertools.islice(_strings(value), _ECHO_MAX_STRINGS))
    ]
    return echoed[0] if len(echoed) == 1 else None


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < 4 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)


def _render(snapshot: CatalogSnapshot, failure: Failure, locales: tuple[str, ...] = ()) -> RenderedError:
    # The variant is picked by weight for each rendered error, which is what the A/B metrics compare.
    return render(
        snapshot,
        failure,
        locales=locales,
        pick=random.random(),  # noqa: S311 (choosing a wording, not a secret)
        max_chars=call_settings.ERRCATALOG["MAX_MESSAGE_CHARS"],
    )


async def _fail(
    call: ToolCall,
    failure: Failure,
    fmt: str,
    *,
    elicited: str | None = None,
    snapshot: CatalogSnapshot | None = None,
) -> types.CallToolResult:
    rendered = _render(snapshot or await acatalog_snapshot(), failure, call.locales)
    if not rendered.system and logger.isEnabledFor(logging.WARNING):
        # User-correctable: logged for people, never sent to Sentry.
        logger.warning("Tool call %s answered with %s", safe_identifier(call.name), rendered.code)
    _record(call, rendered, elicited=elicited)
    if _goes_out_as_jsonrpc(rendered):
        raise rendered_error(rendered, protocol_version=call.protocol_version)
    return _result_of(rendered, fmt)


# Validated results by render: a failure that repeats (the same missing argument, the same unknown tool) reuses
# its CallToolResult instead of building and validating it again. Renders are cached per catalog snapshot, so a
# render object stands for one text; the SDK only serialises results, never changes them. Cleared with the
# catalog, so the renders of a replaced snapshot are not kept alive here.
RESULT_CACHE_SIZE = 1024
_results: BoundedCache[tuple[int, str], tuple[RenderedError, types.CallToolResult]] = process_cache(
    "mcpserver.pipeline.tool_results", scope="catalog", max_entries=RESULT_CACHE_SIZE
)


def _result_of(rendered: RenderedError, fmt: str) -> types.CallToolResult:
    key = (id(rendered), fmt)
    hit = _results.get(key)
    if hit is not None and hit[0] is rendered:  # the entry holds the render, so its id cannot be reused meanwhile
        return hit[1]
    result = tool_result(rendered, fmt)
    result["content"] = [sdk_content_block(block) for block in result["content"]]
    validated = types.CallToolResult.model_validate(result, by_name=False)
    if rendered.event_id is None:  # an event ID is new with every failure: nothing to reuse
        _results.set(key, (rendered, validated))
        wire.remember(validated)  # and its wire form, made once
    return validated


def _goes_out_as_jsonrpc(rendered: RenderedError) -> bool:
    if call_settings.ERRCATALOG["INPUT_ERROR_CHANNEL"] != "jsonrpc":
        return False
    return rendered.kind == "needs_input" or rendered.code in INPUT_ERROR_CODES


def _record(
    call: ToolCall, rendered: RenderedError | None, *, elicited: str | None, outcome: str | None = None
) -> None:
    event = OutcomeEvent(
        # An unknown name is the caller's text: kept only if it is a tool name; any other is counted under one
        # placeholder, so every call shows in the metrics.
        # under the tool's served name at /mcp when it is served (so one tool's metrics do not split by the path it
        # was called at).
        tool=call.served_name or recorded_tool_name(call.name),
        client=call.client.key if call.client else None,
        session=call.session_id,
        outcome=outcome or ("ok" if rendered is None else "error"),
        code=rendered.code if rendered else None,
        variant=rendered.variant if rendered else None,
        locale=rendered.locale or None if rendered else None,
        upstream=call.upstream or None,
        interactive=bool(rendered and rendered.interactive) or elicited is not None,
        latency_ms=(time.perf_counter() - call.started) * 1000,
        elicitation=elicited,
        sentry_event_id=rendered.event_id if rendered else None,
        trace_id=tracing.current_trace_id() if call.traced else None,
    )
    prometheus.observe_call(event, served=call.served)
    if call.traced:
        tracing.note_outcome(event, served=call.served)
    recorder.record(event)
