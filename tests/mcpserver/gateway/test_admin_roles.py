"""What each staff role may do with upstreams in admin: env references, pasted sealed values, changes of address,
private targets and the connection test, for a superuser, a staff user with the upstream permissions and a staff
user who may only view them."""

from __future__ import annotations

import sys

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from errcatalog.gateway.models import Upstream, UpstreamTool
from errcatalog.gateway.secrets import SecretUnavailable, resolve
from errcatalog.gateway.services import upstream_create, upstream_tools_record
from tests.mcpserver.gateway.recorder import HOSTILE, Recorder
from tests.mcpserver.gateway.upstreams import UPSTREAM_SERVER

pytestmark = pytest.mark.django_db

TOKEN = "Bearer the-superusers-own-token-0123456789"


def _form(**fields):
    base = {
        "name": "remote", "prefix": "remote", "enabled": "on", "transport": "http", "url": "https://8.8.8.8/mcp",
        "command": "", "cwd": "", "timeout_seconds": "2", "max_concurrency": "8", "headers_entry": "",
        "env_entry": "", "args_entry": "", "tools_entry": "",
    }  # fmt: skip
    return {**base, **fields}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def superuser(staff_user):
    return _client(staff_user)


@pytest.fixture
def editor(django_user_model):
    """Staff with every upstream permission (add, change, delete, view), not a superuser."""
    user = django_user_model.objects.create_user(username="editor", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__endswith="_upstream"))
    return _client(user)


@pytest.fixture
def viewer(django_user_model):
    """Staff who may only view upstreams."""
    user = django_user_model.objects.create_user(username="viewer", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_upstream"))
    return _client(user)


def _add(client, **fields):
    return client.post(reverse("admin:errcatalog_upstream_add"), _form(**fields))


def _change(client, upstream, **fields):
    return client.post(reverse("admin:errcatalog_upstream_change", args=[upstream.pk]), _form(**fields))


def _test_connection(client, *upstreams) -> str:
    return client.post(
        reverse("admin:errcatalog_upstream_changelist"),
        {"action": "test_connection", "_selected_action": [u.pk for u in upstreams], "index": 0},
        follow=True,
    ).content.decode()


# --- env: references ----------------------------------------------------------------------------------------------


def test_a_superuser_may_refer_to_any_variable_of_the_environment(superuser):
    assert _add(superuser, headers_entry="X-Key: env:UPSTREAM_TOKEN").status_code == 302
    assert Upstream.objects.get().headers == {"X-Key": "env:UPSTREAM_TOKEN"}


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "HOME", "UPSTREAM_TOKEN"])
def test_staff_who_are_not_superusers_cannot_refer_to_a_variable_the_deployment_did_not_list(editor, variable):
    page = _add(editor, headers_entry=f"X-Key: env:{variable}")
    assert page.status_code == 200
    assert f"only a superuser may refer to the environment variable {variable}" in page.content.decode()
    assert not Upstream.objects.exists()


def test_staff_may_refer_to_the_variables_the_allow_list_names_but_never_to_errcatalogs_own(editor, settings):
    settings.GATEWAY = {**settings.GATEWAY, "ENV_ALLOWLIST": ("UPSTREAM_*", "SECRET_KEY", "ERRCATALOG_*")}
    assert _add(editor, headers_entry="X-Key: env:UPSTREAM_TOKEN").status_code == 302
    for variable in ("SECRET_KEY", "ERRCATALOG_MCP_REQUEST_STATE_KEY", "DATABASE_URL"):
        page = _add(editor, name="other", prefix="other", headers_entry=f"X-Key: env:{variable}")
        assert "only a superuser may refer" in page.content.decode()
    assert list(Upstream.objects.values_list("name", flat=True)) == ["remote"]


def test_staff_keep_a_reference_a_superuser_set_when_they_change_something_else(superuser, editor):
    _add(superuser, headers_entry="X-Key: env:UPSTREAM_TOKEN")
    upstream = Upstream.objects.get()
    assert _change(editor, upstream, timeout_seconds="5").status_code == 302
    upstream.refresh_from_db()
    assert upstream.timeout_seconds == 5 and upstream.headers == {"X-Key": "env:UPSTREAM_TOKEN"}


