from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Demo tools"
    default_auto_field = "django.db.models.BigAutoField"
