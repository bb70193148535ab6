"""Attacks on POST /api/v1/outcomes/ by the holder of a reporting token: steering adaptive allocation, reaching
another client's episodes and figures, and the bounds of a report (size, repeated IDs, timestamps, rate, the stream
it waits in).

Every report goes the whole way: the REST API, the Redis stream, the real ingest, episodes, rollups and the
allocator. Each attack has its positive control: the same evidence from whoever may give it (errcatalog's own calls,
the victim itself, a reporter staff opted in) does move what the attack left as it was.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.utils import timezone

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.allocation import allocate
from errcatalog.catalog.models import TemplateVariant
from errcatalog.outcomes import ingest, recorder, rollups
from errcatalog.outcomes.events import MAX_EVENT_AGE_SECONDS, MAX_EVENT_FUTURE_SECONDS, OutcomeEvent
from errcatalog.outcomes.metrics import compute_metrics
from errcatalog.outcomes.models import Episode, OutcomeRecord, Rollup
from errcatalog.web.api.views.outcomes import MAX_EVENTS_PER_BATCH
from tests.errcatalog.adaptive import adaptive_two_wordings
from tests.errcatalog.web.api.error_shape import assert_api_error
from tests.support.api import bearer_client, grant

pytestmark = pytest.mark.django_db

URL = "/api/v1/outcomes/"
CODE = "EXECUTION_FAILURE"
TOOL = "crm_sync"
# A client of errcatalog's own endpoint: MCP calls are recorded under "token:<id>".
ENDPOINT_CLIENT = "token:7"


@pytest.fixture
def buffer(settings, redis_url):
    """The outcome buffer on this test's Redis database, one partition; the rate limits' cache emptied (token IDs
    come back in every test's rolled-back database)."""
    settings.REDIS_URL = redis_url
    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 1}
    cache.clear()
    recorder.reset()
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()
    recorder.reset()
    cache.clear()


@pytest.fixture
def adaptive_code(catalog, settings):
    """EXECUTION_FAILURE with two wordings, "clear" and "vague", at even weights, under adaptive allocation."""
    return adaptive_two_wordings(CODE, settings)


def reporter(user, name: str = "external-mcp", **rights):
    token, raw_key = client_token_create(user=user, name=name, can_report_outcomes=True, **rights)
    return token, bearer_client(raw_key)


@pytest.fixture
def weight_changer(django_user_model):
    """A user who may change variants, and so may have a reporter opted in to allocation."""
    user = django_user_model.objects.create_user(username="allocation-reporter", password="pw")
    grant(user, "change_templatevariant")
    return user


def wire(**fields) -> dict:
    event = {"id": uuid.uuid4().hex, "ts": time.time(), "tool": TOOL, "outcome": "ok", "latency_ms": 1.0}
    event.update(fields)
    return event


def episodes(*, recovered: str, exhausted: str, count: int, start: float, code: str = CODE, **fields) -> list[dict]:
    """``count`` wire episodes after each wording, one session each: every one after ``recovered`` recovers at the
    first retry, every one after ``exhausted`` fails three retries. ``fields`` go on every event."""
    events = []
    for n in range(count):
        ts = start + n
        error = {"outcome": "error", "code": code, **fields}
        events += [
            wire(**error, ts=ts, session=f"r{n}", variant=recovered),
            wire(**fields, ts=ts + 0.5, session=f"r{n}"),
            wire(**error, ts=ts, session=f"x{n}", variant=exhausted),
            *(wire(**error, ts=ts + k / 4, session=f"x{n}") for k in (1, 2, 3)),
        ]
    return events


def observed_by_the_endpoint(events: list[dict]) -> list[OutcomeEvent]:
    """The same calls as errcatalog's own endpoint records them: its client, its event IDs."""
    own = {"ts", "tool", "outcome", "session", "code", "variant", "latency_ms"}
    return [OutcomeEvent(**{k: v for k, v in e.items() if k in own}, client=ENDPOINT_CLIENT) for e in events]


