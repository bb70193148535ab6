"""Metrics read from rollups: the rate definitions, windows, breakdowns, the variant comparison and episodes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from errcatalog.outcomes import rollups
from errcatalog.outcomes.metrics import (
    WINDOWS,
    compute_metrics,
    ever_recorded,
    filter_values,
    metric_row,
    percentile,
    recorded_before,
    sentry_url,
)
from tests.errcatalog.outcomes.rows import episode, event

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 30, tzinfo=UTC)
ROW_FIELDS = {
    "calls",
    "errors",
    "error_rate",
    "interactive_errors",
    "interactive_error_rate",
    "retries",
    "episodes",
    "recovered",
    "exhausted",
    "abandoned",
    "retry_success_rate",
    "first_retry_success_rate",
    "latency_p50_ms",
    "latency_p95_ms",
    "resolution_p50_seconds",
    "resolution_p90_seconds",
}


def roll_up(*moments: datetime) -> None:
    for moment in {rollups.bucket_start(m) for m in moments}:
        rollups.recompute_bucket(moment)


@pytest.fixture
def traffic():
    """An hour with 10 calls (4 errors, 3 interactive) and 6 episodes, and a call 3 days earlier."""
    hour = datetime(2026, 11, 20, 12, tzinfo=UTC)
    for minute in range(6):
        event(hour + timedelta(minutes=minute), latency_ms=10.0)
    for minute, interactive in enumerate((True, True, True, False)):
        event(
            hour + timedelta(minutes=10 + minute),
            outcome="error",
            code="MISSING_PARAMETER",
            variant="friendly",
            interactive=interactive,
            attempt=1 if minute == 0 else 0,
            latency_ms=100.0,
        )
    episode(hour, ending="recovered", recovered_at_attempt=1, retries=1)
    episode(hour, ending="recovered", recovered_at_attempt=2, retries=2)
    episode(hour, ending="exhausted", retries=3)
    episode(hour, ending="abandoned", retries=0)  # never retried: not in the retry rates
    episode(hour, ending="open")  # not ended: not in the retry rates
    episode(hour, ending="recovered", recovered_at_attempt=1, retries=1, code="RATE_LIMITED", sentry_event_id="ab" * 16)
    earlier = hour - timedelta(days=3)
    event(earlier, tool="search", client="token:2")
    roll_up(hour, earlier)


def test_totals_follow_the_documented_definitions(traffic):
    totals = compute_metrics("24h", now=NOW)["totals"]

    assert set(totals) >= ROW_FIELDS
    assert (totals["calls"], totals["errors"], totals["interactive_errors"], totals["retries"]) == (10, 4, 3, 1)
    assert totals["error_rate"] == 0.4
    assert totals["interactive_error_rate"] == 0.75
    assert (totals["episodes"], totals["recovered"], totals["exhausted"], totals["abandoned"]) == (6, 3, 1, 1)
    # Retried and ended: 3 recovered + 1 exhausted + 1 abandoned - 1 abandoned without a retry = 4.
    assert totals["retried_episodes"] == 4
    assert totals["retry_success_rate"] == 0.75
    assert totals["first_retry_success_rate"] == 0.5
    assert 8.43 <= totals["latency_p50_ms"] <= 11.9  # the bin of the 10 ms calls
    assert 91.9 <= totals["latency_p95_ms"] <= 129.0  # the bin of the 100 ms errors


def test_the_window_holds_one_series_point_per_bucket(traffic):
    metrics = compute_metrics("24h", now=NOW)

    assert metrics["window"] == {
        "name": "24h",
        "start": "2026-11-19T13:00:00+00:00",
        "end": "2026-11-20T13:00:00+00:00",
        "bucket_seconds": 3600,
    }
    series = metrics["series"]
    assert len(series) == 24
    assert series[-1]["bucket"] == "2026-11-20T12:00:00+00:00" and series[-1]["calls"] == 10
    assert all(point["calls"] == 0 and point["error_rate"] is None for point in series[:-1])
    assert metrics["targets"] == {"retry_success_rate": 0.6, "interactive_error_rate": 0.8}


def test_the_hour_window_has_a_point_per_minute_read_from_the_events(traffic):
    """NOW is 12:30: the window is 11:31 to 12:31, one point per minute, the same numbers as the rollups."""
    metrics = compute_metrics("1h", now=NOW)

    assert metrics["window"] == {
        "name": "1h",
        "start": "2026-11-20T11:31:00+00:00",
        "end": "2026-11-20T12:31:00+00:00",
        "bucket_seconds": 60,
    }
    series = {point["bucket"]: point for point in metrics["series"]}
    assert len(series) == 60
    calls = {bucket[11:16]: point["calls"] for bucket, point in series.items() if point["calls"]}
    # Six calls in the minutes 12:00 to 12:05, four errors in 12:10 to 12:13.
    assert calls == {f"12:{minute:02}": 1 for minute in (0, 1, 2, 3, 4, 5, 10, 11, 12, 13)}
    assert series["2026-11-20T12:10:00+00:00"]["errors"] == 1
    # Episodes count in the minute of their opening error: all six opened at 12:00.
    assert series["2026-11-20T12:00:00+00:00"]["episodes"] == 6
    assert series["2026-11-20T12:00:00+00:00"]["retry_success_rate"] == 0.75
    day = compute_metrics("24h", now=NOW)
    for key in ("totals", "breakdowns", "variant_comparison"):
        assert metrics[key] == day[key], key


def test_the_hour_window_counts_an_event_before_the_rollup_job_runs(traffic):
    assert compute_metrics("1h", now=NOW)["totals"]["calls"] == 10  # and now cached
    event(NOW - timedelta(seconds=5), tool="search", outcome="error", code="NOT_FOUND", variant="default")

    metrics = compute_metrics("1h", now=NOW)
    assert metrics["totals"]["calls"] == 11 and metrics["series"][-2]["errors"] == 1
    assert compute_metrics("1h", tool="search", now=NOW)["totals"]["calls"] == 1
    assert compute_metrics("24h", now=NOW)["totals"]["calls"] == 10  # the rollups, until the job runs


def test_filter_values_are_those_recorded_in_the_window(traffic):
    hour = filter_values("1h", now=NOW)
    assert hour["tool"] == ["send_email"] and hour["code"] == ["MISSING_PARAMETER", "RATE_LIMITED"]
    assert hour["upstream"] == []
    assert filter_values("7d", now=NOW)["tool"] == ["search", "send_email"]
    assert ever_recorded("tool", "search") and not ever_recorded("tool", "sned_email")
    assert recorded_before(NOW - timedelta(days=2)) and not recorded_before(NOW - timedelta(days=4))


def test_long_windows_read_daily_rollups_with_a_point_per_day(traffic):
    week = compute_metrics("7d", now=NOW)

    assert week["window"]["bucket_seconds"] == 86400
    assert len(week["series"]) == 7
    assert week["totals"]["calls"] == 11  # the call three days earlier is in the week
    assert week["totals"]["retry_success_rate"] == 0.75
    assert compute_metrics("1h", now=NOW)["totals"]["calls"] == 10


def test_breakdowns_by_each_dimension(traffic):
    breakdowns = compute_metrics("7d", now=NOW)["breakdowns"]

    by_tool = {row["key"]: row for row in breakdowns["tool"]}
    assert by_tool["send_email"]["calls"] == 10 and by_tool["search"]["calls"] == 1
    assert [row["key"] for row in breakdowns["client"]] == ["token:1", "token:2"]
    by_code = {row["key"]: row for row in breakdowns["code"]}
    assert by_code["MISSING_PARAMETER"]["errors"] == 4
    assert by_code["MISSING_PARAMETER"]["retry_success_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert by_code["RATE_LIMITED"]["recovered"] == 1
    variant = next(row for row in breakdowns["variant"] if row["key"] == "MISSING_PARAMETER/friendly")
    assert (variant["code"], variant["variant"], variant["episodes"]) == ("MISSING_PARAMETER", "friendly", 5)
    assert all(set(row) >= ROW_FIELDS for rows in breakdowns.values() for row in rows)


def test_filters_narrow_every_number(traffic):
    metrics = compute_metrics("7d", tool="search", now=NOW)

    assert metrics["filters"] == {"tool": "search", "code": None, "client": None, "variant": None, "upstream": None}
    assert metrics["totals"]["calls"] == 1
    assert metrics["recent_episodes"] == []
    assert compute_metrics("24h", code="RATE_LIMITED", now=NOW)["totals"]["episodes"] == 1
    assert compute_metrics("24h", client="token:9", now=NOW)["totals"]["calls"] == 0


def test_calls_to_upstream_tools_break_down_and_filter_by_upstream():
    hour = datetime(2026, 11, 20, 12, tzinfo=UTC)
    event(hour, tool="git__status", upstream="git")
    event(hour, tool="git__log", upstream="git", outcome="error", code="EXECUTION_FAILURE", variant="default")
    event(hour, tool="time__now", upstream="time")
    event(hour, tool="send_email")  # one of ours: no upstream row
    episode(hour, ending="recovered", recovered_at_attempt=1, retries=1, tool="git__log", upstream="git")
    roll_up(hour)

    metrics = compute_metrics("24h", now=NOW)
    by_upstream = {row["key"]: row for row in metrics["breakdowns"]["upstream"]}
    assert by_upstream.keys() == {"git", "time"}
    assert (by_upstream["git"]["calls"], by_upstream["git"]["errors"], by_upstream["git"]["recovered"]) == (2, 1, 1)
    assert by_upstream["time"]["calls"] == 1
    assert metrics["totals"]["calls"] == 4

    git = compute_metrics("24h", upstream="git", now=NOW)
    assert git["totals"]["calls"] == 2 and {row["key"] for row in git["breakdowns"]["tool"]} == {
        "git__status",
        "git__log",
    }
    assert [(e["tool"], e["upstream"]) for e in git["recent_episodes"]] == [("git__log", "git")]
    assert compute_metrics("24h", upstream="time", now=NOW)["recent_episodes"] == []


def test_unknown_window_is_refused():
    with pytest.raises(ValueError, match="window must be one of"):
        compute_metrics("2h")
    assert set(WINDOWS) == {"1h", "24h", "7d", "30d"}


def test_variant_comparison_names_the_better_wording():
    hour = datetime(2026, 11, 20, 12, tzinfo=UTC)
    for index in range(100):
        for variant, recovered_below in (("friendly", 72), ("terse", 51)):
            if index < recovered_below:
                episode(hour, ending="recovered", variant=variant, recovered_at_attempt=1, retries=1)
            else:
                episode(hour, ending="exhausted", variant=variant, retries=4)
    episode(hour, ending="recovered", variant="only", code="RATE_LIMITED", recovered_at_attempt=1, retries=1)
    roll_up(hour)

    comparison = compute_metrics("24h", now=NOW)["variant_comparison"]

    assert [entry["code"] for entry in comparison] == ["MISSING_PARAMETER"]  # one variant cannot be compared
    entry = comparison[0]
    assert entry["best"] == "friendly" and entry["significant"]
    assert entry["p_value"] == pytest.approx(0.0023, abs=1e-4)
    assert entry["verdict"] == "`friendly` recovers more often (72% vs 51%, p = 0.002)"
    friendly, terse = entry["variants"]
    assert (friendly["variant"], friendly["episodes"], friendly["recovered"]) == ("friendly", 100, 72)
    assert friendly["retry_success_rate"] == 0.72
    assert friendly["ci_low"] == pytest.approx(0.6251, abs=1e-4) and friendly["ci_high"] == pytest.approx(
        0.7986, abs=1e-4
    )
    assert terse["retry_success_rate"] == 0.51


def test_recent_episodes_link_to_sentry(traffic, settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "SENTRY_EVENT_URL": "https://sentry.example/issues/?query={event_id}"}

    recent = compute_metrics("24h", now=NOW)["recent_episodes"]

    assert len(recent) == 6
    linked = next(e for e in recent if e["code"] == "RATE_LIMITED")
    assert linked["sentry_url"] == "https://sentry.example/issues/?query=" + "ab" * 16
    assert linked["ending"] == "recovered" and linked["recovered_at_attempt"] == 1
    assert all(e["sentry_url"] is None for e in recent if e["code"] != "RATE_LIMITED")
    assert set(linked) == {
        "id", "tool", "upstream", "code", "variant", "client", "started_at", "ended_at", "ending", "retries",
        "recovered_at_attempt", "resolution_seconds", "sentry_event_id", "sentry_url",
    }  # fmt: skip


def test_only_the_twenty_latest_episodes_are_listed():
    hour = datetime(2026, 11, 20, 12, tzinfo=UTC)
    for minute in range(25):
        episode(hour + timedelta(minutes=minute), ending="abandoned")

    recent = compute_metrics("24h", now=NOW)["recent_episodes"]

    assert len(recent) == 20
    assert recent[0]["started_at"] == (hour + timedelta(minutes=24)).isoformat()


def test_sentry_url_is_none_when_unset(settings):
    settings.OUTCOMES = {**settings.OUTCOMES, "SENTRY_EVENT_URL": ""}
    assert sentry_url("ab" * 16) is None


def test_percentiles_come_from_the_histogram():
    bounds = rollups.LATENCY_BOUNDS_MS
    histogram = [0] * (len(bounds) + 1)
    histogram[bounds.index(1000.0)] = 90
    histogram[-1] = 10
    assert bounds[26] <= percentile(histogram, 0.5) <= 1000.0
    assert percentile(histogram, 0.95) == 60_000.0  # in the overflow bin: reported as the last bound
    assert percentile([0] * len(histogram), 0.5) is None


def test_rates_are_none_without_a_denominator():
    row = metric_row({})
    assert row["calls"] == 0
    assert row["error_rate"] is None and row["retry_success_rate"] is None and row["latency_p50_ms"] is None


def _exact(values: list[float], quantile: float) -> float:
    """The nearest-rank quantile of raw values, to compare the histogram's estimate with."""
    ordered = sorted(values)
    return ordered[max(int(-(-quantile * len(ordered) // 1)) - 1, 0)]


def _within_a_bin(estimate: float | None, exact: float) -> bool:
    # Log-spaced bins about 1.42 apart: an estimate lies in the bin of the exact value or next to it.
    return estimate is not None and exact / 1.45 <= estimate <= exact * 1.45


def test_user_resolution_time_p50_and_p90_per_code_tool_and_variant_come_from_rollups():
    hour = datetime(2026, 11, 20, 11, tzinfo=UTC)
    friendly = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 300.0]
    terse = [30.0, 60.0, 90.0, 120.0]
    for seconds in friendly:
        episode(hour, ending="recovered", recovered_at_attempt=1, retries=1, resolution_seconds=seconds)
    for seconds in terse:
        episode(
            hour, ending="recovered", recovered_at_attempt=2, retries=2, variant="terse", resolution_seconds=seconds
        )
    episode(hour, ending="exhausted", retries=3)  # no resolution time: not in the percentiles
    episode(hour, ending="abandoned", retries=1, variant="terse")
    roll_up(hour)

    metrics = compute_metrics("24h", now=NOW)
    everything = friendly + terse
    totals = metrics["totals"]
    assert _within_a_bin(totals["resolution_p50_seconds"], _exact(everything, 0.5))
    assert _within_a_bin(totals["resolution_p90_seconds"], _exact(everything, 0.9))
    variants = {row["variant"]: row for row in metrics["breakdowns"]["variant"]}
    assert _within_a_bin(variants["friendly"]["resolution_p50_seconds"], 10.0)
    assert _within_a_bin(variants["friendly"]["resolution_p90_seconds"], 18.0)
    assert _within_a_bin(variants["terse"]["resolution_p50_seconds"], 60.0)
    assert _within_a_bin(variants["terse"]["resolution_p90_seconds"], 120.0)
    (code,) = metrics["breakdowns"]["code"]
    (tool,) = metrics["breakdowns"]["tool"]
    assert code["resolution_p50_seconds"] == tool["resolution_p50_seconds"] == totals["resolution_p50_seconds"]
    assert code["resolution_p90_seconds"] == tool["resolution_p90_seconds"] == totals["resolution_p90_seconds"]
    (point,) = [row for row in metrics["series"] if row["resolution_p50_seconds"] is not None]
    assert point["bucket"] == hour.isoformat()
    # The 7-day window reads the day rows: the same bins, so the same numbers.
    weekly = compute_metrics("7d", now=NOW)["totals"]
    assert weekly["resolution_p50_seconds"] == totals["resolution_p50_seconds"]
    assert weekly["resolution_p90_seconds"] == totals["resolution_p90_seconds"]
    assert (
        compute_metrics("24h", now=NOW, variant="terse")["totals"]["resolution_p50_seconds"]
        == (variants["terse"]["resolution_p50_seconds"])
    )


def test_user_resolution_time_is_none_without_a_recovered_episode(traffic):
    hour = datetime(2026, 11, 20, 12, tzinfo=UTC)
    metrics = compute_metrics("24h", now=NOW, code="NOT_THERE")
    assert metrics["totals"]["resolution_p50_seconds"] is None
    assert metrics["totals"]["resolution_p90_seconds"] is None
    recent = {row["ending"]: row for row in compute_metrics("24h", now=NOW)["recent_episodes"]}
    assert recent["recovered"]["resolution_seconds"] == 60.0 and recent["exhausted"]["resolution_seconds"] is None
    assert hour.isoformat() in {row["started_at"] for row in recent.values()}
