"""Every admin page and action against every staff role: each role gets exactly what its permissions give, on every
page admin serves, and a write it may not make leaves the database as it was.

One table (``SUBJECTS``) says, for every model registered on the admin site, which roles may open each of its pages
(list, add, change, delete, history, a version from its history, every page of its own ``get_urls()``) and make each
write (add, change, delete, revert to a version, every list action). One test runs every (page or action, role) pair
and checks the outcome: the page opens (200) or the write is done; an anonymous visitor is sent to the login page;
a staff member gets 403; an action they may not take is absent from the list's action menu and posting it does
nothing; a page that lets them in refuses the write. For each write the rows are read before and after, so a refusal
that answers as expected but writes all the same fails, and so does an allowed write that writes nothing.

The roles, per model: an anonymous visitor; a superuser; a staff member holding every permission of every other
model and none of this one ("none"); staff holding exactly one of its permissions ("view", "add", "change",
"delete"); and the combinations a row of the table names ("view+delete": both on the model; "change+change
variants": a permission on another model as well, ``EXTRA_PERMISSIONS``). A role the door lets in posts the form a
browser would post (read from the superuser's page), so what it is refused is a valid write.

The table is checked against the site: a model registered without an entry, a URL of a ``get_urls()``, a list action
or an autocomplete field without a row here fails ``test_every_*`` instead of going unchecked. People and groups have
tests of their own below: there the question is not only which page opens but whether anyone can grant more than
they hold.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import models
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse
from oauth2_provider.models import Application
from simple_history.admin import SimpleHistoryAdmin

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create
from errcatalog.catalog import services as catalog
from errcatalog.catalog.inbox_admin import RuleFromGroupForm
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.gateway import inbox
from errcatalog.gateway.models import NamedServer, NamedServerUpstream, Upstream, UpstreamFailureGroup, UpstreamTool
from errcatalog.gateway.named_servers import named_server_create, named_server_update
from errcatalog.gateway.services import upstream_create, upstream_tools_record, upstream_update
from errcatalog.versioned_admin import VersionedAdmin
from tests.errcatalog.catalog.admin_pages import form_data
from tests.mcpserver.gateway.recorder import Recorder

pytestmark = pytest.mark.django_db

# Registered models another test file checks per role in its own way, with the file that does.
EXCLUDED = {
    # OAuth clients (django-oauth-toolkit's Application): who may change where a client's codes go and how it
    # proves itself is more than page-by-page permissions.
    Application: "tests/errcatalog/access/test_oauth_application_admin.py",
}

# --- Outcomes -------------------------------------------------------------------------------------------------------

OK = "ok"  # the page opens (200), or the write is done
LOGIN = "login"  # sent to the admin's login page, nothing done
DENIED = "403"  # 403, nothing done
ABSENT = "absent"  # the action is not in the list's action menu; posting it does nothing
REFUSED = "refused"  # the page answers (a form error, or rows outside the role's reach left alone); nothing done

# --- Roles ------------------------------------------------------------------------------------------------------------

ANONYMOUS = "anonymous"
SUPERUSER = "superuser"
NONE = "none"
BASE_ROLES = (ANONYMOUS, SUPERUSER, NONE, "view", "add", "change", "delete")
# Parts of a role that are a permission on another model than the page's.
EXTRA_PERMISSIONS = {
    "view variants": "errcatalog.view_templatevariant",
    "change variants": "errcatalog.change_templatevariant",
    "delete variants": "errcatalog.delete_templatevariant",
    "add rules": "errcatalog.add_classificationrule",
    "approve tools": "errcatalog.approve_upstreamtool",
}


def _permissions(role: str, model: type[models.Model]) -> list[Permission]:
    if role == NONE:
        return list(Permission.objects.exclude(content_type=ContentType.objects.get_for_model(model)))
    held = []
    for part in role.split("+"):
        app_label, codename = (
            EXTRA_PERMISSIONS[part].split(".")
            if part in EXTRA_PERMISSIONS
            else (model._meta.app_label, f"{part}_{model._meta.model_name}")
        )
        held.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return held


def _reaches_the_list(role: str) -> bool:
    return role == SUPERUSER or bool({"view", "change"} & set(role.split("+")))


# --- The world a case runs in -----------------------------------------------------------------------------------------


@dataclass
class World:
    root: User  # a superuser: the forms a browser would post are read from their pages
    actor: User | None  # the role's user (None: anonymous)
    client: Client  # the role's browser
    settings: Any  # pytest-django's settings fixture
    turned_away: bool  # the role is expected to be sent to the login page or refused with 403
    row: Any = None
    version_url: str = ""  # a version of the row, read before the row was deleted
    response: HttpResponse | None = None
    recorder: Recorder | None = None
    root_browser: Client | None = None

    @property
    def owner(self) -> User:
        """Whom a row made "for the actor" belongs to: the actor, or for an anonymous visitor the superuser."""
        return self.actor or self.root

    def root_get(self, url: str) -> HttpResponse:
        if self.root_browser is None:
            self.root_browser = Client()
            self.root_browser.force_login(self.root)
        return self.root_browser.get(url)


def _url(model: type[models.Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _browser_form(world: World, url: str) -> dict[str, Any]:
    """The form on the superuser's page at ``url`` as a browser posts it (a date and time as its two fields); empty
    when not even a superuser may open it.

    A role expected to be turned away at the door posts the edit alone: the door answers before any form is read,
    and a form's answer instead of the 403 or the login page fails the case all the same."""
    if world.turned_away:
        return {}
    page = world.root_get(url)
    if page.status_code != 200:
        return {}
    data: dict[str, Any] = {}
    for name, value in form_data(page).items():
        if isinstance(value, datetime):
            data[f"{name}_0"], data[f"{name}_1"] = f"{value:%Y-%m-%d}", f"{value:%H:%M:%S}"
        elif isinstance(value, date | time):
            data[name] = value.isoformat()
        else:
            data[name] = value
    return data


