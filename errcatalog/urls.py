"""Routes of the staff dashboard, included at ``/dashboard/`` by ``config/urls.py``."""

from __future__ import annotations

from django.urls import path

from errcatalog import views

urlpatterns = [
    path("", views.dashboard, name="errcatalog-dashboard"),
]