def report(client, events: list[dict]):
    return client.post(URL, {"events": events}, format="json")


def stored_and_rolled_up() -> None:
    ingest.drain()
    rollups.compute_due()


def shares() -> dict[str, float]:
    weights = dict(TemplateVariant.objects.filter(error_code__code=CODE, locale="").values_list("name", "weight"))
    return {name: round(weight / sum(weights.values()), 2) for name, weight in weights.items()}


EVEN = {"clear": 0.5, "vague": 0.5}


# --- Steering adaptive allocation ------------------------------------------------------------------------------


def test_a_reporter_not_opted_in_moves_no_weight_with_thousands_of_events_dressed_as_the_endpoints(
    adaptive_code, buffer, plain_user
):
    _token, client = reporter(plain_user)
    start = time.time() - 1800
    # Three full batches: every episode after "vague" recovered, every one after "clear" exhausted. Dressed as the
    # endpoint's own calls (its client name, source "mcp"), half of them in another locale.
    flood = []
    for batch in range(3):
        claimed = episodes(recovered="vague", exhausted="clear", count=166, start=start + 200 * batch)
        for n, event in enumerate(claimed):
            event.update(client=ENDPOINT_CLIENT, source="mcp", session=f"{batch}-{event['session']}")
            if n % 2:
                event["locale"] = "de"
        flood.append(claimed)
    assert sum(map(len, flood)) == 2988

    for claimed in flood:
        assert report(client, claimed).status_code == 202
    stored_and_rolled_up()
    assert OutcomeRecord.objects.filter(source="api").count() == 2988
    assert not OutcomeRecord.objects.filter(client=ENDPOINT_CLIENT).exists()

    assert allocate(seed=1) == []
    assert shares() == EVEN

    # Positive control: the same calls observed by errcatalog itself move the weights a full step.
    ingest.ingest_events(observed_by_the_endpoint(flood[0]))
    rollups.compute_due()
    allocate(seed=1)
    assert shares() == {"clear": 0.3, "vague": 0.7}


def test_an_opted_in_reporters_flood_moves_a_share_one_step_per_run_and_never_below_the_floor(
    adaptive_code, buffer, weight_changer
):
    """An opted-in reporter is trusted as errcatalog's own calls are: its claims need no render errcatalog made.
    What bounds it is the allocator's guard rails, however many events it sends."""
    _token, client = reporter(weight_changer, outcomes_count_for_allocation=True)
    flood = episodes(recovered="vague", exhausted="clear", count=166, start=time.time() - 1800)
    assert report(client, flood).status_code == 202
    stored_and_rolled_up()

    runs = []
    for seed in range(3):
        allocate(seed=seed)
        runs.append(shares())

    assert runs == [{"clear": 0.3, "vague": 0.7}, {"clear": 0.1, "vague": 0.9}, {"clear": 0.1, "vague": 0.9}]


@pytest.mark.parametrize(
    ("code", "variant", "locale", "moves"),
    [
        (CODE, "vague", None, True),  # positive control: the real variant
        (CODE, "Vague", None, False),
        (CODE, "ghost", None, False),
        ("MISSING_PARAMETER", "vague", None, False),
        # The rollups do not split by locale (docs: adaptive allocation): a same-named variant of another locale
        # counts for this one.
        (CODE, "vague", "de", True),
    ],
    ids=["real_variant", "other_case", "no_such_variant", "another_code", "same_name_another_locale"],
)
def test_an_opted_in_reporter_moves_only_the_variants_it_names_exactly(
    adaptive_code, buffer, weight_changer, code, variant, locale, moves
):
    # What errcatalog observed itself: "clear" recovers, "vague" does not; the allocator favours "clear".
    observed = episodes(recovered="clear", exhausted="vague", count=40, start=time.time() - 3600)
    ingest.ingest_events(observed_by_the_endpoint(observed))
    # The reporter claims the opposite, 166 episodes each, under the names given.
    _token, client = reporter(weight_changer, outcomes_count_for_allocation=True)
    located = {"locale": locale} if locale else {}
    claimed = episodes(recovered=variant, exhausted="clear", count=166, start=time.time() - 1800, code=code, **located)
    assert report(client, claimed).status_code == 202
    stored_and_rolled_up()

    allocate(seed=1)

    assert shares() == ({"clear": 0.3, "vague": 0.7} if moves else {"clear": 0.7, "vague": 0.3})


