"""The admin's variant list shows each variant's live retry success rate, in one query for the page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from errcatalog.catalog.models import ErrorCode, TemplateVariant
from errcatalog.outcomes import rollups
from errcatalog.outcomes.models import Episode

pytestmark = pytest.mark.django_db

URL = reverse("admin:errcatalog_templatevariant_changelist")


def variant(code: str, name: str) -> TemplateVariant:
    error_code, _ = ErrorCode.objects.get_or_create(code=code)
    return TemplateVariant.objects.create(error_code=error_code, name=name, message="m", instruction="i")


def episodes(code: str, name: str, *, recovered: int, exhausted: int, started=None) -> None:
    started = started or timezone.now() - timedelta(hours=2)
    for ending, count in (("recovered", recovered), ("exhausted", exhausted)):
        for _ in range(count):
            Episode.objects.create(
                tool="send_email",
                client="token:1",
                code=code,
                variant=name,
                started_at=started,
                last_at=started,
                ended_at=started,
                ending=ending,
                retries=1 if ending == "recovered" else 4,
                recovered_at_attempt=1 if ending == "recovered" else None,
            )
    rollups.recompute_bucket(started)


@pytest.fixture
def staff(client, staff_user):
    client.force_login(staff_user)
    return client


def test_each_variant_shows_its_retry_success_rate(staff):
    variant("MISSING_PARAMETER", "friendly")
    variant("MISSING_PARAMETER", "terse")
    variant("RATE_LIMITED", "friendly")
    episodes("MISSING_PARAMETER", "friendly", recovered=3, exhausted=1)
    episodes("MISSING_PARAMETER", "terse", recovered=1, exhausted=1)

    response = staff.get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    assert "Retry success (30 d)" in html
    rows = {str(obj): obj for obj in response.context["cl"].result_list}
    admin = response.context["cl"].model_admin
    assert admin.retry_success(rows["MISSING_PARAMETER/friendly"]) == "75% of 4"
    assert admin.retry_success(rows["MISSING_PARAMETER/terse"]) == "50% of 2"
    assert admin.retry_success(rows["RATE_LIMITED/friendly"]) == "—"  # same name, other code: no data
    assert "75% of 4" in html and "50% of 2" in html and "—" in html


def test_episodes_older_than_30_days_do_not_count(staff):
    variant("MISSING_PARAMETER", "friendly")
    episodes("MISSING_PARAMETER", "friendly", recovered=2, exhausted=0, started=timezone.now() - timedelta(days=45))

    response = staff.get(URL)

    admin = response.context["cl"].model_admin
    assert admin.retry_success(response.context["cl"].result_list[0]) == "—"


def test_the_rate_costs_no_query_per_variant(staff):
    for index in range(8):
        variant("MISSING_PARAMETER", f"v{index}")
        episodes("MISSING_PARAMETER", f"v{index}", recovered=1, exhausted=index)
    staff.get(URL)  # warm the session and content types

    with CaptureQueriesContext(connection) as few:
        staff.get(URL + "?q=v1")
    with CaptureQueriesContext(connection) as many:
        response = staff.get(URL)

    assert len(response.context["cl"].result_list) == 8
    assert len(many) == len(few)
    assert "rollup" in " ".join(q["sql"].lower() for q in many.captured_queries)
