"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a live server.

A staff user signs in through the admin login form; the page's KPI tiles, Chart.js charts and sortable tables
must show the numbers of the ``Rollup`` rows written here, with no JavaScript console error. An anonymous browser
is sent to the login page. The metrics are the real ``compute_metrics`` over the database.

Playwright's sync API runs an event loop in the test's thread, where Django refuses ORM calls, so every fixture
that touches the database is set up before the browser starts and torn down after it stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from errcatalog.catalog import services
from errcatalog.catalog.models import ErrorCode
from errcatalog.web.dashboard import format_rate, format_seconds
from tests.errcatalog.web.test_dashboard import build_outcomes, expected_totals

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
RATE_KEYS = ("error_rate", "retry_success_rate", "first_retry_success_rate", "interactive_error_rate")


@pytest.fixture
def outcomes(staff_user) -> dict[str, Any]:
    """The test data and the numbers the page must show, computed before the browser's event loop exists."""
    buckets = build_outcomes()
    return {
        **buckets,
        "totals": expected_totals(),
        "recent_totals": expected_totals(bucket=buckets["recent"]),
        "older_totals": expected_totals(bucket=buckets["older"]),
        "code_totals": {code: expected_totals(code=code) for code in ("MISSING_PARAMETER", "NOT_FOUND")},
        "tool_totals": {tool: expected_totals(tool=tool) for tool in ("send_email", "store_document")},
        "variant_totals": {
            f"MISSING_PARAMETER/{name}": expected_totals(code="MISSING_PARAMETER", variant=name)
            for name in ("plain", "friendly")
        },
    }


@pytest.fixture
def browser(outcomes, live_server) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def collect_errors(page: Page) -> list[str]:
    """Console errors and uncaught exceptions of the page (a missing static file shows up as a console error)."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        # The browser asks for /favicon.ico by itself; the project serves none, and that is not the page's error.
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            errors.append(f"{message.text} ({message.location.get('url')})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def sign_in(page: Page, base_url: str) -> None:
    page.goto(f"{base_url}/admin/login/?next=/dashboard/")
    page.fill("#id_username", "writer")
    page.fill("#id_password", "pw-writer")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}/dashboard/")
    assert page.locator(".ed-kpi-value").count() > 0, page.inner_text("body")[:300]
    page.wait_for_function("() => window.Chart && Chart.getChart(document.getElementById('ed-chart-rates'))")


def chart(page: Page, canvas_id: str) -> dict[str, Any]:
    """The labels and datasets of the Chart.js instance drawn on a canvas, as the browser holds them."""
    return page.evaluate(
        """(id) => {
            const chart = Chart.getChart(document.getElementById(id));
            return {labels: chart.data.labels,
                    datasets: chart.data.datasets.map((d) => ({label: d.label, data: d.data}))};
        }""",
        canvas_id,
    )


def cell_text(page: Page, table_id: str, key: str, column: str) -> str:
    """The text of a breakdown table's cell: the row of ``key``, the column headed ``data-column=column``."""
    return page.evaluate(
        """([tableId, key, column]) => {
            const table = document.getElementById(tableId);
            const headers = [...table.querySelectorAll("thead th")];
            const index = headers.findIndex((th) => th.dataset.column === column);
            const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.dataset.key === key);
            return row.children[index].textContent.trim();
        }""",
        [table_id, key, column],
    )


def row_keys(page: Page, table_id: str) -> list[str]:
    return page.eval_on_selector_all(f"#{table_id} tbody tr", "(rows) => rows.map((r) => r.dataset.key)")