@pytest.mark.parametrize("lapse", ["none", "token_revoked", "user_deactivated", "permission_withdrawn"])
def test_an_opted_in_reporters_events_stop_counting_once_its_opt_in_lapses(
    adaptive_code, buffer, weight_changer, lapse
):
    token, client = reporter(weight_changer, outcomes_count_for_allocation=True)
    assert (
        report(client, episodes(recovered="vague", exhausted="clear", count=40, start=time.time() - 900)).status_code
        == 202
    )
    stored_and_rolled_up()

    if lapse == "token_revoked":
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    elif lapse == "user_deactivated":
        weight_changer.is_active = False
        weight_changer.save(update_fields=["is_active"])
    elif lapse == "permission_withdrawn":
        weight_changer.user_permissions.remove(Permission.objects.get(codename="change_templatevariant"))
    allocate(seed=1)

    assert shares() == ({"clear": 0.3, "vague": 0.7} if lapse == "none" else EVEN)


# --- Another client's episodes and figures --------------------------------------------------------------------


def test_an_event_id_the_endpoint_issued_cannot_be_reported_as_its_recovery(buffer, plain_user):
    """The endpoint's event IDs reach the model (a system error's text names its event ID); reporting one, or a
    retry under the endpoint client's own name and session, neither rewrites that event nor ends its episode."""
    opened = OutcomeEvent(
        tool=TOOL, outcome="error", code=CODE, variant="default", client=ENDPOINT_CLIENT, session="s1",
        ts=time.time() - 60,
    )  # fmt: skip
    ingest.ingest_events([opened])
    episode = Episode.objects.get()
    before = compute_metrics("1h", client=ENDPOINT_CLIENT)["totals"]
    _token, client = reporter(plain_user)

    claims = [
        wire(id=opened.id, ts=opened.ts, outcome="ok", client=ENDPOINT_CLIENT, session="s1"),
        wire(ts=opened.ts + 5, outcome="ok", client=ENDPOINT_CLIENT, session="s1"),
        wire(ts=opened.ts + 5, outcome="ok", client=ENDPOINT_CLIENT, session="s1", source="mcp"),
    ]
    assert report(client, claims).status_code == 202
    ingest.drain()

    row = OutcomeRecord.objects.get(id=opened.id)
    assert (row.outcome, row.client, row.source) == ("error", ENDPOINT_CLIENT, "mcp")
    episode.refresh_from_db()
    assert (episode.ending, episode.retries, episode.last_at.timestamp()) == ("open", 0, pytest.approx(opened.ts))
    assert compute_metrics("1h", client=ENDPOINT_CLIENT)["totals"] == before

    # Positive control: the endpoint's own retry of that call recovers the episode.
    ingest.ingest_events(
        [OutcomeEvent(tool=TOOL, outcome="ok", client=ENDPOINT_CLIENT, session="s1", ts=opened.ts + 10)]
    )
    episode.refresh_from_db()
    assert (episode.ending, episode.recovered_at_attempt) == ("recovered", 1)
    assert compute_metrics("1h", client=ENDPOINT_CLIENT)["totals"]["calls"] == before["calls"] + 1


