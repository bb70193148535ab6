"""The API's list pages: ``limit`` (or its other name, ``page_size``) and ``offset`` as bounded whole numbers,
anything else a 400 naming the parameter.

DRF's ``LimitOffsetPagination`` falls back to its defaults for a value it cannot read (``offset=null``) and takes
any integer it can: ``limit=9223372036854775808`` reached the database as a slice bound and ended in a 500. Here
each parameter is read strictly, and the schema states the same bounds.

``page_size`` is the name DRF's page-number pagination and many clients use for the size of a page; read as
``limit``, so a client that sends it gets the page it asked for instead of a silently ignored parameter. ``page``
has no meaning here (pages start at an offset) and is refused rather than ignored, since ignoring it would answer
the first page again for every page number.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.utils.urls import remove_query_param

# At most this many rows a page: ten default pages, more than the whole catalog holds today.
MAX_LIMIT = 1000
# The largest offset: a 32-bit signed integer, far past any catalog, so offset + limit never nears 64 bits.
MAX_OFFSET = 2**31 - 1
PAGE_SIZE_PARAM = "page_size"
PAGE_PARAM = "page"
PAGE_REFUSED_MESSAGE = "Pages here start at an offset: give offset (the number of rows to skip) instead of page."
BOTH_SIZES_MESSAGE = "Give the page size once, as limit or as page_size."
# The paging parameters a list takes, which an answer that is not a list refuses (``refuse_paging``).
PAGING_PARAMS = ("limit", "offset", PAGE_SIZE_PARAM, PAGE_PARAM)


def query_integer(request: Request, name: str, *, default: int, minimum: int, maximum: int) -> int:
    """The query parameter ``name`` as a whole number within bounds; ``default`` when it is absent.

    Only ASCII digits are read, and only as many as the maximum has, before converting: no sign, no spaces, no
    ``1e3``, and never a number of thousands of digits.
    """
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(maximum)) or not minimum <= int(raw) <= maximum:
        raise exceptions.ValidationError({name: [f"Give a whole number from {minimum} to {maximum}."]})
    return int(raw)


def refuse_paging(request: Request, message: str) -> None:
    """A 400 naming each paging parameter the request gives, for an answer that is not a list of pages: a client
    that sends one expects a page, and would otherwise read the whole answer as one without being told."""
    given = [name for name in PAGING_PARAMS if name in request.query_params]
    if given:
        raise exceptions.ValidationError({name: [message] for name in given})


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    default_limit: int = LimitOffsetPagination.default_limit or 100  # PAGE_SIZE is set in settings
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        params = request.query_params
        if PAGE_PARAM in params:
            raise exceptions.ValidationError({PAGE_PARAM: [PAGE_REFUSED_MESSAGE]})
        if self.limit_query_param in params and PAGE_SIZE_PARAM in params:
            raise exceptions.ValidationError({PAGE_SIZE_PARAM: [BOTH_SIZES_MESSAGE]})
        name = PAGE_SIZE_PARAM if PAGE_SIZE_PARAM in params else self.limit_query_param
        return query_integer(request, name, default=self.default_limit, minimum=1, maximum=self.max_limit)

    def get_offset(self, request: Request) -> int:
        return query_integer(request, self.offset_query_param, default=0, minimum=0, maximum=MAX_OFFSET)

    # The links name the page size as limit; a page_size left in them as well would make them refused.
    def get_next_link(self) -> str | None:
        link = super().get_next_link()
        return remove_query_param(link, PAGE_SIZE_PARAM) if link else link

    def get_previous_link(self) -> str | None:
        link = super().get_previous_link()
        return remove_query_param(link, PAGE_SIZE_PARAM) if link else link

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {self.limit_query_param: (1, self.max_limit), self.offset_query_param: (0, MAX_OFFSET)}
        for parameter in parameters:
            low, high = bounds[parameter["name"]]
            parameter["schema"] = {**parameter["schema"], "minimum": low, "maximum": high}
        page_size = {
            "name": PAGE_SIZE_PARAM,
            "required": False,
            "in": "query",
            "description": "Another name for limit, as page-number clients send it (not both: 400).",
            "schema": {"type": "integer", "minimum": 1, "maximum": self.max_limit},
        }
        return [*parameters, page_size]
