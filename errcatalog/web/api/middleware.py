"""A request for a host this server does not serve, answered in the API's error shape under ``/api/v1/``.

Django raises ``DisallowedHost`` where a request's host is first read (``request.get_host()``) and answers with its
HTML 400 page; an API client gets JSON for every other error, so this one too. The host is never echoed, and the
refusal is logged to the logger Django uses for it. Other paths keep Django's page.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"
MESSAGE = "This server does not answer for the host this request names."
security_logger = logging.getLogger("django.security.DisallowedHost")


def disallowed_host_answer(request: HttpRequest) -> HttpResponse | None:
    """The API's 400 for a request under the API prefix whose host is not allowed; None for any other."""
    if not request.path_info.startswith(API_PREFIX):
        return None
    try:
        request.get_host()
    except DisallowedHost:
        security_logger.warning("Refused an API request for a host not in ALLOWED_HOSTS.")
        body = {"error": {"status": 400, "code": "disallowed_host", "message": MESSAGE}}
        return JsonResponse(body, status=400)
    return None


class ApiHostCheckMiddleware:
    """First in ``MIDDLEWARE``, so it sees the host before any other middleware reads it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if self.is_async:
            return self.__acall__(request)
        return disallowed_host_answer(request) or self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        answer = disallowed_host_answer(request)
        if answer is not None:
            return answer
        return await self.get_response(request)  # type: ignore[misc]
