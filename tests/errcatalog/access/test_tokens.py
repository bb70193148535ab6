"""Client tokens: stored hashed, shown once, revocable; the token_create command."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_authenticate, client_token_create, client_token_revoke

pytestmark = pytest.mark.django_db


def test_raw_key_is_returned_once_and_only_its_hash_is_stored(plain_user):
    token, raw_key = client_token_create(user=plain_user, name="laptop")

    assert raw_key.startswith("ec_") and len(raw_key) >= 40
    stored = ClientToken.objects.get(pk=token.pk)
    assert stored.key_hash == hashlib.sha256(raw_key.encode()).hexdigest()
    assert stored.key_prefix == raw_key[:8]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM errcatalog_clienttoken")
        rows = cursor.fetchall()
    assert not any(raw_key in str(value) for row in rows for value in row)
    assert not any(raw_key[8:] in str(value) for row in rows for value in row)


def test_each_token_gets_a_distinct_key(plain_user):
    keys = {client_token_create(user=plain_user, name=f"t{i}")[1] for i in range(5)}
    assert len(keys) == 5


def test_the_key_authenticates_and_records_its_use(plain_user):
    token, raw_key = client_token_create(user=plain_user, name="laptop", tool_scope=["send_email", "send_email"])

    found = client_token_authenticate(raw_key)

    assert found == token
    assert found.user == plain_user
    assert found.tool_scope == ["send_email"]
    assert found.allows_tool("send_email") and not found.allows_tool("delete_everything")
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_last_used_is_written_at_most_once_a_minute(plain_user, django_assert_num_queries):
    token, raw_key = client_token_create(user=plain_user, name="laptop")
    client_token_authenticate(raw_key)

    with django_assert_num_queries(1):  # the lookup only
        client_token_authenticate(raw_key)

    ClientToken.objects.filter(pk=token.pk).update(last_used_at=token.created_at - timedelta(minutes=2))
    with django_assert_num_queries(2):  # the lookup and the update
        client_token_authenticate(raw_key)


@pytest.mark.parametrize(
    "raw_key",
    ["", "ec_", "ec_not-a-real-key", "Bearer ec_x", "x" * 10_000, "ec_" + "a" * 500],
)
def test_unknown_keys_are_refused(plain_user, raw_key):
    client_token_create(user=plain_user, name="laptop")
    assert client_token_authenticate(raw_key) is None


def test_a_revoked_key_is_refused(plain_user):
    token, raw_key = client_token_create(user=plain_user, name="laptop")
    client_token_revoke(token=token)
    first_revocation = token.revoked_at

    client_token_revoke(token=token)

    assert client_token_authenticate(raw_key) is None
    token.refresh_from_db()
    assert token.revoked and token.revoked_at == first_revocation


def test_the_key_of_an_inactive_user_is_refused(plain_user):
    _token, raw_key = client_token_create(user=plain_user, name="laptop")
    plain_user.is_active = False
    plain_user.save(update_fields=["is_active"])

    assert client_token_authenticate(raw_key) is None


def test_token_create_prints_the_key_alone_on_stdout(plain_user):
    out, err = StringIO(), StringIO()

    call_command(
        "token_create", "--user", "reader", "--name", "ci", "--write", "--tool", "send_email", stdout=out, stderr=err
    )

    raw_key = out.getvalue().strip()
    token = client_token_authenticate(raw_key)
    assert token is not None and token.name == "ci" and token.user == plain_user
    assert token.can_write_catalog and token.tool_scope == ["send_email"]
    assert "not shown again" in err.getvalue()
    assert raw_key not in err.getvalue()


def test_token_create_defaults_to_read_only_and_every_tool(plain_user):
    out = StringIO()
    call_command("token_create", "--user", "reader", "--name", "ci", stdout=out, stderr=StringIO())

    token = client_token_authenticate(out.getvalue().strip())
    assert not token.can_write_catalog and token.tool_scope == []
    assert not token.can_read_metrics
    assert token.can_read_catalog  # the catalog's MCP resources and prompts
    assert token.can_call_tools


def test_token_create_no_catalog_hides_the_catalogs_resources_and_prompts(plain_user):
    out, err = StringIO(), StringIO()
    call_command("token_create", "--user", "reader", "--name", "bot", "--no-catalog", stdout=out, stderr=err)

    token = client_token_authenticate(out.getvalue().strip())
    assert not token.can_read_catalog
    assert "no catalog resources or prompts" in err.getvalue()


def test_token_create_no_tools_makes_a_key_that_calls_no_tool(plain_user):
    out, err = StringIO(), StringIO()
    call_command("token_create", "--user", "reader", "--name", "reader", "--no-tools", stdout=out, stderr=err)

    token = client_token_authenticate(out.getvalue().strip())
    assert not token.can_call_tools and token.can_read_catalog
    assert "no tool calls" in err.getvalue()
    with pytest.raises(CommandError, match="--no-tools"):
        call_command("token_create", "--user", "reader", "--name", "x", "--no-tools", "--tool", "send_email")


def test_token_create_metrics_makes_a_monitoring_key(plain_user):
    out, err = StringIO(), StringIO()
    call_command("token_create", "--user", "reader", "--name", "grafana", "--metrics", stdout=out, stderr=err)

    token = client_token_authenticate(out.getvalue().strip())
    assert token.can_read_metrics and not token.can_write_catalog
    assert "metrics" in err.getvalue()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody", "--name", "ci"], "no user"),
        (["--user", "reader", "--name", "  "], "name"),
        (["--user", "reader", "--name", "ci", "--tool", "rm -rf /"], "Not a tool name"),
    ],
)
def test_token_create_refuses_bad_arguments(plain_user, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("token_create", *args, stdout=StringIO(), stderr=StringIO())
    assert not ClientToken.objects.exists()


def test_token_create_metrics_for_a_staff_user_says_the_flag_only_matters_once_they_are_not_staff(django_user_model):
    django_user_model.objects.create_user(username="ops", password="pw", is_staff=True)
    out, err = StringIO(), StringIO()

    call_command("token_create", "--user", "ops", "--name", "grafana", "--metrics", stdout=out, stderr=err)

    token = client_token_authenticate(out.getvalue().strip())
    assert token.can_read_metrics
    assert "ops is staff" in err.getvalue()
    assert "without --metrics" in err.getvalue()


def test_token_create_without_metrics_for_a_staff_user_says_the_token_reads_them_anyway(django_user_model):
    django_user_model.objects.create_user(username="ops", password="pw", is_staff=True)
    out, err = StringIO(), StringIO()

    call_command("token_create", "--user", "ops", "--name", "laptop", stdout=out, stderr=err)

    assert not client_token_authenticate(out.getvalue().strip()).can_read_metrics
    assert "metrics (as a staff user's token, while the user is staff)" in err.getvalue()


def test_token_create_report_outcomes_gives_the_reporting_right_and_not_allocation(plain_user):
    out, err = StringIO(), StringIO()

    call_command("token_create", "--user", "reader", "--name", "ci", "--report-outcomes", stdout=out, stderr=err)

    token = client_token_authenticate(out.getvalue().strip())
    assert token.can_report_outcomes and not token.outcomes_count_for_allocation
    assert "reports outcomes" in err.getvalue() and "allocation" not in err.getvalue()


def test_token_create_count_for_allocation_needs_report_outcomes(plain_user):
    with pytest.raises(CommandError, match="needs --report-outcomes"):
        call_command(
            "token_create",
            "--user",
            "reader",
            "--name",
            "ci",
            "--count-for-allocation",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert not ClientToken.objects.exists()


def test_tokens_do_not_report_outcomes_unless_created_to(plain_user):
    token, _key = client_token_create(user=plain_user, name="laptop")
    assert not token.can_report_outcomes and not token.outcomes_count_for_allocation


def test_token_create_limits_a_token_to_the_servers_named(plain_user):
    out, err = StringIO(), StringIO()
    call_command("token_create", "--user", "reader", "--name", "ide", "--server", "", "--server", "git",
                 stdout=out, stderr=err)  # fmt: skip

    token = client_token_authenticate(out.getvalue().strip())
    assert token.servers == ["", "git"]
    assert token.allows_server("") and token.allows_server("git") and not token.allows_server("time")
    assert "on /mcp, /mcp/git" in err.getvalue()
    assert client_token_create(user=plain_user, name="all")[0].allows_server("anything")


@pytest.mark.parametrize("server", ["GIT", "../git", "git/x", "/mcp", "g" * 65, "git\n"])
def test_token_create_refuses_a_server_that_is_no_server_name(plain_user, server):
    with pytest.raises(CommandError, match="Not a server name"):
        call_command("token_create", "--user", "reader", "--name", "ide", "--server", server, stdout=StringIO())
    assert not ClientToken.objects.filter(name="ide").exists()