def test_a_reporter_cannot_recover_or_inflate_another_reporters_client(buffer, plain_user, django_user_model):
    victim, victim_client = reporter(django_user_model.objects.create_user(username="victim", password="pw"))
    attacker, attacker_client = reporter(plain_user, name="attacker")
    opening = wire(outcome="error", code=CODE, variant="default", client="ide", session="s1", ts=time.time() - 60)
    assert report(victim_client, [opening]).status_code == 202
    ingest.drain()
    episode = Episode.objects.get()
    victims = f"reporter:{victim.pk}/ide"
    assert episode.client == victims
    before = compute_metrics("1h", client=victims)["totals"]

    # Its client named as the victim's stored one, as the victim's token, and as the victim names it; the victim's
    # session and event ID; a hundred successes each.
    names = [victims, f"reporter:{victim.pk}", "ide"]
    claims = [wire(ts=opening["ts"] + 5, client=name, session="s1") for name in names for _ in range(100)]
    claims.append(wire(id=opening["id"], ts=opening["ts"], client="ide", session="s1"))
    assert report(attacker_client, claims).status_code == 202
    ingest.drain()

    episode.refresh_from_db()
    assert (episode.ending, episode.retries) == ("open", 0)
    assert compute_metrics("1h", client=victims)["totals"] == before
    # Everything it sent is its own, under its own token.
    assert OutcomeRecord.objects.filter(client__startswith=f"reporter:{attacker.pk}/").count() == 301
    assert compute_metrics("1h", client=f"reporter:{attacker.pk}/{victims}")["totals"]["calls"] == 100

    # Positive control: the victim's own retry recovers its episode and counts under its client.
    assert report(victim_client, [wire(ts=opening["ts"] + 10, client="ide", session="s1")]).status_code == 202
    ingest.drain()
    episode.refresh_from_db()
    assert (episode.ending, episode.recovered_at_attempt) == ("recovered", 1)
    assert compute_metrics("1h", client=victims)["totals"]["calls"] == before["calls"] + 1


# --- Bounds ---------------------------------------------------------------------------------------------------


def test_one_event_id_repeated_through_a_full_batch_is_stored_once_and_never_rewritten(buffer, plain_user):
    _token, client = reporter(plain_user)
    same = uuid.uuid4().hex
    repeated = [wire(id=same, client="ide", session=f"s{n}") for n in range(MAX_EVENTS_PER_BATCH)]
    assert report(client, repeated).json() == {"accepted": MAX_EVENTS_PER_BATCH}
    ingest.drain()
    assert OutcomeRecord.objects.filter(source="api").count() == 1
    first = OutcomeRecord.objects.get()

    # Sent again as an error that would open an episode: the stored event stays as it was.
    assert report(client, [wire(id=same, outcome="error", code=CODE, client="ide")]).status_code == 202
    ingest.drain()
    assert list(OutcomeRecord.objects.values_list("id", "outcome", "session")) == [(first.id, "ok", first.session)]
    assert not Episode.objects.exists()

    # Positive control: a full batch of distinct IDs is a thousand events.
    assert report(client, [wire(client="ide") for _ in range(MAX_EVENTS_PER_BATCH)]).status_code == 202
    ingest.drain()
    assert OutcomeRecord.objects.filter(source="api").count() == 1 + MAX_EVENTS_PER_BATCH


@pytest.mark.parametrize(
    ("offset", "accepted"),
    [
        (-MAX_EVENT_AGE_SECONDS + 120, True),
        (MAX_EVENT_FUTURE_SECONDS - 60, True),
        (-MAX_EVENT_AGE_SECONDS - 60, False),
        (MAX_EVENT_FUTURE_SECONDS + 60, False),
        (-time.time(), False),  # the epoch
        (10 * 365 * 86400, False),
        (1e308, False),
    ],
    ids=["almost_7_days_ago", "a_clock_slightly_ahead", "over_7_days_ago", "ahead_of_the_clock", "the_epoch",
         "in_ten_years", "1e308"],
)  # fmt: skip
def test_timestamps_outside_the_last_seven_days_are_refused_and_no_bucket_outside_them_is_written(
    buffer, plain_user, offset, accepted
):
    _token, client = reporter(plain_user)
    event = wire(outcome="error", code=CODE, ts=time.time() + offset)

    response = report(client, [event])

    if not accepted:
        error = assert_api_error(response, 400, "invalid")
        assert list(error["fields"]) == ["events.0.ts"]
        return
    assert response.status_code == 202
    stored_and_rolled_up()
    row = OutcomeRecord.objects.get()
    assert row.occurred_at.timestamp() == pytest.approx(event["ts"])
    assert Rollup.objects.filter(bucket=rollups.bucket_start(row.occurred_at), code=CODE).exists()


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_timestamp_that_is_no_finite_number_is_refused(buffer, plain_user, settings, number):
    _token, client = reporter(plain_user)
    body = f'{{"events": [{{"id": "{uuid.uuid4().hex}", "ts": {number}, "tool": "{TOOL}", "outcome": "ok"}}]}}'

    response = client.post(URL, data=body, content_type="application/json")

    assert response.status_code == 400
    assert buffer.xlen(settings.OUTCOMES["STREAM_KEY"]) == 0


