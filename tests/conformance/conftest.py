"""The apps the conformance tests call: the real app (``uvicorn config.asgi:application``, as ``./dev up`` and
``./dev conformance`` run it), each in its own process, because toolsets and the server's capabilities are fixed when
the process starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.conformance import prepared, serve


@pytest.fixture(scope="package")
def data_dir(tmp_path_factory) -> Path:
    """A migrated SQLite database with the default catalog, shared by this package's servers."""
    return prepared(tmp_path_factory.mktemp("conformance-data"))


@pytest.fixture(scope="package")
def conformance_url(data_dir) -> Iterator[str]:
    """The app serving the conformance fixtures (and the catalog's tools)."""
    yield from serve(data_dir, ERRCATALOG_MCP_TOOLSETS="catalog,conformance")
