"""Celery tasks: each declares its delivery and retry policy, and a real worker reports a task that fails for good
to Sentry (its real transport, a small ingest server on 127.0.0.1), named, and never a retry."""

from __future__ import annotations

import threading

import pytest
from django.db import InterfaceError, OperationalError

from config.celery import app
from errcatalog.dependencies import TRANSIENT_ERRORS
from errcatalog.outcomes import recorder
from errcatalog.outcomes.tasks import compute_rollups, drain_outcomes, ingest_outcomes
from tests.mcpserver.test_sentry import Ingest
from tests.support.recorder import free_port

# The real-worker fixtures of the outcome tests, shared here rather than moved: only these two packages use them.
from tests.support.waiting import wait_until

TASKS = (
    "errcatalog.drain_outcomes",
    "errcatalog.ingest_outcomes",
    "errcatalog.close_abandoned_episodes",
    "errcatalog.compute_rollups",
    "errcatalog.allocate_variants",
    "errcatalog.clear_expired_oauth_tokens",
)


@pytest.mark.django_db
def test_every_task_retries_transient_errors_with_bounded_jittered_backoff_and_survives_its_worker():
    app.loader.import_default_modules()  # every tasks module, found as a worker finds them
    ours = sorted(name for name in app.tasks if name.startswith("errcatalog."))
    assert ours == sorted(TASKS)
    for name in ours:
        task = app.tasks[name]
        assert set(task.autoretry_for) == set(TRANSIENT_ERRORS), name
        assert {OperationalError, InterfaceError} <= set(task.autoretry_for), name
        assert task.retry_backoff and task.retry_jitter, name
        assert 0 < task.retry_backoff_max <= 300, name
        assert 0 < task.max_retries <= 10, name
        assert task.acks_late and task.reject_on_worker_lost, name


def test_the_recorder_sends_the_tasks_defined_here_by_their_names():
    # The recorder sits below the task module, so it names the tasks instead of importing them.
    assert app.tasks[recorder.INGEST_TASK].run is ingest_outcomes.run
    assert app.tasks[recorder.DRAIN_TASK].run is drain_outcomes.run


@pytest.fixture
def sentry_ingest():
    ingest = Ingest()
    thread = threading.Thread(target=ingest.serve_forever, daemon=True)
    thread.start()
    yield ingest
    ingest.shutdown()


@pytest.mark.django_db(transaction=True)
def test_a_task_that_fails_for_good_reaches_sentry_once_with_its_name_and_its_retries_do_not(
    celery_worker_process,
    celery_redis_app,
    sentry_ingest,
):
    # A database nobody listens on: every attempt fails with Django's OperationalError, a transient error.
    dead_database = f"postgres://postgres@127.0.0.1:{free_port()}/errcatalog"
    worker = celery_worker_process.start(
        SENTRY_DSN=f"http://publickey@127.0.0.1:{sentry_ingest.server_address[1]}/42", DATABASE_URL=dead_database
    )

    compute_rollups.delay()
    wait_until(lambda: "raised unexpected" in worker.log(), seconds=60, what="the task to give up")
    worker.stop()  # a polite stop: the SDK sends what it holds before the process exits

    log = worker.log()
    assert log.count("Retry in") == compute_rollups.max_retries == 3
    # Events leave in order on one transport thread: a captured retry would have arrived before the last one.
    wait_until(lambda: sentry_ingest.events, what="the Sentry event")
    [event] = sentry_ingest.events
    assert set(sentry_ingest.paths) == {"/api/42/envelope/"}
    assert event["tags"]["task"] == "errcatalog.compute_rollups"
    assert event["exception"]["values"][-1]["type"] == "OperationalError"
    assert event["extra"]["celery-job"]["task_name"] == "errcatalog.compute_rollups"
    assert "args" not in event["extra"]["celery-job"]  # task arguments stay out of Sentry