def _first_version(row: Any) -> Any:
    return row.history.order_by("history_id").first()


def _rows(model: type[models.Model]) -> Callable[[World, Subject], Any]:
    """Every row of ``model`` as stored: what a write to it changes (but an account's time of last sign-in, which
    the superuser's sign-in to read a form changes)."""

    def state(w: World, s: Subject) -> Any:
        return [
            {name: value for name, value in row.items() if name != "last_login"}
            for row in model._default_manager.order_by("pk").values()
        ]

    return state


# --- Pages and actions ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One page or write of a model's admin: how a browser reaches it and what in the database it changes (None: a
    page, which changes nothing)."""

    url_name: str  # the admin URL it uses, as in ``get_urls()`` ("changelist", "import", ...)
    send: Callable[[World, Subject], HttpResponse]
    state: Callable[[World, Subject], Any] | None = None
    action: str | None = None  # a list action: the name in the action menu
    prepare: Callable[[World], None] | None = None  # what the world needs besides the subject's row
    autocompletes: tuple[type[models.Model], str] | None = None  # the (model, foreign key) it completes


def _page(view: str) -> Kind:
    """A page of one row."""
    return Kind(view, lambda w, s: w.client.get(_url(s.model, view, w.row.pk)))


def _list(w: World, s: Subject) -> HttpResponse:
    return w.client.get(_url(s.model, "changelist"))


def _add(w: World, s: Subject) -> HttpResponse:
    url = _url(s.model, "add")
    return w.client.post(url, {**_browser_form(w, url), **s.added(w)})


def _change(w: World, s: Subject) -> HttpResponse:
    url = _url(s.model, "change", w.row.pk)
    return w.client.post(url, {**_browser_form(w, url), **s.edited})


def _delete(w: World, s: Subject) -> HttpResponse:
    return w.client.post(_url(s.model, "delete", w.row.pk), {"post": "yes"})


def _version_url(w: World, s: Subject) -> str:
    return w.version_url or _url(s.model, "simple_history", w.row.pk, _first_version(w.row).history_id)


def _deleted(w: World) -> None:
    """The row is deleted (its versions stay in the history)."""
    w.version_url = _url(type(w.row), "simple_history", w.row.pk, _first_version(w.row).history_id)
    w.row.delete()


def _revert(w: World, s: Subject) -> HttpResponse:
    # The version's own form, unchanged: posting it saves that version.
    url = _version_url(w, s)
    return w.client.post(url, _browser_form(w, url))


def _action(name: str, **extra: Any) -> Callable[[World, Subject], HttpResponse]:
    def send(w: World, s: Subject) -> HttpResponse:
        data = {"action": name, "_selected_action": [w.row.pk], **extra}
        return w.client.post(_url(s.model, "changelist"), data)

    return send


def _row_state(w: World, s: Subject) -> Any:
    return _rows(s.model)(w, s)


def _inline(field: str, value: str) -> Callable[[World, Subject], HttpResponse]:
    """The change page posted with one field of its first inline row set to ``value``."""

    def send(w: World, s: Subject) -> HttpResponse:
        url = _url(s.model, "change", w.row.pk)
        return w.client.post(url, {**_browser_form(w, url), field: value})

    return send


def _exported(w: World, s: Subject) -> bool:
    return w.response is not None and w.response.get("Content-Disposition", "").startswith("attachment")


def _list_edit(w: World, s: Subject) -> HttpResponse:
    # The list's editable column (a rule's "active"), unticked and saved.
    data = {"form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "1", "form-MIN_NUM_FORMS": "0",
            "form-MAX_NUM_FORMS": "1000", "form-0-id": str(w.row.pk), "_save": "Save"}  # fmt: skip
    return w.client.post(_url(ClassificationRule, "changelist"), data)


def _import(block: Mapping[str, Any]) -> Callable[[World, Subject], HttpResponse]:
    def send(w: World, s: Subject) -> HttpResponse:
        return w.client.post(reverse("admin:errcatalog_upstream_import"), {"block": json.dumps(block)})

    return send


def _connectable(w: World) -> None:
    """The upstream points at a recording server on this machine, which staff may test here (the setting is on)."""
    w.settings.GATEWAY = {**w.settings.GATEWAY, "ALLOW_PRIVATE": True}
    w.recorder = Recorder()
    # Polled often, so that its shutdown at the end of the case does not wait half a second.
    threading.Thread(target=w.recorder.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    upstream_update(actor=None, upstream=w.row, url=w.recorder.url, enabled=True)


def _contacted(w: World, s: Subject) -> int:
    return len(w.recorder.received) if w.recorder else 0


def _was_stdio(w: World) -> None:
    """The upstream's first version runs a command here (a superuser made it so); it was moved to an address since."""
    local = upstream_create(actor=None, name="local", prefix="local", transport="stdio", command=sys.executable,
                            args=["-c", "pass"], enabled=False)  # fmt: skip
    upstream_update(actor=None, upstream=local, transport="http", url="https://8.8.8.8/mcp", command="", args=[])
    w.row = local


