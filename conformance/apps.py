from __future__ import annotations

from django.apps import AppConfig


class ConformanceConfig(AppConfig):
    name = "conformance"
    verbose_name = "MCP conformance fixtures"
