"""The API's front door: ``/api/v1/`` links to every endpoint, and a path under it that names none is answered in the
API's error shape.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse


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