def test_staff_dashboard_shows_the_database_numbers(browser, live_server, outcomes):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = collect_errors(page)
    sign_in(page, live_server.url)
    totals = outcomes["totals"]

    # KPI tiles: the numbers of the Rollup rows, by the documented definitions.
    assert page.inner_text("[data-kpi=calls] .ed-kpi-value") == f"{totals['calls']:,}"
    for key in RATE_KEYS:
        assert page.inner_text(f"[data-kpi={key}] .ed-kpi-value") == format_rate(totals[key]), key
    assert page.inner_text("[data-kpi=latency] .ed-kpi-value") == totals["latency_text"]
    # The question protocol's user resolution time: p50 / p90 from the rollups' resolution histograms, overall and
    # per code, tool and variant, as the database's rows give them.
    assert page.inner_text("[data-kpi=resolution] .ed-kpi-value") == totals["resolution_text"] != "— / —"
    for dimension in ("code", "tool", "variant"):
        for key, expected in outcomes[f"{dimension}_totals"].items():
            for column in ("resolution_p50_seconds", "resolution_p90_seconds"):
                shown = cell_text(page, f"ed-breakdown-{dimension}", key, column)
                assert shown == format_seconds(expected[column]), (dimension, key, column)
    assert (
        outcomes["variant_totals"]["MISSING_PARAMETER/plain"]["resolution_p50_seconds"]
        != (outcomes["variant_totals"]["MISSING_PARAMETER/friendly"]["resolution_p50_seconds"])
    )  # the fixture tells the variants apart
    assert "ed-tile-bad" in page.get_attribute("[data-kpi=retry_success_rate]", "class")
    assert page.inner_text("[data-kpi=retry_success_rate] .ed-tile-target") == "target > 60 %"

    # Charts: one point per bucket, the database's counts and rates in the right buckets, flat target lines.
    volume = chart(page, "ed-chart-volume")
    data = page.evaluate("() => JSON.parse(document.getElementById('ed-chart-data').textContent)")
    buckets = data["buckets"]
    assert len(volume["labels"]) == len(buckets) == 24 * 3600 // data["bucket_seconds"]
    calls, errors_series = (dataset["data"] for dataset in volume["datasets"])
    for name in ("recent", "older"):
        index = buckets.index(outcomes[name].isoformat())
        assert calls[index] == outcomes[f"{name}_totals"]["calls"]
        assert errors_series[index] == outcomes[f"{name}_totals"]["errors"]
    assert sum(calls) == totals["calls"] and sum(errors_series) == totals["errors"]
    rates = {dataset["label"]: dataset["data"] for dataset in chart(page, "ed-chart-rates")["datasets"]}
    recent = buckets.index(outcomes["recent"].isoformat())
    # The recent bucket's 7 of 9 retried episodes are too few for a point (a gap, the counts in the tooltip); its
    # 58 calls are enough for the error rate's.
    assert rates["Retry success"][recent] is None
    assert data["counts"]["retry_success_rate"][recent] == [7, 9]
    expected_recent = outcomes["recent_totals"]["error_rate"] * 100
    assert rates["Error rate"][recent] == pytest.approx(expected_recent, abs=0.01)
    assert set(rates["Retry success target"]) == {60} and set(rates["Interactive target"]) == {80}
    assert sum(value is None for value in rates["Error rate"]) == len(buckets) - 2  # gaps, not zeros

    # Sorting: by error rate, highest first; NOT_FOUND's 5 calls are too few for a rate and sort last either way.
    assert row_keys(page, "ed-breakdown-code") == ["", "MISSING_PARAMETER", "NOT_FOUND"]
    page.click("#ed-breakdown-code th[data-column=error_rate] button")
    assert row_keys(page, "ed-breakdown-code") == ["MISSING_PARAMETER", "", "NOT_FOUND"]
    assert page.get_attribute("#ed-breakdown-code th[data-column=error_rate]", "aria-sort") == "descending"
    page.click("#ed-breakdown-code th[data-column=error_rate] button")
    assert row_keys(page, "ed-breakdown-code") == ["", "MISSING_PARAMETER", "NOT_FOUND"]
    # Calls 65, 18 and 5 sort as numbers (as text, "5" would come before "18").
    page.click("#ed-breakdown-code th[data-column=calls] button")
    assert row_keys(page, "ed-breakdown-code") == ["", "MISSING_PARAMETER", "NOT_FOUND"]
    assert page.get_attribute("#ed-breakdown-code th[data-column=error_rate]", "aria-sort") is None

    # A narrow screen: the page itself does not scroll sideways (wide tables scroll inside their box).
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(100)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert errors == []


def test_anonymous_browser_is_sent_to_the_login_page(browser, live_server):
    context = browser.new_context()
    page = context.new_page()
    errors = collect_errors(page)
    response = page.goto(f"{live_server.url}/dashboard/")
    assert response is not None and response.ok  # the login page, after the redirect
    assert page.url == f"{live_server.url}/admin/login/?next=/dashboard/"
    assert page.locator("#id_username").count() == 1
    assert page.locator(".ed-kpi-value").count() == 0
    assert errors == []
    context.close()


@pytest.fixture
def adaptive(staff_user) -> None:
    """An adaptive code whose allocator moved its shares from even to 70/30 (a change with history)."""
    call_command("catalog_load_defaults", verbosity=0)
    code = ErrorCode.objects.get(code="TIMEOUT")
    services.error_code_update(error_code=code, allocation="adaptive")
    services.template_variant_create(error_code=code, name="terse", message="Too slow.", instruction="Narrow it.")
    for variant, weight in (("default", 175), ("terse", 75)):
        row = code.variants.get(name=variant, locale="")
        services.template_variant_update(variant=row, weight=weight, change_reason="adaptive: test")


def test_adaptive_allocation_draws_each_codes_shares_over_time(adaptive, browser, live_server):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = collect_errors(page)
    sign_in(page, live_server.url)
    canvas = "canvas[data-allocation-chart='TIMEOUT:']"
    page.wait_for_function(f'() => Chart.getChart(document.querySelector("{canvas}"))')
    drawn = page.evaluate(
        f"""() => {{
            const chart = Chart.getChart(document.querySelector("{canvas}"));
            return Object.fromEntries(chart.data.datasets.map((d) => [d.label, d.data]));
        }}"""
    )
    assert drawn["default"][-1] == 70.0 and drawn["terse"][-1] == 30.0
    assert page.inner_text("[data-allocation='TIMEOUT:'] tr[data-variant=terse] .ed-share") == "30.0 %"
    assert errors == []
