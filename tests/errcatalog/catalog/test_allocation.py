"""Adaptive allocation: Thompson sampling's shares within the guard rails, and a simulated agent population whose
outcomes go through the real ingest and rollups, the allocator and the renderer's weighted pick."""

from __future__ import annotations

import itertools
import json
import random
import re
import time

import pytest
from django.core.management import call_command

from errcatalog.catalog.allocation import SYSTEM_USERNAME, Guards, allocate, floored, next_shares
from errcatalog.catalog.models import TemplateVariant
from errcatalog.catalog.snapshot import catalog_snapshot_from_db
from errcatalog.outcomes import ingest, rollups
from errcatalog.outcomes.events import OutcomeEvent
from errcatalog.outcomes.stats import VariantResult, thompson_shares
from errcatalog.render import Failure, render
from tests.errcatalog.adaptive import adaptive_two_wordings
from tests.support.waiting import wait_until

GUARDS = Guards(min_share=0.1, min_episodes=30, max_step=0.2)
EVEN = {"clear": 0.5, "vague": 0.5}


def _results(**counts: tuple[int, int]) -> dict[str, VariantResult]:
    return {name: VariantResult(name, episodes, recovered) for name, (episodes, recovered) in counts.items()}


# --- The rules, pure -----------------------------------------------------------------------------------------


def test_thompson_sampling_gives_a_clearly_better_variant_nearly_every_render():
    shares = thompson_shares(list(_results(clear=(200, 140), vague=(200, 80)).values()), rng=random.Random(1))
    assert shares["clear"] > 0.99
    close = thompson_shares(list(_results(clear=(20, 11), vague=(20, 10)).values()), rng=random.Random(1))
    assert 0.3 < close["clear"] < 0.8  # cannot be told apart yet: both keep renders


def test_shares_stay_even_until_every_variant_has_enough_episodes():
    shares = next_shares(EVEN, _results(clear=(200, 180), vague=(29, 2)), GUARDS, rng=random.Random(1))
    assert shares == pytest.approx(EVEN)


def test_one_run_moves_a_share_by_at_most_the_step_and_keeps_the_floor():
    results = _results(clear=(500, 400), vague=(500, 100))
    first = next_shares(EVEN, results, GUARDS, rng=random.Random(1))
    assert first["clear"] == pytest.approx(0.7) and first["vague"] == pytest.approx(0.3)
    second = next_shares(first, results, GUARDS, rng=random.Random(2))
    assert second["clear"] == pytest.approx(0.9) and second["vague"] == pytest.approx(0.1)
    third = next_shares(second, results, GUARDS, rng=random.Random(3))
    assert third["vague"] == pytest.approx(0.1)  # the floor: it keeps being measured


def test_the_floor_makes_room_in_proportion():
    assert floored({"a": 0.96, "b": 0.03, "c": 0.01}, 0.1) == pytest.approx({"a": 0.8, "b": 0.1, "c": 0.1})
    assert floored({"a": 0.5, "b": 0.5}, 0.6) == pytest.approx({"a": 0.5, "b": 0.5})  # a floor above even is even


# --- A simulated agent population, through ingest, rollups, the allocator and the renderer ---------------------

# The agents' true recovery rates after each wording.
TRUE_RATE = {"clear": 0.7, "vague": 0.4}
ROUNDS = 8
EPISODES_PER_ROUND = 60


@pytest.fixture
def adaptive_code(db, settings):
    call_command("catalog_load_defaults", verbosity=0)
    return adaptive_two_wordings("EXECUTION_FAILURE", settings)


def _weights() -> dict[str, int]:
    return dict(TemplateVariant.objects.filter(error_code__code="EXECUTION_FAILURE").values_list("name", "weight"))


def _play_round(number: int, rng: random.Random, start: float) -> dict[str, int]:
    """One round of episodes: each agent's call fails, the renderer picks a wording by weight, and the agent then
    recovers on its first retry with that wording's true rate, or fails three retries (exhausted)."""
    snapshot = catalog_snapshot_from_db(version=f"round {number}")  # what every process builds after a change
    events, served = [], {"clear": 0, "vague": 0}
    for episode in range(EPISODES_PER_ROUND):
        ts = start + episode
        variant = render(snapshot, Failure("EXECUTION_FAILURE", tool_name="crm_sync"), pick=rng.random()).variant
        served[variant] += 1
        agent = {"tool": "crm_sync", "client": f"agent-{number}-{episode}"}
        events.append(OutcomeEvent(**agent, outcome="error", code="EXECUTION_FAILURE", variant=variant, ts=ts))
        if rng.random() < TRUE_RATE[variant]:
            events.append(OutcomeEvent(**agent, outcome="ok", ts=ts + 0.5))
        else:
            events += [
                OutcomeEvent(**agent, outcome="error", code="EXECUTION_FAILURE", ts=ts + n / 4) for n in (1, 2, 3)
            ]
    assert ingest.ingest_events(events) == len(events)
    rollups.compute_due()
    return served


