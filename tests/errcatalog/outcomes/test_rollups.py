"""Rollups: what each bucket row counts, that recomputing is idempotent, and which buckets a run recomputes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from errcatalog.outcomes import rollups
from errcatalog.outcomes.models import DailyRollup, Episode, OutcomeRecord, Rollup, RollupState, RollupSummary
from tests.errcatalog.outcomes.rows import episode, event

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 11, 20, 10, tzinfo=UTC)
CELL_FIELDS = ("tool", "code", "variant", "client")


def rows(bucket: datetime) -> dict[tuple[str, ...], Rollup]:
    return {tuple(getattr(r, f) for f in CELL_FIELDS): r for r in Rollup.objects.filter(bucket=bucket)}


def test_latency_bounds_are_log_spaced_from_a_tenth_of_a_millisecond_to_a_minute():
    bounds = rollups.LATENCY_BOUNDS_MS
    assert 35 <= len(bounds) <= 45
    assert bounds[0] == 0.1 and bounds[-1] == 60_000.0
    ratios = [b / a for a, b in itertools.pairwise(bounds)]
    assert all(1.35 < ratio < 1.45 for ratio in ratios)


def test_a_bucket_counts_calls_errors_retries_and_latency_per_cell():
    event(HOUR + timedelta(minutes=1), latency_ms=5.0)
    event(HOUR + timedelta(minutes=2), latency_ms=50.0)
    event(HOUR + timedelta(minutes=3), outcome="error", code="MISSING_PARAMETER", variant="friendly", interactive=True)
    event(
        HOUR + timedelta(minutes=4),
        outcome="error",
        code="MISSING_PARAMETER",
        variant="friendly",
        attempt=1,
        latency_ms=100_000.0,
    )
    event(HOUR + timedelta(hours=1), latency_ms=1.0)  # the next bucket

    written = rollups.recompute_bucket(HOUR + timedelta(minutes=30))

    assert written == 2
    cells = rows(HOUR)
    ok = cells[("send_email", "", "", "token:1")]
    assert (ok.calls, ok.errors, ok.retries, ok.latency_sum_ms) == (2, 0, 0, 55.0)
    bounds = rollups.LATENCY_BOUNDS_MS
    assert len(ok.latency_histogram) == len(bounds) + 1
    assert ok.latency_histogram[bounds.index(6.0)] == 1  # 5 ms: the first bound it does not exceed is 6.0
    assert ok.latency_histogram[bounds.index(65.3)] == 1
    assert sum(ok.latency_histogram) == 2
    error = cells[("send_email", "MISSING_PARAMETER", "friendly", "token:1")]
    assert (error.calls, error.errors, error.interactive_errors, error.retries) == (2, 2, 1, 1)
    assert error.latency_histogram[-1] == 1  # above a minute: the overflow bin
    assert error.latency_histogram[0] == 1  # 0 ms


def test_an_episode_counts_in_the_bucket_and_cell_it_started_in():
    later = HOUR + timedelta(hours=1)
    episode(HOUR + timedelta(minutes=50), ending="recovered", recovered_at_attempt=1, retries=1, ended_at=later)
    episode(HOUR + timedelta(minutes=51), ending="recovered", recovered_at_attempt=2, retries=2)
    episode(HOUR + timedelta(minutes=52), ending="exhausted", retries=3)
    episode(HOUR + timedelta(minutes=53), ending="abandoned", retries=0)
    episode(HOUR + timedelta(minutes=54), ending="abandoned", retries=2)
    episode(HOUR + timedelta(minutes=55), ending="open", variant="terse")
    event(later + timedelta(minutes=1), attempt=1)  # the retry that recovered, in the next bucket

    rollups.recompute_bucket(HOUR)
    rollups.recompute_bucket(later)

    row = rows(HOUR)[("send_email", "MISSING_PARAMETER", "friendly", "token:1")]
    assert (row.episodes, row.recovered, row.first_retry_recovered) == (5, 2, 1)
    assert (row.exhausted, row.abandoned, row.abandoned_without_retry) == (1, 2, 1)
    assert row.calls == 0
    assert rows(HOUR)[("send_email", "MISSING_PARAMETER", "terse", "token:1")].episodes == 1
    next_bucket = rows(later)
    assert list(next_bucket) == [("send_email", "", "", "token:1")]
    assert next_bucket[("send_email", "", "", "token:1")].episodes == 0


def test_recovered_episodes_bin_their_resolution_time_in_the_cell_they_started_in():
    bounds = rollups.RESOLUTION_BOUNDS_SECONDS
    for seconds in (3.0, 40.0, 40.0, 900.0):
        started = HOUR + timedelta(minutes=10)
        episode(started, ending="recovered", recovered_at_attempt=1, retries=1, resolution_seconds=seconds)
    episode(HOUR + timedelta(minutes=20), ending="exhausted", retries=3)
    episode(HOUR + timedelta(minutes=21), ending="abandoned", retries=1)
    episode(HOUR + timedelta(minutes=22), ending="recovered", retries=1, recovered_at_attempt=1, variant="terse",
            resolution_seconds=200_000.0)  # fmt: skip

    rollups.recompute_bucket(HOUR)

    row = rows(HOUR)[("send_email", "MISSING_PARAMETER", "friendly", "token:1")]
    assert len(row.resolution_histogram) == len(bounds) + 1
    assert sum(row.resolution_histogram) == row.recovered == 4  # exhausted and abandoned episodes have none
    first_bin = [next(i for i, bound in enumerate(bounds) if seconds <= bound) for seconds in (3.0, 40.0, 900.0)]
    assert [row.resolution_histogram[i] for i in first_bin] == [1, 2, 1]
    terse = rows(HOUR)[("send_email", "MISSING_PARAMETER", "terse", "token:1")]
    assert terse.resolution_histogram[-1] == 1  # beyond a day: the overflow bin
    # The reading copy carries the same bins as columns, and so does the day's sum.
    for span in (RollupSummary.Span.BUCKET, RollupSummary.Span.DAY):
        summary = RollupSummary.objects.get(span=span, variant="friendly")
        assert summary.resolution_histogram == row.resolution_histogram


def test_recomputing_a_bucket_gives_identical_rows():
    for minute in range(10):
        event(HOUR + timedelta(minutes=minute), latency_ms=minute * 3.7, client=f"token:{minute % 3}")
        event(HOUR + timedelta(minutes=minute), outcome="error", code="RATE_LIMITED", variant="default")
    episode(HOUR, ending="abandoned")

    def snapshot():
        return sorted(
            Rollup.objects.filter(bucket=HOUR).values_list(
                *CELL_FIELDS, "calls", "errors", "episodes", "abandoned", "latency_sum_ms", "latency_histogram"
            )
        )

    rollups.recompute_bucket(HOUR)
    first = snapshot()
    rollups.recompute_bucket(HOUR)

    assert snapshot() == first
    assert len(first) == 5  # three clients' calls, the errors, the episode's code and variant
    assert Rollup.objects.count() == 5


def test_recomputing_replaces_rows_of_a_bucket_whose_events_changed():
    stale = event(HOUR, outcome="error", code="RATE_LIMITED")
    rollups.recompute_bucket(HOUR)
    stale.delete()
    event(HOUR, tool="search")

    rollups.recompute_bucket(HOUR)

    assert list(rows(HOUR)) == [("search", "", "", "token:1")]


def test_each_day_is_summed_into_a_daily_rollup():
    event(HOUR, latency_ms=2.0)
    event(HOUR + timedelta(hours=3), latency_ms=4.0)
    event(HOUR + timedelta(hours=3), outcome="error", code="RATE_LIMITED")
    rollups.recompute_bucket(HOUR)
    rollups.recompute_bucket(HOUR + timedelta(hours=3))

    day = DailyRollup.objects.get(bucket=datetime(2026, 11, 20, tzinfo=UTC), code="")
    assert (day.calls, day.latency_sum_ms, sum(day.latency_histogram)) == (2, 6.0, 2)
    assert DailyRollup.objects.get(code="RATE_LIMITED").errors == 1


def test_compute_due_recomputes_changed_buckets_and_keeps_its_watermark_in_the_database():
    now = timezone.now()
    old = event(now - timedelta(days=2))
    OutcomeRecord.objects.filter(pk=old.pk).update(ingested_at=now - timedelta(days=2))

    assert rollups.compute_due(now=now) == 2  # the first run: every bucket with events, and the current one
    assert RollupState.objects.get(name=rollups.JOB_NAME).watermark == now
    assert Rollup.objects.filter(bucket=rollups.bucket_start(old.occurred_at)).exists()

    late = event(now - timedelta(days=3))  # a reporter's late event, ingested now
    later = now + timedelta(minutes=30)
    assert rollups.compute_due(now=later) == 2  # its bucket and the current one; not the first event's
    assert Rollup.objects.filter(bucket=rollups.bucket_start(late.occurred_at)).exists()
    assert RollupState.objects.get(name=rollups.JOB_NAME).watermark == later


def test_compute_due_recomputes_the_start_bucket_of_an_episode_that_ended():
    now = timezone.now()
    started = now - timedelta(days=1)
    opened = episode(started, ending="open", last_at=started)
    rollups.compute_due(now=now)
    assert Rollup.objects.get(bucket=rollups.bucket_start(started)).abandoned == 0

    Episode.objects.filter(pk=opened.pk).update(ending="abandoned", ended_at=now + timedelta(minutes=1))
    assert rollups.compute_due(now=now + timedelta(minutes=5)) == 2

    assert Rollup.objects.get(bucket=rollups.bucket_start(started)).abandoned == 1


def test_compute_due_with_nothing_new_recomputes_only_the_current_bucket():
    now = timezone.now()
    rollups.compute_due(now=now - timedelta(hours=1))

    assert rollups.compute_due(now=now + timedelta(hours=1)) == 1


def test_the_summaries_the_metrics_read_match_the_rollups():
    for minute in range(5):
        event(HOUR + timedelta(minutes=minute), latency_ms=2.0**minute, client=f"token:{minute % 2}")
    episode(HOUR, ending="recovered", recovered_at_attempt=1, retries=1)
    rollups.recompute_bucket(HOUR)

    def cells(rows):
        return {
            tuple(getattr(r, f) for f in CELL_FIELDS): (r.calls, r.episodes, r.recovered, r.latency_histogram)
            for r in rows
        }

    summaries = RollupSummary.objects.filter(span=RollupSummary.Span.BUCKET, bucket=HOUR)
    assert cells(summaries) == cells(Rollup.objects.filter(bucket=HOUR))
    assert len(cells(summaries)) == 3


def test_compute_due_recomputes_the_start_bucket_of_an_episode_whose_retry_was_ingested():
    now = timezone.now()
    started = now - timedelta(days=2)
    opened = episode(started, ending="open", last_at=started)
    rollups.compute_due(now=now)
    # The retry that recovered it, reported late: the episode's last call and end are as old as the retry.
    retry_at = started + timedelta(minutes=1)
    Episode.objects.filter(pk=opened.pk).update(
        ending="recovered", recovered_at_attempt=1, retries=1, last_at=retry_at, ended_at=retry_at
    )
    event(retry_at, attempt=1, episode=opened)

    rollups.compute_due(now=now + timedelta(minutes=10))

    assert Rollup.objects.get(bucket=rollups.bucket_start(started), code="MISSING_PARAMETER").recovered == 1


def test_an_episode_closed_long_after_its_window_is_still_rolled_up():
    # The closer dates ``ended_at`` back to the end of the retry window; beat may have been down for hours.
    from errcatalog.outcomes import ingest
    from errcatalog.outcomes.episode_store import episode_close_abandoned
    from errcatalog.outcomes.events import OutcomeEvent as Event

    started = timezone.now() - timedelta(hours=3)
    ingest.ingest_events([Event(tool="send_email", outcome="error", code="NETWORK_ERROR", ts=started.timestamp())])
    Episode.objects.update(changed_at=started)  # as if ingested back then
    OutcomeRecord.objects.update(ingested_at=started)
    rollups.compute_due()
    cell = Rollup.objects.get(bucket=rollups.bucket_start(started), code="NETWORK_ERROR")
    assert (cell.episodes, cell.abandoned) == (1, 0)

    assert episode_close_abandoned() == 1
    rollups.compute_due()
    cell = Rollup.objects.get(bucket=rollups.bucket_start(started), code="NETWORK_ERROR")
    assert (cell.episodes, cell.abandoned, cell.abandoned_without_retry) == (1, 1, 1)
