"""Every write to a catalog table invalidates the cached snapshots of all processes."""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.snapshot import catalog_changed

_CATALOG_MODELS = (ErrorCode, TemplateVariant, ParameterHint, ClassificationRule)


@receiver([post_save, post_delete])
def _invalidate_snapshot(sender, **kwargs) -> None:
    if sender in _CATALOG_MODELS:
        transaction.on_commit(catalog_changed)
