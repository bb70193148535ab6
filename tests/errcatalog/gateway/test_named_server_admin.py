"""Named servers in admin and their write path: what each staff role may do, the name rules (never an upstream's,
never reserved, both ways), every field's bad input refused at its field, admin writing through the services, the
warnings about an upstream's chosen tools, and ``manage.py named_servers``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create
from errcatalog.gateway.models import NAMED_SERVER_DESCRIPTION_MAX_CHARS, NamedServer, NamedServerUpstream, Upstream
from errcatalog.gateway.named_servers import named_server_create, named_server_update
from errcatalog.gateway.selectors import named_server_configs
from errcatalog.gateway.services import upstream_create, upstream_tools_record, upstream_update, upstreams_import

pytestmark = pytest.mark.django_db

ADD = reverse("admin:errcatalog_namedserver_add")


def _change_url(server: NamedServer) -> str:
    return reverse("admin:errcatalog_namedserver_change", args=[server.pk])


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _staff(django_user_model, username: str, *codenames: str) -> Client:
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return _client(user)


@pytest.fixture
def web() -> Upstream:
    return upstream_create(actor=None, name="web", prefix="web", transport="http", url="https://mcp.example.com/mcp")


@pytest.fixture
def superuser(staff_user) -> Client:
    return _client(staff_user)


@pytest.fixture
def editor(django_user_model) -> Client:
    """Staff with every named-server permission and none on upstreams."""
    verbs = ("add", "change", "delete", "view")
    return _staff(django_user_model, "editor", *(f"{verb}_namedserver" for verb in verbs))


@pytest.fixture
def viewer(django_user_model) -> Client:
    return _staff(django_user_model, "viewer", "view_namedserver")


def _form(*, members: list[tuple[Upstream, str]] = (), initial: int = 0, **fields) -> dict:
    data = {"name": "support", "enabled": "on", "description": "For the support agent.", "tools": ["explain_error"]}
    data.update(fields)
    data.update({"members-TOTAL_FORMS": str(len(members)), "members-INITIAL_FORMS": str(initial),
                 "members-MIN_NUM_FORMS": "0", "members-MAX_NUM_FORMS": "1000"})  # fmt: skip
    for index, (upstream, tools) in enumerate(members):
        data[f"members-{index}-upstream"] = str(upstream.pk)
        data[f"members-{index}-tools"] = tools
    return data


def _errors(response) -> dict[str, list[str]]:
    """The form's errors by field, and each inline row's as ``members-<n>-<field>``."""
    context = response.context
    errors = {name: list(e) for name, e in context["adminform"].form.errors.items()}
    for inline in context["inline_admin_formsets"]:
        for index, form_errors in enumerate(inline.formset.errors):
            errors.update({f"members-{index}-{name}": list(e) for name, e in form_errors.items()})
        errors.update({"members": list(inline.formset.non_form_errors())} if inline.formset.non_form_errors() else {})
    return errors


# --- Roles ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["superuser", "editor"])
def test_staff_with_the_permissions_compose_a_server_of_our_tools_and_an_upstream(request, role, web):
    client = request.getfixturevalue(role)
    response = client.post(ADD, _form(members=[(web, "echo, add")]))
    assert response.status_code == 302, _errors(response)
    server = NamedServer.objects.get()
    assert (server.name, server.tools, server.enabled) == ("support", ["explain_error"], True)
    assert list(server.members.values_list("upstream__name", "tools")) == [("web", ["echo", "add"])]
    assert server.history.count() == 1 and NamedServerUpstream.history.count() == 1
    config = named_server_configs()["support"]
    assert config.tools == {"explain_error"} and dict(config.upstreams) == {"web": frozenset({"echo", "add"})}
    # Changing it: every tool of the upstream, and switched off.
    member = server.members.get()
    data = _form(members=[(web, "")], initial=1, enabled="")
    data["members-0-id"] = str(member.pk)
    assert client.post(_change_url(server), data).status_code == 302
    assert named_server_configs() == {}
    assert NamedServerUpstream.objects.get().tools == []


def test_a_viewer_sees_a_named_server_but_can_neither_add_change_nor_delete_one(superuser, viewer, web):
    superuser.post(ADD, _form(members=[(web, "")]))
    server = NamedServer.objects.get()
    page = viewer.get(_change_url(server))
    assert page.status_code == 200 and not page.context["has_change_permission"]
    assert "support" in page.content.decode()
    assert viewer.post(ADD, _form(name="other")).status_code == 403
    assert viewer.post(_change_url(server), _form(name="renamed")).status_code == 403
    delete = reverse("admin:errcatalog_namedserver_delete", args=[server.pk])
    assert viewer.post(delete, {"post": "yes"}).status_code == 403
    revert = reverse("admin:errcatalog_namedserver_simple_history", args=[server.pk, server.history.get().history_id])
    assert viewer.post(revert, _form(description="reverted")).status_code == 403
    assert NamedServer.objects.get().name == "support" and NamedServer.objects.count() == 1
    assert NamedServer.objects.get().description == "For the support agent."


def test_staff_without_named_server_permissions_get_nothing(django_user_model, superuser, web):
    superuser.post(ADD, _form(members=[(web, "")]))
    upstream_staff = _staff(django_user_model, "upstreams", "view_upstream", "change_upstream", "add_upstream")
    assert upstream_staff.get(reverse("admin:errcatalog_namedserver_changelist")).status_code == 403
    assert upstream_staff.post(ADD, _form(name="other")).status_code == 403


def test_a_token_may_be_limited_to_a_named_server(superuser, web):
    superuser.post(ADD, _form())
    data = {"name": "agent", "user": "", "tool_scope": "[]", "servers": '["support"]', "can_read_catalog": "on"}
    page = superuser.get(reverse("admin:errcatalog_clienttoken_add"))
    data["user"] = str(page.context["adminform"].form.initial["user"])
    assert superuser.post(reverse("admin:errcatalog_clienttoken_add"), data).status_code == 302
    assert ClientToken.objects.get().servers == ["support"]


# --- Names: never an upstream's, never reserved ----------------------------------------------------------------------


def test_a_named_server_cannot_take_an_upstreams_name(superuser, web):
    response = superuser.post(ADD, _form(name="web"))
    assert response.status_code == 200
    assert "An upstream has this name" in " ".join(_errors(response)["name"])
    assert not NamedServer.objects.exists()


def test_an_upstream_cannot_take_a_named_servers_name_in_admin_import_or_the_services(superuser, web):
    superuser.post(ADD, _form())
    upstream_form = {
        "name": "support", "prefix": "support", "enabled": "on", "transport": "http", "url": "https://8.8.8.8/mcp",
        "command": "", "cwd": "", "timeout_seconds": "2", "max_concurrency": "8", "headers_entry": "",
        "env_entry": "", "args_entry": "", "tools_entry": "",
    }  # fmt: skip
    page = superuser.post(reverse("admin:errcatalog_upstream_add"), upstream_form)
    assert page.status_code == 200 and "A named server has this name" in page.content.decode()
    with pytest.raises(ValidationError) as refused:
        upstream_create(actor=None, name="support", prefix="s", transport="http", url="https://mcp.example.com/mcp")
    assert "A named server has this name" in refused.value.message_dict["name"][0]
    with pytest.raises(ValidationError) as imported:
        upstreams_import(
            {"mcpServers": {"support": {"type": "http", "url": "https://mcp.example.com/mcp"}}}, actor=None
        )
    assert "A named server has this name" in imported.value.message_dict["name"][0]
    # Renaming an upstream onto it is refused too.
    page = superuser.post(reverse("admin:errcatalog_upstream_change", args=[web.pk]),
                          {**upstream_form, "prefix": "web"})  # fmt: skip
    assert "A named server has this name" in page.content.decode()
    assert list(Upstream.objects.values_list("name", flat=True)) == ["web"]


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"name": "Support"}, "name", "lower-case letters"),
        ({"name": ""}, "name", "required"),
        ({"name": "-support"}, "name", "starting with a letter or digit"),
        ({"name": "a/b"}, "name", "lower-case letters"),
        ({"name": "s" * 65}, "name", "at most 64"),
        ({"name": "mcp"}, "name", "reserved"),
        ({"name": "sse"}, "name", "reserved"),
        ({"description": "x" * (NAMED_SERVER_DESCRIPTION_MAX_CHARS + 1)}, "description", "at most"),
        ({"description": "before\0after"}, "description", "Null characters"),
        ({"tools": ["no_such_tool"]}, "tools", "not one of the available choices"),
        ({"tools": ["explain_error", "<script>"]}, "tools", "not one of the available choices"),
    ],
)
def test_bad_input_is_refused_at_its_field(superuser, web, fields, field, says):
    response = superuser.post(ADD, _form(**fields))
    assert response.status_code == 200
    assert says in " ".join(_errors(response).get(field, [])), _errors(response)
    assert not NamedServer.objects.exists()


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ("echo, <script>", "is not a tool name"),
        ("ok " + "x" * 129, "is not a tool name"),
        ("echo, echo", "Name each tool once"),
        (", ".join(f"t{n}" for n in range(501)), "at most 500"),
    ],
)
def test_bad_tools_of_an_upstream_are_refused_at_its_row(superuser, web, tools, says):
    response = superuser.post(ADD, _form(members=[(web, tools)]))
    assert response.status_code == 200
    assert says in " ".join(_errors(response).get("members-0-tools", [])), _errors(response)
    assert not NamedServer.objects.exists()


def test_an_upstream_is_composed_once(superuser, web):
    response = superuser.post(ADD, _form(members=[(web, ""), (web, "echo")]))
    assert response.status_code == 200
    assert "Please correct the duplicate data for upstream" in " ".join(_errors(response)["members"])
    assert not NamedServer.objects.exists()


def test_deleting_an_upstream_takes_it_out_of_every_named_server(superuser, web):
    superuser.post(ADD, _form(members=[(web, "")]))
    web.delete()
    assert dict(named_server_configs()["support"].upstreams) == {}


def test_a_tool_list_edited_by_hand_into_something_else_serves_no_tool(web):
    server = NamedServer.objects.create(name="support", tools={"explain_error": True})
    NamedServerUpstream.objects.create(server=server, upstream=web, tools="echo")
    config = named_server_configs()["support"]
    assert config.tools == frozenset() and dict(config.upstreams) == {"web": frozenset()}


# --- One write path: admin saves through the services -------------------------------------------------------------


def test_admin_writes_through_the_services_with_its_user_and_reason_in_the_history(superuser, staff_user, web):
    superuser.post(ADD, _form(members=[(web, "echo")]))
    server = NamedServer.objects.get()
    records = [*server.history.all(), *NamedServerUpstream.history.all()]
    assert {(r.history_user, r.history_change_reason) for r in records} == {(staff_user, "admin")}
    # Reverting to a version from its history saves that version through the services too.
    first = server.history.get()
    data = _form(members=[(web, "echo")], initial=1, description="Changed.")
    data["members-0-id"] = str(server.members.get().pk)
    superuser.post(_change_url(server), data)
    assert NamedServer.objects.get().description == "Changed."
    revert = reverse("admin:errcatalog_namedserver_simple_history", args=[server.pk, first.history_id])
    revert_data = {"name": "support", "enabled": "on", "description": "For the support agent.",
                   "tools": ["explain_error"]}  # fmt: skip
    assert superuser.post(revert, revert_data).status_code == 302
    assert NamedServer.objects.get().description == "For the support agent."
    assert server.history.first().history_change_reason == "admin"
    # Deleting, one or several: through the services, with their rows.
    delete = reverse("admin:errcatalog_namedserver_delete", args=[server.pk])
    assert superuser.post(delete, {"post": "yes"}).status_code == 302
    assert not NamedServer.objects.exists() and not NamedServerUpstream.objects.exists()
    assert NamedServerUpstream.history.filter(history_type="-").get().history_change_reason == "admin"


def test_the_services_refuse_what_admin_refuses(web):
    with pytest.raises(ValidationError) as clash:
        named_server_create(actor=None, name="web")
    assert "An upstream has this name" in clash.value.message_dict["name"][0]
    with pytest.raises(ValidationError) as unknown:
        named_server_create(actor=None, name="support", upstreams={"nowhere": []})
    assert unknown.value.message_dict["upstreams"] == ["No upstream named nowhere."]
    with pytest.raises(ValidationError) as stranger:
        named_server_create(actor=None, name="support", tools=["mine"], known_tools={"explain_error"})
    assert "Not a tool this deployment serves: mine" in stranger.value.message_dict["tools"][0]
    with pytest.raises(ValidationError) as bad:
        named_server_create(actor=None, name="support", upstreams={"web": ["a b"]})
    assert "web: Give its tools served as a list of tool names" in bad.value.message_dict["upstreams"][0]
    assert not NamedServer.objects.exists()
    server = named_server_create(actor=None, name="support", upstreams={"web": ["echo"]})
    with pytest.raises(ValidationError, match="has this name already"):
        named_server_create(actor=None, name="support")
    assert named_server_update(actor=None, server=server, upstreams={"web": ["echo"]}) == []
    assert named_server_update(actor=None, server=server, enabled=False, upstreams={}) == ["enabled", "upstreams"]


# --- A subset of an upstream's tools: the tool-name rule, and a warning about what it does not list ---------------


def test_admin_warns_about_chosen_tools_the_upstream_does_not_list_and_saves_them(superuser, web):
    # No listing recorded yet: nothing to compare with, no warning.
    response = superuser.post(ADD, _form(members=[(web, "echo, ecko")]), follow=True)
    assert not [m for m in response.context["messages"] if m.level_tag == "warning"]
    NamedServer.objects.all().delete()
    # A serving process recorded web's listing (approved: the first), then a new tool waiting for review.
    listing = [{"name": "echo", "inputSchema": {"type": "object"}}]
    upstream_tools_record(upstream="web", listing=listing)
    upstream_tools_record(upstream="web", listing=[*listing, {"name": "add", "inputSchema": {"type": "object"}}])
    upstream_update(actor=None, upstream=web, tools=["echo", "add"])
    response = superuser.post(ADD, _form(members=[(web, "echo, ecko, add, send_note")]), follow=True)
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    assert warnings == [
        "web does not list ecko, send_note: not served until it does (a typing mistake?).",
        "web's add: not served until staff approve its metadata.",
        "web's exposed tools leave out ecko, send_note: /mcp does not serve it.",
    ]
    # Saved all the same: the listing may change, and a name it stops listing is simply not served.
    assert NamedServerUpstream.objects.get().tools == ["echo", "ecko", "add", "send_note"]
    out = StringIO()
    call_command("named_servers", stdout=out)
    assert "warning: web does not list ecko, send_note" in out.getvalue()


# --- manage.py named_servers ------------------------------------------------------------------------------------


def test_the_command_lists_each_named_server_its_tools_upstreams_and_tokens(web, staff_user):
    named_server_create(actor=None, name="support", description="For the support agent.\nMore.",
                        tools=["explain_error", "retired_tool"], upstreams={"web": ["echo"]})  # fmt: skip
    named_server_create(actor=None, name="paused", enabled=False)
    upstream_update(actor=None, upstream=web, enabled=False)
    client_token_create(user=staff_user, name="agent", servers=["support"])
    out = StringIO()
    call_command("named_servers", stdout=out)
    assert out.getvalue().splitlines() == [
        "paused (disabled: its path answers 404): /mcp/paused",
        "  our tools: none",
        "  upstreams: none",
        "  tokens limited to it: 0",
        "support (enabled): /mcp/support",
        "  For the support agent.",
        "  our tools: explain_error, retired_tool (not served here)",
        "  upstream web (disabled: none served): echo",
        "  tokens limited to it: 1",
    ]
    only = StringIO()
    call_command("named_servers", "paused", stdout=only)
    assert only.getvalue().startswith("paused ") and "support" not in only.getvalue()
    with pytest.raises(CommandError, match="No named server named nowhere"):
        call_command("named_servers", "nowhere")
    NamedServer.objects.all().delete()
    empty = StringIO()
    call_command("named_servers", stdout=empty)
    assert empty.getvalue().startswith("No named servers.")
