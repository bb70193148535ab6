"""The one write path of upstreams, used by admin and ``catalog_import``; and of their reported health.

Every value an operator enters for a header or a variable is stored as a reference or sealed here
(``errcatalog.gateway.secrets``), so no caller can store one in the clear. A stdio upstream runs a command on this
server, as powerful as a shell: only a superuser (or a caller with no user, the command line) may create one, turn
an upstream into one or change one, and none may while ``GATEWAY["STDIO"]`` is off. Every change is in the history.
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
from errcatalog.gateway.secrets import ENV_PREFIX, SEALED_PREFIX, SecretUnavailable, resolve, stored_value
from errcatalog.gateway.selectors import screen_limits

_SECRET_FIELDS = ("headers", "env")
# The permission to approve an upstream tool's metadata (and so to trust an upstream, which approves it unseen).
APPROVE_PERMISSION = "errcatalog.approve_upstreamtool"


class Actor(Protocol):
    is_superuser: bool


def _sealed(fields: Mapping[str, Any]) -> dict[str, Any]:
    fields = dict(fields)
    for name in _SECRET_FIELDS:
        values = fields.get(name)
        if isinstance(values, Mapping):
            try:
                fields[name] = {key: stored_value(value) for key, value in values.items()}
            except ValueError as exc:
                raise ValidationError({name: str(exc)}) from None
    return fields


def _check_stdio(actor: Actor | None, *rows: Mapping[str, Any] | Upstream) -> None:
    def transport(row: Mapping[str, Any] | Upstream) -> Any:
        return row.get("transport") if isinstance(row, Mapping) else row.transport

    if not any(transport(row) == Transport.STDIO for row in rows):
        return
    if not settings.GATEWAY["STDIO"]:
        raise ValidationError({"transport": "stdio upstreams are turned off here (ERRCATALOG_GATEWAY_STDIO=0)."})
    if actor is not None and not actor.is_superuser:
        raise PermissionDenied("Only a superuser may add or change a stdio upstream: it runs a command here.")


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
    form calls it to show problems at their fields; the services call it before every save.
    """
    fields = _sealed(fields)
    _check_trusted(actor, upstream, fields)
    if upstream is None:
        _check_stdio(actor, fields)
        candidate = Upstream(**fields)
    else:
        _check_stdio(actor, upstream, {"transport": upstream.transport, **fields})
        candidate = copy.copy(upstream)
        for name, value in fields.items():
            setattr(candidate, name, value)
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
    giving them counts as a change (``upstreams_import`` compares what they hold first)."""
    changed = [name for name, value in fields.items() if getattr(upstream, name) != value]
    if not changed:
        return []
    checked = upstream_validate(actor=actor, upstream=upstream, **{name: fields[name] for name in changed})
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
    existing = Upstream.objects.filter(name=fields["name"]).first()
    if existing is None:
        upstream_create(actor=actor, change_reason=change_reason, **fields)
        summary.created.append(fields["name"])
    elif not only_missing and upstream_update(
        actor=actor, upstream=existing, change_reason=change_reason, **_changed(existing, fields)
    ):
        summary.updated.append(fields["name"])
    else:
        summary.unchanged.append(fields["name"])


def _changed(upstream: Upstream, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an import changes. Sealing a value gives a new text each time, so a sealed value is compared by
    what it holds."""
    changed = {}
    for name, value in fields.items():
        if name in _SECRET_FIELDS and isinstance(value, Mapping):
            current = getattr(upstream, name)
            if current.keys() == value.keys() and all(_holds(current[k], v) for k, v in value.items()):
                continue
        elif getattr(upstream, name) == value:
            continue
        changed[name] = value
    return changed


def _holds(stored: str, value: str) -> bool:
    if stored == value:
        return True
    if not stored.startswith(SEALED_PREFIX) or value.startswith(ENV_PREFIX):
        return False
    try:
        clear = resolve("", value) if value.startswith(SEALED_PREFIX) else value
        return resolve("", stored) == clear
    except SecretUnavailable:
        return False


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
