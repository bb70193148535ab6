"""The outcome tests' worker fixtures, for the outage tests that serve the application next to a real worker."""

from __future__ import annotations

from tests.errcatalog.outcomes.conftest import celery_worker_process, worker_database  # noqa: F401 (fixtures)