def test_staff_importing_a_block_with_a_secret_must_have_its_variable_allowed(editor, settings):
    block = '{"mcpServers": {"gh": {"type": "http", "url": "https://8.8.8.8/mcp", ' \
        '"headers": {"Authorization": "Bearer x"}}}}'  # fmt: skip
    page = editor.post(reverse("admin:errcatalog_upstream_import"), {"block": block}).content.decode()
    assert "UPSTREAM_GH_AUTHORIZATION" in page and "ERRCATALOG_GATEWAY_ENV_ALLOWLIST" in page
    assert not Upstream.objects.exists()


def _staff_holding(django_user_model, username: str, *codenames: str) -> Client:
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return _client(user)


def _import(client, block: str):
    return client.post(reverse("admin:errcatalog_upstream_import"), {"block": block})


# Over the superuser's upstream: its stored key dropped, a header of the importer's choosing sealed in, a new prefix.
HIJACK = '{"mcpServers": {"remote": {"type": "http", "url": "https://8.8.8.8/mcp", "headers": {"X-Steal": "me"}}}}'


def test_staff_who_may_only_add_upstreams_cannot_change_one_by_importing_its_name(superuser, django_user_model):
    _add(superuser, headers_entry=f"Authorization: {TOKEN}")
    before = Upstream.objects.values().get()
    adder = _staff_holding(django_user_model, "adder", "add_upstream", "view_upstream")

    page = _import(adder, HIJACK)

    assert page.status_code == 200
    assert "remote: you may not change upstreams" in page.content.decode()
    assert Upstream.objects.values().get() == before
    upstream = Upstream.objects.get()
    assert resolve("Authorization", upstream.headers["Authorization"], binding=upstream.binding) == TOKEN
    # A block of new names only is theirs to import.
    new = '{"mcpServers": {"fresh": {"type": "http", "url": "https://8.8.4.4/mcp"}}}'
    assert _import(adder, new).status_code == 302
    assert set(Upstream.objects.values_list("name", flat=True)) == {"remote", "fresh"}


def test_an_import_that_may_not_write_one_entry_writes_none(superuser, django_user_model):
    _add(superuser)
    adder = _staff_holding(django_user_model, "adder", "add_upstream", "view_upstream")
    block = (
        '{"mcpServers": {"aaa": {"type": "http", "url": "https://8.8.4.4/mcp"}, '
        '"remote": {"type": "http", "url": "https://9.9.9.9/mcp"}}}'
    )
    assert "you may not change upstreams" in _import(adder, block).content.decode()
    assert list(Upstream.objects.values_list("name", "url")) == [("remote", "https://8.8.8.8/mcp")]


def test_staff_who_may_only_change_upstreams_update_by_import_but_add_none(superuser, django_user_model):
    _add(superuser)
    changer = _staff_holding(django_user_model, "changer", "change_upstream", "view_upstream")
    assert (
        _import(changer, '{"mcpServers": {"remote": {"type": "http", "url": "https://9.9.9.9/mcp"}}}').status_code
        == 302
    )
    assert Upstream.objects.get().url == "https://9.9.9.9/mcp"
    page = _import(changer, '{"mcpServers": {"fresh": {"type": "http", "url": "https://8.8.4.4/mcp"}}}')
    assert "fresh: you may not add upstreams" in page.content.decode()
    assert not Upstream.objects.filter(name="fresh").exists()


def test_the_import_page_is_closed_to_viewers_and_open_to_superusers(superuser, viewer):
    assert _import(viewer, HIJACK).status_code == 403
    assert viewer.get(reverse("admin:errcatalog_upstream_import")).status_code == 403
    _add(superuser, headers_entry=f"Authorization: {TOKEN}")
    assert _import(superuser, HIJACK).status_code == 302
    assert set(Upstream.objects.get().headers) == {"X-Steal"}  # a superuser's import replaces, as documented


def test_a_viewer_can_neither_add_nor_change_an_upstream(superuser, viewer):
    assert _add(viewer, headers_entry="X-Key: env:SECRET_KEY").status_code == 403
    _add(superuser)
    assert _change(viewer, Upstream.objects.get(), url="https://9.9.9.9/mcp").status_code == 403
    assert Upstream.objects.get().url == "https://8.8.8.8/mcp"


