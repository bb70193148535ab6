"""Which catalog locale a client gets: pure language-range matching, no I/O.

The MCP protocol (both generations the SDK speaks, mcp 2.3 / mcp_types 2.3) carries no locale of the client, so
the request's ``Accept-Language`` header is the one signal; without a match the catalog default (the variants
without a locale) is served.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.translation.trans_real import parse_accept_lang_header


def requested_locales(header: str | None) -> tuple[str, ...]:
    """The language ranges of an ``Accept-Language`` header, best first (q-values honoured, ``q=0`` dropped).

    Django's parser does the RFC 9110 work: it sorts by q-value, caps the header's length, and answers
    nothing at all for a malformed header, so garbage falls back to the catalog default instead of failing.
    """
    if not header or not isinstance(header, str):
        return ()
    return tuple(lang for lang, q in parse_accept_lang_header(header) if q > 0)


def choose_locale(available: Iterable[str], requested: Iterable[str]) -> str:
    """The catalog locale that best serves ``requested`` (lower-case ranges, best first), or "" (the default).

    Each range in turn: the exact locale (``de-ch``), else its language (``de-ch`` → ``de``), else a regional
    form of the language (``de`` → ``de-at``); ``*`` means "anything", which the default serves.
    """
    by_lower = {locale.lower(): locale for locale in available if locale}
    if not by_lower:
        return ""
    for wanted in requested:
        if wanted == "*":
            return ""
        found = by_lower.get(wanted)
        if found is not None:
            return found
        language = wanted.split("-", 1)[0]
        found = by_lower.get(language)
        if found is not None:
            return found
        for lower, locale in sorted(by_lower.items()):
            if lower.split("-", 1)[0] == language:
                return locale
    return ""
