"""ASGI entry point: ``/mcp`` and every path under it to the MCP endpoint, ``/metrics`` to Prometheus's
(``config.metrics``), everything else to Django, and the lifespan for both.

Django's ASGI handler refuses lifespan events, while the MCP session managers need their task groups entered
once per process; so this outer app owns lifespan and routes the exact paths (no prefix mount, which would also
catch ``/mcpfoo`` or move the endpoint to ``/mcp/mcp``). Every path under ``/mcp/`` is the endpoint's: it serves
each upstream alone at ``/mcp/<name>`` and answers 404 to any other (``mcpserver.virtual_servers``). A request whose
head is larger than ``MAX_REQUEST_HEAD_BYTES`` is answered 431 here, before any route sees it
(``config.request_head``). At shutdown it also sends the outcome events this process still holds
(``errcatalog.outcomes.recorder``), before the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from django.conf import settings
from django.core.asgi import get_asgi_application

from config.access_log import redact_access_log
from config.request_head import refuse_request_head, request_head_bytes
from config.tracing import configure_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Before Django builds its middleware chain, which the Django instrumentation adds to (when OTEL_* asks for traces).
tracer_provider = configure_tracing()
django_application = get_asgi_application()  # sets Django up before anything imports models
redact_access_log()  # after Django's LOGGING, which leaves uvicorn's loggers as uvicorn set them

from config.metrics import metrics_app  # noqa: E402
from errcatalog.outcomes import recorder  # noqa: E402
from mcpserver.server import McpApp  # noqa: E402  (needs the app registry loaded above)

MCP_PATH = "/mcp"
MCP_SERVERS_PREFIX = MCP_PATH + "/"
# Prometheus's scrape target, beside Django for the same reason as /mcp (see config.metrics).
METRICS_PATH = "/metrics"
# Held outcome events get this long to reach their buffer at shutdown (a Redis timeout is 1 s).
RECORDER_FLUSH_SECONDS = 5.0


class Application:
    def __init__(self) -> None:
        self.tracer_provider = tracer_provider
        self.django = django_application
        self.mcp = McpApp()
        self._exit_stack: contextlib.AsyncExitStack | None = None
        self.max_head_bytes: int = settings.MAX_REQUEST_HEAD_BYTES

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif request_head_bytes(scope) > self.max_head_bytes:
            await refuse_request_head(scope, send)
        elif scope["type"] == "http" and (scope["path"] == MCP_PATH or scope["path"].startswith(MCP_SERVERS_PREFIX)):
            await self.mcp(scope, receive, send)
        elif scope["type"] == "http" and scope["path"] == METRICS_PATH:
            await metrics_app(scope, receive, send)
        else:
            await self.django(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    stack = contextlib.AsyncExitStack()
                    await stack.enter_async_context(self.mcp.run())
                    self._exit_stack = stack
                    await asyncio.to_thread(recorder.prepare)
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._exit_stack is not None:
                    await self._exit_stack.aclose()
                # In a thread: a flush may wait on Redis, and the loop still has connections to close.
                await asyncio.to_thread(recorder.flush, RECORDER_FLUSH_SECONDS)
                if self.tracer_provider is not None:  # the spans still batched go out before the process ends
                    await asyncio.to_thread(self.tracer_provider.shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return


application = Application()
