"""The inbox of unclassified upstream failures as the serving processes write it: groups, samples, tallies, and
what a database refusing the write costs (nothing: it is written at the next flush)."""

from __future__ import annotations

import pytest
from django.db import connection
from prometheus_client import REGISTRY

from errcatalog.gateway import inbox
from errcatalog.gateway.inbox import SAMPLES_PER_GROUP, _Inbox
from errcatalog.gateway.models import UpstreamFailureGroup, UpstreamFailureSample, UpstreamFailureTally
from errcatalog.gateway.selectors import upstream_failure_share
from errcatalog.gateway.signatures import signature

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_inbox():
    inbox.reset()
    yield
    inbox.reset()


def _counted(upstream: str, classified: str) -> float:
    value = REGISTRY.get_sample_value(
        "errcatalog_upstream_failures_total", {"upstream": upstream, "classified": classified}
    )
    return value or 0.0


def test_unclassified_failures_group_by_signature_with_their_newest_samples():
    before = _counted("git", "false"), _counted("git", "true")
    for number in range(8):
        inbox.note("git", "git__log", "tool_error", f"Widget {number} exploded at '/srv/{number}'", classified=False)
    inbox.note("git", "git__log", "tool_error", "Widget 7 exploded at '/srv/7'", classified=False)  # a repeat
    inbox.note("git", "git__status", "tool_error", "Widget 1 exploded at '/srv/1'", classified=False)
    inbox.note("git", "git__log", "tool_error", "Invalid revision 'x'", classified=True)
    assert inbox.flush()

    log = UpstreamFailureGroup.objects.get(tool="git__log")
    assert (log.upstream, log.kind, log.signature, log.count) == (
        "git",
        "tool_error",
        "Widget <n> exploded at <value>",
        9,
    )
    assert [s.text for s in log.samples.all()] == [f"Widget {n} exploded at '/srv/{n}'" for n in (7, 6, 5, 4, 3)]
    assert UpstreamFailureGroup.objects.get(tool="git__status").count == 1
    assert UpstreamFailureGroup.objects.count() == 2  # a classified failure makes no group
    tallies = {t.classified: t.count for t in UpstreamFailureTally.objects.filter(upstream="git")}
    assert tallies == {False: 10, True: 1}
    assert (_counted("git", "false") - before[0], _counted("git", "true") - before[1]) == (10, 1)

    # Later flushes add to the same rows and keep the newest samples only.
    inbox.note("git", "git__log", "tool_error", "Widget 99 exploded at '/srv/new'", classified=False)
    assert inbox.flush()
    log.refresh_from_db()
    assert log.count == 10 and log.last_seen >= log.first_seen
    assert log.samples.count() == SAMPLES_PER_GROUP
    assert log.samples.first().text == "Widget 99 exploded at '/srv/new'"


def test_processes_add_up_in_one_group():
    first, second = _Inbox(), _Inbox()
    for held in (first, second):
        held.note("web", "web__get", "jsonrpc_error", "upstream said 503", classified=False)
        held.note("web", "web__get", "jsonrpc_error", "upstream said 504", classified=False)
    assert first.flush() and second.flush()
    group = UpstreamFailureGroup.objects.get()
    assert group.count == 4 and group.samples.count() == 4
    assert UpstreamFailureTally.objects.get().count == 4


def test_a_database_that_refuses_the_write_loses_nothing(caplog):
    inbox.note("web", "web__get", "tool_error", "Gadget 1 melted", classified=False)
    inbox.note("web", "web__get", "tool_error", "all fine really", classified=True)
    table = UpstreamFailureGroup._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} RENAME TO inbox_away")
    try:
        assert not inbox.flush()  # the write fails and is rolled back whole
        assert UpstreamFailureTally.objects.count() == 0
        inbox.note("web", "web__get", "tool_error", "Gadget 2 melted", classified=False)
        assert not inbox.flush()
        # One warning for the outage, however many flushes fail.
        assert [r.message for r in caplog.records].count(
            "Could not write the inbox of upstream failures; keeping it for the next try"
        ) == 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE inbox_away RENAME TO {table}")
    assert inbox.flush()
    assert "The inbox of upstream failures is written again" in [r.message for r in caplog.records]
    group = UpstreamFailureGroup.objects.get()
    assert group.count == 2 and {s.text for s in group.samples.all()} == {"Gadget 1 melted", "Gadget 2 melted"}
    assert {t.classified: t.count for t in UpstreamFailureTally.objects.all()} == {False: 2, True: 1}


def test_the_dashboard_share_counts_the_window_and_the_open_groups():
    from django.utils import timezone

    for _ in range(3):
        inbox.note("git", "git__log", "tool_error", "Invalid revision 'x'", classified=True)
    inbox.note("git", "git__log", "tool_error", "Widget 1 exploded", classified=False)
    inbox.note("web", "web__get", "tool_error", "Widget 1 exploded", classified=False)
    assert inbox.flush()
    now = timezone.now()
    share = upstream_failure_share(now - timezone.timedelta(hours=1), now)
    assert (share.classified, share.total, share.open_groups, share.rate) == (3, 5, 2, 0.6)
    git = upstream_failure_share(now - timezone.timedelta(hours=1), now, upstream="git")
    assert (git.classified, git.total, git.open_groups) == (3, 4, 1)
    past = upstream_failure_share(now - timezone.timedelta(days=3), now - timezone.timedelta(days=2))
    assert (past.total, past.rate) == (0, None)


def test_a_sample_is_stored_as_given_and_the_signature_as_masked():
    text = "<script>alert(1)</script> token sk-live-0123456789abcdef at '/home/me'"
    inbox.note("web", "web__get", "tool_error", text, classified=False)
    assert inbox.flush()
    assert UpstreamFailureSample.objects.get().text == text  # escaped where shown (admin), never sent to a model
    assert UpstreamFailureGroup.objects.get().signature == signature(text)
