"""The call path's copy of the settings (``mcpserver.call_settings``) follows every change Django reports."""

from __future__ import annotations

from django.test import override_settings

from mcpserver.call_settings import call_settings


def test_the_copy_is_the_settings_own_value(settings):
    assert call_settings.MCP is settings.MCP
    assert call_settings.ERRCATALOG is settings.ERRCATALOG


def test_a_replaced_setting_is_read_again(settings):
    assert call_settings.MCP["ELICITATION"] == settings.MCP["ELICITATION"]
    settings.MCP = {**settings.MCP, "ELICITATION": "changed"}
    assert call_settings.MCP["ELICITATION"] == "changed"


def test_an_override_holds_for_its_block_only(settings):
    before = call_settings.ERRCATALOG
    with override_settings(ERRCATALOG={**before, "DEFAULT_FORMAT": "json"}):
        assert call_settings.ERRCATALOG["DEFAULT_FORMAT"] == "json"
    assert call_settings.ERRCATALOG is before
