"""A tool call's result in the form it goes on the wire, made once for a failure that repeats.

For every result, the SDK's runner dumps the handler's model, validates the dump against the schema of the call's
protocol version (dropping what that version lacks), fills a 2026-07-28 result's ``resultType`` and stamps the
server's identity into its ``_meta`` (``serverInfo``). ``ModernToolCalls`` (``tool_calls``) serves 2026-07-28
``tools/call`` with ``wire_result``, which takes the same steps (a copy of ``ServerRunner._serialize``: a reach, see
the package docstring); a result the pipeline reuses (a repeated failure, ``remember``) keeps what they made, per
protocol version, and the next call sends it as it is; an upstream's result read by the poster (``forwarded``) keeps
the form it was checked in, and goes out as that form when nothing but its ``_meta`` changed. A 2025-11-25
session's call still goes through the SDK's runner, which takes the kept form as the handler's dict. Without the fast
paths (``fast_paths``) no form is kept: the runner serialises every result itself.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import PrivateAttr, ValidationError

from errcatalog.caching import BoundedCache, process_cache
from mcpserver.sdk_internals import fast_paths

logger = logging.getLogger("mcpserver.sdk_internals.wire")

_SERVER_INFO = types.SERVER_INFO_META_KEY
ToolResult = types.CallToolResult | types.InputRequiredResult
# Results the pipeline reuses, by identity, each with its wire form per protocol version (made on first use). An
# entry holds its result, so the id cannot stand for another meanwhile; cleared with the catalog, like the renders.
_remembered: BoundedCache[int, tuple[ToolResult, dict[str, dict[str, Any]]]] = process_cache(
    "mcpserver.sdk_internals.wire.forms", scope="catalog", max_entries=1024
)


def remember(result: ToolResult) -> None:
    """Keep the wire forms of ``result``, which the pipeline will serve again (``pipeline._result_of``)."""
    _remembered.set(id(result), (result, {}))


def remembered_form(result: ToolResult, version: str, *, server_info: Mapping[str, Any]) -> dict[str, Any] | None:
    """The wire form of a remembered ``result`` for ``version`` (made on first use), or None for any other (and for
    every result without the fast paths)."""
    hit = _remembered.get(id(result)) if fast_paths() else None
    if hit is None or hit[0] is not result:
        return None
    form = hit[1].get(version)
    if form is None or (version in MODERN_PROTOCOL_VERSIONS and form["_meta"][_SERVER_INFO] is not server_info):
        form = hit[1][version] = _serialized(result, version, server_info)
    return form


def wire_result(result: ToolResult, version: str, *, server_info: Mapping[str, Any]) -> dict[str, Any]:
    """``result`` as the SDK's runner would send it in reply to a ``tools/call`` of ``version``.

    The form of a remembered result is shared by every call that sends it: the SDK copies a handler's dict before
    it does anything else with it, and serialises the copy into a new response.
    """
    form = remembered_form(result, version, server_info=server_info)
    return form if form is not None else _serialized(result, version, server_info)


class ForwardedResult(types.CallToolResult):
    """An upstream's ``tools/call`` result as the gateway read it (``forwarded``), which keeps the form it was checked
    in: the surface form of the upstream's protocol version (``serialize_server_result``). Sent on unchanged but for
    its ``_meta``, to a client of that version, it goes as that form (``_serialized``), not dumped and checked again."""

    _surface: tuple[str, dict[str, Any], dict[str, Any]] | None = PrivateAttr(default=None)


def forwarded(raw: Mapping[str, Any], version: str) -> ForwardedResult:
    """An upstream's result (``raw``, of protocol ``version``), checked as the SDK's client checks it (pydantic's
    ``ValidationError`` if it is not a ``tools/call`` result of that version)."""
    form = serialize_server_result("tools/call", version, raw)
    result = ForwardedResult.model_validate(raw, by_name=False)
    result._surface = (version, form, _fields_but_meta(result))
    return result


def _fields_but_meta(result: types.CallToolResult) -> dict[str, Any]:
    return {name: value for name, value in result.__dict__.items() if name != "meta"}


def _surface_form(result: ToolResult, version: str) -> dict[str, Any] | None:
    """The form a forwarded result was checked in, with its ``_meta`` as it is now, when only that changed since and
    ``version`` is the upstream's; else None."""
    surface = result._surface if isinstance(result, ForwardedResult) else None
    if surface is None or surface[0] != version:
        return None
    fields = surface[2]
    if fields.keys() != result.__dict__.keys() - {"meta"} or any(
        result.__dict__[name] is not value for name, value in fields.items()
    ):
        return None
    form = dict(surface[1])
    form.setdefault("isError", False)  # as the model dumps its default
    form.pop("_meta", None)
    if result.meta:
        form["_meta"] = dict(result.meta)
    return form


def _serialized(result: ToolResult, version: str, server_info: Mapping[str, Any]) -> dict[str, Any]:
    # The steps of the SDK's ``ServerRunner._serialize`` for a core result of ``tools/call``, in its order.
    form = _surface_form(result, version)
    if form is None:
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            form = serialize_server_result("tools/call", version, dumped)
        except ValidationError:
            # A bug of ours, not the client's fault; pydantic's message would quote the result, so it stays in the log.
            logger.exception("A tool result does not fit the %s schema", version)
            raise MCPError(INTERNAL_ERROR, "Handler returned an invalid result") from None
    if version in MODERN_PROTOCOL_VERSIONS:
        if form.get("resultType") is None:
            form["resultType"] = "complete"
        # The SDK stamps over an absent or null ``serverInfo`` only: a result's own (an upstream's) is kept.
        meta = form.get("_meta")
        if meta is None:
            form["_meta"] = {_SERVER_INFO: server_info}
        elif isinstance(meta, dict) and meta.get(_SERVER_INFO) is None:
            form["_meta"] = {**meta, _SERVER_INFO: server_info}
    return form