def test_a_population_recovering_more_after_one_wording_moves_the_shares_to_it(adaptive_code):
    rng = random.Random(20261125)
    start = time.time() - 3600
    history, served_total = [], {"clear": 0, "vague": 0}
    for number in range(ROUNDS):
        served = _play_round(number, rng, start + number * 100)
        for name in served:
            served_total[name] += served[name]
        allocate(seed=number)
        history.append(_weights())
    # Round 1 has 60 episodes in all: fewer than 30 per variant, so the shares stay even.
    assert history[0] == {"clear": 100, "vague": 100}
    # Within 8 rounds (480 episodes) the better wording holds the larger share, and the worse keeps its floor.
    final = history[-1]
    assert final["clear"] / sum(final.values()) == pytest.approx(0.9, abs=0.01)
    assert final["vague"] / sum(final.values()) == pytest.approx(0.1, abs=0.01)  # the floor: still measured
    # No run moved a share by more than 20 points.
    shares = [{n: w / sum(h.values()) for n, w in h.items()} for h in [{"clear": 100, "vague": 100}, *history]]
    assert all(abs(b["clear"] - a["clear"]) <= 0.2 + 0.001 for a, b in itertools.pairwise(shares))
    # The renderer followed the weights: the better wording was served more often over the run.
    assert served_total["clear"] > served_total["vague"]
    # Every change is in the variants' history, by the system user, with the numbers behind it.
    changes = TemplateVariant.history.filter(error_code__code="EXECUTION_FAILURE", history_type="~")
    assert changes.exists()
    assert {change.history_user.username for change in changes} == {SYSTEM_USERNAME}
    assert all(change.history_change_reason.startswith("adaptive: ") for change in changes)


def test_a_frozen_or_fixed_code_keeps_its_weights(adaptive_code):
    rng = random.Random(7)
    for number in range(3):
        _play_round(number, rng, time.time() - 3600 + number * 100)
    adaptive_code.allocation_frozen = True
    adaptive_code.save()
    assert allocate(seed=1) == [] and _weights() == {"clear": 100, "vague": 100}
    adaptive_code.allocation_frozen, adaptive_code.allocation = False, "fixed"
    adaptive_code.save()
    assert allocate(seed=1) == [] and _weights() == {"clear": 100, "vague": 100}
    adaptive_code.allocation = "adaptive"
    adaptive_code.save()
    assert allocate(seed=1) != []  # the same evidence moves an adaptive code's weights


@pytest.mark.django_db
def test_beat_runs_the_allocator_as_a_registered_task(settings):
    from config.celery import app

    app.loader.import_default_modules()  # what a worker does as it starts: autodiscovery of every tasks module
    schedule = settings.CELERY_BEAT_SCHEDULE["allocate-variants"]
    assert schedule["task"] in app.tasks and schedule["schedule"] == 3600.0


# --- The dashboard ------------------------------------------------------------------------------------------


def test_the_dashboard_shows_each_adaptive_codes_shares_rates_and_gain(adaptive_code, client, staff_user):
    client.force_login(staff_user)
    page = client.get("/dashboard/").content.decode()
    assert 'data-allocation="EXECUTION_FAILURE:"' in page  # an adaptive code is listed before it has outcomes
    rng = random.Random(3)
    for number in range(4):
        _play_round(number, rng, time.time() - 3600 + number * 100)
        allocate(seed=number)
    response = client.get("/dashboard/")
    assert response.status_code == 200
    (item,) = response.context["allocations"]
    rows = {row["variant"]: row for row in item["variants"]}
    weights = _weights()
    assert rows["clear"]["share_text"] == f"{100 * weights['clear'] / sum(weights.values()):.1f} %"
    assert rows["clear"]["episodes"] > 0 and "to" in rows["clear"]["interval_text"]
    # Gained: each wording's recoveries against all the episodes at the wordings' mean rate.
    clear, vague = rows["clear"], rows["vague"]
    mean = (clear["rate"] + vague["rate"]) / 2
    expected = clear["recovered"] + vague["recovered"] - mean * (clear["episodes"] + vague["episodes"])
    assert item["gained_text"] == f"{expected:+.1f}" and expected > 0
    # The chart's data: the shares after each change, from even (once both variants exist) to the allocator's last.
    data = re.search(r'id="ed-allocation-data" type="application/json">(.*?)</script>', page_of(response), re.DOTALL)
    series = json.loads(data.group(1))["EXECUTION_FAILURE:"]["series"]
    both = next(i for i, share in enumerate(series["vague"]) if share is not None)
    assert (series["clear"][both], series["vague"][both]) == (50.0, 50.0)
    assert series["clear"][-1] == round(100 * weights["clear"] / sum(weights.values()), 1)