def _was_private(w: World) -> None:
    """The upstream's first version pointed at an address on this network (a superuser's choice); it was moved to a
    public one since."""
    moved = upstream_create(actor=None, name="moved", prefix="moved", transport="http", url="http://10.1.2.3/mcp",
                            enabled=False)  # fmt: skip
    upstream_update(actor=None, upstream=moved, url="https://8.8.4.4/mcp")
    w.row = moved


def _was_trusted(w: World) -> None:
    """The upstream's first version was trusted (its tools' changes approved unseen); it is not any more."""
    vetted = upstream_create(actor=None, name="vetted", prefix="vetted", transport="http",
                             url="https://8.8.4.4/mcp", trusted=True, enabled=False)  # fmt: skip
    upstream_update(actor=None, upstream=vetted, trusted=False)
    w.row = vetted


def _rule_form(*, save: bool) -> dict[str, Any]:
    """The make-rule page's form, as previewed: saving it is allowed only for the values the page showed."""
    data = {"code": "NOT_FOUND", "pattern": "^Widget", "position": "298", "note": "", "any_tool": ""}
    form = RuleFromGroupForm(data, codes=["NOT_FOUND"])
    assert form.is_valid(), form.errors
    return {**data, "previewed": form.fingerprint(), **({"save": "1"} if save else {"preview": "1"})}


def _make_rule(*, save: bool) -> Callable[[World, Subject], HttpResponse]:
    def send(w: World, s: Subject) -> HttpResponse:
        url = reverse("admin:errcatalog_upstreamfailuregroup_make_rule", args=[w.row.pk])
        return w.client.post(url, _rule_form(save=save))

    return send


def _catalog_loaded(w: World) -> None:
    call_command("catalog_load_defaults", verbosity=0)  # the codes a rule can choose from


def _set_password(w: World, s: Subject) -> HttpResponse:
    data = {"password1": "taken-over-9-times", "password2": "taken-over-9-times", "usable_password": "true"}
    return w.client.post(_url(User, "password_change", w.row.pk), data)


def _autocomplete(source: type[models.Model], field_name: str) -> Kind:
    def send(w: World, s: Subject) -> HttpResponse:
        query = {"app_label": source._meta.app_label, "model_name": source._meta.model_name,
                 "field_name": field_name, "term": ""}  # fmt: skip
        return w.client.get(reverse("admin:autocomplete"), query)

    return Kind("autocomplete", send, autocompletes=(source, field_name))


