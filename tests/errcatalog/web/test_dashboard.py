"""The staff dashboard through Django's test client: access, query validation, numbers, escaping and links.

The data are outcome events and episodes written with the ORM and rolled up by the real rollup code. The page's
numbers are checked against sums of the resulting ``Rollup`` rows computed here with the ORM and the definitions of
``errcatalog.outcomes.metrics`` (error_rate = errors/calls, interactive_error_rate = interactive_errors/errors,
retry_success_rate = recovered/(recovered+exhausted+abandoned-abandoned_without_retry)), not by calling the
metrics code again. The browser test reuses ``build_outcomes`` and ``expected_totals``.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from errcatalog.outcomes import rollups
from errcatalog.outcomes.metrics import percentile
from errcatalog.outcomes.models import Episode, OutcomeRecord, Rollup
from errcatalog.outcomes.rollups import (
    HISTOGRAM_SIZE,
    RESOLUTION_BOUNDS_SECONDS,
    RESOLUTION_HISTOGRAM_SIZE,
    bucket_seconds,
    bucket_start,
)
from errcatalog.web.dashboard import MIN_RATE_COUNT, comparison_view, format_ms, format_rate, format_seconds, kpi_tiles
from errcatalog.web.dashboard import chart_data as dashboard_chart_data

pytestmark = pytest.mark.django_db

DASHBOARD = "/dashboard/"
HOSTILE_TOOL = "<img src=x onerror=alert(1)>"
COUNTERS = (
    "calls",
    "errors",
    "interactive_errors",
    "retries",
    "episodes",
    "recovered",
    "first_retry_recovered",
    "exhausted",
    "abandoned",
    "abandoned_without_retry",
)


def call_events(
    at: datetime, count: int, *, outcome: str = "ok", interactive: int = 0, latency_ms: float = 10.0, **cell: str
) -> None:
    """``count`` outcome events at ``at`` in one cell; the first ``interactive`` of them rendered interactively."""
    OutcomeRecord.objects.bulk_create(
        OutcomeRecord(
            id=uuid.uuid4(),
            occurred_at=at + timedelta(seconds=index),
            outcome=outcome,
            interactive=index < interactive,
            latency_ms=latency_ms,
            session=f"s-{index}",
            **cell,
        )
        for index in range(count)
    )


def episodes(at: datetime, endings: list[tuple[str, int, int | None, str]], **cell: str) -> None:
    """Episodes opened at ``at`` in one cell: (ending, retries, recovered_at_attempt, sentry_event_id) each.

    A recovered episode ends 25 s per retry plus 7 s per position after it started, and its resolution time is
    that span, as ingestion stores it; the others end a minute after they started.
    """
    for index, (ending, retries, attempt, event_id) in enumerate(endings):
        started = at + timedelta(seconds=index)
        duration = 25.0 * retries + 7.0 * index if ending == "recovered" else 60.0
        Episode.objects.create(
            session=uuid.uuid4().hex,
            started_at=started,
            last_at=started + timedelta(seconds=min(duration, 30.0)),
            ended_at=None if ending == "open" else started + timedelta(seconds=duration),
            resolution_seconds=duration if ending == "recovered" else None,
            ending=ending,
            retries=retries,
            recovered_at_attempt=attempt,
            sentry_event_id=event_id,
            **cell,
        )


def build_outcomes(now: datetime | None = None) -> dict[str, Any]:
    """Events and episodes in two buckets of the last 24 hours, rolled up by the real rollup code.

    The buckets are one and three steps before the current one, so the data stay inside the 24h window even if
    the clock passes a bucket boundary while the test runs. Returns the two bucket starts.
    """
    step = timedelta(seconds=bucket_seconds())
    current = bucket_start(now or timezone.now())
    recent, older = current - step, current - 3 * step
    at = recent + timedelta(minutes=5)
    plain = {"tool": "send_email", "code": "MISSING_PARAMETER", "variant": "plain", "client": "claude"}
    friendly = {"tool": "send_email", "code": "MISSING_PARAMETER", "variant": "friendly", "client": "cursor"}
    call_events(at, 30, tool="send_email", client="claude", latency_ms=12.0)
    call_events(at, 10, tool="send_email", client="claude", latency_ms=80.0)
    call_events(at, 10, outcome="error", interactive=9, latency_ms=5.0, **plain)
    call_events(at, 8, outcome="error", interactive=5, latency_ms=7.0, **friendly)
    # plain: recovered 3 (2 at the first retry), exhausted 1, abandoned 2 (one never retried), one still open.
    episodes(at, [("recovered", 1, 1, "a" * 32), ("recovered", 1, 1, ""), ("recovered", 2, 2, "")], **plain)
    episodes(at, [("exhausted", 3, None, ""), ("abandoned", 0, None, ""), ("abandoned", 2, None, "")], **plain)
    episodes(at, [("open", 1, None, "")], **plain)
    # friendly: recovered 4 (3 at the first retry), abandoned 1 without a retry.
    episodes(at, [("recovered", 1, 1, "b" * 32), ("recovered", 1, 1, ""), ("recovered", 1, 1, "")], **friendly)
    episodes(at, [("recovered", 2, 2, ""), ("abandoned", 0, None, "")], **friendly)
    at = older + timedelta(minutes=5)
    missing = {"tool": "store_document", "code": "NOT_FOUND", "variant": "", "client": "cursor"}
    call_events(at, 25, tool="store_document", client="cursor", latency_ms=30.0)
    call_events(at, 5, outcome="error", interactive=1, latency_ms=900.0, **missing)
    episodes(at, [("recovered", 1, 1, ""), ("exhausted", 3, None, ""), ("exhausted", 3, None, "")], **missing)
    episodes(at, [("abandoned", 1, None, ""), ("abandoned", 1, None, "")], **missing)
    rollups.recompute_bucket(recent)
    rollups.recompute_bucket(older)
    return {"recent": recent, "older": older}


def expected_totals(**filters: str) -> dict[str, Any]:
    """The window's totals straight from the Rollup rows, by the metrics module's documented definitions."""
    rows = Rollup.objects.filter(**filters)
    sums = {name: value or 0 for name, value in rows.aggregate(**{n: Sum(n) for n in COUNTERS}).items()}
    hist = [0] * HISTOGRAM_SIZE
    for counts in rows.values_list("latency_histogram", flat=True):
        hist = [a + b for a, b in zip(hist, counts, strict=True)]
    resolution = [0] * RESOLUTION_HISTOGRAM_SIZE
    for counts in rows.values_list("resolution_histogram", flat=True):
        resolution = [a + b for a, b in zip(resolution, counts, strict=True)]
    p50 = percentile(resolution, 0.5, bounds=RESOLUTION_BOUNDS_SECONDS)
    p90 = percentile(resolution, 0.9, bounds=RESOLUTION_BOUNDS_SECONDS)
    retried = sums["recovered"] + sums["exhausted"] + sums["abandoned"] - sums["abandoned_without_retry"]
    return {
        **sums,
        "error_rate": sums["errors"] / sums["calls"] if sums["calls"] else None,
        "interactive_error_rate": sums["interactive_errors"] / sums["errors"] if sums["errors"] else None,
        "retry_success_rate": sums["recovered"] / retried if retried else None,
        "first_retry_success_rate": sums["first_retry_recovered"] / retried if retried else None,
        "latency_text": f"{format_ms(percentile(hist, 0.5))} / {format_ms(percentile(hist, 0.95))}",
        "resolution_p50_seconds": p50,
        "resolution_p90_seconds": p90,
        "resolution_text": f"{format_seconds(p50)} / {format_seconds(p90)}",
    }


def tile_text(page: str, key: str) -> str:
    """The figure of a tile, without its counts or target badge ("57.1 %", "16.0 ms / 741 ms", "4 of 4")."""
    match = re.search(rf'data-kpi="{key}".*?<div class="ed-tile-value">(.*?)</div>', page, re.DOTALL)
    assert match, f"no tile {key}"
    value = re.sub(r'<span class="ed-(?:kpi-count|badge)">.*?</span>', "", match.group(1))
    return html.unescape(re.sub(r"<[^>]+>", "", value)).strip()


def tile_count(page: str, key: str) -> str:
    """A tile's counts beside its rate ("(8 of 14)"), or its note of too few in place of a rate."""
    match = re.search(
        rf'data-kpi="{key}".*?(?:<span class="ed-kpi-count">|<div class="ed-tile-few-note">)(.*?)<', page, re.DOTALL
    )
    assert match, f"no counts in tile {key}"
    return html.unescape(match.group(1))


