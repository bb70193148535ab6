"""The gateway of one serving process: a connection per enabled upstream, and their tools as the pipeline's.

``Gateway.run`` (entered once per process by ``mcpserver.server.McpApp.run``) starts a supervisor per upstream and
follows the configuration: upstream rows raise the catalog revision like catalog rows do, so when the snapshot this
process holds moves to a new revision the gateway reads the enabled upstreams again and starts, restarts (a changed
configuration) or stops connections; it reads the enabled named servers with them (``Gateway.named_servers``).
``Gateway.tools`` is what calls and ``tools/list`` read: a mapping rebuilt only when an upstream's tool list or the set
of upstreams changes.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping
from types import MappingProxyType
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from django.conf import settings
from django.db import close_old_connections

from errcatalog.catalog.snapshot import catalog_snapshot_status
from errcatalog.gateway.models import TOOL_SEPARATOR
from errcatalog.gateway.selectors import (
    NamedServerConfig,
    UpstreamConfig,
    named_server_configs,
    upstream_configs,
    upstream_tool_approvals,
)
from errcatalog.gateway.services import (
    HealthReport,
    upstream_health_forget,
    upstream_health_report,
    upstream_tools_record,
)
from mcpserver.calls import current_tool_call
from mcpserver.gateway import notices
from mcpserver.gateway.connection import UpstreamConnection
from mcpserver.gateway.elicitation_complete import forget_session
from mcpserver.gateway.log_relay import client_log, client_log_forget, client_log_level
from mcpserver.gateway.parking import cancel_all
from mcpserver.gateway.relays import forwarded_call, relayed
from mcpserver.registry import ToolSpec

logger = logging.getLogger("mcpserver.gateway")
# How often the gateway compares the snapshot's revision with the one its configuration was read at.
WATCH_SECONDS = 0.5
# How long stopping waits for the connections to close (child processes stopped) before it cancels them.
STOP_SECONDS = 10.0
# How often a process reports its connections' health when nothing changes (a change is reported at once).
HEALTH_REPORT_SECONDS = 15.0
# How often a listing is offered to the database before the next listing tries again (a locked SQLite file, a
# database restarting), waiting 0.5, 1, 2 and 4 s in between.
RECORD_ATTEMPTS = 5


def _process_name() -> str:
    """This process, as its health rows name it (read each time: a server may fork after importing this)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _with_own_connection[T](function: Callable[..., T], *args: Any) -> T:
    """Run ``function`` in a worker thread's database connection, tidied before and after as Django does around a
    request (the gateway's reads and writes do not pass through one)."""
    close_old_connections()
    try:
        return function(*args)
    finally:
        close_old_connections()


