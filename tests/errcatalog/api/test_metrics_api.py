"""GET /api/v1/metrics/: the metrics as JSON for staff sessions and client tokens."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from errcatalog.outcomes import rollups
from errcatalog.outcomes.models import Episode, OutcomeEvent
from tests.errcatalog.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/metrics/"


@pytest.fixture
def outcomes():
    """This hour: 3 calls of send_email (1 error, interactive) by two clients, and a recovered episode."""
    now = timezone.now()
    for client, outcome in (("token:1", "ok"), ("token:1", "error"), ("token:2", "ok")):
        OutcomeEvent.objects.create(
            id=uuid.uuid4(),
            occurred_at=now,
            tool="send_email",
            client=client,
            outcome=outcome,
            code="MISSING_PARAMETER" if outcome == "error" else "",
            variant="friendly" if outcome == "error" else "",
            interactive=outcome == "error",
            latency_ms=12.0,
        )
    Episode.objects.create(
        tool="send_email",
        client="token:1",
        code="MISSING_PARAMETER",
        variant="friendly",
        started_at=now,
        last_at=now,
        ended_at=now,
        ending="recovered",
        retries=1,
        recovered_at_attempt=1,
    )
    rollups.recompute_bucket(now)


def test_staff_session_reads_the_numbers(staff_client, outcomes):
    response = staff_client.get(URL, {"window": "24h"})

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "window", "filters", "targets", "totals", "series", "breakdowns", "variant_comparison", "recent_episodes",
    }  # fmt: skip
    totals = body["totals"]
    assert (totals["calls"], totals["errors"], totals["interactive_errors"]) == (3, 1, 1)
    assert totals["error_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert totals["interactive_error_rate"] == 1.0
    assert totals["retry_success_rate"] == 1.0
    assert len(body["series"]) == 24
    assert {row["key"]: row["calls"] for row in body["breakdowns"]["client"]} == {"token:1": 2, "token:2": 1}
    assert body["recent_episodes"][0]["ending"] == "recovered"


def test_the_default_window_is_24_hours_and_blank_filters_are_no_filters(staff_client, outcomes):
    body = staff_client.get(URL + "?tool=&code=&client=&variant=").json()

    assert body["window"]["name"] == "24h"
    assert body["filters"] == {"tool": None, "code": None, "client": None, "variant": None}
    assert body["totals"]["calls"] == 3


def test_filters_are_applied(staff_client, outcomes):
    body = staff_client.get(URL, {"window": "7d", "client": "token:2"}).json()

    assert body["filters"]["client"] == "token:2"
    assert body["totals"]["calls"] == 1 and body["totals"]["errors"] == 0


def test_any_client_token_may_read(reader_client, writer_client, outcomes):
    assert reader_client.get(URL).json()["totals"]["calls"] == 3
    assert writer_client.get(URL, {"window": "1h"}).status_code == 200


def test_anonymous_callers_are_asked_to_authenticate(anonymous):
    assert_api_error(anonymous.get(URL), 401, "not_authenticated")


def test_a_session_without_staff_rights_is_refused(user_client):
    assert_api_error(user_client.get(URL), 403, "permission_denied")


def test_an_unknown_window_is_a_validation_error(staff_client):
    error = assert_api_error(staff_client.get(URL, {"window": "2h"}), 400, "invalid")

    assert list(error["fields"]) == ["window"]


def test_an_overlong_filter_is_refused_without_echoing_it(staff_client):
    error = assert_api_error(staff_client.get(URL, {"tool": "x" * 500}), 400, "invalid")

    assert list(error["fields"]) == ["tool"]
    assert "x" * 50 not in str(error)


def test_injection_text_in_a_filter_matches_nothing(staff_client, outcomes):
    body = staff_client.get(URL, {"tool": "send_email' OR '1'='1"}).json()

    assert body["totals"]["calls"] == 0


def test_the_schema_documents_the_endpoints(anonymous):
    schema = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    metrics = schema["paths"][URL]["get"]
    assert {p["name"] for p in metrics["parameters"]} >= {"window", "tool", "code", "client", "variant"}
    assert metrics["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Metrics")
    assert "202" in schema["paths"]["/api/v1/outcomes/"]["post"]["responses"]