KINDS: dict[str, Kind] = {
    "list": Kind("changelist", _list),
    "add page": Kind("add", lambda w, s: w.client.get(_url(s.model, "add"))),
    "add": Kind("add", _add, _row_state),
    "change page": _page("change"),
    "change": Kind("change", _change, _row_state),
    "delete page": _page("delete"),
    "delete": Kind("delete", _delete, _row_state),
    "history": _page("history"),
    "version page": Kind("simple_history", lambda w, s: w.client.get(_version_url(w, s))),
    "revert": Kind("simple_history", _revert, _row_state),
    "revert a deleted row": Kind("simple_history", _revert, _row_state, prepare=_deleted),
    "delete selected": Kind("changelist", _action("delete_selected", post="yes"), _row_state, "delete_selected"),
    # ErrorCode: its variants are an inline of its page, under the variants' own permissions.
    "change a variant on the code's page": Kind(
        "change", _inline("variants-0-message", "Changed on the code's page."), _rows(TemplateVariant)
    ),
    "delete a variant on the code's page": Kind("change", _inline("variants-0-DELETE", "on"), _rows(TemplateVariant)),
    "export as YAML": Kind("changelist", _action("export_yaml"), _exported, "export_yaml"),
    # NamedServer: its upstreams are an inline of its page, under the server's permissions.
    "change its upstreams": Kind("change", _inline("members-0-tools", "echo"), _rows(NamedServerUpstream)),
    # ClassificationRule
    "edit in the list": Kind("changelist", _list_edit, _row_state),
    # Upstream
    "import page": Kind("import", lambda w, s: w.client.get(reverse("admin:errcatalog_upstream_import"))),
    "import a new upstream": Kind(
        "import", _import({"mcpServers": {"fresh": {"type": "http", "url": "https://8.8.4.4/mcp"}}}), _row_state
    ),
    "import over an upstream": Kind(
        "import", _import({"mcpServers": {"remote": {"type": "http", "url": "https://9.9.9.9/mcp"}}}), _row_state
    ),
    "test connection": Kind("changelist", _action("test_connection"), _contacted, "test_connection", _connectable),
    "revert to a stdio version": Kind("simple_history", _revert, _row_state, prepare=_was_stdio),
    "revert to a trusted version": Kind("simple_history", _revert, _row_state, prepare=_was_trusted),
    "revert to a private address": Kind("simple_history", _revert, _row_state, prepare=_was_private),
    # ClientToken
    "revoke": Kind("changelist", _action("revoke"), _row_state, "revoke"),
    # UpstreamTool
    "approve": Kind("changelist", _action("approve"), _row_state, "approve"),
    "reject": Kind("changelist", _action("reject"), _row_state, "reject"),
    # UpstreamFailureGroup
    "make-rule page": Kind(
        "make_rule",
        lambda w, s: w.client.get(reverse("admin:errcatalog_upstreamfailuregroup_make_rule", args=[w.row.pk])),
        prepare=_catalog_loaded,
    ),
    "make-rule preview": Kind("make_rule", _make_rule(save=False), prepare=_catalog_loaded),
    "make a rule": Kind("make_rule", _make_rule(save=True), _rows(ClassificationRule), prepare=_catalog_loaded),
    # User
    "password page": _page("password_change"),
    "set password": Kind("password_change", _set_password, _row_state),
    # Autocomplete of a foreign key (the remote model's page decides)
    "autocomplete a token's owner": _autocomplete(ClientToken, "user"),
    "autocomplete a variant's code": _autocomplete(TemplateVariant, "error_code"),
    "autocomplete a rule's code": _autocomplete(ClassificationRule, "error_code"),
}

# --- Who gets what ----------------------------------------------------------------------------------------------------

NOBODY: tuple[str, ...] = ()
READERS = (SUPERUSER, "view", "change")
ADDERS = (SUPERUSER, "add")
CHANGERS = (SUPERUSER, "change")
DELETERS = (SUPERUSER, "delete")
LIST_DELETERS = (SUPERUSER, "view+delete")

STANDARD = {
    "list": READERS,
    "add page": ADDERS,
    "add": ADDERS,
    "change page": READERS,
    "change": CHANGERS,
    "delete page": DELETERS,
    "delete": DELETERS,
    "history": READERS,
    "delete selected": LIST_DELETERS,
}
# A revert saves a version over the row as stored; a row deleted since is not re-created from its history.
VERSIONED = {**STANDARD, "version page": READERS, "revert": CHANGERS, "revert a deleted row": NOBODY}


@dataclass(frozen=True)
class Subject:
    """A registered model, the row its pages are opened for, and who gets each of its pages and writes."""

    label: str
    model: type[models.Model]
    make: Callable[[World], Any]  # the row; a versioned one has two versions, the first differing from the row
    pages: Mapping[str, tuple[str, ...]]  # kind → the roles that get it (OK); the others get the default refusal
    added: Callable[[World], dict[str, Any]] = lambda w: {}  # the add page's fields for a new row
    edited: Mapping[str, Any] = field(default_factory=dict)  # the change page's field changed
    # (kind, role) → the outcome, where it is not the default (403, or an action absent from the list's menu) or is
    # given past the door.
    refusals: Mapping[tuple[str, str], str] = field(default_factory=dict)


def _catalog_code(w: World) -> ErrorCode:
    code = catalog.error_code_create(code="MATRIX_CODE", category="tool", explanation="First version.",
                                     variants=[{"message": "The tool failed."}])  # fmt: skip
    catalog.error_code_update(error_code=code, explanation="Second version.")
    return code


def _variant(w: World) -> TemplateVariant:
    variant = _catalog_code(w).variants.get()
    catalog.template_variant_update(variant=variant, message="The tool failed again.")
    return variant


def _hint(w: World) -> ParameterHint:
    hint = catalog.parameter_hint_create(tool="send_email", parameter="to", description="the recipient")
    catalog.parameter_hint_update(hint=hint, description="the recipient's address")
    return hint


def _rule(w: World) -> ClassificationRule:
    rule = catalog.classification_rule_create(
        position=900, error_code=_catalog_code(w), tool="send_email", note="First version."
    )
    catalog.classification_rule_update(rule=rule, note="Second version.")
    return rule


