"""The API's list pages: ``limit`` and ``offset`` as bounded whole numbers, anything else a 400 naming the parameter.

DRF's ``LimitOffsetPagination`` falls back to its defaults for a value it cannot read (``offset=null``) and takes
any integer it can: ``limit=9223372036854775808`` reached the database as a slice bound and ended in a 500. Here
each parameter is read strictly, and the schema states the same bounds.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

# At most this many rows a page: ten default pages, more than the whole catalog holds today.
MAX_LIMIT = 1000
# The largest offset: a 32-bit signed integer, far past any catalog, so offset + limit never nears 64 bits.
MAX_OFFSET = 2**31 - 1


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


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    default_limit: int = LimitOffsetPagination.default_limit or 100  # PAGE_SIZE is set in settings
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        return query_integer(
            request, self.limit_query_param, default=self.default_limit, minimum=1, maximum=self.max_limit
        )

    def get_offset(self, request: Request) -> int:
        return query_integer(request, self.offset_query_param, default=0, minimum=0, maximum=MAX_OFFSET)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {self.limit_query_param: (1, self.max_limit), self.offset_query_param: (0, MAX_OFFSET)}
        for parameter in parameters:
            low, high = bounds[parameter["name"]]
            parameter["schema"] = {**parameter["schema"], "minimum": low, "maximum": high}
        return parameters
