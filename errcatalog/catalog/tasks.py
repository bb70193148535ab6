"""The catalog's periodic task: adaptive allocation of variant weights (``errcatalog.catalog.allocation``)."""

from __future__ import annotations

from celery import shared_task

from errcatalog.catalog.allocation import allocate
from errcatalog.dependencies import DELIVERY


# Hourly by default: retries bridge a short database outage; a run that still fails is the next hour's to do.
@shared_task(
    name="errcatalog.allocate_variants",
    **DELIVERY,
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def allocate_variants() -> int:
    """Set the weights of every adaptive code's variants from their recovery rates; returns how many changed."""
    return len(allocate())
