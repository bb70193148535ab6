"""Rendering, pure: one failure, one catalog entry, many faces (DESIGN §4).

Owns the catalog's frozen plain data (``entries.CatalogSnapshot``), classification of a failure's facts into a
code (``classify``), the renderer (``core``), its faces (``mcp``, ``jsonrpc``, ``providers``, ``people``) and the
choice of locale. May import only the kernel (``errcatalog.vocabulary``, ``errors``, ``safety``): no Django, no
ORM, no I/O, so that it is fast, easy to test and the same in every process.
"""

from errcatalog.render.core import (
    DEFAULT_MAX_CHARS,
    Failure,
    ParameterFault,
    RenderedError,
    UpstreamWords,
    did_you_mean,
    render,
)
from errcatalog.render.jsonrpc import error_object, error_response, jsonrpc_code
from errcatalog.render.mcp import FORMATS, envelope, envelope_json, tool_result
from errcatalog.render.people import agent_error, agent_result, user_markdown, user_message
from errcatalog.render.providers import PROVIDERS, anatomy, provider_result

__all__ = [
    "DEFAULT_MAX_CHARS",
    "FORMATS",
    "PROVIDERS",
    "Failure",
    "ParameterFault",
    "RenderedError",
    "UpstreamWords",
    "agent_error",
    "agent_result",
    "anatomy",
    "did_you_mean",
    "envelope",
    "envelope_json",
    "error_object",
    "error_response",
    "jsonrpc_code",
    "provider_result",
    "render",
    "tool_result",
    "user_markdown",
    "user_message",
]
