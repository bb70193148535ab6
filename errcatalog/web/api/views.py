"""REST API views: parse the request, call one selector, service or pure function, answer."""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, permissions, status, throttling, viewsets
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from errcatalog.access import scopes
from errcatalog.access.models import ClientToken
from errcatalog.catalog import selectors, services
from errcatalog.catalog.models import Category, ClassificationRule, ErrorCode, Kind, ParameterHint, TemplateVariant
from errcatalog.catalog.previews import render_preview
from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.outcomes import recorder
from errcatalog.outcomes.events import REPORTER_CLIENT_PREFIX, InvalidEvent, OutcomeEvent, from_wire, reporter_client
from errcatalog.outcomes.metrics import WINDOWS, MetricsStoreUnavailable, compute_metrics
from errcatalog.render.classify import classification, known
from errcatalog.web.api import examples
from errcatalog.web.api.metrics_filters import UNKNOWN_FILTER_MESSAGES, unknown_metrics_filters
from errcatalog.web.api.pagination import refuse_paging
from errcatalog.web.api.permissions import (
    CatalogModelPermissions,
    CatalogReadAccess,
    InsufficientScope,
    catalog_write_denial,
    permission_name,
)
from errcatalog.web.api.serializers import (
    ApiErrorSerializer,
    ClassificationRuleSerializer,
    ClassifyRequestSerializer,
    ClassifyResponseSerializer,
    ErrorCodeSerializer,
    MetricsQuerySerializer,
    MetricsSerializer,
    OutcomeBatchAcceptedSerializer,
    OutcomeBatchSerializer,
    ParameterHintSerializer,
    RenderRequestSerializer,
    RenderResponseSerializer,
)

_READ_ERRORS = {401: ApiErrorSerializer, 403: ApiErrorSerializer}
_WRITE_ERRORS = {400: ApiErrorSerializer, 401: ApiErrorSerializer, 403: ApiErrorSerializer}
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _bool_param(request: Request, name: str) -> bool | None:
    """A boolean filter: None when absent; anything but true/false/1/0 (a blank value too) is a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw.lower() not in _BOOLEANS:
        raise exceptions.ValidationError({name: ["Use true or false."]})
    return _BOOLEANS[raw.lower()]


# What a text filter may hold, as the schema says it: anything but NUL, which no stored value holds.
NO_NUL_PATTERN = r"^[^\x00]*$"


def _text_param(request: Request, name: str) -> str:
    """A text filter: "" when absent; one holding a NUL character is a 400 (PostgreSQL cannot compare such text, and
    no stored value holds one)."""
    raw = request.query_params.get(name, "")
    if "\x00" in raw:
        raise exceptions.ValidationError({name: ["Null characters are not allowed."]})
    return raw


def _choice_param(request: Request, name: str, choices: list[str]) -> str:
    """A filter by one of ``choices``: "" when absent; any other value (a blank one too) is a 400 naming them."""
    raw = request.query_params.get(name)
    if raw is None:
        return ""
    if raw not in choices:
        raise exceptions.ValidationError({name: [f"Use one of {', '.join(choices)}."]})
    return raw


class BodyRequired:
    """POST and PUT need a JSON body: without one DRF reads an empty object, and ``classify/`` answered 200 for a
    failure with no facts at all. (A PATCH without one changes nothing, as its schema allows.) Checked after
    authentication and permissions, so those answer first, and only for a method the view serves (else 405)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        method = (request.method or "").lower()
        if method in ("post", "put") and hasattr(self, method) and request.stream is None:
            raise exceptions.ParseError("Send the request body as a JSON object.", code="empty_body")


def _needs(model, action: str, extra: str = "") -> str:
    return (
        f"Needs the `{permission_name(model, action)}` model permission{extra}; with a client token, also a token "
        "created with catalog write rights (403 otherwise)."
    )


def _crud_schema(
    serializer,
    model,
    *,
    list_parameters: tuple[OpenApiParameter, ...] = (),
    variants: bool = False,
    create_examples: list[OpenApiExample],
    update_examples: list[OpenApiExample],
    partial_update_examples: list[OpenApiExample],
):
    """Documents a catalog viewset with the permission each write needs, the error answers it can give and an
    example of each write (``examples``)."""
    error = ApiErrorSerializer
    nested = {
        "add": " (and `errcatalog.add_templatevariant` for its variants)",
        "change": " (and `errcatalog.add_/change_/delete_templatevariant` for the variants it adds, changes or, "
        "with PUT, removes)",
        "delete": " (and `errcatalog.delete_templatevariant` when it has variants)",
    }
    extra = nested if variants else {}
    return extend_schema_view(
        list=extend_schema(
            tags=["catalog"],
            parameters=list(list_parameters),
            responses={200: serializer(many=True), 400: error, **_READ_ERRORS},
        ),
        retrieve=extend_schema(tags=["catalog"], responses={200: serializer, 404: error, **_READ_ERRORS}),
        create=extend_schema(
            tags=["catalog"],
            description=_needs(model, "add", extra.get("add", "")),
            responses={201: serializer, **_WRITE_ERRORS},
            examples=create_examples,
        ),
        update=extend_schema(
            tags=["catalog"],
            description=_needs(model, "change", extra.get("change", "")),
            responses={200: serializer, 404: error, **_WRITE_ERRORS},
            examples=update_examples,
        ),
        partial_update=extend_schema(
            tags=["catalog"],
            description=_needs(model, "change", extra.get("change", "")),
            responses={200: serializer, 404: error, **_WRITE_ERRORS},
            examples=partial_update_examples,
        ),
        destroy=extend_schema(
            tags=["catalog"],
            description=_needs(model, "delete", extra.get("delete", "")),
            responses={204: None, 404: error, 409: error, **_READ_ERRORS},
        ),
    )


