"""Classification: from the facts of a raw failure to a catalog code, by the catalog's ordered rules.

``classify`` is pure and works on ``FailureFacts``; ``facts_from_exception`` is the small adapter that reads
an exception's type, status and transport kind (never its message).
"""

from __future__ import annotations

from dataclasses import dataclass

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.errors import http_status
from errcatalog.render.entries import UNKNOWN_CODE, CatalogSnapshot, RuleEntry

# Exception class names, from the standard library and common HTTP clients, that mean the network failed.
_TIMEOUT_NAMES = frozenset({"TimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout", "Timeout"})
_CONNECTION_NAMES = frozenset({"ConnectionError", "ConnectError", "NetworkError", "RemoteProtocolError"})


@dataclass(frozen=True, slots=True)
class FailureFacts:
    """What is known about a failure, without any of its text."""

    exception_types: tuple[str, ...] = ()  # the exception's class and its bases, most specific first
    status_code: int | None = None
    jsonrpc_code: int | None = None
    upstream: str = ""
    tool: str = ""  # as /mcp serves it; set only for an upstream's tools, the one case rules name tools for
    transport: str = ""  # "timeout", "connection" or ""
    code: str | None = None  # set when the raiser named the catalog code itself


# Exception classes live as long as the process; their names and transport kind are read once per class.
_type_facts: BoundedCache[type, tuple[tuple[str, ...], str]] = process_cache(
    "errcatalog.render.classify.type_facts", scope="process", max_entries=1024
)


def classify(snapshot: CatalogSnapshot, facts: FailureFacts) -> str:
    """The catalog code for ``facts``: the raiser's own code if the catalog has it, else the first rule that
    matches, else UNKNOWN_ERROR."""
    code = snapshot.classify_cache.get(facts)
    if code is None:
        code = _classify(snapshot, facts)
        snapshot.classify_cache.set(facts, code)
    return code


def _classify(snapshot: CatalogSnapshot, facts: FailureFacts) -> str:
    if facts.code and facts.code in snapshot.codes and snapshot.codes[facts.code].active:
        return facts.code
    for rule in snapshot.rules:
        if rule.active and _matches(rule, facts) and rule.code in snapshot.codes:
            return rule.code
    return UNKNOWN_CODE


def _matches(rule: RuleEntry, facts: FailureFacts) -> bool:
    conditions = (
        not rule.exception or rule.exception in facts.exception_types,
        rule.status_min is None or (facts.status_code is not None and facts.status_code >= rule.status_min),
        rule.status_max is None or (facts.status_code is not None and facts.status_code <= rule.status_max),
        rule.jsonrpc_code is None or rule.jsonrpc_code == facts.jsonrpc_code,
        not rule.upstream or rule.upstream == facts.upstream,
        not rule.tool or rule.tool == facts.tool,
        not rule.transport or rule.transport == facts.transport,
    )
    # A rule with no condition at all would swallow everything after it; it never matches.
    has_condition = any(
        (
            rule.exception,
            rule.status_min is not None,
            rule.status_max is not None,
            rule.jsonrpc_code is not None,
            rule.upstream,
            rule.tool,
            rule.transport,
        )
    )
    return has_condition and all(conditions)


def transport_for(exception_types: tuple[str, ...]) -> str:
    """The transport failure (timeout or connection) that exception class names imply, else an empty string."""
    if _TIMEOUT_NAMES.intersection(exception_types):
        return "timeout"
    if _CONNECTION_NAMES.intersection(exception_types):
        return "connection"
    return ""


def facts_from_exception(exc: BaseException, *, upstream: str = "", tool: str = "") -> FailureFacts:
    """Read the classifiable facts of an exception: its type names, status code and transport kind."""
    kind = type(exc)
    known = _type_facts.get(kind)
    if known is None:
        names = tuple(cls.__name__ for cls in kind.__mro__ if cls not in (object, BaseException))
        known = (names, transport_for(names))
        _type_facts.set(kind, known)
    names, transport = known
    status = getattr(exc, "status_code", None)
    jsonrpc = getattr(exc, "jsonrpc_code", None)
    code = getattr(exc, "code", None)
    return FailureFacts(
        exception_types=names,
        # A number outside 100-599 is not a status: the failure is classified as if it had none.
        status_code=http_status(status),
        jsonrpc_code=jsonrpc if isinstance(jsonrpc, int) else None,
        upstream=upstream,
        tool=tool,
        transport=transport,
        code=code if isinstance(code, str) else None,
    )
