"""Metrics and outcome reports: the metrics query and its answer, and a reporter's batch of outcome events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

from errcatalog.web.api.serializers.request_fields import TextWithoutNul


def _rate(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=f"{help_text} Null when the denominator is 0.")


class QueryChoiceField(serializers.ChoiceField):
    """A choice in a query string, where a blank value (``window=``) is a value to refuse, not an absent one.

    DRF reads a blank form or query value of an optional field as absent and fills in the default; the schema's
    enum has no blank, so the API refuses one rather than accept what its document says is invalid.
    """

    def get_value(self, dictionary: Mapping[str, Any]) -> Any:
        return dictionary.get(self.field_name, empty)


class MetricsQuerySerializer(serializers.Serializer):
    """The query string of ``GET /api/v1/metrics/``: a window and optional filters, each an exact match."""

    window = QueryChoiceField(
        choices=["1h", "24h", "7d", "30d"],
        required=False,
        default="24h",
        # DRF's own message quotes the value sent; ours names only the choices.
        error_messages={"invalid_choice": "Use one of 1h, 24h, 7d, 30d."},
    )
    tool = TextWithoutNul(max_length=128, required=False, allow_blank=True, default="")
    code = TextWithoutNul(max_length=64, required=False, allow_blank=True, default="")
    client = TextWithoutNul(max_length=128, required=False, allow_blank=True, default="")
    variant = TextWithoutNul(max_length=40, required=False, allow_blank=True, default="")
    upstream = TextWithoutNul(
        max_length=64,
        required=False,
        allow_blank=True,
        default="",
        help_text="An upstream MCP server of the gateway, by name: only calls to its tools.",
    )

    def filters(self) -> dict[str, str | None]:
        """The filters given, blank ones (``tool=``) meaning no filter."""
        return {name: self.validated_data[name] or None for name in ("tool", "code", "client", "variant", "upstream")}


class MetricsWindowSerializer(serializers.Serializer):
    name = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    bucket_seconds = serializers.IntegerField()


class MetricsFiltersSerializer(serializers.Serializer):
    tool = serializers.CharField(allow_null=True)
    code = serializers.CharField(allow_null=True)
    client = serializers.CharField(allow_null=True)
    variant = serializers.CharField(allow_null=True)
    upstream = serializers.CharField(allow_null=True)


class MetricsTargetsSerializer(serializers.Serializer):
    retry_success_rate = serializers.FloatField()
    interactive_error_rate = serializers.FloatField()


class MetricsRowSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    errors = serializers.IntegerField()
    error_rate = _rate("errors / calls.")
    interactive_errors = serializers.IntegerField()
    interactive_error_rate = _rate("interactive_errors / errors.")
    retries = serializers.IntegerField(help_text="Calls that were retries.")
    episodes = serializers.IntegerField(help_text="Error episodes opened.")
    recovered = serializers.IntegerField()
    first_retry_recovered = serializers.IntegerField()
    exhausted = serializers.IntegerField()
    abandoned = serializers.IntegerField()
    abandoned_without_retry = serializers.IntegerField()
    retried_episodes = serializers.IntegerField(help_text="recovered + exhausted + abandoned - abandoned_without_retry")
    retry_success_rate = _rate("recovered / retried_episodes.")
    first_retry_success_rate = _rate("first_retry_recovered / retried_episodes.")
    latency_p50_ms = serializers.FloatField(allow_null=True)
    latency_p95_ms = serializers.FloatField(allow_null=True)
    resolution_p50_seconds = serializers.FloatField(
        allow_null=True,
        help_text="User resolution time, as the question protocol measures it, median: seconds from an episode's "
        "first failed call to the call that recovered it, over recovered episodes; from rollup histograms (about "
        "±20 %). Null without one.",
    )
    resolution_p90_seconds = serializers.FloatField(
        allow_null=True, help_text="User resolution time, 90th percentile (as resolution_p50_seconds)."
    )


class MetricsSeriesPointSerializer(MetricsRowSerializer):
    bucket = serializers.DateTimeField()


class MetricsBreakdownRowSerializer(MetricsRowSerializer):
    key = serializers.CharField()


class MetricsVariantRowSerializer(MetricsBreakdownRowSerializer):
    code = serializers.CharField()
    variant = serializers.CharField()


class MetricsBreakdownsSerializer(serializers.Serializer):
    code = MetricsBreakdownRowSerializer(many=True)
    tool = MetricsBreakdownRowSerializer(many=True)
    client = MetricsBreakdownRowSerializer(many=True)
    upstream = MetricsBreakdownRowSerializer(
        many=True, help_text="Calls to the gateway's upstream MCP servers, by upstream name (none for our own tools)."
    )
    variant = MetricsVariantRowSerializer(many=True)


class VariantResultSerializer(serializers.Serializer):
    variant = serializers.CharField()
    episodes = serializers.IntegerField(help_text="Retried episodes that ended.")
    recovered = serializers.IntegerField()
    first_retry_recovered = serializers.IntegerField()
    retry_success_rate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(help_text="Wilson 95 % interval, lower end.")
    ci_high = serializers.FloatField(help_text="Wilson 95 % interval, upper end.")


class VariantComparisonSerializer(serializers.Serializer):
    code = serializers.CharField()
    variants = VariantResultSerializer(many=True)
    best = serializers.CharField(allow_null=True)
    runner_up = serializers.CharField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()
    verdict = serializers.CharField()


class RecentEpisodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    tool = serializers.CharField()
    upstream = serializers.CharField(help_text="The upstream MCP server of the tool; empty for our own tools.")
    code = serializers.CharField()
    variant = serializers.CharField()
    client = serializers.CharField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    ending = serializers.ChoiceField(choices=["open", "recovered", "exhausted", "abandoned"])
    retries = serializers.IntegerField()
    recovered_at_attempt = serializers.IntegerField(allow_null=True)
    resolution_seconds = serializers.FloatField(
        allow_null=True, help_text="Recovered episodes: seconds from the first failed call to the recovering call."
    )
    sentry_event_id = serializers.CharField()
    sentry_url = serializers.URLField(allow_null=True)


class MetricsSerializer(serializers.Serializer):
    """The answer of ``GET /api/v1/metrics/`` (documentation: the view returns the selector's data as is)."""

    window = MetricsWindowSerializer()
    filters = MetricsFiltersSerializer()
    targets = MetricsTargetsSerializer()
    totals = MetricsRowSerializer()
    series = MetricsSeriesPointSerializer(many=True)
    breakdowns = MetricsBreakdownsSerializer()
    variant_comparison = VariantComparisonSerializer(many=True)
    recent_episodes = RecentEpisodeSerializer(many=True)


class OutcomeBatchSerializer(serializers.Serializer):
    """Documentation of ``POST /api/v1/outcomes/``; the view checks each event with ``events.from_wire``."""

    events = serializers.ListField(
        child=serializers.DictField(),
        max_length=1000,
        help_text="Wire events: id (UUID), ts (Unix seconds, last 7 days), tool, outcome (ok|error|input_required), "
        "and optionally client, session, code (required for errors), variant, locale (the variant's language tag, "
        "e.g. de), upstream (the upstream MCP server's name, lower-case), interactive, latency_ms, "
        "elicitation, sentry_event_id, trace_id (the call's OpenTelemetry trace: 32 lower-case hex digits). Names "
        "are 1-128 letters, digits or _.:@/+-.",
    )


class OutcomeBatchAcceptedSerializer(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="Events taken for recording; stored once each, by event ID.")
