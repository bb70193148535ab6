"""Upstreams in admin: secrets entered but never shown back, stdio for superusers only, a real connection test."""

from __future__ import annotations

import re
import sys
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from errcatalog.gateway.models import Upstream, UpstreamHealth
from errcatalog.gateway.services import HEALTH_FORGET_AFTER, HealthReport, upstream_health_report
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER

pytestmark = pytest.mark.django_db

SECRET = "Bearer s3cr3t-value-that-must-not-show"


def _form(**fields):
    base = {
        "name": "remote",
        "prefix": "remote",
        "enabled": "on",
        "transport": "http",
        "url": "https://mcp.example.com/mcp",
        "command": "",
        "cwd": "",
        "timeout_seconds": "30",
        "max_concurrency": "8",
        "headers_entry": "",
        "env_entry": "",
        "args_entry": "",
        "tools_entry": "",
    }
    return {**base, **fields}


@pytest.fixture
def operator(client, django_user_model):
    """A staff user with every upstream permission, but not a superuser."""
    user = django_user_model.objects.create_user(username="operator", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__endswith="upstream"))
    client.force_login(user)
    return client


@pytest.fixture
def superuser(client, staff_user):
    client.force_login(staff_user)
    return client


def test_a_header_entered_in_admin_is_sealed_and_never_shown_back(operator):
    added = operator.post(reverse("admin:errcatalog_upstream_add"), _form(headers_entry=f"Authorization: {SECRET}"))
    assert added.status_code == 302, added.content.decode()[:2000]
    upstream = Upstream.objects.get(name="remote")
    assert upstream.headers["Authorization"].startswith("sealed:")
    page = operator.get(reverse("admin:errcatalog_upstream_change", args=[upstream.pk])).content.decode()
    assert "s3cr3t" not in page and upstream.headers["Authorization"] not in page
    assert "sealed (set)" in page
    # Saving again with the entry left empty keeps the stored header.
    operator.post(reverse("admin:errcatalog_upstream_change", args=[upstream.pk]), _form(timeout_seconds="10"))
    upstream.refresh_from_db()
    assert upstream.timeout_seconds == 10 and upstream.headers["Authorization"].startswith("sealed:")


def test_an_upstream_reverted_from_its_history_is_saved_through_the_services(operator):
    operator.post(reverse("admin:errcatalog_upstream_add"), _form())
    upstream = Upstream.objects.get(name="remote")
    operator.post(reverse("admin:errcatalog_upstream_change", args=[upstream.pk]), _form(timeout_seconds="10"))
    first = upstream.history.order_by("history_id").first()
    revert = reverse("admin:errcatalog_upstream_simple_history", args=[upstream.pk, first.history_id])
    assert operator.post(revert, _form(session_mode="shared")).status_code == 302
    upstream.refresh_from_db()
    assert upstream.timeout_seconds == 30
    assert upstream.history.first().history_change_reason == "admin"


def test_a_staff_user_who_is_not_a_superuser_cannot_add_a_stdio_upstream(operator):
    page = operator.post(
        reverse("admin:errcatalog_upstream_add"),
        _form(name="local", prefix="local", transport="stdio", url="", command="sh", args_entry="-c\nid"),
    )
    assert page.status_code == 200
    assert "Only a superuser" in page.content.decode()
    assert not Upstream.objects.exists()


def test_a_pasted_mcpservers_block_becomes_upstreams_with_the_variables_to_set(operator, settings):
    # Staff who are not superusers may refer only to variables the deployment allows.
    settings.GATEWAY = {**settings.GATEWAY, "ENV_ALLOWLIST": ("UPSTREAM_*",)}
    listing = operator.get(reverse("admin:errcatalog_upstream_changelist")).content.decode()
    assert reverse("admin:errcatalog_upstream_import") in listing
    block = '{"mcpServers": {"GitHub": {"type": "http", "url": "https://mcp.example.com/mcp", ' \
        f'"headers": {{"Authorization": "{SECRET}"}}}}}}}}'  # fmt: skip

    done = operator.post(reverse("admin:errcatalog_upstream_import"), {"block": block}, follow=True)

    page = done.content.decode()
    assert "Imported: 1 created" in page and "UPSTREAM_GITHUB_AUTHORIZATION" in page
    assert "s3cr3t" not in page
    assert Upstream.objects.get(name="github").headers == {"Authorization": "env:UPSTREAM_GITHUB_AUTHORIZATION"}


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("{not json", "Not JSON"),
        ('{"servers": []}', "Expected {&quot;mcpServers&quot;"),
        ('{"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}', "Only a superuser"),
        ('{"mcpServers": ' + "[" * 49_000 + "]" * 49_000 + "}", "Nested deeper than 64 levels"),
        ('{"mcpServers": {"x": {"url": "' + "a" * 70_000 + '"}}}', "mcpServers.x.url is 70,000 characters"),
    ],
    ids=["not json", "not a block", "stdio", "deep", "long field"],
)
def test_a_bad_block_is_refused_on_the_import_page_and_changes_nothing(operator, block, problem):
    page = operator.post(reverse("admin:errcatalog_upstream_import"), {"block": block})
    assert page.status_code == 200
    assert problem in page.content.decode()
    assert not Upstream.objects.exists()


