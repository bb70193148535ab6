"""Static files under ASGI: WhiteNoise's lookup and headers, with the file streamed by an async iterator.

WhiteNoise 6 answers with a ``FileResponse`` over a plain file, a synchronous iterator. Django's ASGI handler can
only stream that by consuming it in a thread and warns on every static request ("StreamingHttpResponse must consume
synchronous iterators in order to serve them asynchronously"). Served by uvicorn, this middleware runs in the async
chain and reads the file in a worker thread, chunk by chunk, so nothing is buffered whole and nothing warns. Under
WSGI (Django's test client) it is WhiteNoise unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from whitenoise.middleware import WhiteNoiseMiddleware

# The chunk size of Django's FileResponse (FileResponse.block_size).
CHUNK_BYTES = 4096


async def _file_chunks(file: BinaryIO) -> AsyncIterator[bytes]:
    try:
        while chunk := await asyncio.to_thread(file.read, CHUNK_BYTES):
            yield chunk
    finally:
        await asyncio.to_thread(file.close)


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[..., Any] | None = None, **options: Any) -> None:
        super().__init__(get_response, **options)
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self._async:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        static_file = self.find_file(request.path_info) if self.autorefresh else self.files.get(request.path_info)
        if static_file is None:
            return await self.get_response(request)
        return self.serve_async(static_file, request)

    @staticmethod
    def serve_async(static_file: Any, request: HttpRequest) -> StreamingHttpResponse:
        """WhiteNoise's response (status, caching headers, compressed alternative, range) with an async body."""
        found = static_file.get_response(request.method, request.META)
        response = StreamingHttpResponse(_file_chunks(found.file) if found.file is not None else _nothing())
        response.status_code = int(found.status)
        del response["Content-Type"]
        for key, value in found.headers:
            response[key] = value
        return response


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator that yields nothing (HEAD, 304, 405)