def page_of(response) -> str:
    return response.content.decode()


# --- A worker killed mid-run ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_allocator_killed_mid_run_changes_nothing_and_the_next_run_changes_whole_sets(
    adaptive_code, celery_worker_process, celery_redis_app, worker_database
):
    """SIGKILL while the allocator's transaction waits to write a weight: no weight and no history row of the
    dead run; the next run writes its change whole (every variant of the locale, with its history)."""
    from errcatalog.catalog.tasks import allocate_variants

    rng = random.Random(3)
    for number in range(3):  # 180 episodes: enough for both wordings
        _play_round(number, rng, time.time() - 3600 + number * 100)
    changes = TemplateVariant.history.filter(error_code__code="EXECUTION_FAILURE", history_type="~")
    assert _weights() == {"clear": 100, "vague": 100} and not changes.exists()
    worker_database.push()
    worker = celery_worker_process.start()

    with worker_database.hold_write_lock("errcatalog_templatevariant"):
        allocate_variants.delay()
        wait_until(lambda: worker_database.writers_waiting() >= 1, what="the allocator to wait to write a weight")
        worker.kill()

    worker_database.pull()
    assert _weights() == {"clear": 100, "vague": 100}
    assert not changes.exists()

    worker.start()
    allocate_variants.delay()

    def changed() -> bool:
        worker_database.pull()
        return _weights() != {"clear": 100, "vague": 100}

    wait_until(changed, seconds=60, what="the next run's weights")
    weights = _weights()
    assert weights["clear"] > weights["vague"]  # the wording agents recover after more often gains
    assert changes.count() % 2 == 0  # each run changed both variants, or none (a run redelivered after the kill)
    assert {change.history_user.username for change in changes} == {SYSTEM_USERNAME}


# --- Reported outcomes -----------------------------------------------------------------------------------------


def _reported_episodes(now: float) -> list[dict]:
    """240 made-up events as a reporter would send them: 40 episodes after each wording, every one after "clear"
    recovered at the first retry and every one after "vague" exhausted."""
    events = []
    for n in range(40):
        ts = now - 600 + n
        failed = {"tool": "crm_sync", "outcome": "error", "code": "EXECUTION_FAILURE", "latency_ms": 1.0}
        events += [
            {**failed, "id": f"{n:032x}", "ts": ts, "client": f"c{n}", "variant": "clear"},
            {"id": f"{n + 100:032x}", "ts": ts + 0.5, "tool": "crm_sync", "outcome": "ok", "client": f"c{n}",
             "latency_ms": 1.0},
            {**failed, "id": f"{n + 200:032x}", "ts": ts, "client": f"v{n}", "variant": "vague"},
        ]  # fmt: skip
        events += [
            {**failed, "id": f"{n + 300 + 100 * k:032x}", "ts": ts + k / 4, "client": f"v{n}"} for k in (1, 2, 3)
        ]
    assert len(events) == 240
    return events


@pytest.fixture
def outcome_buffer(settings, redis_url):
    from errcatalog.outcomes import recorder

    settings.REDIS_URL = redis_url
    recorder.reset()
    yield
    recorder.reset()


@pytest.mark.parametrize("opted_in", [False, True], ids=["reported", "reported_by_an_opted_in_reporter"])
def test_reported_outcomes_move_allocation_only_when_staff_opted_the_reporter_in(
    adaptive_code, outcome_buffer, plain_user, opted_in
):
    from errcatalog.access.tokens import client_token_create
    from tests.support.api import bearer_client, grant

    grant(plain_user, "change_templatevariant")  # who may opt a reporter in: someone who may change the weights
    _token, key = client_token_create(
        user=plain_user, name="reporter", can_report_outcomes=True, outcomes_count_for_allocation=opted_in
    )
    response = bearer_client(key).post("/api/v1/outcomes/", {"events": _reported_episodes(time.time())}, format="json")
    assert response.status_code == 202, response.content
    ingest.drain()
    rollups.compute_due()

    allocate(seed=1)

    weights = _weights()
    share = weights["clear"] / sum(weights.values())
    if opted_in:
        assert share == pytest.approx(0.7, abs=0.01)  # one run's full step: 240 events are evidence enough
    else:
        assert weights == {"clear": 100, "vague": 100}
