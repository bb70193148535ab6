"""``/``: the home page says what runs and how to connect, shows nothing sensitive, and fits a laptop's screen.

The browser test drives Debian's Chromium through Playwright as the first-hour tests do
(tests/errcatalog/test_first_hour_browser.py), signed out, against a live server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import Browser, sync_playwright

from tests.errcatalog.test_first_hour_browser import CHROMIUM, CHROMIUM_ARGS, LAPTOP, Offline

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_home_page_says_what_runs_without_naming_a_host_or_a_secret(client, settings):
    settings.REDIS_URL = "redis://:hunter2@cache.internal/3"
    settings.CELERY_BROKER_URL = "redis://:hunter2@cache.internal/3"
    page = client.get("/").content.decode()
    assert "errcatalog 0." in page  # the release in pyproject.toml
    assert {"sqlite": "SQLite (embedded)", "postgresql": "PostgreSQL"}[connection.vendor] in page
    assert "Redis</th><td>configured" in page
    assert "Celery broker</th><td>Redis" in page
    for sensitive in ("hunter2", "cache.internal", str(connection.settings_dict["NAME"]), settings.SECRET_KEY):
        assert sensitive not in page
    assert 'href="/admin/"' in page and "Log out" not in page  # signed out: no user tools


def test_the_home_page_links_the_documentation_site_when_one_is_set(client, settings):
    assert "./dev docs" in client.get("/").content.decode()
    settings.ERRCATALOG = {**settings.ERRCATALOG, "DOCS_URL": "https://docs.example.org/errcatalog/"}
    assert '<a class="el-link" href="https://docs.example.org/errcatalog/">Documentation</a>' in (
        client.get("/").content.decode()
    )


@pytest.fixture
def browser(live_server) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_the_home_page_renders_its_links_answer_and_it_fits_a_1366_pixel_screen(browser, live_server, tmp_path):
    context = browser.new_context(viewport=LAPTOP)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    offline = Offline(page, live_server.url)
    page.goto(f"{live_server.url}/")
    screenshots = Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path)
    page.screenshot(path=screenshots / "landing.png", full_page=True)

    assert page.inner_text("#el-mcp-url") == f"{live_server.url}/mcp"
    headings = page.eval_on_selector_all(".el-client figcaption span", "(nodes) => nodes.map((n) => n.textContent)")
    assert any(h.startswith("VS Code") for h in headings) and any(h.startswith("MCP Inspector") for h in headings)
    vscode = page.inner_text(f"#el-client-{[h.startswith('VS Code') for h in headings].index(True) + 1}")
    assert json.loads(vscode)["servers"]["errcatalog"] == {
        "type": "http",
        "url": f"{live_server.url}/mcp",
        "headers": {"Authorization": "Bearer <your token>"},
    }
    # A copy button puts its block on the clipboard.
    page.click("button[data-copy='el-client-2']")
    assert page.evaluate("navigator.clipboard.readText()") == page.inner_text("#el-client-2")

    # Every link answers, signed out: a page (2xx) or a redirect to the login page (3xx).
    hrefs = page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.href)")
    assert len([h for h in hrefs if h.startswith(live_server.url)]) >= 6, hrefs
    answers = {href: page.request.get(href, max_redirects=0).status for href in hrefs}
    assert all(200 <= status < 400 for status in answers.values()), answers

    widths = page.evaluate(
        """() => ({
            page: document.documentElement.scrollWidth, window: window.innerWidth,
            wider: [...document.querySelectorAll('#content-main *')]
                .filter((node) => node.getBoundingClientRect().right > window.innerWidth)
                .map((node) => node.tagName + (node.id ? '#' + node.id : '')),
        })"""
    )
    assert widths["page"] <= widths["window"] and widths["wider"] == [], widths
    assert offline.blocked == [] and offline.errors == [] and offline.failed == []
    context.close()
