"""An MCP endpoint as a test reaches it: the SDK's real client over HTTP, with a token."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

SERVED_TOOLSETS = frozenset({"catalog", "demo", "test"})


class McpTarget:
    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.key = key

    @contextlib.asynccontextmanager
    async def client(
        self, *, mode: str = "auto", key: str | None = None, headers: dict | None = None, **options
    ) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {key or self.key}", **(headers or {})}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http,
            Client(streamable_http_client(self.url, http_client=http), mode=mode, **options) as client,
        ):
            yield client

    def tool_names(self) -> set[str]:
        """The names ``tools/list`` answers with (2026-07-28)."""

        async def listing() -> set[str]:
            async with self.client() as client:
                return {tool.name for tool in (await client.list_tools()).tools}

        return asyncio.run(listing())

    def run(self, scenario, **options):
        """Run ``scenario(client)`` once per protocol generation; returns {"2026-07-28": …, "2025-11-25": …}."""

        async def both():
            results = {}
            for mode in ("auto", "legacy"):
                async with self.client(mode=mode, **options) as client:
                    results[client.protocol_version] = await scenario(client)
            return results

        return asyncio.run(both())

    def raw(self, method: str = "POST", *, body: bytes | None = None, headers: dict | None = None) -> httpx2.Response:
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        return httpx2.request(method, self.url, content=body, headers={**base, **(headers or {})}, timeout=10)
