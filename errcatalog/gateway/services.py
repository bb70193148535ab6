"""The one write path of upstreams, used by admin and ``catalog_import``; and of their reported health.

Every value an operator enters for a header or a variable is stored as a reference or sealed here for its upstream
(``errcatalog.gateway.secrets``), so no caller can store one in the clear, nor send a stored one elsewhere. The
rules, for every caller (admin, its import form, ``upstream_import``, a catalog document's ``upstreams``):

- A stdio upstream runs a command on this server, as powerful as a shell: only a superuser (or a caller with no
  user, the command line) may create one, turn an upstream into one or change one, and none may while
  ``GATEWAY["STDIO"]`` is off.
- An ``env:`` reference sends a variable of the web process's environment to the upstream: staff who are not
  superusers may give only those ``secrets.env_reference_allowed`` allows (or keep one the upstream already has).
- A sealed value given opens only for the upstream it was sealed for (name and URL or command); one that does not
  is refused, except from a superuser or the command line, whose older unbound values are sealed again for the
  upstream and whose values sealed elsewhere are stored as they are (they stay unreadable: "enter it again").
- Changing where an upstream sends its values (transport, URL, or command) drops its stored headers and variables
  unless the same change gives them again: they were entered for the old address.
- An HTTP upstream on a loopback, link-local or private address needs a superuser or ``GATEWAY["ALLOW_PRIVATE"]``.

Every change is in the history.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from errcatalog.gateway.client_config import upstreams_from_client_config
from errcatalog.gateway.models import Transport, Upstream, UpstreamHealth, UpstreamTool
from errcatalog.gateway.screen import approvable, bounded_for_review, metadata_hash, screen_tool, tool_metadata
from errcatalog.gateway.secrets import (
    SEALED_PREFIX,
    check_value,
    env_reference,
    env_reference_allowed,
    opened,
    opened_unbound,
    seal,
)
from errcatalog.gateway.selectors import screen_limits
from errcatalog.gateway.targets import private_target

_SECRET_FIELDS = ("headers", "env")
# The fields that say where an upstream's values go: changing one drops the stored values.
_TARGET_FIELDS = ("transport", "url", "command")
# The permission to approve an upstream tool's metadata (and so to trust an upstream, which approves it unseen).
APPROVE_PERMISSION = "errcatalog.approve_upstreamtool"


class Actor(Protocol):
    is_superuser: bool


def _trusted(actor: Actor | None) -> bool:
    return actor is None or actor.is_superuser


def _check_stdio(actor: Actor | None, *rows: Mapping[str, Any] | Upstream) -> None:
    def transport(row: Mapping[str, Any] | Upstream) -> Any:
        return row.get("transport") if isinstance(row, Mapping) else row.transport

    if not any(transport(row) == Transport.STDIO for row in rows):
        return
    if not settings.GATEWAY["STDIO"]:
        raise ValidationError({"transport": "stdio upstreams are turned off here (ERRCATALOG_GATEWAY_STDIO=0)."})
    if actor is not None and not actor.is_superuser:
        raise PermissionDenied("Only a superuser may add or change a stdio upstream: it runs a command here.")


def _target(upstream: Upstream) -> tuple[str, ...]:
    return tuple(str(getattr(upstream, name)) for name in _TARGET_FIELDS)


@dataclass(frozen=True)
class _Kept:
    """An upstream's stored values of one field that still hold (its address is unchanged), and their binding."""

    values: Mapping[str, Any]
    binding: str | None


def _stored_values(
    field_name: str, values: Mapping[str, Any], *, actor: Actor | None, candidate: Upstream, kept: _Kept
) -> dict[str, str]:
    """The values to store for ``values`` entered for ``candidate``'s ``field_name``; ``kept`` may be given again
    as they are."""
    binding = candidate.binding
    stored = {}
    for key, raw in values.items():
        try:
            raw = check_value(raw)
        except ValueError as exc:
            raise ValidationError({field_name: str(exc)}) from None
        variable = env_reference(raw)
        if variable is not None:
            if not (_trusted(actor) or kept.values.get(key) == raw or env_reference_allowed(variable)):
                raise ValidationError(
                    {field_name: f"{key}: only a superuser may refer to the environment variable {variable} (other "
                     "staff: only to those ERRCATALOG_GATEWAY_ENV_ALLOWLIST names). Enter the value itself."}
                )  # fmt: skip
            stored[key] = raw
        elif raw.startswith(SEALED_PREFIX):
            stored[key] = _given_sealed(field_name, key, raw, actor=actor, binding=binding, kept=kept)
        else:
            stored[key] = seal(raw, binding=binding)
    return stored


