"""The JSON-RPC error face: the question protocol's error object, with the codes JSON-RPC, MCP and FastMCP use.

Codes JSON-RPC and MCP define are used as defined. Catalog codes without a JSON-RPC code of their own go out
as -32603 (system) or -32602 (user-correctable). ``legacy=True`` reproduces FastMCP's legacy -32001/-32000
choices.
"""

from __future__ import annotations

from typing import Any

from errcatalog.render.core import RenderedError
from errcatalog.vocabulary import JSONRPC_INTERNAL_ERROR as INTERNAL_ERROR
from errcatalog.vocabulary import JSONRPC_INVALID_PARAMS as INVALID_PARAMS
from errcatalog.vocabulary import MCP_RESOURCE_NOT_FOUND as RESOURCE_NOT_FOUND

# From 2026-07-28 on, a missing resource is an invalid-params error rather than -32002.
PROTOCOL_WITHOUT_RESOURCE_NOT_FOUND = "2026-07-28"
# The codes FastMCP's error middleware gives these failures.
LEGACY_CODES = {
    "RESOURCE_NOT_FOUND": -32001,
    "NOT_FOUND": -32001,
    "PERMISSION_DENIED": -32000,
    "TIMEOUT": -32000,
}


def jsonrpc_code(rendered: RenderedError, *, protocol_version: str = "", legacy: bool = False) -> int:
    if legacy and rendered.code in LEGACY_CODES:
        return LEGACY_CODES[rendered.code]
    code = rendered.jsonrpc_code
    if code is None:
        code = INTERNAL_ERROR if rendered.system else INVALID_PARAMS
    if code == RESOURCE_NOT_FOUND and protocol_version >= PROTOCOL_WITHOUT_RESOURCE_NOT_FOUND:
        code = INVALID_PARAMS
    return code


def error_object(rendered: RenderedError, *, protocol_version: str = "", legacy: bool = False) -> dict[str, Any]:
    """The ``error`` member: the question (or the composed text) as message, the question protocol's fields as data."""
    data = dict(rendered.data)
    data["retry_capable"] = bool(data.get("retry_capable")) or rendered.retryable
    if rendered.retry_after is not None:
        data["retry_after_seconds"] = rendered.retry_after
    if rendered.event_id:
        data["event_id"] = rendered.event_id
    if rendered.alternatives:
        data["alternatives"] = list(rendered.alternatives)
    return {
        "code": jsonrpc_code(rendered, protocol_version=protocol_version, legacy=legacy),
        "message": rendered.question or rendered.text,
        "data": data,
    }


def error_response(
    rendered: RenderedError, request_id: int | str | None, *, protocol_version: str = "", legacy: bool = False
) -> dict[str, Any]:
    """A whole JSON-RPC 2.0 error response."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error_object(rendered, protocol_version=protocol_version, legacy=legacy),
    }
