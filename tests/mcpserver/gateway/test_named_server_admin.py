"""Named servers in admin: what each staff role may do, the name rules (never an upstream's, never reserved, both
ways), and every field's bad input refused at its field."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from errcatalog.access.models import ClientToken
from errcatalog.gateway.models import NAMED_SERVER_DESCRIPTION_MAX_CHARS, NamedServer, NamedServerUpstream, Upstream
from errcatalog.gateway.selectors import named_server_configs
from errcatalog.gateway.services import upstream_create, upstreams_import

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
    assert NamedServer.objects.get().name == "support" and NamedServer.objects.count() == 1


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
