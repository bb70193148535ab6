"""The catalog snapshot for host code, as README's "Rendering from Python" documents it.

A stable public name over ``errcatalog.catalog.snapshot`` (loading and caching) and ``errcatalog.render.entries``
(the frozen data), so that code written against the README keeps working whatever the layout inside. errcatalog's
own code imports from those modules, never from here.
"""

from errcatalog.catalog.snapshot import acatalog_snapshot, catalog_snapshot
from errcatalog.render.entries import CatalogSnapshot

__all__ = ["CatalogSnapshot", "acatalog_snapshot", "catalog_snapshot"]