def test_problems_show_at_their_field(operator):
    page = operator.post(reverse("admin:errcatalog_upstream_add"), _form(prefix="a__b", headers_entry="no colon"))
    body = page.content.decode()
    assert "write headers as NAME: value" in body
    page = operator.post(reverse("admin:errcatalog_upstream_add"), _form(prefix="a__b"))
    assert "without &#x27;__&#x27;" in page.content.decode() or "without '__'" in page.content.decode()
    assert not Upstream.objects.exists()


def test_test_connection_reaches_a_real_stdio_upstream_and_lists_its_tools(superuser):
    added = superuser.post(
        reverse("admin:errcatalog_upstream_add"),
        _form(
            name="local", prefix="local", transport="stdio", url="", command=sys.executable,
            args_entry=f"{UPSTREAM_SERVER}\nstdio", tools_entry="echo\nadd",
        ),
    )  # fmt: skip
    assert added.status_code == 302, added.content.decode()[:2000]
    upstream = Upstream.objects.get(name="local")
    page = superuser.post(
        reverse("admin:errcatalog_upstream_changelist"),
        {"action": "test_connection", "_selected_action": [upstream.pk], "index": 0},
        follow=True,
    ).content.decode()
    assert "Upstream local: connected" in page
    assert "2 tools exposed: add, echo" in page


def test_test_connection_says_why_an_upstream_cannot_be_reached(superuser):
    superuser.post(reverse("admin:errcatalog_upstream_add"), _form(url="http://127.0.0.1:9/mcp", timeout_seconds="2"))
    upstream = Upstream.objects.get(name="remote")
    page = superuser.post(
        reverse("admin:errcatalog_upstream_changelist"),
        {"action": "test_connection", "_selected_action": [upstream.pk], "index": 0},
        follow=True,
    ).content.decode()
    assert "Upstream remote: ConnectError" in page


def test_the_upstreams_command_lists_and_checks_without_showing_a_secret(superuser, capsys):
    from django.core.management import CommandError, call_command

    superuser.post(
        reverse("admin:errcatalog_upstream_add"),
        _form(name="local", prefix="local", transport="stdio", url="", command=sys.executable,
              args_entry=f"{UPSTREAM_SERVER}\nstdio", env_entry=f"TOKEN: {SECRET}"),
    )  # fmt: skip
    superuser.post(reverse("admin:errcatalog_upstream_add"), _form(url="http://127.0.0.1:9/mcp", timeout_seconds="2"))
    with pytest.raises(CommandError, match="Unreachable: remote"):
        call_command("upstreams", "--check")
    out = capsys.readouterr().out
    assert "local (stdio, enabled)" in out
    assert "variable TOKEN: sealed (set)" in out
    # The test upstream's tools, counted and named in order (the count follows the tools it has).
    checked = re.search(r"check: connected in [\d.]+ s, protocol \S+, (\d+) tools: (.+)", out)
    assert checked, out
    names = checked.group(2).split(", ")
    assert int(checked.group(1)) == len(names) and names == sorted(names)
    assert {"add", "ask_name", "die", "echo", "pid"} <= set(names)
    assert "check: FAILED: ConnectError" in out
    assert "s3cr3t" not in out
    call_command("upstreams", "local", "--check")  # one reachable upstream: no error