def _upstream(w: World) -> Upstream:
    upstream = upstream_create(actor=None, name="remote", prefix="remote", transport="http",
                               url="https://mcp.example.com/mcp", enabled=False)  # fmt: skip
    upstream_update(actor=None, upstream=upstream, timeout_seconds=5)
    return upstream


def _held_pin(w: World) -> UpstreamTool:
    """A pinned tool whose listed metadata changed since it was approved: the change waits for review."""
    upstream = _upstream(w)
    upstream_tools_record(upstream="remote", listing=[{"name": "search", "inputSchema": {"type": "object"}}])
    upstream_tools_record(upstream="remote", listing=[{"name": "search", "description": "Search the web.",
                                                       "inputSchema": {"type": "object"}}])  # fmt: skip
    pin = upstream.pins.get()
    assert pin.status != UpstreamTool.Status.APPROVED and pin.history.count() > 1
    return pin


def _failure_group(w: World) -> UpstreamFailureGroup:
    inbox.reset()
    inbox.note("remote", "remote__search", "tool_error", "Widget 3 exploded", classified=False)
    assert inbox.flush()
    return UpstreamFailureGroup.objects.get()


def _named_server(w: World) -> NamedServer:
    upstream = upstream_create(actor=None, name="remote", prefix="remote", transport="http",
                               url="https://mcp.example.com/mcp", enabled=False)  # fmt: skip
    server = named_server_create(actor=None, name="support", description="First version.",
                                 upstreams={upstream.name: []})  # fmt: skip
    named_server_update(actor=None, server=server, description="Second version.")
    return server


def _own_token(w: World) -> ClientToken:
    """The acting staff member's own token: the only kind a non-superuser may change, revoke or delete at all."""
    token, _key = client_token_create(user=w.owner, name="laptop")
    return token


def _someone_elses_token(w: World) -> ClientToken:
    boss = User.objects.create_superuser(username="boss", password="pw-boss-1")
    token, _key = client_token_create(user=boss, name="boss's laptop")
    return token


PASSWORD = "pw-newcomer-1"


def _target_user(w: World | None = None) -> User:
    return User.objects.create_user(username="target", password="pw-target-1")


