"""The language ranges a client asks for, read from its request's ``Accept-Language`` header.

The transport's half of locale choice: the renderer's pure half (``errcatalog.render.locale.choose_locale``)
matches these ranges against the catalog's locales. It lives here because the header parser is Django's, which the
pure renderer may not import.
"""

from __future__ import annotations

from django.utils.translation.trans_real import parse_accept_lang_header


def requested_locales(header: str | None) -> tuple[str, ...]:
    """The language ranges of an ``Accept-Language`` header, best first (q-values honoured, ``q=0`` dropped).

    Django's parser does the RFC 9110 work: it sorts by q-value, caps the header's length, and answers
    nothing at all for a malformed header, so garbage falls back to the catalog default instead of failing.
    """
    if not header or not isinstance(header, str):
        return ()
    return tuple(lang for lang, q in parse_accept_lang_header(header) if q > 0)
