"""Metrics and outcome reports: who may read the metrics and their answer, and a reporter's batch of outcome events,
checked, namespaced by its token and handed to the recorder.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, permissions, status, throttling
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from errcatalog.access import scopes
from errcatalog.access.models import ClientToken
from errcatalog.outcomes import recorder
from errcatalog.outcomes.events import REPORTER_CLIENT_PREFIX, InvalidEvent, OutcomeEvent, from_wire, reporter_client
from errcatalog.outcomes.metrics import WINDOWS, MetricsStoreUnavailable, compute_metrics
from errcatalog.web.api import examples
from errcatalog.web.api.metrics_filters import UNKNOWN_FILTER_MESSAGES, unknown_metrics_filters
from errcatalog.web.api.pagination import refuse_paging
from errcatalog.web.api.permissions import InsufficientScope
from errcatalog.web.api.serializers.errors import ApiErrorSerializer
from errcatalog.web.api.serializers.outcomes import (
    MetricsQuerySerializer,
    MetricsSerializer,
    OutcomeBatchAcceptedSerializer,
    OutcomeBatchSerializer,
)
from errcatalog.web.api.views.errors import READ_ERRORS

# A reporter sends at most this many events per request: 1,000 wire events are about 300 KB of JSON.
MAX_EVENTS_PER_BATCH = 1000
# Listing every problem of a 1,000-event batch helps nobody; the first ones show what to fix.
MAX_LISTED_PROBLEMS = 50
# How long a reporter should wait before sending again when the outcome buffer is unavailable.
RETRY_AFTER_SECONDS = 5
# ``InvalidEvent`` messages start with the field they are about ("ts: must be ..."), always one of ours.
_FIELD_PROBLEM = re.compile(r"^([a-z_]{1,32}): (.+)$", re.DOTALL)
_CLIENT_MAX_LENGTH = 128  # OutcomeEvent.client and Episode.client
# The UUID namespace of reporters' event IDs (``reporter_event_id``); fixed forever, or resent batches would be
# stored twice.
REPORTER_EVENT_NAMESPACE = uuid.UUID("5f0d8a52-6c8e-4d59-9a55-3a0f1f6c2b7e")


class MetricsReadAccess(permissions.BasePermission):
    """A staff session (who may see the dashboard), a token created to read metrics, or a staff user's token.

    Metrics name tools, clients and error rates across every caller, so an ordinary MCP or catalog key does not
    read them: a monitoring key is created for that (admin, or ``token_create --metrics``).
    """

    message = "Metrics are for staff accounts and for tokens created with metrics read access."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if isinstance(request.auth, ClientToken) and request.auth.can_read_metrics:
            return True
        # An OAuth token reads metrics only with metrics:read, whoever its user is (granted to staff only).
        if isinstance(request.auth, ClientToken) and request.auth.is_grant:
            if user.is_staff:
                raise InsufficientScope(self.message, request, needed=scopes.METRICS_READ)
            return False
        return bool(user.is_staff)


class ReporterTokenAccess(permissions.BasePermission):
    """Outcomes are reported with a client token created to report them: the token names the reporter, whose
    clients it namespaces. Reports feed the metrics everyone reads, so an ordinary MCP or catalog key sends none."""

    message = "Report outcomes with a client token created with outcome reporting rights (Authorization: Bearer <key>)."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ClientToken) and request.auth.can_report_outcomes


class OutcomeReportThrottle(throttling.SimpleRateThrottle):
    """At most ``OUTCOME_REPORTS_PER_MINUTE`` requests per reporting token, counted in the shared cache (Redis when
    configured, so across processes); over it, 429 with Retry-After."""

    scope = "outcome_reports"

    def get_rate(self) -> str | None:
        per_minute = settings.ERRCATALOG["OUTCOME_REPORTS_PER_MINUTE"]
        return f"{per_minute}/min" if per_minute else None

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, ClientToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class OutcomeBufferUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "outcomes_unavailable"
    default_detail = "Outcome recording is unavailable right now; send the batch again later."
    # DRF's exception handler turns ``wait`` into a Retry-After header.
    wait = RETRY_AFTER_SECONDS


class OutcomeBatchTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = f"The request body is too large; send at most {MAX_EVENTS_PER_BATCH} events per request."


class MetricsUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "metrics_unavailable"
    default_detail = "The metrics store is unavailable right now; try again later."
    wait = RETRY_AFTER_SECONDS


METRICS_NOT_PAGED_MESSAGE = (
    "The metrics answer is one object, not a list of pages: leave out limit, offset, page_size and page. Narrow it "
    "with window and the filters instead."
)


class MetricsView(APIView):
    permission_classes = [MetricsReadAccess]

    @extend_schema(
        tags=["metrics"],
        summary="Outcome metrics",
        description=(
            "Calls, errors, retry and interactive-error rates, latency percentiles, their time series, breakdowns "
            "by code, tool, client and variant, the variant comparison and recent episodes over a window: 1h in "
            "minute buckets (read from the events, up to date as soon as they are ingested), 24h in the rollups' "
            "buckets (an hour by default), 7d and 30d in days (read from the rollups). Filters are exact matches; "
            "an empty filter is no filter. A filter value that names nothing known is a 400 naming the filter, "
            "not an answer of zeros: known are a value some recorded outcome has (rolled up within a minute of "
            "the call), and for tool a tool the gateway serves (`<prefix>__<tool>`) or one with a parameter hint, "
            "for code an error code of the catalog, for variant a template variant's name, for upstream a "
            "configured upstream, for client a client token's key (`token:<id>`). A known value with nothing in "
            "the window answers zeros. The answer is one object, not paged: limit, offset, page_size or page is "
            "a 400. Rate definitions: "
            "error_rate = errors / calls; interactive_error_rate = interactive_errors / errors; "
            "retry_success_rate = recovered / retried_episodes; first_retry_success_rate = "
            "first_retry_recovered / retried_episodes. For staff sessions, tokens created with metrics read "
            "access (admin, or `token_create --metrics`) and tokens of staff users; other callers get 403. "
            "Answers 503 with Retry-After while the metrics store (Redis or the database) is unavailable."
        ),
        parameters=[MetricsQuerySerializer],
        responses={200: MetricsSerializer, 400: ApiErrorSerializer, **READ_ERRORS, 503: ApiErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        refuse_paging(request, METRICS_NOT_PAGED_MESSAGE)
        query = MetricsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = query.filters()
        try:
            metrics = compute_metrics(query.validated_data["window"], **filters)
            # An answer with calls or episodes in it matched every filter; only an empty one may have a filter
            # that names nothing (a typo), which is then said instead of answered as zeros.
            totals = metrics["totals"]
            answered = totals["calls"] or totals["episodes"] or metrics["recent_episodes"]
            unknown = [] if answered else unknown_metrics_filters(filters)
        except ValueError:
            raise exceptions.ValidationError({"window": [f"Use one of {', '.join(WINDOWS)}."]}) from None
        except MetricsStoreUnavailable:
            raise MetricsUnavailable() from None
        if unknown:
            raise exceptions.ValidationError({name: [UNKNOWN_FILTER_MESSAGES[name]] for name in unknown})
        return Response(metrics)


class OutcomeBatchView(APIView):
    permission_classes = [ReporterTokenAccess]
    throttle_classes = [OutcomeReportThrottle]

    @extend_schema(
        tags=["outcomes"],
        summary="Report outcomes of an external MCP server",
        description=(
            f"Takes up to {MAX_EVENTS_PER_BATCH} outcome events for recording, all or none: one invalid event "
            "refuses the batch, naming each problem by its path (events.3.ts). Clients are namespaced by the "
            f"token: client `ide` is stored as `{REPORTER_CLIENT_PREFIX}<token id>/ide`, no client as "
            f"`{REPORTER_CLIENT_PREFIX}<token id>`. Event ids are "
            "namespaced by the token too: each is stored under a UUID derived from the token and the id sent, so "
            "a batch may be sent again after a failure with the same token and is stored once, while the same id "
            "from another token is another event and can never claim or suppress it. Needs a token created with "
            "outcome reporting rights (403 otherwise), reporting only tools the token may call (403 naming the "
            "events otherwise), at a limited rate per token (429 with Retry-After). Reported outcomes show in the "
            "metrics but count towards adaptive allocation only for tokens staff opted in. Answers 503 with "
            "Retry-After while the outcome buffer is unavailable, or while reported events fill half of it (the "
            "other half is kept for the endpoint's own calls)."
        ),
        request=OutcomeBatchSerializer,
        examples=examples.OUTCOMES,
        responses={
            202: OutcomeBatchAcceptedSerializer,
            400: ApiErrorSerializer,
            401: ApiErrorSerializer,
            403: ApiErrorSerializer,
            413: ApiErrorSerializer,
            429: ApiErrorSerializer,
            503: ApiErrorSerializer,
        },
    )
    def post(self, request: Request) -> Response:
        try:
            payload = request.data
        except RequestDataTooBig:
            # Django refuses bodies over DATA_UPLOAD_MAX_MEMORY_SIZE; answered in the API's shape, not as HTML.
            raise OutcomeBatchTooLarge() from None
        events = _outcome_batch(payload, token=request.auth)
        if events:
            try:
                recorder.submit(events)
            except recorder.BufferUnavailable:
                raise OutcomeBufferUnavailable() from None
        return Response({"accepted": len(events)}, status=status.HTTP_202_ACCEPTED)


def _outcome_batch(payload: Any, *, token: ClientToken) -> list[OutcomeEvent]:
    """Every event of the batch checked and namespaced by ``token``; ValidationError listing the problems."""
    if not isinstance(payload, dict):
        raise exceptions.ValidationError({"non_field_errors": ['Send an object: {"events": [...]}.']})
    if set(payload) - {"events"}:
        raise exceptions.ValidationError({"non_field_errors": ['The only field is "events".']})
    wire_events = payload.get("events")
    if not isinstance(wire_events, list):
        raise exceptions.ValidationError({"events": ["Send a list of events."]})
    if len(wire_events) > MAX_EVENTS_PER_BATCH:
        raise exceptions.ValidationError({"events": [f"Send at most {MAX_EVENTS_PER_BATCH} events per request."]})
    events: list[OutcomeEvent] = []
    problems: dict[str, list[str]] = {}
    for index, wire in enumerate(wire_events):
        try:
            events.append(_namespaced(from_wire(wire), token=token))
        except InvalidEvent as problem:
            if len(problems) < MAX_LISTED_PROBLEMS:
                path, message = _problem_path(index, str(problem))
                problems.setdefault(path, []).append(message)
            else:
                problems.setdefault("events", ["More events have problems; fix the ones listed and send again."])
    if problems:
        raise exceptions.ValidationError(problems)
    outside = [str(index) for index, event in enumerate(events) if not token.allows_tool(event.tool)]
    if outside:
        # Positions only: the tool names are the reporter's own text.
        listed = ", ".join(outside[:MAX_LISTED_PROBLEMS])
        raise exceptions.PermissionDenied(f"This token may report only the tools it may call; not events {listed}.")
    return events


def reporter_event_id(token: ClientToken, event_id: str) -> str:
    """The stored ID of a reporter's event: a name-based UUID (v5) of the token and the ID the reporter sent.

    Event IDs make ingest idempotent, so an ID one reporter could choose freely would let it claim (and so
    suppress) another reporter's events, or this endpoint's own. Derived per token, the same reporter sending the
    same ID again gets the same stored ID (a resent batch is still stored once), while another token's identical
    ID is a different event; finding an ID that maps onto someone else's would mean inverting SHA-1.
    """
    return uuid.uuid5(REPORTER_EVENT_NAMESPACE, f"token:{token.pk}/{event_id}").hex


def _namespaced(event: OutcomeEvent, *, token: ClientToken) -> OutcomeEvent:
    """The event under the reporter's token: its client and its ID, so no reporter can pose as or claim another's."""
    client = reporter_client(token.pk, event.client)
    if len(client) > _CLIENT_MAX_LENGTH:
        most = _CLIENT_MAX_LENGTH - len(reporter_client(token.pk, None)) - 1
        raise InvalidEvent(f"client: must be at most {most} characters")
    return dataclasses.replace(event, id=reporter_event_id(token, event.id), client=client, source="api")


def _problem_path(index: int, message: str) -> tuple[str, str]:
    match = _FIELD_PROBLEM.match(message)
    if match:
        return f"events.{index}.{match.group(1)}", match.group(2)
    return f"events.{index}", message