SUBJECTS = (
    Subject(
        "ErrorCode",
        ErrorCode,
        _catalog_code,
        {
            **VERSIONED,
            # Deleting a code deletes its variants: Django asks for their delete permission too.
            "delete page": (*DELETERS, "delete+delete variants"),
            "delete": (SUPERUSER, "delete+delete variants"),
            "delete selected": (SUPERUSER, "view+delete+delete variants"),
            "export as YAML": READERS,
            "change a variant on the code's page": (SUPERUSER, "change+change variants"),
            # A variant is deleted where it is seen.
            "delete a variant on the code's page": (SUPERUSER, "change+view variants+delete variants"),
            "autocomplete a variant's code": READERS,
            "autocomplete a rule's code": READERS,
        },
        added=lambda w: {"code": "MATRIX_NEW", "category": "tool"},
        edited={"explanation": "Changed in admin."},
        refusals={
            ("delete selected", "view+delete"): DENIED,
            # The code's own fields are saved; its variants are not touched.
            ("change a variant on the code's page", "change"): REFUSED,
            ("delete a variant on the code's page", "change"): REFUSED,
            ("delete a variant on the code's page", "change+delete variants"): REFUSED,
        },
    ),
    Subject(
        "TemplateVariant",
        TemplateVariant,
        _variant,
        VERSIONED,
        added=lambda w: {"error_code": w.row.error_code.pk, "name": "second", "message": "Another wording."},
        edited={"message": "Changed in admin."},
    ),
    Subject(
        "ParameterHint",
        ParameterHint,
        _hint,
        VERSIONED,
        added=lambda w: {"tool": "send_email", "parameter": "cc"},
        edited={"description": "changed in admin"},
    ),
    Subject(
        "ClassificationRule",
        ClassificationRule,
        _rule,
        {**VERSIONED, "edit in the list": CHANGERS},
        added=lambda w: {"position": "901", "error_code": w.row.error_code.pk, "tool": "send_email"},
        edited={"note": "Changed in admin."},
    ),
    Subject(
        "Upstream",
        Upstream,
        _upstream,
        {
            **VERSIONED,
            # Importing creates or updates by name, each entry as far as the importer may.
            "import page": (SUPERUSER, "add", "change"),
            "import a new upstream": ADDERS,
            "import over an upstream": CHANGERS,
            "test connection": CHANGERS,
            # Reverting to a version is changing the upstream to it, under the same rules: only a superuser runs a
            # command here or points an upstream at this network, only staff who may approve tools trust one.
            "revert to a stdio version": (SUPERUSER,),
            "revert to a private address": (SUPERUSER,),
            "revert to a trusted version": (SUPERUSER, "change+approve tools"),
        },
        added=lambda w: {"name": "fresh", "prefix": "fresh", "transport": "http", "url": "https://8.8.4.4/mcp"},
        edited={"timeout_seconds": "7"},
        refusals={
            ("import a new upstream", "change"): REFUSED,
            ("import over an upstream", "add"): REFUSED,
            ("revert to a stdio version", "change"): REFUSED,
            ("revert to a private address", "change"): REFUSED,
            ("revert to a trusted version", "change"): REFUSED,
        },
    ),
    Subject(
        "UpstreamTool",
        UpstreamTool,
        _held_pin,
        # Pins are written by the gateway and decided by the approve permission only: nobody adds, edits, reverts
        # or deletes one by hand (an upstream whose pins were gone would have its next listing approved unseen).
        {
            **VERSIONED,
            "add page": NOBODY,
            "add": NOBODY,
            "change": NOBODY,
            "delete page": NOBODY,
            "delete": NOBODY,
            "revert": NOBODY,
            "delete selected": NOBODY,
            "approve": (SUPERUSER, "view+approve"),
            "reject": (SUPERUSER, "view+approve"),
        },
        refusals={("approve", "approve"): DENIED, ("reject", "approve"): DENIED},
    ),
    Subject(
        "UpstreamFailureGroup",
        UpstreamFailureGroup,
        _failure_group,
        # The serving processes write the inbox; staff read it, delete (dismiss) a group, and make a rule from one,
        # which needs the rule's add permission too.
        {
            **STANDARD,
            "add page": NOBODY,
            "add": NOBODY,
            "change": NOBODY,
            "make-rule page": (SUPERUSER, "view+add rules"),
            "make-rule preview": (SUPERUSER, "view+add rules"),
            "make a rule": (SUPERUSER, "view+add rules"),
        },
        refusals={(kind, "add rules"): DENIED for kind in ("make-rule page", "make-rule preview", "make a rule")},
    ),
    Subject(
        "NamedServer",
        NamedServer,
        _named_server,
        {**VERSIONED, "change its upstreams": CHANGERS},
        added=lambda w: {"name": "other"},
        edited={"description": "Changed in admin."},
    ),
    Subject(
        "ClientToken",
        ClientToken,
        _own_token,
        {**STANDARD, "revoke": CHANGERS},
        added=lambda w: {"name": "minted", "user": w.owner.pk},
        edited={"name": "renamed"},
    ),
    Subject(
        # A token is its owner's identity: another user's is a superuser's to change, revoke or delete.
        "ClientToken of another user",
        ClientToken,
        _someone_elses_token,
        {
            "change page": READERS,
            "change": (SUPERUSER,),
            "delete": (SUPERUSER,),
            "delete selected": (SUPERUSER,),
            "revoke": (SUPERUSER,),
        },
        edited={"name": "renamed"},
        refusals={("revoke", "change"): REFUSED, ("delete selected", "view+delete"): DENIED},
    ),
    Subject(
        "User",
        User,
        _target_user,
        {
            **STANDARD,
            # Django's user admin asks for "change" as well as "add" to create an account (its second page edits it).
            "add page": (SUPERUSER, "add+change"),
            "add": (SUPERUSER, "add+change"),
            "password page": CHANGERS,
            "set password": CHANGERS,
            "autocomplete a token's owner": READERS,
        },
        added=lambda w: {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD},
        edited={"first_name": "Changed"},
    ),
    Subject(
        "Group",
        Group,
        lambda w: Group.objects.create(name="readers"),
        STANDARD,
        added=lambda w: {"name": "writers"},
        edited={"name": "renamed"},
    ),
)


def _expected(subject: Subject, kind: str, role: str) -> str:
    if role == ANONYMOUS:
        return LOGIN
    if role in subject.pages[kind]:
        return OK
    if (kind, role) in subject.refusals:
        return subject.refusals[(kind, role)]
    if KINDS[kind].action is not None and _reaches_the_list(role):
        return ABSENT
    return DENIED


# Refusals that hold in the database but reach the role as a server error instead of the outcome the table names:
# (subject, kind, role) → why. A strict expected failure: once the page answers as the table says, it fails. None now.
SERVER_ERRORS: dict[tuple[str, str, str], str] = {}

CASES = [
    pytest.param(
        subject,
        kind,
        role,
        id=re.sub(r"[^\w+-]+", "_", f"{subject.label}-{kind}-{role}"),
        marks=[pytest.mark.xfail(raises=ValidationError, strict=True, reason=SERVER_ERRORS[key])]
        if (key := (subject.label, kind, role)) in SERVER_ERRORS
        else [],
    )
    for subject in SUBJECTS
    for kind, allowed in subject.pages.items()
    # Every base role, then the combinations this row names, once each.
    for role in dict.fromkeys([*BASE_ROLES, *allowed, *(r for (k, r) in subject.refusals if k == kind)])
]


def _login(role: str, model: type[models.Model], root: User) -> tuple[User | None, Client]:
    client = Client()
    if role == ANONYMOUS:
        return None, client
    if role == SUPERUSER:
        user = root
    else:
        user = User.objects.create_user(username="staff", password="pw-staff-1", is_staff=True)
        user.user_permissions.add(*_permissions(role, model))
    client.force_login(user)
    return user, client


