"""The API's JSON parser: the body's size and nesting depth are bounded before ``json.loads`` sees it.

Python's JSON decoder recurses once per nesting level, so a body of 10,000 opening brackets costs tens of seconds
of recursion-limit handling and ends in a ``RecursionError`` (a 500 with a debug page). No request of this API
nests deeper than a handful of levels, so the body is measured first, with a scan that never recurses: the size
while reading, the depth from the brackets outside strings (``errcatalog.input_limits``, which catalog files and
``mcpServers`` blocks go through too). Either limit answers a JSON 400/413 at once.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

from errcatalog.input_limits import json_depth_exceeds


class RequestBodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "The request body is larger than this API accepts."


class RequestBodyTooDeep(exceptions.ParseError):
    default_code = "too_deep"
    default_detail = "The request body nests JSON arrays and objects too deeply."


class DuplicateKey(exceptions.ParseError):
    default_code = "duplicate_key"
    default_detail = "The request body names the same key twice in one object; send each key once."


class _Duplicate(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members as a dict, refusing a key given twice (JSON leaves that to the reader; Python's
    decoder keeps the last one, so what a reviewer reads in the body need not be what is stored)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicate()
    return obj


class BoundedJSONParser(JSONParser):
    """DRF's ``JSONParser`` behind the size limit (``DATA_UPLOAD_MAX_MEMORY_SIZE``) and ``API_MAX_JSON_DEPTH``.

    Django itself refuses a body whose Content-Length is over the size limit when DRF reads it (``RequestDataTooBig``,
    mapped to the same 413 by ``api_exception_handler``); the check here covers a stream handed over otherwise.
    """

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = stream.read(limit + 1) if stream is not None else b""
        if limit is not None and len(body) > limit:
            raise RequestBodyTooLarge()
        if json_depth_exceeds(body, settings.ERRCATALOG["API_MAX_JSON_DEPTH"]):
            raise RequestBodyTooDeep()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json.loads(
                body.decode(encoding),
                parse_constant=json.strict_constant if self.strict else None,
                object_pairs_hook=_unique_keys,
            )
        except _Duplicate:
            raise DuplicateKey() from None
        except RecursionError:  # cannot happen under the depth limit; never a 500 if it is set very high
            raise RequestBodyTooDeep() from None
        except ValueError:  # UnicodeDecodeError is one too
            raise exceptions.ParseError() from None
