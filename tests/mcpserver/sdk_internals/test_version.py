"""The installed SDK is the one every reach of ``mcpserver.sdk_internals`` was read against; on another one, the fast
paths are off by themselves."""

from __future__ import annotations

import logging
from importlib.metadata import version

import pytest

from mcpserver import sdk_internals
from mcpserver.sdk_internals import READ_AGAINST, fast_paths


def test_the_installed_sdk_is_the_one_the_reaches_were_read_against():
    installed = {name: version(name) for name in ("mcp", "mcp-types")}
    assert installed == {"mcp": READ_AGAINST, "mcp-types": READ_AGAINST}, (
        f"The MCP SDK is now {installed}; mcpserver.sdk_internals was read against {READ_AGAINST}. Its docstring "
        "lists every reach into the SDK's internals: run tests/mcpserver/sdk_internals/, read each reach against "
        "the new SDK's source (even where its test passes), then set READ_AGAINST to the new version. If a reach "
        "cannot follow yet, its plain path is taken by itself on another version (test below)."
    )


@pytest.fixture
def sdk_version(monkeypatch):
    """Pretend another SDK is installed: ``sdk_version("9.0.0")``."""
    sdk_internals.sdk_is_the_one_read.cache_clear()
    yield lambda number: monkeypatch.setattr(
        sdk_internals.metadata, "version", lambda name: number if name in sdk_internals.SDK_DISTRIBUTIONS else name
    )
    sdk_internals.sdk_is_the_one_read.cache_clear()


def test_on_another_sdk_version_the_fast_paths_are_off_and_the_log_says_so_once(sdk_version, settings, caplog):
    settings.MCP = {**settings.MCP, "SDK_FAST_PATHS": True}
    sdk_version("9.0.0")
    with caplog.at_level(logging.WARNING, logger="mcpserver.sdk_internals"):
        assert fast_paths() is False
        assert fast_paths() is False
    warnings = [r.getMessage() for r in caplog.records if r.name == "mcpserver.sdk_internals"]
    assert len(warnings) == 1
    assert "mcp 9.0.0, mcp-types 9.0.0" in warnings[0] and READ_AGAINST in warnings[0]


def test_on_the_sdk_version_read_the_setting_decides(sdk_version, settings):
    sdk_version(READ_AGAINST)
    settings.MCP = {**settings.MCP, "SDK_FAST_PATHS": True}
    assert fast_paths() is True
    settings.MCP = {**settings.MCP, "SDK_FAST_PATHS": False}
    assert fast_paths() is False
