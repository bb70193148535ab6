"""Which filter values of ``GET /api/v1/metrics/`` name nothing, so the API can say so instead of answering zeros.

A value is known when it names something that exists or existed:

- any filter: a value some rolled-up outcome has (``errcatalog.outcomes.metrics.ever_recorded``: the daily
  summaries, so a tool called last month but not this week is still a tool, and its filter answers zeros);
- ``tool``: also one of our own tools /mcp serves, a tool the gateway serves (an approved tool of an enabled upstream,
  exposed, by its ``/mcp`` name ``<prefix>__<tool>``) or one the catalog has a parameter hint for;
- ``code``: also an error code of the catalog, active or not;
- ``variant``: also the name of a template variant of the catalog;
- ``upstream``: also an upstream configured now, or one whose failures were tallied;
- ``client``: also a client token's key (``token:<id>``, ``reporter:<id>/<client>``) while the token exists.

Our own tools are in the MCP server's registry, a layer above this one: the MCP server hands over how to name the ones
it serves when the app starts (``own_tools_from``, called by ``mcpserver.apps``), so that a tool of ours that has never
been called is known too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from django.db.models import Q

from errcatalog.access.selectors import client_display_names
from errcatalog.catalog.models import ErrorCode, ParameterHint, TemplateVariant
from errcatalog.gateway.models import TOOL_SEPARATOR, UpstreamTool
from errcatalog.gateway.selectors import upstream_exists
from errcatalog.outcomes.metrics import ever_recorded

# What each unknown value is answered with: fixed words, never the value sent (it may be anything).
UNKNOWN_FILTER_MESSAGES = {
    "tool": (
        "No tool of this name has recorded outcomes, is served by the gateway or has a parameter hint in the "
        "catalog. Check the name against the tool breakdown of an unfiltered request."
    ),
    "code": "No error code of this name is in the catalog or has recorded outcomes.",
    "variant": "No template variant of this name is in the catalog or has recorded outcomes.",
    "upstream": "No upstream MCP server of this name is configured or has recorded outcomes.",
    "client": (
        "No client of this name has recorded outcomes or names a client token (clients are named as in the client "
        "breakdown, e.g. token:3)."
    ),
}


def unknown_metrics_filters(filters: Mapping[str, str | None]) -> list[str]:
    """The names of the filters in ``filters`` whose value names nothing known (see the module), in their order.

    Blank and absent filters are no filters and never unknown. Raises ``MetricsStoreUnavailable`` (the recorded
    values) or the database's own error (the catalog's and the gateway's records) while the database is away.
    """
    return [name for name, value in filters.items() if value and not _known(name, value)]


def _known(name: str, value: str) -> bool:
    exists = _EXISTS.get(name)
    return (exists is not None and exists(value)) or ever_recorded(name, value)


# How to name our own tools that /mcp serves: set by the MCP server's app (see the module).
_own_tool_names: list[Callable[[], Collection[str]]] = []


def own_tools_from(names: Callable[[], Collection[str]]) -> None:
    """``names`` answers which of our own tools /mcp serves, for the ``tool`` filter; the last one given counts."""
    _own_tool_names[:] = [names]


def _served_or_hinted_tool(name: str) -> bool:
    if any(name in names() for names in _own_tool_names):
        return True
    if ParameterHint.objects.filter(tool=name).exists():
        return True
    # A prefix may end in "_", so "git___status" is "git_" + "status" or "git" + "_status": every split is tried.
    splits = [
        (name[:at], name[at + len(TOOL_SEPARATOR) :])
        for at in range(1, len(name))
        if name.startswith(TOOL_SEPARATOR, at)
    ]
    if not splits:
        return False
    candidates = Q()
    for prefix, tool in splits:
        candidates |= Q(upstream__prefix=prefix, name=tool)
    pins = UpstreamTool.objects.filter(
        candidates, kind=UpstreamTool.Kind.TOOL, approved__isnull=False, upstream__enabled=True
    )
    # An upstream's ``tools`` list, when not empty, is the only ones it exposes.
    return any(not exposed or tool in exposed for tool, exposed in pins.values_list("name", "upstream__tools"))


_EXISTS: dict[str, Callable[[str], bool]] = {
    "tool": _served_or_hinted_tool,
    "code": lambda value: ErrorCode.objects.filter(code=value).exists(),
    "variant": lambda value: TemplateVariant.objects.filter(name=value).exists(),
    "upstream": upstream_exists,
    "client": lambda value: bool(client_display_names([value])),
}
