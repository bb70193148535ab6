"""The MCP settings dict: production serves only the catalog toolset, auth is on unless switched off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINT_MCP = "import json, config.settings as s; print(json.dumps({**s.MCP, 'TOOLSETS': sorted(s.MCP['TOOLSETS'])}))"


def mcp_settings(**env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ERRCATALOG_")} | env
    result = subprocess.run(  # noqa: S603 (our own interpreter and a fixed script)
        [sys.executable, "-c", PRINT_MCP], cwd=ROOT, env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


def test_embedded_default_serves_demo_tools_with_auth_on():
    mcp = mcp_settings()
    assert mcp["TOOLSETS"] == ["catalog", "demo"]
    assert mcp["AUTH"] is True
    assert mcp["RATE_LIMIT_PER_MINUTE"] == 120
    assert mcp["MAX_BODY_BYTES"] == 1024 * 1024


def test_production_serves_only_the_catalog_and_derives_the_request_state_key():
    key, other_key = "0123456789abcdef" * 4, "fedcba9876543210" * 4  # strong enough for production
    first = mcp_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=key)
    second = mcp_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=key)
    other = mcp_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=other_key)
    assert first["TOOLSETS"] == ["catalog"]
    # The same in every process of one deployment, different across deployments.
    assert first["REQUEST_STATE_KEY"] == second["REQUEST_STATE_KEY"] != other["REQUEST_STATE_KEY"]


def test_auth_is_off_only_when_explicitly_switched_off():
    assert mcp_settings(ERRCATALOG_MCP_AUTH="0")["AUTH"] is False


def test_allowed_hosts_and_toolsets_come_from_the_environment():
    mcp = mcp_settings(ERRCATALOG_MCP_ALLOWED_HOSTS="mcp.example.com", ERRCATALOG_MCP_TOOLSETS="catalog,billing")
    assert mcp["ALLOWED_HOSTS"] == ["mcp.example.com"]
    assert mcp["TOOLSETS"] == ["billing", "catalog"]
