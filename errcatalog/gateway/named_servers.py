"""The one write path of named servers (``NamedServer`` and its upstreams), used by admin and ``catalog_import``;
and what staff should know about a composition before they rely on it.

A named server's own fields are checked by the model's rules (``named_server_problems`` in its ``clean``: the
server-name rule, never a reserved name, never an upstream's, the tool-name rule); its upstreams are given as one
mapping, upstream name → the tools of it served by their own names (empty: every tool ``/mcp`` serves of it), which
replaces the stored rows. The rules, for every caller:

- An upstream named must exist: a named server composes upstreams, it does not announce them.
- Our own tools may be checked against the tools this deployment serves (``known_tools``, given by a caller that can
  read the MCP server's registry: admin and ``manage.py catalog_import``); a tool the server already has is kept even
  when it is no longer served here, as admin keeps it ticked, so an export imports again where it was made.
- A subset of an upstream's tools is held to the tool-name rule only, never to what the upstream lists: a listing is
  known only once a serving process has connected (a fresh deployment importing its document knows none), changes
  with the upstream's releases, and a tool it stops listing is simply not served. Admin warns instead
  (``named_server_tool_warnings``) about names that the upstream's recorded listing lacks or that ``/mcp`` does not
  serve.

Every change is in the history, attributed to the actor when there is one (the command line has none).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from errcatalog.gateway.models import NamedServer, NamedServerUpstream, Upstream, UpstreamTool

# A named server's fields a caller gives (its upstreams are the ``upstreams`` mapping).
FIELDS = ("name", "description", "enabled", "tools")


def _attributed(row: Any, actor: Any, change_reason: str) -> None:
    if change_reason:
        row._change_reason = change_reason  # read by django-simple-history
    if getattr(actor, "pk", None) is not None:
        row._history_user = actor  # read by django-simple-history, also outside a request


def _unknown_tools(tools: Any, known: Collection[str] | None, kept: Sequence[str]) -> list[str]:
    if known is None or not isinstance(tools, list):
        return []
    return [tool for tool in tools if tool not in known and tool not in kept]


def named_server_validate(
    *, server: NamedServer | None = None, known_tools: Collection[str] | None = None, **fields: Any
) -> NamedServer:
    """``server`` (or a new one) with ``fields`` applied, checked but not saved; raises ``ValidationError`` by field.

    ``known_tools``: our tools a named server may serve here (None: not checked).
    """
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValidationError({name: "Not a field of a named server." for name in sorted(unknown)})
    kept: list[str] = []
    if server is None:
        candidate = NamedServer(**fields)
    else:
        kept = list(server.tools) if isinstance(server.tools, list) else []
        candidate = NamedServer(pk=server.pk, **{**{name: getattr(server, name) for name in FIELDS}, **fields})
    candidate.full_clean(validate_unique=False, validate_constraints=False)
    # The name's uniqueness among named servers is the database's; an early word names the field.
    if NamedServer.objects.filter(name=candidate.name).exclude(pk=candidate.pk).exists():
        raise ValidationError({"name": "A named server has this name already."})
    strangers = _unknown_tools(candidate.tools, known_tools, kept)
    if strangers:
        shown = ", ".join(name[:60] for name in strangers[:5])
        raise ValidationError({"tools": f"Not a tool this deployment serves: {shown}."})
    return candidate


def _members(upstreams: Mapping[str, Any]) -> dict[Upstream, list[str]]:
    """The upstream rows of an ``upstreams`` mapping, each with its tools checked; raises ``ValidationError``."""
    if not isinstance(upstreams, Mapping):
        raise ValidationError({"upstreams": "Give the upstreams as a mapping of upstream name to its tools."})
    rows = {u.name: u for u in Upstream.objects.filter(name__in=[n for n in upstreams if isinstance(n, str)])}
    missing = [str(name)[:64] for name in upstreams if name not in rows]
    if missing:
        raise ValidationError({"upstreams": f"No upstream named {', '.join(sorted(missing))}."})
    members = {}
    for name, tools in upstreams.items():
        member = NamedServerUpstream(upstream=rows[name], tools=list(tools) if isinstance(tools, list) else tools)
        try:
            member.clean()
        except ValidationError as exc:
            raise ValidationError({"upstreams": [f"{name}: {text}" for text in exc.messages]}) from None
        members[rows[name]] = member.tools
    return members


def _write_members(server: NamedServer, members: Mapping[Upstream, list[str]], actor: Any, reason: str) -> bool:
    """Make ``server``'s upstream rows ``members``; True when a row changed."""
    changed = False
    stored = {m.upstream_id: m for m in server.members.all()}
    for upstream, tools in members.items():
        member = stored.pop(upstream.pk, None)
        if member is not None and member.tools == tools:
            continue
        if member is None:
            member = NamedServerUpstream(server=server, upstream=upstream, tools=tools)
            _attributed(member, actor, reason)
            member.save()
        else:
            member.tools = tools
            _attributed(member, actor, reason)
            member.save(update_fields=["tools"])
        changed = True
    for member in stored.values():
        _attributed(member, actor, reason)
        member.delete()
        changed = True
    return changed


@transaction.atomic
def named_server_create(
    *,
    actor: Any,
    upstreams: Mapping[str, Sequence[str]] | None = None,
    known_tools: Collection[str] | None = None,
    change_reason: str = "",
    **fields: Any,
) -> NamedServer:
    """Create a named server of ``fields`` and ``upstreams`` (upstream name → its tools; empty: all)."""
    server = named_server_validate(known_tools=known_tools, **fields)
    members = _members(upstreams or {})
    _attributed(server, actor, change_reason)
    server.save()
    _write_members(server, members, actor, change_reason)
    return server


