"""A committed write to a catalog table rebuilds this process's snapshot, once per transaction.

Other processes learn of it from the catalog revision (``errcatalog.catalog.revision``), which the database's
triggers raise for every writer, signals or not.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.snapshot import catalog_changed

_CATALOG_MODELS = (ErrorCode, TemplateVariant, ParameterHint, ClassificationRule)


@receiver([post_save, post_delete])
def _catalog_row_written(sender, **kwargs) -> None:
    if sender in _CATALOG_MODELS:
        catalog_changed_on_commit()


def catalog_changed_on_commit() -> None:
    """Call ``catalog_changed`` when the current transaction commits (at once outside one), once however many
    rows it wrote: an import of thousands of rows rebuilds the snapshot once."""
    # Django keeps the callbacks of the transaction in ``run_on_commit`` and drops those of a rolled-back
    # savepoint, so a callback found there is still due.
    if connection.in_atomic_block and any(due[1] is catalog_changed for due in connection.run_on_commit):
        return
    transaction.on_commit(catalog_changed)