def _given_sealed(field_name: str, key: str, raw: str, *, actor: Actor | None, binding: str, kept: _Kept) -> str:
    if opened(raw, binding=binding) is not None:
        return raw
    if kept.values.get(key) == raw and kept.binding is not None:
        clear = opened(raw, binding=kept.binding)
        if clear is not None:  # the same address under another name: sealed again for the new name
            return seal(clear, binding=binding)
    if _trusted(actor):
        clear = opened_unbound(raw)
        if clear is not None:
            return seal(clear, binding=binding)
        return raw  # sealed with another SECRET_KEY or for another upstream: stored, and shown as unreadable
    raise ValidationError(
        {field_name: f"{key}: this sealed value belongs to another upstream or address. Enter the value itself."}
    )


def _check_target(actor: Actor | None, candidate: Upstream, previous: Upstream | None) -> None:
    if candidate.transport != Transport.HTTP or _trusted(actor) or settings.GATEWAY["ALLOW_PRIVATE"]:
        return
    if previous is not None and previous.transport == candidate.transport and previous.url == candidate.url:
        return  # not changed by this actor
    if private_target(candidate.url):
        raise ValidationError(
            {"url": "Only a superuser may point an upstream at a loopback, link-local or private address "
             "(or set ERRCATALOG_GATEWAY_ALLOW_PRIVATE=1)."}
        )  # fmt: skip


class TrustDenied(PermissionDenied):
    """Trusting an upstream without the right to approve its tools."""


def _check_trusted(actor: Actor | None, upstream: Upstream | None, fields: Mapping[str, Any]) -> None:
    """Trusting an upstream approves its later changes without review, so it takes the right to approve them."""
    if not fields.get("trusted") or (upstream is not None and upstream.trusted):
        return
    if actor is not None and not may_approve_upstream_tools(actor):
        raise TrustDenied("Only staff who may approve upstream tools may trust an upstream.")


def may_approve_upstream_tools(actor: Actor) -> bool:
    has_perm = getattr(actor, "has_perm", None)
    return actor.is_superuser or bool(has_perm and has_perm(APPROVE_PERMISSION))


def upstream_validate(*, actor: Actor | None, upstream: Upstream | None = None, **fields: Any) -> Upstream:
    """``upstream`` (or a new one) with ``fields`` applied and its values sealed, checked but not saved.

    Raises ``ValidationError`` (by field) or ``PermissionDenied`` (a stdio upstream without a superuser). Admin's
    form calls it to show problems at their fields; the services call it before every save. The rules are the
    module's.
    """
    _check_trusted(actor, upstream, fields)
    plain = {name: value for name, value in fields.items() if name not in _SECRET_FIELDS}
    if upstream is None:
        _check_stdio(actor, fields)
        candidate = Upstream(**plain)
    else:
        _check_stdio(actor, upstream, {"transport": upstream.transport, **fields})
        candidate = copy.copy(upstream)
        for name, value in plain.items():
            setattr(candidate, name, value)
    moved = upstream is not None and _target(upstream) != _target(candidate)
    for name in _SECRET_FIELDS:
        current = getattr(upstream, name) if upstream is not None else {}
        holds = upstream is not None and not moved and isinstance(current, Mapping)
        kept = _Kept(current, upstream.binding) if holds and upstream is not None else _Kept({}, None)
        if name in fields:
            values = fields[name]
            if isinstance(values, Mapping):
                values = _stored_values(name, values, actor=actor, candidate=candidate, kept=kept)
            setattr(candidate, name, values)
        elif upstream is None or moved:
            setattr(candidate, name, {})  # a change of address: the values were entered for the old one
        elif holds and upstream.name != candidate.name:  # renamed: the values sealed again for the new name
            setattr(candidate, name, _stored_values(name, current, actor=None, candidate=candidate, kept=kept))
    _check_target(actor, candidate, upstream)
    candidate.full_clean(validate_constraints=False)
    return candidate


