"""``ERRCATALOG_EXTRA_APPS``: an app of your own, and the tools in its ``mcp_tools``, without editing the settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_modules
from tests.config.test_settings import ROOT

SERVED = "import json; from mcpserver.registry import served_tool_names; print(json.dumps(sorted(served_tool_names())))"


def _served_tools(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ERRCATALOG_")} | env
    done = subprocess.run(  # noqa: S603 (our own manage.py and a fixed script)
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", SERVED],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_extra_apps_tools_are_served_when_their_toolset_is():
    assert "greet" in _served_tools(ERRCATALOG_EXTRA_APPS="tests.extra_app", ERRCATALOG_MCP_TOOLSETS="catalog,extra")
    # Installed but its toolset not listed: not served.
    assert "greet" not in _served_tools(ERRCATALOG_EXTRA_APPS="tests.extra_app", ERRCATALOG_MCP_TOOLSETS="catalog")
    # Not installed: its module is never imported, whatever the toolsets say.
    assert "greet" not in _served_tools(ERRCATALOG_MCP_TOOLSETS="catalog,extra")


@pytest.mark.parametrize("raw", ["tests/extra_app", "my app", "1app", "app..x", "app.", "app;rm"])
def test_a_value_that_is_no_module_path_is_refused_with_the_variables_name(monkeypatch, raw):
    monkeypatch.setenv("ERRCATALOG_EXTRA_APPS", raw)
    with pytest.raises(ImproperlyConfigured, match="ERRCATALOG_EXTRA_APPS takes dotted module paths"):
        env_modules("ERRCATALOG_EXTRA_APPS")
