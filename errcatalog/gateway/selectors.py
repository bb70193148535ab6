"""What a serving process runs (the enabled upstreams and named servers as plain, immutable configurations), and
what every serving process reported of their health."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from errcatalog.gateway.models import (
    NamedServer,
    Transport,
    Upstream,
    UpstreamFailureGroup,
    UpstreamFailureTally,
    UpstreamHealth,
    UpstreamTool,
)
from errcatalog.gateway.screen import ScreenLimits
from errcatalog.gateway.secrets import upstream_binding


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
    # Relayed to the clients that declared them (``Upstream.relay_sampling``, ``relay_roots``); off, not declared.
    relay_sampling: bool = True
    relay_roots: bool = True
    session_mode: str = "shared"  # stdio: one child for all clients, or one per client session (``SessionMode``)
    failure_words: str = "quoted"  # what the model reads of its failure texts (``FailureWords``)

    @property
    def binding(self) -> str:
        """What its sealed values are bound to (``secrets.upstream_binding``)."""
        return upstream_binding(transport=self.transport, name=self.name, url=self.url, command=self.command)


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
        relay_sampling=upstream.relay_sampling,
        relay_roots=upstream.relay_roots,
        session_mode=upstream.session_mode,
        failure_words=upstream.failure_words,
    )


def upstream_configs() -> list[UpstreamConfig]:
    """The upstreams this process serves: the enabled ones, without stdio ones where the setting turns them off."""
    rows = Upstream.objects.filter(enabled=True).order_by("name")
    if not settings.GATEWAY["STDIO"]:
        rows = rows.exclude(transport=Transport.STDIO)
    return [upstream_config(u) for u in rows]


@dataclass(frozen=True)
class NamedServerConfig:
    """One enabled named server as the MCP endpoint serves it at ``/mcp/<name>``."""

    name: str
    description: str
    tools: frozenset[str]  # our own tools, by name
    # Upstream name → its tools served, by their own names at the upstream (None: every tool /mcp serves of it).
    upstreams: Mapping[str, frozenset[str] | None]


def named_server_configs() -> dict[str, NamedServerConfig]:
    """The enabled named servers, by name. A tool list edited by hand into something else serves no tool (a list of
    upstream tools, none of them), rather than stop the gateway reading its configuration."""
    configs = {}
    for server in NamedServer.objects.filter(enabled=True).prefetch_related("members__upstream"):
        upstreams = {m.upstream.name: _names(m.tools) if m.tools else None for m in server.members.all()}
        configs[server.name] = NamedServerConfig(
            name=server.name,
            description=server.description,
            tools=_names(server.tools),
            upstreams=MappingProxyType(upstreams),
        )
    return configs


def _names(tools: Any) -> frozenset[str]:
    return frozenset(tool for tool in tools if isinstance(tool, str)) if isinstance(tools, list) else frozenset()


def screen_limits() -> ScreenLimits:
    """The hard caps on an upstream tool's metadata, from ``settings.GATEWAY``."""
    gateway = settings.GATEWAY
    return ScreenLimits(
        description_chars=gateway["TOOL_DESCRIPTION_MAX_CHARS"],
        title_chars=gateway["TOOL_TITLE_MAX_CHARS"],
        parameter_description_chars=gateway["TOOL_PARAMETER_DESCRIPTION_MAX_CHARS"],
        schema_bytes=gateway["TOOL_SCHEMA_MAX_BYTES"],
    )


def upstream_tool_approvals() -> dict[str, dict[str, dict[str, Any]]]:
    """The approved metadata of every upstream's tools, by upstream name and tool name: what the gateway serves."""
    approvals: dict[str, dict[str, dict[str, Any]]] = {}
    rows = UpstreamTool.objects.filter(kind=UpstreamTool.Kind.TOOL, approved__isnull=False)
    for upstream, name, approved in rows.values_list("upstream__name", "name", "approved"):
        if approved is not None:
            approvals.setdefault(upstream, {})[name] = approved
    return approvals


# A process that has not reported for this long is shown as silent (it reports at least every 15 s).
HEALTH_STALE_AFTER = timedelta(seconds=60)


@dataclass(frozen=True)
class ProcessHealth:
    """One serving process's view of an upstream, as admin and ``manage.py upstreams`` show it."""

    process: str
    state: str  # "silent" when the process has not reported for HEALTH_STALE_AFTER
    protocol_version: str
    tool_count: int
    circuit: str
    last_failure: str
    last_failure_at: datetime | None
    reported_at: datetime


def upstream_health(names: Iterable[str] | None = None) -> dict[str, list[ProcessHealth]]:
    """Each upstream's health in every serving process that reported it, by upstream name."""
    rows = UpstreamHealth.objects.select_related("upstream").order_by("upstream__name", "process")
    if names is not None:
        rows = rows.filter(upstream__name__in=list(names))
    health: dict[str, list[ProcessHealth]] = {}
    for row in rows:
        health.setdefault(row.upstream.name, []).append(process_health(row))
    return health


def process_health(row: UpstreamHealth) -> ProcessHealth:
    stale = row.reported_at < timezone.now() - HEALTH_STALE_AFTER
    return ProcessHealth(
        process=row.process,
        state="silent" if stale else row.state,
        protocol_version=row.protocol_version,
        tool_count=row.tool_count,
        circuit=row.circuit,
        last_failure=row.last_failure,
        last_failure_at=row.last_failure_at,
        reported_at=row.reported_at,
    )


def health_summary(processes: Sequence[ProcessHealth]) -> str:
    """One line for people: "connected in 2 of 2 processes, protocol 2026-07-28, 12 tools"."""
    if not processes:
        return "no serving process has reported it"
    by_state: dict[str, list[ProcessHealth]] = {}
    for process in processes:
        by_state.setdefault(process.state, []).append(process)
    parts = [f"{state} in {len(group)} of {len(processes)} processes" for state, group in sorted(by_state.items())]
    connected = by_state.get("connected")
    if connected:
        versions = sorted({p.protocol_version for p in connected if p.protocol_version})
        parts.append(f"protocol {', '.join(versions)}" if versions else "")
        parts.append(f"{max(p.tool_count for p in connected)} tools")
    open_circuits = sum(p.circuit != "closed" for p in processes)
    if open_circuits:
        parts.append(f"circuit not closed in {open_circuits}")
    return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class FailureShare:
    """Upstream failures in a window, and how many of them a specific rule classified (the rest fell to a
    fallback and went to the inbox); ``open_groups`` is how many groups wait in the inbox now."""

    classified: int
    total: int
    open_groups: int

    @property
    def rate(self) -> float | None:
        return self.classified / self.total if self.total else None


def upstream_failure_share(start: datetime, end: datetime, *, upstream: str | None = None) -> FailureShare:
    """The classified share of upstream failures in the hours that overlap [start, end) (tallies are hourly)."""
    tallies = UpstreamFailureTally.objects.filter(hour__gt=start - timedelta(hours=1), hour__lt=end)
    groups = UpstreamFailureGroup.objects.all()
    if upstream:
        tallies = tallies.filter(upstream=upstream)
        groups = groups.filter(upstream=upstream)
    counts = dict(tallies.values_list("classified").annotate(n=Sum("count")).order_by())
    classified = counts.get(True, 0)
    return FailureShare(classified=classified, total=classified + counts.get(False, 0), open_groups=groups.count())


def upstream_exists(name: str) -> bool:
    """Whether ``name`` names an upstream: one configured now, or one whose failures were tallied (since removed)."""
    return Upstream.objects.filter(name=name).exists() or UpstreamFailureTally.objects.filter(upstream=name).exists()
