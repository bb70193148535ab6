"""What the API's views share about failing: the error answers their schemas list, and the refusal of a POST or
PUT without a body.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.request import Request

from errcatalog.web.api.serializers.errors import ApiErrorSerializer

READ_ERRORS = {401: ApiErrorSerializer, 403: ApiErrorSerializer}
WRITE_ERRORS = {400: ApiErrorSerializer, 401: ApiErrorSerializer, 403: ApiErrorSerializer}


class BodyRequired:
    """POST and PUT need a JSON body: without one DRF reads an empty object, and ``classify/`` answered 200 for a
    failure with no facts at all. (A PATCH without one changes nothing, as its schema allows.) Checked after
    authentication and permissions, so those answer first, and only for a method the view serves (else 405)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        method = (request.method or "").lower()
        if method in ("post", "put") and hasattr(self, method) and request.stream is None:
            raise exceptions.ParseError("Send the request body as a JSON object.", code="empty_body")
