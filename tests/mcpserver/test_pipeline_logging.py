"""System failures without Sentry: the log keeps a traceback, at most once a minute per tool and code."""

from __future__ import annotations

from mcpserver import pipeline


def test_traceback_is_logged_once_a_minute_per_tool_and_code(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(pipeline.time, "monotonic", lambda: now[0])
    assert pipeline._traceback_due("get_weather", "NETWORK_ERROR") is True
    assert pipeline._traceback_due("get_weather", "NETWORK_ERROR") is False
    assert pipeline._traceback_due("get_weather", "SERVER_ERROR") is True  # another code
    assert pipeline._traceback_due("send_email", "NETWORK_ERROR") is True  # another tool
    now[0] += pipeline.TRACEBACK_INTERVAL_SECONDS
    assert pipeline._traceback_due("get_weather", "NETWORK_ERROR") is True