def tile_class(page: str, key: str) -> str:
    match = re.search(rf'<div class="([^"]*)" data-kpi="{key}"', page)
    assert match, f"no tile {key}"
    return match.group(1)


def chart_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script id="ed-chart-data" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert match, "no chart data"
    return json.loads(match.group(1))


def get_page(client, path: str = DASHBOARD + "?window=24h") -> str:
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


# --- Access ----------------------------------------------------------------------------------------------


def test_anonymous_visit_redirects_to_admin_login(client):
    response = client.get(DASHBOARD + "?window=7d")
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:login") + "?next=/dashboard/%3Fwindow%3D7d"


def test_signed_in_user_without_staff_status_is_refused(client, plain_user):
    client.force_login(plain_user)
    response = client.get(DASHBOARD)
    assert response.status_code == 403
    assert b"ed-kpi-value" not in response.content


def test_staff_user_sees_the_dashboard(client, staff_user):
    client.force_login(staff_user)
    page = get_page(client)
    assert "Outcomes dashboard" in page
    assert 'src="/static/errcatalog/vendor/chart.umd.min.js"' in page
    assert "onclick" not in page and "onchange" not in page  # no inline handlers: the script wires everything


def test_unreachable_redis_gets_a_503_page_not_a_500(client, staff_user, settings, tmp_path):
    from errcatalog.dependencies import REDIS
    from tests.support.recorder import throwaway_redis

    client.force_login(staff_user)
    with throwaway_redis(tmp_path) as server:
        settings.REDIS_URL = server.url
        settings.CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": server.url}
        }
        server.kill()
        try:
            response = client.get(DASHBOARD)
        finally:
            REDIS.reset()
    assert response.status_code == 503
    assert "The metrics store is unavailable right now" in response.content.decode()


