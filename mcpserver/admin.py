"""The MCP server's admin pages (Django looks here): the gateway's upstreams, and the tools the catalog's previews
call (``served_sample_tools``, handed to ``errcatalog.catalog.admin``, which cannot import the server)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

import mcpserver.gateway.admin  # noqa: F401  (registers UpstreamAdmin)
from errcatalog.catalog import admin as catalog_admin
from errcatalog.catalog.preview_samples import SampleTool
from errcatalog.gateway.models import TOOL_SEPARATOR
from errcatalog.gateway.selectors import upstream_configs, upstream_tool_approvals
from mcpserver.registry import autodiscover, registry
from mcpserver.validation import parameter_fault


def _sample_tool(name: str, schema: Any, upstream: str = "") -> SampleTool:
    """A tool with its required parameters described as a call's validation describes a missing one."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return SampleTool(name=name, upstream=upstream)
    faults = tuple(
        parameter_fault(p, properties[p] if isinstance(properties.get(p), Mapping) else {}, "missing")
        for p in required
        if isinstance(p, str)
    )
    return SampleTool(name=name, required=faults, upstream=upstream)


def served_sample_tools() -> tuple[SampleTool, ...]:
    """Our enabled tools, then every approved tool of each enabled upstream with the metadata it is served with."""
    autodiscover()  # the tool modules register on import; a process that has not served /mcp yet has not
    own = registry.enabled_by_name(settings.MCP["TOOLSETS"])
    tools = [_sample_tool(spec.name, spec.input_schema) for spec in sorted(own.values(), key=lambda s: s.name)]
    approvals = upstream_tool_approvals()
    for config in upstream_configs():
        for tool_name, metadata in sorted(approvals.get(config.name, {}).items()):
            if config.tools is not None and tool_name not in config.tools:
                continue
            served = f"{config.prefix}{TOOL_SEPARATOR}{tool_name}"
            if served not in own:  # an own tool wins a name clash, as in what is served
                tools.append(_sample_tool(served, metadata.get("inputSchema"), upstream=config.name))
    return tuple(tools)


catalog_admin.sample_tools_source = served_sample_tools
