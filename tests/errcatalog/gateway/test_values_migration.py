"""The data migration that seals stored upstream values again, each bound to its upstream: nothing stored is lost,
and a value copied from one upstream to another no longer opens."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from errcatalog.gateway.models import Upstream
from errcatalog.gateway.secrets import _fernet, resolve

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("errcatalog.migrations.0017_upstream_values_bound")


def _legacy(clear: str) -> str:
    return "sealed:" + _fernet(None).encrypt(clear.encode()).decode()


def test_stored_values_are_sealed_again_for_their_upstream_and_history_keeps_its_own():
    github = Upstream.objects.create(
        name="github", prefix="github", url="https://github.example/mcp",
        headers={"Authorization": _legacy("Bearer gh"), "X-Key": "env:UPSTREAM_KEY"},
    )  # fmt: skip
    local = Upstream.objects.create(
        name="git", prefix="git", transport="stdio", command="uvx", env={"TOKEN": _legacy("t0k")}
    )
    unreadable = "sealed:" + "gAAAAA" + "x" * 80  # sealed with another SECRET_KEY: left as it is
    Upstream.objects.filter(pk=local.pk).update(env={"TOKEN": _legacy("t0k"), "OLD": unreadable})

    MIGRATION.bind(apps, None)

    github.refresh_from_db()
    local.refresh_from_db()
    assert github.headers["X-Key"] == "env:UPSTREAM_KEY"
    assert resolve("Authorization", github.headers["Authorization"], binding=github.binding) == "Bearer gh"
    assert resolve("TOKEN", local.env["TOKEN"], binding=local.binding) == "t0k"
    assert local.env["OLD"] == unreadable
    history = github.history.earliest()
    assert resolve("Authorization", history.headers["Authorization"], binding=github.binding) == "Bearer gh"
    # Bound: github's value does not open for another upstream.
    with pytest.raises(Exception, match="sealed for another upstream"):
        resolve("TOKEN", github.headers["Authorization"], binding=local.binding)

    MIGRATION.unbind(apps, None)  # back: the older form, still holding the same values
    github.refresh_from_db()
    assert github.headers["Authorization"].startswith("sealed:g")
    assert _fernet(None).decrypt(github.headers["Authorization"][7:].encode()) == b"Bearer gh"
