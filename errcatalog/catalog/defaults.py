"""The default catalog errcatalog ships (``data/default_catalog.yaml``) and how it is loaded: on every start, without
undoing editors' work."""

from __future__ import annotations

from pathlib import Path

from django.db import IntegrityError

from errcatalog.catalog.document import DATA_DIR, read_catalog_file
from errcatalog.catalog.services import ImportSummary, catalog_import

DEFAULT_CATALOG_PATH: Path = DATA_DIR / "default_catalog.yaml"


def catalog_load_defaults(*, reset: bool = False) -> ImportSummary:
    """Load the shipped default catalog. By default only what is missing is created, so editors' changes and
    deletions survive; ``reset`` overwrites the default rows with the shipped wording (other rows stay)."""
    doc = read_catalog_file(DEFAULT_CATALOG_PATH)
    try:
        return catalog_import(doc, only_missing=not reset, reason="default catalog")
    except IntegrityError:
        # Another process (a second web replica starting) created the same rows a moment earlier; this
        # import was rolled back whole, and a second pass finds those rows in place.
        return catalog_import(doc, only_missing=not reset, reason="default catalog")
