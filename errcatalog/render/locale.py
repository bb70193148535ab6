"""Which catalog locale a client gets: pure language-range matching, no I/O.

The MCP protocol (both generations the SDK speaks, mcp 2.3 / mcp_types 2.3) carries no locale of the client, so
the request's ``Accept-Language`` header is the one signal; without a match the catalog default (the variants
without a locale) is served. Parsing the header is the transport's work (``mcpserver.locale``): this module
takes the language ranges it gives.
"""

from __future__ import annotations

from collections.abc import Iterable


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
