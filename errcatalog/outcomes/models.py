"""Stored outcomes: one row per call (``OutcomeRecord``), one per error episode, and the rollups the dashboard reads.

Imported by ``errcatalog.models`` so Django registers them with the ``errcatalog`` app.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from errcatalog.outcomes import episodes as episode_rules


class Outcome(models.TextChoices):
    OK = "ok", "Succeeded"
    ERROR = "error", "Error"
    INPUT_REQUIRED = "input_required", "Waiting for input"


class Episode(models.Model):
    """An error and the retries that followed it: same tool, same client (and session), within the window."""

    class Ending(models.TextChoices):
        # The values are the rules' own (``errcatalog.outcomes.episodes``), so the two cannot drift apart.
        OPEN = episode_rules.OPEN, "Open"
        RECOVERED = episode_rules.RECOVERED, "Recovered"  # a retry succeeded
        EXHAUSTED = episode_rules.EXHAUSTED, "Exhausted"  # retry number MAX_ATTEMPTS (3) failed too
        ABANDONED = episode_rules.ABANDONED, "Abandoned"  # the window passed without a success

    tool = models.CharField(max_length=128)
    client = models.CharField(max_length=128, blank=True)
    session = models.CharField(max_length=128, blank=True)
    # The error that opened the episode: its code and wording are what the episode's ending is credited to.
    code = models.CharField(max_length=64)
    variant = models.CharField(max_length=40, blank=True)
    interactive = models.BooleanField(default=False)
    sentry_event_id = models.CharField(max_length=32, blank=True)
    # The upstream MCP server whose tool was called (the gateway); blank for this project's own tools.
    upstream = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField()
    last_at = models.DateTimeField(help_text="Time of the episode's latest call.")
    ended_at = models.DateTimeField(null=True, blank=True)
    retries = models.PositiveSmallIntegerField(default=0, help_text="Calls after the first error.")
    recovered_at_attempt = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Which retry succeeded (1 = the first retry)."
    )
    ending = models.CharField(max_length=16, choices=Ending.choices, default=Ending.OPEN)
    # The question protocol's "user resolution time": how long the caller took to get what it asked for after the
    # error. Stored (not derived from the two times at read time) so rollups can bin it in SQL, portably.
    resolution_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="Recovered episodes: seconds from the first failed call to the recovering call.",
    )
    # Set by every write (ingest and the abandoned-episode closer): rollups find the episodes that changed since
    # their last run by it, whatever times the episode itself records.
    changed_at = models.DateTimeField(default=timezone.now, db_default=Now())

    class Meta:
        indexes = [
            models.Index(fields=["ending", "last_at"], name="episode_ending_last"),
            models.Index(fields=["changed_at"], name="episode_changed"),
            models.Index(fields=["started_at"], name="episode_started"),
            models.Index(fields=["tool", "client", "session", "ending"], name="episode_caller"),
        ]
        constraints = [
            # Several ingest workers must agree: a caller has at most one open episode per tool.
            models.UniqueConstraint(
                fields=["tool", "client", "session"], condition=Q(ending="open"), name="episode_one_open_per_caller"
            ),
            models.CheckConstraint(
                condition=Q(recovered_at_attempt__isnull=True) | Q(ending="recovered"),
                name="episode_recovered_attempt_only_when_recovered",
            ),
            models.CheckConstraint(
                condition=Q(resolution_seconds__isnull=True) | (Q(ending="recovered") & Q(resolution_seconds__gte=0)),
                name="episode_resolution_only_when_recovered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.code} ({self.ending})"


class OutcomeRecord(models.Model):
    """A stored ``events.OutcomeEvent``: one tool call's outcome as ingest wrote it, with its episode and attempt.

    The primary key is the event ID: inserting the same event twice is a no-op. Named apart from the event it
    stores (which travels the wire and never touches the database); the table keeps its original name.
    """

    class Source(models.TextChoices):
        MCP = "mcp", "This endpoint"
        API = "api", "Reported through the API"

    id = models.UUIDField(primary_key=True)
    occurred_at = models.DateTimeField()
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.MCP)
    tool = models.CharField(max_length=128)
    client = models.CharField(max_length=128, blank=True)
    session = models.CharField(max_length=128, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    code = models.CharField(max_length=64, blank=True)
    variant = models.CharField(max_length=40, blank=True)
    # The locale of the variant served (as the catalog spells it); blank for the catalog default and for events
    # recorded before locales were.
    locale = models.CharField(max_length=16, blank=True, default="")
    # The upstream MCP server whose tool was called (the gateway); blank for this project's own tools.
    upstream = models.CharField(max_length=64, blank=True, default="")
    interactive = models.BooleanField(default=False)
    elicitation = models.CharField(max_length=16, blank=True)
    # 0: not a retry; n: the n-th call after the error that opened ``episode``.
    attempt = models.PositiveSmallIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    sentry_event_id = models.CharField(max_length=32, blank=True)
    # The call's OpenTelemetry trace (32 hex digits) when tracing is on (config.tracing): the outcome's link to it.
    trace_id = models.CharField(max_length=32, blank=True, default="")
    episode = models.ForeignKey(Episode, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    ingested_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "errcatalog_outcomeevent"
        indexes = [
            models.Index(fields=["occurred_at"], name="outcome_occurred"),
            # Rollups find the buckets that changed since their last run by ingestion time.
            models.Index(fields=["ingested_at"], name="outcome_ingested"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(outcome__in=Outcome.values), name="outcome_known"),
            models.CheckConstraint(condition=~Q(outcome="error") | ~Q(code=""), name="outcome_error_has_code"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.outcome} {self.code}".strip()


class RollupCounts(models.Model):
    """One cell of a rollup (tool, code, variant, client and upstream) and its counters, shared by both rollup
    tables. A tool is served by one upstream at a time, so the upstream adds almost no cells."""

    tool = models.CharField(max_length=128)
    code = models.CharField(max_length=64, blank=True, help_text="Blank for successful calls.")
    variant = models.CharField(max_length=40, blank=True)
    client = models.CharField(max_length=128, blank=True)
    upstream = models.CharField(max_length=64, blank=True, default="")
    calls = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    interactive_errors = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0, help_text="Calls that were retries (attempt 1 or more).")
    episodes = models.PositiveIntegerField(default=0, help_text="Error episodes opened.")
    recovered = models.PositiveIntegerField(default=0)
    first_retry_recovered = models.PositiveIntegerField(default=0)
    exhausted = models.PositiveIntegerField(default=0)
    abandoned = models.PositiveIntegerField(default=0)
    abandoned_without_retry = models.PositiveIntegerField(default=0)
    latency_sum_ms = models.FloatField(default=0.0)

    class Meta:
        abstract = True


class Rollup(RollupCounts):
    """Counts for one time bucket, tool, code, variant and client, recomputed whole (idempotently) by beat.

    Calls are counted in the bucket they happened in; an episode's ending is credited to the bucket, code and
    variant of the error that opened it.
    """

    bucket = models.DateTimeField(help_text="Start of the bucket (UTC).")
    # Counts per latency bin (errcatalog.outcomes.rollups.LATENCY_BOUNDS_MS): percentiles over any window.
    latency_histogram = models.JSONField(default=list)
    # Recovered episodes per resolution-time bin (errcatalog.outcomes.rollups.RESOLUTION_BOUNDS_SECONDS).
    resolution_histogram = models.JSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["bucket"], name="rollup_bucket")]
        constraints = [
            models.UniqueConstraint(
                fields=["bucket", "tool", "code", "variant", "client", "upstream"], name="rollup_unique_cell"
            )
        ]

    def __str__(self) -> str:
        return f"{self.bucket:%Y-%m-%d %H:%M} {self.tool} {self.code or 'ok'}"


class RollupState(models.Model):
    """Where the rollup job left off, in the database so it survives restarts and every worker shares it.

    One row per job name; its row lock also keeps two beat workers from recomputing the same buckets at once.
    """

    name = models.CharField(max_length=32, primary_key=True)
    watermark = models.DateTimeField(null=True, blank=True, help_text="Changes up to this time are rolled up.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name} @ {self.watermark}"


# Bins of a latency histogram: errcatalog.outcomes.rollups.LATENCY_BOUNDS_MS (40 bounds) and an overflow bin.
LATENCY_BINS = 41
# Bins of a resolution-time histogram: errcatalog.outcomes.rollups.RESOLUTION_BOUNDS_SECONDS and an overflow bin.
RESOLUTION_BINS = 41


class RollupSummary(RollupCounts):
    """The metrics' reading copy of rollups: per bucket ("bucket") and per UTC day ("day"), bins as columns.

    ``Rollup`` keeps a bucket's latency histogram as a JSON list, and summing JSON elements costs the database
    several times what summing integer columns does, so the rows the metrics read carry one integer column per
    bin (``latency_bin_0`` …, ``resolution_bin_0`` …). Day rows are the sums of the day's bucket rows: 7- and
    30-day windows read 24 times fewer rows. Written with ``Rollup`` by ``errcatalog.outcomes.rollups``, in the same
    transaction.
    """

    class Span(models.TextChoices):
        BUCKET = "bucket", "Rollup bucket"
        DAY = "day", "UTC day"

    span = models.CharField(max_length=8, choices=Span.choices)
    bucket = models.DateTimeField(help_text="Start of the bucket or of the UTC day.")

    class Meta:
        indexes = [models.Index(fields=["span", "bucket"], name="rollupsummary_span_bucket")]
        constraints = [
            models.UniqueConstraint(
                fields=["span", "bucket", "tool", "code", "variant", "client", "upstream"],
                name="rollupsummary_unique_cell",
            )
        ]

    def __str__(self) -> str:
        return f"{self.span} {self.bucket:%Y-%m-%d %H:%M} {self.tool} {self.code or 'ok'}"

    @property
    def latency_histogram(self) -> list[int]:
        return [getattr(self, f"latency_bin_{index}") for index in range(LATENCY_BINS)]

    @property
    def resolution_histogram(self) -> list[int]:
        return [getattr(self, f"resolution_bin_{index}") for index in range(RESOLUTION_BINS)]


for _index in range(LATENCY_BINS):
    RollupSummary.add_to_class(f"latency_bin_{_index}", models.PositiveIntegerField(default=0))
for _index in range(RESOLUTION_BINS):
    RollupSummary.add_to_class(f"resolution_bin_{_index}", models.PositiveIntegerField(default=0))


class _DaySummaries(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(span=RollupSummary.Span.DAY)


class DailyRollup(RollupSummary):
    """The day rows of ``RollupSummary``: per UTC day (``bucket`` is its start), tool, code, variant, client and
    upstream."""

    objects: ClassVar[_DaySummaries] = _DaySummaries()

    class Meta:
        proxy = True
