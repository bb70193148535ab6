"""The documents that the demo tools create, fetch and search.

The table keeps the name it had when the model lived in ``mcpserver`` (``mcpserver_document``), so the rows of
databases made before the demo became its own app stay where they are (migrations ``mcpserver/0002`` and
``demo/0001``). A database that runs without the demo app keeps that table untouched and unused.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Length, Trim
from django.db.models.lookups import GreaterThan


class Document(models.Model):
    """A text document stored in the database, written and read by the demo tools (seed 003's create_document)."""

    title = models.CharField(max_length=200)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "mcpserver_document"
        ordering = ["-updated_at", "-id"]
        constraints = [
            # A document is its content: one made of nothing but spaces is refused by the database itself.
            models.CheckConstraint(
                condition=GreaterThan(Length(Trim("content")), 0), name="mcpserver_document_content_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Document {self.pk}"
