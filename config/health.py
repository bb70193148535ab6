"""``GET /health/`` (and its old name ``/healthz``): the load balancer's and docker-compose's health check.

``{"status": "ok" | "degraded" | "unavailable", "checks": {"database": "ok" | "unavailable",
"redis": "ok" | "unavailable"}, "outcomes": {"held": n, "dropped": n}, "catalog": {"revision": n, "age_seconds": s,
"builds": n}}``; ``redis`` appears only when ``REDIS_URL`` is set.

- ``ok`` (200): every dependency answered.
- ``degraded`` (200): a dependency is down but this process still serves. Without Redis it serves everything
  (the catalog snapshot it holds, a per-process rate limit, outcome events held in memory); the metrics API
  answers 503. Without the database it still answers MCP calls of recently accepted tokens from the snapshot it
  holds; the REST API, admin and dashboard answer 503. A load balancer must keep such a process: every process
  shares the same Redis and database, so taking them all out of rotation would turn a partial outage into a
  total one.
- ``unavailable`` (503): the database is down and this process holds no catalog snapshot, so it cannot answer
  anything useful. Take it out of rotation.

``outcomes`` is this process's outcome recorder: events ``held`` in memory waiting for their buffer (Redis or
the Celery broker), and events ``dropped`` since the process started because that buffer stayed away longer than
the in-memory bound (``ERRCATALOG_OUTCOMES_LOCAL_BUFFER``). ``catalog`` is the catalog this process serves: the
revision it was built from (the same in every process once a change has reached them all; null before the first
call), its age, and how many snapshots the process has built. It needs no login and says nothing else about the
deployment: no host names, no error texts.
"""

from __future__ import annotations

import contextlib

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from errcatalog.catalog.snapshot import catalog_snapshot_held, catalog_snapshot_status
from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS, REDIS_ERRORS
from errcatalog.outcomes import recorder

OK, UNAVAILABLE = "ok", "unavailable"


@never_cache
@require_safe
def health(request) -> JsonResponse:
    checks = {"database": _database_check()}
    if settings.REDIS_URL:
        checks["redis"] = _redis_check()
    if all(check == OK for check in checks.values()):
        status = "ok"
    elif checks["database"] == UNAVAILABLE and not catalog_snapshot_held():
        status = "unavailable"
    else:
        status = "degraded"
    stats = recorder.stats()
    body = {
        "status": status,
        "checks": checks,
        "outcomes": {"held": stats.held, "dropped": stats.dropped},
        "catalog": catalog_snapshot_status(),
    }
    return JsonResponse(body, status=503 if status == "unavailable" else 200)


# Each check probes for real (a health check is how a returning dependency is noticed when nothing else runs)
# and reports what it saw, so the outage is logged once by ``errcatalog.dependencies`` rather than per probe.


def _database_check() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DATABASE_ERRORS as exc:
        DATABASE.failed(exc)
        # A broken connection is not reused by the next probe.
        with contextlib.suppress(*DATABASE_ERRORS):
            connection.close_if_unusable_or_obsolete()
        return UNAVAILABLE
    DATABASE.succeeded()
    return OK


def _redis_check() -> str:
    try:
        cache.set("errcatalog:health", 1, timeout=10)
        answered = cache.get("errcatalog:health") == 1
    except REDIS_ERRORS as exc:
        REDIS.failed(exc)
        return UNAVAILABLE
    if not answered:  # pragma: no cover - a Redis that loses a key it was just given is not a working cache
        return UNAVAILABLE
    REDIS.succeeded()
    return OK
