"""The client configurations ``./dev up`` prints work as printed, with the real clients.

``./dev up`` runs as a new user runs it (tests/support/devup.py); each test takes a block of its printed output and uses
it unchanged: the Python SDK script runs as a file; the TypeScript SDK module runs under the machine's Node; Claude
Desktop's mcp-remote entry is started with the printed command, arguments and environment and proxies MCP over stdio;
the MCP Inspector's CLI connects with the printed URL and header (it needs Node 22.19 or later). The npm packages,
pinned, and a Node 22 binary come from the npm registry into ``var/clients/`` once, as ``./dev conformance`` does for
the conformance suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tests.support.devup import REPO_ROOT

CLIENTS_DIR = REPO_ROOT / "var" / "clients"
PACKAGES = {
    "node": "22",  # the Inspector needs Node 22.19 or later; the machine has Node 20
    "@modelcontextprotocol/sdk": "1.32.2",
    "mcp-remote": "0.15.1",
    "@modelcontextprotocol/inspector": "2.12.0",
}
TIMEOUT = 120


def _installed(name: str) -> str | None:
    manifest = CLIENTS_DIR / "node_modules" / name / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def _npm(node: str, *args: str) -> None:
    npm_cli = Path(shutil.which("npm")).resolve()
    command = [node, str(npm_cli), "install", "--prefix", str(CLIENTS_DIR), "--no-audit", "--no-fund", *args]
    subprocess.run(command, check=True, capture_output=True, timeout=600)  # noqa: S603 (npm with pinned packages)


@pytest.fixture(scope="session")
def node_clients() -> Path:
    """``var/clients/node_modules`` with the pinned packages and Node 22 (installed once, reused after)."""
    CLIENTS_DIR.mkdir(parents=True, exist_ok=True)
    manifest = CLIENTS_DIR / "package.json"
    if not manifest.exists():
        manifest.write_text('{"private": true}\n')
    node22 = CLIENTS_DIR / "node_modules" / ".bin" / "node"
    if not node22.exists():
        _npm(shutil.which("node"), "--loglevel=error", "node@22")
    wanted = [f"{name}@{version}" for name, version in PACKAGES.items() if name != "node"]
    if any(_installed(name) != version for name, version in PACKAGES.items() if name != "node"):
        # Under Node 22: npm picks each package's release by the running Node's version.
        _npm(str(node22), "--loglevel=error", *wanted)
    return CLIENTS_DIR / "node_modules"


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(  # noqa: S603 (the printed client commands)
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 0, (command, result.stdout, result.stderr)
    return result


def test_the_python_sdk_script_runs_as_printed(dev_up, tmp_path):
    script = tmp_path / "errcatalog_client.py"
    script.write_text(dev_up.printed_block("Python SDK ("))
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    result = run([sys.executable, script.name], cwd=tmp_path, env=env)
    assert "'send_email'" in result.stdout and "'explain_error'" in result.stdout


def test_the_typescript_sdk_module_runs_as_printed(dev_up, node_clients, tmp_path):
    module = node_clients.parent / "errcatalog_client.mjs"  # next to node_modules, where Node resolves the SDK
    module.write_text(dev_up.printed_block("TypeScript SDK ("))
    result = run([shutil.which("node"), str(module)], cwd=node_clients.parent)
    assert "'send_email'" in result.stdout and "'explain_error'" in result.stdout


def test_claude_desktops_mcp_remote_entry_proxies_tools_list(dev_up, node_clients, tmp_path):
    config, _end = json.JSONDecoder().raw_decode(dev_up.printed_block("Claude Desktop ("))
    entry = config["mcpServers"]["errcatalog"]
    assert entry["command"] == "npx" and entry["args"][:2] == ["-y", "mcp-remote"]
    # `npx -y mcp-remote` runs this package's binary; the installed copy is the same, without a download per run.
    command = [str(node_clients / ".bin" / "mcp-remote"), *entry["args"][2:]]
    env = {**os.environ, **entry["env"], "HOME": str(tmp_path)}  # mcp-remote keeps its state under ~/.mcp-auth
    process = subprocess.Popen(  # noqa: S603 (the printed arguments)
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )

    def send(message: dict) -> None:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()

    def answer(request_id: int) -> dict:
        while line := process.stdout.readline():
            message = json.loads(line)
            if message.get("id") == request_id:
                return message
        raise AssertionError(f"mcp-remote closed its output: {process.stderr.read()}")

    try:
        # As a desktop client does: initialize, wait for the answer, then the rest.
        client = {"name": "claude-desktop-check", "version": "1"}
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client},
            }
        )
        assert answer(1)["result"]["serverInfo"]["name"] == "errcatalog"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        names = [tool["name"] for tool in answer(2)["result"]["tools"]]
        assert "send_email" in names and "explain_error" in names
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert "Error" not in process.stderr.read()


def test_the_inspectors_printed_url_and_header_connect(dev_up, node_clients, tmp_path):
    printed = dev_up.printed_block("MCP Inspector (")
    match = re.search(r'--server-url (\S+) --header "([^"]+)"', printed)
    url, header = match.groups()
    assert re.search(r"Node 22\.19 or later", dev_up.printed())
    assert _installed("@modelcontextprotocol/inspector") == PACKAGES["@modelcontextprotocol/inspector"]
    # The printed command opens the web UI with these options; its CLI mode takes the same URL and header.
    node22 = str(node_clients / ".bin" / "node")
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{node_clients / '.bin'}{os.pathsep}{os.environ['PATH']}"}
    inspector = str(node_clients / ".bin" / "mcp-inspector")
    command = [node22, inspector, "--cli", url, "--transport", "http", "--header", header, "--method", "tools/list"]
    result = run(command, cwd=tmp_path, env=env)
    names = [tool["name"] for tool in json.loads(result.stdout)["tools"]]
    assert "send_email" in names


def test_the_printed_connector_url_leads_an_oauth_client_to_the_sign_in(dev_up):
    block = dev_up.printed_block("Clients that sign in with OAuth")
    url = re.search(r"Connector URL: (\S+)", block).group(1)
    assert f"claude mcp add --transport http errcatalog {url}" in block and f"npx -y mcp-remote {url}" in block
    refused = httpx2.post(url, json={}, headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401
    metadata_url = re.search(r'resource_metadata="([^"]+)"', refused.headers["www-authenticate"]).group(1)
    resource = httpx2.get(metadata_url).json()
    assert resource["resource"] == url
    server = httpx2.get(resource["authorization_servers"][0] + "/.well-known/oauth-authorization-server").json()
    assert server["authorization_endpoint"].endswith("/oauth/authorize/") and server["registration_endpoint"]
