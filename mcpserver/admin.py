"""The MCP server's part of admin (Django looks here): the tools the catalog's previews call (``served_sample_tools``,
handed to ``errcatalog.catalog.admin``, which cannot import the server). The pages of the gateway's records are with
their models (``errcatalog.gateway.admin``, ``named_server_admin``; the inbox's is ``errcatalog.catalog.inbox_admin``);
what they need of the live side, ``mcpserver.apps`` hands over (``errcatalog.gateway.live``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from errcatalog.catalog import admin as catalog_admin
from errcatalog.catalog.preview_samples import SampleTool
from errcatalog.gateway.models import TOOL_SEPARATOR
from errcatalog.gateway.selectors import upstream_configs, upstream_tool_approvals
from errcatalog.render import ParameterFault
from mcpserver.registry import ToolSpec, autodiscover, registry
from mcpserver.validation import parameter_fault


def _sample_tool(spec: ToolSpec) -> SampleTool:
    """A tool as a failed call describes it: its required parameters as validation describes a missing one, and
    what the pipeline's failures carry of the tool itself."""
    schema = spec.input_schema
    properties = schema.get("properties")
    required = schema.get("required")
    faults: tuple[ParameterFault, ...] = ()
    if isinstance(properties, Mapping) and isinstance(required, list):
        faults = tuple(
            parameter_fault(p, properties[p] if isinstance(properties.get(p), Mapping) else {}, "missing")
            for p in required
            if isinstance(p, str)
        )
    return SampleTool(
        name=spec.name,
        required=faults,
        upstream=spec.upstream,
        optional=spec.optional_parameters,
        summary=spec.guidance,
    )


def _upstream_spec(name: str, upstream: str, metadata: Mapping[str, Any]) -> ToolSpec:
    """An approved upstream tool's metadata as a spec, for what it says of itself (it is never called here)."""
    schema = metadata.get("inputSchema")
    description = metadata.get("description")
    return ToolSpec(
        name=name,
        description=description if isinstance(description, str) else "",
        input_schema=schema if isinstance(schema, Mapping) else {},
        function=_never_called,
        toolset=f"upstream:{upstream}",
        upstream=upstream,
    )


def _never_called(**_: Any) -> None:
    raise RuntimeError("A preview's tool is never called.")


def served_sample_tools() -> tuple[SampleTool, ...]:
    """Our enabled tools, then every approved tool of each enabled upstream with the metadata it is served with."""
    autodiscover()  # the tool modules register on import; a process that has not served /mcp yet has not
    own = registry.enabled_by_name(settings.MCP["TOOLSETS"])
    tools = [_sample_tool(spec) for spec in sorted(own.values(), key=lambda s: s.name)]
    approvals = upstream_tool_approvals()
    for config in upstream_configs():
        for tool_name, metadata in sorted(approvals.get(config.name, {}).items()):
            if config.tools is not None and tool_name not in config.tools:
                continue
            served = f"{config.prefix}{TOOL_SEPARATOR}{tool_name}"
            if served not in own:  # an own tool wins a name clash, as in what is served
                tools.append(_sample_tool(_upstream_spec(served, config.name, metadata)))
    return tuple(tools)


catalog_admin.sample_tools_source = served_sample_tools
