"""Reads of client tokens: readable names of outcome clients, and the reporters counted by adaptive allocation."""

from __future__ import annotations

import pytest

from errcatalog.access.selectors import allocation_reporter_ids, client_display_names
from errcatalog.access.tokens import client_token_create, client_token_revoke
from tests.support.api import grant

pytestmark = pytest.mark.django_db


def test_reporters_clients_are_named_after_their_token(plain_user):
    reporter, _key = client_token_create(user=plain_user, name="ci-reporter", can_report_outcomes=True)

    names = client_display_names([f"reporter:{reporter.pk}", f"reporter:{reporter.pk}/ide", f"token:{reporter.pk}/x"])

    assert names == {
        f"reporter:{reporter.pk}": "ci-reporter",
        f"reporter:{reporter.pk}/ide": "ci-reporter / ide",
        f"token:{reporter.pk}/x": "ci-reporter / x",  # a reporter's client as it was stored before
    }


def test_allocation_counts_only_live_reporters_staff_opted_in(plain_user):
    grant(plain_user, "change_templatevariant")
    opted, _ = client_token_create(
        user=plain_user, name="a", can_report_outcomes=True, outcomes_count_for_allocation=True
    )
    client_token_create(user=plain_user, name="b", can_report_outcomes=True)
    revoked, _ = client_token_create(
        user=plain_user, name="c", can_report_outcomes=True, outcomes_count_for_allocation=True
    )
    client_token_revoke(token=revoked)

    assert allocation_reporter_ids() == [opted.pk]


def test_the_allocation_opt_in_ends_when_its_user_may_no_longer_change_variants(plain_user):
    grant(plain_user, "change_templatevariant")
    token, _ = client_token_create(
        user=plain_user, name="a", can_report_outcomes=True, outcomes_count_for_allocation=True
    )
    assert allocation_reporter_ids() == [token.pk]

    plain_user.user_permissions.clear()

    assert allocation_reporter_ids() == []