def test_admin_index_links_to_the_dashboard(client, staff_user):
    client.force_login(staff_user)
    page = client.get(reverse("admin:index")).content.decode()
    assert f'href="{DASHBOARD}" id="errcatalog-dashboard-link"' in page


# --- Query validation --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "window=2h",
        "window=24h%00",
        "tool=%3Cscript%3Ealert(1)%3C/script%3E",
        "code=" + "X" * 65,
        "client=a%20b",
        "variant=a'b",
    ],
)
def test_bad_query_gets_a_400_page_not_a_500(client, staff_user, query):
    client.force_login(staff_user)
    response = client.get(f"{DASHBOARD}?{query}")
    assert response.status_code == 400
    assert b"<script>alert" not in response.content
    assert b"errornote" in response.content


@pytest.mark.parametrize("window", ["1h", "24h", "7d", "30d"])
def test_every_window_renders(client, staff_user, window):
    build_outcomes()
    client.force_login(staff_user)
    data = chart_data(get_page(client, f"{DASHBOARD}?window={window}"))
    seconds = {"1h": 3600, "24h": 86_400, "7d": 7 * 86_400, "30d": 30 * 86_400}[window]
    assert len(data["labels"]) == len(data["calls"]) == seconds // data["bucket_seconds"]


# --- Numbers -----------------------------------------------------------------------------------------------


