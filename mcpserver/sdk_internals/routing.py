"""Which of the SDK's two protocol generations a Streamable HTTP request belongs to, split as the SDK splits it.

The SDK's session manager decides in a private method (``StreamableHTTPSessionManager._handle_request``): a request
whose ``MCP-Protocol-Version`` header names a version other than the ``initialize`` handshake's goes to its modern
(2026-07-28) entry, unknown versions included, so that the modern classifier can refuse them in its own words; a
request without the header, or naming a handshake version, takes the 2025-11-25 paths. ``mcpserver.server`` routes
before the SDK sees a request (to the manager configured for each generation, with admission in front of the
stateful one), so it must split exactly so, or a request would reach a manager the SDK would not have sent it to.
No plain path: this is the SDK's rule, read at ``READ_AGAINST``; the contract test reads it again.
"""

from __future__ import annotations

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

# As the header's raw bytes, which the router reads without decoding.
HANDSHAKE_VERSIONS = frozenset(version.encode() for version in HANDSHAKE_PROTOCOL_VERSIONS)


def is_modern(version: bytes | None) -> bool:
    """Whether a request with this ``MCP-Protocol-Version`` (None: no header) goes to the 2026-07-28 entry."""
    return version is not None and version not in HANDSHAKE_VERSIONS
