"""Classification: from the facts of a raw failure to a catalog code, by the catalog's ordered rules.

``classify`` is pure and works on ``FailureFacts``; ``facts_from_exception`` is the small adapter that reads
an exception's type, status and transport kind, and for an upstream's failure its kind and its cut, redacted text.
The text only chooses a code: rules match patterns against it (``errcatalog.render.patterns``), and nothing
rendered is ever taken from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.errors import http_status
from errcatalog.render.entries import UNKNOWN_CODE, CatalogSnapshot, RuleEntry
from errcatalog.render.patterns import TEXT_MAX_CHARS, inner_texts
from errcatalog.vocabulary import UNCLASSIFIED_UPSTREAM_CODES

# Exception class names, from the standard library and common HTTP clients, that mean the network failed.
_TIMEOUT_NAMES = frozenset({"TimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout", "Timeout"})
_CONNECTION_NAMES = frozenset({"ConnectionError", "ConnectError", "NetworkError", "RemoteProtocolError"})


@dataclass(frozen=True, slots=True)
class FailureFacts:
    """What is known about a failure.

    ``text`` is an upstream's own failure text (cut and redacted: ``errcatalog.safety.redacted_for_people``). It is
    read here for one thing: matching rules' patterns, which choose a code. The renderer takes a ``Failure``
    (``errcatalog.render.core``), built from the chosen code and typed facts; this text reaches it only as the quote
    the gateway's screen makes of it (``UpstreamWords``). It is left out of ``repr`` so that logging facts cannot
    print it.
    """

    exception_types: tuple[str, ...] = ()  # the exception's class and its bases, most specific first
    status_code: int | None = None
    jsonrpc_code: int | None = None
    upstream: str = ""
    tool: str = ""  # as /mcp serves it; set only for an upstream's tools, the one case rules name tools for
    transport: str = ""  # "timeout", "connection" or ""
    code: str | None = None  # set when the raiser named the catalog code itself
    kind: str = ""  # how an upstream's call failed (errcatalog.vocabulary.UPSTREAM_FAILURE_KINDS), else ""
    text: str = field(default="", repr=False)


def _without_text(facts: FailureFacts) -> FailureFacts:
    """``facts`` with no text: ``dataclasses.replace(facts, text="")``, by the constructor, since ``replace`` reads
    the fields anew on every call, which every classification would pay."""
    return FailureFacts(
        facts.exception_types, facts.status_code, facts.jsonrpc_code, facts.upstream, facts.tool, facts.transport,
        facts.code, facts.kind,
    )  # fmt: skip


# Exception classes live as long as the process; their names and transport kind are read once per class.
_type_facts: BoundedCache[type, tuple[tuple[str, ...], str]] = process_cache(
    "errcatalog.render.classify.type_facts", scope="process", max_entries=1024
)


def classify(snapshot: CatalogSnapshot, facts: FailureFacts) -> str:
    """The catalog code for ``facts``: the raiser's own code if the catalog has it, else the first rule that
    matches, else UNKNOWN_ERROR. A rule with a pattern matches only a failure with text the pattern is found in."""
    return classification(snapshot, facts)[0]


class Classification(NamedTuple):
    """What classification found: the code, the rule that chose it (None: the raiser's own code, or no rule), and
    the words its pattern was found in (the failure's text, or words wrapped inside it: ``patterns.inner_texts``),
    from which the pattern's captures are taken."""

    code: str
    rule: RuleEntry | None = None
    text: str = ""


_UNKNOWN = Classification(UNKNOWN_CODE)


def known(code: str, rule: RuleEntry | None) -> bool:
    """A specific rule chose ``code`` for an upstream's failure: not a fallback's code that claims no cause
    (``UNCLASSIFIED_UPSTREAM_CODES``), nor a generic rule's guess from common words. What no rule knows is counted as
    unclassified and kept in admin's inbox."""
    return code not in UNCLASSIFIED_UPSTREAM_CODES and not (rule is not None and rule.generic)


def classification(snapshot: CatalogSnapshot, facts: FailureFacts) -> Classification:
    """``classify``'s code with the rule that chose it, whose pattern may capture facts and whose sentence may
    place them (``errcatalog.render.patterns.captured_facts``, ``RuleEntry.says``)."""
    if facts.text:
        return _classify_text(snapshot, facts)
    found = snapshot.classify_cache.get(facts)
    if found is None:
        found = _classify(snapshot, facts)
        snapshot.classify_cache.set(facts, found)
    return found


def _classify(snapshot: CatalogSnapshot, facts: FailureFacts) -> Classification:
    if facts.code and _own_code(snapshot, facts.code):
        return Classification(facts.code)
    for rule in snapshot.rules:
        if not rule.pattern and _usable(snapshot, rule) and _matches(rule, facts):
            return Classification(rule.code, rule)
    return _UNKNOWN


# A plan for facts with text: the rules that match all but their pattern, in order, each with its pattern's index
# in the snapshot's PatternSet (None: no pattern, so the rule matches; -1: a pattern RE2 refused).
_Plan = tuple[tuple[RuleEntry, int | None], ...]


def _classify_text(snapshot: CatalogSnapshot, facts: FailureFacts) -> Classification:
    # The text varies with every failure and would fill any cache; the rest of the facts repeat. So the rules are
    # narrowed by the other facts once (cached), and the text is matched against all patterns in one RE2 pass,
    # only when a rule with a pattern comes before the first rule without one.
    if facts.code and _own_code(snapshot, facts.code):
        return Classification(facts.code)
    key = _without_text(facts)
    plan: _Plan | None = snapshot.classify_plans.get(key)
    if plan is None:
        plan = _plan(snapshot, key)
        snapshot.classify_plans.set(key, plan)
    if not plan:
        return _UNKNOWN
    if plan[0][1] is None:
        return Classification(plan[0][0].code, plan[0][0], facts.text)
    found = snapshot.text_patterns.matching(facts.text)
    read, guessing = 0, False  # plan[:read] were read on the words wrappers hold too
    for at, (rule, index) in enumerate(plan):
        if index is None or (rule.generic and not guessing):
            # No specific rule knows the words as they stand: what a wrapper holds is read before a generic rule
            # guesses from common words anywhere in them, and before the rule for any text.
            if (inner := _inner(snapshot, plan[read:at], facts.text)) is not None:
                return inner
            read, guessing = at, True
            if index is None:
                return Classification(rule.code, rule, facts.text)
        if index in found:
            return Classification(rule.code, rule, facts.text)
    return _inner(snapshot, plan[read:], facts.text) or _UNKNOWN


def _inner(snapshot: CatalogSnapshot, plan: _Plan, text: str) -> Classification | None:
    """The first rule with a pattern that matches words wrapped inside ``text``, in ``inner_texts`` order."""
    patterns = snapshot.text_patterns
    whole = text[:TEXT_MAX_CHARS]
    for inner in inner_texts(text):
        # A wrapper's words are part of the text, which was read whole; a JSON body's message, unescaped, is not.
        found = patterns.matching_part(inner) if inner in whole else patterns.matching(inner)
        if not found:
            continue
        for rule, index in plan:
            if index is not None and index in found:
                return Classification(rule.code, rule, inner)
    return None


def _plan(snapshot: CatalogSnapshot, facts: FailureFacts) -> _Plan:
    plan: list[tuple[RuleEntry, int | None]] = []
    for rule in snapshot.rules:
        if not (_usable(snapshot, rule) and _matches(rule, facts)):
            continue
        if not rule.pattern:
            plan.append((rule, None))
            break
        index = snapshot.text_patterns.index(rule.pattern)
        plan.append((rule, -1 if index is None else index))
    return tuple(plan)


def _own_code(snapshot: CatalogSnapshot, code: str) -> bool:
    return code in snapshot.codes and snapshot.codes[code].active


def _usable(snapshot: CatalogSnapshot, rule: RuleEntry) -> bool:
    return rule.active and rule.code in snapshot.codes


def _matches(rule: RuleEntry, facts: FailureFacts) -> bool:
    """Whether every condition ``rule`` sets, but its pattern, holds for ``facts``."""
    conditions = (
        not rule.exception or rule.exception in facts.exception_types,
        rule.status_min is None or (facts.status_code is not None and facts.status_code >= rule.status_min),
        rule.status_max is None or (facts.status_code is not None and facts.status_code <= rule.status_max),
        rule.jsonrpc_code is None or rule.jsonrpc_code == facts.jsonrpc_code,
        not rule.upstream or rule.upstream == facts.upstream,
        not rule.tool or rule.tool == facts.tool,
        not rule.transport or rule.transport == facts.transport,
        not rule.kind or rule.kind == facts.kind,
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
            rule.kind,
            rule.pattern,
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
    """Read the classifiable facts of an exception: its type names, status code and transport kind; for an
    upstream's failure, also its kind and text (for patterns only, see ``FailureFacts``)."""
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
    # An upstream's failure (mcpserver.gateway.failures) says how it failed and carries its text, cut and redacted.
    failure_kind = getattr(exc, "failure_kind", "")
    failure_text = getattr(exc, "failure_text", "")
    return FailureFacts(
        exception_types=names,
        # A number outside 100-599 is not a status: the failure is classified as if it had none.
        status_code=http_status(status),
        jsonrpc_code=jsonrpc if isinstance(jsonrpc, int) else None,
        upstream=upstream,
        tool=tool,
        transport=transport,
        code=code if isinstance(code, str) else None,
        kind=failure_kind if isinstance(failure_kind, str) else "",
        text=failure_text[:TEXT_MAX_CHARS] if isinstance(failure_text, str) else "",
    )
