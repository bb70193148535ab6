"""Every place errcatalog relies on the MCP SDK beyond its public API: what it reaches, why, and the plain path.

The SDK (``mcp`` and ``mcp_types``, read at version ``READ_AGAINST``) is used through its public API everywhere
else; an import contract (``pyproject.toml``, "sdk-internals") keeps its private modules out of every other module,
and ``tests/mcpserver/sdk_internals/test_no_reaches_elsewhere.py`` keeps its private attributes out, and its private
modules out of the tests. Each reach below has a contract test in ``tests/mcpserver/sdk_internals/`` that pins what it
relies on and fails, naming the reach, when an SDK upgrade changes it.

``MCP["SDK_FAST_PATHS"]`` (``ERRCATALOG_MCP_SDK_FAST_PATHS``, on by default; ``fast_paths``) is the escape hatch: off,
every reach that has a plain path takes it, so a release can go out with an SDK upgrade that broke a reach. They are
off by themselves, with one warning in the log, where the installed SDK is not the version they were read against:
a reach read against another version may misread this one without any error.

Reaches, each with why and its plain path:

- ``tool_calls.ModernToolCalls`` and ``wire`` (a copy of ``ServerRunner._serialize``): a 2026-07-28 ``tools/call``
  answered by our innermost server middleware, its result dumped, validated and stamped as the runner would, a
  repeated failure's form made once (about an eighth of such a call), and an upstream's result the poster read sent
  on in the form it was checked in (``wire.forwarded``) when only its ``_meta`` changed. Plain path: no such
  middleware; the runner calls ``mcpserver.server.handle_call_tool`` and serialises each result itself.
- ``otel.spans_only_when``: the SDK's per-message span middleware, imported from the private ``mcp.server._otel`` to
  be found in ``Server.middleware`` and put behind a check (untraced, it still builds a span per message, a cost
  every call would pay). Plain path: the middleware stays as the SDK installs it. For the tests that install a tracer
  provider and take it away, ``otel.forget_tracer_provider`` makes the SDK's module tracer (``mcp.shared._otel``)
  resolve again.
- ``poster``: a 2026-07-28 call to an HTTP upstream posted with aiohttp beside the SDK client's own session, stamped
  by the session's private ``_stamp`` exactly as the SDK stamps it (``bench/gateway_bench.py`` measures the call).
  Plain path: ``Client.call_tool``.
- ``sessions.session_connection``: the ``Connection`` behind a 2025-11-25 ``ServerSession`` (its private
  ``_connection``), whose exit stack tells ``mcpserver.changes`` when the session ends. Plain path: none in the public
  API; 2025-11-25 sessions are then not told of list changes (2026-07-28 listen streams still are).
- ``streams.PerSessionEventStores``: the 2025-11-25 session manager's ``event_store`` made a property that gives each
  session it opens a store of its own (``mcpserver.streams``), since the SDK hands one store to every session and
  names streams by request id alone. Relies on the manager reading the attribute once per session it opens. Plain
  path: no event store; 2025-11-25 streams are not resumable.
- ``routing.is_modern``: which generation a request belongs to, split as the SDK's manager splits it in its private
  ``_handle_request`` (a non-handshake ``MCP-Protocol-Version`` to the 2026-07-28 entry), for ``mcpserver.server``'s
  router, which routes before the SDK sees a request. No plain path: it is the SDK's rule, read again by its test.
- ``messages``: sentences the SDK writes, read in its source: the fixed ones the JSON-RPC screen lets through
  (``mcpserver.jsonrpc_errors``), and those its client makes up for an answer it cannot read (the gateway's
  failures). No path to choose: a sentence the SDK rewords is screened to our fixed text, or classified as the
  upstream's JSON-RPC error, until the table follows it.
"""

from __future__ import annotations

import logging
from functools import cache
from importlib import metadata

from django.conf import settings

logger = logging.getLogger(__name__)

# The SDK version every reach here was read against; ``tests/mcpserver/sdk_internals/test_version.py`` fails on
# another one until each reach has been read again.
READ_AGAINST = "2.3.0"
SDK_DISTRIBUTIONS = ("mcp", "mcp-types")


def installed_sdk() -> dict[str, str]:
    """The installed versions of the SDK's distributions (``"not installed"`` for one that is missing)."""
    versions = {}
    for name in SDK_DISTRIBUTIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@cache
def sdk_is_the_one_read() -> bool:
    """Whether the installed SDK is ``READ_AGAINST``; said once in the log when it is not."""
    installed = installed_sdk()
    if all(version == READ_AGAINST for version in installed.values()):
        return True
    logger.warning(
        "The MCP SDK installed is %s; mcpserver.sdk_internals was read against %s: its fast paths are off, and "
        "each reach takes its plain path until it has been read against this version.",
        ", ".join(f"{name} {version}" for name, version in installed.items()),
        READ_AGAINST,
    )
    return False


def fast_paths() -> bool:
    """Whether the reaches that have a plain path take their own: ``MCP["SDK_FAST_PATHS"]``, on the SDK version
    they were read against only."""
    return bool(settings.MCP["SDK_FAST_PATHS"]) and sdk_is_the_one_read()
