"""What the gateway's admin needs of the live gateway, a layer above this package: handed over when the app starts.

Connecting to an upstream (with the SDK's client) and the registry of our own tools belong to the MCP server
(``mcpserver``), which this package may not import. So the MCP server hands them over from its ``AppConfig.ready``
(``mcpserver.apps``), as it hands our tools to the metrics API (``errcatalog.web.api.metrics_filters.own_tools_from``):

- ``upstreams_probed_by``: how to connect to an upstream once, list its tools and disconnect
  (``mcpserver.gateway.probe.probe``), for the upstreams' "test connection" action (``probe_upstream``);
- ``own_tools_from``: which of our own tools ``/mcp`` serves (``mcpserver.registry.served_tool_names``), the tools a
  named server may be composed of (``own_tool_names``).

Each is given once at start-up; the last one given counts. Asking before it was given raises
``ImproperlyConfigured``, never an empty answer that would read as "no tools of ours" or "could not connect".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from errcatalog.gateway.selectors import UpstreamConfig


class ConnectionTestResult(Protocol):
    """What connecting to an upstream once showed, as far as staff are told (``mcpserver.gateway.probe.ProbeResult``
    holds this and more)."""

    @property
    def ok(self) -> bool: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def tools(self) -> Sequence[str]:
        """The names of the tools it would expose."""
        ...

    @property
    def failure(self) -> str:
        """What failed, in fixed words for staff (never the upstream's own text); empty when ``ok``."""
        ...

    @property
    def seconds(self) -> float: ...


# Connect to the upstream a configuration describes, with the gateway's settings (``settings.GATEWAY``), list its
# tools and disconnect (a stdio child is stopped).
UpstreamProber = Callable[[UpstreamConfig, Mapping[str, Any]], Awaitable[ConnectionTestResult]]
# Which of our own tools /mcp serves, their modules imported first.
OwnToolNames = Callable[[], Collection[str]]

# Set by the MCP server's app (see the module); a list so that a new one replaces the old without ``global``.
_probers: list[UpstreamProber] = []
_own_tool_names: list[OwnToolNames] = []


def upstreams_probed_by(prober: UpstreamProber) -> None:
    """``prober`` connects to an upstream once for ``probe_upstream``; the last one given counts."""
    _probers[:] = [prober]


def own_tools_from(names: OwnToolNames) -> None:
    """``names`` answers which of our own tools /mcp serves, for ``own_tool_names``; the last one given counts."""
    _own_tool_names[:] = [names]


async def probe_upstream(config: UpstreamConfig, settings: Mapping[str, Any]) -> ConnectionTestResult:
    """Connect to the upstream ``config`` describes as the gateway would, list the tools it would expose, and
    disconnect. Never raises for the upstream's failure (``failure`` says it); raises ``ImproperlyConfigured`` when
    no prober was handed over."""
    return await _handed_over(_probers, "Connecting to an upstream")(config, settings)


def own_tool_names() -> Collection[str]:
    """Our own tools this deployment serves at ``/mcp``. Raises ``ImproperlyConfigured`` when nobody said which."""
    return _handed_over(_own_tool_names, "Naming our own tools")()


def _handed_over[T](given: list[T], what: str) -> T:
    if not given:
        raise ImproperlyConfigured(
            f"{what} is the MCP server's job, handed over to errcatalog.gateway.live when the app starts "
            "(mcpserver.apps); is 'mcpserver' in INSTALLED_APPS?"
        )
    return given[0]
