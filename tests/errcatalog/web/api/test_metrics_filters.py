"""GET /api/v1/metrics/ with a filter value that names nothing: a 400 naming the filter, never an answer of zeros.

Known are a value some recorded outcome has, and what the catalog, the gateway or the tokens name (each case here);
a known value with nothing in the window still answers zeros. The metrics answer is not paged: paging parameters
are refused rather than ignored.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.models import ParameterHint
from errcatalog.gateway.models import Upstream, UpstreamTool
from errcatalog.outcomes.models import RollupSummary
from errcatalog.web.api.metrics_filters import UNKNOWN_FILTER_MESSAGES
from tests.errcatalog.web.api.error_shape import assert_api_error
from tests.support.api import bearer_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/metrics/"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("tool", "send_emial"),
        ("tool", "send email"),  # a space: never a tool name
        ("tool", "<script>alert(1)</script>"),
        ("code", "NOT_A_CODE"),
        ("variant", "no-such-variant"),
        ("upstream", "nowhere"),
        ("client", "token:999999"),
        ("client", "somebody"),
    ],
)
@pytest.mark.parametrize("window", ["1h", "24h", "30d"])
def test_a_filter_value_that_names_nothing_is_a_400_naming_the_filter(
    catalog, staff_client, outcomes, name, value, window
):
    error = assert_api_error(staff_client.get(URL, {"window": window, name: value}), 400, "invalid")

    assert error["fields"] == {name: [UNKNOWN_FILTER_MESSAGES[name]]}
    assert value not in str(error)  # the value sent is never echoed


def test_each_unknown_filter_is_named_at_once(staff_client, outcomes):
    error = assert_api_error(
        staff_client.get(URL, {"tool": "typo", "code": "TYPO", "client": "token:1"}), 400, "invalid"
    )

    assert list(error["fields"]) == ["tool", "code"]  # token:1 has recorded outcomes


def test_a_blank_filter_is_still_no_filter(staff_client, outcomes):
    body = staff_client.get(URL, {"tool": "", "code": ""}).json()

    assert body["filters"]["tool"] is None and body["totals"]["calls"] == 3


def test_recorded_values_that_have_nothing_together_answer_zeros(staff_client, outcomes):
    # Each was recorded; token:2 never met MISSING_PARAMETER.
    response = staff_client.get(URL, {"window": "7d", "client": "token:2", "code": "MISSING_PARAMETER"})

    assert response.status_code == 200
    assert response.json()["totals"]["calls"] == 0


def test_a_call_not_yet_rolled_up_is_known_in_the_window_that_reads_the_events(staff_client, outcomes):
    RollupSummary.objects.all().delete()  # as in the minute before the rollup job runs

    assert staff_client.get(URL, {"window": "1h", "tool": "send_email"}).json()["totals"]["calls"] == 3


def test_catalog_codes_and_variants_without_outcomes_answer_zeros(catalog, staff_client):
    for name, value in (("code", "NOT_FOUND"), ("variant", "default")):
        response = staff_client.get(URL, {name: value})
        assert response.status_code == 200, response.content
        assert response.json()["totals"]["calls"] == 0


@pytest.mark.parametrize("tool", ["explain_error", "send_email"])
def test_a_tool_of_ours_that_never_recorded_an_outcome_is_known(staff_client, tool):
    """The catalog's and the demo's tools, served at /mcp here, answer zeros before their first call."""
    answer = staff_client.get(URL, {"tool": tool})
    assert answer.status_code == 200, answer.content
    assert answer.json()["totals"]["calls"] == 0


def test_a_tool_with_a_parameter_hint_is_known(staff_client):
    ParameterHint.objects.create(tool="deploy", parameter="environment", question="Which environment?")

    assert staff_client.get(URL, {"tool": "deploy"}).status_code == 200


def _upstream(*, enabled: bool = True, tools: list[str] | None = None, prefix: str = "git") -> Upstream:
    upstream = Upstream.objects.create(
        name=prefix.strip("_").lower() or "git",
        prefix=prefix,
        url="https://mcp.example.com/mcp",
        enabled=enabled,
        tools=tools or [],
    )
    for name, approved in (("status", {"name": "status"}), ("log", None)):
        UpstreamTool.objects.create(
            upstream=upstream,
            name=name,
            status=UpstreamTool.Status.APPROVED if approved else UpstreamTool.Status.REVIEW,
            approved=approved,
            listed_at=timezone.now(),
        )
    return upstream


def test_a_tool_the_gateway_serves_is_known_by_its_mcp_name(staff_client):
    _upstream()

    assert staff_client.get(URL, {"tool": "git__status"}).status_code == 200
    assert staff_client.get(URL, {"upstream": "git"}).status_code == 200
    # Listed but never approved: not served.
    assert_api_error(staff_client.get(URL, {"tool": "git__log"}), 400, "invalid")
    # Its own name without the prefix is not a name /mcp serves.
    assert_api_error(staff_client.get(URL, {"tool": "status"}), 400, "invalid")


def test_a_prefix_ending_in_an_underscore_is_split_right(staff_client):
    _upstream(prefix="git_")

    assert staff_client.get(URL, {"tool": "git___status"}).status_code == 200


@pytest.mark.parametrize("served", [{"enabled": False}, {"tools": ["log"]}])
def test_a_tool_of_a_disabled_upstream_or_one_it_does_not_expose_is_not_served(staff_client, served):
    _upstream(**served)

    assert_api_error(staff_client.get(URL, {"tool": "git__status"}), 400, "invalid")


def test_a_client_tokens_key_is_known_while_the_token_exists(staff_client, staff_user):
    token, _raw = client_token_create(user=staff_user, name="ci")

    assert staff_client.get(URL, {"client": f"token:{token.pk}"}).status_code == 200
    assert staff_client.get(URL, {"client": f"reporter:{token.pk}/ide"}).status_code == 200
    token.delete()
    assert_api_error(staff_client.get(URL, {"client": f"token:{token.pk}"}), 400, "invalid")


@pytest.mark.parametrize("name", ["limit", "offset", "page_size", "page"])
@pytest.mark.parametrize("value", ["10", "-1", "abc", ""])
def test_paging_parameters_are_refused_not_ignored(staff_client, outcomes, name, value):
    error = assert_api_error(staff_client.get(URL, {name: value}), 400, "invalid")

    assert list(error["fields"]) == [name]
    assert "not a list of pages" in error["fields"][name][0]


# Whether a value exists is told only to those who may read the metrics: every other caller gets the refusal it
# gets without a filter.
def test_anonymous_callers_learn_nothing_of_filter_values(anonymous):
    assert_api_error(anonymous.get(URL, {"tool": "typo"}), 401, "not_authenticated")


def test_a_session_without_staff_rights_learns_nothing_of_filter_values(user_client):
    assert_api_error(user_client.get(URL, {"tool": "typo"}), 403, "permission_denied")


def test_a_token_not_created_for_metrics_learns_nothing_of_filter_values(plain_user):
    client = bearer_client(client_token_create(user=plain_user, name="agent")[1])

    assert_api_error(client.get(URL, {"tool": "typo"}), 403, "permission_denied")


def test_a_metrics_token_of_a_user_without_staff_rights_is_told_of_unknown_values(plain_user, outcomes):
    client = bearer_client(client_token_create(user=plain_user, name="grafana", can_read_metrics=True)[1])

    assert_api_error(client.get(URL, {"tool": "typo"}), 400, "invalid")
    assert client.get(URL, {"tool": "send_email"}).json()["totals"]["calls"] == 3


def test_a_staff_users_token_is_told_of_unknown_values(reader_client, outcomes):
    assert_api_error(reader_client.get(URL, {"tool": "typo"}), 400, "invalid")
