"""The REST API under /api/v1/."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from errcatalog.web.api import views

router = SimpleRouter()
router.register("codes", views.ErrorCodeViewSet, basename="errorcode")
router.register("hints", views.ParameterHintViewSet, basename="parameterhint")
router.register("rules", views.ClassificationRuleViewSet, basename="classificationrule")

urlpatterns = [
    path("", views.api_root, name="api-root"),
    *router.urls,
    path("render/", views.RenderView.as_view(), name="api-render"),
    path("classify/", views.ClassifyView.as_view(), name="api-classify"),
    path("metrics/", views.MetricsView.as_view(), name="api-metrics"),
    path("outcomes/", views.OutcomeBatchView.as_view(), name="api-outcomes"),
]
