"""Services and selectors for ``Document``: what the demo tools call to write, fetch and search documents."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q

from demo.models import Document

TITLE_MAX_CHARS = 200  # Document.title's max_length
# Rows fetched from the database per round trip while searching; the time budget is checked between rows.
SEARCH_CHUNK_SIZE = 50
# created_at and updated_at are stamped separately on insert, so a fresh document's differ by a few microseconds.
EDIT_THRESHOLD = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The documents found, and whether the search stopped at its time budget before looking at all of them."""

    documents: list[Document]
    complete: bool


def title_from_content(content: str) -> str:
    """A title for an untitled document: its first non-empty line, shortened to fit the title column."""
    first_line = next((line.strip() for line in content.splitlines() if line.strip()), "")
    if len(first_line) <= TITLE_MAX_CHARS:
        return first_line
    return first_line[: TITLE_MAX_CHARS - 1].rstrip() + "…"


@transaction.atomic
def document_create(*, content: str, title: str = "") -> Document:
    """Store a new document; an empty title becomes the first line of the content."""
    document = Document(content=content, title=title.strip() or title_from_content(content))
    document.full_clean()
    document.save()
    return document


def document_get(*, document_id: int) -> Document | None:
    return Document.objects.filter(pk=document_id).first()


def document_search(*, query: str, limit: int, time_budget: float) -> SearchResult:
    """Documents whose title or content contains ``query`` (case-insensitive), most recently updated first.

    Stops when ``limit`` documents are found or the matches run out (complete), or when ``time_budget`` seconds
    have passed while more matches were still waiting (incomplete: the documents found so far).
    """
    deadline = time.monotonic() + time_budget
    matches = Document.objects.filter(Q(title__icontains=query) | Q(content__icontains=query)).order_by(
        "-updated_at", "-id"
    )
    found: list[Document] = []
    for document in matches[:limit].iterator(chunk_size=SEARCH_CHUNK_SIZE):
        if found and time.monotonic() >= deadline:
            return SearchResult(documents=found, complete=False)
        found.append(document)
    return SearchResult(documents=found, complete=True)


def document_events(*, title_contains: str, limit: int) -> list[dict[str, Any]]:
    """Activity of documents whose title contains ``title_contains``, newest first: one event per document, its
    creation or its last update."""
    changed = Document.objects.filter(title__icontains=title_contains).order_by("-updated_at", "-id")[:limit]
    return [
        {
            "type": "document.updated" if d.updated_at - d.created_at > EDIT_THRESHOLD else "document.created",
            "document_id": d.pk,
            "title": d.title,
            "timestamp": d.updated_at.isoformat(),
        }
        for d in changed
    ]
