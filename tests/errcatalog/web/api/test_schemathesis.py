"""Schemathesis against the served OpenAPI document: generated requests, valid and invalid, through the WSGI app.

Every operation is exercised with a token whose user is staff and holds every catalog permission, and whose token
may write the catalog and read metrics, so writes run for real. Each answer must be documented (status, content
type and body), no answer may be a 5xx, a method an operation does not serve must be a 405, and a request the
document says is invalid must be refused.

A request the document says is valid must be accepted, except where validity depends on what is stored, which no
schema can say: a write naming a catalog code that must exist (rules, render/), a code, hint or rule position that
must be unique (hypothesis repeats values, so a second create of one is rightly a 400), an outcome whose ``ts``
must lie within the last seven days, and a metrics filter value that must name something known. A list's page size
given under both its names (``limit`` and ``page_size``) is refused too, which OpenAPI cannot say of two parameters.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from errcatalog.access.tokens import client_token_create
from tests.support.api import CATALOG_MODELS, grant

pytestmark = pytest.mark.django_db

# Generated examples per operation: with 22 operations the run takes about 20 s on one shared core.
MAX_EXAMPLES = 8
# In CI the same examples every run, so that a red run names a regression rather than a newly drawn case; a
# developer's run draws new ones each time (and keeps what failed in .hypothesis/).
DERANDOMIZE = os.environ.get("CI") == "true"
# Operations whose valid requests can still be refused by what is stored (see the module docstring).
STATE_DEPENDENT = {"POST", "PUT", "PATCH"}
METRICS_FILTERS = ("tool", "code", "client", "variant", "upstream")

# The served document, read once as the test module loads (serving it touches no database).
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())
# The coverage phase (every boundary value of every parameter; max_examples does not bound it) passes too, but takes
# about 90 s: run it with SCHEMATHESIS_COVERAGE=1 after changing a serializer or the schema.
schema.config.phases.coverage.enabled = os.environ.get("SCHEMATHESIS_COVERAGE") == "1"


@pytest.fixture
def staff_key(django_user_model) -> str:
    user = django_user_model.objects.create_user(username="schemathesis", password="pw", is_staff=True)
    grant(user, *(f"{a}_{m._meta.model_name}" for m in CATALOG_MODELS for a in ("add", "change", "delete")))
    return client_token_create(user=user, name="schemathesis", can_write_catalog=True, can_read_metrics=True)[1]


@pytest.fixture
def connections_kept_open():
    """The WSGI handler closes the database connection as each request starts and ends, which ends the test's
    transaction on PostgreSQL; Django's own test client keeps it open the same way, by disconnecting the handler."""
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


def _state_dependent(case) -> bool:
    if case.method.upper() == "GET" and case.path == "/api/v1/metrics/":
        return any((case.query or {}).get(name) for name in METRICS_FILTERS)
    return case.method.upper() in STATE_DEPENDENT and case.path != "/api/v1/classify/"


def _both_page_sizes(case) -> bool:
    return {"limit", "page_size"} <= set(case.query or {})


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE)
def test_the_api_answers_as_its_schema_says(case, catalog, staff_key, connections_kept_open):
    excluded = [positive_data_acceptance] if _state_dependent(case) or _both_page_sizes(case) else []
    case.call_and_validate(headers={"Authorization": f"Bearer {staff_key}"}, excluded_checks=excluded)
