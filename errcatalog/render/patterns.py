"""Classification rules' patterns over a failure's own text: case-insensitive, matched by RE2 in linear time.

An upstream chooses the text its failures carry, and an operator writes the patterns; neither can make matching
slow. RE2 has no backtracking (no look-around, no back-references), so a match costs time linear in the text and
the pattern, and both are bounded: a pattern by ``PATTERN_MAX_CHARS`` (checked when a rule is saved), the text by
``TEXT_MAX_CHARS`` (only its beginning is matched). A snapshot matches all its rules' patterns against a text in one
pass (``PatternSet``, an ``RE2::Set``), however many rules it has. Pure: no ORM, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import re2

# A pattern is a few words an operator picked from a failure's text; 500 characters leave room for alternatives.
PATTERN_MAX_CHARS = 500
# Only the text's beginning is matched: an upstream's failure text is cut to 2,000 characters before anything reads
# it (errcatalog.safety.UNTRUSTED_TEXT_MAX_CHARS), and what tells one failure from another is at its start.
TEXT_MAX_CHARS = 2000
# Memory RE2 may use for one pattern's automata (its default is 8 MiB): a pattern that needs more is refused when
# the rule is saved rather than slowing every failure down.
_MAX_MEMORY = 8 << 20


def _options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False  # a refused pattern is reported to whoever wrote it, not to the process's stderr
    options.max_mem = _MAX_MEMORY
    return options


def pattern_problems(pattern: str) -> list[str]:
    """Why RE2 refuses ``pattern`` for a rule, in words for whoever wrote it; empty when it is usable."""
    if len(pattern) > PATTERN_MAX_CHARS:
        return [f"Keep a pattern within {PATTERN_MAX_CHARS} characters (this one has {len(pattern)})."]
    try:
        re2.compile(pattern, _options())
    except (re2.error, UnicodeError) as exc:
        reason = exc.args[0] if exc.args else ""
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        return [
            f"RE2 cannot use this pattern ({reason[:200]}). Patterns run in linear time: no look-around "
            "((?=…), (?<=…)) and no back-references (\\1)."
        ]
    return []


class PatternSet:
    """Distinct patterns, matched against a text in one pass; ``index`` says which one a rule uses."""

    __slots__ = ("_indexes", "_set")

    def __init__(self, patterns: Iterable[str]):
        self._indexes: dict[str, int] = {}
        self._set: re2.Set | None = None
        usable = [p for p in dict.fromkeys(patterns) if p and not pattern_problems(p)]
        if not usable:
            return
        found = re2.Set.SearchSet(_options())
        for pattern in usable:
            self._indexes[pattern] = found.Add(pattern)
        found.Compile()
        self._set = found

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
