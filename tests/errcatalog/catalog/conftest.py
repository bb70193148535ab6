"""The catalog tests' fixtures: a real Celery worker's, shared with the outcome tests (the allocator runs in one)."""

from tests.errcatalog.outcomes.conftest import (  # noqa: F401 (fixtures, found by name)
    celery_redis_app,
    celery_worker_process,
    worker_database,
)
