"""GET /api/v1/metrics/: the metrics as JSON for staff sessions, metrics tokens and staff users' tokens."""

from __future__ import annotations

import pytest

from errcatalog.access.tokens import client_token_create
from tests.errcatalog.web.api.error_shape import assert_api_error
from tests.support.api import bearer_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/metrics/"


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
    assert body["recent_episodes"][0]["resolution_seconds"] == 45.0
    # User resolution time (the question protocol's): 45 s, read back from the rollup's histogram bin (log-spaced,
    # about ±20 %).
    by_code = {row["key"]: row for row in body["breakdowns"]["code"]}
    assert by_code[""]["resolution_p50_seconds"] is None  # successful calls: no episode of their own
    for row in (totals, by_code["MISSING_PARAMETER"], *body["breakdowns"]["variant"], *body["breakdowns"]["tool"]):
        assert 45.0 / 1.45 <= row["resolution_p50_seconds"] <= 45.0 * 1.45
        assert 45.0 / 1.45 <= row["resolution_p90_seconds"] <= 45.0 * 1.45


def test_the_default_window_is_24_hours_and_blank_filters_are_no_filters(staff_client, outcomes):
    body = staff_client.get(URL + "?tool=&code=&client=&variant=&upstream=").json()

    assert body["window"]["name"] == "24h"
    assert body["filters"] == {"tool": None, "code": None, "client": None, "variant": None, "upstream": None}
    assert body["totals"]["calls"] == 3


def test_filters_are_applied(staff_client, outcomes):
    body = staff_client.get(URL, {"window": "7d", "client": "token:2"}).json()

    assert body["filters"]["client"] == "token:2"
    assert body["totals"]["calls"] == 1 and body["totals"]["errors"] == 0


def test_a_token_created_for_metrics_reads_them(plain_user, outcomes):
    client = bearer_client(client_token_create(user=plain_user, name="grafana", can_read_metrics=True)[1])

    assert client.get(URL).json()["totals"]["calls"] == 3


def test_a_staff_users_token_reads_metrics(reader_client, outcomes):
    # reader_client's token has no metrics flag, but its user is staff and may see the dashboard anyway.
    assert reader_client.get(URL, {"window": "1h"}).status_code == 200


@pytest.mark.parametrize("write", [False, True])
def test_a_token_not_created_for_metrics_is_refused(plain_user, outcomes, write):
    client = bearer_client(client_token_create(user=plain_user, name="agent", can_write_catalog=write)[1])

    error = assert_api_error(client.get(URL), 403, "permission_denied")
    assert "metrics" in error["message"]
    assert "totals" not in str(error)


def test_a_metrics_token_still_cannot_write_the_catalog(plain_user, catalog):
    client = bearer_client(client_token_create(user=plain_user, name="grafana", can_read_metrics=True)[1])

    assert client.get("/api/v1/codes/").status_code == 200
    assert_api_error(
        client.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json"), 403, "permission_denied"
    )


def test_a_metrics_token_with_bad_query_input_gets_a_clear_400(plain_user):
    client = bearer_client(client_token_create(user=plain_user, name="grafana", can_read_metrics=True)[1])

    error = assert_api_error(client.get(URL, {"window": "<script>"}), 400, "invalid")
    assert "<script>" not in str(error)


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


def test_injection_text_in_a_filter_matches_nothing_and_is_answered_as_an_unknown_tool(staff_client, outcomes):
    error = assert_api_error(staff_client.get(URL, {"tool": "send_email' OR '1'='1"}), 400, "invalid")

    assert list(error["fields"]) == ["tool"]
    assert "OR" not in str(error)


def test_the_schema_documents_the_endpoints(anonymous):
    schema = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    metrics = schema["paths"][URL]["get"]
    assert {p["name"] for p in metrics["parameters"]} >= {"window", "tool", "code", "client", "variant"}
    assert metrics["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Metrics")
    assert "202" in schema["paths"]["/api/v1/outcomes/"]["post"]["responses"]


def test_the_schema_of_the_metrics_answer_names_every_field_the_endpoint_sends(anonymous, staff_client, outcomes):
    schema = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    body = staff_client.get(URL, {"window": "24h"}).json()

    assert set(components["MetricsRow"]["properties"]) == set(body["totals"])
    assert set(components["MetricsBreakdownRow"]["properties"]) == set(body["breakdowns"]["code"][0])
    assert set(components["RecentEpisode"]["properties"]) == set(body["recent_episodes"][0])
    resolution = components["MetricsRow"]["properties"]["resolution_p50_seconds"]
    assert resolution["nullable"] is True and "first failed call" in resolution["description"]
