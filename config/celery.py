"""The Celery app: workers ingest outcome events, close abandoned episodes and compute rollups."""

from __future__ import annotations

import os
from typing import Any

import sentry_sdk
from celery import Celery
from celery.signals import task_prerun, worker_init, worker_process_init
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# The embedded broker's "filesystem://" is kombu's filesystem transport with messages written whole and unreadable
# files set aside instead of ending the worker (config/filesystem_broker.py). An alias rather than the
# ``broker_transport`` setting: that setting would win over any URL, a Redis one included, while the scheme of
# the URL in use is what chooses the transport here.
TRANSPORT_ALIASES["filesystem"] = "config.filesystem_broker:Transport"

app = Celery("errcatalog")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["errcatalog.outcomes", "errcatalog.catalog", "errcatalog.access"])


@task_prerun.connect(dispatch_uid="errcatalog.sentry_task_tag")
def _tag_sentry_scope_with_task(*, sender: Any = None, **kwargs: Any) -> None:
    # sentry-sdk's Celery integration gives each task run its own scope before this signal and names the task
    # only in the event's extra data and transaction; a tag is what Sentry lets people search and alert on, the
    # same way tool calls carry a ``tool`` tag. Without a DSN this sets a tag nobody sends.
    sentry_sdk.set_tag("task", getattr(sender, "name", "unknown"))


@worker_process_init.connect(dispatch_uid="errcatalog.tracing.pool_process")
def _trace_pool_process(**kwargs: Any) -> None:
    # In each prefork pool process as it starts: a forked process has none of its parent's exporter threads.
    from config.tracing import configure_tracing

    configure_tracing(celery=True)


@worker_init.connect(dispatch_uid="errcatalog.tracing.worker")
def _trace_worker(*, sender: Any = None, **kwargs: Any) -> None:
    # The solo and thread pools run tasks in the worker's own process, which no pool process signal reaches.
    pool = getattr(sender, "pool_cls", None)
    if "prefork" not in f"{getattr(pool, '__module__', '')}{pool}":
        from config.tracing import configure_tracing

        configure_tracing(celery=True)
