from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.health import health
from config.landing import landing
from errcatalog.web import oauth
from errcatalog.web.api.views.root import endpoint_not_found

urlpatterns = [
    path("", landing, name="landing"),
    path("health/", health, name="health"),
    # The name compose files and load balancers were configured with before /health/.
    path("healthz", health, name="healthz"),
    # Browsers ask for /favicon.ico on pages that link no icon (the browsable API, a raw JSON answer).
    path("favicon.ico", RedirectView.as_view(url=static("errcatalog/favicon.svg")), name="favicon"),
    path("admin/", admin.site.urls),
    # Signing in to consent to an OAuth client, and the authorization server's endpoints and metadata.
    path("accounts/login/", oauth.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/apps/", oauth.ConnectedAppsView.as_view(), name="connected-apps"),
    path("", include((oauth.urlpatterns(), "oauth2_provider"))),
    path("dashboard/", include("errcatalog.web.urls")),
    path("api/v1/", include("errcatalog.web.api.urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Last under the API prefix: any other path gets a 404 in the API's error shape.
    re_path(r"^api/v1/", endpoint_not_found),
]
