from __future__ import annotations


def catalog_document_from_db() -> dict:
    raise NotImplementedError