def _require_variant_permissions(request: Request, actions: set[str]) -> None:
    """Nested variants are rows of their own in the admin, with their own permissions: the API asks the same."""
    denial = catalog_write_denial(request.user, TemplateVariant, actions) if actions else None
    if denial is not None:
        raise exceptions.PermissionDenied(denial)


def _variant_actions(error_code: ErrorCode | None, variants: list[dict[str, Any]] | None, *, replace: bool) -> set[str]:
    """What writing ``variants`` to ``error_code`` does to its variant rows: add, change and/or delete."""
    if variants is None:
        return set()
    if error_code is None:
        return {"add"} if variants else set()
    existing = {(v.locale, v.name): v for v in error_code.variants.all()}
    actions: set[str] = set()
    given = set()
    for fields in variants:
        key = (fields.get("locale", ""), fields.get("name", "default"))
        given.add(key)
        current = existing.get(key)
        if current is None:
            actions.add("add")
        elif any(getattr(current, name) != value for name, value in fields.items()):
            actions.add("change")
    if replace and set(existing) - given:
        actions.add("delete")
    return actions


@_crud_schema(
    ErrorCodeSerializer,
    ErrorCode,
    variants=True,
    list_parameters=(
        OpenApiParameter("category", enum=Category.values, description="Only codes of this category."),
        OpenApiParameter("kind", enum=Kind.values, description="Only codes of this kind."),
        OpenApiParameter("active", OpenApiTypes.BOOL, description="Only active (true) or inactive (false) codes."),
    ),
    create_examples=examples.CODE_CREATE,
    update_examples=examples.CODE_UPDATE,
    partial_update_examples=examples.CODE_PARTIAL_UPDATE,
)
class ErrorCodeViewSet(BodyRequired, viewsets.ModelViewSet):
    """Error codes with their template variants, addressed by code (`/api/v1/codes/NOT_FOUND/`)."""

    serializer_class = ErrorCodeSerializer
    permission_classes = [CatalogModelPermissions]
    lookup_field = "code"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.error_code_list(
            category=_choice_param(self.request, "category", Category.values),
            kind=_choice_param(self.request, "kind", Kind.values),
            active=_bool_param(self.request, "active"),
        )

    def perform_create(self, serializer: ErrorCodeSerializer) -> None:
        data = serializer.validated_data
        _require_variant_permissions(self.request, _variant_actions(None, data.get("variants"), replace=True))
        serializer.instance = services.error_code_create(**data)

    def perform_update(self, serializer: ErrorCodeSerializer) -> None:
        replace = not serializer.partial
        data = serializer.validated_data
        _require_variant_permissions(
            self.request, _variant_actions(serializer.instance, data.get("variants"), replace=replace)
        )
        serializer.instance = services.error_code_update(
            error_code=serializer.instance, replace_variants=replace, **data
        )

    def perform_destroy(self, instance: ErrorCode) -> None:
        # Deleting a code deletes its variants with it; the admin asks for their delete permission too.
        if instance.variants.exists():
            _require_variant_permissions(self.request, {"delete"})
        services.error_code_delete(error_code=instance)


@_crud_schema(
    ParameterHintSerializer,
    ParameterHint,
    list_parameters=(OpenApiParameter("tool", description="Only hints for this tool.", pattern=NO_NUL_PATTERN),),
    create_examples=examples.HINT_CREATE,
    update_examples=examples.HINT_UPDATE,
    partial_update_examples=examples.HINT_PARTIAL_UPDATE,
)
class ParameterHintViewSet(BodyRequired, viewsets.ModelViewSet):
    """How to ask for a tool's parameters."""

    serializer_class = ParameterHintSerializer
    permission_classes = [CatalogModelPermissions]
    # Ids are ASCII digits, as the schema says: int() would also read " 5" or "\t5" as 5.
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        return selectors.parameter_hint_list(tool=_text_param(self.request, "tool"))

    def perform_create(self, serializer: ParameterHintSerializer) -> None:
        serializer.instance = services.parameter_hint_create(**serializer.validated_data)

    def perform_update(self, serializer: ParameterHintSerializer) -> None:
        serializer.instance = services.parameter_hint_update(hint=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance: ParameterHint) -> None:
        services.parameter_hint_delete(hint=instance)