def test_tiles_show_the_rollup_numbers(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client)
    totals = expected_totals()
    assert totals["calls"] == 88 and totals["errors"] == 23  # the fixture is what this test thinks it is
    assert tile_text(page, "calls") == f"{totals['calls']:,}"
    for key in ("error_rate", "retry_success_rate", "first_retry_success_rate", "interactive_error_rate"):
        assert tile_text(page, key) == format_rate(totals[key]), key
    assert tile_text(page, "latency") == totals["latency_text"]
    assert tile_text(page, "resolution") == totals["resolution_text"] != "— / —"
    # recovered 8 of 14 retried episodes: 57.1 %, under the 60 % target; interactive 15 of 23: 65.2 % < 80 %.
    assert tile_text(page, "retry_success_rate") == "57.1 %"
    assert tile_count(page, "retry_success_rate") == "(8 of 14)"
    assert tile_count(page, "error_rate") == "(23 of 88)"
    assert tile_count(page, "interactive_error_rate") == "(15 of 23)"
    assert "ed-tile-bad" in tile_class(page, "retry_success_rate")
    assert "ed-tile-bad" in tile_class(page, "interactive_error_rate")
    assert "target &gt; 60 %" in page and "target &gt; 80 %" in page
    endings = dict(re.findall(r'data-ending="(\w+)"><span>\w+</span> <b data-count="(\d+)"', page))
    assert endings == {"recovered": "8", "exhausted": "3", "abandoned": "5", "open": "1"}
    assert totals["episodes"] == 17


def test_a_filter_narrows_every_number(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client, f"{DASHBOARD}?tool=send_email&variant=friendly")
    totals = expected_totals(tool="send_email", variant="friendly")
    assert tile_text(page, "calls") == "8"
    # friendly recovered 4 of 4 retried episodes: too few for a rate, so neither 100 % nor "meets target".
    assert totals["retry_success_rate"] == 1.0
    assert tile_text(page, "retry_success_rate") == "4 of 4"
    assert tile_count(page, "retry_success_rate") == f"too few to rate (under {MIN_RATE_COUNT})"
    assert "ed-tile-good" not in tile_class(page, "retry_success_rate")
    assert "ed-tile-few" in tile_class(page, "retry_success_rate")
    assert '<option value="friendly" selected>' in page


def test_rates_without_data_show_a_dash_not_zero(client, staff_user):
    client.force_login(staff_user)
    page = get_page(client)
    assert tile_text(page, "calls") == "0"
    for key in ("error_rate", "retry_success_rate", "first_retry_success_rate", "interactive_error_rate"):
        assert tile_text(page, key) == "—", key
    assert tile_text(page, "latency") == "— / —"
    assert tile_text(page, "resolution") == "— / —"
    assert "0.0 %" not in page


def test_chart_data_has_each_bucket_of_the_database(client, staff_user):
    buckets = build_outcomes()
    client.force_login(staff_user)
    data = chart_data(get_page(client))
    by_bucket = dict(zip(data["buckets"], range(len(data["buckets"])), strict=True))
    for bucket in (buckets["recent"], buckets["older"]):
        index = by_bucket[bucket.isoformat()]
        totals = expected_totals(bucket=bucket)
        assert data["calls"][index] == totals["calls"]
        assert data["errors"][index] == totals["errors"]
        retried = totals["recovered"] + totals["exhausted"] + totals["abandoned"] - totals["abandoned_without_retry"]
        assert data["counts"]["retry_success_rate"][index] == [totals["recovered"], retried]
        assert data["counts"]["error_rate"][index] == [totals["errors"], totals["calls"]]
        assert data["rates"]["error_rate"][index] == pytest.approx(totals["error_rate"] * 100, abs=0.01)
        # Too few episodes in a bucket: a gap, not a point.
        rate = pytest.approx(totals["retry_success_rate"] * 100, abs=0.01) if retried >= MIN_RATE_COUNT else None
        assert data["rates"]["retry_success_rate"][index] == rate
    empty = [i for i, bucket in enumerate(data["buckets"]) if datetime.fromisoformat(bucket) not in buckets.values()]
    assert all(data["calls"][i] == 0 and data["rates"]["error_rate"][i] is None for i in empty)
    assert data["targets"] == {"retry_success_rate": 60.0, "interactive_error_rate": 80.0}


def test_breakdown_tables_have_a_row_per_key_with_sort_keys(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client)
    tool_table = re.search(r'id="ed-breakdown-tool".*?</table>', page, re.DOTALL).group(0)
    rows = re.findall(
        r'<tr data-key="([^"]*)">\s*<th scope="row" data-sort="[^"]*">[^<]*</th><td class="ed-num" '
        r'data-sort="(\d+)"',
        tool_table,
    )
    assert rows == [("send_email", "58"), ("store_document", "30")]
    variant_table = re.search(r'id="ed-breakdown-variant".*?</table>', page, re.DOTALL).group(0)
    assert 'data-key="MISSING_PARAMETER/plain"' in variant_table
    assert 'data-sort-type="number"' in variant_table


