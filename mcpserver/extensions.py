"""Extensions of the MCP server beyond tools: request handlers an installed app contributes.

errcatalog serves tools, and the catalog as resources and prompts (``mcpserver.reference``). An app that needs more
of the protocol (the conformance fixtures' resources, prompts, completions and log level) declares a
``ServerExtension`` in a module named ``mcp_extensions``, found in every installed app like ``mcp_tools`` is;
``mcpserver.server`` builds the SDK server with the handlers of all of them, the resource and prompt handlers
behind the catalog's (lists are joined; what is not ``errcatalog:`` goes to the app). mcpserver itself imports no
such app.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.module_loading import autodiscover_modules

_extensions: list[ServerExtension] = []


@dataclass(frozen=True, slots=True)
class ServerExtension:
    """What one app adds: ``handlers`` are keyword arguments of the SDK's ``Server`` (``on_list_resources``...)."""

    name: str
    handlers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)


def extend_server(extension: ServerExtension) -> None:
    """Add ``extension`` (once per name) to the servers built from now on."""
    if all(existing.name != extension.name for existing in _extensions):
        _extensions.append(extension)


def autodiscover_extensions() -> tuple[ServerExtension, ...]:
    """Import ``mcp_extensions`` of every installed app; the extensions they declared, in app order."""
    autodiscover_modules("mcp_extensions")
    return tuple(_extensions)
