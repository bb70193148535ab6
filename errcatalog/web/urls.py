"""Routes of the staff dashboard, included at ``/dashboard/`` by ``config/urls.py``."""

from __future__ import annotations

from django.urls import path

from errcatalog.web import dashboard

urlpatterns = [
    path("", dashboard.dashboard, name="errcatalog-dashboard"),
]