def test_variant_comparison_states_the_verdict(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client)
    section = re.search(
        r'<article class="ed-comparison[^"]*" data-code="MISSING_PARAMETER">.*?</article>', page, re.DOTALL
    )
    assert section, "no comparison for MISSING_PARAMETER"
    text = section.group(0)
    # friendly: 4 of 4 retried episodes (one abandoned without retry); plain: 3 of 5. Too few for rates.
    assert re.search(r'data-variant="friendly">.*?4 of 4', text, re.DOTALL)
    assert re.search(r'data-variant="plain">.*?3 of 5', text, re.DOTALL)
    # 4/4 against 3/5 is not more than noise, and the page says so rather than crowning a winner.
    assert "ed-significant" not in text
    assert "ed-best" not in text and ">best<" not in text
    verdict = re.search(r'<p class="ed-verdict">(.*?)</p>', text, re.DOTALL).group(1)
    assert "noise" in verdict


# --- Escaping and links ------------------------------------------------------------------------------------


def test_names_from_the_database_are_escaped(client, staff_user):
    bucket = bucket_start(timezone.now()) - timedelta(seconds=bucket_seconds())
    call_events(bucket + timedelta(minutes=1), 1, tool=HOSTILE_TOOL, client='"><script>x()</script>')
    rollups.recompute_bucket(bucket)
    client.force_login(staff_user)
    page = get_page(client)
    assert HOSTILE_TOOL not in page and "<script>x()" not in page
    assert html.escape(HOSTILE_TOOL) in page


def test_recent_episodes_link_to_sentry_with_noopener(client, staff_user, settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "SENTRY_EVENT_URL": "https://sentry.example/issues/?query={event_id}"}
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client)
    links = re.findall(r'<a class="ed-sentry" href="([^"]+)" target="_blank" rel="noopener noreferrer">', page)
    assert sorted(links) == [
        "https://sentry.example/issues/?query=" + "a" * 32,
        "https://sentry.example/issues/?query=" + "b" * 32,
    ]
    assert page.count('data-episode="') == 17


@pytest.mark.parametrize("template", ["javascript:alert(1)//{event_id}", "data:text/html,{event_id}", ""])
def test_sentry_links_other_than_http_are_not_shown(client, staff_user, settings, template):
    settings.OUTCOMES = {**settings.OUTCOMES, "SENTRY_EVENT_URL": template}
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client)
    assert 'class="ed-sentry"' not in page
    assert "javascript:" not in page


def test_a_clear_winner_is_marked_as_more_than_noise(client, staff_user):
    bucket = bucket_start(timezone.now()) - timedelta(seconds=bucket_seconds())
    at = bucket + timedelta(minutes=1)
    cell = {"tool": "send_email", "code": "RATE_LIMITED", "client": "claude"}
    episodes(at, [("recovered", 1, 1, "")] * 20, variant="short", **cell)
    episodes(at, [("recovered", 1, 1, "")] * 2 + [("exhausted", 3, None, "")] * 18, variant="long", **cell)
    rollups.recompute_bucket(bucket)
    client.force_login(staff_user)
    page = get_page(client)
    section = re.search(
        r'<article class="ed-comparison ed-significant" data-code="RATE_LIMITED">.*?</article>', page, re.DOTALL
    )
    assert section, "the comparison is not marked significant"
    assert re.search(r'data-variant="short" class="ed-best">.*?100.0 %', section.group(0), re.DOTALL)
    assert re.search(r'data-variant="long">.*?10.0 %', section.group(0), re.DOTALL)


