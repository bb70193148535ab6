"""``GET /healthz``: the load balancer's and docker-compose's health check.

Answers 200 when the database (and Redis, when configured) answer, else 503 naming the part that failed. It
needs no login and says nothing else about the deployment.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger("errcatalog.health")


@never_cache
@require_safe
def healthz(request) -> JsonResponse:
    checks = {"database": _database_ok(), **({"redis": _redis_ok()} if settings.REDIS_URL else {})}
    healthy = all(checks.values())
    body = {
        "status": "ok" if healthy else "unavailable",
        "checks": {k: "ok" if v else "failed" for k, v in checks.items()},
    }
    return JsonResponse(body, status=200 if healthy else 503)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        logger.warning("Health check: the database did not answer", exc_info=True)
        return False


def _redis_ok() -> bool:
    try:
        cache.set("errcatalog:healthz", 1, timeout=10)
        return cache.get("errcatalog:healthz") == 1
    except Exception:
        logger.warning("Health check: Redis did not answer", exc_info=True)
        return False
