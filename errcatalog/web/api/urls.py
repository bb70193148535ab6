"""The REST API under /api/v1/."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from errcatalog.web.api.views import catalog, classify, outcomes, render, root

router = SimpleRouter()
router.register("codes", catalog.ErrorCodeViewSet, basename="errorcode")
router.register("hints", catalog.ParameterHintViewSet, basename="parameterhint")
router.register("rules", catalog.ClassificationRuleViewSet, basename="classificationrule")

urlpatterns = [
    path("", root.api_root, name="api-root"),
    *router.urls,
    path("render/", render.RenderView.as_view(), name="api-render"),
    path("classify/", classify.ClassifyView.as_view(), name="api-classify"),
    path("metrics/", outcomes.MetricsView.as_view(), name="api-metrics"),
    path("outcomes/", outcomes.OutcomeBatchView.as_view(), name="api-outcomes"),
]