@transaction.atomic
def named_server_update(
    *,
    actor: Any,
    server: NamedServer,
    upstreams: Mapping[str, Sequence[str]] | None = None,
    known_tools: Collection[str] | None = None,
    change_reason: str = "",
    **fields: Any,
) -> list[str]:
    """Save the fields that differ and, when ``upstreams`` is given, make them its upstreams; return the names of
    what changed (``upstreams`` among them when a row of its upstreams did)."""
    changed = [name for name, value in fields.items() if getattr(server, name) != value]
    checked = named_server_validate(server=server, known_tools=known_tools, **{name: fields[name] for name in changed})
    members = _members(upstreams) if upstreams is not None else None
    if changed:
        for name in changed:
            setattr(server, name, getattr(checked, name))
        _attributed(server, actor, change_reason)
        server.save(update_fields=[*changed, "updated_at"])
    if members is not None and _write_members(server, members, actor, change_reason):
        changed.append("upstreams")
    return changed


@transaction.atomic
def named_server_delete(*, actor: Any, server: NamedServer, change_reason: str = "") -> None:
    for member in server.members.all():
        _attributed(member, actor, change_reason)
        member.delete()
    _attributed(server, actor, change_reason)
    server.delete()


def named_server_upstreams(server: NamedServer) -> dict[str, list[str]]:
    """``server``'s upstreams as the services take them: upstream name → its tools (empty: all)."""
    members = server.members.select_related("upstream").order_by("upstream__name")
    return {member.upstream.name: list(member.tools) for member in members}


# --- A catalog document's ``named_servers`` ------------------------------------------------------------------------


@dataclass
class NamedServerImportSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def entry_upstreams(entry: Mapping[str, Any]) -> dict[str, list[str]]:
    """A document entry's upstreams (``[{name, tools}]``) as the services take them."""
    return {member["name"]: list(member["tools"]) for member in entry.get("upstreams", [])}


@transaction.atomic
def named_servers_prune(names: Collection[str], *, actor: Any, change_reason: str = "") -> list[str]:
    """Delete the named servers not in ``names`` (an import's ``--replace``); return their names. Run before the
    document's upstreams are written, so that an upstream may take a name a removed server had."""
    deleted = []
    for server in NamedServer.objects.exclude(name__in=list(names)):
        named_server_delete(actor=actor, server=server, change_reason=change_reason)
        deleted.append(server.name)
    return deleted


@transaction.atomic
def named_servers_sync(
    entries: Sequence[Mapping[str, Any]],
    *,
    actor: Any,
    only_missing: bool = False,
    known_tools: Collection[str] | None = None,
    change_reason: str = "",
) -> NamedServerImportSummary:
    """Make the named servers of ``entries`` (a catalog document's ``named_servers``) match, by name; the others are
    left alone (``named_servers_prune`` deletes them). ``only_missing`` creates missing ones only. Raises
    ``ValidationError`` keyed ``<name>.<field>``."""
    summary = NamedServerImportSummary()
    for entry in entries:
        fields = {name: entry[name] for name in FIELDS if name in entry}
        try:
            existing = NamedServer.objects.filter(name=entry["name"]).first()
            if existing is None:
                named_server_create(
                    actor=actor, upstreams=entry_upstreams(entry), known_tools=known_tools,
                    change_reason=change_reason, **fields,
                )  # fmt: skip
                summary.created.append(entry["name"])
            elif not only_missing and named_server_update(
                actor=actor, server=existing, upstreams=entry_upstreams(entry), known_tools=known_tools,
                change_reason=change_reason, **fields,
            ):  # fmt: skip
                summary.updated.append(entry["name"])
            else:
                summary.unchanged.append(entry["name"])
        except ValidationError as exc:
            problems = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
            raise ValidationError({f"{entry['name']}.{key}": texts for key, texts in problems.items()}) from None
    return summary


# --- What staff should know ------------------------------------------------------------------------------------------


def named_server_tool_warnings(upstreams: Mapping[str, Sequence[str]]) -> list[str]:
    """Sentences for staff about the chosen tools of each upstream that will not be served as they expect: a name
    its recorded listing lacks (only where a serving process has recorded one), one listed but not approved yet, one
    its exposed tools leave out. Nothing is refused for these (the module's rules)."""
    rows = {u.name: u for u in Upstream.objects.filter(name__in=list(upstreams))}
    pins: dict[str, dict[str, bool]] = {}
    listed = UpstreamTool.objects.filter(upstream__name__in=list(rows), kind=UpstreamTool.Kind.TOOL)
    for listed_by, name, approved in listed.values_list("upstream__name", "name", "approved"):
        pins.setdefault(listed_by, {})[name] = approved is not None
    warnings = []
    for upstream_name, tools in sorted(upstreams.items()):
        upstream = rows.get(upstream_name)
        if upstream is None or not tools:
            continue
        known = pins.get(upstream_name)
        if known is not None:
            absent = [tool for tool in tools if tool not in known]
            waiting = [tool for tool in tools if known.get(tool) is False]
            if absent:
                warnings.append(
                    f"{upstream_name} does not list {_names(absent)}: not served until it does (a typing mistake?)."
                )
            if waiting:
                warnings.append(f"{upstream_name}'s {_names(waiting)}: not served until staff approve its metadata.")
        if upstream.tools:
            hidden = [tool for tool in tools if tool not in upstream.tools]
            if hidden:
                warnings.append(f"{upstream_name}'s exposed tools leave out {_names(hidden)}: /mcp does not serve it.")
    return warnings


def _names(tools: Sequence[str]) -> str:
    shown = ", ".join(tools[:10])
    return shown + (f" and {len(tools) - 10} more" if len(tools) > 10 else "")
