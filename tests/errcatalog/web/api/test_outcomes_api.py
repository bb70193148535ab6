"""POST /api/v1/outcomes/: external MCP servers report outcomes, validated all-or-nothing, into the same buffer."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest
import redis

from errcatalog.access.tokens import client_token_create
from errcatalog.outcomes import ingest, recorder
from errcatalog.outcomes.events import OutcomeEvent as WireEvent
from errcatalog.outcomes.models import OutcomeRecord
from errcatalog.web.api.views.outcomes import reporter_event_id
from tests.errcatalog.web.api.error_shape import assert_api_error
from tests.support.api import bearer_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/outcomes/"


def wire(**fields) -> dict:
    event = {"id": uuid.uuid4().hex, "ts": time.time(), "tool": "send_email", "outcome": "ok", "latency_ms": 12.5}
    event.update(fields)
    return event


@pytest.fixture
def buffer(settings, redis_url):
    """The outcome buffer on this test's Redis database, one partition (so ``streamed`` reads the events in the
    order they were sent); yields a client to read the stream back."""
    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 1}
    recorder.reset()
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()
    recorder.reset()


@pytest.fixture
def reporter(plain_user):
    token, raw_key = client_token_create(user=plain_user, name="external-mcp", can_report_outcomes=True)
    return token, bearer_client(raw_key)


def streamed(buffer: redis.Redis, settings) -> list[dict]:
    return [json.loads(fields[b"e"]) for _id, fields in buffer.xrange(settings.OUTCOMES["STREAM_KEY"])]


def test_a_batch_is_accepted_into_the_buffer_with_clients_under_the_token(reporter, buffer, settings):
    token, client = reporter
    events = [
        wire(client="ide", session="s1"),
        wire(outcome="error", code="MISSING_PARAMETER", variant="friendly", interactive=True),
    ]

    response = client.post(URL, {"events": events}, format="json")

    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": 2}
    stored = streamed(buffer, settings)
    assert [e["id"] for e in stored] == [reporter_event_id(token, e["id"]) for e in events]
    assert [e["client"] for e in stored] == [f"reporter:{token.pk}/ide", f"reporter:{token.pk}"]
    assert stored[1]["code"] == "MISSING_PARAMETER" and stored[1]["interactive"] is True


def test_an_event_may_say_which_locale_was_served(reporter, buffer, settings):
    _token, client = reporter
    events = [wire(outcome="error", code="MISSING_PARAMETER", variant="default", locale="de"), wire()]

    response = client.post(URL, {"events": events}, format="json")

    assert response.status_code == 202, response.content
    assert [e.get("locale") for e in streamed(buffer, settings)] == ["de", None]


def test_an_empty_batch_is_accepted_and_sends_nothing(reporter, buffer, settings):
    _token, client = reporter

    response = client.post(URL, {"events": []}, format="json")

    assert response.status_code == 202 and response.json() == {"accepted": 0}
    assert streamed(buffer, settings) == []


def test_one_bad_event_refuses_the_whole_batch_naming_each_problem(reporter, buffer, settings):
    _token, client = reporter
    events = [wire(), wire(ts="yesterday"), wire(), wire(outcome="error"), wire(tool="send email; DROP TABLE x")]

    error = assert_api_error(client.post(URL, {"events": events}, format="json"), 400, "invalid")

    assert set(error["fields"]) == {"events.1.ts", "events.3.code", "events.4.tool"}
    assert error["fields"]["events.1.ts"] == ["must be a Unix time in seconds"]
    assert "DROP TABLE" not in json.dumps(error)
    assert streamed(buffer, settings) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([wire()], "non_field_errors"),  # a list, not {"events": [...]}
        ({"events": wire()}, "events"),  # one event, not a list
        ({"events": [wire()], "extra": 1}, "non_field_errors"),
        ({"events": [wire()] * 1001}, "events"),
        ({"events": ["not an object"]}, "events.0"),
        ({"events": [wire(latency_ms="fast")]}, "events.0.latency_ms"),
        ({"events": [wire(interactive="yes")]}, "events.0.interactive"),
        ({"events": [wire(unknown_field=1)]}, "events.0"),
        ({"events": [wire(tool="t" * 100_000)]}, "events.0.tool"),
        ({"events": [wire(client="<script>alert(1)</script>")]}, "events.0.client"),
        ({"events": [wire(client="c" * 128)]}, "events.0.client"),  # too long once under the token
        ({"events": [wire(locale="<script>de</script>")]}, "events.0.locale"),
        ({"events": [wire(locale="de" * 9)]}, "events.0.locale"),  # longer than a catalog locale can be
        ({"events": [wire(locale=["de"])]}, "events.0.locale"),
    ],
)
def test_malformed_batches_are_refused(reporter, buffer, settings, body, field):
    _token, client = reporter

    error = assert_api_error(client.post(URL, body, format="json"), 400, "invalid")

    assert field in error["fields"]
    assert "<script>" not in json.dumps(error)
    assert streamed(buffer, settings) == []


def test_a_body_that_is_not_json_is_refused(reporter, buffer):
    _token, client = reporter

    response = client.post(URL, data="{events: [", content_type="application/json")

    assert_api_error(response, 400, "parse_error")


def test_a_body_beyond_the_upload_limit_is_refused_in_the_api_shape(reporter, buffer, settings):
    _token, client = reporter
    body = json.dumps({"events": [wire()], "padding": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE})

    response = client.post(URL, data=body, content_type="application/json")

    assert_api_error(response, 413, "too_large")
    assert streamed(buffer, settings) == []


def test_outcomes_are_reported_with_a_token_only(anonymous, staff_client, buffer):
    body = {"events": [wire()]}
    assert_api_error(anonymous.post(URL, body, format="json"), 401, "not_authenticated")
    assert_api_error(staff_client.post(URL, body, format="json"), 403, "permission_denied")


def test_an_unreachable_buffer_answers_503_with_retry_after(reporter, settings):
    _token, client = reporter
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    recorder.reset()
    try:
        response = client.post(URL, {"events": [wire()]}, format="json")
    finally:
        recorder.reset()

    assert_api_error(response, 503, "outcomes_unavailable")
    assert response["Retry-After"] == "5"


# --- Event IDs belong to their reporter ------------------------------------------------------------------------


@pytest.fixture
def second_reporter(django_user_model):
    user = django_user_model.objects.create_user(username="other-reporter", password="pw")
    token, raw_key = client_token_create(user=user, name="other-mcp", can_report_outcomes=True)
    return token, bearer_client(raw_key)


def test_another_reporter_cannot_claim_an_event_id_already_sent(reporter, second_reporter, buffer):
    (first, first_client), (second, second_client) = reporter, second_reporter
    shared_id = uuid.uuid4().hex
    assert first_client.post(URL, {"events": [wire(id=shared_id, client="ide")]}, format="json").status_code == 202
    ingest.drain()

    # The same ID from another token is that reporter's own event: stored, and the first one left as it was.
    sent = wire(id=shared_id, outcome="error", code="NOT_FOUND")
    assert second_client.post(URL, {"events": [sent]}, format="json").status_code == 202
    ingest.drain()

    rows = {row.client: row for row in OutcomeRecord.objects.filter(source="api")}
    assert set(rows) == {f"reporter:{first.pk}/ide", f"reporter:{second.pk}"}
    assert rows[f"reporter:{first.pk}/ide"].outcome == "ok"
    assert rows[f"reporter:{second.pk}"].code == "NOT_FOUND"
    assert rows[f"reporter:{first.pk}/ide"].id != rows[f"reporter:{second.pk}"].id


def test_a_reporter_resending_its_batch_is_stored_once(reporter, buffer):
    _token, client = reporter
    batch = {"events": [wire(), wire(outcome="error", code="NOT_FOUND"), wire(client="ide")]}

    for _ in range(3):
        assert client.post(URL, batch, format="json").json() == {"accepted": 3}
        ingest.drain()

    assert OutcomeRecord.objects.filter(source="api").count() == 3


def test_a_reporter_cannot_claim_the_id_of_an_event_of_this_endpoint(reporter, buffer):
    token, client = reporter
    own = WireEvent(tool="explain_error", outcome="ok", client="token:999")
    ingest.ingest_events([own])

    assert client.post(URL, {"events": [wire(id=own.id)]}, format="json").status_code == 202
    ingest.drain()

    assert OutcomeRecord.objects.get(id=own.id).client == "token:999"
    assert OutcomeRecord.objects.get(source="api").client == f"reporter:{token.pk}"


@pytest.mark.parametrize("bad_id", ["", "not-a-uuid", 12345, None, "<script>" + "0" * 24])
def test_an_event_id_that_is_not_a_uuid_is_refused_per_item(reporter, buffer, settings, bad_id):
    _token, client = reporter

    error = assert_api_error(client.post(URL, {"events": [wire(), wire(id=bad_id)]}, format="json"), 400, "invalid")

    assert list(error["fields"]) == ["events.1.id"]
    assert "<script>" not in json.dumps(error)
    assert streamed(buffer, settings) == []


# --- Who may report what, and how often ---------------------------------------------------------------------


def test_a_token_without_reporting_rights_is_refused(plain_user, buffer, settings):
    _token, raw_key = client_token_create(user=plain_user, name="mcp-only", tool_scope=["send_email"])

    response = bearer_client(raw_key).post(URL, {"events": [wire()]}, format="json")

    error = assert_api_error(response, 403, "permission_denied")
    assert "outcome reporting rights" in error["message"]
    assert streamed(buffer, settings) == []


def test_a_reporter_scoped_to_one_tool_cannot_report_another(plain_user, buffer, settings):
    _token, raw_key = client_token_create(
        user=plain_user, name="mail-reporter", tool_scope=["send_email"], can_report_outcomes=True
    )
    client = bearer_client(raw_key)

    response = client.post(URL, {"events": [wire(), wire(tool="delete_everything")]}, format="json")

    error = assert_api_error(response, 403, "permission_denied")
    assert "events 1" in error["message"] and "delete_everything" not in json.dumps(error)  # positions only
    assert streamed(buffer, settings) == []
    assert client.post(URL, {"events": [wire()]}, format="json").status_code == 202


def test_a_flood_of_reports_past_the_limit_gets_429_with_retry_after(reporter, buffer, settings):
    from django.core.cache import cache

    cache.clear()
    settings.ERRCATALOG = {**settings.ERRCATALOG, "OUTCOME_REPORTS_PER_MINUTE": 3}
    _token, client = reporter

    answers = [client.post(URL, {"events": [wire()]}, format="json") for _ in range(5)]

    assert [a.status_code for a in answers] == [202, 202, 202, 429, 429]
    assert_api_error(answers[3], 429, "throttled")
    assert 1 <= int(answers[3]["Retry-After"]) <= 60
    assert len(streamed(buffer, settings)) == 3