def test_calls_to_upstream_tools_have_their_own_breakdown_and_filter(client, staff_user):
    build_outcomes()
    at = bucket_start(timezone.now()) - timedelta(seconds=bucket_seconds()) + timedelta(minutes=6)
    call_events(at, 4, tool="git__status", client="claude", upstream="git")
    call_events(at, 2, outcome="error", tool="git__log", code="EXECUTION_FAILURE", client="claude", upstream="git")
    rollups.recompute_bucket(at)
    client.force_login(staff_user)

    page = get_page(client)
    table = re.search(r'id="ed-breakdown-upstream".*?</table>', page, re.DOTALL).group(0)
    # One row, git's 6 calls: this project's own tools have no upstream row.
    assert re.findall(r'<tr data-key="([^"]*)">\s*<th scope="row" data-sort="[^"]*">[^<]*</th><td class="ed-num" '
                      r'data-sort="(\d+)"', table) == [("git", "6")]  # fmt: skip
    upstream_select = re.search(r'<select name="upstream">(.*?)</select>', page, re.DOTALL).group(1)
    assert re.findall(r'<option value="([^"]*)"', upstream_select) == ["", "git"]

    assert tile_text(get_page(client, DASHBOARD + "?upstream=git"), "calls") == "6"


def test_filter_lists_offer_the_values_of_the_window(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client)
    tool_select = re.search(r'<select name="tool">(.*?)</select>', page, re.DOTALL).group(1)
    assert re.findall(r'<option value="([^"]*)"', tool_select) == ["", "send_email", "store_document"]


def test_clients_are_named_by_their_token_name(client, staff_user):
    """MCP calls are stored under ``token:<id>``, a reporter's clients under ``token:<id>/<client>``; the page
    shows the token's name (and the reporter's client), keeping the stored key as the row key and filter value."""
    from errcatalog.access.tokens import client_token_create

    quickstart, _key = client_token_create(user=staff_user, name="quickstart")
    reporter, _key = client_token_create(user=staff_user, name="ci-reporter")
    at = bucket_start(timezone.now()) - timedelta(seconds=bucket_seconds()) + timedelta(minutes=5)
    cell = {"tool": "send_email", "code": "MISSING_PARAMETER", "variant": "plain"}
    call_events(at, 3, outcome="error", client=f"token:{quickstart.pk}", **cell)
    call_events(at, 2, outcome="error", client=f"token:{reporter.pk}/ide", **cell)
    call_events(at, 1, outcome="error", client="token:999999", **cell)  # a deleted token: its key as it is
    episodes(at, [("recovered", 1, 1, "")], client=f"token:{quickstart.pk}", **cell)
    rollups.recompute_bucket(bucket_start(at))
    client.force_login(staff_user)
    page = get_page(client)

    client_table = re.search(r'id="ed-breakdown-client".*?</table>', page, re.DOTALL).group(0)
    rows = dict(re.findall(r'<tr data-key="([^"]*)">\s*<th scope="row" data-sort="[^"]*">([^<]*)</th>', client_table))
    assert rows == {
        f"token:{quickstart.pk}": "quickstart",
        f"token:{reporter.pk}/ide": "ci-reporter / ide",
        "token:999999": "token:999999",
    }
    client_select = re.search(r'<select name="client">(.*?)</select>', page, re.DOTALL).group(1)
    options = dict(re.findall(r'<option value="([^"]*)">([^<]*)</option>', client_select))
    assert options[f"token:{quickstart.pk}"] == "quickstart"
    assert options[f"token:{reporter.pk}/ide"] == "ci-reporter / ide"
    episode_rows = re.search(r'id="ed-episodes".*?</table>', page, re.DOTALL).group(0)
    assert '<td class="ed-name">quickstart</td>' in episode_rows and f"token:{quickstart.pk}" not in episode_rows


def test_tokens_sharing_a_name_stay_apart(client, staff_user):
    from errcatalog.access.selectors import client_display_names
    from errcatalog.access.tokens import client_token_create

    first, _key = client_token_create(user=staff_user, name="agents")
    second, _key = client_token_create(user=staff_user, name="agents")
    names = client_display_names([f"token:{first.pk}", f"token:{second.pk}/x", "claude", "token:abc"])
    assert names == {f"token:{first.pk}": f"agents #{first.pk}", f"token:{second.pk}/x": f"agents #{second.pk} / x"}


