"""The documentation names the documents and formats it refers to ("the question protocol", "Tool Error
Responses"), never the private numbering of source documents a reader cannot open ("seed 003"). The REST API page
is generated from the code's OpenAPI document and follows whatever the code's descriptions say."""

from __future__ import annotations

import re

from tests.docs.reference_pages import REPO_ROOT, REST_API_PAGE

NUMBERED = re.compile(r"\bseeds? \d{3}\b", re.IGNORECASE)


def test_no_page_refers_to_a_numbered_source_document():
    pages = [*sorted((REPO_ROOT / "docs").rglob("*.md")), REPO_ROOT / "CHANGELOG.md"]
    found = [
        f"{page.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
        for page in pages
        if page != REST_API_PAGE
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if NUMBERED.search(line)
    ]
    assert not found, "name the document instead:\n" + "\n".join(found)
