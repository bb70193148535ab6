"""What the gateway's admin needs of the live side (``errcatalog.gateway.live``): handed over by the MCP server when the
app starts, and where nobody handed it over, an error that says so rather than an empty answer."""

from __future__ import annotations

from types import MappingProxyType

import anyio
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from errcatalog.gateway import live
from errcatalog.gateway.selectors import UpstreamConfig
from mcpserver.registry import served_tool_names


def _config(url: str) -> UpstreamConfig:
    return UpstreamConfig(
        name="web", prefix="web", transport="http", url=url, headers=MappingProxyType({}), command="", args=(),
        cwd="", env=MappingProxyType({}), timeout_seconds=2.0, max_concurrency=8, tools=None,
    )  # fmt: skip


def test_our_own_tools_are_the_ones_the_mcp_server_serves():
    assert live.own_tool_names() == served_tool_names()


def test_an_upstream_is_probed_as_the_gateway_connects_and_its_failure_told_in_fixed_words():
    result = anyio.run(live.probe_upstream, _config("http://127.0.0.1:9/mcp"), settings.GATEWAY)
    assert not result.ok
    assert result.failure
    assert result.tools == ()


def test_without_the_mcp_server_naming_our_tools_is_a_configuration_error(monkeypatch):
    monkeypatch.setattr(live, "_own_tool_names", [])
    with pytest.raises(ImproperlyConfigured, match="mcpserver"):
        live.own_tool_names()


def test_without_the_mcp_server_an_upstream_cannot_be_probed(monkeypatch):
    monkeypatch.setattr(live, "_probers", [])
    with pytest.raises(ImproperlyConfigured, match="INSTALLED_APPS"):
        anyio.run(live.probe_upstream, _config("http://127.0.0.1:9/mcp"), settings.GATEWAY)
