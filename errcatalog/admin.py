"""Django admin finds the app's pages here; each domain keeps its own (catalog, access)."""

from errcatalog.access import admin as access_admin
from errcatalog.access import client_admin, staff_admin
from errcatalog.catalog import admin as catalog_admin

__all__ = ["access_admin", "catalog_admin", "client_admin", "staff_admin"]
