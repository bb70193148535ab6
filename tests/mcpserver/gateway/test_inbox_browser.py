"""The inbox of unclassified upstream failures, end to end in a real browser: a real SDK server behind the gateway
fails in words no rule knows; the failure shows in admin's inbox; staff make a rule from its group in Chromium; the
next failure of that kind renders the chosen code, and the upstream's words never reach the model.

The served app is production's (``uvicorn``, the embedded SQLite default), the upstream ``upstream_server.py`` over
Streamable HTTP, the client the SDK's.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator

import mcp_types as types
import pytest
from playwright.sync_api import sync_playwright

from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER, UpstreamProcess
from tests.support.mcp import McpTarget
from tests.support.served_app import ServedApp, embedded_environment, manage, new_token
from tests.support.waiting import wait_until

CHROMIUM = os.environ.get("ERRCATALOG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ADMIN_PASSWORD = "pw-inbox-admin-1"  # a test account


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[ServedApp, str, str]]:
    folder = tmp_path_factory.mktemp("inbox")
    upstream = UpstreamProcess(UPSTREAM_SERVER, "http", log=folder / "upstream.log").start()
    env = embedded_environment(folder / "data", ERRCATALOG_MCP_TOOLSETS="catalog", ERRCATALOG_MCP_RATE_LIMIT="1000000")
    servers = folder / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": upstream.url}}}))
    manage(env, "catalog_import", str(servers))
    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser('inbox-admin', 'inbox@example.com', {ADMIN_PASSWORD!r})",
    )
    key = new_token(env, "inbox")
    metrics_key = new_token(env, "inbox-metrics", metrics=True)
    app = ServedApp(env, folder).start()
    yield app, key, metrics_key
    app.stop()
    upstream.kill()


def _fail(app: ServedApp, key: str, text: str) -> types.CallToolResult:
    """The answer to a call of the upstream's failing tool, once the gateway has connected to it."""
    answers: list[types.CallToolResult] = []

    async def call() -> types.CallToolResult:
        async with McpTarget(app.mcp_url, key).client() as client:
            return await client.call_tool("web__fail_with", {"text": text})

    def answered() -> bool:
        answers.append(asyncio.run(call()))
        return answers[-1].structured_content.get("code") != "FUNCTION_NOT_FOUND"

    wait_until(answered, seconds=60, what="the upstream's tool")
    return answers[-1]


def test_a_rule_made_from_an_inbox_group_renders_its_code_for_the_next_failure(served):
    app, key, metrics_key = served
    first = _fail(app, key, "Quota of 500 requests used up for project 'alpha'")
    assert first.structured_content["code"] == "UPSTREAM_TOOL_FAILED"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(f"{app.base_url}/admin/login/?next=/admin/errcatalog/upstreamfailuregroup/")
        page.fill("#id_username", "inbox-admin")
        page.fill("#id_password", ADMIN_PASSWORD)
        page.click("input[type=submit]")

        # The serving process writes its inbox within a second or so.
        def listed() -> bool:
            page.goto(f"{app.base_url}/admin/errcatalog/upstreamfailuregroup/")
            return page.locator("#result_list tbody tr").count() == 1

        wait_until(listed, seconds=30, what="the group in the inbox")
        row = page.locator("#result_list tbody tr").first
        assert "Quota of <n> requests used up for project <value>" in row.inner_text()
        row.locator("th a").click()
        page.wait_for_url("**/change/")  # the click starts a navigation: the group's page, once it has loaded
        page.wait_for_load_state()
        assert "Quota of 500 requests used up for project 'alpha'" in page.inner_text("body")  # the sample, for staff
        page.click("#make-rule")

        page.select_option("#id_code", "RATE_LIMIT")
        page.click("#preview-rule")
        assert page.inner_text("#preview-table .code-with-rule") == "RATE_LIMIT"
        assert "saving it empties this group" in page.inner_text("#preview-summary")
        page.click("#save-rule")
        assert "the group is gone" in page.inner_text(".messagelist")
        assert page.locator("#result_list tbody tr").count() == 0
        browser.close()

    # The serving process picks the new rule up with the catalog's next revision.
    answers: list[types.CallToolResult] = []

    def classified() -> bool:
        answers.append(_fail(app, key, "Quota of 900 requests used up for project 'beta'"))
        return answers[-1].structured_content["code"] == "RATE_LIMIT"

    wait_until(classified, seconds=30, what="the rule served")
    # The catalog's rate-limit text, then the upstream's words quoted after it, marked as the upstream's.
    said = "Quota of 900 requests used up for project 'beta'"
    assert answers[-1].content[0].text.endswith(f'\n\nThe web server said: "{said}"')
    assert answers[-1].content[0].text.count("Quota") == 1

    # Counted for Prometheus: one failure fell to the fallback, at least one was classified by the new rule.
    exposition = app.get("/metrics", key=metrics_key).text
    assert 'errcatalog_upstream_failures_total{classified="false",upstream="web"} 1.0' in exposition
    assert 'errcatalog_upstream_failures_total{classified="true",upstream="web"}' in exposition
