"""The generated reference pages match the code: the REST API page its OpenAPI document, the catalog file page and
the published ``catalog.schema.json`` the schema the importer validates against. When one of these tests fails,
run ``.venv/bin/python -m tests.docs.reference_pages`` and commit what it writes."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from errcatalog.catalog.document import CatalogFileError, catalog_schema, validate_catalog_document
from tests.docs import reference_pages

REGENERATE = "out of date: run `.venv/bin/python -m tests.docs.reference_pages` and commit the result"


def test_the_rest_api_page_is_generated_from_the_served_openapi_document(client, staff_user):
    client.force_login(staff_user)
    served = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    page = reference_pages.rest_api_page(served)
    assert reference_pages.REST_API_PAGE.read_text(encoding="utf-8") == page, f"docs/reference/rest-api.md {REGENERATE}"


def test_the_rest_api_page_has_every_operation_and_schema():
    document = reference_pages.openapi_document()
    page = reference_pages.REST_API_PAGE.read_text(encoding="utf-8")
    for path, item in document["paths"].items():
        for method in item:
            assert f"### {method.upper()} {path}\n" in page, (method, path)
    for name, schema in document["components"]["schemas"].items():
        if "enum" not in schema:
            assert f"### {name}\n" in page, name


def test_every_link_of_the_rest_api_page_points_at_a_heading_of_it():
    page = reference_pages.REST_API_PAGE.read_text(encoding="utf-8")
    headings = {reference_pages.slug(line.lstrip("#").strip()) for line in page.splitlines() if line.startswith("#")}
    anchors = set(re.findall(r"\]\(#([^)]+)\)", page))
    assert anchors and anchors <= headings, sorted(anchors - headings)


def test_the_published_catalog_schema_is_the_one_the_importer_validates_against():
    published = json.loads(reference_pages.CATALOG_SCHEMA_COPY.read_text(encoding="utf-8"))
    assert published == catalog_schema(), f"docs/reference/catalog.schema.json {REGENERATE}"
    assert reference_pages.CATALOG_SCHEMA_COPY.read_text(encoding="utf-8") == reference_pages.catalog_schema_text(
        published
    ), f"docs/reference/catalog.schema.json {REGENERATE}"


def test_the_catalog_file_page_describes_the_schema_as_it_is():
    page = reference_pages.catalog_file_page(reference_pages.catalog_schema())
    assert reference_pages.CATALOG_FILE_PAGE.read_text(encoding="utf-8") == page, (
        f"docs/reference/catalog-file.md {REGENERATE}"
    )


def test_a_schema_field_without_a_description_stops_the_generator():
    schema = reference_pages.catalog_schema()
    schema["$defs"]["hint"]["properties"]["color"] = {"type": "string", "default": ""}
    with pytest.raises(ValueError, match=r"missing: hint\.color"):
        reference_pages.catalog_file_page(schema)


@pytest.mark.django_db
def test_the_example_on_the_catalog_file_page_is_a_valid_catalog_file():
    page = reference_pages.CATALOG_FILE_PAGE.read_text(encoding="utf-8")
    assert reference_pages.CATALOG_EXAMPLE in page
    document = validate_catalog_document(yaml.safe_load(reference_pages.CATALOG_EXAMPLE), source="catalog-file.md")
    assert [code["code"] for code in document["codes"]] == ["MISSING_PARAMETER", "NOT_FOUND"]
    assert document["codes"][1]["variants"][0]["name"] == "default"  # a default filled in, as the page says


@pytest.mark.django_db
def test_a_broken_example_would_be_refused():
    broken = yaml.safe_load(reference_pages.CATALOG_EXAMPLE)
    broken["rules"][0]["code"] = "NO_SUCH_CODE"
    with pytest.raises(CatalogFileError, match="NO_SUCH_CODE"):
        validate_catalog_document(broken, source="catalog-file.md")


def test_an_operations_examples_are_shown_as_json():
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1", "description": "d"},
        "paths": {
            "/api/v1/render/": {
                "post": {
                    "operationId": "render_create",
                    "summary": "Render",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "object"},
                                "examples": {"Missing": {"value": {"code": "MISSING_PARAMETER"}, "summary": "A gap"}},
                            }
                        }
                    },
                    "responses": {"200": {"content": {"application/json": {"example": {"face": "markdown"}}}}},
                }
            }
        },
    }
    page = reference_pages.rest_api_page(document)
    assert '*Example request: A gap*\n\n```json\n{\n  "code": "MISSING_PARAMETER"\n}\n```' in page
    assert '*Example answer (200)*\n\n```json\n{\n  "face": "markdown"\n}\n```' in page
