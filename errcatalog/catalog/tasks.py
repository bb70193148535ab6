"""The catalog's periodic task: adaptive allocation of variant weights (``errcatalog.catalog.allocation``)."""

from __future__ import annotations

from celery import shared_task

from errcatalog.catalog.allocation import allocate


@shared_task(name="errcatalog.allocate_variants", ignore_result=True)
def allocate_variants() -> int:
    """Set the weights of every adaptive code's variants from their recovery rates; returns how many changed."""
    return len(allocate())
