"""What a serving process runs: the enabled upstreams as plain, immutable configurations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from django.conf import settings

from errcatalog.gateway.models import Transport, Upstream


@dataclass(frozen=True)
class UpstreamConfig:
    """One upstream as the gateway connects to it. Equal configurations need no reconnection."""

    name: str
    prefix: str
    transport: str
    url: str
    headers: Mapping[str, str]  # stored values: resolved (``secrets.resolve``) when connecting
    command: str
    args: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    timeout_seconds: float
    max_concurrency: int
    tools: frozenset[str] | None  # None: every tool the upstream lists


def upstream_config(upstream: Upstream) -> UpstreamConfig:
    return UpstreamConfig(
        name=upstream.name,
        prefix=upstream.prefix,
        transport=upstream.transport,
        url=upstream.url,
        headers=MappingProxyType(dict(upstream.headers)),
        command=upstream.command,
        args=tuple(upstream.args),
        cwd=upstream.cwd,
        env=MappingProxyType(dict(upstream.env)),
        timeout_seconds=upstream.timeout_seconds,
        max_concurrency=upstream.max_concurrency,
        tools=frozenset(upstream.tools) if upstream.tools else None,
    )


def upstream_configs() -> list[UpstreamConfig]:
    """The upstreams this process serves: the enabled ones, without stdio ones where the setting turns them off."""
    rows = Upstream.objects.filter(enabled=True).order_by("name")
    if not settings.GATEWAY["STDIO"]:
        rows = rows.exclude(transport=Transport.STDIO)
    return [upstream_config(u) for u in rows]
