"""Django admin finds the app's pages here; each domain keeps its own (catalog, access, gateway).

The inbox of unclassified upstream failures is the catalog's page (``errcatalog.catalog.inbox_admin``): it makes
classification rules from the gateway's records.
"""

from errcatalog.access import admin as access_admin
from errcatalog.access import client_admin, staff_admin
from errcatalog.catalog import admin as catalog_admin
from errcatalog.catalog import inbox_admin
from errcatalog.gateway import admin as gateway_admin
from errcatalog.gateway import named_server_admin

__all__ = [
    "access_admin",
    "catalog_admin",
    "client_admin",
    "gateway_admin",
    "inbox_admin",
    "named_server_admin",
    "staff_admin",
]
