"""The dashboard on small and large numbers in a real headless Chromium, on a phone (390 px) and a laptop (1,366 px).

One, three and a hundred calls in the last hour's latest minute, two thirds of them errors, and as many episodes
with two thirds recovered: a rate is shown with its counts, and below ``MIN_RATE_COUNT`` as its counts alone, in
the tiles, the tables and the chart (no point drawn, the counts in the tooltip). Measured in the browser: no key
figure breaks inside itself, nothing sticks out of its tile, and the header's texts do not overlap.

Playwright's sync API runs an event loop in the test's thread, where Django refuses ORM calls: data are written by
fixtures before the browser starts.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, Page, sync_playwright

from errcatalog.outcomes import rollups
from errcatalog.outcomes.models import OutcomeRecord
from errcatalog.web.dashboard import MIN_RATE_COUNT
from tests.errcatalog.web.test_dashboard import episodes
from tests.errcatalog.web.test_dashboard_browser import CHROMIUM, CHROMIUM_ARGS, collect_errors, sign_in

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}
CELL = {"tool": "send_email", "code": "MISSING_PARAMETER", "client": "claude"}


@pytest.fixture(params=[1, 3, 100], ids=lambda n: f"{n}-calls")
def calls(request, staff_user) -> dict[str, Any]:
    """``n`` calls in the latest minute, errors = round(2n/3) (at least one), and ``n`` retried, ended episodes of
    which the same share recovered (split over two variants at a hundred)."""
    n = request.param
    errors = max(1, round(2 * n / 3))
    at = (timezone.now() - timedelta(minutes=1)).replace(second=0, microsecond=0)
    # Half a second apart, so that even a hundred calls stay in one minute bucket.
    OutcomeRecord.objects.bulk_create(
        OutcomeRecord(
            id=uuid.uuid4(),
            occurred_at=at + timedelta(seconds=index / 2),
            session=f"s-{index}",
            latency_ms=10.0,
            **(
                {"outcome": "error", "interactive": True, "variant": "plain", **CELL}
                if index < errors
                else {"outcome": "ok", "tool": "send_email", "client": "claude"}
            ),
        )
        for index in range(n)
    )
    endings = [("recovered", 1, 1, "")] * errors + [("exhausted", 3, None, "")] * (n - errors)
    half = len(endings) // 2 if n >= MIN_RATE_COUNT else len(endings)
    episodes(at, endings[::2][:half] if n >= MIN_RATE_COUNT else endings, variant="plain", **CELL)
    if n >= MIN_RATE_COUNT:
        episodes(at, endings[1::2], variant="friendly", **CELL)
    rollups.recompute_bucket(rollups.bucket_start(at))
    return {"n": n, "errors": errors, "minute": at}


@pytest.fixture
def browser(calls, live_server) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def figures_broken_or_overflowing(page: Page) -> list[str]:
    """Every figure drawn on more than one line, and every tile figure reaching past its tile's content box."""
    return page.evaluate(
        """() => {
            const found = [];
            const figures = document.querySelectorAll(
                ".ed-kpi-value:not(.ed-kpi-parts), .ed-figure, .ed-kpi-count, .ed-tile .ed-badge");
            figures.forEach((node) => {
                const lines = new Set([...node.getClientRects()].map((r) => Math.round(r.top)));
                if (lines.size > 1) {
                    found.push("broken: " + node.textContent);
                }
                const tile = node.closest(".ed-tile");
                if (tile) {
                    const box = tile.getBoundingClientRect();
                    const style = getComputedStyle(tile);
                    const right = box.right - parseFloat(style.paddingRight) + 0.5;
                    if (node.getBoundingClientRect().right > right) {
                        found.push("overflows its tile: " + node.textContent);
                    }
                }
            });
            return found;
        }"""
    )


def overlapping_header_texts(page: Page) -> list[str]:
    """Pairs of the header's texts (site name, user links, breadcrumbs, title, caption, live bar) whose boxes meet."""
    return page.evaluate(
        """() => {
            const selectors = ["#site-name", "#user-tools", "div.breadcrumbs", "#content h1", "#ed-caption",
                               "#ed-updated", "#ed-refresh-state", "#ed-refresh-toggle"];
            const boxes = [];
            selectors.forEach((selector) => {
                const node = document.querySelector(selector);
                if (!node || node.hidden || !node.textContent.trim()) {
                    return;
                }
                for (const rect of node.getClientRects()) {
                    if (rect.width > 0 && rect.height > 0) {
                        boxes.push([selector, rect]);
                    }
                }
            });
            const found = [];
            for (let i = 0; i < boxes.length; i++) {
                for (let j = i + 1; j < boxes.length; j++) {
                    const [a, ra] = boxes[i];
                    const [b, rb] = boxes[j];
                    const meet = ra.left < rb.right - 0.5 && rb.left < ra.right - 0.5 &&
                                 ra.top < rb.bottom - 0.5 && rb.top < ra.bottom - 0.5;
                    if (a !== b && meet) {
                        found.push(a + " / " + b);
                    }
                }
            }
            return found;
        }"""
    )