@_crud_schema(
    ClassificationRuleSerializer,
    ClassificationRule,
    create_examples=examples.RULE_CREATE,
    update_examples=examples.RULE_UPDATE,
    partial_update_examples=examples.RULE_PARTIAL_UPDATE,
)
class ClassificationRuleViewSet(BodyRequired, viewsets.ModelViewSet):
    """Classification rules, in the order they are tried."""

    serializer_class = ClassificationRuleSerializer
    permission_classes = [CatalogModelPermissions]
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        return selectors.classification_rule_list()

    def perform_create(self, serializer: ClassificationRuleSerializer) -> None:
        serializer.instance = services.classification_rule_create(**serializer.validated_data)

    def perform_update(self, serializer: ClassificationRuleSerializer) -> None:
        serializer.instance = services.classification_rule_update(rule=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance: ClassificationRule) -> None:
        services.classification_rule_delete(rule=instance)


class RenderView(BodyRequired, APIView):
    permission_classes = [CatalogReadAccess]

    @extend_schema(
        tags=["render"],
        summary="Render a failure in one face",
        description=(
            "Renders a catalog code as the MCP endpoint would, in any face: tool_result (format markdown, json or "
            "both), jsonrpc, markdown, agent, anatomy or provider. `draft` previews unsaved variant text without "
            "saving it; with a `variant` name the code does not have yet it previews a new variant."
        ),
        request=RenderRequestSerializer,
        responses={200: RenderResponseSerializer, **_WRITE_ERRORS},
        examples=examples.RENDER,
    )
    def post(self, request: Request) -> Response:
        snapshot = catalog_snapshot()
        serializer = RenderRequestSerializer(data=request.data, context={"snapshot": snapshot})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        preview = render_preview(
            snapshot,
            serializer.failure(),
            face=data["face"],
            options=serializer.face_options(),
            variant=data["variant"],
            locale=data["locale"],
            draft=data["draft"],
            max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"],
        )
        return Response(preview)


class ClassifyView(BodyRequired, APIView):
    permission_classes = [CatalogReadAccess]

    @extend_schema(
        tags=["classify"],
        summary="Classify a raw failure",
        description="Maps a failure's exception class, HTTP status, JSON-RPC code, upstream, tool and transport, and "
        "for an upstream's failure its kind and text, to a catalog code by the classification rules, in their order; "
        "with no matching rule the answer is UNKNOWN_ERROR. Send an upstream's failure text to try rules with a "
        "pattern: it is redacted as the gateway redacts it, only chooses the code, and is never sent back.",
        request=ClassifyRequestSerializer,
        responses={200: ClassifyResponseSerializer, **_WRITE_ERRORS},
        examples=examples.CLASSIFY,
    )
    def post(self, request: Request) -> Response:
        serializer = ClassifyRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        snapshot = catalog_snapshot()
        found = classification(snapshot, serializer.facts())
        entry = snapshot.entry(found.code)
        return Response(
            {
                "code": entry.code,
                "category": entry.category,
                "kind": entry.kind,
                "retryable": entry.retryable,
                "system": entry.system,
                "classified": found.rule is not None and known(entry.code, found.rule),
            }
        )


# --- Metrics and outcomes ---------------------------------------------------------------------------------

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
        responses={200: MetricsSerializer, 400: ApiErrorSerializer, **_READ_ERRORS, 503: ApiErrorSerializer},
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


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
@authentication_classes([])
@permission_classes([AllowAny])
def endpoint_not_found(request: Request) -> Response:
    """Unknown paths under the API answer in the API's error shape rather than with Django's HTML page."""
    raise exceptions.NotFound(
        "There is no API endpoint at this path; API paths end with a slash, as in /api/v1/codes/."
    )


# The API root's links, by URL name, in the order a newcomer would read them.
API_ROOT_LINKS = {
    "codes": "errorcode-list",
    "hints": "parameterhint-list",
    "rules": "classificationrule-list",
    "render": "api-render",
    "classify": "api-classify",
    "metrics": "api-metrics",
    "outcomes": "api-outcomes",
    "schema": "api-schema",
    "docs": "api-docs",
}


# ``/api/v1/``: links to the endpoints, in DRF's API-root style, so the bare prefix is a starting point. Open to
# anyone: it names paths that the schema and the docs page publish already; each endpoint checks credentials itself.
# The docstring is the description the browsable API shows a visitor, so it is written for them.
@extend_schema(exclude=True)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
def api_root(request: Request) -> Response:
    """The errcatalog REST API: read and edit the error catalog (codes with their variants, parameter hints,
    classification rules), preview how a failure is rendered, classify a raw failure, read outcome metrics and
    report the outcomes of your own MCP servers.

    Each link below is an endpoint. Send a client token as `Authorization: Bearer <key>`, or sign in to the admin
    first. The API docs (`docs`) list every operation with the rights it needs and an example you can send with
    "Try it out"; `schema` is the OpenAPI document.
    """
    return Response({name: reverse(url_name, request=request) for name, url_name in API_ROOT_LINKS.items()})