# A stdio "server" that fails before its handshake: 30 numbered lines on stderr, then one with the secret the record
# gives it and the certificate file our environment passes through.
_DYING_CHILD = (
    "import os, sys; [print(f'starting, step {i}', file=sys.stderr) for i in range(30)]; "
    "print('token', os.environ['TOKEN'], 'certificates', os.environ.get('SSL_CERT_FILE'), file=sys.stderr); "
    "sys.exit(2)"
)


def test_the_upstreams_check_shows_the_operator_the_last_stderr_lines_of_a_failed_child(superuser, capsys, monkeypatch):
    from django.core.management import CommandError, call_command

    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/proxy-ca.pem")
    superuser.post(
        reverse("admin:errcatalog_upstream_add"),
        _form(name="dying", prefix="dying", transport="stdio", url="", command=sys.executable,
              args_entry=f"-c\n{_DYING_CHILD}", env_entry=f"TOKEN: {SECRET}", timeout_seconds="5"),
    )  # fmt: skip
    with pytest.raises(CommandError, match="Unreachable: dying"):
        call_command("upstreams", "--check")
    out = capsys.readouterr().out
    assert "check: FAILED: " in out
    assert "its last 20 lines on stderr:" in out
    tail = [line for line in out.splitlines() if line.startswith("    | ")]
    assert len(tail) == 20 and tail[0] == "    | starting, step 11" and tail[-2] == "    | starting, step 29"
    # The record's secret is redacted; the trust store variable reached the child.
    assert tail[-1] == "    | token [REDACTED] certificates /etc/ssl/certs/proxy-ca.pem"
    assert SECRET not in out

    # Admin's test connection keeps to fixed words: nothing the child wrote.
    upstream = Upstream.objects.get(name="dying")
    page = superuser.post(
        reverse("admin:errcatalog_upstream_changelist"),
        {"action": "test_connection", "_selected_action": [upstream.pk], "index": 0},
        follow=True,
    ).content.decode()
    assert "Upstream dying: " in page
    assert "starting, step" not in page and "proxy-ca.pem" not in page and SECRET not in page


def test_admin_shows_the_health_every_serving_process_reported(operator):
    operator.post(reverse("admin:errcatalog_upstream_add"), _form())
    connected = HealthReport("remote", "connected", "2026-07-28", 12, "closed", "", None)
    failed_at = timezone.now() - timedelta(minutes=3)
    down = HealthReport("remote", "down", "", 0, "open", "ConnectError: refused <b>x</b>", failed_at)
    upstream_health_report("web-1:101", [connected])
    upstream_health_report("web-2:202", [down])
    upstream_health_report("web-3:303", [connected])
    # web-3 stopped reporting two minutes ago: it is shown as silent, not as connected.
    UpstreamHealth.objects.filter(process="web-3:303").update(reported_at=timezone.now() - timedelta(minutes=2))

    listing = operator.get(reverse("admin:errcatalog_upstream_changelist")).content.decode()
    assert "connected in 1 of 3 processes, down in 1 of 3 processes, silent in 1 of 3 processes" in listing
    assert "protocol 2026-07-28, 12 tools, circuit not closed in 1" in listing
    assert "ConnectError: refused &lt;b&gt;x&lt;/b&gt; (web-2:202," in listing  # staff see it, escaped
    page = operator.get(reverse("admin:errcatalog_upstream_change", args=[Upstream.objects.get().pk])).content
    assert b"<code>web-1:101</code>: connected, protocol 2026-07-28, 12 tools, circuit closed" in page
    assert b"<code>web-2:202</code>: down, 0 tools, circuit open" in page

    # A process reports only what it serves: an upstream it stopped serving loses that process's row.
    upstream_health_report("web-1:101", [])
    assert set(UpstreamHealth.objects.values_list("process", flat=True)) == {"web-2:202", "web-3:303"}


def test_a_process_silent_for_long_is_forgotten_by_the_next_report(operator):
    operator.post(reverse("admin:errcatalog_upstream_add"), _form())
    report = HealthReport("remote", "connected", "2026-07-28", 1, "closed", "", None)
    upstream_health_report("gone:1", [report])
    UpstreamHealth.objects.update(reported_at=timezone.now() - HEALTH_FORGET_AFTER - timedelta(seconds=1))
    upstream_health_report("web-1:101", [report])
    assert list(UpstreamHealth.objects.values_list("process", flat=True)) == ["web-1:101"]
