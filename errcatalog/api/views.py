"""REST API views: parse the request, call one selector, service or pure function, answer."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, viewsets
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from errcatalog import selectors, services
from errcatalog.api.permissions import CatalogAccess
from errcatalog.api.serializers import (
    ApiErrorSerializer,
    ClassificationRuleSerializer,
    ClassifyRequestSerializer,
    ClassifyResponseSerializer,
    ErrorCodeSerializer,
    ParameterHintSerializer,
    RenderRequestSerializer,
    RenderResponseSerializer,
)
from errcatalog.classify import classify
from errcatalog.models import Category, Kind
from errcatalog.previews import render_preview
from errcatalog.snapshot import catalog_snapshot

_READ_ERRORS = {401: ApiErrorSerializer, 403: ApiErrorSerializer}
_WRITE_ERRORS = {400: ApiErrorSerializer, 401: ApiErrorSerializer, 403: ApiErrorSerializer}
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _bool_param(request: Request, name: str) -> bool | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if raw.lower() not in _BOOLEANS:
        raise exceptions.ValidationError({name: ["Use true or false."]})
    return _BOOLEANS[raw.lower()]


def _crud_schema(serializer, *, list_parameters: tuple[OpenApiParameter, ...] = ()):
    """Documents a catalog viewset with the error answers each action can give."""
    error = ApiErrorSerializer
    return extend_schema_view(
        list=extend_schema(
            tags=["catalog"], parameters=list(list_parameters), responses={200: serializer(many=True), **_READ_ERRORS}
        ),
        retrieve=extend_schema(tags=["catalog"], responses={200: serializer, 404: error, **_READ_ERRORS}),
        create=extend_schema(tags=["catalog"], responses={201: serializer, **_WRITE_ERRORS}),
        update=extend_schema(tags=["catalog"], responses={200: serializer, 404: error, **_WRITE_ERRORS}),
        partial_update=extend_schema(tags=["catalog"], responses={200: serializer, 404: error, **_WRITE_ERRORS}),
        destroy=extend_schema(tags=["catalog"], responses={204: None, 404: error, 409: error, **_READ_ERRORS}),
    )


@_crud_schema(
    ErrorCodeSerializer,
    list_parameters=(
        OpenApiParameter("category", enum=Category.values, description="Only codes of this category."),
        OpenApiParameter("kind", enum=Kind.values, description="Only codes of this kind."),
        OpenApiParameter("active", OpenApiTypes.BOOL, description="Only active (true) or inactive (false) codes."),
    ),
)
class ErrorCodeViewSet(viewsets.ModelViewSet):
    """Error codes with their template variants, addressed by code (`/api/v1/codes/NOT_FOUND/`)."""

    serializer_class = ErrorCodeSerializer
    permission_classes = [CatalogAccess]
    lookup_field = "code"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        params = self.request.query_params
        return selectors.error_code_list(
            category=params.get("category", ""),
            kind=params.get("kind", ""),
            active=_bool_param(self.request, "active"),
        )

    def perform_create(self, serializer: ErrorCodeSerializer) -> None:
        serializer.instance = services.error_code_create(**serializer.validated_data)

    def perform_update(self, serializer: ErrorCodeSerializer) -> None:
        serializer.instance = services.error_code_update(
            error_code=serializer.instance, replace_variants=not serializer.partial, **serializer.validated_data
        )

    def perform_destroy(self, instance) -> None:
        services.error_code_delete(error_code=instance)


@_crud_schema(
    ParameterHintSerializer, list_parameters=(OpenApiParameter("tool", description="Only hints for this tool."),)
)
class ParameterHintViewSet(viewsets.ModelViewSet):
    """How to ask for a tool's parameters."""

    serializer_class = ParameterHintSerializer
    permission_classes = [CatalogAccess]

    def get_queryset(self):
        return selectors.parameter_hint_list(tool=self.request.query_params.get("tool", ""))

    def perform_create(self, serializer: ParameterHintSerializer) -> None:
        serializer.instance = services.parameter_hint_create(**serializer.validated_data)

    def perform_update(self, serializer: ParameterHintSerializer) -> None:
        serializer.instance = services.parameter_hint_update(hint=serializer.instance, **serializer.validated_data)


@_crud_schema(ClassificationRuleSerializer)
class ClassificationRuleViewSet(viewsets.ModelViewSet):
    """Classification rules, in the order they are tried."""

    serializer_class = ClassificationRuleSerializer
    permission_classes = [CatalogAccess]

    def get_queryset(self):
        return selectors.classification_rule_list()

    def perform_create(self, serializer: ClassificationRuleSerializer) -> None:
        serializer.instance = services.classification_rule_create(**serializer.validated_data)

    def perform_update(self, serializer: ClassificationRuleSerializer) -> None:
        serializer.instance = services.classification_rule_update(rule=serializer.instance, **serializer.validated_data)


class RenderView(APIView):
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


class ClassifyView(APIView):
    @extend_schema(
        tags=["classify"],
        summary="Classify a raw failure",
        description="Maps a failure's exception class, HTTP status, JSON-RPC code, upstream and transport to a "
        "catalog code by the classification rules; with no matching rule the answer is UNKNOWN_ERROR.",
        request=ClassifyRequestSerializer,
        responses={200: ClassifyResponseSerializer, **_WRITE_ERRORS},
    )
    def post(self, request: Request) -> Response:
        serializer = ClassifyRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        snapshot = catalog_snapshot()
        entry = snapshot.entry(classify(snapshot, serializer.facts()))
        return Response(
            {
                "code": entry.code,
                "category": entry.category,
                "kind": entry.kind,
                "retryable": entry.retryable,
                "system": entry.system,
            }
        )


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
@authentication_classes([])
@permission_classes([AllowAny])
def endpoint_not_found(request: Request) -> Response:
    """Unknown paths under the API answer in the API's error shape rather than with Django's HTML page."""
    raise exceptions.NotFound(
        "There is no API endpoint at this path; API paths end with a slash, as in /api/v1/codes/."
    )
