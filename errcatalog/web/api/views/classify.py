"""Classification: a raw failure's facts mapped to a catalog code by the classification rules, in their order."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.render.classify import classification, known
from errcatalog.web.api import examples
from errcatalog.web.api.permissions import CatalogReadAccess
from errcatalog.web.api.serializers.classify import ClassifyRequestSerializer, ClassifyResponseSerializer
from errcatalog.web.api.views.errors import WRITE_ERRORS, BodyRequired


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
        responses={200: ClassifyResponseSerializer, **WRITE_ERRORS},
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
