"""The dashboard of a new installation in a real headless Chromium at 1,366 x 768: its first hour of calls.

Minute buckets for the last hour, a page that refreshes itself without losing its filters, a layout that fits a
laptop screen with realistic long names, clients named by their token everywhere, and a mistyped tool name in
the query that is reported rather than offered. The numbers are the real ``compute_metrics`` over the database.

Playwright's sync API runs an event loop in the test's thread, where Django refuses ORM calls: data are written
by fixtures before the browser starts, and a write while the page is open runs in a thread of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import Browser, Page, sync_playwright

from errcatalog.access.tokens import client_token_create
from errcatalog.outcomes import rollups
from errcatalog.web import dashboard
from tests.errcatalog.web.test_dashboard import call_events, episodes
from tests.errcatalog.web.test_dashboard_browser import CHROMIUM, CHROMIUM_ARGS, chart, collect_errors, sign_in

pytestmark = pytest.mark.django_db(transaction=True)

LAPTOP = {"width": 1366, "height": 768}
# Names as long as real ones get: a gateway upstream's namespaced tool, a descriptive code and variant, a token
# named after the machine and job that uses it.
LONG_TOOL = "github_enterprise__search_repositories_by_topic_language_and_license"
LONG_UPSTREAM = "github-enterprise-cloud-eu-west"
LONG_CODE = "UPSTREAM_RATE_LIMIT_EXCEEDED_FOR_INSTALLATION"
LONG_VARIANT = "friendly-with-retry-after-hint-v2"
LONG_TOKEN = "ci-nightly-regression-agent-on-build-runner-eu-west-3"


def minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


@pytest.fixture
def first_hour(staff_user) -> dict[str, Any]:
    """Calls in three different minutes of the last hour (nothing older): a new installation's first hour.

    The client is a token with a long name; one tool is a long-named upstream tool with errors and episodes.
    """
    token, _key = client_token_create(user=staff_user, name=LONG_TOKEN)
    client = f"token:{token.pk}"
    now = timezone.now()
    minutes = [minute(now - timedelta(minutes=ago)) for ago in (40, 25, 2)]
    counts = [3, 5, 2]
    for at, count in zip(minutes, counts, strict=True):
        call_events(at, count, tool="send_email", client=client)
    cell = {"tool": LONG_TOOL, "upstream": LONG_UPSTREAM, "code": LONG_CODE, "variant": LONG_VARIANT}
    call_events(minutes[1], 4, outcome="error", interactive=2, client=client, **cell)
    episodes(minutes[1], [("recovered", 1, 1, ""), ("exhausted", 3, None, "")], client=client, **cell)
    for start in {rollups.bucket_start(at) for at in minutes}:
        rollups.recompute_bucket(start)
    return {"client": client, "minutes": minutes, "counts": counts, "errors_minute": minutes[1]}


@pytest.fixture
def browser(first_hour, live_server) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def in_thread(write: Callable[[], None]) -> None:
    """Run an ORM write outside the event loop's thread (its own database connection, closed after)."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            write()
        except BaseException as error:  # handed to the test's thread
            failures.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert failures == []


def overflow(page: Page) -> dict[str, Any]:
    """Whatever is wider than its room: the page beyond the window, a table beyond its box."""
    return page.evaluate(
        """() => {
            const wide = {};
            if (document.documentElement.scrollWidth > window.innerWidth) {
                wide.page = [document.documentElement.scrollWidth, window.innerWidth];
            }
            document.querySelectorAll(".ed-table-box").forEach((box) => {
                const table = box.querySelector("table");
                if (table.scrollWidth > box.clientWidth) {
                    wide[table.id || table.querySelector("caption").textContent] = [table.scrollWidth, box.clientWidth];
                }
            });
            return wide;
        }"""
    )