def test_staff_who_may_change_an_upstream_switch_its_relays_and_a_viewer_cannot(superuser, editor, viewer):
    _add(superuser, relay_sampling="on", relay_roots="on")
    upstream = Upstream.objects.get()
    assert (upstream.relay_sampling, upstream.relay_roots) == (True, True)

    assert _change(viewer, upstream).status_code == 403  # the form leaves both boxes unticked: off, if it could
    upstream.refresh_from_db()
    assert (upstream.relay_sampling, upstream.relay_roots) == (True, True)

    assert _change(editor, upstream, relay_roots="on").status_code == 302  # sampling unticked: switched off
    upstream.refresh_from_db()
    assert (upstream.relay_sampling, upstream.relay_roots) == (False, True)
    assert upstream.history.first().history_user.username == "editor"  # the change is in the history


def test_sampling_and_roots_are_relayed_for_an_upstream_made_without_the_switches():
    upstream = upstream_create(actor=None, name="plain", prefix="plain", transport="http", url="https://8.8.8.8/mcp")
    assert (upstream.relay_sampling, upstream.relay_roots) == (True, True)


def test_only_a_superuser_chooses_a_stdio_upstreams_session_mode(superuser, editor, viewer):
    # One child process per client session multiplies the commands run on this server: it is the stdio section's.
    stdio = {"transport": "stdio", "url": "", "command": sys.executable, "args_entry": UPSTREAM_SERVER}
    refused = _add(editor, **stdio, session_mode="per_client")
    assert "Only a superuser may add or change a stdio upstream" in refused.content.decode()
    assert not Upstream.objects.exists()
    assert _add(superuser, **stdio, session_mode="per_client").status_code == 302
    upstream = Upstream.objects.get()
    assert upstream.session_mode == "per_client"

    for staff in (editor, viewer):
        assert _change(staff, upstream, **stdio, session_mode="shared").status_code == 403
        upstream.refresh_from_db()
        assert upstream.session_mode == "per_client"
    assert _change(superuser, upstream, **stdio, session_mode="shared").status_code == 302
    upstream.refresh_from_db()
    assert upstream.session_mode == "shared"
    assert upstream.history.first().history_user.is_superuser  # the change is in the history


# --- Sealed values --------------------------------------------------------------------------------------------------


def test_a_sealed_value_copied_from_another_upstream_is_refused_for_staff(superuser, editor):
    _add(superuser, name="github", prefix="github", headers_entry=f"Authorization: {TOKEN}")
    exported = Upstream.objects.get(name="github").headers["Authorization"]
    page = _add(editor, url="https://9.9.9.9/mcp", headers_entry=f"Authorization: {exported}")
    assert "this sealed value belongs to another upstream or address" in page.content.decode()
    assert not Upstream.objects.filter(name="remote").exists()


def test_a_sealed_value_a_superuser_copies_elsewhere_is_stored_but_does_not_open(superuser):
    _add(superuser, name="github", prefix="github", headers_entry=f"Authorization: {TOKEN}")
    exported = Upstream.objects.get(name="github").headers["Authorization"]
    assert _add(superuser, url="https://9.9.9.9/mcp", headers_entry=f"Authorization: {exported}").status_code == 302
    copy = Upstream.objects.get(name="remote")
    with pytest.raises(SecretUnavailable, match="sealed for another upstream"):
        resolve("Authorization", copy.headers["Authorization"], binding=copy.binding)
    page = superuser.get(reverse("admin:errcatalog_upstream_change", args=[copy.pk])).content.decode()
    assert "sealed, unreadable for this upstream here: enter it again" in page


# --- Changing where an upstream points ------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["superuser", "editor"])
def test_changing_only_the_url_drops_the_stored_headers(superuser, editor, role, settings):
    settings.GATEWAY = {**settings.GATEWAY, "ALLOW_PRIVATE": True}
    with Recorder() as elsewhere:
        _add(superuser, headers_entry=f"Authorization: {TOKEN}\nX-Key: env:UPSTREAM_TOKEN")
        upstream = Upstream.objects.get()
        client = {"superuser": superuser, "editor": editor}[role]
        changed = client.post(
            reverse("admin:errcatalog_upstream_change", args=[upstream.pk]), _form(url=elsewhere.url), follow=True
        )
        assert "The stored headers were dropped" in changed.content.decode()
        upstream.refresh_from_db()
        assert upstream.url == elsewhere.url and upstream.headers == {}
        _test_connection(superuser, upstream)
    assert elsewhere.received  # it was connected to, without the token
    assert all("authorization" not in r.headers and "x-key" not in r.headers for r in elsewhere.received)