class Gateway:
    def __init__(self) -> None:
        self.connections: dict[str, UpstreamConnection] = {}
        self._tools: Mapping[str, ToolSpec] | None = MappingProxyType({})
        self._task_group: anyio.abc.TaskGroup | None = None
        self._revision: object = None
        self._reload_failing = False
        self._reported: tuple[HealthReport, ...] | None = None
        self._report_due = 0.0
        self._listeners: list[Callable[[], None]] = []
        self._session_listeners: list[Callable[[str], None]] = []
        # The approved metadata of each upstream's tools (``UpstreamTool``), by upstream and tool name: read with the
        # configuration, and from the answer to each listing this process records; never per call.
        self._approved: Mapping[str, Mapping[str, Mapping[str, Any]]] = {}
        self._recording: anyio.Lock | None = None  # made in ``run``, on the loop that uses it
        # The enabled named servers (``/mcp/<name>``), by name: read with the configuration, replaced whole.
        self.named_servers: Mapping[str, NamedServerConfig] = MappingProxyType({})

    # --- What calls read ------------------------------------------------------------------------------------

    def tools(self) -> Mapping[str, ToolSpec]:
        """Every upstream tool served, by its served name (``prefix__tool``)."""
        tools = self._tools
        if tools is None:
            tools = self._tools = MappingProxyType(self._build_tools())
        return tools

    def serves(self, server: str) -> bool:
        """Whether ``server`` (never ``ROOT_SERVER``) is served here now: an enabled upstream's own path or an enabled
        named server."""
        return server in self.connections or server in self.named_servers

    def client_session_ended(self, session_id: str) -> None:
        """Our 2025-11-25 session ``session_id`` ended: its upstream sessions close, its log level and the URL
        elicitations relayed to it are forgotten."""
        for connection in self.connections.values():
            connection.own_sessions.close(session_id)
        client_log_forget(session_id)
        forget_session(session_id)
        for listener in list(self._session_listeners):
            listener(session_id)

    def on_client_session_ended(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(session_id)`` (on the event loop; it must not raise) when our 2025-11-25 session ends, after
        its own upstream sessions were closed; returns the remover."""
        self._session_listeners.append(listener)
        return lambda: self._session_listeners.remove(listener) if listener in self._session_listeners else None

    async def client_log_level(self, session_id: str, level: str) -> None:
        """``logging/setLevel`` of our session ``session_id``: kept for its calls, and forwarded to the upstream
        sessions it has open (``log_relay``)."""
        client_log_level(session_id, level)
        account = client_log(session_id)
        for connection in list(self.connections.values()):
            await connection.forward_level(session_id, account)

    def on_tools_changed(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (on the event loop) whenever the upstream tools may have changed; returns the remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _tools_changed(self) -> None:
        self._tools = None
        for listener in list(self._listeners):
            listener()

    def _build_tools(self) -> dict[str, ToolSpec]:
        """Each tool an upstream lists that has approved metadata, served with that metadata: a tool never approved
        is not served, and one whose metadata changed is served as it was approved until its change is."""
        specs: dict[str, ToolSpec] = {}
        for name, connection in self.connections.items():
            approved = self._approved.get(name, {})
            for tool_name in connection.tools:
                metadata = approved.get(tool_name)
                if metadata is None:
                    continue
                try:
                    tool = types.Tool.model_validate(metadata)
                except ValueError:  # stored by an older version, or edited by hand: not served
                    logger.warning("Upstream %s: the approved metadata of a tool is not a tool; not served", name)
                    continue
                spec = upstream_tool_spec(connection, tool)
                specs[spec.name] = spec
        return specs

    async def _record_listing(self, connection: UpstreamConnection) -> None:
        """Pin what ``connection``'s upstream lists (``upstream_tools_record``, off the call path) and serve what is
        approved of it. A failure (the database) keeps what this process serves; the next listing tries again."""
        name = connection.config.name
        listing = [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in connection.tools.values()]
        record = functools.partial(upstream_tools_record, upstream=name, listing=listing)
        for attempt in range(RECORD_ATTEMPTS):
            try:
                # One at a time in a process: SQLite refuses a second writer rather than wait for it.
                async with self._recording or anyio.Lock():
                    approved = await anyio.to_thread.run_sync(_with_own_connection, record)
                break
            except Exception as exc:
                if attempt + 1 == RECORD_ATTEMPTS:
                    logger.warning("Upstream %s: its tools could not be recorded (%s)", name, type(exc).__name__)
                    return
                await anyio.sleep(0.5 * 2**attempt)
        if approved is not None and approved != self._approved.get(name):
            self._approved = {**self._approved, name: approved}
            self._tools_changed()

    # --- Following the configuration -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            self._recording = anyio.Lock()
            await self._reload()
            task_group.start_soon(self._watch)
            try:
                yield
            finally:
                cancel_all()
                for connection in self.connections.values():
                    connection.stop()
                with anyio.move_on_after(STOP_SECONDS, shield=True):
                    while any(c.state != "stopped" for c in self.connections.values()):
                        await anyio.sleep(0.05)
                    if self.connections:
                        with contextlib.suppress(Exception):  # stale rows are shown as silent all the same
                            await anyio.to_thread.run_sync(
                                _with_own_connection, upstream_health_forget, _process_name()
                            )
                task_group.cancel_scope.cancel()
        self._task_group = None

    async def _watch(self) -> None:
        while True:
            await anyio.sleep(WATCH_SECONDS)
            if catalog_snapshot_status()["revision"] != self._revision:
                await self._reload()
            await self._report_health()

    # --- Health, for admin and ``manage.py upstreams`` in any process -------------------------------------------

    async def _report_health(self) -> None:
        """Write this process's connections' state when it changed, and every ``HEALTH_REPORT_SECONDS`` anyway."""
        reports = tuple(connection.health() for connection in self.connections.values())
        now = time.monotonic()
        if not reports and not self._reported:  # no upstreams here, and none before: nothing to say
            return
        if reports == self._reported and now < self._report_due:
            return
        # Also after a failure (the database, above all): tried again at the next change or heartbeat, not at every
        # watch.
        self._reported, self._report_due = reports, now + HEALTH_REPORT_SECONDS
        try:
            await anyio.to_thread.run_sync(_with_own_connection, upstream_health_report, _process_name(), reports)
        except Exception as exc:
            logger.debug("The gateway could not report its upstreams' health (%s)", type(exc).__name__)

    async def _reload(self) -> None:
        revision = catalog_snapshot_status()["revision"]
        try:
            configs, approved, named = await anyio.to_thread.run_sync(_with_own_connection, _records)
        except Exception as exc:  # the database, above all: the gateway must outlive whatever failed
            # Tried again at every watch until it works; said once.
            log = logger.debug if self._reload_failing else logger.warning
            log("The gateway could not read its upstreams (%s); it keeps those it has", type(exc).__name__)
            self._reload_failing = True
            return
        self._reload_failing = False
        self._revision = revision
        self._approved = approved
        self.named_servers = MappingProxyType(named)
        self.apply(configs)  # tells the listeners, who compare what each server lists

    def apply(self, configs: list[UpstreamConfig]) -> None:
        """Start, restart or stop connections so that they match ``configs``."""
        assert self._task_group is not None
        wanted = {c.name: c for c in configs}
        for name, connection in list(self.connections.items()):
            if wanted.get(name) != connection.config:
                connection.stop()
                del self.connections[name]
                # Its clients relist (a reconfigured one announces itself again when it connects).
                notices.offerings_changed(name, connection.offers)
                logger.info("Upstream %s %s", name, "reconfigured" if name in wanted else "removed")
        for name, config in wanted.items():
            if name not in self.connections:
                connection = UpstreamConnection(
                    config, settings.GATEWAY, self._tools_changed, on_listed=self._record_listing
                )
                self.connections[name] = connection
                self._task_group.start_soon(connection.run, name=f"errcatalog-upstream-{name}")
        self._tools_changed()


def _records() -> tuple[list[UpstreamConfig], dict[str, dict[str, dict[str, Any]]], dict[str, NamedServerConfig]]:
    """The upstreams this process serves, their tools' approved metadata and the named servers, read together."""
    return upstream_configs(), upstream_tool_approvals(), named_server_configs()


def upstream_tool_spec(connection: UpstreamConnection, tool: types.Tool) -> ToolSpec:
    """An upstream tool as the pipeline serves it: its approved description and schema, a forwarding function.

    Calls are checked against the approved input schema: an upstream whose schema changed since answers with its
    own error where the two differ (classified as any upstream failure) until staff approve the change."""
    config = connection.config
    upstream_name = tool.name

    async def forward(**arguments: Any) -> types.CallToolResult | types.InputRequiredResult:
        # The call from the pipeline, not a ``context`` parameter: that name may be an upstream argument.
        call = current_tool_call.get()
        if call is None:  # called outside the pipeline (a test): nobody to ask
            return await connection.call(upstream_name, arguments)
        return await relayed(forwarded_call(connection, upstream_name, arguments, call))

    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    # ``execution.taskSupport`` is a closed set of values, nothing a model reads as text: served as the upstream
    # lists it now, not pinned with the approved metadata (``screen.SERVED_TOOL_FIELDS``), so that serving it asks
    # staff to review no tool again. Tasks themselves are not relayed (the SDK defines their types only).
    listed = connection.tools.get(tool.name)
    execution = listed.execution if listed is not None else None
    task_support = execution.task_support if execution is not None else None
    return ToolSpec(
        name=f"{config.prefix}{TOOL_SEPARATOR}{tool.name}",
        description=tool.description or "",
        input_schema=tool.input_schema,
        function=forward,
        toolset=f"upstream:{config.name}",
        title=tool.title,
        output_schema=tool.output_schema,
        annotations=annotations,
        elicit=True,
        upstream=config.name,
        upstream_tool=tool.name,
        execution={"taskSupport": task_support} if task_support is not None else None,
    )


gateway = Gateway()
