"""The render preview: a failure rendered from the catalog in any face, as the MCP endpoint would render it."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from errcatalog.catalog.previews import render_preview
from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.web.api import examples
from errcatalog.web.api.permissions import CatalogReadAccess
from errcatalog.web.api.serializers.render import RenderRequestSerializer, RenderResponseSerializer
from errcatalog.web.api.views.errors import WRITE_ERRORS, BodyRequired


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
        responses={200: RenderResponseSerializer, **WRITE_ERRORS},
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