def test_headers_entered_again_with_a_new_url_are_kept(superuser, editor):
    _add(superuser, headers_entry=f"Authorization: {TOKEN}")
    upstream = Upstream.objects.get()
    assert _change(editor, upstream, url="https://9.9.9.9/mcp", headers_entry="Authorization: Bearer mine").status_code
    upstream.refresh_from_db()
    assert resolve("Authorization", upstream.headers["Authorization"], binding=upstream.binding) == "Bearer mine"


def test_a_stored_value_kept_by_a_url_changed_behind_the_services_back_does_not_open(superuser):
    _add(superuser, headers_entry=f"Authorization: {TOKEN}")
    Upstream.objects.update(url="https://evil.example/mcp")  # e.g. a history revert or a hand-made row
    upstream = Upstream.objects.get()
    with pytest.raises(SecretUnavailable):
        resolve("Authorization", upstream.headers["Authorization"], binding=upstream.binding)


def test_renaming_an_upstream_keeps_its_values_readable(superuser, editor):
    _add(superuser, headers_entry=f"Authorization: {TOKEN}")
    upstream = Upstream.objects.get()
    assert _change(editor, upstream, name="renamed").status_code == 302
    upstream.refresh_from_db()
    assert resolve("Authorization", upstream.headers["Authorization"], binding=upstream.binding) == TOKEN


# --- Private targets ------------------------------------------------------------------------------------------------

