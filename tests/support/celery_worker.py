"""Fixtures for tests that need a real Celery worker process next to the test (a pytest plugin, named in
``tests/conftest.py``'s ``pytest_plugins``: the outcome, catalog and outage tests use them).

``celery_worker_process`` starts ``celery -A config worker --pool=solo`` as a subprocess against the test's own
database and Redis; ``worker_database`` is how that process reaches the test database on both backends;
``celery_redis_app`` points the test's Celery app at the same Redis so ``.delay()`` reaches the worker. Tests
using them must be ``@pytest.mark.django_db(transaction=True)``: the worker only sees committed rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.celery import celery_app_on
from tests.support.processes import CeleryWorkerProcess, WorkerDatabase, process_environment


@pytest.fixture
def worker_database(tmp_path) -> WorkerDatabase:
    return WorkerDatabase(tmp_path)


@pytest.fixture
def celery_worker_process(tmp_path, redis_url, worker_database) -> Iterator[CeleryWorkerProcess]:
    """A worker factory on the test's database and Redis; ``.start(**env)`` runs one, stopped after the test.

    The environment reproduces production's (the same command, settings from variables only); the test's Redis
    database is emptied by ``redis_url`` before and after, which purges the Celery queues too.
    """
    data_dir = tmp_path / "worker-data"
    data_dir.mkdir()
    env = process_environment(database_url=worker_database.url, redis_url=redis_url, data_dir=data_dir)
    worker_database.push()  # the schema (SQLite); tests that add rows before starting a worker push again
    worker = CeleryWorkerProcess(env, tmp_path)
    yield worker
    worker.stop()


@pytest.fixture
def celery_redis_app(redis_url) -> Iterator[object]:
    """The project's Celery app sending to the test's Redis for the test; yields the app."""
    with celery_app_on(redis_url, {}) as app:
        yield app
