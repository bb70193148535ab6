"""Signatures of upstream failure texts: what stays when the values are masked, so that repeats group together.

An upstream names the file, the time zone or the revision it could not use inside its failure text; two failures
that differ only there are one kind of failure to an operator writing a rule. ``signature`` masks URLs, e-mail
addresses, quoted values, paths, hexadecimal ids and numbers, and collapses white space; ``suggested_pattern`` turns a
signature back into a rule pattern (RE2, anchored at the text's start) that matches every text of that signature.

Pure: no ORM, no I/O. The text is an upstream's (cut and redacted before it gets here), and what is made of it here
is for staff, never for a model; RE2 masks it in time linear in its length, whatever it holds.
"""

from __future__ import annotations

import hashlib

import re2

from errcatalog.render.patterns import PATTERN_MAX_CHARS, TEXT_MAX_CHARS

# What a signature keeps: enough words to tell failures apart and to read in a list.
SIGNATURE_MAX_CHARS = 300
# How much of a signature a suggested pattern spells out: the start of a failure text says what failed, and a short
# pattern is one an operator can read and widen.
PATTERN_SOURCE_CHARS = 120

URL, EMAIL, VALUE, PATH, ID, NUMBER = "<url>", "<email>", "<value>", "<path>", "<id>", "<n>"
MASKS = (URL, EMAIL, VALUE, PATH, ID, NUMBER)


def _compiled(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


# In this order: a URL holds paths and numbers, a quoted value may hold a path, an id is a number with letters.
_MASKING: tuple[tuple[re2._Regexp, str], ...] = (
    (_compiled(r"[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s'\"<>]+"), URL),
    (_compiled(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), EMAIL),
    (
        _compiled(
            "'[^'\\n]{0,300}'|\"[^\"\\n]{0,300}\"|`[^`\\n]{0,300}`|\u2018[^\u2019\\n]{0,300}\u2019|\u201c[^\u201d\\n]{0,300}\u201d"
        ),
        VALUE,
    ),
    (_compiled(r"(^|[\s(\[=:,])(?:~?/|\.{1,2}/|[A-Za-z]:\\)[^\s'\",;:)\]]*"), r"\1" + PATH),
    (_compiled(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), ID),
    (_compiled(r"[0-9]+(?:[.,:][0-9]+)*"), NUMBER),
)
# A commit hash or a key: seven or more hexadecimal characters with both digits and letters (a word such as
# "defaced" has no digit, a number no letter, and the number mask takes those).
_HEX_RUN = _compiled(r"\b[0-9a-fA-F]{7,}\b")
_SPACE = _compiled(r"\s+")
_MASK = _compiled("(" + "|".join(re2.escape(mask) for mask in MASKS) + ")")


def signature(text: str) -> str:
    """``text`` with its values masked and its white space collapsed, cut to ``SIGNATURE_MAX_CHARS``."""
    # As patterns read it (errcatalog.render.patterns): lone surrogates, valid in JSON but not in UTF-8, become "?".
    text = text[:TEXT_MAX_CHARS].encode("utf-8", "replace").decode("utf-8")
    for pattern, mask in _MASKING:
        text = pattern.sub(mask, text)
        if mask == ID:
            text = _HEX_RUN.sub(_hex_id, text)
    return _whole_masks(_SPACE.sub(" ", text).strip()[:SIGNATURE_MAX_CHARS])


def _whole_masks(text: str) -> str:
    """``text`` without a mask the cut split at its end (a lone "<" there goes too, which costs nothing)."""
    start = text.rfind("<")
    return text[:start] if start >= 0 and ">" not in text[start:] else text


def _hex_id(found: re2._Match) -> str:
    run = found.group()
    return ID if any(c.isdigit() for c in run) and any(c.isalpha() for c in run) else run


def group_key(upstream: str, tool: str, kind: str, signature: str) -> str:
    """The stored key of a group: one per upstream, tool, kind of failure and signature (case does not count, as
    patterns do not read it)."""
    return hashlib.sha256("\0".join((upstream, tool, kind, signature.casefold())).encode()).hexdigest()


# RE2's special characters: every other character stands for itself, so the suggestion stays readable.
_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def _escaped(word: str) -> str:
    return "".join(f"\\{c}" if c in _SPECIAL else c for c in word)


def suggested_pattern(signature: str) -> str:
    """A rule pattern for the texts of ``signature``: its first words spelled out, each mask a wildcard.

    Anchored at the text's start, as the default rules are, so that a value the text echoes cannot steer it; it
    ends where the spelled-out part ends, so longer texts of the same start match too.
    """
    source = signature[:PATTERN_SOURCE_CHARS]
    if len(signature) > PATTERN_SOURCE_CHARS:
        cut = source.rfind(" ")
        source = _whole_masks(source[:cut] if cut > 0 else source)
    parts = _MASK.split(source)
    pattern = "^"
    for index, part in enumerate(parts):
        if index % 2:  # a mask: any run of characters on one line (one for masks side by side)
            if not pattern.endswith("[^\\n]*?"):
                pattern += "[^\\n]*?"
        else:
            pattern += r"\s+".join(_escaped(word) for word in part.split(" "))
    while tail := next((t for t in ("[^\\n]*?", r"\s+") if pattern.endswith(t)), ""):
        pattern = pattern[: -len(tail)]
    # At most PATTERN_SOURCE_CHARS characters, each spelled with at most three: well within what a rule may hold.
    assert len(pattern) <= PATTERN_MAX_CHARS
    return pattern
