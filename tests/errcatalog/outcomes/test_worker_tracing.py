"""A Celery worker with the standard OTEL_* variables traces its tasks to an OTLP/HTTP receiver (``config.tracing``)."""

from __future__ import annotations

import threading

import pytest

from errcatalog.outcomes.tasks import drain_outcomes
from tests.mcpserver.test_tracing import Receiver
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_workers_tasks_are_traced(celery_worker_process, celery_redis_app):
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        celery_worker_process.start(
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.server_address[1]}",
            OTEL_SERVICE_NAME="errcatalog-worker",
            OTEL_BSP_SCHEDULE_DELAY="100",
        )
        drain_outcomes.delay()

        def task_spans() -> list[tuple[str, dict]]:
            return [(service, attributes) for service, name, attributes in receiver.spans if name.startswith("run/")]

        wait_until(lambda: task_spans(), what="the task's span at the receiver")
        assert "opentelemetry.instrumentation.celery" in receiver.scopes
        service, attributes = task_spans()[0]
        assert service == "errcatalog-worker"
        assert attributes["celery.task_name"] == "errcatalog.drain_outcomes"
    finally:
        receiver.shutdown()
