"""One range per integer field of the catalog, for the admin, the REST API and catalog files alike."""

from __future__ import annotations

import json

from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
from errcatalog.catalog.models import INTEGER_RANGES

SCHEMA_PATH = DEFAULT_CATALOG_PATH.parent / "catalog.schema.json"


def _schema_bounds() -> dict[str, tuple[int, int]]:
    schema = json.loads(SCHEMA_PATH.read_text())
    found: dict[str, tuple[int, int]] = {}

    def walk(node: object, name: str) -> None:
        if isinstance(node, dict):
            if "minimum" in node and "maximum" in node and name in INTEGER_RANGES:
                found[name] = (node["minimum"], node["maximum"])
            for key, child in node.items():
                walk(child, key if key not in ("properties", "$defs", "items") else name)
        elif isinstance(node, list):
            for child in node:
                walk(child, name)

    walk(schema, "")
    return found


def test_the_catalog_files_schema_states_the_same_ranges_as_the_models():
    bounds = _schema_bounds()
    assert set(bounds) == set(INTEGER_RANGES)
    assert bounds == dict(INTEGER_RANGES)
