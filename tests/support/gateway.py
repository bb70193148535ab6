"""Production's served app in front of an upstream, as the gateway's test modules set it up."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from tests.mcpserver.gateway.upstreams import (
    UpstreamProcess,
    gateway_environment,
)
from tests.support.mcp import McpTarget
from tests.support.served_app import ServedApp, manage, new_token
from tests.support.waiting import wait_until


@contextlib.contextmanager
def gateway_before(
    folder: Path, name: str, script: str, tools: set[str], *, shell: str | None = None
) -> Iterator[tuple[McpTarget, dict[str, str], UpstreamProcess]]:
    """Production's served app in front of one upstream script over Streamable HTTP (``python SCRIPT http PORT``),
    imported as ``name`` the way an operator imports it; ``shell`` runs in ``manage.py shell`` before the app starts
    (an upstream's limits, say). Yields a target with a token of ``agent-owner``, the app's environment and the
    upstream's process, once the app lists ``tools``."""
    upstream = UpstreamProcess(script, "http", log=folder / "upstream.log").start()
    env = gateway_environment(folder / "data")
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps({"mcpServers": {name: {"type": "http", "url": upstream.url}}}))
    manage(env, "catalog_import", str(servers_file))
    if shell is not None:
        manage(env, "shell", "-c", shell)
    key = new_token(env, name)
    app = ServedApp(env, folder).start()
    try:
        target = McpTarget(app.mcp_url, key)
        wait_until(lambda: tools <= target.tool_names(), seconds=90, what="the upstream's tools")
        yield target, env, upstream
    finally:
        app.stop()
        upstream.kill()


# The named servers (``NamedServer``), as staff would compose them: (description, our tools, {upstream: its tools}).
NAMED_SERVERS = {
    # Both upstreams serve the same tools (one server over HTTP and over stdio): at a named server they keep /mcp's
    # prefixed names, or two would be called "echo".
    "support": ("For the support team's agent: explains error codes and reaches the note service.",
                ["explain_error"], {"web": [], "local": ["echo"]}),
    "notes": ("", [], {"web": ["echo"]}),
    "live": ("", [], {"web": ["echo"]}),  # changed by a test
    "paused": ("Switched off.", ["explain_error"], {"web": []}),
}  # fmt: skip