def _offered(client: Client, model: type[models.Model]) -> set[str]:
    """The actions in the list's action menu."""
    page = client.get(_url(model, "changelist"))
    assert page.status_code == 200
    action_form = page.context["action_form"]
    return {name for name, _label in action_form.fields["action"].choices if name} if action_form else set()


@pytest.mark.parametrize(("subject", "kind", "role"), CASES)
def test_each_page_and_action_gives_each_role_exactly_its_outcome(subject, kind, role, settings):
    root = User.objects.create_superuser(username="root", password="pw-root-1")
    actor, client = _login(role, subject.model, root)
    expected = _expected(subject, kind, role)
    # A refusal the table names is made past the door (by a form, a service, or a row's owner); the others at it.
    turned_away = expected in (DENIED, LOGIN) and (kind, role) not in subject.refusals
    world = World(root=root, actor=actor, client=client, settings=settings, turned_away=turned_away)
    world.row = subject.make(world)
    spec = KINDS[kind]
    try:
        if spec.prepare:
            spec.prepare(world)
        before = spec.state(world, subject) if spec.state else None
        world.response = response = spec.send(world, subject)
        done = spec.state(world, subject) != before if spec.state else response.status_code == 200
    finally:
        if world.recorder:
            world.recorder.shutdown()
            world.recorder.server_close()

    status = response.status_code
    to_login = status == 302 and response["Location"].startswith(reverse("admin:login"))
    if expected == OK:
        assert done and status in (200, 302) and not to_login, (status, _errors(response))
    else:
        assert not done, f"{role} got {kind} done"
    if expected == LOGIN:
        assert to_login, status
    elif expected == DENIED:
        assert status == 403, status
    elif expected in (ABSENT, REFUSED):
        assert status in (200, 302) and not to_login, status
    if spec.action is not None and _reaches_the_list(role):
        assert (spec.action in _offered(client, subject.model)) == (expected != ABSENT)


def _errors(response: HttpResponse) -> Any:
    """A form's errors, to say why a write that should have been done was not."""
    context = getattr(response, "context", None)
    if not context or "adminform" not in context:
        return None
    return context["adminform"].form.errors


# --- The table covers the site ----------------------------------------------------------------------------------------


def _covered(model: type[models.Model]) -> list[Kind]:
    return [KINDS[kind] for subject in SUBJECTS for kind in subject.pages if subject.model is model]


def test_every_admin_model_is_in_the_matrix():
    assert set(admin.site._registry) == {subject.model for subject in SUBJECTS} | set(EXCLUDED)


def test_every_url_of_every_admin_model_is_in_the_matrix():
    for model, page in admin.site._registry.items():
        if model in EXCLUDED:
            continue
        prefix = f"{model._meta.app_label}_{model._meta.model_name}_"
        # The name Django gives its own pages, or the one a get_urls() of ours gives.
        names = {p.name.removeprefix(prefix) for p in page.urls if p.name}
        assert names <= {kind.url_name for kind in _covered(model)}, model


def test_every_list_action_is_in_the_matrix(rf: RequestFactory):
    request = rf.get("/")
    request.user = User(is_superuser=True, is_staff=True, is_active=True)
    for model, page in admin.site._registry.items():
        if model not in EXCLUDED:
            assert set(page.get_actions(request)) <= {kind.action for kind in _covered(model)}, model


def test_every_autocomplete_field_is_in_the_matrix():
    autocompleted = {
        (source._meta.model_name, name)
        for source, page in admin.site._registry.items()
        if source not in EXCLUDED
        for name in page.autocomplete_fields
    }
    covered = {
        (kind.autocompletes[0]._meta.model_name, kind.autocompletes[1])
        for subject in SUBJECTS
        for kind in map(KINDS.get, subject.pages)
        if kind is not None and kind.autocompletes is not None
    }
    assert autocompleted == covered


def test_every_versioned_page_checks_the_change_permission_on_revert():
    assert all(isinstance(page, VersionedAdmin) for page in admin.site._registry.values()
               if isinstance(page, SimpleHistoryAdmin))  # fmt: skip


# --- People and groups: nobody but a superuser grants what they do not hold -----------------------------------


def _user_manager(*extra: str) -> User:
    """A staff member who may view and change accounts, and holds ``extra`` permissions (codenames) besides."""
    user = User.objects.create_user(username="manager", password="pw-manager-1", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=("view_user", "change_user", *extra)))
    return User.objects.get(pk=user.pk)


def _account_form(page: Any) -> dict[str, Any]:
    """The user page's form as a browser posts it: its date and time of joining come as two fields."""
    data = form_data(page)
    joined = data.pop("date_joined")
    return {**data, "date_joined_0": f"{joined:%Y-%m-%d}", "date_joined_1": f"{joined:%H:%M:%S}"}


def _permission(codename: str) -> Permission:
    return Permission.objects.get(codename=codename)