def _save(upstream: Upstream, change_reason: str, update_fields: list[str] | None = None) -> None:
    if change_reason:
        upstream._change_reason = change_reason  # type: ignore[attr-defined]  # read by django-simple-history
    upstream.save(update_fields=update_fields)


@transaction.atomic
def upstream_create(*, actor: Actor | None, change_reason: str = "", **fields: Any) -> Upstream:
    upstream = upstream_validate(actor=actor, **fields)
    _save(upstream, change_reason)
    return upstream


@transaction.atomic
def upstream_update(*, actor: Actor | None, upstream: Upstream, change_reason: str = "", **fields: Any) -> list[str]:
    """Save the fields that differ; return their names. Header and variable values given are sealed afresh, so
    giving them counts as a change (``upstreams_import`` compares what they hold first). A change of address drops
    the stored values not given again (the module's rules), and they count as changed."""
    changed = [name for name, value in fields.items() if getattr(upstream, name) != value]
    if not changed:
        return []
    if any(name in _TARGET_FIELDS for name in changed):  # values given with a new address are entered again
        changed += [name for name in _SECRET_FIELDS if name in fields and name not in changed]
    checked = upstream_validate(actor=actor, upstream=upstream, **{name: fields[name] for name in changed})
    changed += [
        name for name in _SECRET_FIELDS if name not in changed and getattr(checked, name) != getattr(upstream, name)
    ]
    for name in changed:
        setattr(upstream, name, getattr(checked, name))
    _save(upstream, change_reason, update_fields=[*changed, "updated_at"])
    return changed


@transaction.atomic
def upstream_delete(*, actor: Actor | None, upstream: Upstream, change_reason: str = "") -> None:
    _check_stdio(actor, upstream)
    if change_reason:
        upstream._change_reason = change_reason  # type: ignore[attr-defined]
    upstream.delete()


@dataclass
class UpstreamImportSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # Variables of our environment the imported upstreams refer to, with what each replaces.
    variables: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = [f"{len(self.created)} created", f"{len(self.updated)} updated", f"{len(self.unchanged)} unchanged"]
        if self.deleted:
            parts.insert(2, f"{len(self.deleted)} deleted")
        return ", ".join(parts)


@transaction.atomic
def upstreams_import(document: Any, *, actor: Actor | None, change_reason: str = "") -> UpstreamImportSummary:
    """Create or update one upstream per entry of an ``mcpServers`` block (``client_config``), by name."""
    summary = UpstreamImportSummary()
    for imported in upstreams_from_client_config(document):
        summary.variables.update(imported.variables)
        _upsert(imported.fields, actor=actor, change_reason=change_reason, summary=summary)
    return summary


@transaction.atomic
def upstreams_sync(
    entries: list[Mapping[str, Any]],
    *,
    actor: Actor | None,
    replace: bool = False,
    only_missing: bool = False,
    change_reason: str = "",
) -> UpstreamImportSummary:
    """Make the upstreams match the ``upstreams`` entries of a catalog document, by name (``catalog_import``).

    ``replace`` also deletes the upstreams the entries lack; ``only_missing`` creates missing ones and leaves the
    others alone. Raises ``ValidationError`` (its ``error_dict`` keyed ``<name>.<field>``) or ``PermissionDenied``.
    """
    summary = UpstreamImportSummary()
    for entry in entries:
        try:
            _upsert(entry, actor=actor, change_reason=change_reason, summary=summary, only_missing=only_missing)
        except ValidationError as exc:
            problems = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
            raise ValidationError({f"{entry['name']}.{key}": texts for key, texts in problems.items()}) from None
    if replace:
        names = {entry["name"] for entry in entries}
        for upstream in Upstream.objects.exclude(name__in=names):
            _check_model_permission(actor, "delete", upstream.name)
            upstream_delete(actor=actor, upstream=upstream, change_reason=change_reason)
            summary.deleted.append(upstream.name)
    return summary


def _upsert(
    fields: Mapping[str, Any],
    *,
    actor: Actor | None,
    change_reason: str,
    summary: UpstreamImportSummary,
    only_missing: bool = False,
) -> None:
    name = fields["name"]
    existing = Upstream.objects.filter(name=name).first()
    if existing is None:
        _check_model_permission(actor, "add", name)
        upstream_create(actor=actor, change_reason=change_reason, **fields)
        summary.created.append(name)
        return
    changes = {} if only_missing else _changed(existing, fields)
    if changes:
        _check_model_permission(actor, "change", name)
    if changes and upstream_update(actor=actor, upstream=existing, change_reason=change_reason, **changes):
        summary.updated.append(name)
    else:
        summary.unchanged.append(name)


