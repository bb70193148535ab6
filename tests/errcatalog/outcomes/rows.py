"""Outcome rows written straight to the database, for tests of what reads them (rollups, metrics)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from errcatalog.outcomes.models import Episode, OutcomeRecord


def event(at: datetime, *, outcome: str = "ok", tool: str = "send_email", client: str = "token:1", **fields):
    return OutcomeRecord.objects.create(
        id=uuid.uuid4(), occurred_at=at, outcome=outcome, tool=tool, client=client, **fields
    )


def episode(started: datetime, *, ending: str, code: str = "MISSING_PARAMETER", variant: str = "friendly", **fields):
    """An episode opened at ``started``: its last call 30 s later, ended a minute after it opened unless open.

    A recovered episode gets the resolution time ingestion would store: from its start to its end.
    """
    fields.setdefault("last_at", started + timedelta(seconds=30))
    if ending != "open":
        fields.setdefault("ended_at", started + timedelta(minutes=1))
    if ending == "recovered":
        fields.setdefault("resolution_seconds", (fields["ended_at"] - started).total_seconds())
    return Episode.objects.create(
        **{"tool": "send_email", "client": "token:1", "session": uuid.uuid4().hex}
        | fields
        | {"code": code, "variant": variant, "started_at": started, "ending": ending}
    )
