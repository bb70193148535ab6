"""The tool registry: every tool the MCP endpoint serves, whoever declared it.

A tool is a plain Python function plus a description written for a model and a JSON Schema for its input.
Declare one with the ``tool`` decorator in a module named ``mcp_tools`` of any installed Django app (found by
``autodiscover``), or in ``mcpserver/tools/``::

    from mcpserver.registry import tool

    @tool(
        description="Send an email through the site's mail backend.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string", "format": "email", "description": "Recipient address"}},
            "required": ["to"],
        },
    )
    def send_email(to: str) -> str:
        ...

The function receives the validated arguments as keyword arguments (plus ``context`` if it declares a
parameter of that name). Sync functions run in a worker thread, so the ORM is fine; async functions are awaited.
It returns a string (text content), a dict or list (JSON content, and structured content for a dict), or a
``ToolOutput``. To fail, it raises one of ``errcatalog.errors`` (or anything else): the failure is classified and
rendered from the catalog; exception text never reaches the model.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Protocol

from errcatalog.errors import ErrcatalogError
from errcatalog.vocabulary import TOOL_NAME_RULE, is_tool_name

# The ``format`` argument of tools declared with ``formats=True`` (markdown by default, as the toolError:v1
# envelope's format gating has it).
FORMAT_PROPERTY: Mapping[str, Any] = {
    "type": "string",
    "enum": ["markdown", "json", "both"],
    "description": "How to return the result and any error: markdown text, a JSON block, or both.",
}


# A sentence ends at a full stop, question or exclamation mark followed by a space or the end of the text.
_FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


@dataclass(frozen=True, slots=True)
class UserAnswer:
    """The user's answer to ``ToolContext.elicit``: "accept" (with ``content``), "decline" or "cancel"."""

    action: str
    content: dict[str, Any] = field(default_factory=dict)


class ClientCannotAnswer(ErrcatalogError):
    """The client cannot take a request from the server (no sampling or elicitation, or no back channel).

    Raised by ``ToolContext.sample`` and ``ToolContext.elicit``; rendered from the catalog like any failure.
    """

    code = "CLIENT_ERROR"


class ToolContext(Protocol):
    """What a running tool may ask of the call it serves.

    ``sample`` and ``elicit`` ask the client and return its answer; they need a client that declared the capability,
    and raise ``ClientCannotAnswer`` otherwise. On a 2025-11-25 session they ask in mid-call. On 2026-07-28 the call
    answers with the request instead, and the tool runs again from its start when the client calls again with the
    answer (``mcpserver.tool_rounds``): its side effects belong after its requests, and ``InputNeeded``, which a
    request raises meanwhile, must not be caught.
    """

    client: str | None  # the name of the client token, when auth is on
    session_id: str | None  # the 2025-11-25 session, if any

    async def log(self, level: str, data: Any) -> None: ...

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None: ...

    async def sample(self, prompt: str, *, max_tokens: int) -> str:
        """Ask the client's model (``sampling/createMessage``) to answer ``prompt``; its text reply."""
        ...

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> UserAnswer:
        """Ask the user for the fields of ``schema`` (a form-mode ``elicitation/create``)."""
        ...

    async def close_stream(self) -> None:
        """Close this call's SSE stream so the client reconnects and resumes (SEP-1699 polling).

        A no-op unless the transport can replay what the client missed (an event store, see
        ``mcpserver.server``); the call goes on either way.
        """
        ...