PRIVATE_URLS = [
    "http://127.0.0.1:9/mcp",
    "http://localhost:9/mcp",
    "http://[::1]:9/mcp",
    "http://[::ffff:127.0.0.1]:9/mcp",
    "http://[::7f00:1]:9/mcp",
    "http://[64:ff9b::7f00:1]:9/mcp",
    "http://[2002:7f00:1::1]:9/mcp",
    "http://10.1.2.3/mcp",
    "http://192.168.0.1/mcp",
    "http://169.254.169.254/latest/meta-data",
    "http://[fd00::1]/mcp",
    "http://100.64.0.1/mcp",
    "http://0.0.0.0:9/mcp",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_staff_cannot_point_an_upstream_at_a_private_address(editor, url):
    page = _add(editor, url=url)
    assert "Only a superuser may point an upstream at a loopback" in page.content.decode()
    assert not Upstream.objects.exists()
    upstream_create(actor=None, name="public", prefix="public", transport="http", url="https://8.8.8.8/mcp")
    page = _change(editor, Upstream.objects.get(), name="public", prefix="public", url=url)
    assert "Only a superuser may point" in page.content.decode()
    assert Upstream.objects.get().url == "https://8.8.8.8/mcp"


@pytest.mark.parametrize("url", PRIVATE_URLS[:3])
def test_a_superuser_may_point_an_upstream_at_a_private_address(superuser, url):
    assert _add(superuser, url=url).status_code == 302


def test_the_setting_lets_staff_point_upstreams_at_private_addresses(editor, settings):
    settings.GATEWAY = {**settings.GATEWAY, "ALLOW_PRIVATE": True}
    assert _add(editor, url="http://127.0.0.1:9/mcp").status_code == 302


def test_staff_may_edit_a_private_upstream_a_superuser_made_without_moving_it(superuser, editor):
    _add(superuser, url="http://127.0.0.1:9/mcp")
    assert _change(editor, Upstream.objects.get(), url="http://127.0.0.1:9/mcp", timeout_seconds="3").status_code == 302


# --- Test connection ------------------------------------------------------------------------------------------------


def _stdio_marker(tmp_path, *, enabled: bool = True) -> tuple[Upstream, object]:
    marker = tmp_path / "started"
    upstream = upstream_create(
        actor=None, name="local", prefix="local", transport="stdio", command=sys.executable, enabled=enabled,
        args=["-c", f"open({str(marker)!r}, 'w').close()"],
    )  # fmt: skip
    return upstream, marker


def test_a_viewer_cannot_run_the_connection_test(viewer, tmp_path):
    upstream, marker = _stdio_marker(tmp_path)
    http = upstream_create(actor=None, name="remote", prefix="remote", transport="http", url="https://8.8.8.8/mcp")
    page = _test_connection(viewer, upstream, http)
    assert "Upstream local" not in page and "Upstream remote" not in page
    assert not marker.exists()


def test_staff_cannot_start_a_stdio_upstream_with_the_connection_test(editor, tmp_path):
    upstream, marker = _stdio_marker(tmp_path)
    page = _test_connection(editor, upstream)
    assert "Upstream local: only a superuser may test a stdio upstream" in page
    assert not marker.exists()


@pytest.mark.parametrize("role", ["superuser", "editor"])
def test_a_disabled_upstream_is_not_started_by_the_connection_test(superuser, editor, role, tmp_path):
    upstream, marker = _stdio_marker(tmp_path, enabled=False)
    with Recorder() as server:
        http = upstream_create(actor=None, name="remote", prefix="remote", transport="http", url=server.url)
        Upstream.objects.filter(pk=http.pk).update(enabled=False)
        page = _test_connection({"superuser": superuser, "editor": editor}[role], upstream, http)
    assert "Upstream remote: disabled, not tested (enable it first)" in page
    if role == "superuser":
        assert "Upstream local: disabled, not tested (enable it first)" in page
    assert not marker.exists() and not server.received


def test_a_superuser_tests_an_enabled_stdio_upstream(superuser):
    upstream = upstream_create(
        actor=None, name="local", prefix="local", transport="stdio", command=sys.executable,
        args=[UPSTREAM_SERVER, "stdio"], tools=["echo"],
    )  # fmt: skip
    assert "Upstream local: connected" in _test_connection(superuser, upstream)


def test_staff_test_an_http_upstream_but_not_one_on_a_private_address(superuser, editor, settings):
    with Recorder() as server:
        upstream = upstream_create(actor=None, name="remote", prefix="remote", transport="http", url=server.url)
        page = _test_connection(editor, upstream)
        assert "Upstream remote: only a superuser may test an upstream on a loopback" in page
        assert not server.received
        settings.GATEWAY = {**settings.GATEWAY, "ALLOW_PRIVATE": True}
        page = _test_connection(editor, upstream)
    assert "Upstream remote: " in page and server.received


# --- What an upstream says never reaches staff ----------------------------------------------------------------------


def test_the_connection_test_and_the_check_command_never_echo_what_the_upstream_sent(superuser, capsys):
    with Recorder() as server:
        upstream = upstream_create(actor=None, name="remote", prefix="remote", transport="http", url=server.url)
        page = _test_connection(superuser, upstream)
        with pytest.raises(CommandError, match="Unreachable: remote"):
            call_command("upstreams", "--check")
    out = capsys.readouterr().out
    assert "Upstream remote: " in page and "check: FAILED: " in out
    for shown in (page, out):
        assert "IGNORE ALL" not in shown and "leaked-upstream-text" not in shown and "input_value" not in shown
    assert HOSTILE not in page


# --- Deleting an upstream that listed tools -----------------------------------------------------------------------


def test_an_upstream_that_listed_tools_is_deleted_with_its_pins_by_whoever_may_delete_upstreams(
    superuser, editor, viewer
):
    for name in ("one", "two"):
        upstream_create(actor=None, name=name, prefix=name, transport="http", url="https://8.8.8.8/mcp")
        listed = {"name": "add", "description": "Add two numbers.", "inputSchema": {"type": "object"}}
        upstream_tools_record(upstream=name, listing=[listed])
    assert UpstreamTool.objects.count() == 2

    one, two = Upstream.objects.get(name="one"), Upstream.objects.get(name="two")
    assert viewer.post(reverse("admin:errcatalog_upstream_delete", args=[one.pk]), {"post": "yes"}).status_code == 403
    for client, upstream in ((superuser, one), (editor, two)):  # the editor holds delete_upstream, not the pins'
        page = client.post(reverse("admin:errcatalog_upstream_delete", args=[upstream.pk]), {"post": "yes"})
        assert page.status_code == 302, page.content.decode()[:500]
    assert not Upstream.objects.exists() and not UpstreamTool.objects.exists()