def test_a_user_manager_cannot_make_themselves_a_superuser(client):
    manager = _user_manager()
    client.force_login(manager)
    page = client.get(_url(User, "change", manager.pk))
    assert "is_superuser" not in page.context["adminform"].form.fields
    data = {**_account_form(page), "is_superuser": "on"}
    client.post(_url(User, "change", manager.pk), data)
    manager.refresh_from_db()
    assert not manager.is_superuser


def test_a_user_manager_cannot_grant_themselves_a_permission_they_lack(client):
    manager = _user_manager()
    client.force_login(manager)
    page = client.get(_url(User, "change", manager.pk))
    data = _account_form(page)
    granted = [_permission("view_user").pk, _permission("change_user").pk, _permission("add_clienttoken").pk]
    response = client.post(_url(User, "change", manager.pk), {**data, "user_permissions": granted})
    assert response.status_code == 200
    assert "only permissions you hold yourself" in response.content.decode()
    assert not User.objects.get(pk=manager.pk).has_perm("errcatalog.add_clienttoken")


def test_a_user_manager_cannot_join_a_group_that_gives_more_than_they_hold(client):
    powerful = Group.objects.create(name="catalog-admins")
    powerful.permissions.add(_permission("delete_errorcode"))
    manager = _user_manager()
    client.force_login(manager)
    data = _account_form(client.get(_url(User, "change", manager.pk)))
    response = client.post(_url(User, "change", manager.pk), {**data, "groups": [powerful.pk]})
    assert "groups whose permissions you hold yourself" in response.content.decode()
    assert not manager.groups.exists()


def test_a_user_manager_grants_what_they_hold(client):
    manager = _user_manager("view_errorcode")
    target = _target_user()
    client.force_login(manager)
    data = _account_form(client.get(_url(User, "change", target.pk)))
    response = client.post(
        _url(User, "change", target.pk), {**data, "user_permissions": [_permission("view_errorcode").pk]}
    )
    assert response.status_code == 302
    assert User.objects.get(pk=target.pk).has_perm("errcatalog.view_errorcode")


def test_a_user_manager_cannot_touch_a_superuser_or_an_account_holding_more(client):
    manager = _user_manager("delete_user")
    boss = User.objects.create_superuser(username="boss", password="pw-boss-1")
    editor = User.objects.create_user(username="editor", password="pw-editor-1", is_staff=True)
    editor.user_permissions.add(_permission("change_errorcode"))
    client.force_login(manager)
    for account in (boss, editor):
        # The manager may look (they hold "view user"), not change.
        page = client.get(_url(User, "change", account.pk))
        assert page.status_code == 200 and not page.context["has_change_permission"]
        assert client.post(_url(User, "change", account.pk), {"username": "renamed"}).status_code == 403
        assert client.get(_url(User, "password_change", account.pk)).status_code == 403
        assert client.post(_url(User, "password_change", account.pk),
                           {"password1": "taken-over-9", "password2": "taken-over-9"}).status_code == 403  # fmt: skip
        client.post(_url(User, "changelist"),
                    {"action": "delete_selected", "_selected_action": [account.pk], "post": "yes"})  # fmt: skip
        assert User.objects.filter(pk=account.pk).exists()
    assert User.objects.get(pk=boss.pk).check_password("pw-boss-1")


def test_a_superuser_manages_every_account_and_grants_anything(client):
    boss = User.objects.create_superuser(username="boss", password="pw-boss-1")
    target = _target_user()
    client.force_login(boss)
    page = client.get(_url(User, "change", target.pk))
    assert "is_superuser" in page.context["adminform"].form.fields
    data = {**_account_form(page), "is_superuser": "on", "user_permissions": [_permission("delete_errorcode").pk]}
    assert client.post(_url(User, "change", target.pk), data).status_code == 302
    target.refresh_from_db()
    assert target.is_superuser


def test_a_group_manager_cannot_give_a_group_more_than_they_hold(client):
    manager = User.objects.create_user(username="manager", password="pw-manager-1", is_staff=True)
    manager.user_permissions.add(*Permission.objects.filter(codename__in=("view_group", "change_group")))
    group = Group.objects.create(name="readers")
    manager.groups.add(group)
    client.force_login(manager)
    data = {"name": "readers", "permissions": [_permission("change_errorcode").pk]}
    response = client.post(_url(Group, "change", group.pk), data)
    assert "only permissions you hold yourself" in response.content.decode()
    assert not group.permissions.exists()
    # A group that already gives more than the manager holds is not theirs to edit.
    admins = Group.objects.create(name="admins")
    admins.permissions.add(_permission("delete_errorcode"))
    page = client.get(_url(Group, "change", admins.pk))
    assert page.status_code == 200 and not page.context["has_change_permission"]
    assert client.post(_url(Group, "change", admins.pk), {"name": "renamed"}).status_code == 403
    assert Group.objects.get(pk=admins.pk).name == "admins"