def _check_model_permission(actor: Actor | None, action: str, name: str) -> None:
    """An import writes a row only as far as its actor may in admin: creating an upstream takes the permission to
    add upstreams, changing one (a name already taken) the permission to change them, deleting one the permission to
    delete them. Otherwise "import" would be a way round them."""
    if actor is None or actor.is_superuser:
        return
    has_perm = getattr(actor, "has_perm", None)
    if not (has_perm and has_perm(f"errcatalog.{action}_upstream")):
        raise PermissionDenied(
            f"{name}: you may not {action} upstreams, and the import would {action} this one. Nothing was imported."
        )


def _changed(upstream: Upstream, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an import changes. Sealing a value gives a new text each time, so a sealed value is compared by
    what it holds; when the address changes, the values are given again (they are dropped otherwise)."""
    moved = any(name in fields and getattr(upstream, name) != fields[name] for name in _TARGET_FIELDS)
    changed = {}
    for name, value in fields.items():
        current = getattr(upstream, name)
        if name in _SECRET_FIELDS:
            same_keys = not moved and isinstance(value, Mapping) and current.keys() == value.keys()
            if same_keys and all(_holds(current[key], given, upstream.binding) for key, given in value.items()):
                continue
        elif current == value:
            continue
        changed[name] = value
    return changed


def _holds(stored: str, value: str, binding: str) -> bool:
    if stored == value:
        return True
    if not isinstance(value, str) or env_reference(value) is not None:
        return False
    clear = opened(stored, binding=binding)
    if clear is None:
        return False
    return clear == (opened(value, binding=binding) if value.startswith(SEALED_PREFIX) else value)


# --- Health, as each serving process reports it ------------------------------------------------------------------

# A process's rows not refreshed for this long are deleted by the next report of any process: it has stopped.
HEALTH_FORGET_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class HealthReport:
    """One connection's state in one process (``UpstreamHealth``'s fields)."""

    upstream: str
    state: str
    protocol_version: str
    tool_count: int
    circuit: str
    last_failure: str
    last_failure_at: datetime | None


def upstream_health_report(process: str, reports: Sequence[HealthReport]) -> None:
    """Store ``process``'s view of the upstreams it serves, replacing what it reported before."""
    now = timezone.now()
    ids = dict(Upstream.objects.filter(name__in=[r.upstream for r in reports]).values_list("name", "id"))
    rows = [
        UpstreamHealth(
            upstream_id=ids[r.upstream],
            process=process,
            state=r.state,
            protocol_version=r.protocol_version,
            tool_count=r.tool_count,
            circuit=r.circuit,
            last_failure=r.last_failure[:300],
            last_failure_at=r.last_failure_at,
            reported_at=now,
        )
        for r in reports
        if r.upstream in ids  # deleted meanwhile
    ]
    reported = [f.name for f in UpstreamHealth._meta.concrete_fields if f.name not in ("id", "upstream", "process")]
    with transaction.atomic():
        UpstreamHealth.objects.filter(process=process).exclude(upstream_id__in=ids.values()).delete()
        UpstreamHealth.objects.filter(reported_at__lt=now - HEALTH_FORGET_AFTER).delete()
        UpstreamHealth.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["upstream", "process"],
            update_fields=reported,
        )


def upstream_health_forget(process: str) -> None:
    """Delete ``process``'s rows: it stops serving."""
    UpstreamHealth.objects.filter(process=process).delete()


# --- Pinned tool metadata (``UpstreamTool``) -------------------------------------------------------------------


def _pin_save(pin: UpstreamTool, change_reason: str) -> None:
    pin._change_reason = change_reason  # type: ignore[attr-defined]  # read by django-simple-history
    pin.save()