def test_a_batch_spread_over_seven_days_makes_the_rollup_job_recompute_only_those_days_buckets(buffer, plain_user):
    rollups.compute_due()  # the job's watermark, as in a running deployment
    _token, client = reporter(plain_user)
    now = time.time()
    hourly = [wire(ts=now - hours * 3600 - 30, session=f"h{hours}") for hours in range(7 * 24)]

    assert report(client, hourly).status_code == 202
    ingest.drain()
    recomputed = rollups.compute_due()

    # At most one bucket per hour of the last seven days (and the current one): a report cannot make the job
    # rewrite older history, however it spreads its events.
    assert 7 * 24 <= recomputed <= 7 * 24 + 2
    oldest = datetime.fromtimestamp(now - MAX_EVENT_AGE_SECONDS, UTC) - timedelta(hours=1)
    assert not Rollup.objects.filter(bucket__lt=oldest).exists()
    assert Rollup.objects.filter(client__startswith="reporter:").values("bucket").distinct().count() >= 7 * 24


def test_a_reporters_flood_spends_its_own_limit_only_and_refused_batches_spend_it_too(
    buffer, plain_user, django_user_model, settings
):
    settings.ERRCATALOG = {**settings.ERRCATALOG, "OUTCOME_REPORTS_PER_MINUTE": 3}
    _token, flooder = reporter(plain_user, name="flooder")
    _other, other = reporter(django_user_model.objects.create_user(username="other", password="pw"), name="other")

    answers = [report(flooder, [wire(ts="now")]).status_code for _ in range(3)]  # invalid batches
    answers.append(report(flooder, [wire()]).status_code)

    assert answers == [400, 400, 400, 429]
    # Positive control: another reporter's limit is its own.
    assert [report(other, [wire()]).status_code for _ in range(4)] == [202, 202, 202, 429]
    ingest.drain()
    assert OutcomeRecord.objects.count() == 3


def test_a_reporters_flood_never_evicts_the_endpoints_events_waiting_in_the_stream(buffer, plain_user, settings):
    """The stream is bounded (``STREAM_MAXLEN``, oldest trimmed first); while no worker drains it, reports must not
    push errcatalog's own unstored calls out of it."""
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True, "STREAM_MAXLEN": 1000, "FLUSH_INTERVAL_MS": 600_000}
    recorder.reset()
    own = [OutcomeEvent(tool=TOOL, outcome="ok", client=ENDPOINT_CLIENT, session=f"s{n}") for n in range(400)]
    for event in own:
        recorder.record(event)
    assert recorder.flush(timeout=10) is True
    _token, client = reporter(plain_user)

    flood = [report(client, [wire(session=f"f{n}") for n in range(MAX_EVENTS_PER_BATCH)]) for _ in range(3)]
    ingest.drain()

    assert OutcomeRecord.objects.filter(source="mcp").count() == len(own)
    assert {response.status_code for response in flood} == {503}
    assert_api_error(flood[0], 503, "outcomes_unavailable")
    assert flood[0]["Retry-After"] == "5"
    # Positive control: with the stream drained, a report that takes up to half of it is accepted and stored.
    assert report(client, [wire(session=f"a{n}") for n in range(500)]).status_code == 202
    ingest.drain()
    assert OutcomeRecord.objects.filter(source="api").count() == 500