def tooltip_at(page: Page, index: int) -> dict[str, list[str]]:
    """The rates chart's tooltip when the pointer rests over bucket ``index`` (on its target line)."""
    page.locator("#ed-chart-rates").scroll_into_view_if_needed()
    x, y = page.evaluate(
        """(index) => {
            const canvas = document.getElementById("ed-chart-rates");
            const chart = Chart.getChart(canvas);
            const target = chart.data.datasets.findIndex((d) => d.label === "Retry success target");
            const point = chart.getDatasetMeta(target).data[index];
            const box = canvas.getBoundingClientRect();
            return [box.left + point.x, box.top + point.y];
        }""",
        index,
    )
    page.mouse.move(x, y)
    page.wait_for_function("() => Chart.getChart(document.getElementById('ed-chart-rates')).tooltip.opacity > 0")
    return page.evaluate(
        """() => {
            const tooltip = Chart.getChart(document.getElementById("ed-chart-rates")).tooltip;
            return {body: tooltip.body.flatMap((b) => b.lines), footer: tooltip.footer};
        }"""
    )


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390px", "1366px"])
def test_small_and_large_numbers_show_counts_and_fit(browser, live_server, calls, viewport, tmp_path):
    page = browser.new_page(viewport=viewport)
    errors = collect_errors(page)
    sign_in(page, live_server.url)
    n, failed = calls["n"], calls["errors"]
    screenshots = Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path)
    page.screenshot(path=screenshots / f"dashboard-{n}-calls-{viewport['width']}.png", full_page=True)

    error_rate = page.inner_text("[data-kpi=error_rate] .ed-tile-value")
    retry_rate = page.inner_text("[data-kpi=retry_success_rate] .ed-tile-value")
    if n < MIN_RATE_COUNT:
        # The counts stand in for the rate, and the tile says why; no verdict against the target.
        assert page.inner_text("[data-kpi=error_rate] .ed-kpi-value") == f"{failed} of {n}"
        assert page.inner_text("[data-kpi=retry_success_rate] .ed-kpi-value") == f"{failed} of {n}"
        assert "too few to rate" in page.inner_text("[data-kpi=retry_success_rate]")
        assert "%" not in error_rate + retry_rate
        assert "target" not in retry_rate
        assert (
            page.locator(
                "[data-kpi=retry_success_rate].ed-tile-bad, [data-kpi=retry_success_rate].ed-tile-good"
            ).count()
            == 0
        )
    else:
        assert error_rate == "67.0 % (67 of 100)"
        assert retry_rate.startswith("67.0 % (67 of 100)")
        # Two variants 34 of 50 and 33 of 50: no difference beyond noise, so no winner.
        assert "No difference beyond noise" in page.inner_text("#ed-variants")
        assert page.locator("#ed-variants .ed-badge").count() == 0
        assert page.locator("#ed-variants .ed-best").count() == 0

    # The tool's row of the breakdown: the rate cell carries its counts.
    cell = page.locator("#ed-breakdown-tool tr[data-key=send_email] td").nth(2)  # calls, errors, error rate
    expected = "67.0 %\n67 of 100" if n >= MIN_RATE_COUNT else f"{failed} of {n}\ntoo few"
    assert cell.inner_text().startswith(expected)

    # The chart draws no rate point below the threshold; the tooltip gives the counts either way.
    data = page.evaluate("() => JSON.parse(document.getElementById('ed-chart-data').textContent)")
    index = data["buckets"].index(calls["minute"].isoformat())
    assert data["rates"]["error_rate"][index] == (67.0 if n >= MIN_RATE_COUNT else None)
    assert [value for value in data["rates"]["error_rate"] if value is not None] == (
        [67.0] if n >= MIN_RATE_COUNT else []
    )
    tooltip = tooltip_at(page, index)
    if n >= MIN_RATE_COUNT:
        assert "Error rate: 67 % (67 of 100)" in tooltip["body"]
    else:
        assert f"Error rate: {failed} of {n}, too few to rate" in tooltip["footer"]

    assert figures_broken_or_overflowing(page) == []
    assert overlapping_header_texts(page) == []
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert errors == []
