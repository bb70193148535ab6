"""Classification rules' patterns over a failure's own text: case-insensitive, matched by RE2 in linear time.

An upstream chooses the text its failures carry, and an operator writes the patterns; neither can make matching
slow. RE2 has no backtracking (no look-around, no back-references), so a match costs time linear in the text and
the pattern, and both are bounded: a pattern by ``PATTERN_MAX_CHARS`` (checked when a rule is saved), the text by
``TEXT_MAX_CHARS`` (only its beginning is matched). A snapshot matches all its rules' patterns against a text in one
pass (``PatternSet``, an ``RE2::Set``), however many rules it has. Pure: no ORM, no I/O.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import re2

from errcatalog.input_limits import json_loads_bounded

# A pattern is a few words an operator picked from a failure's text; 500 characters leave room for alternatives.
PATTERN_MAX_CHARS = 500
# Only the text's beginning is matched: an upstream's failure text is cut to 2,000 characters before anything reads
# it (errcatalog.safety.UNTRUSTED_TEXT_MAX_CHARS), and what tells one failure from another is at its start.
TEXT_MAX_CHARS = 2000
# Memory RE2 may use for one pattern's automata (its default is 8 MiB): a pattern that needs more is refused when
# the rule is saved rather than slowing every failure down.
_MAX_MEMORY = 8 << 20
# Memory for the automaton of all rules' patterns together. RE2 builds its DFA's states as texts need them and, when
# they outgrow the budget, throws them all away and starts over; with every rule in one set, 8 MiB holds the states of
# a few dozen distinct texts, and each failure then pays for rebuilding them (a pass costs about fifteen times more).
# States are built only as texts reach them, so a process uses this much only under a stream of very varied texts.
_SET_MAX_MEMORY = 64 << 20


def _options(*, max_mem: int = _MAX_MEMORY) -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False  # a refused pattern is reported to whoever wrote it, not to the process's stderr
    options.max_mem = max_mem
    return options


# The facts a pattern may capture by name, ``(?P<name>…)``, for the rule's sentence (``RuleEntry.says``) to place,
# each with the only shape it is kept in: a value of another shape is dropped, so a capture can carry no
# instruction, markup or secret, whatever the text around it says. ``name``: an identifier the failure is about (a
# table, a column, a key, an entity, a branch, a file); ``path``: a parameter or JSON path (``entities[0].entityType``,
# ``/entities/0``); ``expected``: an expected type or the values accepted (``boolean``, ``true or false``,
# ``'asc' | 'desc'``).
_TERM = r"""[`'"]?[A-Za-z0-9_.$@:+-]{1,32}[`'"]?"""
FACT_SHAPES: Mapping[str, re.Pattern[str]] = MappingProxyType(
    {
        "name": re.compile(r"[A-Za-z0-9_.$@:/+-]{1,80}"),
        "path": re.compile(r"/?[A-Za-z0-9_$-]{1,32}(?:(?:\.|/)[A-Za-z0-9_$-]{1,32}|\[[0-9]{1,6}\]){0,8}"),
        "expected": re.compile(rf"(?:(?:one of|an?) )?{_TERM}(?:(?: ?[,|/] ?| or |, or ){_TERM}){{0,7}}"),
    }
)
# Quotes a text puts around a name are its own ('users', "full_name", `x`): the sentence places its own.
_NAME_QUOTES = "'\"`"


def pattern_problems(pattern: str) -> list[str]:
    """Why RE2 refuses ``pattern`` for a rule, in words for whoever wrote it; empty when it is usable."""
    if len(pattern) > PATTERN_MAX_CHARS:
        return [f"Keep a pattern within {PATTERN_MAX_CHARS} characters (this one has {len(pattern)})."]
    try:
        compiled = re2.compile(pattern, _options())
    except (re2.error, UnicodeError) as exc:
        reason = exc.args[0] if exc.args else ""
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        return [
            f"RE2 cannot use this pattern ({reason[:200]}). Patterns run in linear time: no look-around "
            "((?=…), (?<=…)) and no back-references (\\1)."
        ]
    unknown = sorted(group for group in compiled.groupindex if fact_of_group(group) is None)
    if unknown:
        return [
            f"A pattern captures only the facts {', '.join(FACT_SHAPES)} by name (name_2 and the like for the same "
            f"fact in another alternative); rename or unname {', '.join(unknown)} (write (?:…) for a group that "
            "captures nothing)."
        ]
    return []


# RE2 names a group once, so alternatives that capture the same fact name it with a number: path, path_1, path_2.
_FACT_GROUP = re.compile(r"([a-z]+)(?:_[0-9]{1,2})?")


def fact_of_group(group: str) -> str | None:
    """The fact a pattern's group captures (``path`` for ``path_2``), or None for a name that is not a fact's."""
    found = _FACT_GROUP.fullmatch(group)
    return found.group(1) if found and found.group(1) in FACT_SHAPES else None


def captured_fact_names(pattern: str) -> frozenset[str]:
    """The facts ``pattern`` captures (``path`` for its ``path`` and ``path_2`` groups); none for a pattern RE2
    refuses."""
    if "(?P<" not in pattern or pattern_problems(pattern):
        return frozenset()
    return frozenset(filter(None, map(fact_of_group, _compiled(pattern).groupindex)))


def captured_facts(pattern: str, text: str) -> tuple[tuple[str, str], ...]:
    """The facts ``pattern``'s named groups capture in ``text`` (its first ``TEXT_MAX_CHARS`` characters), each in
    its shape (``FACT_SHAPES``) or left out; empty when the pattern captures none or does not match."""
    if "(?P<" not in pattern or pattern_problems(pattern):
        return ()
    found = _compiled(pattern).search(text[:TEXT_MAX_CHARS])
    if found is None:
        return ()
    facts: dict[str, str] = {}
    for group, value in found.groupdict().items():
        name = fact_of_group(group)
        if name is None or name in facts or not isinstance(value, str):
            continue
        value = value.strip().strip(_NAME_QUOTES) if name != "expected" else value.strip()
        if FACT_SHAPES[name].fullmatch(value):
            facts[name] = value
    return tuple(facts.items())


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re2._Regexp:
    return re2.compile(pattern, _options())


def _outside_classes(pattern: str) -> Iterator[tuple[int, str]]:
    """Each piece of ``pattern`` outside its character classes, with where it starts: a character, or an escape
    with the character it escapes (``\\b``)."""
    class_at, escape_at = -1, -1  # where the character class being read opened, where an escape began; or -1
    for i, char in enumerate(pattern):
        if escape_at >= 0:
            if class_at < 0:
                yield escape_at, pattern[escape_at : i + 1]
            escape_at = -1
        elif char == "\\":
            escape_at = i
        elif class_at >= 0:
            # A "]" first in a class ("[]a]", "[^]a]") is one of its characters; any other closes it.
            if char == "]" and i != class_at + 1 and not (i == class_at + 2 and pattern[class_at + 1] == "^"):
                class_at = -1
        elif char == "[":
            class_at = i
        else:
            yield i, char


def anchored_at_start(pattern: str) -> bool:
    """Whether every alternative of ``pattern`` at its top level starts with ``^`` (outside a ``(?m…)`` group, so
    at the text's start only): such a pattern can match nowhere but at the start of a text."""
    if not pattern.startswith("^") or "(?m" in pattern or "(?sm" in pattern or "(?im" in pattern:
        return False
    depth = 0
    for i, piece in _outside_classes(pattern):
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth -= 1
        elif piece == "|" and depth == 0 and not pattern.startswith("^", i + 1):
            return False
    return True


# What ties a match to a position: the text's or a line's start or end, a word's edge.
_ASSERTIONS = frozenset({"^", "$", "\\A", "\\z", "\\b", "\\B"})


def position_free(pattern: str) -> bool:
    """Whether ``pattern`` asserts nothing about where it stands (no ``^``, ``$``, ``\\b``...): what it finds in a
    part of a text, it finds in the whole."""
    return not any(piece in _ASSERTIONS for _i, piece in _outside_classes(pattern))


class PatternSet:
    """Distinct patterns, matched against a text in one pass; ``index`` says which one a rule uses.

    The pass is anchored at the text's start, and each pattern that may match elsewhere is led by ``(?s:.*)``: where
    every pattern is anchored at the start, as rules' patterns are written, RE2 stops reading a text as soon as none
    can match any more, rather than at its end. ``matching_part`` reads a part of a text that ``matching`` has read
    whole without the patterns that are found anywhere and are tied to no position (``position_free``): what they
    find in the part they found in the whole, and leaving them out lets RE2 stop early there too."""

    __slots__ = ("_indexes", "_part_indexes", "_part_set", "_set")

    def __init__(self, patterns: Iterable[str]):
        self._indexes: dict[str, int] = {}
        self._set: re2.Set | None = None
        self._part_set: re2.Set | None = None
        self._part_indexes: tuple[int, ...] = ()  # the index in ``_set`` of each pattern of ``_part_set``
        usable = [p for p in dict.fromkeys(patterns) if p and not pattern_problems(p)]
        if not usable:
            return
        whole = re2.Set.MatchSet(_options(max_mem=_SET_MAX_MEMORY))
        part = re2.Set.MatchSet(_options(max_mem=_SET_MAX_MEMORY))
        part_indexes = []
        for pattern in usable:
            anchored = anchored_at_start(pattern)
            led = pattern if anchored else f"(?s:.*)(?:{pattern})"
            self._indexes[pattern] = whole.Add(led)
            if anchored or not position_free(pattern):
                part.Add(led)
                part_indexes.append(self._indexes[pattern])
        whole.Compile()
        self._set = whole
        if len(part_indexes) == len(usable):
            self._part_set = whole
        elif part_indexes:
            part.Compile()
            self._part_set = part
        self._part_indexes = tuple(part_indexes)

    def index(self, pattern: str) -> int | None:
        """The number ``matching`` reports for ``pattern``; None for a pattern RE2 refused (it never matches)."""
        return self._indexes.get(pattern)

    def matching(self, text: str) -> frozenset[int]:
        """The indexes of the patterns found in the first ``TEXT_MAX_CHARS`` characters of ``text``."""
        if self._set is None or not text:
            return frozenset()
        # Bytes, so that text with lone surrogates (valid JSON, invalid UTF-8) is matched rather than refused.
        found = self._set.Match(text[:TEXT_MAX_CHARS].encode("utf-8", "replace"))
        return frozenset(found) if found else frozenset()

    def matching_part(self, part: str) -> frozenset[int]:
        """``matching`` for ``part``, a piece of a text the caller has had ``matching`` read, without the patterns
        that match anywhere and are tied to no position: what they find in the part, they found in the whole."""
        if self._part_set is None or not part:
            return frozenset()
        found = self._part_set.Match(part[:TEXT_MAX_CHARS].encode("utf-8", "replace"))
        if not found:
            return frozenset()
        if self._part_set is self._set:
            return frozenset(found)
        return frozenset(self._part_indexes[index] for index in found)


# --- Words wrapped inside a failure's text -------------------------------------------------------------------------

# A failure's own words often reach us wrapped by the layers that relayed them: "Error calling tool 'q': {"error":
# "Catalog Error: …"}", "Error processing request: File not found: …", "Git status failed: Exit Code: 128\nStderr:
# fatal: not a git repository". Rules are anchored at a text's start; when none matches the text as it stands, they
# are tried on what a wrapper holds. Bounded: at most this many inner texts, from the first TEXT_MAX_CHARS characters.
INNER_TEXTS_MAX = 16
_INNER_BOUNDARIES = 6
# Wrappers' words come first: boundaries are looked for this far in (a JSON body's messages are read whole).
_BOUNDARY_SPAN = 600
# Rules are anchored at a text's start: an inner text is matched over its beginning only.
_INNER_MAX_CHARS = 300
# Where a wrapper's own words end: at a line's start, or after "prefix: " when the prefix says it wraps a failure
# ("… error", "… failed", "Reason", "Stderr", "Stdout", an exception's class: "sqlite3.OperationalError"); words after
# any other colon may be an argument the upstream echoed, which must not steer the code.
_WRAPPER_WORD = re.compile(
    r"(?i:\b(?:error|errors|failed|failure|exception|reason|cause|stderr|stdout)\b)|[a-z](?:Error|Exception)\b"
)
# How far before its colon a wrapper's word may stand ("Failed to fetch http://host/path: ").
_WRAPPER_WORDS_BEFORE = 120
_PYTHON_TRACEBACK = "Traceback (most recent call last):"
# The keys a JSON error body keeps its message under.
_MESSAGE_KEYS = ("message", "error", "detail", "reason", "msg")
_JSON_MAX_DEPTH = 8


def inner_texts(text: str) -> tuple[str, ...]:
    """The texts wrapped inside ``text``, innermost first (the engine's own words before a wrapper's that name its
    class, "Invalid Input Error: Cannot execute …"): the messages of a JSON error body it holds (a zod issue as
    ``message at path``, as the TypeScript SDK words one) and what they wrap, then what follows each of ``text``'s
    first line breaks and wrappers' ``: ``; a Python traceback's last line and what it wraps before all of them; no
    empty or repeated one, at most ``INNER_TEXTS_MAX``."""
    text = text[:TEXT_MAX_CHARS]
    found: dict[str, None] = {}
    if _PYTHON_TRACEBACK in text:
        # A Python traceback's own words are its last line, the exception and its message.
        last = text.rstrip().rpartition("\n")[2]
        if last[:1].strip():
            found.update(dict.fromkeys(reversed([last[:_INNER_MAX_CHARS], *_after_boundaries(last)])))
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start >= 0 and text.rstrip().endswith(("}", "]")):  # a JSON body runs to the text's end
        try:
            body = json_loads_bounded(text[start:], _JSON_MAX_DEPTH)
        except ValueError:
            body = None
        for message in itertools.islice(_messages(body), 4):
            inner = message[:_INNER_MAX_CHARS].strip()
            found.update(dict.fromkeys(reversed([inner, *_after_boundaries(message)])))
    found.update(dict.fromkeys(reversed(list(_after_boundaries(text)))))
    found.pop("", None)
    found.pop(text.strip(), None)
    return tuple(itertools.islice(found, INNER_TEXTS_MAX))


def _after_boundaries(text: str) -> Iterator[str]:
    said = 0
    last = None
    segment = 0  # where the words since the last boundary start
    span = min(len(text), _BOUNDARY_SPAN)
    colon, newline = text.find(": ", 0, span), text.find("\n", 0, span)
    while said < _INNER_BOUNDARIES and (colon >= 0 or newline >= 0):
        if newline >= 0 and (colon < 0 or newline < colon):
            at, end, wraps = newline, newline + 1, True
            newline = text.find("\n", end, span)
        else:
            at, end = colon, colon + 2
            wraps = _WRAPPER_WORD.search(text, max(segment, at - _WRAPPER_WORDS_BEFORE), at) is not None
            colon = text.find(": ", end, span)
        segment = end
        inner = text[end : end + _INNER_MAX_CHARS].strip()
        if wraps and inner != last:  # "Stderr: \n…" is one boundary, not two
            yield inner
            last = inner
            said += 1


def _json_path(path: list[str | int]) -> str:
    """``["entities", 0, "name"]`` as ``entities[0].name``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _messages(body: Any, depth: int = 0) -> Iterator[str]:
    if depth > _JSON_MAX_DEPTH:
        return
    if isinstance(body, list):
        for item in body:
            yield from _messages(item, depth + 1)
    elif isinstance(body, dict):
        for key in _MESSAGE_KEYS:
            value = body.get(key)
            if isinstance(value, str):
                path = body.get("path")
                if isinstance(path, list) and path:
                    # A zod issue's path is its keys, a valibot issue's the objects it went through, each with its key.
                    found = (p.get("key") if isinstance(p, dict) else p for p in path)
                    keys: list[str | int] = [k for k in found if isinstance(k, str | int) and not isinstance(k, bool)]
                    if len(keys) == len(path):
                        # As the TypeScript SDK words a zod issue: "Invalid URL at url".
                        yield f"{value} at {_json_path(keys)}"
                yield value
                return
            if isinstance(value, dict | list):
                yield from _messages(value, depth + 1)
                return


# Words as a failure text names a parameter: letters, digits and underscores (pydantic's "url" line, zod's "at path").
_WORD = re.compile(r"[A-Za-z0-9_]+")
# What a text quotes is a value it echoes ("Ref 'x' did not resolve", pydantic's input_value='…') or a message it
# nests ("Invalid timezone: 'No time zone found with key …'"): its words name no parameter. A quote that follows a
# letter is an apostrophe ("tool's"), not an opening quote; bounded, so that unmatched quotes keep the pass linear.
_QUOTED = re.compile(r"(?<![A-Za-z0-9_])'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"")


def parameter_named_in(text: str, names: Iterable[str]) -> str | None:
    """The first of ``names`` that ``text`` (its first ``TEXT_MAX_CHARS`` characters) has as a whole word outside
    quotes, else None.

    ``names`` are a tool's input properties, from its schema: the answer is one of them, never a word of the text.
    Two passes over the text (regular expressions without nesting, bounded), then a set lookup per word.
    """
    wanted = frozenset(names)
    if not wanted:
        return None
    for word in _WORD.finditer(_QUOTED.sub(" ", text[:TEXT_MAX_CHARS])):
        if word.group() in wanted:
            return word.group()
    return None