def test_the_first_hour_opens_on_the_minute_window(client, staff_user):
    client.force_login(staff_user)
    assert 'value="1h" selected' in get_page(client, DASHBOARD)  # nothing recorded yet
    call_events(timezone.now() - timedelta(minutes=10), 2, tool="send_email")
    page = get_page(client, DASHBOARD)
    assert 'value="1h" selected' in page and "minute buckets" in page and tile_text(page, "calls") == "2"
    call_events(timezone.now() - timedelta(minutes=70), 1, tool="send_email")  # an hour old: the usual default
    assert 'value="24h" selected' in get_page(client, DASHBOARD)
    assert 'value="1h" selected' in get_page(client, DASHBOARD + "?window=1h")  # a window asked for is kept


def test_an_unknown_filter_value_is_reported_not_offered_nor_applied(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client, DASHBOARD + "?window=24h&tool=sned_email&client=claude")

    tool_select = re.search(r'<select name="tool">(.*?)</select>', page, re.DOTALL).group(1)
    assert re.findall(r'<option value="([^"]*)"', tool_select) == ["", "send_email", "store_document"]
    assert " selected" not in tool_select
    assert "No recorded call has the tool “sned_email”" in page
    caption = re.search(r'<p class="ed-window-caption".*?</p>', page, re.DOTALL).group(0)
    assert "sned_email" not in caption and "client = " in caption
    assert tile_text(page, "calls") == format(expected_totals(client="claude")["calls"], ",")
    # Only recorded values are kept: a tool recorded outside the window is known (it filters to zeros).
    page = get_page(client, DASHBOARD + "?window=1h&tool=store_document")
    assert "No recorded call" not in page and tile_text(page, "calls") == "0"
    tool_select = re.search(r'<select name="tool">(.*?)</select>', page, re.DOTALL).group(1)
    assert '<option value="store_document" selected>' in tool_select


def test_the_caption_names_a_client_by_its_token(client, staff_user):
    from errcatalog.access.tokens import client_token_create

    token, _key = client_token_create(user=staff_user, name="quickstart")
    call_events(timezone.now() - timedelta(minutes=3), 2, tool="send_email", client=f"token:{token.pk}")
    client.force_login(staff_user)
    page = get_page(client, DASHBOARD + f"?window=1h&client=token:{token.pk}")

    caption = re.search(r'<p class="ed-window-caption".*?</p>', page, re.DOTALL).group(0)
    assert ">quickstart</code>" in caption and f">token:{token.pk}<" not in caption
    assert tile_text(page, "calls") == "2"


def test_the_page_refreshes_itself_from_the_same_query(client, staff_user):
    build_outcomes()
    client.force_login(staff_user)
    page = get_page(client, DASHBOARD + "?tool=send_email&code=")
    root = re.search(r'<div id="content-main"[^>]*>', page).group(0)
    assert 'data-refresh-seconds="30"' in root
    assert 'data-refresh-url="/dashboard/?window=24h&amp;tool=send_email"' in root
    assert re.search(r'id="ed-updated"[^>]*>Updated <time>\d\d:\d\d:\d\d</time> UTC', page)


def test_the_upstream_tile_shows_the_classified_share_and_links_the_inbox_for_those_who_may_read_it(
    client, staff_user, django_user_model
):
    from errcatalog.gateway import inbox

    client.force_login(staff_user)
    assert 'data-kpi="upstream_classified_rate"' not in get_page(client)  # no upstream failure: no tile
    inbox.reset()
    for text in ("Invalid revision 'x'", "Invalid revision 'y'", "Invalid revision 'z'"):
        inbox.note("git", "git__log", "tool_error", text, classified=True)
    inbox.note("git", "git__log", "tool_error", "Widget 1 exploded", classified=False)
    inbox.note("web", "web__get", "tool_error", "Widget 1 exploded", classified=False)
    assert inbox.flush()
    page = get_page(client)
    assert tile_text(page, "upstream_classified_rate") == "3 of 5"  # too few for a rate
    assert "of upstream failures; 2 groups in the inbox" in page
    inbox_url = reverse("admin:errcatalog_upstreamfailuregroup_changelist")
    assert f'href="{inbox_url}"' in page
    assert tile_text(get_page(client, f"{DASHBOARD}?upstream=git"), "upstream_classified_rate") == "3 of 4"

    # A staff member who may not read the inbox sees the share, not the link.
    reader = django_user_model.objects.create_user(username="viewer", password="pw-viewer-1", is_staff=True)
    client.force_login(reader)
    page = get_page(client)
    assert tile_text(page, "upstream_classified_rate") == "3 of 5" and f'href="{inbox_url}"' not in page