def open_dashboard(browser: Browser, base_url: str, query: str = "") -> tuple[Page, list[str]]:
    page = browser.new_page(viewport=LAPTOP)
    errors = collect_errors(page)
    sign_in(page, base_url)
    if query:
        page.goto(f"{base_url}/dashboard/?{query}")
        page.wait_for_function("() => window.Chart && Chart.getChart(document.getElementById('ed-chart-rates'))")
    return page, errors


def test_the_first_hour_opens_on_minute_buckets(browser, live_server, first_hour):
    page, errors = open_dashboard(browser, live_server.url)  # no window in the query: the page picks it

    assert page.input_value("select[name=window]") == "1h"
    assert "minute buckets" in page.inner_text("#ed-caption")
    data = page.evaluate("() => JSON.parse(document.getElementById('ed-chart-data').textContent)")
    volume = chart(page, "ed-chart-volume")
    assert data["bucket_seconds"] == 60 and len(volume["labels"]) == len(data["buckets"]) == 60
    calls = volume["datasets"][0]["data"]
    errors_series = volume["datasets"][1]["data"]
    for at, count in zip(first_hour["minutes"], first_hour["counts"], strict=True):
        index = data["buckets"].index(at.isoformat())
        expected = count + (4 if at == first_hour["errors_minute"] else 0)
        assert calls[index] == expected, at
        assert volume["labels"][index] == at.strftime("%H:%M")
    assert errors_series[data["buckets"].index(first_hour["errors_minute"].isoformat())] == 4
    assert sum(calls) == 14 and sum(1 for value in calls if value) == 3
    assert page.inner_text("[data-kpi=calls] .ed-kpi-value") == "14"
    assert errors == []


@pytest.mark.parametrize("window", ["1h", "24h", "7d"])
def test_the_page_fits_a_1366_pixel_screen_with_long_names(browser, live_server, window, tmp_path):
    page, errors = open_dashboard(browser, live_server.url, f"window={window}")
    screenshots = Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path)
    page.screenshot(path=screenshots / f"dashboard-{window}.png", full_page=True)

    assert page.locator(f"#ed-breakdown-tool tbody tr[data-key='{LONG_TOOL}']").count() == 1
    assert page.locator(f"#ed-breakdown-variant tbody tr[data-key='{LONG_CODE}/{LONG_VARIANT}']").count() == 1
    assert overflow(page) == {}
    # Filtered by the long client and tool, the caption and the drop-downs still fit.
    page.goto(f"{live_server.url}/dashboard/?window={window}&tool={LONG_TOOL}&upstream={LONG_UPSTREAM}")
    assert page.locator("#ed-caption code").count() == 2
    assert overflow(page) == {}
    assert errors == []


def test_a_client_is_named_by_its_token_everywhere(browser, live_server, first_hour):
    client = first_hour["client"]
    page, errors = open_dashboard(browser, live_server.url, f"window=1h&client={client}")

    assert page.inner_text("#ed-caption code.ed-filter-client") == LONG_TOKEN
    assert client not in page.inner_text("#ed-caption")
    assert page.input_value("select[name=client]") == client
    assert page.eval_on_selector("select[name=client]", "(s) => s.selectedOptions[0].textContent") == LONG_TOKEN
    assert page.inner_text(f"#ed-breakdown-client tr[data-key='{client}'] th") == LONG_TOKEN
    clients = page.eval_on_selector_all("#ed-episodes tbody td:nth-child(4)", "(cs) => cs.map((c) => c.innerText)")
    assert clients == [LONG_TOKEN, LONG_TOKEN]
    assert client not in page.inner_text("#ed-live")
    assert errors == []


def test_an_unknown_tool_in_the_query_is_reported_not_offered(browser, live_server):
    page, errors = open_dashboard(browser, live_server.url, "window=1h&tool=sned_email")

    options = page.eval_on_selector_all("select[name=tool] option", "(o) => o.map((x) => x.value)")
    assert options == ["", LONG_TOOL, "send_email"]
    assert page.input_value("select[name=tool]") == ""
    notice = page.inner_text(".ed-unknown-filters")
    assert "No recorded call has the tool “sned_email”" in notice
    assert "sned_email" not in page.inner_text("#ed-caption")
    assert page.inner_text("[data-kpi=calls] .ed-kpi-value") == "14"  # not filtered on a name nothing has
    # A known tool is applied and offered; changing the filter reloads with it.
    page.select_option("select[name=tool]", "send_email")
    page.wait_for_url("**tool=send_email**")
    assert page.locator(".ed-unknown-filters").count() == 0
    assert page.inner_text("[data-kpi=calls] .ed-kpi-value") == "10"
    assert errors == []


