from __future__ import annotations

from django.apps import AppConfig


class ErrcatalogConfig(AppConfig):
    name = "errcatalog"
    verbose_name = "Error catalog"

    def ready(self) -> None:
        from errcatalog.access import signals as access_signals  # noqa: F401  (connects token cache invalidation)
        from errcatalog.catalog import signals  # noqa: F401  (connects snapshot invalidation)