@transaction.atomic
def upstream_tools_record(*, upstream: str, listing: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """Pin what ``upstream`` lists now (each tool's wire form); return its approved metadata by tool name, or None
    when no such upstream is recorded any more.

    A tool whose metadata is the approved one needs nothing (and one that went back to it is approved again); one
    whose metadata was already recorded as pending stays as it was (waiting, held or rejected). Otherwise the
    screen looks at it (``errcatalog.gateway.screen``): the first listing of an upstream (no tool recorded yet: staff
    have just added or imported it) and every listing of a trusted upstream are approved by that act, except what
    the screen flags; everything else waits for review. Writes only what changed, so a listing seen before raises
    no catalog revision. At most ``GATEWAY["MAX_TOOLS_PER_UPSTREAM"]`` tools, by name, are recorded.
    """
    row = Upstream.objects.select_for_update().filter(name=upstream).first()
    if row is None:
        return None
    limits = screen_limits()
    pins = {pin.name: pin for pin in row.pins.filter(kind=UpstreamTool.Kind.TOOL)}
    first = not pins
    now = timezone.now()
    metadata_listed = sorted((tool_metadata(tool) for tool in listing), key=lambda m: str(m.get("name")))
    for metadata in metadata_listed[: settings.GATEWAY["MAX_TOOLS_PER_UPSTREAM"]]:
        name = str(metadata.get("name"))
        digest = metadata_hash(metadata)
        pin = pins.get(name)
        if pin is not None and digest == pin.approved_hash:
            if pin.status != UpstreamTool.Status.APPROVED or pin.pending is not None:
                pin.status, pin.pending, pin.pending_hash, pin.flags = UpstreamTool.Status.APPROVED, None, "", []
                pin.listed_at = now
                _pin_save(pin, "listed as approved again")
            continue
        if pin is not None and digest == pin.pending_hash:
            continue
        if pin is None:
            pin = pins[name] = UpstreamTool(upstream=row, kind=UpstreamTool.Kind.TOOL, name=name)
        flags = screen_tool(metadata, limits)
        pin.listed_at = now
        if not flags and (first or row.trusted):
            how = "first listing" if first else "trusted upstream"
            _approve(pin, metadata, digest, by=None, how=how, at=now)
            _pin_save(pin, f"approved: {how}")
            continue
        # What cannot be approved is kept cut to the caps, for people to see what it was.
        pin.pending = metadata if approvable(flags) else bounded_for_review(metadata, limits)
        pin.pending_hash = digest
        pin.flags = [flag.as_json() for flag in flags]
        pin.status = UpstreamTool.Status.HELD if flags else UpstreamTool.Status.REVIEW
        _pin_save(pin, "held by the screen" if flags else "listed: waiting for review")
    return {pin.name: pin.approved for pin in pins.values() if pin.approved is not None}


def _approve(pin: UpstreamTool, metadata: Any, digest: str, *, by: Any, how: str, at: datetime) -> None:
    pin.approved, pin.approved_hash, pin.approved_by, pin.approved_how, pin.approved_at = metadata, digest, by, how, at
    pin.pending, pin.pending_hash, pin.flags, pin.status = None, "", [], UpstreamTool.Status.APPROVED


def _check_approver(actor: Actor | None) -> None:
    if actor is not None and not may_approve_upstream_tools(actor):
        raise PermissionDenied("Approving an upstream tool's metadata needs the permission to approve it.")


@transaction.atomic
def upstream_tool_approve(*, actor: Actor | None, pin: UpstreamTool) -> bool:
    """Serve ``pin``'s pending metadata from now on; False when nothing was pending. Raises ``PermissionDenied``
    without the approve permission and ``ValidationError`` for metadata over a size cap (never served)."""
    _check_approver(actor)
    pin = UpstreamTool.objects.select_for_update().get(pk=pin.pk)
    if pin.pending is None:
        return False
    if not approvable(pin.flags):
        raise ValidationError("A field of this tool is over its size cap: it cannot be served, approved or not.")
    _approve(pin, pin.pending, pin.pending_hash, by=actor, how="staff", at=timezone.now())
    _pin_save(pin, "approved by staff")
    return True


@transaction.atomic
def upstream_tool_reject(*, actor: Actor | None, pin: UpstreamTool) -> bool:
    """Keep serving what was approved (nothing, for a new tool); the same listing is not raised for review again.
    False when nothing was pending."""
    _check_approver(actor)
    pin = UpstreamTool.objects.select_for_update().get(pk=pin.pk)
    if pin.pending is None or pin.status == UpstreamTool.Status.REJECTED:
        return False
    pin.status = UpstreamTool.Status.REJECTED
    _pin_save(pin, "rejected by staff")
    return True
