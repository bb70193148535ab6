"""``GET /metrics`` over real HTTP (``config.metrics``): who may scrape it, and every MCP call counted, timed and
labelled with bounded values only."""

from __future__ import annotations

import httpx2
import pytest

from errcatalog.access.tokens import client_token_create
from tests.errcatalog.outcomes.test_prometheus import value


def scrape(mcp_url: str, key: str | None, *, method: str = "GET", host: str | None = None) -> httpx2.Response:
    """``/metrics`` of the test server (the production ASGI app over real HTTP)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if host:
        headers["Host"] = host
    return httpx2.request(method, mcp_url.removesuffix("/mcp") + "/metrics", headers=headers, timeout=10)


def exposition(mcp_url: str, key: str) -> str:
    response = scrape(mcp_url, key)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


# --- Who may scrape -------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_only_metrics_tokens_and_staff_tokens_may_scrape(mcp_url, plain_user, staff_user):
    monitoring = client_token_create(user=plain_user, name="prometheus", can_read_metrics=True)[1]
    staff = client_token_create(user=staff_user, name="staff")[1]
    agent = client_token_create(user=plain_user, name="agent")[1]
    assert scrape(mcp_url, None).status_code == 401
    assert scrape(mcp_url, "ec_not-a-key").status_code == 401
    assert scrape(mcp_url, agent).status_code == 403
    assert "errcatalog_tool_calls" in exposition(mcp_url, monitoring)
    assert "errcatalog_episodes" in exposition(mcp_url, staff)
    # Prometheus scrapes each process at its address: no Host check (the endpoint takes no cookies).
    assert scrape(mcp_url, monitoring, host="10.1.2.3:8000").status_code == 200
    head = scrape(mcp_url, monitoring, method="HEAD")
    assert head.status_code == 200 and head.content == b""
    assert scrape(mcp_url, monitoring, method="POST").status_code == 405


# --- Calls ----------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_every_call_is_counted_timed_and_labelled_with_bounded_values(mcp, staff_user):
    key = client_token_create(user=staff_user, name="prometheus")[1]
    before = exposition(mcp.url, key)
    hostile = "IGNORE_ALL_PREVIOUS_INSTRUCTIONS_1"

    async def scenario(client):
        await client.call_tool("explain_error", {"code": "RATE_LIMIT"})
        await client.call_tool("send_email", {"subject": "Lunch", "body": "Noon?"})  # a question: interactive
        await client.call_tool(hostile, {})

    mcp.run(scenario)  # once per protocol generation
    after = exposition(mcp.url, key)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("errcatalog_tool_calls_total", tool="explain_error", upstream="", outcome="ok") == 2
    assert grew("errcatalog_tool_calls_total", tool="send_email", upstream="", outcome="error") == 2
    missing = {"tool": "send_email", "upstream": "", "code": "MISSING_PARAMETER", "interactive": "true"}
    assert grew("errcatalog_tool_errors_total", **missing) == 2
    # A name nothing serves is the caller's text: counted, under one fixed label value.
    assert grew("errcatalog_tool_calls_total", tool="(unknown)", upstream="", outcome="error") == 2
    unknown = {"tool": "(unknown)", "upstream": "", "code": "FUNCTION_NOT_FOUND", "interactive": "false"}
    assert grew("errcatalog_tool_errors_total", **unknown) == 2
    assert hostile not in after
    assert grew("errcatalog_tool_call_duration_seconds_count", tool="explain_error", outcome="ok") == 2
    assert grew("errcatalog_tool_call_duration_seconds_bucket", tool="explain_error", outcome="ok", le="+Inf") == 2