# --- Small numbers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("recovered", "retried", "text", "counts"),
    [
        (1, 1, "1 of 1", f"too few to rate (under {MIN_RATE_COUNT})"),
        (2, 3, "2 of 3", f"too few to rate (under {MIN_RATE_COUNT})"),
        (67, 100, "67.0 %", "67 of 100"),
        (0, 0, "—", "none"),
    ],
)
def test_a_rate_is_shown_with_its_counts_and_as_counts_alone_when_they_are_too_few(recovered, retried, text, counts):
    totals = {"recovered": recovered, "retried_episodes": retried, "first_retry_recovered": 0, "errors": 0}
    totals |= {"calls": 0, "interactive_errors": 0, "latency_p50_ms": None, "latency_p95_ms": None}
    totals |= {"resolution_p50_seconds": None, "resolution_p90_seconds": None}
    (tile,) = [tile for tile in kpi_tiles(totals, {"retry_success_rate": 0.6}) if tile["key"] == "retry_success_rate"]
    assert (tile["text"], tile["count_text"]) == (text, counts)
    # Only a rate over enough episodes is held against the target (1 of 1 does not "meet" it).
    assert tile["status"] == ("good" if retried >= MIN_RATE_COUNT else "none")


@pytest.mark.parametrize("calls", [1, 3, 100])
def test_chart_points_need_enough_calls_and_keep_their_counts(calls):
    errors = 2 * calls // 3 or 1
    row = {"bucket": "2026-01-01T00:00:00+00:00", "calls": calls, "errors": errors, "interactive_errors": 0}
    row |= {"recovered": 0, "retried_episodes": 0, "first_retry_recovered": 0}
    row |= {key: None for key in ("retry_success_rate", "first_retry_success_rate", "interactive_error_rate")}
    data = dashboard_chart_data([row | {"error_rate": errors / calls}], {}, 60)
    assert data["counts"]["error_rate"] == [[errors, calls]]
    assert data["rates"]["error_rate"] == [round(errors / calls * 100, 2) if calls >= MIN_RATE_COUNT else None]


def comparison(*, significant: bool, p_value: float) -> dict[str, Any]:
    variants = [
        {
            "variant": "plain",
            "episodes": 40,
            "recovered": 30,
            "retry_success_rate": 0.75,
            "ci_low": 0.6,
            "ci_high": 0.86,
        },
        {
            "variant": "terse",
            "episodes": 40,
            "recovered": 26,
            "retry_success_rate": 0.65,
            "ci_low": 0.5,
            "ci_high": 0.78,
        },
    ]
    return {"code": "E", "variants": variants, "best": "plain", "runner_up": "terse", "p_value": p_value,
            "significant": significant, "verdict": "…"}  # fmt: skip


def test_no_variant_is_best_when_the_difference_is_within_noise():
    view = comparison_view(comparison(significant=False, p_value=0.63))
    assert [variant["is_best"] for variant in view["variants"]] == [False, False]


def test_the_variant_that_recovers_more_often_beyond_noise_is_best():
    view = comparison_view(comparison(significant=True, p_value=0.01))
    assert [variant["is_best"] for variant in view["variants"]] == [True, False]
    assert view["variants"][0]["rate_text"] == "75.0 %"


def test_the_page_says_what_recovered_counts(client, staff_user, settings):
    windows = {"RETRY_WINDOW_SECONDS": 600, "SESSIONLESS_RETRY_WINDOW_SECONDS": 60, "MAX_ATTEMPTS": 3}
    settings.OUTCOMES = {**settings.OUTCOMES, **windows}
    client.force_login(staff_user)
    rule = re.search(r'id="ed-recovery-rule">(.*?)</p>', get_page(client), re.DOTALL).group(1)
    assert "same session" in rule and "10.0 min" in rule and "next 3 calls" in rule
    assert "another session" in rule and "without a session" in rule and "within 1.0 min" in rule
    assert f"fewer than {MIN_RATE_COUNT}" in rule