@dataclass(frozen=True)
class ToolOutput:
    """A result with full control: MCP content blocks as dicts, and optional structured content."""

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    function: Callable[..., Any]
    toolset: str = "default"
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    # The tool accepts a `format` argument (markdown/json/both) that also shapes its errors (format gating).
    formats: bool = False
    # Missing input may be asked for with an MCP elicitation when the client supports it.
    elicit: bool = False
    # The upstream MCP server the tool is forwarded to (``mcpserver.gateway``); blank for our own tools.
    upstream: str = ""
    # The tool's own name at that upstream: what the server serving the upstream alone (``/mcp/<upstream>``) calls it.
    upstream_tool: str = ""
    # An upstream tool's execution hints as it lists them (``{"taskSupport": ...}``), served in listings.
    execution: Mapping[str, Any] | None = None

    @cached_property
    def listed_input_schema(self) -> Mapping[str, Any]:
        """The input schema as clients see it: with the optional ``format`` argument when ``formats`` is set."""
        if not self.formats:
            return self.input_schema
        properties = dict(self.input_schema.get("properties", {}))
        properties.setdefault("format", FORMAT_PROPERTY)
        return {**self.input_schema, "properties": properties}

    @cached_property
    def accepted_arguments(self) -> frozenset[str] | None:
        """The keyword arguments the function takes, or None when it takes any (``**kwargs``)."""
        parameters = inspect.signature(self.function).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            return None
        return frozenset(p.name for p in parameters if p.name != "context")

    @cached_property
    def optional_parameters(self) -> tuple[str, ...]:
        """The input schema's properties the tool does not require, in the schema's order: what a question about
        missing input offers besides the required ones. The ``format`` argument shapes the answer, not the tool's
        work, and is not one of them."""
        properties = self.input_schema.get("properties")
        required = self.input_schema.get("required")
        if not isinstance(properties, Mapping):
            return ()
        needed = set(required) if isinstance(required, list) else set()
        return tuple(name for name in properties if isinstance(name, str) and name not in needed)

    @cached_property
    def summary(self) -> str:
        """The first sentence of the tool's description, on one line: what a question's guidance says of the tool
        when the catalog says nothing (the renderer screens it like any schema text)."""
        text = " ".join(self.description.split())
        match = _FIRST_SENTENCE.match(text)
        return match[1] if match else text

    @cached_property
    def guidance(self) -> str:
        """What a question about this tool's missing input says of the tool when the catalog says nothing: its
        ``summary`` for our own tools. An upstream tool's description is the upstream's own prose, which the gateway
        keeps out of failures (its optional parameters' names, screened like every name, are still offered)."""
        return "" if self.upstream else self.summary

    # Cached: read on every call, and inspecting a signature costs more than the rest of dispatching.
    @cached_property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    @cached_property
    def wants_context(self) -> bool:
        return "context" in inspect.signature(self.function).parameters


class ToolRegistry:
    """Tools by name, grouped in toolsets that settings switch on and off."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._enabled: dict[frozenset[str], Mapping[str, ToolSpec]] = {}

    def add(self, spec: ToolSpec) -> ToolSpec:
        if not is_tool_name(spec.name):
            raise ValueError(f"Tool name {spec.name!r} must be {TOOL_NAME_RULE}.")
        if spec.input_schema.get("type") != "object":
            raise ValueError(f"Tool {spec.name}: input_schema must be a JSON Schema with type 'object'.")
        existing = self._tools.get(spec.name)
        if existing is not None and existing.function is not spec.function:
            raise ValueError(f"Tool {spec.name} is declared twice ({existing.toolset} and {spec.toolset}).")
        self._tools[spec.name] = spec
        self._enabled.clear()
        return spec

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def enabled(self, toolsets: Iterator[str] | set[str] | frozenset[str]) -> list[ToolSpec]:
        return list(self.enabled_by_name(toolsets).values())

    def enabled_by_name(self, toolsets: Iterator[str] | set[str] | frozenset[str]) -> Mapping[str, ToolSpec]:
        """The tools of ``toolsets`` by name; built once per set of toolsets (it is read on every call)."""
        wanted = frozenset(toolsets)
        found = self._enabled.get(wanted)
        if found is None:
            found = MappingProxyType({t.name: t for t in self._tools.values() if t.toolset in wanted})
            self._enabled[wanted] = found
        return found

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._tools.values())


registry = ToolRegistry()


def tool(
    *,
    description: str,
    input_schema: Mapping[str, Any],
    name: str | None = None,
    toolset: str = "default",
    title: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | None = None,
    formats: bool = False,
    elicit: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as an MCP tool (see the module docstring)."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        registry.add(
            ToolSpec(
                name=name or function.__name__,
                description=inspect.cleandoc(description),
                input_schema=input_schema,
                function=function,
                toolset=toolset,
                title=title,
                output_schema=output_schema,
                annotations=annotations,
                formats=formats,
                elicit=elicit,
            )
        )
        return function

    return register


def autodiscover() -> None:
    """Import ``mcp_tools`` of every installed app, and the built-in tool modules."""
    from django.utils.module_loading import autodiscover_modules

    import mcpserver.tools  # noqa: F401  (built-in toolsets register on import)

    autodiscover_modules("mcp_tools")