def test_the_page_refreshes_itself_keeping_its_filters(browser, live_server, first_hour, monkeypatch):
    monkeypatch.setattr(dashboard, "REFRESH_SECONDS", 1)
    page, errors = open_dashboard(browser, live_server.url, "window=1h&tool=send_email")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if "/dashboard/" in request.url else None)
    page.evaluate("() => { window.edNotReloaded = true; }")
    assert page.inner_text("[data-kpi=calls] .ed-kpi-value") == "10"
    assert page.inner_text("#ed-refresh-state") == "· refreshes every 1 s"
    first_update = page.inner_text("#ed-updated time")
    # The sorted column survives a refresh.
    page.click("#ed-breakdown-tool th[data-column=calls] button")

    # A new call of the filtered tool and one of another tool: only the first counts, without a reload.
    now = timezone.now()
    in_thread(lambda: call_events(now, 1, tool="send_email", client=first_hour["client"]))
    in_thread(lambda: call_events(now, 1, tool="store_document", client=first_hour["client"]))
    page.wait_for_function("() => document.querySelector('[data-kpi=calls] .ed-kpi-value').textContent === '11'")
    assert page.evaluate("() => window.edNotReloaded") is True
    assert page.url.endswith("/dashboard/?window=1h&tool=send_email")
    assert page.input_value("select[name=tool]") == "send_email"
    assert page.inner_text("#ed-updated time") != first_update
    assert page.get_attribute("#ed-breakdown-tool th[data-column=calls]", "aria-sort") == "descending"
    assert all("tool=send_email" in url and "window=1h" in url for url in requests)
    # The new minute's bar is drawn in the refreshed chart.
    data = page.evaluate("() => JSON.parse(document.getElementById('ed-chart-data').textContent)")
    index = data["buckets"].index(minute(now).isoformat())
    assert chart(page, "ed-chart-volume")["datasets"][0]["data"][index] >= 1

    # Paused, it asks for nothing more; resumed, it refreshes at once.
    page.click("#ed-refresh-toggle")
    assert page.get_attribute("#ed-refresh-toggle", "aria-pressed") == "true"
    assert page.inner_text("#ed-refresh-state") == "· auto-refresh paused"
    page.wait_for_timeout(300)  # a request already under way when the button was pressed ends
    asked = len(requests)
    page.wait_for_timeout(2500)
    assert len(requests) == asked
    with page.expect_request(lambda request: "/dashboard/" in request.url):
        page.click("#ed-refresh-toggle")
    assert page.inner_text("#ed-refresh-toggle") == "Pause auto-refresh"
    assert errors == []


def test_a_hidden_tab_does_not_refresh(browser, live_server, monkeypatch):
    monkeypatch.setattr(dashboard, "REFRESH_SECONDS", 1)
    page, errors = open_dashboard(browser, live_server.url, "window=1h")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if "/dashboard/" in request.url else None)
    page.evaluate(
        """() => {
            Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
            document.dispatchEvent(new Event("visibilitychange"));
        }"""
    )
    page.wait_for_timeout(300)
    asked = len(requests)
    page.wait_for_timeout(2500)
    assert len(requests) == asked
    with page.expect_request(lambda request: "/dashboard/" in request.url):  # shown again: an update at once
        page.evaluate(
            """() => {
                Object.defineProperty(document, "hidden", {configurable: true, get: () => false});
                document.dispatchEvent(new Event("visibilitychange"));
            }"""
        )
    assert errors == []
