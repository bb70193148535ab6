"""Ready-to-paste configurations of the MCP clients people connect with: the MCP Inspector, VS Code, Claude Desktop
(through mcp-remote) and the official Python and TypeScript SDKs.

``manage.py bootstrap_mcp_token`` prints them with a new token's key; the home page (``config.landing``) shows them
with a placeholder for it. The Inspector needs a recent Node, so its block says when this machine's Node is older.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

# What stands for a token's key where the key is not shown (it is printed once, when the token is created).
KEY_PLACEHOLDER = "<your token>"
# The Python snippet needs the SDK generation that speaks both protocol versions the endpoint serves.
PYTHON_SDK_REQUIREMENT = "mcp>=2.3"
# The MCP Inspector's current releases need this Node (their package.json: "engines": {"node": ">=22.19.0"}); on
# older Node npx resolves an old Inspector (0.15) that has no --header option and fails with errors that do not
# point at Node, so the printed configs say when this machine's Node is too old.
INSPECTOR_NODE = (22, 19)
# mcp-remote reads ${NAME} in a header from its environment: the key stays out of the argument list (and so out of
# `ps`), and the argument has no space, which Claude Desktop on Windows would split.
MCP_REMOTE_AUTH_VARIABLE = "ERRCATALOG_AUTH"


def node_version() -> tuple[int, int, int] | None:
    """The version of the ``node`` on the PATH (what ``npx`` runs), or None when there is none or it does not say."""
    node = shutil.which("node")
    if node is None:
        return None
    try:
        printed = subprocess.run(  # noqa: S603 (the machine's node, asked its version)
            [node, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)\s*", printed)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def node_notice(version: tuple[int, int, int] | None) -> str:
    """A line that warns when this machine cannot run the printed ``npx`` commands as they are; blank when it can."""
    needed = ".".join(map(str, INSPECTOR_NODE))
    if version is None:
        return (
            f"  ! No Node on this machine's PATH: the Inspector and mcp-remote run with npx, which comes with Node;"
            f" install Node {needed} or later (nodejs.org, or nvm install 22)."
        )
    if version[:2] < INSPECTOR_NODE:
        return (
            f"  ! This machine's Node is {'.'.join(map(str, version))}, older than {needed}: npx would run an old"
            f" Inspector that has no --header and fails with errors that do not mention Node. Install Node {needed}"
            " or later (nodejs.org, or nvm install 22) first; the other clients below do not need it."
        )
    return ""


def python_client(url: str, key: str) -> str:
    """A complete Python script: connect with the official SDK and list the tools (no blank lines, so that it
    prints as one block)."""
    return "\n".join(
        [
            "import asyncio",
            "import httpx2",
            "from mcp.client import Client",
            "from mcp.client.streamable_http import streamable_http_client",
            f"URL = {url!r}",
            f"HEADERS = {{'Authorization': {'Bearer ' + key!r}}}",
            "async def main() -> None:",
            "    async with httpx2.AsyncClient(headers=HEADERS) as http:",
            "        async with Client(streamable_http_client(URL, http_client=http)) as client:",
            "            result = await client.list_tools()",
            "            print([tool.name for tool in result.tools])",
            "asyncio.run(main())",
        ]
    )


def typescript_client(url: str, key: str) -> str:
    """A complete ES module for Node: connect with the official TypeScript SDK and list the tools."""
    return "\n".join(
        [
            'import { Client } from "@modelcontextprotocol/sdk/client/index.js";',
            'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";',
            f"const transport = new StreamableHTTPClientTransport(new URL({json.dumps(url)}), {{",
            f"  requestInit: {{ headers: {{ Authorization: {json.dumps('Bearer ' + key)} }} }},",
            "});",
            'const client = new Client({ name: "my-client", version: "1.0.0" });',
            "await client.connect(transport);",
            "console.log((await client.listTools()).tools.map((tool) => tool.name));",
            "await client.close();",
        ]
    )


def oauth_clients(url: str, public_url: str = "") -> str:
    """How to add the endpoint to the clients that sign in with OAuth (one block, no blank line inside): hosted
    ones at ``public_url`` (the MCP endpoint's public URL) when there is one, the others at ``url``."""
    vscode = json.dumps({"servers": {"errcatalog": {"type": "http", "url": url}}})
    cursor = json.dumps({"mcpServers": {"errcatalog": {"url": url}}})
    if public_url:
        where = [
            f"  Connector URL: {public_url}",
            "  Claude (claude.ai, Claude Desktop): Settings > Connectors > Add custom connector, with the URL above.",
            "  ChatGPT: Settings > Connectors > Create (developer mode), with the URL above and OAuth authentication.",
            "  Both connect from their own cloud to the public URL: ./dev manage public_url_check says what they see.",
        ]
    else:
        where = [
            f"  Connector URL: {url}",
            "  Claude (claude.ai, Claude Desktop): Settings > Connectors > Add custom connector, with the URL above.",
            "  ChatGPT: Settings > Connectors > Create (developer mode), with the URL above and OAuth authentication.",
            "  Both connect from their own cloud: the URL must be public https (set ERRCATALOG_PUBLIC_URL).",
        ]
    return "\n".join(
        [
            "Clients that sign in with OAuth (your errcatalog account; no key to paste):",
            *where,
            f"  Claude Code: claude mcp add --transport http errcatalog {url}  (then /mcp to sign in)",
            f"  VS Code (.vscode/mcp.json): {vscode}  (then Start, and sign in)",
            f"  Cursor (~/.cursor/mcp.json): {cursor}  (then sign in when it asks)",
            f"  mcp-remote: npx -y mcp-remote {url}  (without --header: it opens the sign-in page)",
        ]
    )


def client_configs(
    url: str,
    key: str,
    *,
    node: tuple[int, int, int] | None = (*INSPECTOR_NODE, 0),
    oauth: bool = False,
    public_url: str = "",
) -> str:
    """Ready-to-paste configuration for MCP Inspector, VS Code, Claude Desktop (through mcp-remote) and the Python
    and TypeScript SDKs, with a static key; first, with ``oauth``, how clients that sign in with OAuth connect (the
    hosted ones at ``public_url``, the MCP endpoint's public URL, when there is one).
    Each block is separated from the next by one blank line. ``node`` is the version of the machine's Node
    (``node_version``): when it cannot run the Inspector, its block says so first."""
    vscode = {"servers": {"errcatalog": {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {key}"}}}}
    claude = {
        "mcpServers": {
            "errcatalog": {
                "command": "npx",
                "args": ["-y", "mcp-remote", url, "--header", f"Authorization:${{{MCP_REMOTE_AUTH_VARIABLE}}}"],
                "env": {MCP_REMOTE_AUTH_VARIABLE: f"Bearer {key}"},
            }
        }
    }
    notice = node_notice(node)
    return "\n".join(
        [
            *([oauth_clients(url, public_url), ""] if oauth else []),
            f"MCP Inspector (Node {'.'.join(map(str, INSPECTOR_NODE))} or later; older Node gets an Inspector"
            " without --header):",
            *([notice] if notice else []),
            f"  npx @modelcontextprotocol/inspector --transport http --server-url {url}"
            f' --header "Authorization: Bearer {key}"',
            f"  (or in its web page: Transport: Streamable HTTP, URL: {url},",
            f"  Authentication header: Authorization = Bearer {key})",
            "",
            "VS Code (.vscode/mcp.json):",
            json.dumps(vscode, indent=2),
            "",
            "Claude Desktop (claude_desktop_config.json, through mcp-remote):",
            json.dumps(claude, indent=2),
            f'  or on the command line: npx -y mcp-remote {url} --header "Authorization: Bearer {key}"',
            "",
            f'Python SDK (pip install "{PYTHON_SDK_REQUIREMENT}", save as errcatalog_client.py,'
            " run python errcatalog_client.py):",
            python_client(url, key),
            "",
            "TypeScript SDK (npm install @modelcontextprotocol/sdk, save as errcatalog_client.mjs,"
            " run node errcatalog_client.mjs):",
            typescript_client(url, key),
        ]
    )
